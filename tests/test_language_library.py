"""CubeCL's math and bit library in cubelab, each function on every runtime against numpy at
edge inputs (the `client` fixture runs each test on wgpu/lavapipe and on the CPU runtime).

The functions follow CubeCL's names and results (its `runtime_tests` are the reference read for
the semantics): bit counts are u32, `find_first_set` is 1-based with 0 for 0, saturating
arithmetic clamps at the type's bounds, `mul_hi` is the high word of the 64-bit product, and
`pow` of a negative base with an integral exponent is the signed power (`pow(-3, 2) == 9`).
Tolerances are stated per test: one-op transcendental functions `rtol=1e-5`; polyfills composed
of several ops (hypot, exp_m1 near 0) are stated where they are asserted.
"""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.ir.core import MATH_UNARY_FNS
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime.cpu import semantics

# the helpers every language test uses: one home, in test_language_semantics
from tests.test_language_semantics import D, cubes, read, up, zeros  # noqa: E402,F401


def test_every_math_function_of_the_ir_has_a_cpu_implementation():
    missing = [fn for fn in MATH_UNARY_FNS if semantics.MATH.get(fn) is None]
    assert not missing


# -- float functions ---------------------------------------------------------------------------
@cube(launch=True)
def float_library(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        u = clamp(v, -0.9, 0.9)
        out[16 * i + 0] = sinh(v)
        out[16 * i + 1] = cosh(v)
        out[16 * i + 2] = asin(u)
        out[16 * i + 3] = acos(u)
        out[16 * i + 4] = atan(v)
        out[16 * i + 5] = asinh(v)
        out[16 * i + 6] = acosh(abs(v) + 1.0)
        out[16 * i + 7] = atanh(u)
        out[16 * i + 8] = trunc(v)
        out[16 * i + 9] = inverse_sqrt(abs(v) + 0.25)
        out[16 * i + 10] = recip(v + 10.0)
        out[16 * i + 11] = exp_m1(v)
        out[16 * i + 12] = to_degrees(v)
        out[16 * i + 13] = f32.to_radians(v)
        out[16 * i + 14] = atan2(v, 0.5 - v)
        out[16 * i + 15] = v.hypot(2.0)


def test_float_library_matches_numpy(client):
    xs = np.array([-2.5, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.7, 1.5, 3.0], np.float32)
    out = zeros(client, 16 * xs.size)
    float_library.launch(client, cubes(xs.size), D, up(client, xs), out)
    got = read(client, out).reshape(-1, 16)
    v = xs.astype(np.float64)
    u = np.clip(v, -0.9, 0.9)
    want = [np.sinh(v), np.cosh(v), np.arcsin(u), np.arccos(u), np.arctan(v), np.arcsinh(v),
            np.arccosh(np.abs(v) + 1), np.arctanh(u), np.trunc(v), 1 / np.sqrt(np.abs(v) + 0.25),
            1 / (v + 10), np.expm1(v), np.degrees(v), np.radians(v), np.arctan2(v, 0.5 - v),
            np.hypot(v, 2.0)]
    # asin/acos/atanh: lavapipe's approximations are within 5e-4 absolute (Vulkan's bound for
    # them is inherited from atan's, loose); exp_m1 at ±1e-3 is exp(x) - 1 (CubeCL's polyfill
    # takes the Taylor branch only below 1e-5), exact only to f32's epsilon there
    loose = {2: 5e-4, 3: 5e-4, 7: 5e-4, 11: 2e-7}
    errs = {col: float(np.max(np.abs(got[:, col] - w))) for col, w in enumerate(want)}
    for col, w in enumerate(want):
        np.testing.assert_allclose(got[:, col], w, rtol=1e-5, atol=loose.get(col, 1e-6),
                                   err_msg=f"column {col}: {errs}")
    assert list(got[:, 8]) == [-2.0, -1.0, -0.0, -0.0, 0.0, 0.0, 0.0, 1.0, 3.0]


@cube(launch=True)
def classify(x: Slice[f32], out: SliceMut[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[2 * i] = u32(is_nan(x[i]))
        out[2 * i + 1] = u32(x[i].is_inf())


def test_is_nan_and_is_inf_read_the_bits(client):
    xs = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -1.0, 3.4e38, 1e-45], np.float32)
    out = zeros(client, 2 * xs.size, u32)
    classify.launch(client, cubes(xs.size), D, up(client, xs), out)
    got = read(client, out, u32).reshape(-1, 2)
    assert got[:, 0].tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    assert got[:, 1].tolist() == [0, 0, 1, 1, 0, 0, 0, 0]


@cube(launch=True)
def powers(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[4 * i] = pow(x[i], y[i])
        out[4 * i + 1] = x[i] ** 2.0
        out[4 * i + 2] = x[i] ** 3
        out[4 * i + 3] = powi(x[i], i32(y[i]))


def test_pow_of_a_negative_base_with_an_integral_exponent_is_the_signed_power(client):
    xs = np.array([-3.0, -2.0, -2.0, 2.0, -2.0, 0.5, -1.5, 4.0], np.float32)
    ys = np.array([2.0, 3.0, 0.0, -2.0, -3.0, 3.0, 4.0, 0.5], np.float32)
    out = zeros(client, 4 * xs.size)
    powers.launch(client, cubes(xs.size), D, up(client, xs), up(client, ys), out)
    got = read(client, out).reshape(-1, 4)
    x64, y64 = xs.astype(np.float64), ys.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x64 ** y64, rtol=1e-5)
    assert got[0, 0] == np.float32(9.0) or abs(got[0, 0] - 9.0) < 1e-5  # pow(-3, 2) == 9
    np.testing.assert_allclose(got[:, 1], x64 ** 2, rtol=1e-5)
    np.testing.assert_allclose(got[:, 2], x64 ** 3, rtol=1e-5)
    np.testing.assert_allclose(got[:, 3], x64 ** np.trunc(y64), rtol=1e-5)


@cube(launch=True)
def negative_fractional_power(x: Slice[f32], out: SliceMut[f32]):
    out[0] = pow(x[0], x[1])


def test_pow_of_a_negative_base_with_a_fractional_exponent_is_nan(client):
    out = zeros(client, 1)
    negative_fractional_power.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                                     up(client, np.array([-2.0, 0.5], np.float32)), out)
    assert np.isnan(read(client, out)[0])


