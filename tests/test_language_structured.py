"""Early exits compile to flags and guards, not jumps: the generated WGSL of every zoo kernel is
structured — no `return`, no `continue`, and exactly one `break` per `scf.while` (its exit) —
and naga validates it (every zoo kernel runs in tests/zoo). A checked launch's loop guard adds
one more exit per loop (the budget) and turns a `for`'s test into an exit of its own; without
the guard (`launch_unchecked`) the rule is the plain one."""

from __future__ import annotations

import re

import pytest

from cubelab import inspect as ci
from tests.zoo import ZOO


@pytest.mark.parametrize("name,kernel", ZOO, ids=[n for n, _ in ZOO])
def test_exits_leave_no_jumps_in_the_wgsl(name, kernel):
    src = ci.wgsl(kernel)
    body = src[src.index("@compute"):]
    assert not re.search(r"\breturn\b", body)
    assert not re.search(r"\bcontinue\b", body)
    ops = list(kernel.define().walk())
    whiles = sum(1 for op in ops if op.name == "scf.while")
    fors = sum(1 for op in ops if op.name == "scf.for")
    # checked (the default): each loop exits through its condition or its budget
    assert body.count("break;") == 2 * (whiles + fors)
    assert body.count("if !(") >= whiles + fors  # each loop's exit test


def test_collatz_break_and_continue_become_flags():
    kernel = dict(ZOO)["collatz_steps"]
    ir = ci.ir(kernel)
    assert "scf.while" in ir
    assert ir.count("var.declare : ptr<function, bool, rw>") == 2  # `broke` and `continued`
