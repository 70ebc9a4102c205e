"""The kernel language's documented semantics, each pinned on every runtime: integer division and
remainder truncate (and divide-by-zero has WGSL's defined result), shifts use the amount mod 32,
casts, select, the math library against numpy, loops with steps and nesting, while loops, local
arrays, vector components, atomics' every method, sub-slices and tensor metadata.

Float tolerance: `rtol=2e-6, atol=1e-6` for single operations, except the transcendental ones
(`rtol=1e-5`) and erf (absolute 1e-6, the polynomial's documented bound in f32).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403

D = CubeDim.new_1d(64)


def up(client, arr):
    arr = np.ascontiguousarray(arr)
    kind = {np.dtype(np.float32): f32, np.dtype(np.uint32): u32, np.dtype(np.int32): i32}[arr.dtype]
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), arr.size)


def zeros(client, n, kind=f32):
    return up(client, np.zeros(n, kind.dtype))


def read(client, b, kind=f32):
    return kind.from_bytes(client.read_one(b.handle))[: b.length]


def cubes(n):
    return CubeCount.Static(max(1, -(-n // 64)))


# -- integers ------------------------------------------------------------------------------------
@cube(launch=True)
def int_div_rem(a: Slice[i32], b: Slice[i32], q: SliceMut[i32], r: SliceMut[i32]):
    i = ABSOLUTE_POS
    if i < a.len():
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


def test_integer_floordiv_and_mod_truncate_toward_zero_and_divide_by_zero_is_defined(client):
    a = np.array([7, -7, 7, -7, 5, -5, 0, -(2**31), 9], np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, 0, -1, 3], np.int32)
    q, r = zeros(client, a.size, i32), zeros(client, a.size, i32)
    int_div_rem.launch(client, cubes(a.size), D, up(client, a), up(client, b), q, r)
    # truncation (not Python's floor); x // 0 == x, x % 0 == 0; MIN // -1 == MIN, MIN % -1 == 0
    np.testing.assert_array_equal(read(client, q, i32), [3, -3, -3, 3, 5, -5, 0, -(2**31), 3])
    np.testing.assert_array_equal(read(client, r, i32), [1, -1, 1, -1, 0, 0, 0, 0, 0])


@cube(launch=True)
def int_rem_vec4(a: Slice[Vector[i32, 4]], b: Slice[Vector[i32, 4]], r: SliceMut[Vector[i32, 4]]):
    i = ABSOLUTE_POS
    if i < a.len():
        r[i] = a[i] % b[i]


def test_i32_remainder_of_negative_operands_is_truncated_on_vectors_too(client):
    # The NVIDIA Vulkan driver gave -7 % 2 == 1 (the unsigned remainder) for naga's OpSRem:
    # the WGSL backend spells the remainder out, for scalars and vectors alike.
    a = np.array([7, -7, 7, -7, -1, -769, 5, -(2**31), 1000, -1000, 0, -5], np.int32)
    b = np.array([2, 2, -2, -2, 768, 768, 0, -1, 3, 3, 7, -5], np.int32)
    r = zeros(client, a.size, i32)
    int_rem_vec4.launch(client, cubes(3), D, up(client, a), up(client, b), r)
    want = np.fmod(a.astype(np.int64), np.where(b == 0, 1, b)).astype(np.int32)
    want[b == 0] = 0
    np.testing.assert_array_equal(read(client, r, i32), want)


@cube(launch=True)
def shifts_and_bits(a: Slice[u32], s: Slice[u32], out: SliceMut[u32], sa: SliceMut[i32]):
    i = ABSOLUTE_POS
    if i < a.len():
        v = a[i]
        out[5 * i] = v << s[i]
        out[5 * i + 1] = v >> s[i]
        out[5 * i + 2] = (v & 0xFF) | (v ^ 0xF0F0)
        out[5 * i + 3] = ~v
        out[5 * i + 4] = u32(-(i32(v & 7)))  # i32 -> u32 keeps the bits
        sa[i] = i32(v) >> s[i]  # arithmetic shift on i32


def test_shift_amounts_are_taken_mod_32_and_i32_shifts_right_arithmetically(client):
    a = np.array([1, 0x80000000, 0xDEADBEEF, 12345], np.uint32)
    s = np.array([3, 31, 36, 32], np.uint32)  # 36 acts as 4, 32 as 0
    out, sa = zeros(client, 5 * a.size, u32), zeros(client, a.size, i32)
    shifts_and_bits.launch(client, cubes(a.size), D, up(client, a), up(client, s), out, sa)
    got = read(client, out, u32).reshape(-1, 5)
    m = s % 32
    np.testing.assert_array_equal(got[:, 0], (a.astype(np.uint64) << m) & 0xFFFFFFFF)
    np.testing.assert_array_equal(got[:, 1], a >> m)
    np.testing.assert_array_equal(got[:, 2], (a & 0xFF) | (a ^ 0xF0F0))
    np.testing.assert_array_equal(got[:, 3], ~a)
    np.testing.assert_array_equal(got[:, 4], (-(a & 7).astype(np.int64)) & 0xFFFFFFFF)
    np.testing.assert_array_equal(read(client, sa, i32), a.view(np.int32) >> m.astype(np.int32))


@cube(launch=True)
def casts(x: Slice[f32], to_i: SliceMut[i32], to_u: SliceMut[u32], back: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        to_i[i] = i32(x[i])
        to_u[i] = u32(abs(x[i]))
        back[i] = f32(i32(x[i])) + f32(x[i] > 0.0)


def test_casts_truncate_toward_zero_and_bools_convert_to_0_or_1(client):
    x = np.array([1.9, -1.9, 0.0, 1000.5, -7.0], np.float32)
    ti, tu, back = zeros(client, 5, i32), zeros(client, 5, u32), zeros(client, 5)
    casts.launch(client, cubes(5), D, up(client, x), ti, tu, back)
    np.testing.assert_array_equal(read(client, ti, i32), [1, -1, 0, 1000, -7])
    np.testing.assert_array_equal(read(client, tu, u32), [1, 1, 0, 1000, 7])
    np.testing.assert_array_equal(read(client, back), [2.0, -1.0, 0.0, 1001.0, -7.0])


# -- select and math -----------------------------------------------------------------------------
@cube(launch=True)
def math_zoo(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        a = abs(v) + 0.5
        out[16 * i + 0] = sqrt(a)
        out[16 * i + 1] = exp(v)
        out[16 * i + 2] = log(a)
        out[16 * i + 3] = sin(v)
        out[16 * i + 4] = cos(v)
        out[16 * i + 5] = tan(v)
        out[16 * i + 6] = tanh(v)
        out[16 * i + 7] = floor(v)
        out[16 * i + 8] = ceil(v)
        out[16 * i + 9] = round(v)
        out[16 * i + 10] = pow(a, 1.5)
        out[16 * i + 11] = a ** 2.0
        out[16 * i + 12] = clamp(v, -0.5, 0.5)
        out[16 * i + 13] = fma(v, 2.0, 1.0)
        out[16 * i + 14] = select(v > 0.0, v, -v * 10.0)
        out[16 * i + 15] = erf(v)


def test_math_library_matches_numpy(client):
    xs = np.array([-2.5, -1.2, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, 0.99], np.float32)
    out = zeros(client, 16 * xs.size)
    math_zoo.launch(client, cubes(xs.size), D, up(client, xs), out)
    got = read(client, out).reshape(-1, 16)
    v = xs.astype(np.float64)
    a = np.abs(v) + 0.5
    want = [np.sqrt(a), np.exp(v), np.log(a), np.sin(v), np.cos(v), np.tan(v), np.tanh(v),
            np.floor(v), np.ceil(v), np.round(v), a ** 1.5, a ** 2, np.clip(v, -0.5, 0.5),
            v * 2 + 1, np.where(v > 0, v, -v * 10)]
    for col, w in enumerate(want):
        np.testing.assert_allclose(got[:, col], w, rtol=1e-5, atol=1e-6, err_msg=f"column {col}")
    # round is half-to-even (-2.5 -> -2, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2), as numpy and WGSL
    assert list(got[[0, 2, 5, 6, 7], 9]) == [-2.0, -0.0, 0.0, 2.0, 2.0]
    erf_want = np.array([math.erf(t) for t in v])
    np.testing.assert_allclose(got[:, 15], erf_want, atol=1e-6)


@cube(launch=True)
def erf_sweep(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = erf(x[i])


def test_erf_polynomial_stays_within_its_documented_bound(client):
    xs = np.linspace(-6, 6, 2001).astype(np.float32)
    out = zeros(client, xs.size)
    erf_sweep.launch(client, cubes(xs.size), D, up(client, xs), out)
    err = np.abs(read(client, out) - np.array([math.erf(float(t)) for t in xs]))
    assert err.max() <= 1e-6


# -- loops ---------------------------------------------------------------------------------------
@cube(launch=True)
def loops(n: u32, out: SliceMut[u32]):
    if ABSOLUTE_POS == 0:
        acc = u32(0)
        for i in range(2, n, 3):  # a runtime bound and a step
            for j in range(i):  # nested, the inner bound is the outer index
                acc += j
        out[0] = acc
        count = u32(0)
        k = u32(1)
        while k < n:  # a while loop
            k = k * 2
            count += 1
        out[1] = count
        odd = u32(0)
        for i in range(n):
            if i % 2 == 0:
                continue
            if i > 20:
                break
            odd += i
        out[2] = odd
        unrolled = u32(0)
        for i in unroll(range(10, 0, -3)):  # comptime bounds, negative step: 10 7 4 1
            unrolled = unrolled * 100 + i
        out[3] = unrolled


@pytest.mark.parametrize("n", [0, 1, 17, 40])
def test_ranges_with_steps_nested_loops_while_and_unroll(client, n):
    out = zeros(client, 4, u32)
    loops.launch(client, CubeCount.Static(1), D, n, out)
    acc = sum(j for i in range(2, n, 3) for j in range(i))
    count = 0
    k = 1
    while k < n:
        k *= 2
        count += 1
    odd = sum(i for i in range(n) if i % 2 == 1 and i <= 20)
    np.testing.assert_array_equal(read(client, out, u32), [acc, count, odd, 10070401])


@cube
def first_negative(x: Slice[f32], start: u32) -> u32:
    """Helper with an early `return value` under a runtime condition."""
    for i in range(start, x.len()):
        if x[i] < 0.0:
            return i
    return x.len()


@cube(launch=True)
def find_negative(x: Slice[f32], out: SliceMut[u32]):
    if ABSOLUTE_POS == 0:
        out[0] = first_negative(x, u32(0))
        out[1] = first_negative(x, u32(4))


def test_a_helper_returns_from_inside_a_loop(client):
    xs = np.array([1, 2, -3, 4, 5, 6, -7, 8], np.float32)
    out = zeros(client, 2, u32)
    find_negative.launch(client, CubeCount.Static(1), D, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out, u32), [2, 6])


# -- local arrays, vectors, sub-slices, tensors --------------------------------------------------
@cube(launch=True)
def local_array_reverse(x: Slice[f32], out: SliceMut[f32]):
    """Each unit reverses its 8 items through a local array."""
    base = ABSOLUTE_POS * 8
    if base + 8 <= x.len():
        tmp = Array[f32](8)
        for j in unroll(range(8)):
            tmp[j] = x[base + j]
        for j in range(8):
            out[base + j] = tmp[7 - j] + f32(tmp.len())


def test_local_array_holds_a_units_items(client):
    xs = np.arange(8 * 70, dtype=np.float32)
    out = zeros(client, xs.size)
    local_array_reverse.launch(client, cubes(70), D, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out), xs.reshape(-1, 8)[:, ::-1].ravel() + 8)


@cube(launch=True)
def vector_parts(x: Slice[Vector[f32, 4]], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        out[i] = v[0] + v[1] * 10.0 + v[2] * 100.0 + v[3] * 1000.0


def test_vector_components_are_readable_by_comptime_index(client):
    xs = np.arange(16, dtype=np.float32) % 7
    out = zeros(client, 4)
    vector_parts.launch(client, CubeCount.Static(1), D, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out), xs.reshape(4, 4) @ [1, 10, 100, 1000])


@cube(launch=True)
def window_sums(x: Slice[f32], out: SliceMut[f32], w: u32):
    """out[i] = sum of the window x[i : i + w] (a sub-slice with its own len)."""
    i = ABSOLUTE_POS
    if i + w <= x.len():
        win = x[i:i + w]
        acc = f32(0.0)
        for j in range(win.len()):
            acc += win[j]
        tail = out[i:]
        tail[0] = acc


def test_sub_slices_index_from_their_start_and_have_their_own_len(client):
    xs = np.arange(20, dtype=np.float32)
    out = zeros(client, 20)
    window_sums.launch(client, cubes(20), D, up(client, xs), out, 5)
    want = np.zeros(20, np.float32)
    want[:16] = [xs[i:i + 5].sum() for i in range(16)]
    np.testing.assert_array_equal(read(client, out), want)


@cube(launch=True)
def tensor_meta(t: Tensor[f32], out: SliceMut[u32]):
    if ABSOLUTE_POS == 0:
        out[0] = t.rank()
        out[1] = t.len()
        for d in range(t.rank()):
            out[2 + d] = t.shape(d)
            out[2 + t.rank() + d] = t.stride(d)


@pytest.mark.parametrize("shape,strides", [((6,), (1,)), ((2, 3), (3, 1)), ((2, 3, 4), (1, 2, 6))])
def test_tensor_rank_shape_and_strides_come_from_the_info_block(client, shape, strides):
    h = client.create_from_slice(f32.as_bytes(np.zeros(24, np.float32)))
    out = zeros(client, 8, u32)
    tensor_meta.launch(client, CubeCount.Static(1), D, TensorArg.from_raw_parts(h, shape, strides),
                       out)
    got = read(client, out, u32)
    r = len(shape)
    assert list(got[: 2 + 2 * r]) == [r, int(np.prod(shape)), *shape, *strides]  # len(): the shape's


# -- atomics -------------------------------------------------------------------------------------
@cube(launch=True)
def atomic_ops(a: SliceMut[Atomic[u32]], s: SliceMut[Atomic[i32]], old: SliceMut[u32]):
    u = UNIT_POS
    a[0].fetch_add(u32(1))
    a[1].fetch_sub(u32(1))
    a[2].fetch_max(u)
    a[3].fetch_min(u + 5)
    a[4].fetch_or(u32(1) << (u % 32))
    a[5].fetch_and(~(u32(1) << (u % 32)))
    a[6].fetch_xor(u32(1) << (u % 32))
    s[0].fetch_min(i32(u) - 10)
    s[1].fetch_max(i32(u) - 100)
    if u == 0:
        old[0] = a[7].swap(u32(99))
        old[1] = a[8].compare_exchange_weak(u32(5), u32(6))  # 5 -> 6, returns 5
        old[2] = a[8].compare_exchange_weak(u32(5), u32(7))  # no exchange, returns 6
        a[9].store(u32(1234))
        old[3] = a[9].load()


def test_every_atomic_method_returns_the_old_value_and_updates_exactly(client):
    init = np.array([0, 100, 0, 1000, 0, 0xFFFFFFFF, 0, 11, 5, 0], np.uint32)
    a = up(client, init)
    s = up(client, np.array([0, -1000], np.int32))
    old = zeros(client, 4, u32)
    atomic_ops.launch(client, CubeCount.Static(1), D, a, s, old)
    got = read(client, a, u32)
    assert list(got[:5]) == [64, 36, 63, 5, 0xFFFFFFFF]
    assert got[5] == 0  # every bit cleared (64 units cover each bit twice)
    assert got[6] == 0  # each bit flipped twice
    assert list(got[7:]) == [99, 6, 1234]
    assert list(read(client, s, i32)) == [-10, -37]
    assert list(read(client, old, u32)) == [11, 5, 6, 1234]


# -- barriers ------------------------------------------------------------------------------------
@cube(launch=True)
def scan_with_runtime_while(x: Slice[f32], out: SliceMut[f32]):
    """Hillis–Steele with a runtime `while` around the barriers (uniform: CUBE_DIM bounds it)."""
    buf = SharedMemory[f32](64)
    u = UNIT_POS
    buf[u] = x[u]
    sync_cube()
    offset = u32(1)
    while offset < CUBE_DIM:
        t = f32(0.0)
        if u >= offset:
            t = buf[u - offset]
        sync_cube()
        buf[u] += t
        sync_cube()
        offset *= 2
    out[u] = buf[u]


def test_sync_cube_inside_a_uniform_while_loop(client):
    xs = np.arange(64, dtype=np.float32) % 5
    out = zeros(client, 64)
    scan_with_runtime_while.launch(client, CubeCount.Static(1), D, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out), np.cumsum(xs))


@cube(launch=True)
def storage_neighbour(x: Slice[f32], tmp: SliceMut[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    tmp[i] = x[i] * 2.0
    sync_storage()
    out[i] = tmp[CUBE_POS * CUBE_DIM + (UNIT_POS + 1) % CUBE_DIM]


def test_sync_storage_makes_a_global_write_visible_within_the_cube(client):
    xs = np.arange(128, dtype=np.float32)
    tmp, out = zeros(client, 128), zeros(client, 128)
    storage_neighbour.launch(client, CubeCount.Static(2), D, up(client, xs), tmp, out)
    want = (np.roll(xs.reshape(2, 64), -1, axis=1) * 2).ravel()
    np.testing.assert_array_equal(read(client, out), want)


@cube(launch=True)
def exits(x: Slice[u32], out: SliceMut[u32]):
    """Exits under runtime conditions in unrolled, nested and while loops."""
    i = ABSOLUTE_POS
    if i >= x.len():
        return
    v = x[i]
    first = u32(99)
    for k in unroll(range(8)):  # unrolled: a runtime break stops the later iterations
        if (v >> k) & 1 == 1:
            first = u32(k)
            break
    skipped = u32(0)
    for k in unroll(range(6)):
        if k % 2 == 0:
            continue  # comptime: the rest of this iteration is not even expanded
        if (v >> k) & 1 == 0:
            continue  # runtime: a flag
        skipped += 1
    pairs = u32(0)
    for a in range(4):  # the inner break leaves only the inner loop
        for b in range(4):
            if b > a:
                break
            pairs += 1
    n = v
    loops = u32(0)
    while True:
        if n < 3:
            break
        n = n // 3
        loops += 1
    out[4 * i] = first
    out[4 * i + 1] = skipped
    out[4 * i + 2] = pairs
    out[4 * i + 3] = loops


def test_break_and_continue_in_unrolled_nested_and_while_true_loops(client):
    xs = np.array([0, 1, 6, 40, 255, 1000, 12], np.uint32)
    out = zeros(client, 4 * xs.size, u32)
    exits.launch(client, cubes(xs.size), D, up(client, xs), out)
    got = read(client, out, u32).reshape(-1, 4)
    for v, row in zip(xs.tolist(), got.tolist()):
        first = next((k for k in range(8) if (v >> k) & 1), 99)
        skipped = sum(1 for k in (1, 3, 5) if (v >> k) & 1)
        loops, n = 0, v
        while n >= 3:
            n //= 3
            loops += 1
        assert row == [first, skipped, 10, loops], v


@cube(launch=True)
def first_multiple(x: Slice[u32], out: SliceMut[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        found = u32(0)
        for k in range(1, 4000000000):  # stops at the first multiple: a while, not a for
            if k % x[i] == 0 and k > 10:
                found = k
                break
        out[i] = found


def test_a_for_loop_that_breaks_is_a_while_that_stops_early(client):
    from cubelab.inspect import instance, ir

    text = ir(instance(first_multiple, cube_dim=D))
    assert "scf.while" in text and "scf.for" not in text
    xs = np.array([3, 7, 11, 1, 25], np.uint32)
    out = zeros(client, xs.size, u32)
    first_multiple.launch(client, cubes(xs.size), D, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out, u32), [12, 14, 11, 11, 25])


@cube(launch=True)
def halvings(n: u32, out: SliceMut[u32]):
    """A scalar parameter re-assigned in a loop carries its value across iterations."""
    if ABSOLUTE_POS == 0:
        count = u32(0)
        while n > 1:
            n = n // 2
            count += 1
        out[0] = count
        out[1] = n


def test_a_parameter_reassigned_in_a_loop_carries_its_value(client):
    out = zeros(client, 2, u32)
    halvings.launch(client, CubeCount.Static(1), D, 1000, out)
    assert list(read(client, out, u32)) == [9, 1]


@cube
def sign_class(v: f32) -> i32:
    """A helper returning from an if/elif chain; `-> i32` types the bare literals."""
    if v < -1.0:
        return -2
    elif v < 0.0:
        return -1
    elif v == 0.0:
        return 0
    return 1


@cube
def fill(dst: SliceMut[f32], value: f32):
    for j in range(dst.len()):
        dst[j] = value


@cube(launch=True)
def mixed(x: Slice[f32], out: SliceMut[f32], cls: SliceMut[i32]):
    i = ABSOLUTE_POS
    v = f32(0.0)
    if i < x.len():  # no early return: every unit must reach sync_cube below
        v = x[i]
    vecs = Array[Vector[f32, 4]](2)
    vecs[0] = Vector.new(v)
    vecs[1] = Vector.new(f32(2.0))
    w = vecs[0] * vecs[1]
    acc = f32(0.0)
    for k in unroll(range(4)):
        acc += w[k]
    sh = SharedMemory[f32](64)
    fill(sh[UNIT_POS:UNIT_POS + 1], acc)  # a helper writing through a one-item sub-slice
    sync_cube()
    s = f32(0.0)
    for j in range(-3, 3):  # i32 bounds
        s += f32(abs(j))
    j = u32(0)  # `j` again, now a mutable local
    while j < 10 and sh[UNIT_POS] > 1000.0:
        j += 1
    if i < x.len():
        out[i] = min(acc, s, f32(100.0)) + sh[UNIT_POS] + f32(j)
        cls[i] = sign_class(v)


def test_helpers_sub_slices_vector_arrays_and_a_reused_loop_name(client):
    xs = np.array([-3, -0.5, 0, 0.5, 2, 5, 100, 300, -7, 1], np.float32)
    out, cls = zeros(client, xs.size), zeros(client, xs.size, i32)
    mixed.launch(client, CubeCount.Static(1), D, up(client, xs), out, cls)
    acc = xs * 8
    np.testing.assert_array_equal(
        read(client, out), np.minimum(np.minimum(acc, 9.0), 100) + acc + np.where(acc > 1000, 10, 0))
    np.testing.assert_array_equal(read(client, cls, i32), np.select(
        [xs < -1, xs < 0, xs == 0], [-2, -1, 0], 1))


@cube(launch=True)
def comptime_then_runtime(x: Slice[f32], out: SliceMut[f32]):
    """`total` starts as comptime(...) but is updated with runtime values in a loop: it is an
    ordinary local, so every iteration sees the previous one's value."""
    if ABSOLUTE_POS == 0:
        total = comptime(1.0 + 1.0)
        for j in range(x.len()):
            total = total + x[j]
        out[0] = total


def test_a_comptime_start_value_updated_in_a_runtime_loop_accumulates(client):
    xs = np.arange(1, 11, dtype=np.float32)
    out = zeros(client, 1)
    comptime_then_runtime.launch(client, CubeCount.Static(1), D, up(client, xs), out)
    assert read(client, out)[0] == 2.0 + xs.sum()


@cube(launch=True)
def relu_vec(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        out[i] = select(v > 0.0, v, v * 0.1) + select(v > 1.0, 100.0, 0.0)


def test_select_with_a_bool_vector_picks_per_component(client):
    xs = np.array([-1, 0.5, 2, -3, 4, 0, 1, 1.5], np.float32)
    out = zeros(client, 8)
    relu_vec.launch(client, CubeCount.Static(1), D, up(client, xs), out)
    want = np.where(xs > 0, xs, xs * np.float32(0.1)) + np.where(xs > 1, 100, 0)
    np.testing.assert_allclose(read(client, out), want, rtol=1e-6)
