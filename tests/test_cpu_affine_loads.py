"""A global load whose index is affine in the units' and cubes' coordinates (`x[row * w + j]`,
also through a local the index was stored in) reads a strided view of the buffer on the CPU
runtime (`indices.affine_indices`, `steps.memory.affine_view`) instead of gathering per lane:
numpy's answers on both runtimes, in chunks that are boxes of the grid and in chunks that are
not (per lane then), and an index past the end still reads 0 and is still reported.
"""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import f32
from cubelab.runtime.cpu import indices, lanes, oob_mode
from cubelab.runtime.cpu import plan as cpu_plan
from cubelab.runtime.cpu.steps import memory as cpu_memory
from tests.fixtures.cpu_kernels import tile_reads
from tests.zoo import kernels as zoo


def run_tile_reads(client, w, shift):  # type: ignore[no-untyped-def]
    """(got, want) of `tile_reads` over a w x w matrix."""
    xs = np.random.default_rng(w + shift).standard_normal(w * w).astype(np.float32)
    out = client.empty(4 * w * w)
    tile_reads.launch(client, CubeCount.Static(w // 16, w // 16, 1), CubeDim.new_2d(16, 16),
                      BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(xs)), w * w),
                      BufferArg.from_raw_parts(out, w * w), w, shift)
    row, col = np.arange(w)[:, None], np.arange(w)[None, :]
    at = row * w + col + shift  # past the end of x reads 0
    t = np.where(at < w * w, xs[np.minimum(at, w * w - 1)], np.float32(0.0))
    unit = (row % 16) * 16 + col % 16
    back = xs[(row // 16 + 1) * 16 * w - 1 - unit]
    want = t * np.float32(4.0) + back * np.float32(2.0) + xs.reshape(w, w).T
    return f32.from_bytes(client.read_one(out)).reshape(w, w), want


def same(client, got, want):  # type: ignore[no-untyped-def]
    if client.name() == "cpu<numpy>":
        np.testing.assert_array_equal(got, want)
    else:  # a GPU driver may contract a product and a sum into one fma
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk_lanes", [2560, 1024])  # 10 cubes (boxes of 5x2), 4 (not boxes)
def test_affine_loads_read_numpys_values_in_any_chunking(client, monkeypatch, chunk_lanes):
    monkeypatch.setattr(lanes, "CHUNK_LANES", chunk_lanes)
    monkeypatch.setattr(cpu_plan, "CHUNK_LANES", chunk_lanes)
    views = cpu_memory.affine_views
    got, want = run_tile_reads(client, 80, 0)  # 5x5 cubes
    same(client, got, want)
    if client.name() == "cpu<numpy>":
        assert (cpu_memory.affine_views > views) == (chunk_lanes == 2560)


def test_an_affine_load_past_the_end_reads_zero_and_is_reported(cpu_client):
    views = cpu_memory.affine_views
    with oob_mode(cpu_client, "report") as result:
        got, want = run_tile_reads(cpu_client, 64, 7)
    same(cpu_client, got, want)
    assert result.oob and {a.buffer for a in result.oob} == {"x"}
    assert cpu_memory.affine_views > views  # the other two reads stayed views


def test_the_tiled_matmuls_global_reads_are_affine_through_their_locals():
    definition = inspect.instance(zoo.matmul, comptime=(16,),
                                  cube_dim=CubeDim.new_2d(16, 16)).define()
    affine = indices.affine_indices(definition, indices.lane_values(definition))
    assert len(affine) == 2  # a[row * k + ak] and b[bk * n + col]
    coefs = sorted(sorted(dict(a.coefs)) for a in affine.values())
    assert coefs == [["U0", "U1", "W0"], ["U0", "U1", "W1"]]  # b's columns, a's rows


def test_a_local_stored_twice_is_not_seen_through():
    definition = inspect.instance(zoo.matmul, comptime=(16,),
                                  cube_dim=CubeDim.new_2d(16, 16)).define()
    stores: dict[int, int] = {}
    loads: dict[int, int] = {}
    for op in definition.walk():
        if op.name == "memory.store":
            stores[op.operands[0].id] = stores.get(op.operands[0].id, 0) + 1
        elif op.name == "memory.load":
            loads[op.results[0].id] = op.operands[0].id
    forwarded = indices.forwarded_loads(definition)
    assert forwarded and all(stores[loads[load]] == 1 for load in forwarded)
    assert any(n > 1 and v in loads.values() for v, n in stores.items())  # `acc`, `av`
