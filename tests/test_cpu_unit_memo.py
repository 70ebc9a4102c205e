"""Unit-only values (computed from UNIT_POS and uniform operands) are memoized per chunk shape
and shared by every chunk of a large launch (`plan._unit_memo`, `Ctx._static`): the shared-memory
kernels give numpy's answers in every chunk, and the memo really served them (`unit_memo_hits`),
on launches of several full chunks plus a shorter last one; those that depend on no loop counter
are computed once, before the body runs (`Plan._hoisted`). A unit-only shared-memory index
reaches every cube's row through one pattern (`steps.memory.cube_pattern`): slices, strided
views and permutations, read and written, masked or not, give numpy's answers on both runtimes.
"""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32, u32
from cubelab.runtime.cpu import compaction, lanes
from cubelab.runtime.cpu import plan as cpu_plan
from cubelab.runtime.cpu.steps import memory as cpu_memory
from cubelab.runtime.cpu.steps.memory import cube_pattern
from tests.fixtures.cpu_kernels import (block_sum, broadcast_product, read_then_overwrite_shared,
                                        row_sums, shared_shuffles, tile_transpose,
                                        unit_values_in_switch_arms)
from tests.zoo import kernels as zoo


@pytest.fixture
def small_chunks(monkeypatch):  # type: ignore[no-untyped-def]
    """Chunks of 8192 lanes, so a modest launch runs several chunks and a shorter last one; the
    result counts the memo hits since."""
    monkeypatch.setattr(lanes, "CHUNK_LANES", 8192)
    monkeypatch.setattr(cpu_plan, "CHUNK_LANES", 8192)
    before = cpu_plan.unit_memo_hits
    return lambda: cpu_plan.unit_memo_hits - before


def arg(client, arr):  # type: ignore[no-untyped-def]
    return BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(arr.ravel())), arr.size)


def test_block_sum_over_many_chunks_matches_numpy_through_the_memo(cpu_client, small_chunks):
    xs = np.random.default_rng(0).standard_normal(256 * 72).astype(np.float32)  # 2 full + 1/4
    out = cpu_client.empty(4 * 72)
    runs = compaction.compacted_runs
    for _ in range(2):
        block_sum.launch(cpu_client, CubeCount.Static(72), CubeDim.new_1d(256), arg(cpu_client, xs),
                         BufferArg.from_raw_parts(out, 72))
    got = f32.from_bytes(cpu_client.read_one(out))
    np.testing.assert_allclose(got, xs.reshape(-1, 256).sum(1), rtol=1e-5, atol=1e-4)
    assert small_chunks() > 0
    assert compaction.compacted_runs > runs  # `UNIT_POS < s` compacted with a shared selection


def test_tiled_matmul_over_many_chunks_matches_numpy_through_the_memo(cpu_client, small_chunks):
    hoisted = cpu_plan.hoisted_reuses
    m, kk, n, tile = 96, 80, 224, 16  # 84 cubes: two full chunks of 32, then 20
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, kk)).astype(np.float32)
    b = rng.standard_normal((kk, n)).astype(np.float32)
    hc = cpu_client.empty(4 * m * n)
    zoo.matmul.launch(cpu_client, CubeCount.Static(n // tile, m // tile, 1),
                      CubeDim.new_2d(tile, tile), arg(cpu_client, a), arg(cpu_client, b),
                      BufferArg.from_raw_parts(hc, m * n), m, kk, n, tile)
    got = f32.from_bytes(cpu_client.read_one(hc)).reshape(m, n)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert small_chunks() > 0  # `t0 + tx`: a loop counter and UNIT_POS_X
    assert cpu_plan.hoisted_reuses > hoisted  # `ty * tile + j`: once for both full chunks


def test_stencil_over_many_chunks_matches_numpy_through_the_hoisted_values(cpu_client,
                                                                          small_chunks):
    hoisted = cpu_plan.hoisted_reuses
    xs = np.random.default_rng(2).standard_normal(256 * 72 - 7).astype(np.float32)
    cubes = 72
    out = cpu_client.empty(4 * xs.size)
    zoo.stencil3.launch(cpu_client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                        arg(cpu_client, xs), BufferArg.from_raw_parts(out, xs.size), 256)
    p = np.concatenate([[0], xs, [0]]).astype(np.float32)
    np.testing.assert_allclose(f32.from_bytes(cpu_client.read_one(out)),
                               (p[:-2] + p[1:-1] + p[2:]) / np.float32(3), rtol=1e-6, atol=1e-6)
    assert cpu_plan.hoisted_reuses > hoisted  # `u + 1`, `u == 0`, ...: no loop counter in them


def test_shared_memory_through_permutations_and_masked_slices_matches_numpy(client,
                                                                           small_chunks):
    cubes = 72
    xs = np.random.default_rng(3).standard_normal(256 * cubes).astype(np.float32)
    out = client.empty(4 * xs.size)
    shared_shuffles.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256), arg(client, xs),
                           BufferArg.from_raw_parts(out, xs.size))
    rows = xs.reshape(cubes, 256)
    sm = np.zeros((cubes, 257), dtype=np.float32)
    sm[:, :256] = rows[:, ::-1]
    a = sm[:, (np.arange(256) * 7) % 256]
    sm[:, 1:257] = np.where(rows > 0, a, sm[:, 1:257])
    want = sm[:, :256] + a * np.float32(2)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), want.ravel())


