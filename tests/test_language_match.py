"""Python `match` in a kernel, with CubeCL's semantics (its `branch.rs` switch tests): on a
runtime i32/u32 it is one `scf.switch` (WGSL `switch`, MSL `switch`, a per-lane step on the CPU
runtime) — `case 1 | 2:` one case of two values, `case _:` the default, no fall-through; on a
comptime value (enum member, string, int, None) only the arm taken is expanded; an arm with a
guard on a runtime subject makes the match an if/elif chain."""

from __future__ import annotations

import dataclasses
import enum

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.inspect import instance, msl, wgsl
from cubelab.prelude import *  # noqa: F403
from tests.test_language_semantics import read, up, zeros


class Cases:
    """CubeCL's `kernel_switch_const` matches named constants; in Python a bare name in a
    pattern captures, so named constants are written dotted (`Cases.ONE`)."""

    ZERO = 0
    ONE = 1


@cube(launch=True)
def switch_arms(sel: Slice[u32], out: SliceMut[f32]):
    i = UNIT_POS
    value = f32(0.0)
    match sel[i]:
        case Cases.ZERO:
            value = f32(1.0)
        case 1 | 2:
            value = f32(3.0)
        case 1:  # already taken by the arm above: never reached, as in Python
            value = f32(99.0)
        case _:
            value = f32(5.0)
    out[i] = value


def test_runtime_match_is_a_switch_with_or_arms_and_a_default(client):
    # CubeCL: 0 -> 1.0 (simple/const), 1 and 2 -> 3.0 (the or-arm), anything else -> 5.0
    sel = np.array([0, 1, 2, 3, 5, 4000000000], np.uint32)
    out = zeros(client, 6)
    switch_arms.launch(client, CubeCount.Static(1), CubeDim.new_1d(6), up(client, sel), out)
    np.testing.assert_array_equal(read(client, out), [1.0, 3.0, 3.0, 5.0, 5.0, 5.0])


def test_runtime_match_lowers_to_one_switch_in_ir_wgsl_and_msl():
    inst = instance(switch_arms, cube_dim=CubeDim.new_1d(4))
    switches = [op for op in inst.define().walk() if op.name == "scf.switch"]
    assert len(switches) == 1
    assert switches[0].attrs["cases"] == ((0,), (1, 2))  # the duplicate `case 1:` is dropped
    assert "switch " in wgsl(inst) and "case 1u, 2u: {" in wgsl(inst) and "default: {" in wgsl(inst)
    assert "switch(" in msl(inst) and "case 1: case 2: {" in msl(inst)


@cube(launch=True)
def signed_switch(x: Slice[i32], out: SliceMut[i32]):
    i = UNIT_POS
    r = i32(0)
    match x[i]:
        case -4:
            r = i32(40)
        case 3:
            r = i32(30)
    out[i] = r


def test_runtime_match_on_i32_with_negative_cases_and_no_default(client):
    xs = np.array([-4, 3, 4, 0], np.int32)
    out = zeros(client, 4, i32)
    signed_switch.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), up(client, xs), out)
    np.testing.assert_array_equal(read(client, out, i32), [40, 30, 0, 0])


@cube(launch=True)
def guarded(x: Slice[i32], flag: Slice[i32], out: SliceMut[i32]):
    i = UNIT_POS
    r = i32(0)
    match x[i]:
        case 1 | 2 if flag[i] > 0:
            r = i32(10)
        case 1:
            r = i32(20)
        case _ if flag[i] < 0:
            r = i32(30)
        case _:
            r = i32(40)
    out[i] = r


def test_a_guard_on_a_runtime_subject_makes_an_if_chain_with_python_order(client):
    xs = np.array([1, 1, 2, 2, 5, 5], np.int32)
    flags = np.array([1, 0, 1, 0, -1, 0], np.int32)
    out = zeros(client, 6, i32)
    guarded.launch(client, CubeCount.Static(1), CubeDim.new_1d(6), up(client, xs),
                   up(client, flags), out)
    np.testing.assert_array_equal(read(client, out, i32), [10, 20, 10, 40, 30, 40])
    ops = [op.name for op in instance(guarded, cube_dim=CubeDim.new_1d(6)).define().walk()]
    assert "scf.switch" not in ops and "scf.if" in ops


