"""Spellings every target shares (WGSL, and the C-family emitter's MSL and CUDA): one table, not
one per target, and the one f32-literal rule.

Only what all write the same way lives here; where they differ (WGSL's vector `&`/`|` for
logical and/or, `select(f, t, c)` against C's `c ? t : f`, C's `fmod` for a float remainder,
every builtin and atomic function name) each target — or C-family dialect — spells it itself.
"""

from __future__ import annotations

import struct

import numpy as np

# IR op -> infix operator
BINARY: dict[str, str] = {
    "arith.add": "+", "arith.sub": "-", "arith.mul": "*", "arith.div": "/",
    "arith.bitand": "&", "arith.bitor": "|", "arith.bitxor": "^", "arith.shl": "<<",
    "arith.shr": ">>",
}
REMAINDER = "%"  # integer remainder (WGSL also uses it for floats; MSL writes fmod)
# arith.cmp's `pred` attribute -> infix operator
COMPARE: dict[str, str] = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
# IR op -> prefix operator
UNARY: dict[str, str] = {"arith.neg": "-", "arith.not": "!", "arith.bitnot": "~"}
# IR op -> the scalar (short-circuit-free in the IR: both sides are already values) operator
LOGICAL: dict[str, str] = {"arith.and": "&&", "arith.or": "||"}
# Math functions spelled the same in both (WGSL's round is half-to-even; MSL calls that rint).
MATH_SAME = ("abs", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil")


def f32_bits(x: float) -> int:
    """The 32-bit pattern of `x` rounded to f32 (how every target spells NaN and infinities)."""
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def f32_digits(x: float) -> str:
    """The one f32-literal rule of every target (WGSL, MSL, CUDA): the fewest decimal digits
    that read back as the same f32 (`0.1`, not the double `0.10000000149011612`), always with a
    point (`2.0`) — numpy's shortest round-trip formatting of the f32 itself. Positional (no
    exponent) for the magnitudes kernels write, scientific (`3.4028235e+38`, `1e-45`) outside
    [1e-5, 1e16), where positional would be a row of zeros. Finite `x` only: a target spells
    NaN and the infinities from `f32_bits`."""
    f = np.float32(x)
    if f != 0 and not 1e-5 <= abs(f) < 1e16:
        return np.format_float_scientific(f, unique=True, trim="0", exp_digits=2)
    return np.format_float_positional(f, unique=True, trim="0")
