"""Kernels and helpers the seed-001 chapters' exercises (ch06–ch08) launch.

The kernels are the ones the notebooks define in their cells, written the same way, so an
exercise's run is the program the student read. `busy_device` is the one piece of staging: a
count of flushes depends on whether the device thread was idle between two launches (it flushes
whenever it runs out of work), so an exercise that asks for such a count holds the device thread
while the launches are queued — as a device busy with earlier work would — and the count is
then the same on every machine.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from cubelab.prelude import *  # noqa: F403


@cube(launch=True)  # noqa: F405
def scale(x: Slice[f32], out: SliceMut[f32], a: f32):  # noqa: F405
    """out = a * x: `out` is a pure output (stored, never loaded)."""
    if ABSOLUTE_POS < out.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * a  # noqa: F405


@cube(launch=True)  # noqa: F405
def inc(y: SliceMut[f32]):  # noqa: F405
    """y += 1: `y` is read and written."""
    if ABSOLUTE_POS < y.len():  # noqa: F405
        y[ABSOLUTE_POS] = y[ABSOLUTE_POS] + f32(1.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def tile_sum(x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]):  # noqa: F405
    """Asks for two tiles of 3000 floats: 24 000 bytes of shared memory, more than a cube has
    (16 384). It expands fine in Python; the device-limit check fails its compile."""
    a = SharedMemory[f32](3000)  # noqa: F405
    b = SharedMemory[f32](3000)  # noqa: F405
    a[UNIT_POS] = x[ABSOLUTE_POS]  # noqa: F405
    b[UNIT_POS] = x[ABSOLUTE_POS]  # noqa: F405
    sync_cube()  # noqa: F405
    out[ABSOLUTE_POS] = a[UNIT_POS] + b[UNIT_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def add_one_of_two(x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]):  # noqa: F405
    """Declares two outputs, but its IR only ever stores to `out`."""
    if ABSOLUTE_POS < out.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(1.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def add_to_spare(x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]):  # noqa: F405
    """Declares two outputs, but its IR only ever stores to `spare`."""
    if ABSOLUTE_POS < spare.len():  # noqa: F405
        spare[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(1.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def write_count(count: SliceMut[u32], cubes: u32):  # noqa: F405
    """Writes a dynamic cube count (cubes, 1, 1) for a later launch."""
    if ABSOLUTE_POS == u32(0):  # noqa: F405
        count[0] = cubes
        count[1] = u32(1)  # noqa: F405
        count[2] = u32(1)  # noqa: F405


ONE = CubeCount.Static(1)  # noqa: F405
EIGHT = CubeDim.new_1d(8)  # noqa: F405


def floats(client: Any, values: Any) -> Any:
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))  # noqa


def arg(handle: Any, n: int = 8) -> Any:
    return BufferArg.from_raw_parts(handle, n)  # noqa: F405


@contextmanager
def busy_device(client: Any) -> Iterator[None]:
    """Hold the device thread until the block ends: launches issued inside are queued, none is
    processed, so no idle flush can happen between them."""
    gate = threading.Event()
    client.device.runner.submit(gate.wait)
    try:
        yield
    finally:
        gate.set()