class Act(enum.Enum):
    RELU = 1
    NEG = 2
    SQUARE = 3


@cube(launch=True)
def activation(x: Slice[f32], out: SliceMut[f32], act: Comptime[Act], scale: Comptime[object]):
    i = UNIT_POS
    v = x[i]
    match act:
        case Act.RELU:
            v = max(v, 0.0)
        case Act.NEG | Act.SQUARE if scale == None:  # noqa: E711
            v = -v
        case Act.SQUARE:
            v = v * v
    match scale:
        case None:
            pass
        case "double":
            v = v * 2.0
        case 3:
            v = v * 3.0
    out[i] = v


@pytest.mark.parametrize("act,scale,want", [
    (Act.RELU, None, [0.0, 2.0]), (Act.NEG, None, [1.0, -2.0]),
    (Act.SQUARE, "double", [2.0, 8.0]), (Act.SQUARE, 3, [3.0, 12.0]),
])
def test_comptime_match_expands_only_the_arm_taken(client, act, scale, want):
    out = zeros(client, 2)
    activation.launch(client, CubeCount.Static(1), CubeDim.new_1d(2),
                      up(client, np.array([-1.0, 2.0], np.float32)), out, act, scale)
    np.testing.assert_array_equal(read(client, out), want)
    ops = [op.name for op in instance(activation, cube_dim=CubeDim.new_1d(2),
                                      comptime=(act, scale)).define().walk()]
    assert "scf.switch" not in ops and "scf.if" not in ops


@cube(launch=True)
def first_negative(x: Slice[i32], out: SliceMut[i32]):
    found = i32(-1)
    for j in range(x.len()):
        match x[j]:
            case -1 | -2:
                found = i32(j)
                break
            case _:
                pass
    out[UNIT_POS] = found


def test_break_inside_a_runtime_match_arm_leaves_the_loop(client):
    xs = np.array([3, 0, -2, -1, 5], np.int32)
    out = zeros(client, 1, i32)
    first_negative.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), up(client, xs), out)
    assert read(client, out, i32).tolist() == [2]


@dataclasses.dataclass(frozen=True)
class IndexAssign:
    """CubeCL's `Operation::IndexAssign(index, value)`, a comptime enum with a payload."""

    index: int
    value: int


@cube(launch=True)
def const_match(output: SliceMut[f32], op: Comptime[object]):
    match op:
        case IndexAssign(index, value) if value > 100:
            output[index] = f32(-1.0)
        case IndexAssign(index, value):
            output[index] = f32(u32(value))  # CubeCL's `F::cast_from(value.runtime())`
        case (first, *rest):
            output[0] = f32(first + len(rest))
        case {"at": at, **more}:
            output[at] = f32(len(more))


@pytest.mark.parametrize("op,want", [
    (IndexAssign(1, 5), [0.0, 5.0]),  # CubeCL's const_match: output[1] == 5
    (IndexAssign(0, 500), [-1.0, 1.0]),  # the guard reads the captures
    ((7, 8, 9), [9.0, 1.0]),
])
def test_structural_patterns_destructure_a_comptime_subject(client, op, want):
    out = up(client, np.array([0.0, 1.0], np.float32))
    const_match.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), out, op)
    np.testing.assert_array_equal(read(client, out), want)
    ops = [o.name for o in instance(const_match, cube_dim=CubeDim.new_1d(1),
                                    comptime=(op,)).define().walk()]
    assert "scf.if" not in ops and "scf.switch" not in ops


def test_a_mapping_pattern_on_a_comptime_value_binds_its_rest():
    # a dict is not hashable, so not a Comptime argument; a frozen mapping-like tuple is not a
    # mapping either: exercise the arm through instance() with a hashable Mapping
    class Frozen(dict):  # type: ignore[type-arg]
        def __hash__(self) -> int:  # type: ignore[override]
            return hash(tuple(sorted(self.items())))

    inst = instance(const_match, cube_dim=CubeDim.new_1d(1),
                    comptime=(Frozen(at=1, a=2, b=3),))
    stores = [o for o in inst.define().walk() if o.name == "memory.store"]
    assert len(stores) == 1
