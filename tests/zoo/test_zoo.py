"""The kernel zoo against numpy, on every runtime, at several sizes — including sizes that the
cube size does not divide (the last cube is partly idle, and every kernel must guard for it).

Tolerances: float results are compared with `rtol=1e-5, atol=1e-5` unless a test says otherwise
(sums of many terms: the GPU adds in a tree, numpy pairwise, so the rounding differs; a reduction
of n floats in [0, 1) gets `rtol=1e-4`); integer results are exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import TensorArg, f32, u32
from tests.zoo import BINS, BLOCK, HORNER, TILE
from tests.zoo import kernels as k

RNG = np.random.default_rng(1234)
SIZES = [1, 63, 64, 200, 1000]


def up(client, arr):
    arr = np.ascontiguousarray(arr)
    kind = f32 if arr.dtype == np.float32 else u32
    return client.create_from_slice(kind.as_bytes(arr)), arr.size


def arg(handle_size):
    handle, size = handle_size
    return BufferArg.from_raw_parts(handle, size)


def out_f32(client, n):
    return client.create_from_slice(f32.as_bytes(np.zeros(max(n, 1), np.float32))), n


def read_f32(client, h):
    return f32.from_bytes(client.read_one(h[0]))[: h[1]]


def read_u32(client, h):
    return u32.from_bytes(client.read_one(h[0]))[: h[1]]


def cubes(n, block=BLOCK):
    return CubeCount.Static(max(1, -(-n // block)))


def test_gelu_on_vec4_matches_the_cubecl_example(client):
    x = up(client, np.array([-1.0, 0.0, 1.0, 5.0], np.float32))
    out = out_f32(client, 4)
    k.gelu.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(BLOCK), arg(x), arg(out))
    np.testing.assert_allclose(read_f32(client, out), [-0.1587, 0.0, 0.8413, 5.0], atol=1e-4)


@pytest.mark.parametrize("n", [4, 68, 1000])
def test_gelu_matches_numpy_with_erf(client, n):
    xs = RNG.normal(0, 2, n).astype(np.float32)
    x, out = up(client, xs), out_f32(client, n)
    k.gelu.launch[f32](client, cubes(n // 4), CubeDim.new_1d(BLOCK), arg(x), arg(out))
    want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in xs.astype(np.float64)])
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-5, atol=2e-6)


def block_partials(client, x, n):
    nc = max(1, -(-n // BLOCK))
    partial = out_f32(client, nc)
    k.block_sum.launch(client, CubeCount.Static(nc), CubeDim.new_1d(BLOCK), arg(x), arg(partial),
                       BLOCK)
    return partial


@pytest.mark.parametrize("n", SIZES)
def test_block_sum_in_shared_memory_gives_each_cube_its_partial_sum(client, n):
    xs = RNG.random(n, dtype=np.float32)
    partial = block_partials(client, up(client, xs), n)
    padded = np.concatenate([xs, np.zeros(-n % BLOCK, np.float32)]).reshape(-1, BLOCK)
    np.testing.assert_allclose(read_f32(client, partial), padded.sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 200, 5000])
def test_two_pass_sum_equals_numpy_sum(client, n):
    xs = RNG.random(n, dtype=np.float32)
    partial = block_partials(client, up(client, xs), n)
    total = out_f32(client, 1)
    k.sum_all.launch(client, CubeCount.Static(1), CubeDim.new_1d(BLOCK), arg(partial),
                     arg(total), BLOCK)
    np.testing.assert_allclose(read_f32(client, total)[0], xs.astype(np.float64).sum(),
                               rtol=1e-4)


@pytest.mark.parametrize("n", [1, 64, 100, 1000])
def test_hillis_steele_scan_is_numpy_cumsum(client, n):
    xs = RNG.integers(0, 10, n).astype(np.float32)  # small integers: every sum is exact
    x, out = up(client, xs), out_f32(client, n)
    nc = max(1, -(-n // BLOCK))
    totals = out_f32(client, nc)
    k.scan_block.launch(client, CubeCount.Static(nc), CubeDim.new_1d(BLOCK), arg(x), arg(out),
                        arg(totals), BLOCK)
    scanned = out_f32(client, nc)
    dummy = out_f32(client, 1)
    k.scan_block.launch(client, CubeCount.Static(1), CubeDim.new_1d(BLOCK), arg(totals),
                        arg(scanned), arg(dummy), BLOCK)
    k.add_block_offsets.launch(client, CubeCount.Static(nc), CubeDim.new_1d(BLOCK), arg(out),
                               arg(scanned))
    np.testing.assert_array_equal(read_f32(client, out), np.cumsum(xs))


@pytest.mark.parametrize("m,kk,n", [(8, 8, 8), (13, 19, 17), (1, 5, 30), (33, 16, 9)])
def test_tiled_matmul_with_shared_tiles_matches_numpy(client, m, kk, n):
    a = RNG.random((m, kk), dtype=np.float32)
    b = RNG.random((kk, n), dtype=np.float32)
    ha, hb, hc = up(client, a), up(client, b), out_f32(client, m * n)
    count = CubeCount.Static(-(-n // TILE), -(-m // TILE))
    k.matmul.launch(client, count, CubeDim.new_2d(TILE, TILE), arg(ha), arg(hb), arg(hc), m, kk,
                    n, TILE)
    np.testing.assert_allclose(read_f32(client, hc).reshape(m, n), a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 7), (16, 16), (9, 30)])
def test_transpose_through_tensor_strides(client, rows, cols):
    a = RNG.random((rows, cols), dtype=np.float32)
    h = up(client, a)
    out = out_f32(client, rows * cols)
    # the transposed *view*: shape (cols, rows), strides (1, cols) on the same bytes
    src = TensorArg.from_raw_parts(h[0], (cols, rows), (1, cols))
    dst = TensorArg.from_raw_parts(out[0], (cols, rows), (rows, 1))
    k.strided_copy_2d.launch(client, CubeCount.Static(-(-rows // 8), -(-cols // 8)),
                             CubeDim.new_2d(8, 8), src, dst)
    np.testing.assert_array_equal(read_f32(client, out).reshape(cols, rows), a.T)


@pytest.mark.parametrize("n", [1, 100, 3000])
def test_histogram_with_shared_and_global_atomics_counts_exactly(client, n):
    xs = RNG.integers(0, 1000, n).astype(np.uint32)
    hist = up(client, np.zeros(BINS, np.uint32))
    k.histogram.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(hist),
                       BINS)
    np.testing.assert_array_equal(read_u32(client, hist), np.bincount(xs % BINS, minlength=BINS))


@pytest.mark.parametrize("n", [1, 2, 64, 65, 1000])
def test_stencil_with_halo_matches_numpy(client, n):
    xs = RNG.random(n, dtype=np.float32)
    out = out_f32(client, n)
    k.stencil3.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(out),
                      BLOCK)
    p = np.concatenate([[0.0], xs.astype(np.float64), [0.0]])
    want = (p[:-2] + p[1:-1] + p[2:]) / 3
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 10), (4, 64), (7, 300)])
def test_softmax_per_row_matches_numpy(client, rows, cols):
    xs = RNG.normal(0, 3, (rows, cols)).astype(np.float32)
    out = out_f32(client, rows * cols)
    k.softmax_rows.launch(client, CubeCount.Static(rows), CubeDim.new_1d(BLOCK),
                          arg(up(client, xs)), arg(out), cols, BLOCK)
    e = np.exp(xs.astype(np.float64) - xs.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    got = read_f32(client, out).reshape(rows, cols)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def collatz_ref(v, limit):
    steps = 0
    while v > 1 and steps < limit:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


@pytest.mark.parametrize("n,limit", [(1, 1000), (100, 1000), (300, 20)])
def test_collatz_with_break_and_continue_counts_steps(client, n, limit):
    xs = np.arange(1, n + 1, dtype=np.uint32)
    out = up(client, np.full(n, 7777, np.uint32))
    k.collatz_steps.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)),
                           arg(out), limit)
    np.testing.assert_array_equal(read_u32(client, out), [collatz_ref(int(v), limit) for v in xs])


@pytest.mark.parametrize("n", [1, 63, 200])
def test_early_return_skips_the_rest_of_the_kernel(client, n):
    xs = RNG.normal(0, 4, n).astype(np.float32)
    # one more item than the launch's x: the unit past the end returns before writing it
    out = up(client, np.full(n + 1, 42.0, np.float32))
    k.safe_sqrt.launch(client, cubes(n + 1), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(out))
    got = read_f32(client, out)
    want = np.where(xs < 0, -1.0, np.sqrt(np.abs(xs)))
    np.testing.assert_allclose(got[:n], want, rtol=1e-6)
    assert got[n] == 42.0


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_horner_helper_with_comptime_degree_is_numpy_polyval(client, n):
    xs = RNG.uniform(-2, 2, n).astype(np.float32)
    out = out_f32(client, n)
    k.polyval.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(out),
                     HORNER)
    want = np.polyval(HORNER[::-1], xs.astype(np.float64))
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 64, 150])
def test_sync_cube_makes_the_left_neighbours_shared_write_visible(client, n):
    xs = RNG.integers(0, 100, n).astype(np.float32)
    out = out_f32(client, n)
    k.neighbour_sum.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)),
                           arg(out), BLOCK)
    left = np.concatenate([[0.0], xs[:-1]]).astype(np.float32)
    left[::BLOCK] = 0.0  # the first unit of each cube has no left neighbour in its cube
    np.testing.assert_array_equal(read_f32(client, out), left + xs)


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_bit_tricks_popcount_and_reverse_are_exact(client, n):
    xs = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    xs[0] = 0xFFFFFFFF
    pop, rev = up(client, np.zeros(n, np.uint32)), up(client, np.zeros(n, np.uint32))
    k.bit_tricks.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(pop),
                        arg(rev))
    np.testing.assert_array_equal(read_u32(client, pop), [bin(int(v)).count("1") for v in xs])
    np.testing.assert_array_equal(read_u32(client, rev),
                                  [int(f"{int(v):032b}"[::-1], 2) for v in xs])


@pytest.mark.parametrize("rows,cols", [(3, 3), (10, 13), (20, 9)])
def test_conv2d_with_two_index_tensors_matches_numpy(client, rows, cols):
    img = RNG.standard_normal((rows, cols)).astype(np.float32)
    w = RNG.standard_normal((3, 3)).astype(np.float32)
    orows, ocols = rows - 2, cols - 2
    hi, hw, ho = up(client, img), up(client, w), out_f32(client, orows * ocols)
    k.conv2d_3x3.launch(client, CubeCount.Static(-(-ocols // 8), -(-orows // 8)),
                        CubeDim.new_2d(8, 8), TensorArg.from_raw_parts(hi[0], (rows, cols), (cols, 1)),
                        TensorArg.from_raw_parts(hw[0], (3, 3), (3, 1)),
                        TensorArg.from_raw_parts(ho[0], (orows, ocols), (ocols, 1)))
    want = sum(img[dr:dr + orows, dc:dc + ocols].astype(np.float64) * w[dr, dc]
               for dr in range(3) for dc in range(3))
    np.testing.assert_allclose(read_f32(client, ho).reshape(orows, ocols), want, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("n", [1, 100])
def test_morton_codes_with_the_bit_library_are_exact(client, n):
    xs = RNG.integers(0, 2**16, n, dtype=np.uint64).astype(np.uint32)
    ys = RNG.integers(0, 2**16, n, dtype=np.uint64).astype(np.uint32)
    xs[0], ys[0] = 0, 0
    code, info = up(client, np.zeros(n, np.uint32)), up(client, np.zeros(3 * n, np.uint32))
    k.morton_bits.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)),
                         arg(up(client, ys)), arg(code), arg(info))
    want = [sum(((int(x) >> b & 1) << 2 * b) | ((int(y) >> b & 1) << (2 * b + 1))
                for b in range(16)) for x, y in zip(xs, ys)]
    assert read_u32(client, code).tolist() == want
    got = read_u32(client, info).reshape(-1, 3).tolist()
    assert got == [[bin(m).count("1"), 32 - m.bit_length(), (m & -m).bit_length()] for m in want]


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_plane_inclusive_sum_scans_each_plane(client, n):
    xs = RNG.random(n, dtype=np.float32)
    out, pd = out_f32(client, n), up(client, np.zeros(1, np.uint32))
    k.plane_scan.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, xs)), arg(out),
                        arg(pd))
    p = int(read_u32(client, pd)[0])
    padded = np.zeros(-(-n // p) * p)
    padded[:n] = xs
    want = np.cumsum(padded.reshape(-1, p), 1).reshape(-1)[:n]
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("units", [1, 70])
def test_tiny_vm_runs_a_program_of_opcodes_through_a_switch(client, units):
    n = 4 * units
    xs = RNG.standard_normal(n).astype(np.float32)
    code = np.array([0, 1, 2, 9, 4, 3, 1, 0], np.uint32)
    args = np.array([0.5, 3.0, 0.0, 7.0, -1.0, 0.0, 0.25, -2.0], np.float32)
    out = out_f32(client, n)
    k.tiny_vm.launch(client, cubes(units), CubeDim.new_1d(BLOCK), arg(up(client, xs)),
                     arg(up(client, code)), arg(up(client, args)), arg(out))
    want = xs.copy()
    for op, a in zip(code, args):
        if op == 0:
            want = want + a
        elif op == 1:
            want = want * a
        elif op in (2, 3):
            want = -want
        elif op == 4:
            want = np.maximum(want, a)
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 200])
def test_shape_area_with_a_runtime_variant_enum_matches_numpy(client, n):
    kind = RNG.integers(0, 2, n).astype(np.uint32)
    a = RNG.uniform(0.5, 3.0, n).astype(np.float32)
    b = RNG.uniform(0.5, 3.0, n).astype(np.float32)
    out = out_f32(client, n)
    k.shape_area.launch(client, cubes(n), CubeDim.new_1d(BLOCK), arg(up(client, kind)),
                        arg(up(client, a)), arg(up(client, b)), arg(out))
    want = np.where(kind == 0, np.float32(3.14159265) * a * a, a * b)
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-6)


@pytest.mark.parametrize("cubes_", [1, 3])
def test_bitonic_sort_of_36_unrolled_stages_sorts_each_cube(client, cubes_):
    x = RNG.standard_normal(256 * cubes_).astype(np.float32)
    out = out_f32(client, x.size)
    k.bitonic_sort.launch(client, CubeCount.Static(cubes_), CubeDim.new_1d(256),
                          arg(up(client, x)), arg(out), 256)
    want = np.sort(x.reshape(cubes_, 256), axis=1).ravel()
    np.testing.assert_array_equal(read_f32(client, out), want)


def test_a_64_step_unrolled_scan_is_cumsum_per_unit(client):
    x = RNG.uniform(0, 1, 64 * 96).astype(np.float32)
    out = out_f32(client, x.size)
    k.scan_unrolled.launch(client, CubeCount.Static(2), CubeDim.new_1d(64), arg(up(client, x)),
                           arg(out), 64)
    want = np.cumsum(x.reshape(96, 64), axis=1).ravel()
    np.testing.assert_allclose(read_f32(client, out), want, rtol=1e-5, atol=1e-5)
