"""Calls at expand time: `f(x)`, `obj.m(x)`, `obj.a`, `F.new(x)`, `comptime(expr)`.

`call` dispatches on what is called: a `@cube_type` class builds a struct or enum value
(`aggregates.construct`; the only callee that takes keyword arguments), a scalar type casts
(`f32(x)`), anything with an
`_expand_call` (library intrinsics, `debug_print`, `@cube` helpers) expands itself, an array kind
(`SharedMemory[f32](n)`, `Array[u32](n)`) declares memory, Python's `min`/`max`/`abs`/`round`/
`pow` mean the kernel functions, and a plain Python function runs in Python when every argument
is a Python value (comptime) — called on a runtime value it is an error that says to use @cube.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

from cubelab.frontend import aggregates, library, memory, sequences
from cubelab.frontend.hints import plain_call_hint
from cubelab.frontend.operands import (
    KERNEL_VALUES,
    Pos,
    Written,
    cast,
    describe,
    error,
    is_py,
    minmax,
    read,
    spec_written,
    splat,
    ty_of,
    value,
)
from cubelab.frontend.types import ArrayKind, GenericScalar, ScalarKind, Vector, VectorSpec
from cubelab.frontend.values import RV, ArrayRef, AtomicRef, BufferRef, SliceView
from cubelab.ir.scope import Scope
from cubelab.ir.types import Elem


def comptime(s: Scope, thunk: Callable[[], Any], names: dict[str, Any], at: Pos) -> Any:
    """`comptime(expr)`: evaluate `expr` in Python now, during expansion. Every name it reads
    must hold a value known before launch (a Python value or a Comptime argument)."""
    s.at(*at)
    hint = "only Python values and Comptime[...] arguments are known before launch"
    for name, v in names.items():
        if isinstance(v, KERNEL_VALUES):
            raise error(s, f"comptime(...) needs a value known at expansion, but `{name}` is "
                        f"{describe(v)}", hint)
    try:
        x = thunk()
    except Exception as exc:  # noqa: BLE001 - Python's own error, reworded with the line
        raise error(s, f"comptime(...) could not be evaluated in Python: {exc!r}", hint) from None
    if isinstance(x, KERNEL_VALUES):
        raise error(s, f"comptime(...) needs a value known at expansion, got {describe(x)}", hint)
    return x


def reinterpret(s: Scope, kind: ScalarKind, x: Any) -> Any:
    """`u32.reinterpret(x)`: the 32 bits of an f32/i32/u32 scalar or vector read as `kind`, per
    component (CubeCL's `reinterpret`; WGSL `bitcast`), not converted as a cast is."""
    v = value(s, read(s, x))
    ty = ty_of(v)
    if ty.elem is Elem.BOOL or kind.elem is Elem.BOOL:
        raise error(s, f"reinterpret between {ty} and {kind}: a bool has no 32-bit pattern",
                    "reinterpret f32, i32 or u32; convert a bool with u32(b)")
    if ty.elem is kind.elem:
        return RV(v)
    return RV(s.emit("arith.bitcast", [v], ty.with_elem(kind.elem)))


def scalar_method(s: Scope, kind: ScalarKind, name: str, args: Sequence[Any],
                  w: Written | None = None) -> Any:
    """`F.new(x)`, `F.cast_from(x)`, `F.max(a, b)` & co. on a (resolved) scalar type; `w` is how
    the type was written (`F`, a generic: operands.py, "written types")."""
    if name in ("new", "cast_from", "from_int") and len(args) == 1:
        return cast(s, kind, args[0], w)
    if name == "reinterpret" and len(args) == 1:
        return reinterpret(s, kind, args[0])
    if name in ("min", "max"):
        typed_args = [cast(s, kind, a, w) if is_py(read(s, a)) else a for a in args]
        return minmax(s, name, typed_args)
    fn = library.METHODS.get(name)
    if fn is not None:
        args = [cast(s, kind, a, w) if is_py(read(s, a)) else a for a in args]
        return fn._expand_call(s, *args)
    raise error(s, f"`{kind}.{name}(...)` is not part of the kernel language",
                "available: new, cast_from, min, max, " + ", ".join(sorted(library.METHODS)))


def _vector_new(s: Scope, x: Any) -> Any:
    x = read(s, x)
    v = value(s, x)
    if ty_of(v).width != 1:
        raise error(s, "Vector.new(x) takes a scalar (it fills every component with it)",
                    "pass one f32/i32/u32 value; to convert a vector write "
                    "Vector[F, N].cast_from(v)")
    return RV(v, splat=True)


def _sized_vector(s: Scope, spec: VectorSpec, name: str, args: Sequence[Any]) -> Any:
    """`Vector[F, N].new(x)` (x in every component) and `Vector[F, N].cast_from(v)` (a scalar
    splatted, or a vector of width N converted componentwise): CubeCL's `Vector::<F, N>::new`
    and `Vector::<F, N>::cast_from`, a vector of a stated width where `Vector.new(x)` takes its
    width from where it is used."""
    if name not in ("new", "cast_from", "reinterpret") or len(args) != 1:
        raise error(s, f"`{spec!r}.{name}(...)` is not available",
                    f"available: {spec!r}.new(x), {spec!r}.cast_from(v), "
                    f"{spec!r}.reinterpret(v)")
    ty = spec.resolve(s)
    if name == "reinterpret":
        r = reinterpret(s, spec.elem.resolve(s), args[0])
        if ty_of(r.v).width != ty.width:
            raise error(s, f"{spec!r}.reinterpret(...) of a {ty_of(r.v)}",
                        f"give it a vector of width {ty.width}")
        return r
    w = spec_written(spec)
    v = value(s, cast(s, spec.elem.resolve(s), args[0], w))
    width = ty_of(v).width
    if name == "new" and width != 1:
        raise error(s, f"{spec!r}.new(x) takes a scalar (it fills every component with it)",
                    f"convert a vector with {spec!r}.cast_from(v)")
    if width not in (1, ty.width):
        raise error(s, f"{spec!r}.cast_from(...) of a vector of width {width}",
                    f"give it a scalar or a vector of width {ty.width}")
    return RV(splat(s, v, ty.width), w=w)


_PY_BUILTINS: dict[Any, Callable[[Scope, Sequence[Any]], Any]] = {
    builtins.min: lambda s, a: minmax(s, "min", a),
    builtins.max: lambda s, a: minmax(s, "max", a),
}


def _no_keywords(s: Scope) -> Exception:
    return error(s, "keyword arguments are not allowed in kernel calls",
                 "pass arguments by position (only a @cube_type struct takes field names: "
                 "`P(x=a, y=b)`)")


def call(s: Scope, fn: Any, args: Sequence[Any], at: Pos,
         kw: dict[str, Any] | None = None) -> Any:
    s.at(*at)
    args = [read(s, a) for a in args]
    if aggregates.is_cube_type(fn):  # `P(a, b)`, `P(x=a, y=b)`, `E.A(x, y)`: a struct value
        return aggregates.construct(s, fn, args, {k: read(s, v) for k, v in (kw or {}).items()},
                                    at)
    if kw:
        raise _no_keywords(s)
    if isinstance(fn, (ScalarKind, GenericScalar)):
        if len(args) != 1:
            raise error(s, f"{fn!r}(...) takes one value", f"write {fn!r}(x) with one argument")
        return cast(s, fn.resolve(s), args[0], spec_written(fn))
    if isinstance(fn, ArrayKind):
        return memory.new_array(s, fn, args)
    expand_call = getattr(fn, "_expand_call", None)
    if expand_call is not None:
        return expand_call(s, *args)
    if fn in _PY_BUILTINS:
        return _PY_BUILTINS[fn](s, args)
    if fn in library.PY_BUILTINS:
        return library.PY_BUILTINS[fn]._expand_call(s, *args)
    if fn is builtins.range:
        raise error(s, "range(...) outside a for loop", "write `for i in range(...):`")
    if callable(fn):
        if all(not isinstance(a, KERNEL_VALUES) for a in args):
            return fn(*args)  # comptime: a plain Python call on Python values
        name = getattr(fn, "__name__", repr(fn))
        raise error(s, f"`{name}` is a plain Python function called on a runtime value",
                    plain_call_hint(fn))
    raise error(s, f"{describe(fn)} is not callable",
                "call a @cube helper, a prelude function (sqrt, min, ...) or a type (f32(x))")


def method(s: Scope, obj: Any, name: str, args: Sequence[Any], at: Pos,
           kw: dict[str, Any] | None = None) -> Any:
    s.at(*at)
    if aggregates.is_cube_type(obj):  # `Shape.Circle(r)`: a variant of an enum
        return call(s, getattr(obj, name), args, at, kw) if hasattr(obj, name) else \
            attr(s, obj, name, at)
    if aggregates.is_aggregate_value(obj):  # `p.area()`: a @cube method of the struct
        return call(s, aggregates.get_field(s, obj, name), args, at, kw)
    if kw:
        raise _no_keywords(s)
    if isinstance(obj, (GenericScalar, ScalarKind)):
        return scalar_method(s, obj.resolve(s), name, args, spec_written(obj))
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        return memory.buffer_method(s, obj, name, [read(s, a) for a in args])
    if isinstance(obj, AtomicRef):
        return memory.atomic_method(s, obj, name, [read(s, a) for a in args])
    if obj is Vector:
        if name == "new" and len(args) == 1:
            return _vector_new(s, args[0])
        fn = library.METHODS.get(name)
        if fn is not None:  # CubeCL's static forms: `Vector::dot(a, b)`, `Vector::normalize(v)`
            return fn._expand_call(s, *args)
        raise error(s, f"`Vector.{name}` is not available",
                    "available: Vector.new(x), and the library as static methods: "
                    + ", ".join(f"Vector.{n}" for n in sorted(library.METHODS)))
    if isinstance(obj, VectorSpec):
        return _sized_vector(s, obj, name, [read(s, a) for a in args])
    obj_r = read(s, obj)
    if isinstance(obj_r, sequences.Sequence):
        return sequences.method(s, obj_r, name, args)
    if isinstance(obj_r, RV):
        fn = library.METHODS.get(name)
        if fn is not None:  # CubeCL's `x.sqrt()`, `v.dot(w)`, `n.count_ones()`
            return fn._expand_call(s, obj_r, *args)
        raise error(s, f"`.{name}(...)` on {describe(obj_r)}",
                    "call functions instead: sqrt(x), F.max(a, b), ...")
    target = getattr(obj_r, name, None)
    if target is None:
        raise error(s, f"{describe(obj_r)} has no attribute `{name}`",
                    "docs/language.md lists what each kind of value offers (len(), shape(d), "
                    "atomic methods, vector components)")
    return call(s, target, args, at)


def attr(s: Scope, obj: Any, name: str, at: Pos) -> Any:
    s.at(*at)
    if aggregates.is_aggregate_value(obj):
        return aggregates.get_field(s, obj, name)
    if isinstance(obj, KERNEL_VALUES):
        raise error(s, f"`.{name}` on {describe(obj)} is not part of the kernel language",
                    "docs/language.md lists the methods a kernel can call")
    try:
        return getattr(obj, name)
    except AttributeError:
        raise error(s, f"{describe(obj)} has no attribute `{name}`",
                    "check the spelling; docs/language.md lists what each value offers") from None
