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

Size: ~700 lines, at the project's limit: it is a table — one `Intrinsic` per function a
kernel may call (math, `select`, barriers, plane ops) — read by name, not by flow; split by
family it would spread one registration convention over several files.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable

from cubelab.errors import hinted
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
from cubelab.frontend.values import RV, AtomicRef
from cubelab.ir.plugins import plugin_op
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, U32, Elem, Pointer, Ty

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
            raise TypeError(hinted(f"`{self.name}` is a kernel function",
                                   "call it inside a @cube kernel; on the host use numpy"))
        return self._py(*args)

    def _expand_call(self, s: Scope, *args: Any) -> Any:
        if len(args) not in self._arity:
            want = " or ".join(str(a) for a in self._arity)
            raise error(s, f"{self.name}() takes {want} argument(s), got {len(args)}",
                        f"pass {want} argument(s) (docs/language.md, Functions)")
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
                raise error(s, "abs() of a bool", "abs takes a number: f32, i32 or u32")
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
    """pow as CubeCL gives it: a negative base with an integral exponent is |a|**b with the sign
    of an odd power (pow(-3, 2) == 9, pow(-2, 3) == -8); a non-integral one is NaN, as the IR's
    math.binary pow. A comptime exponent decides which case at expansion (no select)."""
    va, vb = pair(s, a, b, "pow")
    ty = ty_of(va)
    if not ty.elem.is_float:
        raise error(s, f"pow() of {ty_of(va)} values",
                    "pow works on f32: pow(f32(x), f32(y)); for integer powers multiply in an "
                    "unrolled loop")
    b = read(s, b)
    if is_py(b) and not float(b).is_integer():
        return RV(s.emit("math.binary", [va, vb], ty, fn="pow"))
    mag = s.emit("math.binary", [s.emit("math.unary", [va], ty, fn="abs"), vb], ty, fn="pow")
    neg = s.emit("arith.cmp", [va, _c(s, 0.0, ty)], Ty(Elem.BOOL, ty.width), pred="lt")
    if is_py(b):
        if int(b) % 2 == 0:
            return RV(mag)
        return RV(s.emit("arith.select", [neg, s.emit("arith.neg", [mag], ty), mag], ty))
    bw = Ty(Elem.BOOL, ty.width)
    integral = s.emit("arith.cmp", [s.emit("math.unary", [vb], ty, fn="trunc"), vb], bw,
                      pred="eq")
    half = s.emit("arith.mul", [vb, _c(s, 0.5, ty)], ty)
    odd = s.emit("arith.cmp", [s.emit("math.unary", [half], ty, fn="trunc"), half], bw,
                 pred="ne")
    signed = s.emit("arith.select", [odd, s.emit("arith.neg", [mag], ty), mag], ty)
    plain = s.emit("math.binary", [va, vb], ty, fn="pow")
    use_signed = s.emit("arith.and", [neg, integral], bw)
    return RV(s.emit("arith.select", [use_signed, signed, plain], ty))


def _c(s: Scope, k: Any, ty: Ty) -> Any:
    """The literal `k` in the element type of `ty`, splatted to its width."""
    return splat(s, const(s, k, Ty(ty.elem)), ty.width)


def _math1(fn: str) -> Callable[[Scope, Any], Any]:
    """A float math.unary function that is one op (sinh, trunc, inverse_sqrt, ...)."""
    def expand(s: Scope, x: Any) -> Any:
        v = _float_value(s, fn, x)
        return RV(s.emit("math.unary", [v], ty_of(v), fn=fn))

    return expand


def _float_class(fn: str) -> Callable[[Scope, Any], Any]:
    def expand(s: Scope, x: Any) -> Any:
        v = _float_value(s, fn, x)
        return RV(s.emit("math.unary", [v], Ty(Elem.BOOL, ty_of(v).width), fn=fn))

    return expand


def _scaled(fn: str, k: float) -> Callable[[Scope, Any], Any]:
    """x * k (to_degrees, to_radians), or 1/x for recip (CubeCL's polyfills)."""
    def expand(s: Scope, x: Any) -> Any:
        v = _float_value(s, fn, x)
        ty = ty_of(v)
        if fn == "recip":
            return RV(s.emit("arith.div", [_c(s, 1.0, ty), v], ty))
        return RV(s.emit("arith.mul", [v, _c(s, k, ty)], ty))

    return expand


