"""The kernels and fixed programs of the cubelab puzzles (`puzzles_cubelab.py`).

Each kernel here is one a puzzle's program launches around the student's answer — the student
reads them in the question (the notebook's set-up cell imports them under these names), so they
are written as a student would write them, one idea each. `floats`, `arg`, `scale` and `inc`
come from `launching.py` (the chapters' own); the rest are the puzzles':

- `add_ten`, `double`, `add2` — guarded elementwise kernels;
- `too_big` — asks for 24 000 bytes of shared memory (a cube has 16 384): it expands, and its
  compile fails on the device thread, so its output carries the failure — the puzzles' way to
  fail a buffer on purpose, the same on every runtime;
- `pick` — reads a comptime table at a comptime index: an index past the table's end makes
  Python raise while the kernel is expanded (an expansion panic), on the device thread;
- `neg` — a third kernel for the capture puzzles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises.launching import arg, floats, inc, scale
from cubelab.prelude import (
    ABSOLUTE_POS, UNIT_POS, Comptime, CubeCount, CubeDim, SharedMemory, Slice, SliceMut,
    comptime, cube, f32, sync_cube)

__all__ = ["add_ten", "double", "add2", "too_big", "pick", "neg", "scale", "inc", "floats",
           "arg", "ONE", "EIGHT", "read"]

ONE = CubeCount.Static(1)
EIGHT = CubeDim.new_1d(8)


@cube(launch=True)
def add_ten(x: Slice[f32], out: SliceMut[f32]):
    """out = x + 10, guarded: any geometry with enough units is right."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(10.0)


@cube(launch=True)
def double(x: Slice[f32], out: SliceMut[f32]):
    """out = 2 x: what `too_big` was meant to compute."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + x[ABSOLUTE_POS]


@cube(launch=True)
def add2(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    """out = a + b."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = a[ABSOLUTE_POS] + b[ABSOLUTE_POS]


@cube(launch=True)
def too_big(x: Slice[f32], out: SliceMut[f32]):
    """Meant as out = 2 x through two tiles of 3000 floats: 24 000 bytes of shared memory, more
    than a cube has. It expands in Python; its compile fails on the device thread."""
    a = SharedMemory[f32](3000)
    b = SharedMemory[f32](3000)
    a[UNIT_POS] = x[ABSOLUTE_POS]
    b[UNIT_POS] = x[ABSOLUTE_POS]
    sync_cube()
    out[ABSOLUTE_POS] = a[UNIT_POS] + b[UNIT_POS]


@cube(launch=True)
def pick(x: Slice[f32], out: SliceMut[f32], k: Comptime[int]):
    """out = x times weight k of a comptime table of three."""
    weights = comptime((0.5, 2.0, 3.0))
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(weights[k])


@cube(launch=True)
def neg(x: Slice[f32], out: SliceMut[f32]):
    """out = -x."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = -x[ABSOLUTE_POS]


def read(client: Any, handle: Any) -> np.ndarray:
    """A float buffer's items (raises BufferFailure for a failed one, as `read_one` does)."""
    return np.frombuffer(client.read_one(handle), dtype=np.float32).copy()
