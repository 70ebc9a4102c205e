"""Arithmetic and control flow give the same answers on both runtimes (WGSL's rules).

Each test runs on wgpu and on the CPU runtime (the `client` fixture); the expected values are
WGSL's: integer `//` truncates toward zero, `x // 0 == x`, `x % 0 == 0`, `i32::MIN // -1 ==
i32::MIN`, integers wrap, shift amounts are taken mod 32, f32 stays f32.
"""

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32, i32, u32
from tests.fixtures.cpu_kernels import (block_sum, collatz, early_return, f32_ops, histogram, i32_ops,
                         odd_histogram, skip_multiples_of_three, u32_ops)

I32_MIN = -(2**31)


def arg(client, kind, data):
    arr = np.asarray(data, dtype=kind.dtype)
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), len(arr))


def outs(client, n, k):
    return [BufferArg.from_raw_parts(client.empty(4 * n), n) for _ in range(k)]


def read(client, kind, bufs):
    return [kind.from_bytes(client.read_one(b.handle)) for b in bufs]


def test_i32_division_truncates_and_never_traps(client):
    a = [7, -7, 7, -7, 5, -5, I32_MIN, I32_MIN, 2**31 - 1, 3]
    b = [2, 2, -2, -2, 0, 0, -1, 1, 2, 33]
    o = outs(client, len(a), 4)
    i32_ops.launch(client, CubeCount.Static(1), CubeDim.new_1d(len(a)), arg(client, i32, a),
                   arg(client, i32, b), *o)
    q, r, w, s = read(client, i32, o)
    np.testing.assert_array_equal(q, [3, -3, -3, 3, 5, -5, I32_MIN, I32_MIN, 2**30 - 1, 0])
    np.testing.assert_array_equal(r, [1, -1, 1, -1, 0, 0, 0, 0, 1, 3])
    a64, b64 = np.array(a, np.int64), np.array(b, np.int64)
    wrap = ((a64 * b64 + a64 + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(w, wrap)
    amount = (b64 % 2**32) % 32
    shl = ((a64 << amount) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(s, (shl ^ (a64 >> amount)).astype(np.int32))


def test_u32_division_by_zero_gives_the_dividend_and_arithmetic_wraps(client):
    a = [7, 0, 2**32 - 1, 10, 2**31, 5]
    b = [2, 0, 0, 3, 2, 37]
    o = outs(client, len(a), 4)
    u32_ops.launch(client, CubeCount.Static(1), CubeDim.new_1d(len(a)), arg(client, u32, a),
                   arg(client, u32, b), *o)
    q, r, w, s = read(client, u32, o)
    np.testing.assert_array_equal(q, [3, 0, 2**32 - 1, 3, 2**30, 0])
    np.testing.assert_array_equal(r, [1, 0, 0, 1, 0, 5])
    a64, b64 = np.array(a, np.uint64), np.array(b, np.uint64)
    np.testing.assert_array_equal(w, ((a64 * b64 + a64) % 2**32).astype(np.uint32))
    amount = b64 % 32
    expect = (((a64 << amount) % 2**32) ^ (a64 >> amount)).astype(np.uint32)
    np.testing.assert_array_equal(s, expect)


def test_f32_remainder_takes_the_dividend_sign_and_math_stays_f32(client):
    a = np.array([5.5, -5.5, 5.5, 1e10, -3.0e9, 0.3], np.float32)
    b = np.array([2.0, 2.0, -2.0, 3.0, 1.0, 0.1], np.float32)
    o = outs(client, len(a), 3)
    f32_ops.launch(client, CubeCount.Static(1), CubeDim.new_1d(len(a)), arg(client, f32, a),
                   arg(client, f32, b), *o)
    rem, math = read(client, f32, o[:2])
    (to_int,) = read(client, i32, o[2:])
    np.testing.assert_allclose(rem[:3], [1.5, -1.5, 1.5])
    expect = (np.sqrt(np.abs(a)) * np.exp(b * np.float32(0.125)) + np.float32(0.1) * a)
    np.testing.assert_allclose(math, expect.astype(np.float32), rtol=2e-6)
    # f32 -> i32 saturates at the bounds (1e10 / 3 and -3e9 do not fit)
    np.testing.assert_array_equal(to_int[[0, 1, 2]], [2, -2, -2])
    assert to_int[3] == 2**31 - 1 - 127 or to_int[3] == 2**31 - 1
    assert to_int[4] == I32_MIN


def test_while_loops_and_break_are_per_unit(client):
    n = np.arange(1, 65, dtype=np.uint32)
    steps, = outs(client, 64, 1)
    collatz.launch(client, CubeCount.Static(2), CubeDim.new_1d(32), arg(client, u32, n), steps)

    def ref(x: int) -> int:
        k = 0
        while x != 1 and k < 100:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            k += 1
        return k

    np.testing.assert_array_equal(read(client, u32, [steps])[0], [ref(int(x)) for x in n])


def test_return_and_continue_are_per_unit(client):
    x = np.array([4.0, -1.0, 9.0, -2.0, 0.25, 16.0, -0.5, 1.0], np.float32)
    out, = outs(client, 8, 1)
    early_return.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(client, f32, x), out)
    np.testing.assert_array_equal(read(client, f32, [out])[0],
                                  np.where(x < 0, -1.0, np.sqrt(np.abs(x))).astype(np.float32))
    acc, = outs(client, 40, 1)
    skip_multiples_of_three.launch(client, CubeCount.Static(5), CubeDim.new_1d(8), acc)
    expect = [sum(i for i in range(p + 1) if i % 3) for p in range(40)]
    np.testing.assert_array_equal(read(client, u32, [acc])[0], expect)


def test_shared_memory_tree_reduction_sums_each_cube(client):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(256 * 6).astype(np.float32)
    out, = outs(client, 6, 1)
    block_sum.launch(client, CubeCount.Static(6), CubeDim.new_1d(256), arg(client, f32, x), out)
    np.testing.assert_allclose(read(client, f32, [out])[0], x.reshape(6, 256).sum(axis=1),
                               rtol=1e-4, atol=1e-4)


def test_atomic_fetch_add_hands_every_unit_a_distinct_old_value(client):
    x = (np.arange(512, dtype=np.uint32) * 7919) % 1000
    hist = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(16))), 16)
    old, = outs(client, 512, 1)
    top = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(1))), 1)
    histogram.launch(client, CubeCount.Static(4), CubeDim.new_1d(128), arg(client, u32, x), hist,
                     old, top)
    counts = np.bincount(x % 16, minlength=16)
    np.testing.assert_array_equal(read(client, u32, [hist])[0], counts)
    got = read(client, u32, [old])[0]
    for b in range(16):
        np.testing.assert_array_equal(np.sort(got[x % 16 == b]), np.arange(counts[b]))
    assert read(client, u32, [top])[0][0] == x.max()


