"""Vector component assignment `v[k] = x` on a local vector, CubeCL's `line[k] = x` (its
`vector.rs` tests write each component of a local Line and read the Line back): k a comptime
int; the other components keep their values; `v[k] += x` too. A runtime k is refused (MSL's
vectors are the seed's structs, with no runtime component index), as for reads."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.errors import KernelSourceError
from cubelab.inspect import instance, msl, wgsl
from cubelab.prelude import *  # noqa: F403
from tests.test_language_semantics import read, up, zeros


@cube(launch=True)
def set_components(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]], flag: Slice[u32]):
    i = UNIT_POS
    v = x[i]
    v[0] = f32(10.0)
    v[2] += v[1] * 2.0
    if flag[i] != u32(0):  # assigned inside a runtime branch: kept after it
        v[3] = -v[3]
    out[i] = v


def test_assigning_a_vector_component_keeps_the_others(client):
    xs = np.arange(8, dtype=np.float32)
    out = zeros(client, 8)
    set_components.launch(client, CubeCount.Static(1), CubeDim.new_1d(2), up(client, xs), out,
                          up(client, np.array([1, 0], np.uint32)))
    want = xs.reshape(2, 4).copy()
    want[:, 0] = 10.0
    want[:, 2] += want[:, 1] * 2
    want[0, 3] = -want[0, 3]
    np.testing.assert_array_equal(read(client, out).reshape(2, 4), want)


def test_a_component_store_lowers_to_vector_insert():
    inst = instance(set_components, cube_dim=CubeDim.new_1d(2))
    assert sum(op.name == "vector.insert" for op in inst.define().walk()) == 3
    assert "vec4<f32>(v" in wgsl(inst)
    assert "float_4{" in msl(inst)


@cube(launch=True)
def lanes_of_ints(out: SliceMut[Vector[u32, 2]]):
    v = out[UNIT_POS]
    v[1] = UNIT_POS * u32(3)
    v[0] = u32(7)
    out[UNIT_POS] = v


def test_integer_vector_components(client):
    out = zeros(client, 6, u32)
    lanes_of_ints.launch(client, CubeCount.Static(1), CubeDim.new_1d(3), out)
    np.testing.assert_array_equal(read(client, out, u32).reshape(3, 2), [[7, 0], [7, 3], [7, 6]])


@cube(launch=True)
def runtime_component(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    v = x[0]
    v[i32(UNIT_POS)] = f32(1.0)
    out[0] = v


@cube(launch=True)
def past_the_width(x: Slice[Vector[f32, 2]], out: SliceMut[Vector[f32, 2]]):
    v = x[0]
    v[2] = f32(1.0)
    out[0] = v


@cube(launch=True)
def wrong_type(x: Slice[Vector[f32, 2]], out: SliceMut[Vector[f32, 2]]):
    v = x[0]
    v[1] = UNIT_POS
    out[0] = v


@cube(launch=True)
def scalar_local(x: Slice[f32], out: SliceMut[f32]):
    s = x[0]
    s[0] = f32(1.0)  # a scalar is a vector of width 1 (generic code with N = 1)
    s[1] = f32(2.0)
    out[0] = s


@pytest.mark.parametrize("kernel,message,hint,caret", [
    (runtime_component, "indices are u32, this one is i32", "x[u32(i)]", "v[i32(UNIT_POS)] = "),
    (past_the_width, "component 2 of a vector of width 2", "", "v[2] = "),
    (wrong_type, "component 1 of `v` is a f32, assigned a u32", "cast: f32(...)", "v[1] = "),
    (scalar_local, "component 1 of a vector of width 1", "", "s[1] = "),
])
def test_vector_component_misuses_are_refused_with_a_caret(kernel, message, hint, caret):
    with pytest.raises(KernelSourceError) as info:
        instance(kernel, cube_dim=CubeDim.new_1d(1)).define()
    text = str(info.value)
    assert message in text and hint in text, text
    lines = text.splitlines()
    k = next(n for n, ln in enumerate(lines) if caret in ln)
    assert lines[k + 1].index("^") == lines[k].index(caret), text
