"""Kernels for the seed-001 tests (launch and execution), written as a student would."""

from cubelab.prelude import *


@cube(launch=True)
def scale(x: Slice[f32], out: SliceMut[f32], a: f32):
    """out = a * x: `out` is a pure output (stored, never loaded)."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * a


@cube(launch=True)
def inc(y: SliceMut[f32]):
    """y += 1: `y` is read and written, so a failure on it makes this launch skip."""
    if ABSOLUTE_POS < y.len():
        y[ABSOLUTE_POS] = y[ABSOLUTE_POS] + f32(1.0)


@cube(launch=True)
def bad_widths(x: Slice[Vector[f32, 2]], y: Slice[Vector[f32, 4]], out: SliceMut[f32]):
    """Adds vectors of widths 2 and 4: the expansion fails on the device thread."""
    v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = f32(0.0)


@cube(launch=True)
def writes_one_of_two(x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]):
    """Declares two outputs but the IR only ever stores to `out`."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(1.0)


@cube(launch=True)
def write_count(count: SliceMut[u32], cubes: u32):
    """Writes a dynamic cube count (cubes, 1, 1) for a later launch."""
    if ABSOLUTE_POS == u32(0):
        count[0] = cubes
        count[1] = u32(1)
        count[2] = u32(1)


@cube(launch=True)
def scale_slow(x: Slice[f32], out: SliceMut[f32], a: f32, rounds: u32):
    """The same result as `scale` (for rounds >= 64), after `rounds` dependent iterations per
    unit: acc = acc / 2 + x converges to exactly 2x in f32, so the loop cannot be dropped."""
    if ABSOLUTE_POS < out.len():
        acc = f32(0.0)
        for i in range(rounds):
            acc = acc * f32(0.5) + x[ABSOLUTE_POS]
        out[ABSOLUTE_POS] = acc * a * f32(0.5)


@cube(launch=True)
def too_much_shared(out: SliceMut[f32]):
    """Two tiles that each fit in a cube's shared memory, but not together."""
    a = SharedMemory[f32](3000)
    b = SharedMemory[f32](3000)
    a[UNIT_POS] = f32(1.0)
    b[UNIT_POS] = f32(2.0)
    sync_cube()
    out[ABSOLUTE_POS] = a[UNIT_POS] + b[UNIT_POS]
