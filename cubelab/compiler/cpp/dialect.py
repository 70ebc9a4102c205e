"""What a C-family dialect says: the words that differ between Metal, CUDA (and HIP, one day).

Contract: a `Dialect` is an object the emitter (`emitter.py`) is *given*; it holds only spellings
and the kernel's frame, never op logic. Its fields and methods, each named for the question the
emitter asks:

- types: `scalar` (IR element → C type), `atomic_type`, `align` (the vector structs' alignment
  keyword), `space` (IR address space → pointer qualifier), `shared_decl` (how a cube-shared array
  is declared);
- values: `literal` (bool, int, and f32 through `compiler/spelling.py`'s one f32 rule; `float_bits`
  spells NaN and infinities from their bits), `cast`, `bitcast`, `nonzero` (an info word as a bool);
- arithmetic: `min_max`, `float_rem`, `fma`, `math_unary` (from the `math` table, one entry per
  `ir.core.MATH_UNARY_FNS`), `math_binary`, `defined_integer_edges` (spell out the IR's results for
  x / 0, i32 MIN / -1 and i32 overflow, which C++ leaves undefined — a dialect whose source runs
  must);
- the device: `builtin` (an IR builtin as an expression), `unit_index`, `barrier`, the atomics,
  the plane ops, `loop_guard` (whether guarded loops count iterations: a dialect whose source
  runs must, `ir/passes.py` LoopGuard);
- the frame: `head(e, kernel)` — every line before the kernel's body (includes, typedefs, vector
  structs, the info struct, the signature, the info references) — and `notices` (what the target
  leaves out, told once per compile).

Adding a C-family target is one module with a `Dialect` subclass and a `Target` wrapping it
(`metal.py`, `cuda.py`), plus one line in `compiler/targets.py`.

Trap: the base class's defaults are C++'s own spellings; a dialect overrides what its compiler
spells differently, and a default that a dialect's compiler would reject is a bug the dialect's
compile test (the g++ shims in `tests/`) catches, not a silent difference.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping

from cubelab.compiler.spelling import f32_bits, f32_digits
from cubelab.ir.core import MATH_UNARY_FNS, KernelDefinition, Op
from cubelab.ir.types import Elem

if TYPE_CHECKING:
    from cubelab.compiler.cpp.emitter import CEmitter

# The fixed-width typedefs both dialects print first, as CubeCL's C++ backend does.
TYPEDEFS = (
    "typedef unsigned int uint32_t;",
    "typedef unsigned char uint8_t;",
    "typedef unsigned short uint16_t;",
    "typedef unsigned {long} int uint64_t;",
    "typedef signed char int8_t;",
    "typedef signed short int16_t;",
    "typedef signed int int32_t;",
    "typedef signed {long} int int64_t;",
)


class Dialect:
    name = ""  # the target's name in compiler/targets.py TARGETS ("msl", "cuda")
    label = ""  # for messages ("MSL", "CUDA C++")
    scalar: Mapping[Elem, str] = {Elem.F32: "float", Elem.I32: "int32_t", Elem.U32: "uint32_t",
                                  Elem.BOOL: "bool"}
    align = "alignas({})"
    space: Mapping[str, str] = {"global": "", "shared": "", "function": ""}
    shared_decl = ""
    nonzero = " != 0"
    defined_integer_edges = False
    loop_guard = False
    # whether accesses whose index may be out of range are tested (OPS' `memory.index` rule:
    # a load gives 0, a store or atomic is dropped; `ir/analysis.py` bounds_tests)
    bounds_tests = False
    float_rem = "fmod"
    fma = "fma"
    # math.unary fn -> a format string of the operand ("sqrt({})"); every MATH_UNARY_FNS entry
    math: Mapping[str, str] = {}
    math_binary: Mapping[str, str] = {}
    shared_zero_comment = ""

    # -- values -------------------------------------------------------------------------------
    def float_bits(self, bits: int) -> str:
        """An f32 given by its bit pattern (NaN, the infinities)."""
        raise NotImplementedError

    def literal(self, value: object, elem: Elem) -> str:
        if elem is Elem.BOOL:
            return "true" if value else "false"
        if elem is Elem.F32:
            f = float(value)  # type: ignore[arg-type]
            return f"{f32_digits(f)}f" if math.isfinite(f) else self.float_bits(f32_bits(f))
        iv = int(value)  # type: ignore[call-overload]
        if elem is Elem.U32:
            iv &= 0xFFFFFFFF
            return str(iv) if iv < 2**31 else f"{iv}u"
        return "(-2147483647 - 1)" if iv == -(2**31) else str(iv)

    def cast(self, source: Elem, target: Elem) -> str:
        """A format string converting one scalar (`{}`) to `target` (the IR's arith.cast)."""
        return f"{self.scalar[target]}({{}})"

    def bitcast(self, source: Elem, target: Elem) -> str:
        """A format string reading one scalar's 32 bits (`{}`) as `target`."""
        raise NotImplementedError

    # -- arithmetic ---------------------------------------------------------------------------
    def min_max(self, kind: str, elem: Elem) -> str:
        return kind

    def math_unary(self, fn: str, elem: Elem) -> str | None:
        """The format string of math.unary `fn` on `elem` values, None if it has none."""
        return self.math.get(fn)

    # -- the device ---------------------------------------------------------------------------
    def builtin(self, e: "CEmitter", name: str) -> str | None:
        """IR builtin `name` (`workgroup_id_x`, ...) as a u32 expression."""
        raise NotImplementedError

    def unit_index(self, e: "CEmitter") -> str:
        """The unit's index in its cube (the shared-memory prologue strides by it)."""
        raise NotImplementedError

    def barrier(self, kind: str) -> str:
        """The statement for sync.cube (`kind` "cube") or sync.storage ("storage")."""
        raise NotImplementedError

    def atomic_type(self, scalar: str) -> str:
        return scalar

    def atomic_load(self, address: str, ty: str) -> str:
        raise NotImplementedError

    def atomic_store(self, address: str, value: str) -> str:
        raise NotImplementedError

    def atomic_rmw(self, kind: str, address: str, value: str) -> str:
        raise NotImplementedError

    def atomic_cas(self, e: "CEmitter", op: Op, address: str, expected: str, new: str) -> None:
        """Emit atomic.cas: `op`'s result is the old value."""
        raise NotImplementedError

    # plane ops: format strings of the operand(s), `{}`
    def plane_reduce(self, kind: str) -> str:
        raise NotImplementedError

    def plane_vote(self, kind: str) -> str:
        raise NotImplementedError

    plane_broadcast = ""  # a format string of (value, lane)

    def plane_scan(self, kind: str, inclusive: bool) -> str:
        raise NotImplementedError

    def plane_ballot(self, e: "CEmitter", op: Op) -> None:
        raise NotImplementedError

    def plane_shuffle(self, e: "CEmitter", kind: str) -> str:
        """A format string of (value, n) for plane.shuffle `kind` (xor, up, down)."""
        raise NotImplementedError

    def plane_elect(self, e: "CEmitter") -> str:
        raise NotImplementedError

    # -- the frame ----------------------------------------------------------------------------
    def head(self, e: "CEmitter", kernel: KernelDefinition) -> list[str]:
        """Every line before the body: includes, typedefs, structs, signature, info refs."""
        raise NotImplementedError

    def notices(self, kernel: KernelDefinition, e: "CEmitter") -> tuple[str, ...]:
        """What this target left out of the kernel, one sentence each (see CompiledSource)."""
        return ()



def check_math_table(dialect: Dialect) -> list[str]:
    """The math.unary functions `dialect` has no spelling for (tests assert none): its table
    is keyed by exactly the IR's `MATH_UNARY_FNS`, so no key is unreachable."""
    return [fn for fn in MATH_UNARY_FNS if dialect.math_unary(fn, Elem.F32) is None]