def _exp_m1(s: Scope, x: Any) -> Any:
    """exp(x) - 1 as CubeCL's polyfill computes it: below |x| = 1e-5 the Taylor terms
    x + x²/2 + x³/6 (`exp(x) - 1` there loses everything but f32's epsilon: 1.19e-7 for 1e-7),
    else exp(x) - 1. Both sides are computed; a select picks one."""
    v = _float_value(s, "exp_m1", x)
    ty = ty_of(v)
    sq = s.emit("arith.mul", [v, v], ty)
    taylor = s.emit("arith.add", [
        s.emit("arith.add", [v, s.emit("arith.mul", [sq, _c(s, 0.5, ty)], ty)], ty),
        s.emit("arith.mul", [s.emit("arith.mul", [sq, v], ty), _c(s, 1.0 / 6.0, ty)], ty)], ty)
    small = s.emit("arith.cmp", [s.emit("math.unary", [v], ty, fn="abs"), _c(s, 1e-5, ty)],
                   Ty(Elem.BOOL, ty.width), pred="lt")
    big = s.emit("arith.sub", [s.emit("math.unary", [v], ty, fn="exp"), _c(s, 1.0, ty)], ty)
    return RV(s.emit("arith.select", [small, taylor, big], ty))


def _float_pair(s: Scope, fn: str, a: Any, b: Any) -> tuple[Any, Any, Ty]:
    va, vb = pair(s, a, b, fn)
    if not ty_of(va).elem.is_float:
        raise error(s, f"{fn}() of {ty_of(va)} values", f"{fn} works on f32")
    return va, vb, ty_of(va)


def _atan2(s: Scope, y: Any, x: Any) -> Any:
    vy, vx, ty = _float_pair(s, "atan2", y, x)
    return RV(s.emit("math.binary", [vy, vx], ty, fn="atan2"))


def _hypot(fn: str) -> Callable[[Scope, Any, Any], Any]:
    """hypot = sqrt(a² + b²), rhypot = 1/sqrt(a² + b²) (CubeCL's polyfill: no rescaling, so it
    overflows to inf where a² + b² does, |a| or |b| above about 1.8e19)."""
    def expand(s: Scope, a: Any, b: Any) -> Any:
        va, vb, ty = _float_pair(s, fn, a, b)
        sq = s.emit("arith.add", [s.emit("arith.mul", [va, va], ty),
                                  s.emit("arith.mul", [vb, vb], ty)], ty)
        return RV(s.emit("math.unary", [sq], ty, fn="sqrt" if fn == "hypot" else "inverse_sqrt"))

    return expand


def _powi(s: Scope, x: Any, n: Any) -> Any:
    """powi(x, n): x to an integer power (the exponent is converted to f32, then pow)."""
    nv = read(s, n)
    if is_py(nv):
        return _pow(s, x, float(nv))
    vn = value(s, nv)
    if not ty_of(vn).elem.is_int:
        raise error(s, f"powi()'s exponent must be an integer, got {ty_of(vn)}", "use pow")
    vx = _float_value(s, "powi", x)
    return _pow(s, RV(vx), RV(s.emit("arith.cast", [vn], Ty(Elem.F32, ty_of(vn).width))))


def _int_value(s: Scope, fn: str, x: Any) -> Any:
    v = value(s, x, U32)
    if not ty_of(v).elem.is_int:
        raise error(s, f"{fn}() needs an integer (i32 or u32), got {ty_of(v)}",
                    f"cast first: {fn}(u32(x))")
    return v


