"""Expand-time values as IR operands: the helpers every part of the kernel vocabulary shares.

`read` turns what a kernel name holds into a value (loads a local, computes a builtin; a Python
value passes through), `value` makes an IR value of it (a literal takes the type it meets), `pair`
makes two operands of one type (literals adopt the other side's type, a scalar meeting a vector
is splatted), `index_value` / `item_value` / `as_bool` / `cast` / `minmax` are the checked
conversions operators, memory, flow and library functions all need. `error` is the one way the
vocabulary reports a mistake: a `KernelSourceError` naming the kernel, file, line and column.

Written types (`spec_written`, `written_of`, `meet`): CubeCL type-checks a kernel once for
*every* element type its generics may take, so `a * x[i]` with `a: f32` and `x: &[F]` does not
compile even where the launch makes F f32 — `F * f32` has no `Mul`. cubelab's IR values carry
only the resolved type (F is f32 at this launch), so the values the frontend hands around also
say how their type was written (`RV.w`, and `w` on buffers, arrays and locals): a generic —
`(True, "F")`: an item of a `Slice[F]` or `Array[F]`, `F.new` / `F.cast_from` / `F(x)`, or a
result computed from those — or a concrete type — `(False, "f32")`: a scalar parameter, an item
of a `Slice[f32]`, `f32(x)`. Two operands meet in one place, `meet` (from `pair`, the binary
operators' fast path, assignments and stores): a generic meeting a concrete type, or another
generic, is CubeCL's type error, at the operator, with a caret. A literal, a builtin position
and a value whose writing is not recorded (a library function's result) are `None` and take the
other side's, as before, so the rule only ever refuses what CubeCL refuses.

Why a module of its own: these helpers used to live in `ops.py`, which also dispatched to
`memory`, `flow` and `library` — each of which imported `ops` back for the helpers (a circle,
dodged by an import at the bottom of `ops.py`). Here they depend on nothing above `values` and
`types`, so the vocabulary's modules import downward only:

    values, types → operands → aggregates, sequences, library, debug_print → operators
      → memory → calls
      → variables → flow → matching → ops (the `__cl` face the expanded code calls)

The trap: a Python value meeting a Python value stays Python (that is what comptime means); only
`value`/`const` put a literal into the IR, and `const` hoists it into the kernel's prologue.
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

from cubelab.errors import KernelSourceError
from cubelab.frontend.hints import literal_range_hint
from cubelab.frontend.types import GenericSize, ScalarKind
from cubelab.frontend.values import (
    RV,
    ArrayRef,
    AtomicRef,
    Builtin,
    BufferRef,
    LocalVar,
    SliceView,
)
from cubelab.ir.analysis import PURE
from cubelab.ir.core import Value
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, F32, I32, U32, Elem, Pointer, Ty

Pos = tuple[int, int]


# -- errors ------------------------------------------------------------------------------------
def error(s: Scope, message: str, hint: str = "", at: Pos | None = None) -> KernelSourceError:
    line, col = at if at is not None else ((s.loc.line, s.loc.col) if s.loc else (0, 0))
    return KernelSourceError(s.kernel_name, s.file, line, col, message, hint)


def is_py(x: Any) -> bool:
    return isinstance(x, (bool, int, float))


# expand-time values that stand for IR (never plain Python values)
KERNEL_VALUES = (RV, LocalVar, BufferRef, Builtin, ArrayRef, SliceView, AtomicRef)


def describe(x: Any) -> str:
    if isinstance(x, RV):
        return f"a runtime {x.v.type}"
    if isinstance(x, BufferRef):
        return f"the buffer `{x.name}`"
    if isinstance(x, (ArrayRef, SliceView)):
        return f"the {x.name}"
    if isinstance(x, AtomicRef):
        return f"an atomic element of `{x.name}`"
    if isinstance(x, LocalVar):
        return f"the local `{x.name}`"
    if getattr(x, "__cube_kernel__", False):  # a @cube_type value in a kernel (aggregates.py)
        return repr(x)
    return f"{type(x).__name__} {x!r}"


# -- written types (see the module docstring) ---------------------------------------------------
Written = tuple[bool, str]  # (generic?, name): (True, "F") or (False, "f32")


def spec_written(spec: Any) -> Written | None:
    """How an annotation or an array's item spec writes its element type (None: not a type)."""
    from cubelab.frontend.types import GenericScalar, ScalarKind, VectorSpec

    if isinstance(spec, GenericScalar):
        return (True, spec.name)
    if isinstance(spec, ScalarKind):
        return (False, spec.elem.value)
    if isinstance(spec, VectorSpec):
        return spec_written(spec.elem)
    return None


