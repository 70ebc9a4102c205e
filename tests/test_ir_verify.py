"""The IR verifier (`ir/verify.py`), run after every student pass: every kernel cubelab builds is
well formed (no false alarm), and each way a pass can break the IR is named."""

from __future__ import annotations

from typing import Any

import pytest

from cubelab.ir import BOOL, F32, U32, Block, CheckedIo, KernelDefinition, PassManager, Pointer
from cubelab.ir import RuntimeArray, Scope
from cubelab.ir.passes import LoopGuard
from cubelab.ir.verify import verify
from tests.test_msl import (aggregate_kernels, core_kernels, every_op_kernel,
                            runtime_test_kernels, zoo_kernels)


def test_every_kernel_cubelab_builds_is_well_formed_after_the_built_in_passes():
    kernels: dict[str, Any] = {**core_kernels(), **runtime_test_kernels(), **zoo_kernels(),
                               **aggregate_kernels()}
    for name, k in kernels.items():
        d = k.define()
        assert verify(d) == [], name
        PassManager([CheckedIo("fixed"), LoopGuard()]).run(d)
        assert verify(d) == [], name
    assert verify(every_op_kernel()) == []


def small() -> tuple[Scope, KernelDefinition, Any]:
    s = Scope(file="k.py", kernel_name="k")
    out = s.new_value(Pointer(RuntimeArray(U32), "global", True), "out")
    from cubelab.ir import BufferParam

    d = KernelDefinition("k", "k_0", (1, 1, 1), [BufferParam("out", 0, U32, True, out)], [],
                         s.root)
    return s, d, out


def test_a_use_of_a_value_no_op_defines_is_a_dangling_value():
    s, d, out = small()
    one = s.emit("arith.constant", [], U32, value=1)
    s.emit("arith.add", [one, one], U32)
    d.body.ops.pop(0)  # the constant goes, its uses stay
    (problem, _) = verify(d)
    assert "%v" in problem and "dangling value" in problem


def test_a_value_from_another_branch_is_out_of_sight():
    s, d, out = small()
    flag = s.emit("arith.constant", [], BOOL, value=True)
    op = s.register("scf.if", [flag])
    op.regions = [Block(), Block()]
    with s.child(op.regions[0]):
        inner = s.emit("arith.constant", [], U32, value=1)
    with s.child(op.regions[1]):
        s.emit("arith.add", [inner, inner], U32)
    assert any("cannot see it" in p for p in verify(d))


def test_types_that_do_not_agree_are_named_with_the_op():
    s, d, out = small()
    a = s.emit("arith.constant", [], U32, value=1)
    b = s.emit("arith.constant", [], F32, value=1.0)
    s.emit("arith.add", [a, b], U32)
    s.emit("arith.cmp", [a, a], U32, pred="lt")
    s.emit("arith.constant", [], U32, value=2.5)
    problems = verify(d)
    assert any("`arith.add`" in p and "f32 where u32" in p for p in problems)
    assert any("`arith.cmp`" in p and "bools" in p for p in problems)
    assert any("2.5 is not a whole number" in p for p in problems)


def test_a_value_defined_twice_and_an_unknown_op_are_refused():
    s, d, out = small()
    a = s.emit("arith.constant", [], U32, value=1)
    d.body.ops.append(d.body.ops[0])
    s.register("arith.frobnicate", [a])
    problems = verify(d)
    assert any("defined twice" in p for p in problems)
    assert any("`arith.frobnicate`" in p and "not an IR op" in p for p in problems)


@pytest.mark.parametrize("bad", ["load", "store"])
def test_loads_and_stores_keep_the_pointee_type(bad):
    s, d, out = small()
    p = s.emit("memory.index", [out, s.emit("arith.constant", [], U32, value=0)],
               Pointer(U32, "global", True), checked=False)
    if bad == "load":
        s.emit("memory.load", [p], F32)
    else:
        s.register("memory.store", [p, s.emit("arith.constant", [], F32, value=1.0)])
    assert any("pointer to u32" in p for p in verify(d))


def test_a_constant_out_of_its_range_and_a_shift_by_a_signed_amount_are_named():
    """A folding pass that forgets to wrap (`0xFFFFFFFF + 1` as 2**32) and a strength reduction
    that shifts an i32 by an i32 amount: each is told which rule of OPS it broke."""
    from cubelab.ir import I32

    s, d, out = small()
    s.emit("arith.constant", [], U32, value=2**32)
    x = s.emit("arith.constant", [], I32, value=-3)
    three = s.emit("arith.constant", [], I32, value=3)
    s.emit("arith.shl", [x, three], I32)
    problems = verify(d)
    assert any("4294967296 does not fit u32" in p and "wraps" in p for p in problems), problems
    assert any("`arith.shl`" in p and "the amount is a u32" in p for p in problems), problems
