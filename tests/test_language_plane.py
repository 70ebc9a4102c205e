"""Plane (subgroup) operations on every runtime that has the `subgroup` feature (lavapipe and
the CPU interpreter both do; a device without it refuses such kernels — see
`test_language_errors.py`). The plane size differs between runtimes (lavapipe: 8 lanes per
256-bit LLVM vector; the CPU runtime: 32), so the reference reads PLANE_DIM from the kernel."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403

UNITS = 64


@cube(launch=True)
def plane_ops(x: Slice[f32], xi: Slice[u32], out: SliceMut[f32], flags: SliceMut[u32]):
    i = ABSOLUTE_POS
    v = x[i]
    out[4 * i] = plane_sum(v)
    out[4 * i + 1] = plane_max(v)
    out[4 * i + 2] = plane_min(v)
    out[4 * i + 3] = plane_broadcast(v, u32(1))
    flags[6 * i] = PLANE_DIM
    flags[6 * i + 1] = UNIT_POS_PLANE
    flags[6 * i + 2] = u32(plane_all(xi[i] > 0))
    flags[6 * i + 3] = u32(plane_any(xi[i] > 5))
    flags[6 * i + 4] = u32(plane_elect())
    flags[6 * i + 5] = plane_sum(xi[i])


def test_plane_reductions_votes_broadcast_and_elect_agree_with_numpy(client):
    xs = np.random.default_rng(7).normal(0, 1, UNITS * 2).astype(np.float32)
    xi = np.ones(UNITS * 2, np.uint32)
    xi[3] = 0  # plane 0 (of cube 0) has a zero: plane_all is false there only
    xi[UNITS + 2] = 9  # one unit above 5 in cube 1's first plane: plane_any true there only
    out = client.create_from_slice(f32.as_bytes(np.zeros(4 * xs.size, np.float32)))
    flags = client.create_from_slice(u32.as_bytes(np.zeros(6 * xs.size, np.uint32)))
    plane_ops.launch(client, CubeCount.Static(2), CubeDim.new_1d(UNITS),
                     BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(xs)), xs.size),
                     BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(xi)), xi.size),
                     BufferArg.from_raw_parts(out, 4 * xs.size),
                     BufferArg.from_raw_parts(flags, 6 * xs.size))
    got = f32.from_bytes(client.read_one(out)).reshape(-1, 4)
    fl = u32.from_bytes(client.read_one(flags)).reshape(-1, 6)
    p = int(fl[0, 0])
    assert p in (4, 8, 16, 32, 64) and (fl[:, 0] == p).all()
    lane = np.arange(xs.size) % UNITS % p
    np.testing.assert_array_equal(fl[:, 1], lane)  # planes are runs of consecutive units
    planes = xs.reshape(-1, p)
    rep = np.repeat
    np.testing.assert_allclose(got[:, 0], rep(planes.sum(axis=1), p), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[:, 1], rep(planes.max(axis=1), p))
    np.testing.assert_array_equal(got[:, 2], rep(planes.min(axis=1), p))
    np.testing.assert_array_equal(got[:, 3], rep(planes[:, 1], p))
    ipl = xi.reshape(-1, p)
    np.testing.assert_array_equal(fl[:, 2], rep((ipl > 0).all(axis=1), p))
    np.testing.assert_array_equal(fl[:, 3], rep((ipl > 5).any(axis=1), p))
    np.testing.assert_array_equal(fl[:, 4], (lane == 0).astype(np.uint32))
    np.testing.assert_array_equal(fl[:, 5], rep(ipl.sum(axis=1), p))