def written_of(x: Any) -> Written | None:
    """How the type of an expand-time value was written (None: a literal, or not recorded)."""
    if isinstance(x, (RV, LocalVar, BufferRef, ArrayRef)):
        return x.w
    if isinstance(x, SliceView):
        return written_of(x.base)
    return None


def _named(w: Written) -> str:
    return f"{w[1]} (a generic type)" if w[0] else w[1]


def meet(s: Scope, what: str, wa: Written | None, wb: Written | None) -> Written | None:
    """The written type of `a <what> b`; a generic meeting a concrete type (or another generic)
    is CubeCL's type error, raised at the current position."""
    if wa is None or wb is None or wa == wb:
        return wa or wb
    generic = wa if wa[0] else wb
    other = wb if generic is wa else wa
    g, o = generic[1], other[1]
    if other[0]:
        hint = (f"convert one side to the other's generic type, e.g. {g}.cast_from(x): CubeCL "
                "checks the kernel for every choice of both")
    else:
        hint = f"convert the {o} value to the generic type: {g}.cast_from(x) ({g}.new(2.0) for a " \
               "constant)"
    bound = s.types.get(g)
    here = f", even where this launch makes {g} {bound!r}" if bound is not None else ""
    if what == "=":
        raise error(s, f"assigning {_named(wb)} to a place of type {_named(wa)}: CubeCL checks a "
                    f"kernel for every {g}, and the types differ{here}", hint)
    raise error(s, f"`{what}` of {_named(wa)} and {_named(wb)}: CubeCL checks a kernel for "
                f"every {g}, and `{wa[1]} {what} {wb[1]}` does not type-check{here}", hint)


# -- values ------------------------------------------------------------------------------------
def const(s: Scope, value: Any, ty: Ty) -> Value:
    if ty.elem is Elem.F32:
        value = float(value)
    elif ty.elem is Elem.BOOL:
        value = bool(value)
    else:
        value = int(value)
        lo, hi = (0, 2**32 - 1) if ty.elem is Elem.U32 else (-(2**31), 2**31 - 1)
        if not lo <= value <= hi:
            raise error(s, f"the literal {value} does not fit in {ty.elem.value}",
                        literal_range_hint(value, ty.elem.value))
    # Constants live once per kernel, at the top (a literal in an unrolled loop would otherwise
    # be re-emitted every iteration: a third of bit_tricks' ops). repr() keeps 0.0 and -0.0 apart.
    scalar = s.emit_prologue(("literal", ty.elem, repr(value)), "arith.constant", [],
                             Ty(ty.elem), value=value)
    if ty.width > 1:
        return s.emit("vector.splat", [scalar], ty)
    return scalar


def default_ty(x: Any) -> Ty:
    if isinstance(x, bool):
        return BOOL
    if isinstance(x, int):
        return I32
    return F32


