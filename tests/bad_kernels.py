"""Kernels with mistakes, each defined lazily so a test can assert the error it raises."""

from cubelab.prelude import *

F = Float.generic("F")


def define_try():
    @cube(launch=True)
    def uses_try(out: SliceMut[f32]):
        try:
            out[0] = 1.0
        except Exception:
            pass
    return uses_try


def define_lambda():
    @cube(launch=True)
    def uses_lambda(out: SliceMut[f32]):
        out[0] = (lambda v: v)(1.0)
    return uses_lambda


def define_with():
    @cube(launch=True)
    def uses_with(out: SliceMut[f32]):
        with open("x"):
            out[0] = 1.0
    return uses_with


def define_missing_annotation():
    @cube(launch=True)
    def no_annotation(out):
        out[0] = 1.0
    return no_annotation


def define_slice_assignment():
    @cube(launch=True)
    def writes_input(x: Slice[f32], out: SliceMut[f32]):
        x[ABSOLUTE_POS] = out[ABSOLUTE_POS]
    return writes_input


@cube(launch=True)
def unknown_name(out: SliceMut[f32]):
    out[ABSOLUTE_POS] = no_such_value  # noqa: F821


@cube(launch=True)
def runtime_in_comptime(x: Slice[f32], out: SliceMut[f32]):
    n = comptime(x.len())
    out[ABSOLUTE_POS] = x[n]


@cube(launch=True)
def mixed_widths(x: Slice[Vector[f32, 2]], y: Slice[Vector[f32, 4]], out: SliceMut[f32]):
    v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = f32(0.0)


@cube(launch=True)
def copy(x: Slice[F], out: SliceMut[F]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]
