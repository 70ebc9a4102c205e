"""Operator spellings the two C-family targets (WGSL, MSL) share: one table, not one per target.

Only what both write the same way lives here; where they differ (WGSL's vector `&`/`|` for
logical and/or, `select(f, t, c)` against MSL's `c ? t : f`, MSL's `fmod` for a float
remainder, every builtin and atomic function name) each target spells it itself.
"""

from __future__ import annotations

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