def builtin_value(s: Scope, name: str) -> Value:
    dim = s.types["__cube_dim__"]

    def prim(key: str) -> Value:
        return s.emit_prologue(("builtin", key), "builtin.read", [], U32, name=key)

    def const(key: str, n: int) -> Value:
        return s.emit_prologue(("const", key), "arith.constant", [], U32, value=n)

    def arith(key: str, op: str, a: Value, b: Value) -> Value:
        return s.emit_prologue(("builtin", key), op, [a, b], U32)

    axes = {"X": 0, "Y": 1, "Z": 2}
    if name in ("PLANE_DIM", "UNIT_POS_PLANE"):
        s.features.add("subgroup")
        return prim("subgroup_size" if name == "PLANE_DIM" else "subgroup_invocation_id")
    if name == "UNIT_POS":
        return prim("local_invocation_index")
    if name.startswith("UNIT_POS_"):
        return prim(f"local_invocation_id_{name[-1].lower()}")
    if name.startswith("CUBE_POS_"):
        return prim(f"workgroup_id_{name[-1].lower()}")
    if name.startswith("CUBE_COUNT_"):
        return prim(f"num_workgroups_{name[-1].lower()}")
    if name.startswith("CUBE_DIM_"):
        return const(name, dim[axes[name[-1]]])
    if name == "CUBE_DIM":
        return const(name, dim[0] * dim[1] * dim[2])
    if name == "CUBE_COUNT":
        xy = arith("count_xy", "arith.mul", builtin_value(s, "CUBE_COUNT_X"),
                   builtin_value(s, "CUBE_COUNT_Y"))
        return arith(name, "arith.mul", xy, builtin_value(s, "CUBE_COUNT_Z"))
    if name == "CUBE_POS":
        # z * (count_x * count_y) + y * count_x + x, as the seed's MSL computes it
        cx = builtin_value(s, "CUBE_COUNT_X")
        cxy = arith("count_xy", "arith.mul", cx, builtin_value(s, "CUBE_COUNT_Y"))
        z = arith("pos_z_term", "arith.mul", builtin_value(s, "CUBE_POS_Z"), cxy)
        y = arith("pos_y_term", "arith.mul", builtin_value(s, "CUBE_POS_Y"), cx)
        zy = arith("pos_zy", "arith.add", z, y)
        return arith(name, "arith.add", zy, builtin_value(s, "CUBE_POS_X"))
    if name == "ABSOLUTE_POS":
        base = arith("abs_base", "arith.mul", builtin_value(s, "CUBE_POS"),
                     builtin_value(s, "CUBE_DIM"))
        return arith(name, "arith.add", base, builtin_value(s, "UNIT_POS"))
    if name.startswith("ABSOLUTE_POS_"):
        a = name[-1]
        base = arith(f"abs_base_{a}", "arith.mul", builtin_value(s, f"CUBE_POS_{a}"),
                     builtin_value(s, f"CUBE_DIM_{a}"))
        return arith(name, "arith.add", base, builtin_value(s, f"UNIT_POS_{a}"))
    raise error(s, f"unknown builtin {name}",
                "the builtins are ABSOLUTE_POS, UNIT_POS, CUBE_POS, CUBE_DIM, CUBE_COUNT and "
                "their _X/_Y/_Z forms (docs/language.md)")


def read(s: Scope, x: Any) -> Any:
    """The value behind `x`: loads locals, computes builtins; Python values pass through."""
    if isinstance(x, LocalVar):
        assert isinstance(x.ptr.type, Pointer)
        return RV(s.emit("memory.load", [x.ptr], x.ptr.type.pointee), w=x.w)
    if isinstance(x, Builtin):
        return RV(builtin_value(s, x.name))
    if isinstance(x, GenericSize):  # `N = Size.generic("N")` in the body: the launch's int
        return size_value(s, x)
    return x


def size_value(s: Scope, size: GenericSize) -> int:
    if size.name not in s.types:
        raise error(s, f"the Size generic {size.name} has no value in this launch",
                    f"name {size.name} in the kernel itself (its signature or body), so the "
                    "launch takes its value")
    return size.resolve(s)