def _bits(fn: str) -> Callable[[Scope, Any], Any]:
    """A bit function of the 32-bit pattern; counts are u32 (CubeCL returns u32), reverse_bits
    keeps the type."""
    def expand(s: Scope, x: Any) -> Any:
        v = _int_value(s, fn, x)
        ty = ty_of(v)
        if fn == "find_first_set":  # 1 + index of the lowest set bit; 0 for 0
            tz = s.emit("math.unary", [v], ty, fn="trailing_zeros")
            uty = Ty(Elem.U32, ty.width)
            tz = s.emit("arith.cast", [tz], uty) if ty.elem is Elem.I32 else tz
            zero = s.emit("arith.cmp", [v, _c(s, 0, ty)], Ty(Elem.BOOL, ty.width), pred="eq")
            one_based = s.emit("arith.add", [tz, _c(s, 1, uty)], uty)
            return RV(s.emit("arith.select", [zero, _c(s, 0, uty), one_based], uty))
        r = s.emit("math.unary", [v], ty, fn=fn)
        if fn != "reverse_bits" and ty.elem is Elem.I32:
            r = s.emit("arith.cast", [r], Ty(Elem.U32, ty.width))
        return RV(r)

    return expand


def _int_pair(s: Scope, fn: str, a: Any, b: Any) -> tuple[Any, Any, Ty]:
    va, vb = pair(s, a, b, fn)
    if not ty_of(va).elem.is_int:
        raise error(s, f"{fn}() of {ty_of(va)} values", f"{fn} works on i32 and u32")
    return va, vb, ty_of(va)


def _saturating(fn: str) -> Callable[[Scope, Any, Any], Any]:
    """a + b / a - b clamped to the type's range instead of wrapping (CubeCL's saturating_*)."""
    def expand(s: Scope, a: Any, b: Any) -> Any:
        va, vb, ty = _int_pair(s, fn, a, b)
        bw = Ty(Elem.BOOL, ty.width)
        op = "arith.add" if fn == "saturating_add" else "arith.sub"
        r = s.emit(op, [va, vb], ty)
        if ty.elem is Elem.U32:
            # add overflowed iff the wrapped sum is below a; sub iff b > a
            over = (s.emit("arith.cmp", [r, va], bw, pred="lt") if op == "arith.add"
                    else s.emit("arith.cmp", [vb, va], bw, pred="gt"))
            bound = _c(s, 0xFFFFFFFF if op == "arith.add" else 0, ty)
            return RV(s.emit("arith.select", [over, bound, r], ty))
        # i32: overflow iff the result's sign differs from a's while b's sign agrees with the
        # direction (add: same sign as a; sub: opposite sign): ((a ^ r) & (a ^ ±b)) < 0
        zero = _c(s, 0, ty)
        ar = s.emit("arith.bitxor", [va, r], ty)
        ab = s.emit("arith.bitxor", [va, vb], ty)
        if op == "arith.add":
            ab = s.emit("arith.bitnot", [ab], ty)
        over = s.emit("arith.cmp", [s.emit("arith.bitand", [ar, ab], ty), zero], bw, pred="lt")
        a_neg = s.emit("arith.cmp", [va, zero], bw, pred="lt")
        bound = s.emit("arith.select", [a_neg, _c(s, -(2**31), ty), _c(s, 2**31 - 1, ty)], ty)
        return RV(s.emit("arith.select", [over, bound, r], ty))

    return expand


def _mul_hi(s: Scope, a: Any, b: Any) -> Any:
    """The high 32 bits of the 64-bit product (WGSL has no 64-bit ints: four 16x16 products, as
    CubeCL's WGSL polyfill; i32 corrects the unsigned result by the operands' signs)."""
    va, vb, ty = _int_pair(s, "mul_hi", a, b)
    u = Ty(Elem.U32, ty.width)
    ua = s.emit("arith.cast", [va], u) if ty.elem is Elem.I32 else va
    ub = s.emit("arith.cast", [vb], u) if ty.elem is Elem.I32 else vb
    mask, sixteen = _c(s, 0xFFFF, u), _c(s, 16, u)

    def e(op: str, x: Any, y: Any) -> Any:
        return s.emit(op, [x, y], u)

    a_lo, a_hi = e("arith.bitand", ua, mask), e("arith.shr", ua, sixteen)
    b_lo, b_hi = e("arith.bitand", ub, mask), e("arith.shr", ub, sixteen)
    ll, lh = e("arith.mul", a_lo, b_lo), e("arith.mul", a_lo, b_hi)
    hl, hh = e("arith.mul", a_hi, b_lo), e("arith.mul", a_hi, b_hi)
    mid = e("arith.add", e("arith.add", e("arith.shr", ll, sixteen),
                           e("arith.bitand", lh, mask)), e("arith.bitand", hl, mask))
    hi = e("arith.add", e("arith.add", hh, e("arith.shr", lh, sixteen)),
           e("arith.add", e("arith.shr", hl, sixteen), e("arith.shr", mid, sixteen)))
    if ty.elem is Elem.U32:
        return RV(hi)
    # signed high word = unsigned high word - (a < 0 ? b : 0) - (b < 0 ? a : 0)  (mod 2^32)
    zero, bw = _c(s, 0, ty), Ty(Elem.BOOL, ty.width)
    uzero = _c(s, 0, u)
    a_neg = s.emit("arith.cmp", [va, zero], bw, pred="lt")
    b_neg = s.emit("arith.cmp", [vb, zero], bw, pred="lt")
    hi = e("arith.sub", hi, s.emit("arith.select", [a_neg, ub, uzero], u))
    hi = e("arith.sub", hi, s.emit("arith.select", [b_neg, ua, uzero], u))
    return RV(s.emit("arith.cast", [hi], ty))


