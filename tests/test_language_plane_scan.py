"""CubeCL's plane scans, product, ballot and shuffles on every runtime with the `subgroup`
feature. The plane size differs (lavapipe: 8 lanes; the CPU runtime: 32), so the reference
reads PLANE_DIM from the kernel and computes per plane."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403

UNITS = 64


@cube(launch=True)
def plane_scans(x: Slice[u32], f: Slice[f32], out: SliceMut[u32], fout: SliceMut[f32],
                dim: SliceMut[u32]):
    i = ABSOLUTE_POS
    v = x[i]
    out[8 * i] = plane_inclusive_sum(v)
    out[8 * i + 1] = plane_exclusive_sum(v)
    out[8 * i + 2] = plane_inclusive_prod(v)
    out[8 * i + 3] = plane_exclusive_prod(v)
    out[8 * i + 4] = plane_prod(v)
    out[8 * i + 5] = plane_shuffle_xor(v, u32(1))
    # every unit shuffles (a source lane that is not active is undefined); the last lane's
    # `down` and the first lane's `up` fall outside the plane: the unit's own value
    out[8 * i + 6] = plane_shuffle_down(v, u32(1))
    out[8 * i + 7] = plane_shuffle_up(v, u32(1))
    fout[i] = plane_inclusive_sum(f[i])
    b = plane_ballot(v % 2 == 1)
    dim[5 * i] = PLANE_DIM
    dim[5 * i + 1] = b[0]
    dim[5 * i + 2] = b[1]
    dim[5 * i + 3] = b[2]
    dim[5 * i + 4] = plane_shuffle(v, u32(0))


def test_plane_scans_product_ballot_and_shuffles_match_numpy(client):
    rng = np.random.default_rng(5)
    x = rng.integers(1, 4, UNITS * 2).astype(np.uint32)
    f = rng.normal(0, 1, UNITS * 2).astype(np.float32)
    up = lambda a, k: BufferArg.from_raw_parts(client.create_from_slice(k.as_bytes(a)), a.size)
    out, fout = up(np.zeros(16 * UNITS, np.uint32), u32), up(np.zeros(2 * UNITS, np.float32), f32)
    dim = up(np.zeros(10 * UNITS, np.uint32), u32)
    plane_scans.launch(client, CubeCount.Static(2), CubeDim.new_1d(UNITS), up(x, u32), up(f, f32),
                       out, fout, dim)
    got = u32.from_bytes(client.read_one(out.handle)).reshape(-1, 8).astype(np.uint64)
    meta = u32.from_bytes(client.read_one(dim.handle)).reshape(-1, 5)
    p = int(meta[0, 0])
    planes = x.reshape(-1, p).astype(np.uint64)
    inc, prod = np.cumsum(planes, 1), np.cumprod(planes, 1) % 2**32
    lane = np.arange(p)
    want = np.stack([inc, inc - planes, prod,
                     np.concatenate([np.ones((len(planes), 1), np.uint64), prod[:, :-1]], 1),
                     np.repeat(prod[:, -1:], p, 1), planes[:, lane ^ 1],
                     np.where(lane + 1 < p, planes[:, np.minimum(lane + 1, p - 1)], planes),
                     np.where(lane > 0, planes[:, np.maximum(lane - 1, 0)], planes)], -1)
    np.testing.assert_array_equal(got, want.reshape(-1, 8))
    fgot = f32.from_bytes(client.read_one(fout.handle)).reshape(-1, p)
    np.testing.assert_allclose(fgot, np.cumsum(f.reshape(-1, p).astype(np.float64), 1),
                               rtol=1e-5, atol=1e-5)
    bits = [sum(1 << k for k in range(p) if row[k] % 2 == 1) for row in planes.astype(np.int64)]
    ballot = meta[:, 1].astype(np.uint64) | (meta[:, 2].astype(np.uint64) << 32)
    assert ballot.reshape(-1, p)[:, 0].tolist() == bits
    assert (meta[:, 3] == 0).all()
    assert meta[:, 4].tolist() == np.repeat(planes[:, 0], p).tolist()
