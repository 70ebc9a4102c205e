"""Tensor metadata as CubeCL defines it, on every runtime: `t.len()` is the product of the shape
(CubeCL's logical length), `t.buffer_len()` the items the handle holds, and
`TensorArg.from_raw_parts` takes what CubeCL's takes (any rank, zero-size dimensions, stride-0
broadcasts, a shape that reaches past the buffer under `launch_unchecked`) and checks only what
can be checked — with the checked-mode clamp still bounded by the buffer, never by the shape.

The expected numbers are those of CubeCL's `runtime_tests/metadata.rs` (`len` of tensors of
different ranks, `buffer_len` of a discontiguous and of a vectorized tensor), with cubelab's
shape-first argument order and its shapes in items of the declared item type."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, LaunchError
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime.cpu import oob_mode

ONE = CubeCount.Static(1)


def u32s(client, n):
    return BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(n, np.uint32))), n)


def read_u32(client, b):
    return list(u32.from_bytes(client.read_one(b.handle))[: b.length])


def tensor(client, items, shape, strides, data=None):
    arr = np.arange(items, dtype=np.float32) if data is None else data
    return TensorArg.from_raw_parts(client.create_from_slice(f32.as_bytes(arr)), shape, strides)


@cube(launch=True, launch_unchecked=True)
def lens(a: Tensor[f32], b: Tensor[f32], c: Tensor[f32], out: SliceMut[u32]):
    if ABSOLUTE_POS == 0:
        out[0] = a.len()
        out[1] = b.len()
        out[2] = c.len()
        out[3] = a.buffer_len()
        out[4] = b.buffer_len()
        out[5] = c.buffer_len()


def test_tensor_len_is_the_product_of_the_shape_at_every_rank(client):
    # CubeCL's test_len_different_ranks: shapes 2x3x4x5, 9x8x7, 10x11 on small handles (the
    # shapes reach past them, so the launch is unchecked, as CubeCL's is)
    out = u32s(client, 6)
    lens.launch_unchecked(client, ONE, CubeDim.new_1d(1),
                          tensor(client, 12, (2, 3, 4, 5), (1, 1, 1, 1)),
                          tensor(client, 12, (9, 8, 7), (1, 1, 1)),
                          tensor(client, 3, (10, 11), (1, 1)), out)
    assert read_u32(client, out) == [2 * 3 * 4 * 5, 9 * 8 * 7, 10 * 11, 12, 12, 3]


def test_len_and_buffer_len_differ_for_broadcast_strided_and_empty_tensors(client):
    out = u32s(client, 6)
    lens.launch(client, ONE, CubeDim.new_1d(1),
                tensor(client, 3, (4, 3), (0, 1)),         # a row broadcast over 4 rows
                tensor(client, 64, (2, 2, 2, 2), (32, 16, 4, 1)),  # CubeCL's discontiguous case
                tensor(client, 5, (3, 0), (0, 1)), out)   # a zero-size dimension
    assert read_u32(client, out) == [12, 16, 0, 3, 64, 5]


@cube(launch=True)
def buffer_len_vec(t: TensorMut[Vector[u32, 4]]):
    if ABSOLUTE_POS == 0:
        t[0] = Vector.new(t.buffer_len() * u32(1000) + t.len())


def test_buffer_len_of_a_vectorized_tensor_counts_vectors(client):
    # CubeCL's test_buffer_len_vectorized: 32 u32 seen as vec4 -> 8 vector items
    h = client.create_from_slice(u32.as_bytes(np.zeros(32, np.uint32)))
    buffer_len_vec.launch(client, ONE, CubeDim.new_1d(1),
                          TensorArg.from_raw_parts(h, (2, 2, 2, 1), (4, 2, 1, 1)))
    assert list(u32.from_bytes(client.read_one(h))[:4]) == [8 * 1000 + 8] * 4


@cube(launch=True)
def rank_and_len(t: Tensor[f32], out: SliceMut[u32]):
    if ABSOLUTE_POS == 0:
        out[0] = t.rank()
        out[1] = t.len()
        out[2] = u32(t[0])


def test_a_rank_zero_tensor_has_len_one(client):
    out = u32s(client, 3)
    rank_and_len.launch(client, ONE, CubeDim.new_1d(1),
                        tensor(client, 1, (), (), np.array([7.0], np.float32)), out)
    assert read_u32(client, out) == [0, 1, 7]


@cube(launch=True)
def sum_broadcast(t: Tensor[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < t.len():
        out[i] = t[i // t.shape(1), i % t.shape(1)]


def test_a_stride_zero_tensor_reads_its_row_for_every_row(client):
    row = np.array([1.0, 2.0, 3.0], np.float32)
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(12, np.float32))), 12)
    sum_broadcast.launch(client, ONE, CubeDim.new_1d(16), tensor(client, 3, (4, 3), (0, 1), row),
                         out)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out.handle))[:12], np.tile(row, 4))


@cube(launch=True, launch_unchecked=True)
def read_all(t: Tensor[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < t.len():
        out[i] = t[i]


def test_a_checked_launch_refuses_a_shape_that_reaches_past_the_buffer(client):
    t = tensor(client, 6, (2, 4), (4, 1))  # reaches item 7 of 6
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(8, np.float32))), 8)
    with pytest.raises(LaunchError, match=r"(?s)tensor `t` has shape \(2, 4\) and strides \(4, 1\), "
                                          r"which reach item 7, but its handle holds 6 items.*"
                                          r"launch_unchecked"):
        read_all.launch(client, ONE, CubeDim.new_1d(8), t, out)


def test_an_unchecked_launch_takes_it_and_reads_past_the_end_as_0(client):
    t = tensor(client, 6, (2, 4), (4, 1))
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.full(8, -1, np.float32))), 8)
    read_all.launch_unchecked(client, ONE, CubeDim.new_1d(8), t, out)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out.handle))[:8],
                                  [0, 1, 2, 3, 4, 5, 0, 0])


def test_the_checked_clamp_uses_the_buffer_length_not_the_shape(client):
    # shape 2x2 over a 6-item buffer: len() is 4, but the clamp of t[i] stops at item 5 (the
    # buffer's last), not at item 3 (the shape's)
    client.set_compilation_options(checked_io="fixed")
    try:
        t = tensor(client, 6, (2, 2), (2, 1))
        out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(8, np.float32))), 8)
        clamp_reads.launch(client, ONE, CubeDim.new_1d(8), t, out)
        np.testing.assert_array_equal(f32.from_bytes(client.read_one(out.handle))[:8],
                                      [0, 1, 2, 3, 4, 5, 5, 5])
    finally:
        client.set_compilation_options(checked_io="cubecl-0.11.3")


def test_the_clamped_reads_are_reported_against_the_buffer_length(cpu_client):
    cpu_client.set_compilation_options(checked_io="fixed")
    try:
        t = tensor(cpu_client, 6, (2, 2), (2, 1))
        out = BufferArg.from_raw_parts(cpu_client.create_from_slice(f32.as_bytes(np.zeros(8, np.float32))), 8)
        with oob_mode(cpu_client, "report") as result:
            clamp_reads.launch(cpu_client, ONE, CubeDim.new_1d(8), t, out)
        assert [(a.index, a.length, a.outcome) for a in result.oob] == [(6, 6, "clamped"),
                                                                        (7, 6, "clamped")]
    finally:
        cpu_client.set_compilation_options(checked_io="cubecl-0.11.3")


@cube(launch=True)
def clamp_reads(t: Tensor[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = t[ABSOLUTE_POS]


@pytest.mark.parametrize("shape,strides,error,message", [
    ((2, 3), (3,), ValueError, r"shape \(2, 3\) has rank 2 but strides \(3,\) has rank 1"),
    ((2, -3), (3, 1), ValueError, r"shape \(2, -3\) holds -3\n  hint: entries are u32"),
    ((2, 3), (2**32, 1), ValueError, r"strides \(4294967296, 1\) holds 4294967296"),
    ((2, 3.5), (3, 1), TypeError, r"shape \(2, 3.5\) holds 3.5, which is not an int"),
    ("23", (3, 1), TypeError, r"shape must be a sequence of ints"),
])
def test_from_raw_parts_checks_only_what_can_be_checked(cpu_client, shape, strides, error,
                                                        message):
    h = cpu_client.create_from_slice(f32.as_bytes(np.zeros(6, np.float32)))
    with pytest.raises(error, match=message):
        TensorArg.from_raw_parts(h, shape, strides)


def test_from_raw_parts_accepts_numpy_shapes_and_a_shape_past_the_buffer(cpu_client):
    h = cpu_client.create_from_slice(f32.as_bytes(np.zeros(6, np.float32)))
    a = np.zeros((3, 2), np.float32)
    t = TensorArg.from_raw_parts(h, a.shape, np.array(a.strides) // 4)
    assert (t.shape, t.strides, t.extent) == ((3, 2), (2, 1), 6)
    assert TensorArg.from_raw_parts(h, (10, 11), (1, 1)).extent == 20  # accepted, as CubeCL does
