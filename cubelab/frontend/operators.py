"""Operators at expand time: `a + b`, `a < b`, `a and b`, `not a`, `-a`, `a ** b`.

Two Python values compute in Python (comptime); anything else becomes one `arith.*` op on
operands of one type (`operands.pair`). The common case — two runtime values of one numeric type,
or one and a small int literal — is checked first, because it is most of every kernel's
expansion time. Integer `/` and float `//` are refused with the spelling that works; `and`/`or`
on runtime bools evaluate both sides (a GPU lane has no short circuit).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from cubelab.compiler.spelling import COMPARE  # arith.cmp's pred -> its operator, once
from cubelab.frontend import library
from cubelab.frontend.operands import (
    KERNEL_VALUES,
    Pos,
    as_bool,
    const,
    describe,
    error,
    is_pure,
    is_py,
    meet,
    pair,
    read,
    splat,
    ty_of,
    value,
    written_of,
)
from cubelab.frontend.values import RV
from cubelab.ir.scope import Scope
from cubelab.ir.core import Block
from cubelab.ir.types import BOOL, U32, Elem, Ty


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
    like = ty_of(b.v).with_width(1) if is_py(a) and isinstance(b, RV) else None
    va = value(s, a, like if like is not None and like.elem.is_int else None)
    ty = ty_of(va)
    if not ty.elem.is_int:
        raise error(s, f"`{_SYMBOL[op]}` on {ty} values", "shifts work on i32 / u32")
    if is_py(b):
        if isinstance(b, bool) or not isinstance(b, int) or b < 0:
            raise error(s, f"shift amount {b!r} must be a non-negative integer",
                        "shift by 0 .. 31 (only the low 5 bits are used)")
        vb = const(s, b, U32)
    else:
        vb = value(s, b)
        bt = ty_of(vb)
        if not bt.elem.is_int:
            raise error(s, f"a shift amount must be an integer, got {bt}",
                        "shift by a u32: x << u32(k)")
        if bt.elem is Elem.I32:
            vb = s.emit("arith.cast", [vb], bt.with_elem(Elem.U32))
    bt = ty_of(vb)
    if bt.width != ty.width:
        if bt.width == 1:
            vb = splat(s, vb, ty.width)
        elif ty.width == 1:
            va = splat(s, va, bt.width)
            ty = ty_of(va)
        else:
            raise error(s, f"shift of a width-{ty.width} vector by a width-{bt.width} vector",
                        "shift by a scalar or a vector of the same width")
    return RV(s.emit(_INT_OPS[op], [va, vb], ty))


_INT_OPS = {"lshift": "arith.shl", "rshift": "arith.shr", "bitand": "arith.bitand",
            "bitor": "arith.bitor", "bitxor": "arith.bitxor"}


# The common case, checked first: two runtime values of one integer (or float) type.
_FAST_INT = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul",
             "floordiv": "arith.div", "mod": "arith.rem", "bitand": "arith.bitand",
             "bitor": "arith.bitor", "bitxor": "arith.bitxor"}
_FAST_FLOAT = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul", "div": "arith.div",
               "mod": "arith.rem"}


def _list_op(s: Scope, op: str, a: Any, b: Any) -> list[Any]:
    """Building a list at expansion: `[x] * n` / `n * [x]` with a comptime int n, `xs + ys`."""
    if op == "add" and isinstance(a, list) and isinstance(b, list):
        return a + b
    if op == "mul":
        items, n = (a, b) if isinstance(a, list) else (b, a)
        if isinstance(n, int) and not isinstance(n, bool) and isinstance(items, list):
            return items * n
    raise error(s, f"a list {'repeated' if op == 'mul' else 'joined'} with {describe(b)}",
                "build lists with [x] * n (n a comptime int), xs + ys, or append")


def binop(s: Scope, op: str, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    given = (a, b)
    a, b = read(s, a), read(s, b)
    if type(a) is RV and not a.splat:
        ta = a.v.type
        if type(ta) is Ty and ta.elem is not Elem.BOOL:
            table = _FAST_FLOAT if ta.elem is Elem.F32 else _FAST_INT
            name = table.get(op)
            if name is not None:
                if type(b) is RV and not b.splat and b.v.type == ta:
                    w = a.w if a.w == b.w else meet(s, _SYMBOL[op], a.w, b.w)
                    return RV(s.emit(name, [a.v, b.v], ta), w=w)
                if type(b) is int and ta.width == 1 and ta.elem is not Elem.F32 and (
                        0 <= b < 2**31):
                    return RV(s.emit(name, [a.v, const(s, b, ta)], ta), w=a.w)
            elif op in ("lshift", "rshift") and ta.elem is not Elem.F32 and type(b) is int \
                    and 0 <= b < 2**31:
                amount = const(s, b, U32)
                if ta.width > 1:
                    amount = splat(s, amount, ta.width)
                return RV(s.emit(_INT_OPS[op], [a.v, amount], ta), w=a.w)
    if op == "pow":
        return library.power(s, a, b, at)
    if is_py(a) and is_py(b):
        return _PY_BIN[op](a, b)
    if op in ("mul", "add") and (isinstance(a, list) or isinstance(b, list)):
        return _list_op(s, op, a, b)  # `[f32(0.0)] * 4`, `xs + ys`: Python's, at expansion
    if op not in _PY_BIN:
        raise error(s, f"the operator for {op!r} is not part of the kernel language yet",
                    "docs/language.md, Operators, lists the ones a kernel can use")
    if op in ("lshift", "rshift"):
        return _shift(s, op, a, b)
    va, vb = pair(s, a, b, _SYMBOL[op], given)
    w = written_of(a) or written_of(b)  # `pair` has refused a clash
    ty = ty_of(va)
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
        return RV(s.emit(_INT_OPS[op], [va, vb], ty), w=w)
    name = {"add": "arith.add", "sub": "arith.sub", "mul": "arith.mul", "div": "arith.div",
            "floordiv": "arith.div", "mod": "arith.rem"}[op]
    return RV(s.emit(name, [va, vb], ty), w=w)


_PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
}




def cmp(s: Scope, pred: str, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    given = (a, b)
    a, b = read(s, a), read(s, b)
    if not isinstance(a, KERNEL_VALUES) and not isinstance(b, KERNEL_VALUES):
        # both comptime: numbers, and also enum members, strings, None, ... fold in Python
        try:
            return _PY_CMP[pred](a, b)
        except TypeError as exc:
            raise error(s, f"comptime comparison {a!r} {COMPARE[pred]} {b!r}: {exc}",
                        "compare values of one kind") from None
    va, vb = pair(s, a, b, COMPARE[pred], given)
    ty = ty_of(va)
    return RV(s.emit("arith.cmp", [va, vb], Ty(Elem.BOOL, ty.width), pred=pred))


def boolop(s: Scope, op: str, a: Any, b_thunk: Callable[[], Any], at: Pos) -> Any:
    """`a and b` / `a or b`, short-circuit as in Python and CubeCL: a comptime `a` decides in
    Python; with a runtime bool `a`, the right side runs only where it must (`a` true for `and`,
    false for `or`) — as a branch that stores into a bool local when the right side has an
    effect or a load (an atomic, a store, a read that `a` guards), and as a plain `arith.and`/
    `arith.or` of both values when it is pure (same result, no branch). Vector bools combine
    componentwise (both sides run: a lane cannot skip half a vector)."""
    s.at(*at)
    a = read(s, a)
    if is_py(a):
        if op == "and":
            return b_thunk() if a else a
        return a if a else b_thunk()
    va = as_bool(s, a, op)
    rhs = Block()
    with s.child(rhs):
        b = read(s, b_thunk())
        s.at(*at)
        vb = as_bool(s, b, op)
    if is_pure(rhs) or ty_of(va).width > 1 or ty_of(vb).width > 1:
        s.block.ops.extend(rhs.ops)
        va, vb = pair(s, RV(va), RV(vb), op)
        return RV(s.emit(f"arith.{op}", [va, vb], ty_of(va)))
    result = s.declare_var(BOOL, "short")
    s.register("memory.store", [result, va])
    with s.child(rhs):
        s.register("memory.store", [result, vb])
    run_rhs = va if op == "and" else s.emit("arith.not", [va], BOOL)
    s.register("scf.if", [run_rhs]).regions = [rhs, Block()]
    return RV(s.emit("memory.load", [result], BOOL))


def not_(s: Scope, a: Any, at: Pos) -> Any:
    s.at(*at)
    a = read(s, a)
    if is_py(a):
        return not a
    va = as_bool(s, a, "not")
    return RV(s.emit("arith.not", [va], ty_of(va)))


def unary(s: Scope, op: str, a: Any, at: Pos) -> Any:
    s.at(*at)
    a = read(s, a)
    if is_py(a):
        return {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}[op](a)
    if op == "pos":
        return a
    va = value(s, a)
    ty = ty_of(va)
    if op == "invert":
        if not ty.elem.is_int:
            raise error(s, f"`~` on {ty} values", "`~` is bitwise not of i32 / u32; for bools "
                        "write `not x`")
        return RV(s.emit("arith.bitnot", [va], ty))
    if ty.elem is Elem.U32:
        raise error(s, "negating a u32 value", "cast to i32 first: -i32(x)")
    if ty.elem is Elem.BOOL:
        raise error(s, "negating a bool", "use `not x`")
    return RV(s.emit("arith.neg", [va], ty), w=written_of(a))
