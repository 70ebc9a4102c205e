"""Locals at expand time: `name = x`, `name += x`, `name: f32 = x`.

An immutable name binds its value (SSA: no IR at all); a mutable one (assigned more than once, or
inside a branch or loop — the rewriter decides) lives in a local variable declared at the top of
the kernel, so every branch writes the same storage and the value survives after the `if` or
loop. A local keeps its first type: assigning another is an error that says which cast to write.
"""

from __future__ import annotations

from typing import Any

from cubelab.frontend import aggregates, sequences
from cubelab.frontend.calls import call
from cubelab.frontend.operands import (
    Pos,
    default_ty,
    describe,
    error,
    is_py,
    read,
    store_local,
    ty_of,
)
from cubelab.frontend.operators import binop
from cubelab.frontend.values import RV, UNBOUND, ArrayRef, AtomicRef, BufferRef, LocalVar, SliceView
from cubelab.ir.scope import Scope
from cubelab.ir.types import Pointer, Ty


def assign(s: Scope, current: Any, x: Any, name: str, mutable: bool, at: Pos) -> Any:
    """`name = x`. Immutable names bind the value (SSA); mutable ones (assigned more than once,
    or inside a branch or loop) live in a local variable declared at the top of the kernel, so
    every branch writes the same storage and the value survives after the `if`/loop."""
    s.at(*at)
    if aggregates.is_aggregate_value(current) or aggregates.is_aggregate_value(x):
        # a struct or enum value: bound (aliased) once, or copied field-wise into its own
        # storage when the name is re-assigned (aggregates.py)
        if current is not UNBOUND and not aggregates.is_aggregate_value(current):
            raise error(s, f"`{name}` holds {describe(current)} but is assigned {describe(x)}",
                        "a local keeps its first type")
        return aggregates.bind(s, current if current is not UNBOUND else None, x, name, mutable)
    if isinstance(current, LocalVar):
        store_local(s, current, x)
        return current
    if isinstance(x, (BufferRef, ArrayRef, SliceView, AtomicRef)):
        return x
    if isinstance(x, list):  # a list bound to a name: CubeCL's Sequence (sequences.py)
        return sequences.make(s, x, name)
    x = read(s, x)
    if not mutable:
        return x
    if not isinstance(x, RV) and not is_py(x):
        return x  # Python objects (tuples, strings, ...) stay Python
    if isinstance(x, RV):
        ty, by_literal = ty_of(x.v), None
    else:
        ty, by_literal = default_ty(x), at
    var = LocalVar(s.declare_var(ty, name), name, by_literal)
    store_local(s, var, x)
    return var


def augassign(s: Scope, current: Any, op: str, x: Any, name: str, at: Pos) -> Any:
    if current is UNBOUND:
        raise error(s, f"`{name}` is updated before it has a value", f"assign `{name} = ...` first",
                    at)
    result = binop(s, op, current, x, at)
    return assign(s, current, result, name, True, at)


def typed(s: Scope, kind: Any, x: Any, at: Pos) -> Any:
    """`name: f32 = x` — the annotation casts (or types a literal)."""
    return call(s, kind, [x], at)


def setfield(s: Scope, obj: Any, name: str, x: Any, at: Pos) -> None:
    """`p.name = x` on a @cube_type struct (a store into the field's local)."""
    aggregates.set_field(s, obj, name, x, at)


def augsetfield(s: Scope, obj: Any, name: str, op: str, x: Any, at: Pos) -> None:
    """`p.name += x`."""
    s.at(*at)
    current = aggregates.get_field(s, obj, name) if aggregates.is_aggregate_value(obj) else None
    if current is None:
        raise error(s, f"cannot assign `.{name}` of {describe(obj)}",
                    "assign to a local name, buffer[index] or a field of a @cube_type struct")
    aggregates.set_field(s, obj, name, binop(s, op, current, x, at), at)
