"""Unit-only values (computed from UNIT_POS and uniform operands) are memoized per chunk shape
and shared by every chunk of a large launch (`plan._unit_memo`, `Ctx._static`): the shared-memory
kernels give numpy's answers in every chunk, and the memo really served them (`unit_memo_hits`),
on launches of several full chunks plus a shorter last one.
"""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from cubelab.runtime.cpu import compaction, lanes
from cubelab.runtime.cpu import plan as cpu_plan
from tests.fixtures.cpu_kernels import block_sum
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
    m, kk, n, tile = 96, 80, 112, 16
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, kk)).astype(np.float32)
    b = rng.standard_normal((kk, n)).astype(np.float32)
    hc = cpu_client.empty(4 * m * n)
    zoo.matmul.launch(cpu_client, CubeCount.Static(n // tile, m // tile, 1),
                      CubeDim.new_2d(tile, tile), arg(cpu_client, a), arg(cpu_client, b),
                      BufferArg.from_raw_parts(hc, m * n), m, kk, n, tile)
    got = f32.from_bytes(cpu_client.read_one(hc)).reshape(m, n)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert small_chunks() > 0


def test_stencil_over_many_chunks_matches_numpy_through_the_memo(cpu_client, small_chunks):
    xs = np.random.default_rng(2).standard_normal(256 * 72 - 7).astype(np.float32)
    cubes = 72
    out = cpu_client.empty(4 * xs.size)
    zoo.stencil3.launch(cpu_client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                        arg(cpu_client, xs), BufferArg.from_raw_parts(out, xs.size), 256)
    p = np.concatenate([[0], xs, [0]]).astype(np.float32)
    np.testing.assert_allclose(f32.from_bytes(cpu_client.read_one(out)),
                               (p[:-2] + p[1:-1] + p[2:]) / np.float32(3), rtol=1e-6, atol=1e-6)
    assert small_chunks() > 0