def value(s: Scope, x: Any, like: Ty | None = None) -> Value:
    """An IR value for `x`; a Python literal takes the type `like` (else i32/f32/bool)."""
    x = read(s, x)
    if isinstance(x, RV):
        return x.v
    if is_py(x):
        ty = like if like is not None else default_ty(x)
        if isinstance(x, float) and not isinstance(x, bool) and ty.elem.is_int:
            if not float(x).is_integer():
                raise error(s, f"the float literal {x} meets an integer ({ty.elem.value}) value",
                            f"write an integer literal, or cast: f32(...)")
        return const(s, x, ty)
    if isinstance(x, (BufferRef, ArrayRef, SliceView)):
        raise error(s, f"{describe(x)} is not a value", f"index it: {x.name}[i]")
    if isinstance(x, AtomicRef):
        raise error(s, "an atomic element is not a plain value",
                    "read it with .load() (or use fetch_add, swap, ...)")
    raise error(s, f"{describe(x)} cannot be used as a kernel value",
                "kernel values are numbers, typed values (f32(1.0)) and results of kernel ops")


def store_local(s: Scope, var: LocalVar, x: Any) -> None:
    """`var = x` for a mutable local: a local keeps its first type (a scalar meeting a vector
    local is splatted), else the error says which cast to write."""
    assert isinstance(var.ptr.type, Pointer)
    ty = var.ptr.type.pointee
    assert isinstance(ty, Ty)
    x = read(s, x)
    var.w = meet(s, "=", var.w, written_of(x))
    v = value(s, x, ty.with_width(1))
    if isinstance(x, RV) and x.splat:
        v = splat(s, v, ty.width)
    vt = ty_of(v)
    if vt != ty:
        if vt.width == 1 and vt.elem is ty.elem:
            v = splat(s, v, ty.width)
        else:
            raise error(s, f"`{var.name}` holds {ty} but is assigned {vt}",
                        f"a local keeps its first type; cast: {ty.elem.value}(...)")
    s.register("memory.store", [var.ptr, v])


def ty_of(v: Value) -> Ty:
    assert isinstance(v.type, Ty), v.type
    return v.type


def splat(s: Scope, v: Value, width: int) -> Value:
    ty = ty_of(v)
    if ty.width == width:
        return v
    return s.emit("vector.splat", [v], ty.with_width(width))


def pair(s: Scope, a: Any, b: Any, what: str,
         given: tuple[Any, Any] | None = None) -> tuple[Value, Value]:
    """Both operands as IR values of one type: literals adopt the other side's type, a scalar
    meeting a vector is splatted, and anything else that differs is an error."""
    given = given or (a, b)  # the operands as written (a local, before it is read)
    a, b = read(s, a), read(s, b)
    meet(s, what, written_of(a), written_of(b))
    if isinstance(a, RV) and not isinstance(b, RV):
        va = a.v
        vb = value(s, b, ty_of(va).with_width(1))
    elif isinstance(b, RV) and not isinstance(a, RV):
        vb = b.v
        va = value(s, a, ty_of(vb).with_width(1))
    else:
        va, vb = value(s, a), value(s, b)
    ta, tb = ty_of(va), ty_of(vb)
    if ta.elem is not tb.elem:
        raise _element_clash(s, what, ta, tb, given)
    if ta.width != tb.width:
        if ta.width == 1:
            va = splat(s, va, tb.width)
        elif tb.width == 1:
            vb = splat(s, vb, ta.width)
        else:
            raise error(
                s, f"`{what}` of vectors of widths {ta.width} and {tb.width}",
                "vectors combine only with the same width (or with a scalar, which is splatted)",
            )
    return va, vb


def _element_clash(s: Scope, what: str, ta: Ty, tb: Ty, given: tuple[Any, Any]
                   ) -> KernelSourceError:
    """Two element types meet. When one side is a local whose type a bare literal fixed
    (`acc = 0` is i32), the mistake is that line, not this one: point there."""
    for var, mine, other in ((given[0], ta, tb), (given[1], tb, ta)):
        if isinstance(var, LocalVar) and var.typed_by_literal is not None:
            here = s.loc.line if s.loc else 0
            want = other.elem.value
            return error(
                s, f"`{var.name}` is {mine.elem.value} from here on (its first value is a bare "
                f"literal: an int makes i32, a float f32), and at line {here} `{what}` meets it "
                f"with {want}",
                f"give it the type it needs where it starts: `{var.name} = {want}(...)`",
                at=var.typed_by_literal)
    return error(
        s, f"`{what}` of {ta} and {tb}: the element types differ",
        f"cast one side, e.g. {ta.elem.value}(x) or {tb.elem.value}(x) (F.cast_from(x) in "
        "generic code)",
    )


