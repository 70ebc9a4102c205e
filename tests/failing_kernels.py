"""Kernels that fail on purpose, for the views' tests (seed 001: failure is buffer state)."""

from cubelab.prelude import *


def _boom():
    raise ValueError("boom during expansion")


@cube(launch=True)
def broken(out: SliceMut[f32]):
    """Expansion raises: the launch fails and its output carries the error."""
    out[ABSOLUTE_POS] = f32(comptime(_boom()))


@cube(launch=True)
def copy(x: Slice[f32], out: SliceMut[f32]):
    """Reads x: if x carries a failure, this launch is skipped and `out` points at the root."""
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@cube(launch=True)
def fill(out: SliceMut[f32], value: f32):
    out[ABSOLUTE_POS] = value
