"""The functions a kernel may call: math, `select`, barriers, plane (subgroup) operations.

Each is an `Intrinsic`: inside a kernel the expansion calls it with IR-backed values and it
registers ops; called with plain Python numbers (inside or outside a kernel) it computes in
Python, which is what comptime means. Math works on scalars and vectors alike (a scalar meeting
a vector is splatted, as for operators).

The one function with no op of its own is `erf`: WGSL and MSL have no erf, so every target would
need its own approximation. It is lowered here, once, to Abramowitz & Stegun 7.1.26,

    erf(x) ≈ sign(x) · (1 − (a1·t + a2·t² + a3·t³ + a4·t⁴ + a5·t⁵) · exp(−x²)),  t = 1/(1 + p·|x|)

whose absolute error is ≤ 1.5e-7 in exact arithmetic; evaluated in f32 it stays within 1e-6 of
the true erf (pinned by a test against math.erf). Every target therefore computes the same
polynomial, and the CPU runtime agrees with the GPU to f32 rounding.

The trap: `plane_*` ops need the adapter's `subgroup` feature. Using one records "subgroup" in
the scope's features (→ `KernelDefinition.required_features`); a runtime without it refuses the
launch with an error that says so, and that failure lands on the buffers the launch would write.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable

from cubelab.frontend.operands import (
    Pos,
    const,
    error,
    is_py,
    minmax,
    pair,
    read,
    splat,
    ty_of,
    value,
)
from cubelab.frontend.values import RV
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, U32, Elem, Ty

_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911


class Intrinsic:
    """A function callable inside kernels; with only Python numbers it is plain Python."""

    def __init__(self, name: str, expand: Callable[..., Any], py: Callable[..., Any] | None,
                 arity: int | tuple[int, ...]) -> None:
        self.name = name
        self._expand = expand
        self._py = py
        self._arity = (arity,) if isinstance(arity, int) else arity
        self.__name__ = name
        self.__doc__ = f"cubelab kernel function `{name}`"

    def __repr__(self) -> str:
        return f"cubelab.{self.name}"

    def __call__(self, *args: Any) -> Any:
        if self._py is None:
            raise TypeError(f"`{self.name}` is a kernel function: call it inside a @cube kernel")
        return self._py(*args)

    def _expand_call(self, s: Scope, *args: Any) -> Any:
        if len(args) not in self._arity:
            want = " or ".join(str(a) for a in self._arity)
            raise error(s, f"{self.name}() takes {want} argument(s), got {len(args)}")
        args = tuple(read(s, a) for a in args)
        if self._py is not None and args and all(is_py(a) for a in args):
            return self._py(*args)
        return self._expand(s, *args)


def _float_value(s: Scope, fn: str, x: Any) -> Any:
    v = value(s, x, Ty(Elem.F32))
    if not ty_of(v).elem.is_float:
        raise error(s, f"{fn}() needs a float, got {ty_of(v)}", f"cast first: {fn}(f32(x))")
    return v


def _unary(fn: str) -> Callable[[Scope, Any], Any]:
    def expand(s: Scope, x: Any) -> Any:
        if fn == "abs":
            v = value(s, x)
            ty = ty_of(v)
            if ty.elem is Elem.BOOL:
                raise error(s, "abs() of a bool")
            if ty.elem is Elem.U32:
                return RV(v)
            return RV(s.emit("math.unary", [v], ty, fn="abs"))
        v = _float_value(s, fn, x)
        return RV(s.emit("math.unary", [v], ty_of(v), fn=fn))

    return expand


def _round_py(x: float) -> float:
    return float(builtins.round(x))  # half to even, like WGSL's round


def _erf(s: Scope, x: Any) -> Any:
    v = _float_value(s, "erf", x)
    ty = ty_of(v)

    def c(k: float) -> Any:
        return splat(s, const(s, k, Ty(Elem.F32)), ty.width)

    ax = s.emit("math.unary", [v], ty, fn="abs")
    t = s.emit("arith.div", [c(1.0), s.emit("arith.add", [c(1.0),
                                                         s.emit("arith.mul", [c(_P), ax], ty)],
                                            ty)], ty)
    poly = c(_A[4])
    for a in reversed(_A[:4]):  # Horner: ((((a5 t + a4) t + a3) t + a2) t + a1) t
        poly = s.emit("arith.add", [s.emit("arith.mul", [poly, t], ty), c(a)], ty)
    poly = s.emit("arith.mul", [poly, t], ty)
    e = s.emit("math.unary", [s.emit("arith.neg", [s.emit("arith.mul", [ax, ax], ty)], ty)], ty,
               fn="exp")
    y = s.emit("arith.sub", [c(1.0), s.emit("arith.mul", [poly, e], ty)], ty)
    neg = s.emit("arith.cmp", [v, c(0.0)], Ty(Elem.BOOL, ty.width), pred="lt")
    return RV(s.emit("arith.select", [neg, s.emit("arith.neg", [y], ty), y], ty))


def _pow(s: Scope, a: Any, b: Any) -> Any:
    va, vb = pair(s, a, b, "pow")
    if not ty_of(va).elem.is_float:
        raise error(s, f"pow() of {ty_of(va)} values",
                    "pow works on f32: pow(f32(x), f32(y)); for integer powers multiply in an "
                    "unrolled loop")
    return RV(s.emit("math.binary", [va, vb], ty_of(va), fn="pow"))


def _clamp(s: Scope, x: Any, lo: Any, hi: Any) -> Any:
    """clamp(x, lo, hi) = min(max(x, lo), hi), as WGSL defines it."""
    return minmax(s, "min", [minmax(s, "max", [x, lo]), hi])


def _fma(s: Scope, a: Any, b: Any, c: Any) -> Any:
    va, vb = pair(s, a, b, "fma")
    va, vc = pair(s, RV(va), c, "fma")
    va, vb = pair(s, RV(va), RV(vb), "fma")
    if not ty_of(va).elem.is_float:
        raise error(s, f"fma() of {ty_of(va)} values", "fma works on f32")
    return RV(s.emit("math.fma", [va, vb, vc], ty_of(va)))


def _select(s: Scope, cond: Any, a: Any, b: Any) -> Any:
    """`select(cond, a, b)`: `a if cond else b` without a branch (both sides are computed)."""
    if is_py(cond):
        return a if cond else b
    c = value(s, cond, BOOL)
    if ty_of(c).elem is not Elem.BOOL:
        raise error(s, f"select()'s condition must be a bool, got {ty_of(c)}",
                    "compare first: select(x > 0, a, b)")
    va, vb = pair(s, a, b, "select")
    ty = ty_of(va)
    cw = ty_of(c).width
    if cw > 1 and ty.width == 1:  # a bool vector picking between scalars: widen them
        va, vb = splat(s, va, cw), splat(s, vb, cw)
        ty = ty_of(va)
    if cw != 1 and cw != ty.width:
        raise error(s, f"select() with a condition of width {cw} and values of width "
                    f"{ty.width}", "the condition is one bool or a bool vector of the same width")
    return RV(s.emit("arith.select", [c, va, vb], ty))


def _sync(op: str) -> Callable[[Scope], Any]:
    def expand(s: Scope) -> None:
        s.register(op, [])

    return expand


def _no_py(name: str) -> Callable[..., Any]:
    def py(*_: Any) -> Any:
        raise TypeError(f"`{name}` is a kernel function: call it inside a @cube kernel")

    return py


def _plane(s: Scope) -> None:
    s.features.add("subgroup")


def _plane_reduce(kind: str) -> Callable[[Scope, Any], Any]:
    def expand(s: Scope, x: Any) -> Any:
        _plane(s)
        v = value(s, x)
        if ty_of(v).elem is Elem.BOOL:
            raise error(s, f"plane_{kind} of a bool", "use plane_all / plane_any")
        return RV(s.emit("plane.reduce", [v], ty_of(v), kind=kind))

    return expand


def _plane_vote(kind: str) -> Callable[[Scope, Any], Any]:
    def expand(s: Scope, x: Any) -> Any:
        _plane(s)
        v = value(s, x, BOOL)
        if ty_of(v) != BOOL:
            raise error(s, f"plane_{kind} takes one bool, got {ty_of(v)}", "compare first")
        return RV(s.emit("plane.vote", [v], BOOL, kind=kind))

    return expand


def _plane_broadcast(s: Scope, x: Any, lane: Any) -> Any:
    _plane(s)
    v = value(s, x)
    lv = value(s, lane, U32)
    if ty_of(lv) != U32:
        raise error(s, f"plane_broadcast's lane must be a u32, got {ty_of(lv)}")
    return RV(s.emit("plane.broadcast", [v, lv], ty_of(v)))


def _plane_elect(s: Scope) -> Any:
    _plane(s)
    return RV(s.emit("plane.elect", [], BOOL))


def _unary_intrinsic(name: str, py: Callable[[float], float]) -> Intrinsic:
    return Intrinsic(name, _unary(name), py, 1)


sqrt = _unary_intrinsic("sqrt", math.sqrt)
exp = _unary_intrinsic("exp", math.exp)
log = _unary_intrinsic("log", math.log)
sin = _unary_intrinsic("sin", math.sin)
cos = _unary_intrinsic("cos", math.cos)
tan = _unary_intrinsic("tan", math.tan)
tanh = _unary_intrinsic("tanh", math.tanh)
floor = _unary_intrinsic("floor", lambda x: float(math.floor(x)))
ceil = _unary_intrinsic("ceil", lambda x: float(math.ceil(x)))
round_ = _unary_intrinsic("round", _round_py)
abs_ = Intrinsic("abs", _unary("abs"), builtins.abs, 1)
erf = Intrinsic("erf", _erf, math.erf, 1)
pow_ = Intrinsic("pow", _pow, builtins.pow, 2)
clamp = Intrinsic("clamp", _clamp, lambda x, lo, hi: builtins.min(builtins.max(x, lo), hi), 3)
fma = Intrinsic("fma", _fma, lambda a, b, c: a * b + c, 3)
select = Intrinsic("select", _select, lambda c, a, b: a if c else b, 3)
sync_cube = Intrinsic("sync_cube", _sync("sync.cube"), None, 0)
sync_storage = Intrinsic("sync_storage", _sync("sync.storage"), None, 0)
plane_sum = Intrinsic("plane_sum", _plane_reduce("sum"), None, 1)
plane_min = Intrinsic("plane_min", _plane_reduce("min"), None, 1)
plane_max = Intrinsic("plane_max", _plane_reduce("max"), None, 1)
plane_all = Intrinsic("plane_all", _plane_vote("all"), None, 1)
plane_any = Intrinsic("plane_any", _plane_vote("any"), None, 1)
plane_broadcast = Intrinsic("plane_broadcast", _plane_broadcast, None, 2)
plane_elect = Intrinsic("plane_elect", _plane_elect, None, 0)

# Python builtins that mean the same inside a kernel (`min(a, b)`, `round(x)`, `pow(x, y)`, ...).
PY_BUILTINS: dict[Any, Intrinsic] = {builtins.abs: abs_, builtins.round: round_,
                                     builtins.pow: pow_}
# `F.sqrt(x)`-style methods on scalar types
METHODS: dict[str, Intrinsic] = {
    i.name: i for i in (sqrt, exp, log, sin, cos, tan, tanh, floor, ceil, round_, abs_, erf, pow_,
                        clamp, fma)
}
# `x ** y`
def power(s: Scope, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    return pow_._expand_call(s, a, b)


__all__ = ["sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "erf", "clamp",
           "fma", "select", "sync_cube", "sync_storage", "plane_sum", "plane_min", "plane_max",
           "plane_all", "plane_any", "plane_broadcast", "plane_elect"]
