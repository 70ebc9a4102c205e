"""The functions the expanded code calls: `__cl`, the kernel vocabulary's one face.

This module is the `__cl` the generated `expand` function refers to (view it with
`cubelab.inspect.expanded(kernel)`). Each function takes the `Scope` first and the kernel source
position last (`at=(line, col)`), registers IR ops at the scope's insertion point and returns an
expand-time value (`values.py`). Python values meeting Python values are computed in Python —
that is what "comptime" means — and never reach the IR.

It holds no logic: the vocabulary lives in modules by subject, each importing only those below
it (no circle):

    operands.py   reading names, literals, casts, operand pairing, the error with a caret
    sequences.py  lists of runtime values at a comptime length (CubeCL's Sequence)
    memory.py     buffers, arrays, shared memory, sub-slices, tensors, atomics; x[i], x[i] = v
    library.py    math, `select`, barriers, plane ops (the functions a kernel may call)
    operators.py  + - * / // % ** << >> & | ^, comparisons, and/or/not, unary minus
    calls.py      f(x), obj.m(x), obj.a, F.new(x), comptime(expr)
    aggregates.py @cube_type structs and enums in a kernel: building, fields, copies
    variables.py  name = x, name += x, name: T = x, p.field = x
    flow.py       if, while, for, unroll, break, continue, return (flags and predication)
    matching.py   match (folded on comptime values, a switch on runtime integers)

Errors raised by any of them name the kernel and the line, with a caret (`KernelSourceError`).
"""

from __future__ import annotations

from cubelab.frontend.calls import attr, call, comptime, method
from cubelab.frontend.flow import (
    brk,
    cont,
    fn_enter,
    fn_exit,
    for_each,
    for_range,
    for_unroll,
    guard,
    if_,
    ifexp,
    ret,
    while_,
)
from cubelab.frontend.matching import match_
from cubelab.frontend.memory import augsetitem, getitem, setitem, subslice
from cubelab.frontend.operators import binop, boolop, cmp, not_, unary
from cubelab.frontend.values import UNBOUND
from cubelab.frontend.variables import assign, augassign, augsetfield, setfield, typed, unpack

__all__ = [
    "UNBOUND", "assign", "attr", "augassign", "augsetfield", "augsetitem", "binop", "boolop",
    "brk", "call",
    "cmp", "comptime", "cont", "fn_enter", "fn_exit", "for_each", "for_range", "for_unroll",
    "getitem", "guard", "if_", "ifexp", "match_", "method", "not_", "ret", "setfield", "setitem",
    "subslice", "typed", "unary", "unpack", "while_",
]
