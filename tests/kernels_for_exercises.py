"""Kernels the exercise framework's own tests launch (the chapters' live in cubelab/exercises/)."""

from cubelab.prelude import *  # noqa: F403


@cube(launch=True)  # noqa: F405
def double_guarded(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0  # noqa: F405


@cube(launch=True)  # noqa: F405
def double_unguarded(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0  # noqa: F405


@cube(launch=True)  # noqa: F405
def double_wrong(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 2.0  # noqa: F405
