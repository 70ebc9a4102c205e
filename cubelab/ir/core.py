"""SSA values, operations, blocks and the kernel definition.

An `Op` has a name (`arith.add`, `memory.index`, `scf.if`, ...), operand values, result values,
attributes and, for structured control flow, regions (each a `Block`). Every op remembers the
Python source location it was registered from, so errors, generated-source line maps and the
CPU runtime's step-through can all point back at the kernel line a student wrote.

The op vocabulary is listed in `OPS` below; targets (`compiler/wgsl.py`, the CPU runtime, ...)
implement it op by op, and a pass rewrites blocks in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from cubelab.errors import location
from cubelab.ir.types import Type

# name -> meaning; the printer and the docs use it, every target (WGSL, MSL, the CPU runtime) must
# implement every op. Names and attribute names are stable: targets match on them.
#
# Conventions that hold for every op unless its line says otherwise:
# - "T" is the result type: a scalar `Ty(elem)` or a vector `Ty(elem, width)`; elementwise ops
#   take operands of the result's type (the frontend splats scalars and casts literals first).
# - Integer arithmetic wraps modulo 2**32 (two's complement for i32), as in WGSL and Rust's
#   wrapping ops; float arithmetic is IEEE-754 f32 (no fast-math promises beyond WGSL's).
# - Bools are `Ty(BOOL)`; in memory (info block) they travel as u32 0/1.
# - A pointer is `Pointer(pointee, space)`, space in "global" (storage buffer), "function"
#   (a unit's private local), "shared" (workgroup memory of one cube).
OPS: dict[str, str] = {
    # -- arithmetic ---------------------------------------------------------------------------
    "arith.constant": "a literal of the result type (attr value: Python bool/int/float); always a "
                      "scalar (vectors are made with vector.splat)",
    "arith.add": "lhs + rhs (ints wrap mod 2**32)",
    "arith.sub": "lhs - rhs (ints wrap mod 2**32)",
    "arith.mul": "lhs * rhs (ints wrap mod 2**32)",
    "arith.div": "lhs / rhs. Floats: IEEE division. Ints: truncates toward zero (Python's `//` "
                 "in kernels lowers here, NOT floored); rhs == 0 gives lhs; i32 MIN / -1 gives "
                 "MIN (WGSL's defined results, no trap)",
    "arith.rem": "remainder with the sign of the dividend: lhs - trunc(lhs / rhs) * rhs (ints and "
                 "floats alike, like C's fmod, NOT Python's floored %); int rhs == 0 gives 0; "
                 "i32 MIN % -1 gives 0",
    "arith.min": "min(lhs, rhs); floats: if one operand is NaN the result is either operand "
                 "(WGSL leaves it open; tests avoid NaN)",
    "arith.max": "max(lhs, rhs); NaN as arith.min",
    "arith.cmp": "comparison (attr pred: lt le gt ge eq ne) of two values of one type; result is "
                 "bool of the operands' width (a vector compare gives a vector of bools); "
                 "IEEE: any compare with NaN is false except ne",
    "arith.and": "logical and of bools (both operands are always evaluated: no short circuit)",
    "arith.or": "logical or of bools (no short circuit)",
    "arith.not": "logical not of a bool",
    "arith.neg": "-x for f32 and i32 (i32 MIN negates to MIN); never on u32",
    "arith.cast": "conversion to the result type (same width). f32->i32/u32: truncate toward "
                  "zero, saturating at the target's bounds, NaN -> 0. i32<->u32: same bits "
                  "(two's complement). int/f32 -> bool: x != 0. bool -> number: 0 or 1. "
                  "int -> f32: nearest f32",
    "arith.bitcast": "the operand's 32-bit pattern read as the result type (f32, i32, u32; "
                     "same width): CubeCL's reinterpret, WGSL bitcast, MSL as_type",
    "arith.select": "select(cond, a, b): a where cond is true else b, elementwise; cond is a "
                    "bool scalar (picks whole values) or a bool vector of the operands' width; "
                    "operands: [cond, a, b]; both a and b are always evaluated",
    "arith.bitand": "bitwise and of two ints (i32 or u32, scalar or vector)",
    "arith.bitor": "bitwise or of two ints",
    "arith.bitxor": "bitwise xor of two ints",
    "arith.bitnot": "bitwise not of an int (~x)",
    "arith.shl": "lhs << rhs; lhs i32/u32, rhs u32 of the same width; only the low 5 bits of rhs "
                 "are used (shift amount rhs % 32, as WGSL for runtime amounts); bits shifted "
                 "out are lost",
    "arith.shr": "lhs >> rhs; rhs u32 as arith.shl (amount rhs % 32); u32: logical (zero fill), "
                 "i32: arithmetic (sign fill)",
    # -- math ---------------------------------------------------------------------------------
    "math.unary": "elementwise function (attr fn) of scalars/vectors, result of the operand's "
                  "type unless said: on f32: sqrt exp log sin cos tan tanh sinh cosh asin acos "
                  "atan asinh acosh atanh floor ceil round (half to even) trunc inverse_sqrt "
                  "(1/sqrt(x)); abs (also on i32: abs(MIN) = MIN, wrapping); on i32/u32 (bit "
                  "functions of the 32-bit pattern): count_ones reverse_bits leading_zeros "
                  "trailing_zeros (0 gives 32); f32 -> bool of the same width: is_nan is_inf. "
                  "sqrt/log of negatives and asin/acos outside [-1, 1] give NaN. erf is NOT an "
                  "op: the frontend lowers it to a polynomial (docs/language.md)",
    "math.binary": "elementwise function (attr fn) of two f32 values: pow (x**y; NaN for x < 0, "
                   "as WGSL's exp2(y*log2(x)); the frontend gives CubeCL's answer for a "
                   "negative base with an integral exponent), atan2 (atan2(y, x), operands "
                   "[y, x])",
    "math.fma": "fma(a, b, c) = a * b + c for f32 scalars/vectors (operands [a, b, c]); may or "
                "may not round once",
    # -- vectors ------------------------------------------------------------------------------
    "vector.splat": "a vector whose every component is the scalar operand",
    "vector.insert": "operands [vector, scalar of its element type]: the vector with component "
                     "`index` (attr, a Python int < width) replaced by the scalar (a new value; "
                     "the operand is unchanged)",
    "vector.extract": "component `index` (attr, a Python int < width) of a vector operand",
    "vector.extract_at": "operands [vector, index u32]: the component at a runtime index "
                         "(CubeCL's extract_dynamic); an index >= width reads the last "
                         "component (clamped, on every target)",
    "vector.insert_at": "operands [vector, index u32, scalar of its element type]: the vector "
                        "with the component at a runtime index replaced (CubeCL's "
                        "insert_dynamic); an index >= width leaves it unchanged",
    # -- kernel inputs ------------------------------------------------------------------------
    "builtin.read": "a primitive builtin u32 (attr name: workgroup_id_x/y/z, num_workgroups_x/y/z, "
                    "local_invocation_index, local_invocation_id_x/y/z, and with the subgroup "
                    "feature: subgroup_size, subgroup_invocation_id)",
    "info.scalar": "a scalar argument read from the info block (attr elem, index)",
    "buffer.len": "the items a global buffer's (or tensor's) handle holds, the length every "
                  "bounds clamp uses: info static_meta[binding index]",
    "tensor.rank": "the rank of a tensor argument (operand: its buffer value), u32 from the info "
                   "block (see compiler/info.py: static_meta after the lengths holds, per tensor, "
                   "rank, offset into dynamic_meta, logical length)",
    "tensor.len": "the logical length of a tensor argument (operand: its buffer value): the "
                  "product of its shape as a u32 (1 for rank 0), from the info block's "
                  "static_meta (the word after the tensor's offset); CubeCL's Tensor::len. May "
                  "differ from buffer.len either way (broadcast, strided or padded views)",
    "tensor.shape": "shape[axis] of a tensor argument; operands [tensor, axis u32]; "
                    "dynamic_meta[offset + axis]; axis >= rank is unspecified",
    "tensor.stride": "stride[axis] (in items) of a tensor argument; operands [tensor, axis u32]; "
                     "dynamic_meta[offset + rank + axis]; axis >= rank is unspecified",
    # -- memory -------------------------------------------------------------------------------
    "memory.index": "a pointer to item `index` (u32) of the array behind `base` (a pointer to an "
                    "Array or RuntimeArray in any space; attr checked: CheckedIo clamps global "
                    "ones under checked_io='fixed'). An index still out of range (>= the "
                    "buffer's buffer.len, or the array's length; any u32, 2**30 and past "
                    "included) makes every access through the pointer robust: a load "
                    "(memory.load, atomic.load, sync.uniform_load) gives zero, a store or atomic "
                    "is dropped (an atomic's old value is zero). Every target spells the test "
                    "out where ir.analysis.bounds_tests asks for one, never trusting a driver "
                    "(lavapipe wraps byte offsets at 2**32, naga clamps fixed-size arrays, CUDA "
                    "faults)",
    "memory.load": "the value behind a pointer (not an atomic one: use atomic.load)",
    "memory.store": "store a value behind a pointer (operands [pointer, value])",
    "var.declare": "a unit-private local (function space); result is a pointer to its pointee: "
                   "a scalar/vector, or Array(item, n) for a local `Array[T](n)`. Zero-"
                   "initialised (WGSL function vars are)",
    "shared.declare": "a cube-shared array: result Pointer(Array(item, length), 'shared') "
                      "(attr name: a stable identifier). One per kernel, declared at the top; "
                      "every unit of a cube sees the same storage; contents at kernel start are "
                      "zero (WGSL zero-initialises workgroup memory)",
    # -- synchronisation ----------------------------------------------------------------------
    "sync.cube": "barrier for all units of a cube (WGSL workgroupBarrier): every unit waits until "
                 "all reach it, and shared-memory writes before it are visible to every unit "
                 "after it. Must be reached by all units of the cube (uniform control flow)",
    "sync.storage": "storage barrier (WGSL storageBarrier): as sync.cube, for global-buffer "
                    "writes of units of the same cube",
    "sync.uniform_load": "a sync.cube, then the value behind operand 0 (a pointer to a shared "
                         "scalar, vector or atomic: an atomic is read as atomic.load does), "
                         "which every unit of the cube gets "
                         "the same (WGSL workgroupUniformLoad, so the result may gate control "
                         "flow that holds barriers). Reached by all units (uniform control "
                         "flow), with the same pointer in every unit",
    # -- atomics ------------------------------------------------------------------------------
    "atomic.load": "atomically read the value behind a pointer to Atomic(u32|i32)",
    "atomic.store": "atomically write (operands [pointer, value]) behind a pointer to Atomic",
    "atomic.rmw": "atomic read-modify-write (attr kind: add sub min max and or xor swap) of the "
                  "value behind a pointer to Atomic(elem) with the operand value; result is the "
                  "OLD value; add/sub wrap; min/max compare as the elem (signed for i32)",
    "atomic.cas": "compare-exchange-weak: operands [pointer, expected, new]; if the current value "
                  "equals `expected` it becomes `new`; result is the OLD value (the exchange "
                  "happened iff old == expected; WGSL may fail spuriously, the CPU runtime "
                  "never does)",
    # -- plane (subgroup) ops: only with the adapter's `subgroup` feature ---------------------
    "plane.reduce": "reduction over the active units of the unit's plane (subgroup) (attr kind: "
                    "sum prod min max) of an f32/i32/u32 value; every active unit gets the result",
    "plane.vote": "plane-wide vote on a bool (attr kind: all any); every active unit gets it",
    "plane.broadcast": "operands [value, lane u32]: the value held by unit `lane` of the plane "
                       "(WGSL subgroupShuffle); lane must be an active unit",
    "plane.scan": "prefix over the active units of the plane in lane order (attr kind: sum prod; "
                  "attr inclusive: bool) of an f32/i32/u32 scalar or vector: inclusive gives "
                  "x[0] (+|*) ... (+|*) x[lane], exclusive stops before the unit's own value "
                  "(lane 0 gets 0 for sum, 1 for prod)",
    "plane.ballot": "operand a bool: a vec4<u32> whose bit k (of word k / 32) is set iff plane "
                    "lane k is active and its bool is true; every active unit gets the same mask",
    "plane.shuffle": "operands [value, u32 n]: the value held by plane lane (attr kind) xor: "
                     "lane ^ n, up: lane - n, down: lane + n; a source lane outside the plane gives "
                     "the unit's own value (CUDA's and Metal's rule; WGSL tests the range); an "
                     "inactive source lane is undefined (the CPU runtime gives the own value)",
    "plane.elect": "bool: true for exactly one active unit of the plane (the lowest lane)",
    # -- structured control flow --------------------------------------------------------------
    "scf.if": "if cond (one bool) then region 0 else region 1 (either may be empty)",
    "scf.switch": "switch on one i32/u32 scalar (operand 0): attr cases is a tuple with one "
                  "tuple of distinct int values per case; region k runs when the selector "
                  "equals one of cases[k] (no value appears in two cases), the last region "
                  "(the default, possibly empty) when it equals none; no fall-through",
    "scf.for": "for i in range(start, end, step): region 0 (block argument i); operands "
               "[start, end, step] of one int type, step > 0; the bounds are read once; "
               "iterates while i < end",
    "scf.while": "loop: run region 0 (it ends with scf.condition %c); if c is false, leave; "
                 "else run region 1 and repeat. break/continue/return are NOT ops: the frontend "
                 "lowers them to bool flag locals and guards (see docs/language.md)",
    "scf.condition": "terminator of scf.while's region 0: operand is the bool that continues "
                     "the loop",
    # -- debugging ----------------------------------------------------------------------------
    "debug.print": "print one line per active unit (attr format: a str.format template with "
                   "positional fields; attr args: one entry per field, None = the next operand "
                   "(a runtime value), else a Python constant). Runs on the CPU runtime only: "
                   "WGSL leaves it out (a comment, and the compiled source's notice), MSL shows "
                   "it as a comment",
}

# The `fn` attributes math.unary and math.binary accept (their meaning is in OPS' text above);
# every target and the CPU runtime implement each (tests/test_msl.py, test_cuda.py, test_wgsl.py,
# test_cpu_ops.py).
MATH_UNARY_FNS = ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin",
                  "acos", "atan", "asinh", "acosh", "atanh", "floor", "ceil", "round", "trunc",
                  "inverse_sqrt", "abs", "count_ones", "reverse_bits", "leading_zeros",
                  "trailing_zeros", "is_nan", "is_inf")
MATH_BINARY_FNS = ("pow", "atan2")


@dataclass(eq=False, slots=True)
class Value:
    """An SSA value: defined once, by one op or as a block/kernel argument."""

    id: int
    type: Type
    hint: str = ""
    # "v12": read for every operand by the printer and the emitters, so made once
    name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.name = f"v{self.id}"

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclass(frozen=True, slots=True)
class Loc:
    """Where in the kernel's Python source an op came from (1-based line, 0-based column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return location(self.file, self.line, self.col + 1)  # "Cell In[7], line 3:9" in Jupyter


