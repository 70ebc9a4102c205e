"""CubeCL parity: tensor metadata and atomics, with the inputs and expected outputs of CubeCL's
`crates/cubecl-core/src/runtime_tests/` `tensor.rs`, `metadata.rs` and `atomic.rs`, on both
runtimes.

Argument order differs in one place: CubeCL's `TensorArg::from_raw_parts(handle, strides,
shape)` takes the strides first; cubelab's `TensorArg.from_raw_parts(handle, shape, strides)`
takes the shape first. The values below are the reference's, put in cubelab's order.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim, TensorArg
from cubelab.prelude import *  # noqa: F403
from tests.parity import buf, empty, read

N = Size.generic("N")
ONE, UNIT = CubeCount.Static(1), CubeDim.new_1d(1)


def tensor(client, n_items, shape, strides, dtype=np.uint32):
    handle = client.create_from_slice(np.zeros(n_items, dtype).tobytes())
    return TensorArg.from_raw_parts(handle, shape, strides)


# -- tensor.rs ---------------------------------------------------------------------------------
@cube(launch=True)
def tensor_coordinate(input: Tensor[Vector[f32, N]], output: SliceMut[u32]):
    index = UNIT_POS_X
    dim = UNIT_POS_Y
    output[UNIT_POS] = input.coordinate(index, dim)


def test_tensor_coordinate_follows_the_strides_at_every_vector_width(client):
    # tensor.rs test_tensor_coordinate (its GPU case): shape [2, 2, 3], strides [2, 1, 4];
    # one unit per (index, dim); the result does not depend on the vector width. Shape and
    # strides count items of the declared vector here, so the handle holds 12 vectors (a
    # checked launch refuses metadata past the buffer; CubeCL's launch does not look)
    shape, strides = (2, 2, 3), (2, 1, 4)
    expected = [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1,
                0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    for width in (1, 2, 4):
        out = empty(client, len(expected), np.uint32)
        tensor_coordinate.launch(client, ONE, CubeDim.new_2d(12, 3), width,
                                 tensor(client, 12 * width, shape, strides, np.float32), out)
        assert read(client, out, np.uint32).tolist() == expected, width


# -- metadata.rs -------------------------------------------------------------------------------
@cube(launch_unchecked=True)
def shape_dim_4(lhs: Tensor[f32], rhs: Tensor[f32], out: TensorMut[u32]):
    out[0] = lhs.shape(0)
    out[1] = lhs.shape(1)
    out[2] = lhs.shape(2)
    out[3] = lhs.shape(3)
    out[4] = rhs.shape(0)
    out[5] = rhs.shape(1)
    out[6] = rhs.shape(2)
    out[7] = rhs.shape(3)
    out[8] = out.shape(0)
    out[9] = out.shape(1)
    out[10] = out.shape(2)
    out[11] = out.shape(3)


def test_the_shapes_of_three_rank_4_tensors_reach_the_kernel(client):
    # metadata.rs test_shape_dim_4: twelve-item handles, unit strides
    out = tensor(client, 12, (10, 11, 12, 13), (1, 1, 1, 1))
    shape_dim_4.launch_unchecked(client, ONE, UNIT,
                                 tensor(client, 12, (2, 3, 4, 5), (1, 1, 1, 1), np.float32),
                                 tensor(client, 12, (9, 8, 7, 6), (1, 1, 1, 1), np.float32), out)
    assert u32.from_bytes(client.read_one(out.handle)).tolist() == \
        [2, 3, 4, 5, 9, 8, 7, 6, 10, 11, 12, 13]


@cube(launch_unchecked=True)
def stride_different_ranks(lhs: Tensor[f32], rhs: Tensor[f32], out: TensorMut[u32]):
    out[0] = lhs.stride(0)
    out[1] = lhs.stride(1)
    out[2] = lhs.stride(2)
    out[3] = lhs.stride(3)
    out[4] = rhs.stride(0)
    out[5] = rhs.stride(1)
    out[6] = rhs.stride(2)
    out[7] = out.stride(0)
    out[8] = out.stride(1)


def test_the_strides_of_tensors_of_ranks_4_3_and_2_reach_the_kernel(client):
    # metadata.rs test_stride_different_ranks: one pipeline serves every rank
    out = tensor(client, 9, (1, 1), (3, 2))
    stride_different_ranks.launch_unchecked(
        client, ONE, UNIT, tensor(client, 9, (1, 1, 1, 1), (1, 2, 3, 4), np.float32),
        tensor(client, 9, (1, 1, 1), (4, 5, 6), np.float32), out)
    assert u32.from_bytes(client.read_one(out.handle)).tolist() == [1, 2, 3, 4, 4, 5, 6, 3, 2]


@cube(launch_unchecked=True)
def shape_different_ranks(lhs: Tensor[f32], rhs: Tensor[f32], out: TensorMut[u32]):
    out[0] = lhs.shape(0)
    out[1] = lhs.shape(1)
    out[2] = lhs.shape(2)
    out[3] = lhs.shape(3)
    out[4] = rhs.shape(0)
    out[5] = rhs.shape(1)
    out[6] = rhs.shape(2)
    out[7] = out.shape(0)
    out[8] = out.shape(1)


def test_the_shapes_of_tensors_of_ranks_4_3_and_2_reach_the_kernel(client):
    # metadata.rs test_shape_different_ranks: items 9.. are left as they were (zero here; the
    # reference's handle held 4, 3, 2 from an earlier test)
    out = tensor(client, 12, (10, 11), (1, 1))
    shape_different_ranks.launch_unchecked(
        client, ONE, UNIT, tensor(client, 12, (2, 3, 4, 5), (1, 1, 1, 1), np.float32),
        tensor(client, 12, (9, 8, 7), (1, 1, 1), np.float32), out)
    assert u32.from_bytes(client.read_one(out.handle)).tolist()[:9] == \
        [2, 3, 4, 5, 9, 8, 7, 10, 11]


@cube(launch_unchecked=True)
def len_different_ranks(lhs: Tensor[f32], rhs: Tensor[f32], out: TensorMut[u32]):
    if ABSOLUTE_POS >= out.len():
        return
    out[0] = lhs.len()
    out[1] = rhs.len()
    out[2] = out.len()


def test_a_tensors_len_is_the_product_of_its_shape(client):
    # metadata.rs test_len_different_ranks: three-item handles, much larger shapes
    out = tensor(client, 3, (10, 11), (1, 1))
    len_different_ranks.launch_unchecked(
        client, ONE, UNIT, tensor(client, 3, (2, 3, 4, 5), (1, 1, 1, 1), np.float32),
        tensor(client, 3, (9, 8, 7), (1, 1, 1), np.float32), out)
    assert u32.from_bytes(client.read_one(out.handle)).tolist() == [2 * 3 * 4 * 5, 9 * 8 * 7,
                                                                     10 * 11]


@cube(launch_unchecked=True)
def buffer_len(out: TensorMut[Vector[u32, N]]):
    if ABSOLUTE_POS >= out.len():
        return
    out[0] = Vector.new(out.buffer_len())


@pytest.mark.parametrize("items, width, shape, strides, want", [
    (64, 1, (2, 2, 2, 2), (32, 16, 4, 1), 64), (32, 4, (2, 2, 2, 4), (16, 8, 4, 1), 8)],
    ids=["discontiguous", "vectorized"])
def test_buffer_len_is_the_handles_items_in_the_tensors_vectors(client, items, width, shape,
                                                                strides, want):
    # metadata.rs test_buffer_len_discontiguous / _vectorized (their offset case needs a
    # sub-range handle, which cubelab's TensorArg does not take)
    out = tensor(client, items, shape, strides)
    buffer_len.launch_unchecked(client, ONE, UNIT, width, out)
    assert u32.from_bytes(client.read_one(out.handle))[0] == want


# -- atomic.rs ---------------------------------------------------------------------------------
# Its numeric and bitwise ops on u32 and i32 are tests/test_language_generic_atomic.py (one kernel
# generic over `Atomic[I]`, as the reference's); the contention test is here.
I = Int.generic("I")  # noqa: E741


@cube(launch=True)
def atomic_max_contention(atomics: SliceMut[Atomic[I]]):
    atomics[0].fetch_max(I.cast_from(ABSOLUTE_POS))


@pytest.mark.parametrize("kind, dtype", [(u32, np.uint32), (i32, np.int32)], ids=["u32", "i32"])
def test_fetch_max_under_contention_keeps_the_largest(client, kind, dtype):
    # atomic.rs test_kernel_atomic_max_contention: 4 cubes of 32 units race on one atomic
    atomics = buf(client, [0], dtype)
    atomic_max_contention.launch[kind](client, CubeCount.Static(4), CubeDim.new_1d(32), atomics)
    assert read(client, atomics, dtype).tolist() == [4 * 32 - 1]


# -- different_rank.rs -------------------------------------------------------------------------
F = Float.generic("F")


@cube(launch_unchecked=True)
def different_rank(lhs: Tensor[Vector[F, N]], rhs: Tensor[Vector[F, N]],
                   output: TensorMut[Vector[F, N]]):
    output[ABSOLUTE_POS] = lhs[ABSOLUTE_POS] + rhs[ABSOLUTE_POS]


@pytest.mark.parametrize("shapes, strides", [
    (((2, 2, 2), (8,), (2, 4)), ((8, 4, 1), (1,), (4, 1))),
    (((2, 4), (8,), (2, 2, 2)), ((4, 1), (1,), (8, 4, 1)))], ids=["first_biggest", "last_biggest"])
def test_tensors_of_different_ranks_index_linearly(client, shapes, strides):
    # different_rank.rs: vectors of 2, linear indexing whatever the rank. The reference's
    # strides reach past its 8-item buffers (only the linear index is used), which a checked
    # launch refuses here, so this launch is unchecked, with one unit per vector (the
    # reference's 32 units leave the extra ones to its bounds checks)
    def make(values, shape, stride):
        h = client.create_from_slice(f32.as_bytes(np.array(values, np.float32)))
        return TensorArg.from_raw_parts(h, shape, stride)
    lhs = make(range(8), shapes[0], strides[0])
    rhs = make(range(3, 11), shapes[1], strides[1])
    out = make([0] * 8, shapes[2], strides[2])
    different_rank.launch_unchecked[f32](client, ONE, CubeDim.new_1d(4), 2, lhs, rhs, out)
    assert f32.from_bytes(client.read_one(out.handle)).tolist() == \
        [3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0]