def _vector_sum(s: Scope, x: Any) -> Any:
    """The sum of a vector's components (a scalar is itself)."""
    v = value(s, x)
    ty = ty_of(v)
    scalar = Ty(ty.elem)
    if ty.width == 1:
        return RV(v)
    acc = s.emit("vector.extract", [v], scalar, index=0)
    for i in range(1, ty.width):
        acc = s.emit("arith.add", [acc, s.emit("vector.extract", [v], scalar, index=i)], scalar)
    return RV(acc)


def _dot(s: Scope, a: Any, b: Any) -> Any:
    va, vb = pair(s, a, b, "dot")
    return _vector_sum(s, RV(s.emit("arith.mul", [va, vb], ty_of(va))))


def _magnitude(s: Scope, x: Any) -> Any:
    v = _float_value(s, "magnitude", x)
    d = value(s, _dot(s, RV(v), RV(v)))
    return RV(s.emit("math.unary", [d], ty_of(d), fn="sqrt"))


def _normalize(s: Scope, x: Any) -> Any:
    """x / |x| as x * inverse_sqrt(dot(x, x)); the zero vector gives NaN or inf components."""
    v = _float_value(s, "normalize", x)
    d = value(s, _dot(s, RV(v), RV(v)))
    inv = s.emit("math.unary", [d], ty_of(d), fn="inverse_sqrt")
    return RV(s.emit("arith.mul", [v, splat(s, inv, ty_of(v).width)], ty_of(v)))


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


def _uniform_load(s: Scope, x: Any) -> Any:
    """`workgroup_uniform_load(sm[i])`: CubeCL's `workgroup_uniform_load(&sm[i])`. Python passes
    the value, not a reference, so the argument arrives as the item just read — its
    `memory.load`, the last op registered, becomes the barrier-and-load in place (the same
    result value, so a name already bound to it reads the uniform load)."""
    x = read(s, x)
    if isinstance(x, AtomicRef):
        # an atomic item is passed as its reference (`count[0]` of a
        # SharedMemory[Atomic[u32]]): the barrier, then an atomic load (WGSL's atomic
        # overload of workgroupUniformLoad; CubeCL's `workgroup_uniform_load_atomic`)
        ty = x.ptr.type
        if not (isinstance(ty, Pointer) and ty.space == "shared"):
            raise error(s, "workgroup_uniform_load of an atomic that is not in shared memory",
                        "load a SharedMemory[Atomic[u32]] item: a global atomic has no uniform "
                        "load (read it with .load())")
        return RV(s.emit("sync.uniform_load", [x.ptr], ty.pointee.value_ty))
    ops = s.block.ops
    last = ops[-1] if ops else None  # (nothing ran since the read: it can still be moved)
    ptr = last.operands[0].type if last is not None and last.operands else None
    if not (isinstance(x, RV) and last is not None and last.name == "memory.load"
            and last.results[0] is x.v and isinstance(ptr, Pointer) and ptr.space == "shared"):
        raise error(s, "workgroup_uniform_load takes an item of shared memory, read right there",
                    "write workgroup_uniform_load(sm[i]) with `sm` a SharedMemory (not a value "
                    "read earlier, not a buffer or a local)")
    last.name = "sync.uniform_load"
    return x