def test_shared_memory_through_strided_patterns_of_a_2d_cube_matches_numpy(client, small_chunks):
    cubes = 72
    xs = np.random.default_rng(4).standard_normal(256 * cubes).astype(np.float32)
    out = client.empty(4 * xs.size)
    tile_transpose.launch(client, CubeCount.Static(cubes), CubeDim.new_2d(16, 16),
                          arg(client, xs), BufferArg.from_raw_parts(out, xs.size))
    t = xs.reshape(cubes, 16, 16)  # [cube, ty, tx]
    want = t.transpose(0, 2, 1) + t[:, 3, :][:, :, None] * np.float32(2)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), want.ravel())


def test_a_unit_only_pattern_is_judged_a_slice_a_strided_view_or_a_take():
    u = np.arange(256)
    assert cube_pattern(u + 1, (256, 1, 1), True) == ("slice", 1, 257)
    assert cube_pattern(u[:64] + 64, None, True) == ("slice", 64, 128)
    tx, ty = u % 16, u // 16
    assert cube_pattern(tx * 16 + ty, (16, 16, 1), True) == ("strided", 0, (1, 16, 16),
                                                            (0, 1, 16), True)
    assert cube_pattern(ty * 16 + 3, (16, 16, 1), True) == ("strided", 3, (1, 16, 16),
                                                           (0, 16, 0), False)
    assert cube_pattern(tx * 16 + ty, (16, 16, 1), False)[0] == "take"  # vector items
    kind, p = cube_pattern(255 - u, (256, 1, 1), True)
    assert kind == "take" and (p == 255 - u).all()


def test_a_shared_load_is_read_in_place_only_where_nothing_writes_before_its_use(client,
                                                                                small_chunks):
    cubes = 72
    xs = np.random.default_rng(5).standard_normal(256 * cubes).astype(np.float32)
    out = client.empty(4 * xs.size)
    read_then_overwrite_shared.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                                      arg(client, xs), BufferArg.from_raw_parts(out, xs.size))
    want = xs + (xs * np.float32(3)) * (xs * np.float32(3))
    # atol: a GPU may fuse the multiply-add (one rounding instead of two), and where x + 9x^2
    # cancels (x near -1/9) that one ulp of 9x^2 is a large relative difference (seen on the H200)
    np.testing.assert_allclose(f32.from_bytes(client.read_one(out)), want, rtol=1e-6, atol=1e-6)


def test_shared_loads_used_once_by_arithmetic_are_read_as_views_of_the_rows(cpu_client,
                                                                           small_chunks):
    cubes = 72
    xs = np.arange(256 * cubes, dtype=np.float32)
    out = cpu_client.empty(4 * xs.size)
    before = cpu_memory.shared_views
    read_then_overwrite_shared.launch(cpu_client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                                      arg(cpu_client, xs), BufferArg.from_raw_parts(out, xs.size))
    cpu_client.sync()
    # the two loads of sm[u] in the last line, in each of the three chunks; never `a` (read
    # before the store)
    assert cpu_memory.shared_views - before == 6


