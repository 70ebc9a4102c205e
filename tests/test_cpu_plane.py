"""Plane (subgroup) ops agree across runtimes, for any plane size (lavapipe's, the CPU's 32)."""

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import u32
from tests.fixtures.cpu_kernels import plane_ops


def test_plane_reductions_votes_and_broadcasts_cover_the_active_units_of_each_plane(client):
    n = 128
    x = ((np.arange(n, dtype=np.uint32) * 37) % 1000).astype(np.uint32)
    out = client.create_from_slice(u32.as_bytes(np.zeros(6 * n, dtype=np.uint32)))
    plane_ops.launch(client, CubeCount.Static(2), CubeDim.new_1d(64),
                     BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(x)), n),
                     BufferArg.from_raw_parts(out, 6 * n))
    got = u32.from_bytes(client.read_one(out)).reshape(n, 6)
    p = int(got[0, 4])
    assert p in (4, 8, 16, 32, 64) and (got[:, 4] == p).all()
    planes = x.reshape(-1, p)
    np.testing.assert_array_equal(got[:, 0], np.repeat(planes.sum(axis=1), p))
    np.testing.assert_array_equal(got[:, 1], np.repeat(planes.max(axis=1), p))
    np.testing.assert_array_equal(got[:, 2], np.repeat((planes > 900).any(axis=1), p))
    np.testing.assert_array_equal(got[:, 3], np.repeat(planes[:, 0], p))
    even = np.where(planes % 2 == 0, planes, 0).sum(axis=1)
    np.testing.assert_array_equal(got[:, 5], np.where(x % 2 == 0, np.repeat(even, p), 0))
