"""`t[i, j]` as students write it: a Tensor indexed through its strides (so a transposed view
reads right), comptime-shaped 2-D/3-D SharedMemory and Array indexed row-major, flat indexing
unchanged — on every runtime. The wrong-index-count refusals are in test_language_errors.py."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403


def read(client, b, kind=f32):
    return kind.from_bytes(client.read_one(b.handle))[: b.length]


@cube(launch=True)
def copy_2d(t: Tensor[f32], out: SliceMut[f32]):
    i = UNIT_POS_Y
    j = UNIT_POS_X
    out[i * 4 + j] = t[i, j]


def test_tensor_two_indices_follow_the_strides_of_a_transposed_tensor(client):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)  # stored 4x3; read as its 3x4 transpose
    h = client.create_from_slice(f32.as_bytes(a))
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(12, np.float32))), 12)
    copy_2d.launch(client, CubeCount.Static(1), CubeDim.new_2d(4, 3),
                   TensorArg.from_raw_parts(h, (3, 4), (1, 3)), out)
    np.testing.assert_array_equal(read(client, out).reshape(3, 4), a.T)


@cube(launch=True)
def tiled_matmul_3x3(a: Tensor[f32], b: Tensor[f32], c: TensorMut[f32]):
    """C = A @ B for 3x3 matrices through two 3x3 shared tiles (one unit per element)."""
    ta = SharedMemory[f32]((3, 3))
    tb = SharedMemory[f32]((3, 3))
    r = UNIT_POS_Y
    k = UNIT_POS_X
    ta[r, k] = a[r, k]
    tb[r, k] = b[r, k]
    sync_cube()
    acc = f32(0.0)
    for m in range(3):
        acc += ta[r, m] * tb[m, k]
    c[r, k] = acc


def test_tiled_matmul_with_3x3_shared_memory_matches_numpy(client):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    b = rng.standard_normal((3, 3)).astype(np.float32)
    ha = client.create_from_slice(f32.as_bytes(a))
    hc = client.create_from_slice(f32.as_bytes(np.zeros(9, np.float32)))
    # B passed transposed in memory: its strides say so, and b[m, k] still reads B
    hbt = client.create_from_slice(f32.as_bytes(np.ascontiguousarray(b.T)))
    tiled_matmul_3x3.launch(client, CubeCount.Static(1), CubeDim.new_2d(3, 3),
                            TensorArg.from_raw_parts(ha, (3, 3), (3, 1)),
                            TensorArg.from_raw_parts(hbt, (3, 3), (1, 3)),
                            TensorArg.from_raw_parts(hc, (3, 3), (3, 1)))
    got = f32.from_bytes(client.read_one(hc))[:9].reshape(3, 3)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)


@cube(launch=True)
def local_3d(out: SliceMut[u32]):
    cells = Array[u32]((2, 3, 4))
    for i in range(2):
        for j in range(3):
            for k in range(4):
                cells[i, j, k] = i * 100 + j * 10 + k
    for f in range(24):
        out[UNIT_POS * 24 + f] = cells[f]  # flat indexing is unchanged: row-major order


def test_a_3d_local_array_is_row_major_and_keeps_flat_indexing(client):
    out = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(48, np.uint32))), 48)
    local_3d.launch(client, CubeCount.Static(1), CubeDim.new_1d(2), out)
    want = [i * 100 + j * 10 + k for i in range(2) for j in range(3) for k in range(4)]
    assert read(client, out, u32).tolist() == want * 2
