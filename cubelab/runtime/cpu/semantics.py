"""WGSL's arithmetic, written once in numpy, so the CPU runtime computes what lavapipe computes.

numpy and WGSL disagree in a handful of places, and every one of them is a trap a student would
otherwise meet as "the CPU runtime gives a different answer":

- integer `/` truncates toward zero in WGSL (numpy's `//` floors); dividing by zero gives the
  dividend, and `i32::MIN / -1` gives `i32::MIN` (no trap, no exception);
- integer `%` takes the dividend's sign; `x % 0` and `i32::MIN % -1` give 0;
- float `%` is `e1 - e2 * trunc(e1 / e2)` (numpy's `%` is floored; `np.fmod` matches);
- integers wrap around (numpy arrays wrap silently; numpy *scalars* warn — the interpreter only
  ever holds arrays, uniform values are arrays of length 1);
- f32 stays f32: every constant is made a float32 array so no operation is promoted to f64;
- float → int conversion saturates (clamped to the target range, NaN → 0), as naga emits it;
  u32 ↔ i32 keeps the bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.ir.types import Elem, Ty

DTYPES: dict[Elem, Any] = {
    Elem.F32: np.float32,
    Elem.I32: np.int32,
    Elem.U32: np.uint32,
    Elem.BOOL: np.bool_,
}

_I32_MIN = np.int32(-(2**31))


def dtype_of(ty: Ty) -> Any:
    return DTYPES[ty.elem]


def constant(value: Any, ty: Ty) -> np.ndarray:
    """A uniform value: an array of one lane (broadcasts against per-lane arrays)."""
    arr = np.array([value], dtype=dtype_of(ty))
    if ty.width > 1:
        arr = np.broadcast_to(arr[:, None], (1, ty.width))
    return arr


def int_div(a: np.ndarray, b: np.ndarray, elem: Elem) -> np.ndarray:
    if elem is Elem.U32 and b.shape == (1,) and b[0] != 0:  # `s // 2`: numpy's is WGSL's
        return a // b
    zero = b == 0
    if elem is Elem.I32:
        zero = zero | ((a == _I32_MIN) & (b == -1))
    safe = np.where(zero, np.ones_like(b), b)
    if elem is Elem.U32:
        q = a // safe
    else:
        # truncation toward zero: divide magnitudes in i64 (|i32::MIN| does not fit in i32)
        a64, b64 = a.astype(np.int64), safe.astype(np.int64)
        q = (np.abs(a64) // np.abs(b64)) * np.sign(a64) * np.sign(b64)
        q = q.astype(np.int32)
    return np.where(zero, a, q).astype(a.dtype, copy=False)


def int_rem(a: np.ndarray, b: np.ndarray, elem: Elem) -> np.ndarray:
    if elem is Elem.U32 and b.shape == (1,) and b[0] != 0:
        return a % b
    zero = b == 0
    if elem is Elem.I32:
        zero = zero | ((a == _I32_MIN) & (b == -1))
    safe = np.where(zero, np.ones_like(b), b)
    if elem is Elem.U32:
        r = a % safe
    else:
        r = np.fmod(a.astype(np.int64), safe.astype(np.int64)).astype(np.int32)
    return np.where(zero, np.zeros_like(r), r).astype(a.dtype, copy=False)


def cast(x: np.ndarray, src: Ty, dst: Ty) -> np.ndarray:
    s, d = src.elem, dst.elem
    if s is d:
        return x
    target = DTYPES[d]
    if d is Elem.BOOL:
        return x != 0
    if s is Elem.F32 and d in (Elem.I32, Elem.U32):
        lo, hi = (-2147483648.0, 2147483520.0) if d is Elem.I32 else (0.0, 4294967040.0)
        clean = np.where(np.isnan(x), np.float32(0), x)
        return np.clip(clean, lo, hi).astype(target)
    return x.astype(target)


def count_ones(x: np.ndarray) -> np.ndarray:
    v: Any = x.astype(np.uint32)
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return ((v * np.uint32(0x01010101)) >> 24).astype(x.dtype)


def reverse_bits(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.uint32)
    out = np.zeros_like(v)
    for i in range(32):
        out |= ((v >> i) & 1) << (31 - i)
    return out.astype(x.dtype)


def leading_zeros(x: np.ndarray) -> np.ndarray:
    """Zero bits above the highest set bit of the 32-bit pattern (0 gives 32), by halving."""
    v: Any = np.asarray(x).astype(np.uint32)
    n: Any = np.zeros(v.shape, np.uint32)
    for shift in (16, 8, 4, 2, 1):
        top_empty = (v >> np.uint32(32 - shift)) == 0
        n = n + np.where(top_empty, np.uint32(shift), np.uint32(0))
        v = np.where(top_empty, v << np.uint32(shift), v)
    n = n + np.where(v == 0, np.uint32(1), np.uint32(0))
    return n.astype(np.asarray(x).dtype)


def trailing_zeros(x: np.ndarray) -> np.ndarray:
    """Zero bits below the lowest set bit (0 gives 32): 31 - clz of the lowest set bit alone."""
    v: Any = np.asarray(x).astype(np.uint32)
    lowest = v & (~v + np.uint32(1))
    n = np.where(v == 0, np.uint32(32), np.uint32(31) - leading_zeros(lowest).astype(np.uint32))
    return n.astype(np.asarray(x).dtype)


# math.unary fn -> its numpy function: keyed by exactly `ir.core.MATH_UNARY_FNS` (no key
# unreachable, none missing: tests/test_cuda.py checks every target's table and this one).
MATH: dict[str, Any] = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "trunc": np.trunc, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh,
    "inverse_sqrt": lambda x: np.float32(1) / np.sqrt(x),
    "count_ones": count_ones, "reverse_bits": reverse_bits, "leading_zeros": leading_zeros,
    "trailing_zeros": trailing_zeros, "is_nan": np.isnan, "is_inf": np.isinf,
}


def shift_amount(b: np.ndarray) -> np.ndarray:
    """WGSL masks a runtime shift amount to the bit width (e2 % 32)."""
    return (b.astype(np.uint32) & np.uint32(31)).astype(np.uint32)
