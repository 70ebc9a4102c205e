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


def _holds_runtime(x: Any) -> bool:
    if isinstance(x, tuple):
        return any(_holds_runtime(i) for i in x)
    return isinstance(x, (RV, LocalVar))


def snapshot(s: Scope, x: Any) -> Any:
    """`x` with every local in it read now (recursively through tuples): what a tuple holds at
    this point of the kernel, whatever is stored into those locals later."""
    if isinstance(x, tuple):
        return tuple(snapshot(s, i) for i in x)
    return read(s, x)


def unpack(s: Scope, x: Any, n: int, at: Pos) -> tuple[Any, ...]:
    """`a, b = x` (CubeCL's `let (a, b) = x;`): the `n` items of a tuple — a tuple written in
    the kernel, or the one a helper returns — or of a comptime list, each read before any
    target is assigned, so `a, b = b, a` swaps. The rewrite then assigns each item as a plain
    assignment would (nested targets unpack again)."""
    s.at(*at)
    if isinstance(x, sequences.Sequence):
        x = tuple(x.items)
    if isinstance(x, list):
        x = tuple(x)
    if not isinstance(x, tuple):
        hint = ("a vector is one value: read its components, `v[0]`, `v[1]`"
                if isinstance(x, RV) and isinstance(x.v.type, Ty) and x.v.type.width > 1 else
                "unpack a tuple: `a, b = (x, y)`, or the tuple a helper returns "
                "(`return lo, hi`)")
        raise error(s, f"cannot unpack {describe(x)} into {n} names", hint)
    if len(x) != n:
        raise error(s, f"{n} names are assigned from a tuple of {len(x)} items",
                    f"write {len(x)} names on the left (nest them for nested tuples: "
                    "`a, (b, c) = t`)")
    return snapshot(s, x)


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
    if isinstance(x, tuple) and mutable and (isinstance(current, tuple) or _holds_runtime(x)):
        # a tuple holding runtime values, in a name assigned again (or in a branch): one local
        # per item, so the tuple a runtime branch assigns is the one read after it
        if current is UNBOUND:
            return tuple(assign(s, UNBOUND, xi, f"{name}_{i}", True, at) for i, xi in enumerate(x))
        if not isinstance(current, tuple) or len(current) != len(x):
            raise error(s, f"`{name}` holds {describe(current)} but is assigned a tuple of "
                        f"{len(x)} items", "a local keeps its first type and size")
        return tuple(assign(s, c, xi, f"{name}_{i}", True, at) for i, (c, xi) in
                     enumerate(zip(current, x)))
    x = read(s, x)
    if not mutable:
        return x
    if not isinstance(x, RV) and not is_py(x):
        return x  # Python objects (tuples, strings, ...) stay Python
    if isinstance(x, RV):
        ty, by_literal = ty_of(x.v), None
    else:
        ty, by_literal = default_ty(x), at
    var = LocalVar(s.declare_var(ty, name), name, by_literal,
                   at if isinstance(x, RV) and x.splat and ty.width == 1 else None)
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