def _device_properties(s: Scope) -> Any:
    """`device_properties()`: CubeCL's `comptime::device_properties()` — the compiling
    device's `DeviceProperties`, a Python value during expansion (so `props.plane_size_max`
    is a comptime int and a branch on it folds). The kernel is compiled per device, so each
    device's pipeline reads its own; the inspector's preview without a device reads the
    defaults."""
    return s.device_properties


def _no_py(name: str) -> Callable[..., Any]:
    def py(*_: Any) -> Any:
        raise TypeError(hinted(f"`{name}` is a kernel function",
                               "call it inside a @cube kernel; on the host use numpy"))

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
        raise error(s, f"plane_broadcast's lane must be a u32, got {ty_of(lv)}",
                    "cast it: plane_broadcast(x, u32(lane))")
    return RV(s.emit("plane.broadcast", [v, lv], ty_of(v)))


def _plane_scan(kind: str, inclusive: bool) -> Callable[[Scope, Any], Any]:
    def expand(s: Scope, x: Any) -> Any:
        _plane(s)
        v = value(s, x)
        name = f"plane_{'inclusive' if inclusive else 'exclusive'}_{kind}"
        if ty_of(v).elem is Elem.BOOL:
            raise error(s, f"{name} of a bool", f"cast it: {name}(u32(b))")
        return RV(s.emit("plane.scan", [v], ty_of(v), kind=kind, inclusive=inclusive))

    return expand


def _plane_ballot(s: Scope, x: Any) -> Any:
    _plane(s)
    v = value(s, x, BOOL)
    if ty_of(v) != BOOL:
        raise error(s, f"plane_ballot takes one bool, got {ty_of(v)}", "compare first")
    return RV(s.emit("plane.ballot", [v], Ty(Elem.U32, 4)))


def _plane_shuffle(kind: str) -> Callable[[Scope, Any, Any], Any]:
    def expand(s: Scope, x: Any, n: Any) -> Any:
        _plane(s)
        v = value(s, x)
        nv = value(s, n, U32)
        if ty_of(nv) != U32:
            raise error(s, f"plane_shuffle_{kind}'s lane argument must be a u32, got "
                        f"{ty_of(nv)}", "cast it: u32(n)")
        return RV(s.emit("plane.shuffle", [v, nv], ty_of(v), kind=kind))

    return expand


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
workgroup_uniform_load = Intrinsic("workgroup_uniform_load", _uniform_load, None, 1)
device_properties = Intrinsic("device_properties", _device_properties, None, 0)
# CubeCL's name for the atomic form; `workgroup_uniform_load` takes an atomic item too
workgroup_uniform_load_atomic = Intrinsic("workgroup_uniform_load_atomic", _uniform_load, None, 1)
plane_sum = Intrinsic("plane_sum", _plane_reduce("sum"), None, 1)
plane_min = Intrinsic("plane_min", _plane_reduce("min"), None, 1)
plane_max = Intrinsic("plane_max", _plane_reduce("max"), None, 1)
plane_all = Intrinsic("plane_all", _plane_vote("all"), None, 1)
plane_any = Intrinsic("plane_any", _plane_vote("any"), None, 1)
plane_broadcast = Intrinsic("plane_broadcast", _plane_broadcast, None, 2)
plane_elect = Intrinsic("plane_elect", _plane_elect, None, 0)
plane_prod = Intrinsic("plane_prod", _plane_reduce("prod"), None, 1)
plane_inclusive_sum = Intrinsic("plane_inclusive_sum", _plane_scan("sum", True), None, 1)
plane_exclusive_sum = Intrinsic("plane_exclusive_sum", _plane_scan("sum", False), None, 1)
plane_inclusive_prod = Intrinsic("plane_inclusive_prod", _plane_scan("prod", True), None, 1)
plane_exclusive_prod = Intrinsic("plane_exclusive_prod", _plane_scan("prod", False), None, 1)
plane_ballot = Intrinsic("plane_ballot", _plane_ballot, None, 1)
# CubeCL's plane_shuffle(value, lane) reads any lane: WGSL's subgroupShuffle, plane.broadcast
plane_shuffle = Intrinsic("plane_shuffle", _plane_broadcast, None, 2)
plane_shuffle_xor = Intrinsic("plane_shuffle_xor", _plane_shuffle("xor"), None, 2)
plane_shuffle_up = Intrinsic("plane_shuffle_up", _plane_shuffle("up"), None, 2)
plane_shuffle_down = Intrinsic("plane_shuffle_down", _plane_shuffle("down"), None, 2)


