"""A `Size` generic is a comptime int in the body, on Python 3.11 too (DESIGN §2's spelling,
`N = Size.generic("N")` at module level; PEP 695's `def k[N: Size]` is the same on 3.12):
CubeCL's `N: Size` — the vector size given at launch — read as `N` in `unroll(range(N))`, in
arithmetic, as an array length. A Size generic named only in the body is a launch argument too."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403
from tests.test_language_semantics import read, up, zeros

F = Float.generic("F")
N = Size.generic("N")
W = Size.generic("W")


@cube(launch=True)
def lane_sums(x: Slice[Vector[F, N]], out: SliceMut[F]):
    v = x[UNIT_POS]
    acc = F.new(0.0)
    for k in unroll(range(N)):  # N: the launch's vector size, a Python int here
        acc += v[k]
    scratch = Array[F](N * 2)
    scratch[N] = acc
    out[UNIT_POS] = scratch[N] * F.new(N)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_a_size_generic_is_a_comptime_int_in_the_body(client, n):
    xs = np.arange(4 * n, dtype=np.float32)
    out = zeros(client, 4)
    lane_sums.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), n, up(client, xs), out)
    np.testing.assert_array_equal(read(client, out), xs.reshape(4, n).sum(axis=1) * n)
    ops = [op.name for op in instance(lane_sums, f32, sizes=(n,),
                                      cube_dim=CubeDim.new_1d(4)).define().walk()]
    assert "scf.for" not in ops and ops.count("vector.extract") == (n if n > 1 else 0)


@cube(launch=True)
def fill_rows(out: SliceMut[u32]):
    for k in unroll(range(W)):  # W appears only in the body: still a launch argument
        out[UNIT_POS * W + k] = UNIT_POS * u32(10) + k


def test_a_size_generic_named_only_in_the_body_is_bound_at_launch(client):
    assert [g.name for g in fill_rows.generics] == ["W"]
    out = zeros(client, 8, u32)
    fill_rows.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), 2, out)
    np.testing.assert_array_equal(read(client, out, u32), [0, 1, 10, 11, 20, 21, 30, 31])