def test_atomics_under_divergence_count_only_the_units_that_take_the_branch(client):
    x = (np.arange(512, dtype=np.uint32) * 7919) % 1000
    hist = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(16))), 16)
    untouched = np.full(512, 0xFFFFFFFF, dtype=np.uint32)
    old = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(untouched)), 512)
    odd_histogram.launch(client, CubeCount.Static(4), CubeDim.new_1d(128), arg(client, u32, x),
                         hist, old)
    odd = x % 2 == 1
    counts = np.bincount(x[odd] % 16, minlength=16)
    np.testing.assert_array_equal(read(client, u32, [hist])[0], counts)
    got = read(client, u32, [old])[0]
    np.testing.assert_array_equal(got[~odd], untouched[~odd])
    for b in range(16):
        np.testing.assert_array_equal(np.sort(got[odd & (x % 16 == b)]), np.arange(counts[b]))


def test_a_value_read_before_a_write_keeps_what_was_read(client):
    from tests.fixtures.cpu_kernels import read_then_clear

    y0 = np.arange(300, dtype=np.float32)
    y = arg(client, f32, y0)
    out, = outs(client, 300, 1)
    read_then_clear.launch(client, CubeCount.Static(3), CubeDim.new_1d(100), y, out)
    np.testing.assert_array_equal(read(client, f32, [out])[0], y0 + 1)
    np.testing.assert_array_equal(read(client, f32, [y])[0], np.zeros(300, np.float32))
    # the same buffer as both arguments: the write lands where out is written next
    same = arg(client, f32, y0)
    read_then_clear.launch(client, CubeCount.Static(3), CubeDim.new_1d(100), same, same)
    np.testing.assert_array_equal(read(client, f32, [same])[0], y0 + 1)


def test_math_functions_agree_with_numpy_in_f32(client):
    from math import erf

    from tests.fixtures.cpu_kernels import math_zoo

    a = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 0.3, -0.7, 3.7, -3.2, 1.0], np.float32)
    b = np.array([2.0, 0.5, 1.5, 3.0, -1.0, 2.5, 0.0, 1.0, 2.0, 0.5, 1.5, -0.5], np.float32)
    out, = outs(client, 12 * 12, 1)
    math_zoo.launch(client, CubeCount.Static(1), CubeDim.new_1d(12), arg(client, f32, a),
                    arg(client, f32, b), out)
    got = read(client, f32, [out])[0].reshape(12, 12)
    expect = np.stack([
        np.sin(a), np.cos(a), np.tan(a), np.tanh(a), np.floor(a), np.ceil(a), np.rint(a),
        np.log(np.abs(a) + 1), np.array([erf(float(v)) for v in a], np.float32),
        np.power(np.abs(a), b), np.clip(a, -1, 1), np.where(a > b, a * b + 1, np.maximum(a, b)),
    ], axis=1).astype(np.float32)
    # exact where WGSL is exact (floor/ceil/round half-to-even/clamp/select), ulps elsewhere
    np.testing.assert_array_equal(got[:, [4, 5, 6, 10]], expect[:, [4, 5, 6, 10]])
    np.testing.assert_allclose(got, expect, rtol=2e-5, atol=2e-6)