# -- bit functions -----------------------------------------------------------------------------
U_EDGES = np.array([0, 1, 2, 3, 0b11100010, 0x80000000, 0xFFFFFFFF, 0x00F0F000, 12345678],
                   np.uint32)


@cube(launch=True)
def bits_u32(x: Slice[u32], out: SliceMut[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        out[5 * i] = count_ones(v)
        out[5 * i + 1] = reverse_bits(v)
        out[5 * i + 2] = leading_zeros(v)
        out[5 * i + 3] = v.trailing_zeros()
        out[5 * i + 4] = find_first_set(v)


def _want_bits(vals):
    rows = []
    for v in (int(t) & 0xFFFFFFFF for t in vals):
        rows.append([bin(v).count("1"), int(f"{v:032b}"[::-1], 2), 32 - v.bit_length(),
                     (v & -v).bit_length() - 1 if v else 32, (v & -v).bit_length()])
    return np.array(rows, np.uint64)


def test_bit_functions_on_u32_match_python(client):
    out = zeros(client, 5 * U_EDGES.size, u32)
    bits_u32.launch(client, cubes(U_EDGES.size), D, up(client, U_EDGES), out)
    np.testing.assert_array_equal(read(client, out, u32).reshape(-1, 5), _want_bits(U_EDGES))


@cube(launch=True)
def bits_i32(x: Slice[i32], out: SliceMut[u32], rev: SliceMut[i32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        out[4 * i] = count_ones(v)
        out[4 * i + 1] = leading_zeros(v)
        out[4 * i + 2] = trailing_zeros(v)
        out[4 * i + 3] = find_first_set(v)
        rev[i] = reverse_bits(v)


def test_bit_functions_on_i32_read_the_twos_complement_pattern(client):
    xs = np.array([0, 1, -1, -2, 2**31 - 1, -(2**31), 96], np.int32)
    out, rev = zeros(client, 4 * xs.size, u32), zeros(client, xs.size, i32)
    bits_i32.launch(client, cubes(xs.size), D, up(client, xs), out, rev)
    want = _want_bits(xs)
    np.testing.assert_array_equal(read(client, out, u32).reshape(-1, 4), want[:, [0, 2, 3, 4]])
    np.testing.assert_array_equal(read(client, rev, i32).view(np.uint32), want[:, 1])


@cube(launch=True)
def saturating(a: Slice[u32], b: Slice[u32], ia: Slice[i32], ib: Slice[i32],
               out: SliceMut[u32], iout: SliceMut[i32]):
    i = ABSOLUTE_POS
    if i < a.len():
        out[3 * i] = saturating_add(a[i], b[i])
        out[3 * i + 1] = a[i].saturating_sub(b[i])
        out[3 * i + 2] = mul_hi(a[i], b[i])
        iout[3 * i] = saturating_add(ia[i], ib[i])
        iout[3 * i + 1] = saturating_sub(ia[i], ib[i])
        iout[3 * i + 2] = mul_hi(ia[i], ib[i])


def test_saturating_arithmetic_and_mul_hi_match_wide_integers(client):
    a = np.array([1, 0xFFFFFFF0, 5, 0, 0x80000000, 0xFFFFFFFF, 123456789, 7], np.uint32)
    b = np.array([2, 0x20, 7, 1, 0x80000000, 0xFFFFFFFF, 987654321, 0], np.uint32)
    ia = np.array([1, 2**31 - 10, -(2**31) + 5, -5, -(2**31), 2**31 - 1, -123456, 40000],
                  np.int32)
    ib = np.array([2, 20, 10, 2**31 - 1, -1, -1, 654321, -70000], np.int32)
    out, iout = zeros(client, 3 * a.size, u32), zeros(client, 3 * a.size, i32)
    saturating.launch(client, cubes(a.size), D, up(client, a), up(client, b), up(client, ia),
                      up(client, ib), out, iout)
    got, igot = read(client, out, u32).reshape(-1, 3), read(client, iout, i32).reshape(-1, 3)
    A, B = a.astype(np.int64), b.astype(np.int64)
    IA, IB = ia.astype(np.int64), ib.astype(np.int64)
    np.testing.assert_array_equal(got[:, 0], np.clip(A + B, 0, 2**32 - 1))
    np.testing.assert_array_equal(got[:, 1], np.clip(A - B, 0, 2**32 - 1))
    np.testing.assert_array_equal(got[:, 2], [(int(x) * int(y)) >> 32 for x, y in zip(a, b)])
    np.testing.assert_array_equal(igot[:, 0], np.clip(IA + IB, -(2**31), 2**31 - 1))
    np.testing.assert_array_equal(igot[:, 1], np.clip(IA - IB, -(2**31), 2**31 - 1))
    np.testing.assert_array_equal(igot[:, 2], [(int(x) * int(y)) >> 32 for x, y in zip(ia, ib)])


# -- vectors -----------------------------------------------------------------------------------
@cube(launch=True)
def vector_library(x: Slice[Vector[f32, 4]], y: Slice[Vector[f32, 4]], n: Slice[Vector[i32, 4]],
                   out: SliceMut[f32], norm: SliceMut[Vector[f32, 4]], iout: SliceMut[i32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[3 * i] = dot(x[i], y[i])
        out[3 * i + 1] = magnitude(x[i])
        out[3 * i + 2] = x[i].vector_sum()
        norm[i] = normalize(x[i])
        iout[2 * i] = vector_sum(n[i])
        iout[2 * i + 1] = n[i].dot(n[i])


def test_vector_dot_magnitude_normalize_and_sum(client):
    x = np.array([[1, 2, 3, 4], [-1, 0.5, 0, 2], [3, 4, 0, 0]], np.float32)
    y = np.array([[4, 3, 2, 1], [2, 2, 2, 2], [-1, 1, -1, 1]], np.float32)
    n = np.array([[1, -2, 3, -4], [5, 6, 7, 8], [0, 0, 0, -9]], np.int32)
    out, norm, iout = zeros(client, 9), zeros(client, 12), zeros(client, 6, i32)
    vector_library.launch(client, cubes(3), D, up(client, x), up(client, y), up(client, n),
                          out, norm, iout)
    got = read(client, out).reshape(-1, 3)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], (x64 * y).sum(1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], np.linalg.norm(x64, axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 2], x64.sum(1), rtol=1e-6)
    np.testing.assert_allclose(f32.from_bytes(client.read_one(norm.handle)).reshape(-1, 4),
                               x64 / np.linalg.norm(x64, axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    igot = read(client, iout, i32).reshape(-1, 2)
    assert igot[:, 0].tolist() == n.sum(1).tolist()
    assert igot[:, 1].tolist() == (n.astype(np.int64) ** 2).sum(1).tolist()
