"""An unrolled dot product out of shared memory (`acc += a[ty * T + j] * b[j * T + tx]`, the tiled
matmul's inner loop) runs on the CPU runtime as one cube-minor step (`steps.accumulate`) and gives
the very bits the ops one by one give — -0.0, NaN and inf included — in both operand orders, with
the accumulator read back in lane order between runs; a masked run, an out-of-bounds index and
a traced launch run op by op, with the same reports.
"""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import f32
from cubelab.runtime.cpu import oob_mode
from cubelab.runtime.cpu.steps import accumulate
from tests.fixtures.cpu_kernels import unrolled_dot_in_a_branch, unrolled_dots
from tests.zoo import kernels as zoo


def arg(client, arr):  # type: ignore[no-untyped-def]
    return BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(arr.ravel())), arr.size)


def specials(rng, n):  # type: ignore[no-untyped-def]
    """Normal floats with zeros of both signs, infinities, tiny values and NaNs (a few with
    payloads) sprinkled in."""
    v = rng.standard_normal(n).astype(np.float32)
    at = rng.permutation(n)
    v[at[: n // 8]] = 0.0
    v[at[n // 8: n // 4]] = -0.0
    v[at[n // 4: n // 4 + 3]] = [np.inf, -np.inf, np.nan]
    v[at[n // 4 + 3: n // 4 + 40]] = np.float32(-1e-30)  # products underflow to -0.0
    v.view(np.uint32)[at[n // 4 + 40: n // 4 + 43]] = [0x7FC00007, 0xFFC00013, 0x7FA00001]
    return v


def launch_dots(client, xs, ys, cubes, tile):  # type: ignore[no-untyped-def]
    out = client.empty(4 * xs.size)
    unrolled_dots.launch(client, CubeCount.Static(cubes), CubeDim.new_2d(tile, tile),
                         arg(client, xs), arg(client, ys), BufferArg.from_raw_parts(out, xs.size),
                         tile)
    return f32.from_bytes(client.read_one(out))


def test_an_unrolled_dot_product_runs_as_one_step_with_the_bits_of_the_ops_one_by_one(
        cpu_client, monkeypatch):
    cubes, tile = 40, 8
    rng = np.random.default_rng(11)
    xs, ys = specials(rng, cubes * tile * tile), specials(rng, cubes * tile * tile)
    xs[: tile * tile], ys[: tile * tile] = 0.0, -0.0  # cube 0: every sum is -0.0 + -0.0
    monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", 10**9)  # op by op
    runs = accumulate.fused_runs
    want = launch_dots(cpu_client, xs, ys, cubes, tile)
    assert accumulate.fused_runs == runs
    monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", 1)
    got = launch_dots(cpu_client, xs, ys, cubes, tile)
    assert accumulate.fused_runs == runs + 2  # the two loops, each one step
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert (got.view(np.uint32) == 0x80000000).any() and np.isnan(got).any()  # -0.0, NaN seen


def test_an_unrolled_dot_product_sums_in_the_kernels_order(client, monkeypatch):
    monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", 1)
    cubes, tile = 6, 8
    rng = np.random.default_rng(12)
    xs = rng.standard_normal(cubes * tile * tile).astype(np.float32)
    ys = rng.standard_normal(cubes * tile * tile).astype(np.float32)
    got = launch_dots(client, xs, ys, cubes, tile)
    x, y = xs.reshape(cubes, tile, tile), ys.reshape(cubes, tile, tile)  # [cube, uy, ux]
    acc = y.copy()
    for j in range(tile):  # a[ty * T + j] = x[ty, j]; b[j * T + tx] = y[tx, j]
        acc = acc + x[:, :, j][:, :, None] * y[:, :, j][:, None, :]
    half = acc * np.float32(0.5)
    for j in range(tile):  # a[j * T + tx] = x[j, tx]; b[ty * T + j] = y[j, ty]
        acc = x[:, j, :][:, None, :] * y[:, j, :][:, :, None] + acc
    if client.name() == "cpu<numpy>":
        np.testing.assert_array_equal(got, (acc + half).ravel())
    else:  # a GPU driver may contract a product and a sum into one fma
        np.testing.assert_allclose(got, (acc + half).ravel(), rtol=1e-5, atol=1e-5)


def test_the_tiled_matmul_keeps_its_accumulator_cube_minor_and_gives_numpys_product(
        cpu_client, monkeypatch):
    monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", 1)
    m, kk, n, tile = 64, 48, 80, 16
    rng = np.random.default_rng(13)
    a = rng.standard_normal((m, kk)).astype(np.float32)
    b = rng.standard_normal((kk, n)).astype(np.float32)
    hc = cpu_client.empty(4 * m * n)
    runs = accumulate.fused_runs
    zoo.matmul.launch(cpu_client, CubeCount.Static(n // tile, m // tile, 1),
                      CubeDim.new_2d(tile, tile), arg(cpu_client, a), arg(cpu_client, b),
                      BufferArg.from_raw_parts(hc, m * n), m, kk, n, tile)
    got = f32.from_bytes(cpu_client.read_one(hc)).reshape(m, n)
    assert accumulate.fused_runs == runs + kk // tile  # one step per iteration of the k loop
    want = np.zeros((m, n), np.float32)
    for j in range(kk):  # the kernel's order: one product after the other, in f32
        want = want + a[:, j][:, None] * b[j, :][None, :]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shift", [0, 1])
def test_a_masked_or_out_of_bounds_dot_product_runs_op_by_op_with_the_same_reports(
        cpu_client, monkeypatch, shift):
    cubes = 20
    xs = np.random.default_rng(14).standard_normal(cubes * 64).astype(np.float32)

    def run(minimum):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", minimum)
        out = cpu_client.empty(4 * xs.size)
        with oob_mode(cpu_client, "report") as result:
            unrolled_dot_in_a_branch.launch(cpu_client, CubeCount.Static(cubes),
                                            CubeDim.new_2d(8, 8), arg(cpu_client, xs),
                                            BufferArg.from_raw_parts(out, xs.size), shift)
        return f32.from_bytes(cpu_client.read_one(out)), [str(a) for a in result.oob]

    want, want_oob = run(10**9)
    runs = accumulate.fused_runs
    got, got_oob = run(1)
    # the masked loop never fuses; the unmasked one does unless an index is out of bounds
    assert accumulate.fused_runs == runs + (1 - shift)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert got_oob == want_oob and bool(got_oob) == bool(shift)


def test_a_traced_dot_product_shows_every_term(cpu_client, monkeypatch):
    monkeypatch.setattr(accumulate, "CUBE_MINOR_MIN", 1)
    xs = np.arange(2 * 64, dtype=np.float32)
    out = cpu_client.empty(4 * xs.size)
    runs = accumulate.fused_runs
    t = inspect.trace(unrolled_dots.launch, cpu_client, CubeCount.Static(2), CubeDim.new_2d(8, 8),
                      arg(cpu_client, xs), arg(cpu_client, xs),
                      BufferArg.from_raw_parts(out, xs.size), 8, units=[9])
    assert accumulate.fused_runs == runs
    assert len([s for s in t.steps[9] if s.op == "arith.mul"]) >= 16
