"""`and`/`or` short-circuit and `a if c else b` runs one side, as in Python and CubeCL — on every
runtime. A pure right side stays a branch-free `arith.and`/`arith.select` (same result)."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403


def buf(client, arr):
    arr = np.ascontiguousarray(arr)
    kind = {np.dtype(np.float32): f32, np.dtype(np.uint32): u32, np.dtype(np.int32): i32}[arr.dtype]
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), arr.size)


def read(client, b, kind=u32):
    return kind.from_bytes(client.read_one(b.handle))[: b.length]


@cube(launch=True)
def guarded_count(hits: SliceMut[Atomic[u32]], out: SliceMut[u32]):
    i = UNIT_POS
    # the right sides increment a counter: they must run only where the left side lets them
    if i < 3 and hits[0].fetch_add(1) < 1000:
        out[i] = 1
    if i < 5 or hits[1].fetch_add(1) < 1000:
        out[i] += 10


def test_the_right_side_of_and_or_runs_only_where_python_would_run_it(client):
    hits, out = buf(client, np.zeros(2, np.uint32)), buf(client, np.zeros(16, np.uint32))
    guarded_count.launch(client, CubeCount.Static(1), CubeDim.new_1d(16), hits, out)
    assert read(client, hits).tolist() == [3, 11]  # and: units 0..2; or: units 5..15
    assert read(client, out).tolist() == [11, 11, 11] + [10] * 13


@cube(launch=True)
def guarded_read(x: Slice[f32], n: u32, out: SliceMut[f32]):
    i = UNIT_POS
    big = i < n and x[i] > 0.5
    out[i] = x[i] if i < n else -1.0
    out[i + 8] = f32(1.0) if big else f32(0.0)
    out[i + 16] = f32(i) * 2.0 if i % 2 == 0 else f32(i)


def test_a_runtime_conditional_expression_picks_one_side(client):
    x = buf(client, np.array([0.0, 1.0, 0.25, 0.75, 2.0, 0, 0, 0], np.float32))
    out = buf(client, np.zeros(24, np.float32))
    guarded_read.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, 5, out)
    got = read(client, out, f32)
    assert got[:8].tolist() == [0.0, 1.0, 0.25, 0.75, 2.0, -1.0, -1.0, -1.0]
    assert got[8:16].tolist() == [0, 1, 0, 1, 1, 0, 0, 0]
    assert got[16:].tolist() == [0, 1, 4, 3, 8, 5, 12, 7]


def test_a_pure_right_side_and_pure_sides_need_no_branch():
    ops = [op.name for op in instance(guarded_read, cube_dim=CubeDim.new_1d(8)).define().walk()]
    # the load-guarding `and` and the load-guarding conditional branch; the pure one is a select
    assert ops.count("scf.if") == 2
    assert "arith.select" in ops