def _py_bits(fn: Callable[[int], int]) -> Callable[[int], int]:
    return lambda x: fn(x & 0xFFFFFFFF)


sinh = _unary_intrinsic("sinh", math.sinh)
cosh = _unary_intrinsic("cosh", math.cosh)
asin = _unary_intrinsic("asin", math.asin)
acos = _unary_intrinsic("acos", math.acos)
atan = _unary_intrinsic("atan", math.atan)
asinh = _unary_intrinsic("asinh", math.asinh)
acosh = _unary_intrinsic("acosh", math.acosh)
atanh = _unary_intrinsic("atanh", math.atanh)
trunc = _unary_intrinsic("trunc", lambda x: float(math.trunc(x)))
inverse_sqrt = Intrinsic("inverse_sqrt", _math1("inverse_sqrt"), lambda x: 1.0 / math.sqrt(x), 1)
recip = Intrinsic("recip", _scaled("recip", 1.0), lambda x: 1.0 / x, 1)
exp_m1 = Intrinsic("exp_m1", _exp_m1, math.expm1, 1)
to_degrees = Intrinsic("to_degrees", _scaled("to_degrees", 180.0 / math.pi), math.degrees, 1)
to_radians = Intrinsic("to_radians", _scaled("to_radians", math.pi / 180.0), math.radians, 1)
is_nan = Intrinsic("is_nan", _float_class("is_nan"), math.isnan, 1)
is_inf = Intrinsic("is_inf", _float_class("is_inf"), math.isinf, 1)
atan2 = Intrinsic("atan2", _atan2, math.atan2, 2)
hypot = Intrinsic("hypot", _hypot("hypot"), math.hypot, 2)
rhypot = Intrinsic("rhypot", _hypot("rhypot"), lambda a, b: 1.0 / math.hypot(a, b), 2)
powi = Intrinsic("powi", _powi, lambda x, n: float(x) ** int(n), 2)
count_ones = Intrinsic("count_ones", _bits("count_ones"),
                       _py_bits(lambda x: bin(x).count("1")), 1)
reverse_bits = Intrinsic("reverse_bits", _bits("reverse_bits"), None, 1)
leading_zeros = Intrinsic("leading_zeros", _bits("leading_zeros"),
                          _py_bits(lambda x: 32 - x.bit_length()), 1)
trailing_zeros = Intrinsic("trailing_zeros", _bits("trailing_zeros"),
                           _py_bits(lambda x: (x & -x).bit_length() - 1 if x else 32), 1)
find_first_set = Intrinsic("find_first_set", _bits("find_first_set"),
                           _py_bits(lambda x: (x & -x).bit_length()), 1)
saturating_add = Intrinsic("saturating_add", _saturating("saturating_add"), None, 2)
saturating_sub = Intrinsic("saturating_sub", _saturating("saturating_sub"), None, 2)
mul_hi = Intrinsic("mul_hi", _mul_hi, None, 2)
vector_sum = Intrinsic("vector_sum", _vector_sum, None, 1)
dot = Intrinsic("dot", _dot, None, 2)
magnitude = Intrinsic("magnitude", _magnitude, None, 1)
normalize = Intrinsic("normalize", _normalize, None, 1)