@dataclass(eq=False, slots=True)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list["Block"] = field(default_factory=list)
    loc: Loc | None = None

    @property
    def result(self) -> Value:
        (r,) = self.results
        return r

    def walk(self) -> Iterator["Op"]:
        """This op, then every op of its regions, in program order."""
        yield self
        if self.regions:
            yield from _walk([op for region in self.regions for op in region.ops])


@dataclass(eq=False, slots=True)
class Block:
    ops: list[Op] = field(default_factory=list)
    args: list[Value] = field(default_factory=list)

    def walk(self) -> Iterator[Op]:
        return _walk(self.ops)


def _walk(ops: list[Op]) -> Iterator[Op]:
    """Every op of `ops` and of their regions, in program order, without a generator per
    nesting level (a recursive walk cost one frame per level for every op it yielded)."""
    stack = [iter(ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        for region in reversed(op.regions):
            stack.append(iter(region.ops))


@dataclass(slots=True)
class BufferParam:
    """A global buffer argument: binding `index`, items of type `item`, declared IO."""

    name: str
    index: int
    item: Type
    writable: bool
    value: Value
    # A `Tensor[T]` / `TensorMut[T]` argument: its shape and strides live in the info block's
    # dynamic metadata (compiler/info.py); otherwise a plain slice.
    tensor: bool = False


@dataclass(slots=True)
class ScalarParam:
    """A scalar argument; lives at `info.scalars_<elem>[index]`."""

    name: str
    elem: str
    index: int


@dataclass(slots=True)
class KernelDefinition:
    """What `Kernel.define()` returns: the IR of one KernelId, ready for passes and codegen."""

    name: str  # the Python function's name ("saxpy")
    entry: str  # the target entry point ("saxpy_f_f32_n_4_daf77f4d")
    cube_dim: tuple[int, int, int]
    buffers: list[BufferParam]
    scalars: list[ScalarParam]
    body: Block
    source_file: str = "<unknown>"
    source_lines: list[str] = field(default_factory=list)
    first_line: int = 1
    # Adapter features the kernel needs (e.g. "subgroup" for plane ops); a runtime without one
    # must refuse the launch with a clear error.
    required_features: set[str] = field(default_factory=set)
    # Set by the `LoopGuard` pass (checked launches): the most loop iterations one unit may run,
    # all loops together, and the guarded loops in the order of their `guard` attribute.
    loop_budget: int | None = None
    guarded_loops: list["Op"] = field(default_factory=list)
    # `t[i, j, ...]` (two or more indices) on a tensor argument: its value id -> {number of
    # indices: the first place it is written}. A launch whose TensorArg has another rank is
    # refused (`runtime/server.py` `launch_refusal`): the flat index would silently read
    # another item.
    tensor_indexing: dict[int, dict[int, Loc | None]] = field(default_factory=dict)

    def tensors(self) -> list[BufferParam]:
        return [b for b in self.buffers if b.tensor]

    def scalar_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.scalars:
            counts[s.elem] = counts.get(s.elem, 0) + 1
        return counts

    def walk(self) -> Iterator[Op]:
        return self.body.walk()

    def blocks(self) -> Iterator["Block"]:
        """Every block — the body, then its ops' regions — in program order, a block before the
        blocks nested in it: where a
        pass inserts, moves or removes ops (each block's `ops` is a plain list it may rebuild;
        an op keeps its result values wherever it goes, so their uses still find them)."""
        stack = [self.body]
        while stack:
            block = stack.pop()
            yield block
            stack.extend(reversed([r for op in block.ops for r in op.regions]))
