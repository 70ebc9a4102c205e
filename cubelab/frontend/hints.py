"""What to write instead, when a kernel calls a plain Python function on a runtime value.

"Decorate it with @cube" is the right fix only for the student's own helper. For the functions a
student reaches for out of habit it is wrong: `print` has no GPU (the kernel's way is
`debug_print`), `len(x)` is `x.len()`, numpy and `math` functions are the prelude's math library
(`sqrt(x)`, `F.sqrt(x)`), `int`/`float` are the kernel's casts. One table here, so the hint a
student gets names the function that exists.
"""

from __future__ import annotations

import builtins
from typing import Any

# what a kernel writes instead of a Python builtin (keys: builtin names)
_BUILTINS = {
    "print": "a kernel has no `print`; use `debug_print(\"x = {}\", x)` (from the prelude, "
             "one line per unit; docs/cpu_runtime.md)",
    "len": "a buffer's length inside a kernel is a method: `x.len()` (a u32)",
    "int": "cast with the kernel's types: `i32(x)` or `u32(x)`",
    "float": "cast with the kernel's types: `f32(x)` (or `F.cast_from(x)` for a generic F)",
    "bool": "compare instead (`x != 0`), or cast with `bool_(x)`",
    "sum": "add in a loop: `acc += x[i]` for i in range(...)",
    "range": "write `for i in range(...):`",
}

# the prelude's math library, for numpy / math / builtins functions of the same name
_MATH = ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "erf", "floor", "ceil", "clamp",
         "fma", "abs", "min", "max", "pow", "round")
_ALIASES = {"fabs": "abs", "absolute": "abs", "minimum": "min", "maximum": "max",
            "power": "pow", "clip": "clamp", "amin": "min", "amax": "max"}


def plain_call_hint(fn: Any) -> str:
    """The hint for `fn(runtime value)` inside a kernel, where `fn` is a plain Python callable."""
    name = getattr(fn, "__name__", "") or ""
    if getattr(builtins, name, None) is fn and name in _BUILTINS:
        return _BUILTINS[name]
    module = (getattr(fn, "__module__", None) or type(fn).__module__ or "").split(".")[0]
    if module in ("numpy", "math", "cmath") or type(fn).__name__ == "ufunc":
        mapped = _ALIASES.get(name, name)
        if mapped in _MATH:
            return (f"numpy/math functions run on the CPU; in a kernel write `{mapped}(x)` (from "
                    f"the prelude) or `F.{mapped}(x)` for a generic float F")
        return ("numpy/math functions run on the CPU; the kernel's math library is "
                + ", ".join(f"`{m}`" for m in _MATH) + " (from the prelude)")
    return ("decorate it with @cube to call it inside a kernel (it is then inlined), or pass "
            "only comptime values")


def literal_range_hint(value: int, elem: str) -> str:
    """The hint for an integer literal that does not fit the type the expression gave it."""
    if elem == "u32" and value < 0:
        return ("u32 has no negative values: subtract a positive literal instead (`n - 1`), or "
                "make the other operand i32 (`i32(n)`)")
    limits = {"u32": "0..4294967295", "i32": "-2147483648..2147483647"}
    return (f"{elem} holds {limits.get(elem, 'less')}; the literal took its type from the other "
            "operand — use a smaller value, or f32 for large magnitudes")