def intrinsic(op: str) -> Intrinsic:
    """The function a kernel calls to use plug-in op `op` (declared with
    `cubelab.ir.plugins.add_op`): `softplus = intrinsic("student.softplus")`, then
    `softplus(x)` inside a `@cube` kernel emits the op. Its arguments become values of one type
    as an operator's do (a literal takes the other side's type, a scalar meeting a vector is
    splatted); the result has that type. With only Python numbers it computes in Python,
    through the op's CPU step (comptime)."""
    plugin = plugin_op(op)
    if plugin is None:
        raise ValueError(hinted(f"no plug-in op {op!r}", f"declare it first with "
                                f"cubelab.ir.plugins.add_op({op!r}, meaning)"))

    def expand(s: Scope, *args: Any) -> Any:
        if plugin_op(op) is None:
            raise error(s, f"`{op}` is no longer an IR op (it was removed)",
                        f"declare it again with cubelab.ir.plugins.add_op({op!r}, meaning)")
        vals = _one_type(s, op, args)
        if ty_of(vals[0]).elem is Elem.BOOL:
            raise error(s, f"`{op}` takes numbers (f32, i32, u32), not bools",
                        "convert the bool first: u32(b)")
        return RV(s.emit(op, vals, ty_of(vals[0])))

    def py(*args: Any) -> Any:
        step = plugin_op(op).cpu if plugin_op(op) is not None else None  # type: ignore[union-attr]
        if step is None:
            raise TypeError(hinted(f"`{op}` has no CPU step yet, so it cannot compute in "
                                   "Python", f"give it one: cubelab.runtime.cpu.cpu_step({op!r}, "
                                   "fn)"))
        return step(*(_np_scalar(a) for a in args)).item()

    return Intrinsic(op.split(".", 1)[1], expand, py, plugin.arity)


def _np_scalar(x: Any) -> Any:
    import numpy as np

    return np.float32(x) if isinstance(x, float) else np.asarray(x)


def _one_type(s: Scope, what: str, args: tuple[Any, ...]) -> list[Any]:
    """The arguments as IR values of one type (`pair`'s rule, for any number of them)."""
    vals = [value(s, args[0], Ty(Elem.F32))] if len(args) == 1 else []
    if len(args) > 1:
        first, rest = pair(s, args[0], args[1], what)
        vals = [first, rest]
        for a in args[2:]:
            widest, v = pair(s, RV(vals[0]), a, what)
            vals = [widest, *vals[1:], v]
        width = max(ty_of(v).width for v in vals)
        vals = [splat(s, v, width) for v in vals]
    return vals


# Python builtins that mean the same inside a kernel (`min(a, b)`, `round(x)`, `pow(x, y)`, ...).
PY_BUILTINS: dict[Any, Intrinsic] = {builtins.abs: abs_, builtins.round: round_,
                                     builtins.pow: pow_}
# `F.sqrt(x)`-style methods on scalar types, and `x.sqrt()` on a runtime value (CubeCL's names)
METHODS: dict[str, Intrinsic] = {
    i.name: i for i in (sqrt, exp, log, sin, cos, tan, tanh, floor, ceil, round_, abs_, erf, pow_,
                        clamp, fma, sinh, cosh, asin, acos, atan, asinh, acosh, atanh, trunc,
                        inverse_sqrt, recip, exp_m1, to_degrees, to_radians, is_nan, is_inf,
                        atan2, hypot, rhypot, powi, count_ones, reverse_bits, leading_zeros,
                        trailing_zeros, find_first_set, saturating_add, saturating_sub, mul_hi,
                        vector_sum, dot, magnitude, normalize)
}
METHODS["powf"] = pow_
# `x ** y`
def power(s: Scope, a: Any, b: Any, at: Pos) -> Any:
    s.at(*at)
    return pow_._expand_call(s, a, b)


__all__ = ["intrinsic", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "erf", "clamp",
           "fma", "select", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
           "trunc", "inverse_sqrt", "recip", "exp_m1", "to_degrees", "to_radians", "is_nan",
           "is_inf", "atan2", "hypot", "rhypot", "powi", "count_ones", "reverse_bits",
           "leading_zeros", "trailing_zeros", "find_first_set", "saturating_add",
           "saturating_sub", "mul_hi", "vector_sum", "dot", "magnitude", "normalize", "sync_cube", "sync_storage", "workgroup_uniform_load", "workgroup_uniform_load_atomic", "device_properties", "plane_sum", "plane_min", "plane_max",
           "plane_all", "plane_any", "plane_broadcast", "plane_elect", "plane_prod",
           "plane_inclusive_sum", "plane_exclusive_sum", "plane_inclusive_prod",
           "plane_exclusive_prod", "plane_ballot", "plane_shuffle", "plane_shuffle_xor",
           "plane_shuffle_up", "plane_shuffle_down"]
