"""A generic type and a concrete type do not mix (CubeCL type-checks a kernel for every F): the
error at the operator, with a caret and the cast to write; what stays allowed — literals, the
same generic on both sides, values made with `F.cast_from` / `F.new`. Expansion-time errors, so
one runtime-free check each (`inspect.ir`) covers both runtimes."""

from __future__ import annotations

import pytest

from cubelab import inspect
from cubelab.errors import KernelSourceError
from cubelab.prelude import *  # noqa: F403

F = Float.generic("F")  # noqa: F405
G = Float.generic("G")  # noqa: F405
I = Int.generic("I")  # noqa: F405


def expand(kernel, *types):  # type: ignore[no-untyped-def]
    return inspect.ir(inspect.instance(kernel, *types, cube_dim=CubeDim.new_1d(4)))  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_mixed(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_cast(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = F.cast_from(a) * x[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def store_concrete(a: f32, out: SliceMut[F]):  # noqa: F405
    out[ABSOLUTE_POS] = a  # noqa: F405


@cube(launch=True)  # noqa: F405
def two_generics(x: Slice[F], y: Slice[G], out: SliceMut[F]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def local_changes_type(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    acc = F.new(0.0)
    acc += a
    out[ABSOLUTE_POS] = acc  # noqa: F405


@cube(launch=True)  # noqa: F405
def literals_and_library(x: Slice[F], out: SliceMut[F]):  # noqa: F405
    acc = F.new(0.0)
    for i in range(3):
        acc += x[i] * 2.0
    out[ABSOLUTE_POS] = F.max(acc, 0.0) + F(1) - F.sqrt(acc)  # noqa: F405


@cube(launch=True)  # noqa: F405
def int_generic_and_u32(x: Slice[I], out: SliceMut[I]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + u32(1)  # noqa: F405


def test_a_concrete_scalar_times_a_generic_item_is_cubecls_type_error_at_the_operator():
    with pytest.raises(KernelSourceError) as err:
        expand(scale_mixed, f32)  # noqa: F405
    text = str(err.value)
    assert "`*` of f32 and F (a generic type)" in text
    assert "even where this launch makes F f32" in text
    assert "F.cast_from(x)" in text
    line = text.splitlines()
    caret = next(i for i, ln in enumerate(line) if ln.strip() == "^")
    assert line[caret - 1].strip().startswith("out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS]")
    assert line[caret].index("^") == line[caret - 1].index("a * x")


def test_the_cast_makes_it_a_generic_value_and_the_kernel_compiles():
    assert "arith.mul" in expand(scale_cast, f32)  # noqa: F405


def test_storing_a_concrete_value_into_a_generic_buffer_is_refused():
    with pytest.raises(KernelSourceError, match="assigning f32 to a place of type F"):
        expand(store_concrete, f32)  # noqa: F405


def test_two_generics_do_not_mix_even_when_both_are_f32():
    with pytest.raises(KernelSourceError, match=r"`\+` of F \(a generic type\) and G"):
        expand(two_generics, f32, f32)  # noqa: F405


def test_a_local_keeps_the_type_it_was_written_with():
    with pytest.raises(KernelSourceError, match=r"`\+` of F \(a generic type\) and f32"):
        expand(local_changes_type, f32)  # noqa: F405


def test_literals_library_calls_and_f_of_x_take_the_generic_type():
    expand(literals_and_library, f32)  # noqa: F405


def test_an_int_generic_does_not_meet_a_u32_either():
    with pytest.raises(KernelSourceError, match=r"`\+` of I \(a generic type\) and u32"):
        expand(int_generic_and_u32, u32)  # noqa: F405
