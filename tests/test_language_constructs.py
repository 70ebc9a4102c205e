"""Constructs of CubeCL's language beyond the basics, on every runtime: `==` between comptime
non-numbers folds in Python; `Tensor.coordinate(index, dim)`; `for` over comptime tuples and
lists (unrolled) and over buffers and slices (a runtime loop)."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.errors import KernelSourceError
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403


class Act(enum.Enum):
    RELU = 1
    NEG = 2


@cube(launch=True)
def activate(x: Slice[f32], out: SliceMut[f32], act: Comptime[Act], tag: Comptime[str]):
    i = UNIT_POS
    v = x[i]
    if act == Act.RELU:
        v = max(v, 0.0)
    if act != Act.RELU:
        v = -v
    if tag == "double" and act is not None:
        v = v * 2.0
    out[i] = v




@pytest.mark.parametrize("act,tag", [(Act.RELU, "double"), (Act.NEG, "plain")])
def test_comptime_equality_of_enum_members_and_strings_folds(client, act, tag):
    xs = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    x = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(xs)), 4)
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(4, np.float32))), 4)
    activate.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), x, out, act, tag)
    want = np.maximum(xs, 0) * 2 if act is Act.RELU else -xs
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out.handle))[:4], want)
    ops = [op.name for op in instance(activate, cube_dim=CubeDim.new_1d(4),
                                      comptime=(act, tag)).define().walk()]
    assert "scf.if" not in ops  # folded at expansion


@cube(launch=True)
def coords(t: Tensor[f32], out: SliceMut[u32]):
    i = UNIT_POS
    out[2 * i] = t.coordinate(i, 0)
    out[2 * i + 1] = t.coordinate(i, 1)


def test_tensor_coordinate_is_the_index_position_along_a_dim(client):
    h = client.create_from_slice(f32.as_bytes(np.zeros(6, np.float32)))
    out = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(np.zeros(12, np.uint32))), 12)
    coords.launch(client, CubeCount.Static(1), CubeDim.new_1d(6),
                  TensorArg.from_raw_parts(h, (2, 3), (3, 1)), out)
    got = u32.from_bytes(client.read_one(out.handle))[:12].reshape(6, 2)
    assert got.tolist() == [[i // 3, i % 3] for i in range(6)]


@cube(launch=True)
def iterate(x: Slice[f32], out: SliceMut[f32], weights: Comptime[tuple]):
    i = UNIT_POS
    acc = f32(0.0)
    for w in weights:  # a comptime tuple: unrolled
        acc += w * x[i]
    for v in [x[0], x[1], f32(10.0)]:  # a list of runtime values at comptime length
        acc += v
    for v in x[2:4]:  # a slice: a runtime loop over its items
        acc += v * 100.0
    out[i] = acc


def test_for_over_tuples_lists_and_slices(client):
    xs = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    x = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(xs)), 4)
    out = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(np.zeros(4, np.float32))), 4)
    iterate.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), x, out, (0.5, 2.0))
    want = 2.5 * xs + (1 + 2 + 10) + (3 + 4) * 100
    np.testing.assert_allclose(f32.from_bytes(client.read_one(out.handle))[:4], want)