def index_value(s: Scope, idx: Any) -> Value:
    idx = read(s, idx)
    if is_py(idx):
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise error(s, f"index {idx!r} is not an integer",
                        "index with an int or a u32 value")
        if idx < 0:
            raise error(s, f"negative index {idx}", "indices are u32; negative indices never wrap")
        return const(s, idx, U32)
    v = value(s, idx)
    ty = ty_of(v)
    if ty != U32:
        if ty == I32:
            raise error(s, "indices are u32, this one is i32", "write x[u32(i)]")
        raise error(s, f"an index must be a u32 scalar, got {ty}",
                    "convert it: x[u32(i)] (a vector index: pick one component)")
    return v


def item_value(s: Scope, x: Any, item: Ty) -> Value:
    x = read(s, x)
    v = value(s, x, item.with_width(1))
    vt = ty_of(v)
    if vt.width == 1 and item.width > 1 and vt.elem is item.elem:
        return splat(s, v, item.width)
    if vt != item:
        if vt.elem is not item.elem:
            raise error(s, f"storing {vt} into a buffer of {item}",
                        f"cast the value: {item.elem.value}(...) (F.cast_from(...) if generic)")
        raise error(s, f"storing a vector of width {vt.width} into a buffer of width {item.width}",
                    "vectors combine only with the same width")
    return v


def is_pure(block: Any) -> bool:
    """Whether every op of `block` (expanded but not yet placed) only computes values
    (`ir.analysis.PURE`): then it may be evaluated even where Python would skip it (the right
    side of `and`/`or`, a side of `a if c else b`), because evaluating it changes nothing and
    cannot fault. A load is not pure: `i < n and x[i] > 0` must not read x[i] when i >= n."""
    return all(op.name in PURE for op in block.ops)


def as_bool(s: Scope, x: Any, what: str) -> Value:
    v = value(s, x, BOOL)
    if ty_of(v).elem is not Elem.BOOL:
        raise error(s, f"`{what}` needs bool operands, got {ty_of(v)}",
                    "compare first, e.g. `x != 0`")
    return v


def minmax(s: Scope, fn: str, args: Sequence[Any]) -> Any:
    if len(args) < 2:
        raise error(s, f"{fn}() inside a kernel takes two or more values",
                    f"write {fn}(a, b)")
    acc = read(s, args[0])
    for nxt in args[1:]:
        nxt = read(s, nxt)
        if is_py(acc) and is_py(nxt):
            acc = builtins.min(acc, nxt) if fn == "min" else builtins.max(acc, nxt)
            continue
        w = written_of(acc) or written_of(nxt)
        va, vb = pair(s, acc, nxt, fn)
        if ty_of(va).elem is Elem.BOOL:
            raise error(s, f"{fn}() of bools", "use `and` / `or` on bools")
        acc = RV(s.emit(f"arith.{fn}", [va, vb], ty_of(va)), w=w)
    return acc


def cast(s: Scope, kind: ScalarKind, x: Any, w: Written | None = None) -> Any:
    """`kind(x)`: x converted; `w` is how the target type was written (`F.cast_from(x)` is an F
    even where F is f32 and the conversion is no op; `f32(x)` is concrete)."""
    x = read(s, x)
    target = Ty(kind.elem)
    w = w or (False, kind.elem.value)
    if is_py(x):
        if kind.elem.is_int and isinstance(x, float) and not x.is_integer():
            x = int(x)  # truncation toward zero, like a cast
        return RV(const(s, x, target), w=w)
    v = value(s, x)
    ty = ty_of(v)
    want = ty.with_elem(kind.elem)
    if isinstance(x, RV) and x.splat:
        return RV(v if ty == want else s.emit("arith.cast", [v], want), splat=True, w=w)
    if ty == want:
        return RV(v, w=w)
    return RV(s.emit("arith.cast", [v], want), w=w)
