"""The functions the expanded code calls: every operator of a kernel becomes one of these.

This module is the `__cl` the generated `expand` function refers to (view it with
`cubelab.inspect.expanded(kernel)`). Each function takes the `Scope` first and the kernel source
position last (`at=(line, col)`), registers IR ops at the scope's insertion point and returns an
expand-time value (`values.py`). Python values meeting Python values are computed in Python —
that is what "comptime" means — and never reach the IR.

The vocabulary is split by subject; this module re-exports the rest so `__cl.x` finds it all:
operators, locals, casts and calls live here; control flow and early exits in `flow.py`
(`while_`, `for_range`, `for_unroll`, `brk`, `cont`, `ret`, `guard`); buffers, arrays, shared
memory, sub-slices, tensors and atomics in `memory.py`; math, `select`, barriers and plane ops in
`library.py`.

Errors raised here name the kernel and the line, with a caret (`KernelSourceError`).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Callable, Sequence

from cubelab.errors import KernelSourceError
from cubelab.frontend.types import GenericScalar, ScalarKind
from cubelab.frontend.values import (
    RV,
    UNBOUND,
    ArrayRef,
    AtomicRef,
    Builtin,
    BufferRef,
    LocalVar,
    SliceView,
)
from cubelab.ir.core import Block, Value
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, F32, I32, U32, Elem, Pointer, Ty

__all__ = [
    "UNBOUND", "assign", "augassign", "attr", "binop", "boolop", "call", "cmp", "comptime",
    "for_range", "getitem", "if_", "ifexp", "method", "not_", "setitem", "augsetitem",
    "typed", "unary",
]

Pos = tuple[int, int]


# -- errors ------------------------------------------------------------------------------------
def error(s: Scope, message: str, hint: str = "", at: Pos | None = None) -> KernelSourceError:
    line, col = at if at is not None else ((s.loc.line, s.loc.col) if s.loc else (0, 0))
    return KernelSourceError(s.kernel_name, s.file, line, col, message, hint)


def _is_py(x: Any) -> bool:
    return isinstance(x, (bool, int, float))


# expand-time values that stand for IR (never plain Python values)
_KERNEL_VALUES = (RV, LocalVar, BufferRef, Builtin, ArrayRef, SliceView, AtomicRef)


def _describe(x: Any) -> str:
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
    return f"{type(x).__name__} {x!r}"


# -- values ------------------------------------------------------------------------------------
def _const(s: Scope, value: Any, ty: Ty) -> Value:
    if ty.elem is Elem.F32:
        value = float(value)
    elif ty.elem is Elem.BOOL:
        value = bool(value)
    else:
        value = int(value)
        lo, hi = (0, 2**32 - 1) if ty.elem is Elem.U32 else (-(2**31), 2**31 - 1)
        if not lo <= value <= hi:
            raise error(s, f"the literal {value} does not fit in {ty.elem.value}")
    # Constants live once per kernel, at the top (a literal in an unrolled loop would otherwise
    # be re-emitted every iteration: a third of bit_tricks' ops). repr() keeps 0.0 and -0.0 apart.
    scalar = s.emit_prologue(("literal", ty.elem, repr(value)), "arith.constant", [],
                             Ty(ty.elem), value=value)
    if ty.width > 1:
        return s.emit("vector.splat", [scalar], ty)
    return scalar


def _default_ty(x: Any) -> Ty:
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
    raise error(s, f"unknown builtin {name}")


def read(s: Scope, x: Any) -> Any:
    """The value behind `x`: loads locals, computes builtins; Python values pass through."""
    if isinstance(x, LocalVar):
        assert isinstance(x.ptr.type, Pointer)
        return RV(s.emit("memory.load", [x.ptr], x.ptr.type.pointee))
    if isinstance(x, Builtin):
        return RV(builtin_value(s, x.name))
    return x


def value(s: Scope, x: Any, like: Ty | None = None) -> Value:
    """An IR value for `x`; a Python literal takes the type `like` (else i32/f32/bool)."""
    x = read(s, x)
    if isinstance(x, RV):
        return x.v
    if _is_py(x):
        ty = like if like is not None else _default_ty(x)
        if isinstance(x, float) and not isinstance(x, bool) and ty.elem.is_int:
            if not float(x).is_integer():
                raise error(s, f"the float literal {x} meets an integer ({ty.elem.value}) value",
                            f"write an integer literal, or cast: f32(...)")
        return _const(s, x, ty)
    if isinstance(x, (BufferRef, ArrayRef, SliceView)):
        raise error(s, f"{_describe(x)} is not a value", f"index it: {x.name}[i]")
    if isinstance(x, AtomicRef):
        raise error(s, "an atomic element is not a plain value",
                    "read it with .load() (or use fetch_add, swap, ...)")
    raise error(s, f"{_describe(x)} cannot be used as a kernel value",
                "kernel values are numbers, typed values (f32(1.0)) and results of kernel ops")


def _ty(v: Value) -> Ty:
    assert isinstance(v.type, Ty), v.type
    return v.type


def _splat(s: Scope, v: Value, width: int) -> Value:
    ty = _ty(v)
    if ty.width == width:
        return v
    return s.emit("vector.splat", [v], ty.with_width(width))


def _pair(s: Scope, a: Any, b: Any, what: str) -> tuple[Value, Value]:
    """Both operands as IR values of one type: literals adopt the other side's type, a scalar
    meeting a vector is splatted, and anything else that differs is an error."""
    a, b = read(s, a), read(s, b)
    if isinstance(a, RV) and not isinstance(b, RV):
        va = a.v
        vb = value(s, b, _ty(va).with_width(1))
    elif isinstance(b, RV) and not isinstance(a, RV):
        vb = b.v
        va = value(s, a, _ty(vb).with_width(1))
    else:
        va, vb = value(s, a), value(s, b)
    ta, tb = _ty(va), _ty(vb)
    if ta.elem is not tb.elem:
        raise error(
            s, f"`{what}` of {ta} and {tb}: the element types differ",
            f"cast one side, e.g. {ta.elem.value}(x) or {tb.elem.value}(x) (F.cast_from(x) in "
            "generic code)",
        )
    if ta.width != tb.width:
        if ta.width == 1:
            va = _splat(s, va, tb.width)
        elif tb.width == 1:
            vb = _splat(s, vb, ta.width)
        else:
            raise error(
                s, f"`{what}` of vectors of widths {ta.width} and {tb.width}",
                "vectors combine only with the same width (or with a scalar, which is splatted)",
            )
    return va, vb


# -- operators ---------------------------------------------------------------------------------
_PY_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "lshift": operator.lshift,
    "rshift": operator.rshift, "bitand": operator.and_, "bitor": operator.or_,
    "bitxor": operator.xor,
}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
           "lshift": "<<", "rshift": ">>", "bitand": "&", "bitor": "|", "bitxor": "^"}


def _shift(s: Scope, op: str, a: Any, b: Any) -> Any:
    """`a << b`, `a >> b`: the amount is a u32 (cast from i32 if needed; WGSL wants u32) and
    only its low 5 bits count (documented in OPS)."""
    like = _ty(b.v).with_width(1) if _is_py(a) and isinstance(b, RV) else None
    va = value(s, a, like if like is not None and like.elem.is_int else None)
    ty = _ty(va)
    if not ty.elem.is_int:
        raise error(s, f"`{_SYMBOL[op]}` on {ty} values", "shifts work on i32 / u32")
    if _is_py(b):
        if isinstance(b, bool) or not isinstance(b, int) or b < 0:
            raise error(s, f"shift amount {b!r} must be a non-negative integer")
        vb = _const(s, b, U32)
    else:
        vb = value(s, b)
        bt = _ty(vb)
        if not bt.elem.is_int:
            raise error(s, f"a shift amount must be an integer, got {bt}")
        if bt.elem is Elem.I32:
            vb = s.emit("arith.cast", [vb], bt.with_elem(Elem.U32))
    bt = _ty(vb)
    if bt.width != ty.width:
        if bt.width == 1:
            vb = _splat(s, vb, ty.width)
        elif ty.width == 1:
            va = _splat(s, va, bt.width)
            ty = _ty(va)
        else:
            raise error(s, f"shift of a width-{ty.width} vector by a width-{bt.width} vector")
    return RV(s.emit(_INT_OPS[op], [va, vb], ty))


_INT_OPS = {"lshift": "arith.shl", "rshift": "arith.shr", "bitand": "arith.bitand",
            "bitor": "arith.bitor", "bitxor": "arith.bitxor"}


# The common case, checked first: two runtime values of one integer (or float) type.
_FAST_INT = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul",
             "floordiv": "arith.div", "mod": "arith.rem", "bitand": "arith.bitand",
             "bitor": "arith.bitor", "bitxor": "arith.bitxor"}
_FAST_FLOAT = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul", "div": "arith.div",
               "mod": "arith.rem"}


def binop(s: Scope, op: str, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    a, b = read(s, a), read(s, b)
    if type(a) is RV and not a.splat:
        ta = a.v.type
        if type(ta) is Ty and ta.elem is not Elem.BOOL:
            table = _FAST_FLOAT if ta.elem is Elem.F32 else _FAST_INT
            name = table.get(op)
            if name is not None:
                if type(b) is RV and not b.splat and b.v.type == ta:
                    return RV(s.emit(name, [a.v, b.v], ta))
                if type(b) is int and ta.width == 1 and ta.elem is not Elem.F32 and (
                        0 <= b < 2**31):
                    return RV(s.emit(name, [a.v, _const(s, b, ta)], ta))
            elif op in ("lshift", "rshift") and ta.elem is not Elem.F32 and type(b) is int \
                    and 0 <= b < 2**31:
                amount = _const(s, b, U32)
                if ta.width > 1:
                    amount = _splat(s, amount, ta.width)
                return RV(s.emit(_INT_OPS[op], [a.v, amount], ta))
    if op == "pow":
        return library.power(s, a, b, at)
    if _is_py(a) and _is_py(b):
        return _PY_BIN[op](a, b)
    if op not in _PY_BIN:
        raise error(s, f"the operator for {op!r} is not part of the kernel language yet")
    if op in ("lshift", "rshift"):
        return _shift(s, op, a, b)
    va, vb = _pair(s, a, b, _SYMBOL[op])
    ty = _ty(va)
    if ty.elem is Elem.BOOL:
        raise error(s, f"`{_SYMBOL[op]}` on bool values", "use `and`, `or`, `not` on bools")
    if op == "div" and ty.elem.is_int:
        raise error(s, f"`/` on {ty.elem.value} values",
                    "integer division is `//` (it truncates toward zero, as in WGSL and Rust)")
    if op == "floordiv" and ty.elem.is_float:
        raise error(s, "`//` on f32 values", "write `/` for float division")
    if op in _INT_OPS:
        if not ty.elem.is_int:
            raise error(s, f"`{_SYMBOL[op]}` on {ty} values", "bit operations work on i32 / u32")
        return RV(s.emit(_INT_OPS[op], [va, vb], ty))
    name = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul", "div": "arith.div",
            "floordiv": "arith.div", "mod": "arith.rem"}[op]
    return RV(s.emit(name, [va, vb], ty))


_PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}
_CMP_SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def cmp(s: Scope, pred: str, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    a, b = read(s, a), read(s, b)
    if _is_py(a) and _is_py(b):
        return _PY_CMP[pred](a, b)
    va, vb = _pair(s, a, b, _CMP_SYMBOL[pred])
    ty = _ty(va)
    return RV(s.emit("arith.cmp", [va, vb], Ty(Elem.BOOL, ty.width), pred=pred))


def _as_bool(s: Scope, x: Any, what: str) -> Value:
    v = value(s, x, BOOL)
    if _ty(v).elem is not Elem.BOOL:
        raise error(s, f"`{what}` needs bool operands, got {_ty(v)}",
                    "compare first, e.g. `x != 0`")
    return v


def boolop(s: Scope, op: str, a: Any, b_thunk: Callable[[], Any], at: Pos) -> Any:
    """`a and b` / `a or b`. Comptime `a` short-circuits as in Python; a runtime `a` evaluates
    both sides (there is no short circuit on a GPU lane) and emits `arith.and`/`arith.or`."""
    s.at(*at)
    a = read(s, a)
    if _is_py(a):
        if op == "and":
            return b_thunk() if a else a
        return a if a else b_thunk()
    b = read(s, b_thunk())
    s.at(*at)
    va = _as_bool(s, a, op)
    vb = _as_bool(s, b, op)
    va, vb = _pair(s, RV(va), RV(vb), op)
    return RV(s.emit(f"arith.{op}", [va, vb], _ty(va)))


def not_(s: Scope, a: Any, at: Pos) -> Any:
    s.at(*at)
    a = read(s, a)
    if _is_py(a):
        return not a
    va = _as_bool(s, a, "not")
    return RV(s.emit("arith.not", [va], _ty(va)))


def unary(s: Scope, op: str, a: Any, at: Pos) -> Any:
    s.at(*at)
    a = read(s, a)
    if _is_py(a):
        return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}[op](a)
    if op == "pos":
        return a
    va = value(s, a)
    ty = _ty(va)
    if op == "invert":
        if not ty.elem.is_int:
            raise error(s, f"`~` on {ty} values", "`~` is bitwise not of i32 / u32; for bools "
                        "write `not x`")
        return RV(s.emit("arith.bitnot", [va], ty))
    if ty.elem is Elem.U32:
        raise error(s, "negating a u32 value", "cast to i32 first: -i32(x)")
    if ty.elem is Elem.BOOL:
        raise error(s, "negating a bool", "use `not x`")
    return RV(s.emit("arith.neg", [va], ty))


# -- locals ------------------------------------------------------------------------------------
def _store_var(s: Scope, var: LocalVar, x: Any) -> None:
    assert isinstance(var.ptr.type, Pointer)
    ty = var.ptr.type.pointee
    assert isinstance(ty, Ty)
    x = read(s, x)
    v = value(s, x, ty.with_width(1))
    if isinstance(x, RV) and x.splat:
        v = _splat(s, v, ty.width)
    vt = _ty(v)
    if vt != ty:
        if vt.width == 1 and vt.elem is ty.elem:
            v = _splat(s, v, ty.width)
        else:
            raise error(s, f"`{var.name}` holds {ty} but is assigned {vt}",
                        f"a local keeps its first type; cast: {ty.elem.value}(...)")
    s.register("memory.store", [var.ptr, v])


def assign(s: Scope, current: Any, x: Any, name: str, mutable: bool, at: Pos) -> Any:
    """`name = x`. Immutable names bind the value (SSA); mutable ones (assigned more than once,
    or inside a branch or loop) live in a local variable declared at the top of the kernel, so
    every branch writes the same storage and the value survives after the `if`/loop."""
    s.at(*at)
    if isinstance(current, LocalVar):
        _store_var(s, current, x)
        return current
    if isinstance(x, (BufferRef, ArrayRef, SliceView, AtomicRef)):
        return x
    x = read(s, x)
    if not mutable:
        return x
    if not isinstance(x, RV) and not _is_py(x):
        return x  # Python objects (tuples, strings, ...) stay Python
    if isinstance(x, RV):
        ty = _ty(x.v)
    else:
        ty = _default_ty(x)
    var = LocalVar(s.declare_var(ty, name), name)
    _store_var(s, var, x)
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


# -- memory ------------------------------------------------------------------------------------
def _index(s: Scope, idx: Any) -> Value:
    idx = read(s, idx)
    if _is_py(idx):
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise error(s, f"index {idx!r} is not an integer")
        if idx < 0:
            raise error(s, f"negative index {idx}", "indices are u32; negative indices never wrap")
        return _const(s, idx, U32)
    v = value(s, idx)
    ty = _ty(v)
    if ty != U32:
        if ty == I32:
            raise error(s, "indices are u32, this one is i32", "write x[u32(i)]")
        raise error(s, f"an index must be a u32 scalar, got {ty}")
    return v


def getitem(s: Scope, obj: Any, idx: Any, at: Pos) -> Any:
    s.at(*at)
    obj = read(s, obj)
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        return memory.load(s, obj, idx)
    if isinstance(obj, RV) and _ty(obj.v).width > 1:
        return memory.vector_component(s, obj.v, idx)
    idx = read(s, idx)
    if not isinstance(obj, _KERNEL_VALUES) and not isinstance(idx, _KERNEL_VALUES) \
            and hasattr(obj, "__getitem__"):
        try:
            return obj[idx]  # comptime: a tuple, SharedMemory[f32], Vector[F, N], ...
        except (IndexError, KeyError, TypeError) as exc:
            raise error(s, f"{_describe(obj)}[{idx!r}]: {exc}") from None
    raise error(s, f"{_describe(obj)} cannot be indexed here",
                "index a buffer argument (Slice / SliceMut / Tensor), an Array, shared memory "
                "or a vector")


def subslice(s: Scope, obj: Any, lower: Any, upper: Any, at: Pos) -> Any:
    return memory.subslice(s, obj, lower, upper, at)


def _item_value(s: Scope, x: Any, item: Ty) -> Value:
    x = read(s, x)
    v = value(s, x, item.with_width(1))
    vt = _ty(v)
    if vt.width == 1 and item.width > 1 and vt.elem is item.elem:
        return _splat(s, v, item.width)
    if vt != item:
        if vt.elem is not item.elem:
            raise error(s, f"storing {vt} into a buffer of {item}",
                        f"cast the value: {item.elem.value}(...) (F.cast_from(...) if generic)")
        raise error(s, f"storing a vector of width {vt.width} into a buffer of width {item.width}",
                    "vectors combine only with the same width")
    return v


def setitem(s: Scope, obj: Any, idx: Any, x: Any, at: Pos) -> None:
    s.at(*at)
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        memory.store(s, obj, idx, x, at)
        return
    raise error(s, f"{_describe(read(s, obj))} cannot be assigned by index",
                "assign into a SliceMut / TensorMut argument, an Array or shared memory")


def augsetitem(s: Scope, obj: Any, idx: Any, op: str, x: Any, at: Pos) -> None:
    current = getitem(s, obj, idx, at)
    setitem(s, obj, idx, binop(s, op, current, x, at), at)


# -- control flow ------------------------------------------------------------------------------
def if_(s: Scope, cond: Any, then: Callable[[], None], orelse: Callable[[], None] | None,
        at: Pos) -> None:
    """Runtime `if` → an `scf.if` op with two child blocks; a comptime condition picks one
    branch in Python and only that branch reaches the IR (CubeCL's `if_expand`)."""
    s.at(*at)
    cond = read(s, cond)
    if not isinstance(cond, RV):
        if cond is UNBOUND or not isinstance(cond, (bool, int, float, type(None), str, tuple,
                                                    list)):
            raise error(s, f"cannot branch on {_describe(cond)}")
        if cond:
            then()
        elif orelse is not None:
            orelse()
        return
    c = _as_bool(s, cond, "if")
    if _ty(c).width != 1:
        raise error(s, "an `if` condition must be one bool, not a vector of bools")
    then_block, else_block = Block(), Block()
    op = s.register("scf.if", [c])
    op.regions = [then_block, else_block]
    flow.runtime_branch(s, then_block, then)
    if orelse is not None:
        flow.runtime_branch(s, else_block, orelse)


def ifexp(s: Scope, cond: Any, a: Callable[[], Any], b: Callable[[], Any], at: Pos) -> Any:
    s.at(*at)
    cond = read(s, cond)
    if isinstance(cond, RV):
        raise error(s, "`x if cond else y` with a runtime condition",
                    "use an if statement assigning a local, or select(cond, a, b)")
    return a() if cond else b()


# -- calls -------------------------------------------------------------------------------------
def comptime(s: Scope, thunk: Callable[[], Any], names: dict[str, Any], at: Pos) -> Any:
    """`comptime(expr)`: evaluate `expr` in Python now, during expansion. Every name it reads
    must hold a value known before launch (a Python value or a Comptime argument)."""
    s.at(*at)
    hint = "only Python values and Comptime[...] arguments are known before launch"
    for name, v in names.items():
        if isinstance(v, _KERNEL_VALUES):
            raise error(s, f"comptime(...) needs a value known at expansion, but `{name}` is "
                        f"{_describe(v)}", hint)
    try:
        x = thunk()
    except Exception as exc:  # noqa: BLE001 - Python's own error, reworded with the line
        raise error(s, f"comptime(...) could not be evaluated in Python: {exc!r}", hint) from None
    if isinstance(x, _KERNEL_VALUES):
        raise error(s, f"comptime(...) needs a value known at expansion, got {_describe(x)}", hint)
    return x


def _minmax(s: Scope, fn: str, args: Sequence[Any]) -> Any:
    if len(args) < 2:
        raise error(s, f"{fn}() inside a kernel takes two or more values")
    acc = read(s, args[0])
    for nxt in args[1:]:
        nxt = read(s, nxt)
        if _is_py(acc) and _is_py(nxt):
            acc = builtins.min(acc, nxt) if fn == "min" else builtins.max(acc, nxt)
            continue
        va, vb = _pair(s, acc, nxt, fn)
        if _ty(va).elem is Elem.BOOL:
            raise error(s, f"{fn}() of bools")
        acc = RV(s.emit(f"arith.{fn}", [va, vb], _ty(va)))
    return acc


def _cast(s: Scope, kind: ScalarKind, x: Any) -> Any:
    x = read(s, x)
    target = Ty(kind.elem)
    if _is_py(x):
        if kind.elem.is_int and isinstance(x, float) and not x.is_integer():
            x = int(x)  # truncation toward zero, like a cast
        return RV(_const(s, x, target))
    v = value(s, x)
    ty = _ty(v)
    want = ty.with_elem(kind.elem)
    if isinstance(x, RV) and x.splat:
        return RV(v if ty == want else s.emit("arith.cast", [v], want), splat=True)
    if ty == want:
        return RV(v)
    return RV(s.emit("arith.cast", [v], want))


def scalar_method(s: Scope, kind: ScalarKind, name: str, args: Sequence[Any]) -> Any:
    """`F.new(x)`, `F.cast_from(x)`, `F.max(a, b)` & co. on a (resolved) scalar type."""
    if name in ("new", "cast_from") and len(args) == 1:
        return _cast(s, kind, args[0])
    if name in ("min", "max"):
        typed_args = [_cast(s, kind, a) if _is_py(read(s, a)) else a for a in args]
        return _minmax(s, name, typed_args)
    fn = library.METHODS.get(name)
    if fn is not None:
        if kind.elem.is_float:
            args = [_cast(s, kind, a) if _is_py(read(s, a)) else a for a in args]
        return fn._expand_call(s, *args)
    raise error(s, f"`{kind}.{name}(...)` is not part of the kernel language",
                "available: new, cast_from, min, max, " + ", ".join(sorted(library.METHODS)))


def _vector_new(s: Scope, x: Any) -> Any:
    x = read(s, x)
    v = value(s, x)
    if _ty(v).width != 1:
        raise error(s, "Vector.new(x) takes a scalar (it fills every component with it)")
    return RV(v, splat=True)


_PY_BUILTINS: dict[Any, Callable[[Scope, Sequence[Any]], Any]] = {
    builtins.min: lambda s, a: _minmax(s, "min", a),
    builtins.max: lambda s, a: _minmax(s, "max", a),
}


def call(s: Scope, fn: Any, args: Sequence[Any], at: Pos) -> Any:
    s.at(*at)
    args = [read(s, a) for a in args]
    if isinstance(fn, (ScalarKind, GenericScalar)):
        if len(args) != 1:
            raise error(s, f"{fn!r}(...) takes one value")
        return _cast(s, fn.resolve(s), args[0])
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
        if all(not isinstance(a, _KERNEL_VALUES) for a in args):
            return fn(*args)  # comptime: a plain Python call on Python values
        name = getattr(fn, "__name__", repr(fn))
        raise error(s, f"`{name}` is a plain Python function called on a runtime value",
                    f"decorate it with @cube to call it inside a kernel, or pass only "
                    "comptime values")
    raise error(s, f"{_describe(fn)} is not callable")


def method(s: Scope, obj: Any, name: str, args: Sequence[Any], at: Pos) -> Any:
    s.at(*at)
    if isinstance(obj, GenericScalar):
        obj = obj.resolve(s)
    if isinstance(obj, ScalarKind):
        return scalar_method(s, obj, name, args)
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        return memory.buffer_method(s, obj, name, [read(s, a) for a in args])
    if isinstance(obj, AtomicRef):
        return memory.atomic_method(s, obj, name, [read(s, a) for a in args])
    from cubelab.frontend.types import Vector

    if obj is Vector:
        if name == "new" and len(args) == 1:
            return _vector_new(s, args[0])
        raise error(s, f"`Vector.{name}` is not available", "available: Vector.new(x)")
    obj_r = read(s, obj)
    if isinstance(obj_r, RV):
        raise error(s, f"`.{name}(...)` on {_describe(obj_r)}",
                    "call functions instead: sqrt(x), F.max(a, b), ...")
    target = getattr(obj_r, name, None)
    if target is None:
        raise error(s, f"{_describe(obj_r)} has no attribute `{name}`")
    return call(s, target, args, at)


def attr(s: Scope, obj: Any, name: str, at: Pos) -> Any:
    s.at(*at)
    if isinstance(obj, _KERNEL_VALUES):
        raise error(s, f"`.{name}` on {_describe(obj)} is not part of the kernel language")
    try:
        return getattr(obj, name)
    except AttributeError:
        raise error(s, f"{_describe(obj)} has no attribute `{name}`") from None





# The control-flow half of the vocabulary lives in flow.py, the callable functions in library.py
# (imported last: they use this module).
from cubelab.frontend import flow, library, memory  # noqa: E402
from cubelab.frontend.library import exp, log, power, sqrt  # noqa: E402,F401
from cubelab.frontend.flow import (  # noqa: E402,F401
    brk,
    cont,
    fn_enter,
    fn_exit,
    for_range,
    for_unroll,
    guard,
    ret,
    while_,
)
