"""Kernels for the CPU runtime's tests (divergence, barriers, shared memory, atomics, printing)."""

from cubelab.prelude import *

F = Float.generic("F")


@cube(launch=True)
def shout(x: Slice[f32], out: SliceMut[f32]):
    """Units 1 and 2 print their value; everyone copies."""
    if ABSOLUTE_POS >= 1 and ABSOLUTE_POS < 3:
        debug_print("x[{}] = {}", ABSOLUTE_POS, x[ABSOLUTE_POS])
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@cube(launch=True)
def barrier_in_a_branch(out: SliceMut[u32]):
    """A sync_cube() that only the first half of each cube reaches: undefined on a GPU."""
    if UNIT_POS < 2:
        sync_cube()
    out[ABSOLUTE_POS] = UNIT_POS


@cube(launch=True)
def off_by_one(x: Slice[f32], out: SliceMut[f32]):
    """Reads x[ABSOLUTE_POS - 1]: unit 0 asks for item 4294967295 (u32 wrap), never x[-1]."""
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS - 1]


@cube(launch_unchecked=True)
def write_past_the_end(out: SliceMut[f32]):
    out[ABSOLUTE_POS] = f32(1.0)
