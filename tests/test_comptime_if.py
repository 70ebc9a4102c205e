"""Seed 000: a `#[comptime]` `if` stays a plain `if` in the expanded code (only the branch taken
reaches the IR), while a runtime `if` becomes IR (`if_expand`, here `__cl.if_`)."""

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import *  # noqa: F403
from tests.fixtures.kernels import add, saxpy


@cube(launch=True)  # noqa: F405
def scale_or_shift(x: Slice[f32], out: SliceMut[f32], scale: Comptime[bool],  # noqa: F405
                   k: Comptime[int]):  # noqa: F405
    """Comptime branches with a local assigned in each, inside a runtime guard and loop."""
    steps = comptime(k * 2)  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        v = x[ABSOLUTE_POS]  # noqa: F405
        for _ in range(u32(2)):  # noqa: F405
            if scale and steps > 2:
                v = v * 2.0
            elif not scale:
                v = v + 1.0
        out[ABSOLUTE_POS] = v  # noqa: F405


@cube(launch=True)  # noqa: F405
def early_exit(out: SliceMut[f32], stop: Comptime[bool]):  # noqa: F405
    if stop:
        return
    out[ABSOLUTE_POS] = 1.0  # noqa: F405


def test_a_comptime_if_is_a_plain_python_if_in_the_expanded_source():
    src = inspect.expanded(add)
    assert "\n    if relu:\n" in src and "\n    else:\n" in src
    assert "__cl.if_" not in src


def test_a_runtime_if_becomes_an_if_op_helper_in_the_expanded_source():
    src = inspect.expanded(saxpy)
    assert "__cl.if_(__s, __cl.cmp(__s, 'lt', ABSOLUTE_POS" in src
    assert "\n    if " not in src


def test_comptime_locals_and_conditions_stay_python_and_pick_one_branch():
    src = inspect.expanded(scale_or_shift)
    assert "if scale and steps > 2:" in src and "elif not scale:" in src
    ir = {s: inspect.ir(inspect.instance(scale_or_shift, comptime=(s, 2))) for s in (1, 0)}
    for text in ir.values():
        assert text.count("scf.if") == 1  # only the runtime guard is an `if` op
    assert ir[1].count("arith.mul") == ir[0].count("arith.mul") + 1
    assert ir[0].count("arith.add") == ir[1].count("arith.add") + 1


def test_comptime_branches_compute_on_both_runtimes(client):
    x = client.create_from_slice(f32.as_bytes(np.arange(4, dtype=np.float32)))  # noqa: F405
    for scale, expect in ((True, [0, 4, 8, 12]), (False, [2, 3, 4, 5])):
        out = client.empty(16)
        scale_or_shift.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                              BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4),
                              scale, 2)
        np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), expect)  # noqa: F405


def test_a_comptime_if_that_returns_still_works_through_the_helper(client):
    assert "__cl.if_" in inspect.expanded(early_exit)
    out = client.create_from_slice(f32.as_bytes(np.zeros(2, dtype=np.float32)))  # noqa: F405
    early_exit.launch(client, CubeCount.Static(1), CubeDim.new_1d(2),
                      BufferArg.from_raw_parts(out, 2), True)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), [0, 0])  # noqa: F405
    early_exit.launch(client, CubeCount.Static(1), CubeDim.new_1d(2),
                      BufferArg.from_raw_parts(out, 2), False)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), [1, 1])  # noqa: F405
