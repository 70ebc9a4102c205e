"""CubeCL parity: branches as values and loops that leave early, with the inputs and expected
outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/branch.rs`, on both runtimes.

CubeCL's value-form `if flag { 30 } else { 50 }` is Python's `30 if flag else 50`; its
`terminate!()` is `return`; `comptime!(20_i32)` is `comptime(20)`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403
from tests.parity import buf, empty, read

F = Float.generic("F")
ONE, UNIT = CubeCount.Static(1), CubeDim.new_1d(1)


# the reference's lit_value_form!, for the types wgpu has (its "portable" subset)
@cube(launch=True)
def value_form_f32(output: SliceMut[f32], cond: u32):
    if UNIT_POS == 0:
        flag = cond != 0
        output[0] = 30.0 if flag else 50.0


@cube(launch=True)
def value_form_i32(output: SliceMut[i32], cond: u32):
    if UNIT_POS == 0:
        flag = cond != 0
        output[0] = i32(30) if flag else i32(50)


@cube(launch=True)
def value_form_u32(output: SliceMut[u32], cond: u32):
    if UNIT_POS == 0:
        flag = cond != 0
        output[0] = u32(30) if flag else u32(50)


@pytest.mark.parametrize("kernel, dtype", [(value_form_f32, np.float32),
                                           (value_form_i32, np.int32),
                                           (value_form_u32, np.uint32)], ids=["f32", "i32", "u32"])
def test_a_conditional_expression_of_literals_honours_the_runtime_condition(client, kernel,
                                                                             dtype):
    # branch.rs test_value_form_literals_portable: a regression where the literal arms were
    # picked at expansion; the two conditions must give 30 and 50
    got = {}
    for cond in (1, 0):
        out = empty(client, 1, dtype)
        kernel.launch(client, ONE, UNIT, out, cond)
        got[cond] = read(client, out, dtype)[0]
    assert (got[1], got[0]) == (30, 50)


@cube(launch=True)
def select_kernel(output: SliceMut[F], cond: u32):
    if UNIT_POS == 0:
        output[0] = select(cond == 1, F.new(3.0), F.new(5.0))


@pytest.mark.parametrize("cond, want", [(True, 3.0), (False, 5.0)])
def test_select_picks_by_the_runtime_condition(client, cond, want):
    out = buf(client, [0.0])
    select_kernel.launch[f32](client, ONE, UNIT, out, int(cond))
    assert read(client, out)[0] == want


@cube(launch=True)
def for_loop_with_break(output: SliceMut[F]):
    max_iterations = comptime(20)
    for i in range(max_iterations):
        if i > 3:
            break
        output[i] = F.new(1.0)


@cube(launch=True)
def for_loop_with_return(output: SliceMut[F]):
    max_iterations = comptime(20)
    for i in range(max_iterations):
        if i > 3:
            return
        output[i] = F.new(1.0)
    output[0] = F.new(5.0)


@pytest.mark.parametrize("kernel", [for_loop_with_break, for_loop_with_return],
                         ids=["break", "return"])
def test_a_loop_left_early_writes_only_its_first_four_items(client, kernel):
    # the return also skips the store after the loop: item 0 stays 1, not 5
    out = empty(client, 20)
    kernel.launch[f32](client, ONE, UNIT, out)
    assert read(client, out).tolist() == [1.0] * 4 + [0.0] * 16


# -- match (branch.rs's switch tests, const_match.rs) --------------------------------------------
@cube(launch_unchecked=True)
def switch_simple(output: SliceMut[F], case: u32):
    match case:
        case 0:
            output[0] = F.new(1.0)
        case 1:
            output[0] = F.new(3.0)
        case _:
            output[0] = F.new(5.0)


@cube(launch=True)
def switch_value_expr(output: SliceMut[F], case: u32):
    # CubeCL's `let value = match case { ... }`: Python's match is a statement, so each arm
    # assigns
    if UNIT_POS == 0:
        value = F.new(0.0)
        match case:
            case 0:
                value = F.new(1.0)
            case 1:
                value = F.new(3.0)
            case _:
                value = F.new(5.0)
        output[0] = value


@cube(launch=True)
def switch_or_arm(output: SliceMut[F], case: u32):
    if UNIT_POS == 0:
        value = F.new(0.0)
        match case:
            case 0:
                value = F.new(1.0)
            case 1 | 2:
                value = F.new(3.0)
            case _:
                value = F.new(5.0)
        output[0] = value


class Cases:
    """branch.rs's `const CASE_0: u32 = 0; const CASE_1: u32 = 1;` (dotted: a bare name in a
    Python pattern would be a capture)."""
    CASE_0 = 0
    CASE_1 = 1


@cube(launch=True)
def switch_const(output: SliceMut[F], case: u32):
    if UNIT_POS == 0:
        value = F.new(0.0)
        match case:
            case Cases.CASE_0:
                value = F.new(1.0)
            case Cases.CASE_1:
                value = F.new(3.0)
            case _:
                value = F.new(5.0)
        output[0] = value


@pytest.mark.parametrize("kernel, case, want", [
    (switch_simple, 0, 1.0), (switch_value_expr, 1, 3.0), (switch_value_expr, 5, 5.0),
    (switch_or_arm, 2, 3.0), (switch_const, 1, 3.0)],
    ids=["statement", "used_as_value", "default", "or_branch", "const"])
def test_a_match_on_a_runtime_u32_takes_cubecls_arm(client, kernel, case, want):
    out = buf(client, [0.0, 1.0])
    launch = kernel.launch_unchecked if kernel is switch_simple else kernel.launch
    launch[f32](client, ONE, UNIT, out, case)
    assert read(client, out)[0] == want


@cube(launch=True)
def match_value_u32(output: SliceMut[u32], sel: u32):
    if UNIT_POS == 0:
        match sel:
            case 0:
                output[0] = u32(10)
            case 1 | 2:
                output[0] = u32(20)
            case _:
                output[0] = u32(30)


@cube(launch=True)
def match_value_i32(output: SliceMut[i32], sel: u32):
    if UNIT_POS == 0:
        match sel:
            case 0:
                output[0] = i32(10)
            case 1 | 2:
                output[0] = i32(20)
            case _:
                output[0] = i32(30)


@cube(launch=True)
def match_value_f32(output: SliceMut[f32], sel: u32):
    if UNIT_POS == 0:
        match sel:
            case 0:
                output[0] = 10.0
            case 1 | 2:
                output[0] = 20.0
            case _:
                output[0] = 30.0


@pytest.mark.parametrize("kernel, dtype", [(match_value_f32, np.float32),
                                           (match_value_i32, np.int32),
                                           (match_value_u32, np.uint32)], ids=["f32", "i32", "u32"])
def test_a_match_with_literal_arms_honours_the_runtime_selector(client, kernel, dtype):
    # branch.rs test_match_value_literals_portable: arm 0, the or-arm for 1 and 2, the default
    for sel, want in ((0, 10), (1, 20), (2, 20), (3, 30)):
        out = empty(client, 1, dtype)
        kernel.launch(client, ONE, UNIT, out, sel)
        assert read(client, out, dtype)[0] == want, sel


class IndexAssign(NamedTuple):
    """const_match.rs's `Operation::IndexAssign(usize, U)`, a comptime value with fields."""
    index: int
    value: int


@cube(launch=True)
def const_match_simple(output: SliceMut[F], op: Comptime[object]):
    # as CubeCL destructures its comptime enum: a class pattern on a comptime subject
    match op:
        case IndexAssign(index, value):
            output[index] = F.cast_from(u32(value))


def test_a_match_on_a_comptime_value_picks_its_arm_at_expansion(client):
    out = buf(client, [0.0, 1.0])
    const_match_simple.launch[f32](client, ONE, UNIT, out, IndexAssign(1, 5))
    assert read(client, out).tolist() == [0.0, 5.0]