def test_unit_values_inside_compacted_switch_arms_match_numpy(client, small_chunks):
    cubes = 72
    out = client.empty(4 * 256 * cubes)
    runs = compaction.compacted_runs
    unit_values_in_switch_arms.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                                      BufferArg.from_raw_parts(out, 256 * cubes))
    u = np.tile(np.arange(256, dtype=np.uint32), cubes)
    want = np.where(u % 4 == 0, u * 3 + 1, np.where(u % 4 == 1, u + 7, u // 2))
    np.testing.assert_array_equal(u32.from_bytes(client.read_one(out)), want)
    if client.name().startswith("cpu"):
        assert compaction.compacted_runs > runs  # the arms really ran on their lanes alone


def test_a_product_of_broadcast_shared_reads_is_ieee_down_to_the_sign_of_zero(client,
                                                                              small_chunks):
    cubes = 72
    xs = np.random.default_rng(6).standard_normal(256 * cubes).astype(np.float32)
    xs[::3] = 0.0  # negative times zero is -0.0: a sum-of-products kernel would say +0.0
    out = client.empty(4 * xs.size)
    broadcast_product.launch(client, CubeCount.Static(cubes), CubeDim.new_2d(16, 16),
                             arg(client, xs), BufferArg.from_raw_parts(out, xs.size))
    t = xs.reshape(cubes, 16, 16)  # [cube, y, x]
    want = (t[:, :, 3][:, :, None] * t[:, 5, :][:, None, :]).ravel()
    got = f32.from_bytes(client.read_one(out))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_local_only_one_branch_names_is_not_merged_back_and_others_are():
    from cubelab.inspect import instance
    from cubelab.runtime.cpu.analysis import branch_private_vars

    definition = instance(zoo.stencil3, cube_dim=CubeDim.new_1d(256), comptime=(256,)).define()
    ifs = [op for op in definition.body.ops if op.name == "scf.if"]
    private = [branch_private_vars(definition).get(id(op.regions[0])) for op in ifs]
    # `v` is set before its `if i < n` and read after it; `left` and `right` live in one edge
    # branch each (read there, never after); the last branch names no local
    assert [len(p or ()) for p in private] == [0, 1, 1, 0]


def test_sums_of_shared_rows_stay_in_the_rows_and_ignore_what_lies_between(client, small_chunks):
    cubes = 72
    xs = np.random.default_rng(7).standard_normal(256 * cubes).astype(np.float32)
    xs[1::256], xs[2::256] = -xs[1::256], 0.0  # +-inf and NaN in items 256..259 of each row
    out = client.empty(4 * xs.size)
    row_sums.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256), arg(client, xs),
                    BufferArg.from_raw_parts(out, xs.size))
    rows = np.zeros((cubes, 260), np.float32)
    rows[:, :256] = xs.reshape(cubes, 256)
    with np.errstate(divide="ignore", invalid="ignore"):
        rows[:, 256:] = rows[:, :4] / np.float32(0.0)
        want = (rows[:, 0:256] + rows[:, 1:257] + rows[:, 2:258]) * np.float32(0.5)
    got = f32.from_bytes(client.read_one(out))
    np.testing.assert_array_equal(got, want.ravel())
    assert np.isinf(got).any() and np.isnan(got).any()


def test_only_rows_close_together_are_computed_over_their_span():
    from cubelab.runtime.cpu.steps.arith import _rows

    store = np.zeros((8, 260), np.float32)
    assert _rows(store[:, 0:256], store[:, 2:258]) == ((8, 256), 260, 7 * 260 + 256)
    assert _rows(store[:, 0:256], np.ones(1, np.float32)) is not None  # a uniform operand
    assert _rows(store[:, 0:8], store[:, 8:16]) is None  # 8 items in 260: the span wastes 97 %
    assert _rows(store[:, 0:256], store[::2, 0:256]) is None  # different shapes
    assert _rows(np.zeros((8, 256), np.float32), np.zeros((8, 256), np.float32)) is None
