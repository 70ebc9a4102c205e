"""CubeCL parity: the binary and ternary functions and saturating integer arithmetic, with the
inputs, vector widths and expected outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/`
`binary.rs` (epsilon 0.001, as there) and `saturating.rs` (exact; widths 1, 2, 4; i32 and u32),
on both runtimes.

One difference is deliberate: CubeCL's `test_self_div` divides a u32 by itself with `/`; in
cubelab `/` on integers is refused (it suggests `//`, which truncates as Rust's `/` does), so the
same test is written with `//` and gives CubeCL's answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403
from tests.parity import approx, buf, empty, read

F = Float.generic("F")
I = Int.generic("I")  # noqa: E741
In = Size.generic("In")
Out = Size.generic("Out")
N = Size.generic("N")

INF = float("inf")
ONE = CubeCount.Static(1)


@cube(launch_unchecked=True)
def float_binary(lhs: Slice[Vector[F, In]], rhs: Slice[Vector[F, In]],
                 out: SliceMut[Vector[F, Out]], fn: Comptime[object]):
    if ABSOLUTE_POS < rhs.len():
        out[ABSOLUTE_POS] = fn(lhs[ABSOLUTE_POS], rhs[ABSOLUTE_POS])


@cube(launch_unchecked=True)
def powi_kernel(lhs: Slice[Vector[F, N]], rhs: Slice[Vector[i32, N]], out: SliceMut[Vector[F, N]]):
    if ABSOLUTE_POS < rhs.len():
        out[ABSOLUTE_POS] = powi(lhs[ABSOLUTE_POS], rhs[ABSOLUTE_POS])


@cube(launch_unchecked=True)
def fma_kernel(a: Slice[Vector[F, N]], b: Slice[Vector[F, N]], c: Slice[Vector[F, N]],
               out: SliceMut[Vector[F, N]]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = fma(a[ABSOLUTE_POS], b[ABSOLUTE_POS], c[ABSOLUTE_POS])


@cube(launch_unchecked=True)
def mul_hi_kernel(lhs: Slice[Vector[u32, N]], rhs: Slice[Vector[u32, N]],
                  out: SliceMut[Vector[u32, N]]):
    if ABSOLUTE_POS < rhs.len():
        out[ABSOLUTE_POS] = lhs[ABSOLUTE_POS].mul_hi(rhs[ABSOLUTE_POS])


L4 = [1., -3.1, -2.4, 15.1]
R4 = [-1., 23.1, -1.4, 5.1]
BINARY_CASES = {
    "dot": (dot, [(1, 1, L4, R4, [-1.0, -71.61, 3.36, 77.01]),
                  (2, 1, L4, R4, [-72.61, 80.37]),
                  (4, 1, L4, R4, [7.76]),
                  (4, 1, L4 + R4, R4 + L4, [7.76, 7.76])]),
    "pow": (pow, [(w, w, [2., -3., 2., 81.], [3., 2., -1., 0.5], [8., 9., 0.5, 9.])
                  for w in (2, 4)]),
    "atan2": (atan2, [(1, 1, [0., 1., -1., 1., -1.], [1., 0., 0., 1., -1.],
                       [0., 1.5707964, -1.5707964, 0.7853982, -2.3561945])]
              + [(w, w, [0., 1., -1., 1.], [1., 0., 0., 1.],
                  [0., 1.5707964, -1.5707964, 0.7853982]) for w in (2, 4)]),
    "hypot": (hypot, [(1, 1, [3., 0., 5., 0.], [4., 5., 0., 0.], [5., 5., 5., 0.]),
                      (2, 2, [3., 0., 5., 8.], [4., 5., 0., 15.], [5., 5., 5., 17.]),
                      (4, 4, [-3., 0., -5., -8.], [-4., -5., 0., 15.], [5., 5., 5., 17.])]),
    "rhypot": (rhypot, [(1, 1, [3., 0., 5., 0.], [4., 5., 0., 0.], [0.2, 0.2, 0.2, INF]),
                        (2, 2, [3., 0., 5., 0.3], [4., 5., 0., 0.4], [0.2, 0.2, 0.2, 2.]),
                        (4, 4, [0., 0., -5., -0.3], [-1., -5., 0., -0.4], [1., 0.2, 0.2, 2.])]),
}


@pytest.mark.parametrize("name", sorted(BINARY_CASES))
def test_float_binary_function_gives_cubecls_results(client, name):
    fn, cases = BINARY_CASES[name]
    for width, out_width, lhs, rhs, expected in cases:
        out = empty(client, len(expected))
        float_binary.launch_unchecked[f32](client, ONE, CubeDim.new_1d(len(lhs) // width), width,
                                           out_width, buf(client, lhs), buf(client, rhs), out,
                                           fn)
        approx(read(client, out), np.float32(expected), 0.001)


def test_powi_gives_cubecls_signed_powers_at_widths_2_and_4(client):
    for width in (2, 4):
        out = empty(client, 4)
        powi_kernel.launch_unchecked[f32](client, ONE, CubeDim.new_1d(4 // width), width,
                                          buf(client, [2., -3., 2., 81.]),
                                          buf(client, [3, 2, -1, 1], np.int32), out)
        approx(read(client, out), [8., 9., 0.5, 81.], 0.001)


def test_fma_gives_cubecls_results_at_widths_1_2_4(client):
    for width in (1, 2, 4):
        out = empty(client, 4)
        fma_kernel.launch_unchecked[f32](client, ONE, CubeDim.new_1d(4 // width), width,
                                         buf(client, L4), buf(client, R4),
                                         buf(client, [2., 0.5, -1., -8.]), out)
        approx(read(client, out), [1., -71.11, 2.36, 69.01], 0.001)


def test_mul_hi_gives_cubecls_high_words(client):
    for lhs, rhs, expected in [
            ([1, 2, 3, 4], [5, 6, 7, 8], [0, 0, 0, 0]),
            ([0xFFFFFFFF, 0x80000000, 0x55555555, 0x10000000], [0x10000, 2, 4, 0x20000000],
             [0x0000FFFF, 1, 1, 0x2000000]),
            ([0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 0x10000], [0xFFFFFFFF, 2, 0x80000000, 0x10000],
             [0xFFFFFFFE, 1, 0x40000000, 1])]:
        out = empty(client, 4, np.uint32)
        mul_hi_kernel.launch_unchecked(client, ONE, CubeDim.new_1d(4), 1,
                                       buf(client, lhs, np.uint32), buf(client, rhs, np.uint32),
                                       out)
        assert read(client, out, np.uint32).tolist() == expected


@cube(launch=True)
def self_div(output: SliceMut[u32]):
    if ABSOLUTE_POS < output.len():
        value = output[ABSOLUTE_POS]
        output[ABSOLUTE_POS] = value // value


def test_a_value_divided_by_itself_is_one_of_its_type(client):
    out = buf(client, [7, 1, 255, 42], np.uint32)
    self_div.launch(client, ONE, CubeDim.new_1d(4), out)
    assert read(client, out, np.uint32).tolist() == [1, 1, 1, 1]


# -- saturating.rs -----------------------------------------------------------------------------
@cube(launch_unchecked=True)
def saturating_add_kernel(lhs: Slice[Vector[I, N]], rhs: Slice[Vector[I, N]],
                          out: SliceMut[Vector[I, N]]):
    # unit-strided, as the reference writes it, so any cube dim covers every element
    i = UNIT_POS
    while i < out.len():
        out[i] = saturating_add(lhs[i], rhs[i])
        i += CUBE_DIM


@cube(launch_unchecked=True)
def saturating_sub_kernel(lhs: Slice[Vector[I, N]], rhs: Slice[Vector[I, N]],
                          out: SliceMut[Vector[I, N]]):
    i = UNIT_POS
    while i < out.len():
        out[i] = lhs[i].saturating_sub(rhs[i])
        i += CUBE_DIM


UMAX, IMAX, IMIN = 2**32 - 1, 2**31 - 1, -(2**31)
SATURATING = {
    "add_unsigned": (saturating_add_kernel, np.uint32, [2, UMAX, UMAX - 10, 20],
                     [10, 1, 9, UMAX], [12, UMAX, UMAX - 1, UMAX]),
    "sub_unsigned": (saturating_sub_kernel, np.uint32, [2, 4, 10, UMAX - 10], [1, 6, 8, UMAX],
                     [1, 0, 2, 0]),
    "add_signed": (saturating_add_kernel, np.int32,
                   [0, 0, 0, 5, -5, 10, -10, 50, 30, 10, IMAX, 1, IMIN, -1, IMAX - 1, IMIN + 1],
                   [0, 5, -5, 0, 0, 20, -20, -30, -50, -10, 1, IMAX, -1, IMIN, 1, -1],
                   [0, 5, -5, 5, -5, 30, -30, 20, -20, 0, IMAX, IMAX, IMIN, IMIN, IMAX, IMIN]),
    "sub_signed": (saturating_sub_kernel, np.int32,
                   [0, 0, 0, 10, -10, 20, 5, -5, -20, IMAX, IMAX, IMIN, IMIN, IMAX - 1, IMIN + 1,
                    50],
                   [0, 5, -5, 3, -3, 15, 10, -10, -5, -1, 1, 1, -1, -1, 1, -30],
                   [0, -5, 5, 7, -7, 5, -5, 5, -15, IMAX, IMAX - 1, IMIN, IMIN + 1, IMAX, IMIN,
                    80]),
}


@pytest.mark.parametrize("name", sorted(SATURATING))
def test_saturating_arithmetic_gives_cubecls_results_at_widths_1_2_4(client, name):
    kernel, dtype, lhs, rhs, expected = SATURATING[name]
    kind = u32 if dtype is np.uint32 else i32
    for width in (1, 2, 4):
        out = empty(client, len(expected), dtype)
        kernel.launch_unchecked[kind](client, ONE, CubeDim.new_1d(len(expected)), width,
                                      buf(client, lhs, dtype), buf(client, rhs, dtype), out)
        assert read(client, out, dtype).tolist() == expected, width


# -- comparison.rs -----------------------------------------------------------------------------
@cube(launch_unchecked=True)
def compare(lhs: Slice[Vector[u32, N]], rhs: Slice[Vector[u32, N]],
            output: SliceMut[Vector[u32, N]], op: Comptime[str]):
    if ABSOLUTE_POS < rhs.len():
        a = lhs[ABSOLUTE_POS]
        b = rhs[ABSOLUTE_POS]
        if op == "gt":
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a > b)
        elif op == "lt":
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a < b)
        elif op == "ge":
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a >= b)
        elif op == "le":
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a <= b)
        elif op == "eq":
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a == b)
        else:
            output[ABSOLUTE_POS] = Vector[u32, N].cast_from(a != b)


@pytest.mark.parametrize("op", ["gt", "lt", "ge", "le", "eq", "ne"])
def test_u32_vector_comparison_gives_one_flag_per_component(client, op):
    lhs, rhs = [0, 1, UMAX, 42], [0, 2, 0, 10]
    want = {"gt": [0, 0, 1, 1], "lt": [0, 1, 0, 0], "ge": [1, 0, 1, 1], "le": [1, 1, 0, 0],
            "eq": [1, 0, 0, 0], "ne": [0, 1, 1, 1]}[op]
    out = empty(client, 4, np.uint32)
    compare.launch_unchecked(client, ONE, CubeDim.new_1d(1), 4, buf(client, lhs, np.uint32),
                             buf(client, rhs, np.uint32), out, op)
    assert read(client, out, np.uint32).tolist() == want


@cube(launch_unchecked=True)
def nan_ordering(lhs: Slice[f32], rhs: Slice[f32], output: SliceMut[u32]):
    if ABSOLUTE_POS < lhs.len():
        a = lhs[ABSOLUTE_POS]
        b = rhs[ABSOLUTE_POS]
        bits = u32(0)
        if a < b:
            bits += 1
        if a <= b:
            bits += 2
        if a > b:
            bits += 4
        if a >= b:
            bits += 8
        if a == b:
            bits += 16
        output[ABSOLUTE_POS] = bits


def test_comparisons_with_nan_are_false_as_cubecl_orders_them(client):
    # comparison.rs test_nan_ordering: <, <=, >, >=, == are all false when either side is NaN
    nan = float("nan")
    lhs, rhs = [1.0, nan, nan, 1.0, 2.0], [nan, 1.0, nan, 2.0, 1.0]
    out = empty(client, 5, np.uint32)
    nan_ordering.launch_unchecked(client, ONE, CubeDim.new_1d(5), buf(client, lhs),
                                  buf(client, rhs), out)
    assert read(client, out, np.uint32).tolist() == [0, 0, 0, 1 + 2, 4 + 8]


@cube(launch_unchecked=True)
def folded(output: SliceMut[Vector[u32, 4]]):
    if ABSOLUTE_POS < output.len():
        value = output[ABSOLUTE_POS]
        same = value == value
        below_min = value < Vector.new(u32(0))
        output[ABSOLUTE_POS] = Vector[u32, 4].cast_from(same) + \
            Vector[u32, 4].cast_from(below_min) * u32(2)


def test_a_vector_compared_with_itself_is_true_in_every_component(client):
    out = buf(client, [7, 0, 3, 0], np.uint32)
    folded.launch_unchecked(client, ONE, CubeDim.new_1d(1), out)
    assert read(client, out, np.uint32).tolist() == [1, 1, 1, 1]


# -- numeric.rs --------------------------------------------------------------------------------
T = Numeric.generic("T")
T2 = Numeric.generic("T2")


@cube(launch=True)
def kernel_define(array: SliceMut[T]):
    array[UNIT_POS] += T.cast_from(5.0)


@cube(launch=True)
def kernel_define_many(array: SliceMut[T], second: Slice[T2]):
    array[UNIT_POS] += T.cast_from(second[UNIT_POS])


def test_a_numeric_generic_takes_the_element_type_given_at_launch(client):
    # numeric.rs test_kernel_define / test_kernel_define_many (CubeCL names the types with
    # `#[define]` arguments; cubelab binds them as `launch[f32, u32]`)
    out = buf(client, [0.0, 1.0])
    kernel_define.launch[f32](client, ONE, CubeDim.new_1d(2), out)
    assert read(client, out).tolist() == [5.0, 6.0]
    out = buf(client, [0.0, 1.0])
    kernel_define_many.launch[f32, u32](client, ONE, CubeDim.new_1d(2), out,
                                        buf(client, [5, 6], np.uint32))
    assert read(client, out).tolist() == [5.0, 7.0]
    ints = buf(client, [0, 1], np.int32)
    kernel_define.launch[i32](client, ONE, CubeDim.new_1d(2), ints)
    assert read(client, ints, np.int32).tolist() == [5, 6]
