"""Kernels for the seed-001 exercises: one whose expansion fails, a copy and a fill."""

from cubelab.prelude import *  # noqa: F403


def _boom():
    raise ValueError("boom during expansion")  # hint: none, on purpose: the seed's panic


@cube(launch=True)  # noqa: F405
def broken(out: SliceMut[f32]):  # noqa: F405
    """Its expansion raises: the launch fails and `out` carries the error."""
    out[ABSOLUTE_POS] = f32(comptime(_boom()))  # noqa: F405


@cube(launch=True)  # noqa: F405
def copy(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def fill(out: SliceMut[f32], value: f32):  # noqa: F405
    out[ABSOLUTE_POS] = value  # noqa: F405
