"""WGSL code generation: the source wgpu validates and runs.

Layout follows the seed's MSL, translated to WebGPU:

- one `var<storage, read_write>` binding per buffer argument, named after its IR value — read-only
  ones (`Slice`, `Tensor`) too, as CubeCL does on native wgpu: buffers are slices of pooled
  pages, WebGPU refuses one page bound both read-only and writable in one dispatch, and the
  bind-group layout must match the declaration (docs/runtime.md, "Memory"). The comment after
  each binding says which ones the kernel only reads;
- one `info` storage binding after them, an `info_st` struct of scalar groups then `static_meta`;
- the entry `@compute @workgroup_size(x, y, z) fn <entry>(...)` takes the primitive builtins
  (`workgroup_id`, `num_workgroups`, `local_invocation_index`, `local_invocation_id`); derived
  positions such as ABSOLUTE_POS are arithmetic already in the IR, as in the seed (its `v88`);
- every SSA value is a typed `let vN: T = ...;`, pointers are `let vN = &v2[v88];` like the seed's
  `device float_4 const* const v18 = &v2[v88];`, mutable locals are `var lN: T;`;
- shared memory is a module-scope `var<workgroup> sN: array<T, n>;`;
- `scf.while` is `loop { <cond ops> if !c { break; } <body> }` — the only `break` this target
  ever writes: the frontend turned the kernel's break/continue/return into flags and guards, so
  the output stays structured.

The traps: naga (wgpu 0.32) rejects `enable subgroups;` and has no `subgroupElect`, so plane ops
are emitted without the directive and elect is `id == subgroupBroadcastFirst(id)`. WGSL shift
amounts must be u32 and are taken mod 32 (the IR's documented rule). `abs` of a u32 is the value.
Shared memory is zeroed by the kernel itself (`_zero_shared`): lavapipe, trusted by wgpu to do
it, returned the previous dispatch's words.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Callable

from cubelab.compiler.base import (CodegenError, CompiledSource, InfoReads, InfoSlots,
                                   LowersPluginOps, lowerings, plugin_spelling)
from cubelab.compiler.spelling import (BINARY, COMPARE, LOGICAL, MATH_SAME, REMAINDER, UNARY,
                                       f32_bits, f32_digits)
from cubelab.compiler.info import info_layout
from cubelab.ir.analysis import bounds_tests
from cubelab.ir.core import Block, KernelDefinition, Loc, Op
from cubelab.ir.passes import GUARD_BUDGET, GUARD_DRIVER
from cubelab.ir.types import F32, U32, Array, Atomic, Pointer, RuntimeArray, Ty

_BUILTINS = {
    "workgroup_id_x": "workgroup_id.x",
    "workgroup_id_y": "workgroup_id.y",
    "workgroup_id_z": "workgroup_id.z",
    "num_workgroups_x": "num_workgroups.x",
    "num_workgroups_y": "num_workgroups.y",
    "num_workgroups_z": "num_workgroups.z",
    "local_invocation_index": "local_invocation_index",
    "local_invocation_id_x": "local_invocation_id.x",
    "local_invocation_id_y": "local_invocation_id.y",
    "local_invocation_id_z": "local_invocation_id.z",
    "subgroup_size": "subgroup_size",
    "subgroup_invocation_id": "subgroup_invocation_id",
}
# math.unary fn -> WGSL builtin (WGSL's round is half-to-even, the IR's rule); is_nan/is_inf
# are bit tests (below): WGSL has no isnan, and `x != x` may be folded away.
_MATH = {**{fn: fn for fn in MATH_SAME}, "round": "round", "trunc": "trunc", "sinh": "sinh",
         "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan", "asinh": "asinh",
         "acosh": "acosh", "atanh": "atanh", "inverse_sqrt": "inverseSqrt",
         "count_ones": "countOneBits", "reverse_bits": "reverseBits",
         "leading_zeros": "countLeadingZeros", "trailing_zeros": "countTrailingZeros"}
_FLOAT_CLASS = {"is_nan": ">", "is_inf": "=="}  # |bits| vs the infinity pattern 0x7f800000
_RMW = {"add": "atomicAdd", "sub": "atomicSub", "min": "atomicMin", "max": "atomicMax",
        "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor", "swap": "atomicExchange"}
_PLANE_REDUCE = {"sum": "subgroupAdd", "min": "subgroupMin", "max": "subgroupMax",
                 "prod": "subgroupMul"}
_PLANE_VOTE = {"all": "subgroupAll", "any": "subgroupAny"}
_VECTOR_LOGICAL = {"arith.and": "&", "arith.or": "|"}

# f32 `/` and `%` with IEEE-754's (and the CPU runtime's) edges, as module-scope functions. WGSL
# lets a compiler assume floats are finite, and lavapipe does: a divisor it can prove zero — a
# literal, a splat of one, a fresh local Array's item — made `x / 0.0` undefined and the store of
# its value vanished, and `x % 0.0` folded to `x`. Every test here is on the bits, which no
# finite-math assumption can fold: x / ±0 is ±inf by the signs (NaN for 0 / 0 and NaN / 0);
# x % y is NaN for y = ±0, an infinite x or a NaN, and x for an infinite y (C's fmod).
_FLOAT_HELPERS = {
    "div": """fn {name}(x: {t}, y: {t}) -> {t} {{ // x / y, IEEE's edges spelled out
    let bx = bitcast<{u}>(x);
    let by = bitcast<{u}>(y);
    let inf = bitcast<{t}>(((bx ^ by) & {u}(0x80000000u)) | {u}(0x7f800000u));
    let undefined = ((bx & {u}(0x7fffffffu)) == {u}(0u)) | ((bx & {u}(0x7fffffffu)) > {u}(0x7f800000u));
    let special = select(inf, bitcast<{t}>({u}(0x7fc00000u)), undefined);
    return select(x / y, special, (by & {u}(0x7fffffffu)) == {u}(0u));
}}""",
    "rem": """fn {name}(x: {t}, y: {t}) -> {t} {{ // x % y as C's fmod, IEEE's edges spelled out
    let ax = bitcast<{u}>(x) & {u}(0x7fffffffu);
    let ay = bitcast<{u}>(y) & {u}(0x7fffffffu);
    let r = select(x % y, x, ay == {u}(0x7f800000u));
    let undefined = (ay == {u}(0u)) | (ax >= {u}(0x7f800000u)) | (ay > {u}(0x7f800000u));
    return select(r, bitcast<{t}>({u}(0x7fc00000u)), undefined);
}}""",
}


@functools.lru_cache(maxsize=256)
def wgsl_type(ty) -> str:  # type: ignore[no-untyped-def]
    if isinstance(ty, Ty):
        return ty.elem.value if ty.width == 1 else f"vec{ty.width}<{ty.elem.value}>"
    if isinstance(ty, Array):
        return f"array<{wgsl_type(ty.item)}, {ty.length}>"
    if isinstance(ty, RuntimeArray):
        return f"array<{wgsl_type(ty.item)}>"
    if isinstance(ty, Atomic):
        return f"atomic<{ty.elem.value}>"
    raise CodegenError(f"no WGSL type for {ty}")


def wgsl_literal(value: object, ty: Ty) -> str:
    elem = ty.elem.value
    if elem == "bool":
        s = "true" if value else "false"
    elif elem == "f32":
        f = float(value)  # type: ignore[arg-type]
        # `f`: an f32 literal, never an abstract float naga would have to convert
        s = f"{f32_digits(f)}f" if math.isfinite(f) else f"bitcast<f32>({f32_bits(f)}u)"
    elif elem == "u32":
        s = f"{int(value) & 0xFFFFFFFF}u"  # type: ignore[call-overload]
    else:
        iv = int(value)  # type: ignore[call-overload]
        s = f"i32({iv})" if iv == -(2**31) else f"{iv}i"
    return s if ty.width == 1 else f"{wgsl_type(ty)}({s})"


class _Emitter(InfoReads):
    """Writes one kernel's body: `op(op)` dispatches to the `op_<dialect>_<name>` method of
    each IR op (as the C-family emitter, `cpp/emitter.py`, does), at the current indent depth."""

    def __init__(self, kernel: KernelDefinition) -> None:
        self.kernel = kernel
        self.lines: list[str] = []
        self.line_map: dict[int, Loc] = {}
        self.depth = 1
        self.place: dict[int, str] = {}  # pointer value id -> WGSL place expression
        self.info = info_layout(kernel)
        self.slots = InfoSlots(kernel, self.info)
        self.shared_names: dict[int, str] = {}
        self.uses_subgroups = False
        # the kernel lines of the debug_print calls left out (None: an op with no location)
        self.dropped_prints: list[int | None] = []
        self.constants: dict[int, object] = {}  # value id -> the literal an arith.constant gave it
        # the indices that may be out of range (`ir/analysis.py` bounds_tests), and for each
        # pointer made from one the WGSL test that its item exists
        self.bounds = bounds_tests(kernel)
        self.inside: dict[int, str] = {}
        self.helpers: dict[str, str] = {}  # module-scope functions the body calls, by name
        # scf.condition op -> the guard index of its scf.while (its exit sets the loop's flag)
        self._loop_guard: dict[int, object] = {}
        for op in kernel.walk():
            if op.name == "scf.while" and "guard" in op.attrs:
                for c in op.regions[0].ops:
                    if c.name == "scf.condition":
                        self._loop_guard[id(c)] = op.attrs["guard"]
            if op.name == "shared.declare":
                self.shared_names[op.result.id] = f"s{op.result.id}"
            elif op.name.startswith("plane.") or (
                    op.name == "builtin.read" and op.attrs["name"].startswith("subgroup")):
                self.uses_subgroups = True
        for b in kernel.buffers:
            self.place[b.value.id] = b.value.name

    # -- lines --------------------------------------------------------------------------------
    def line(self, text: str, indent: int, loc: Loc | None = None) -> None:
        self.lines.append("    " * indent + text)
        if loc is not None:
            self.line_map[len(self.lines)] = loc

    def stmt(self, text: str, loc: Loc | None = None) -> None:
        """A line of the body at the current depth."""
        self.line(text, self.depth, loc)

    def let(self, op: Op, expr: str) -> None:
        r = op.result
        self.stmt(f"let {r.name}: {wgsl_type(r.type)} = {expr};", op.loc)

    def nested(self, block: Block) -> None:
        self.depth += 1
        self.block(block)
        self.depth -= 1

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Op) -> None:
        lower = _LOWER.get(op.name)
        if lower is None:  # a plug-in op (ir/plugins.py), spelled by `TARGETS["wgsl"].lower`
            spelling = plugin_spelling(op, "wgsl", "WGSL")
            self.let(op, spelling.format(*(v.name for v in op.operands)))
            return
        lower(self, op)

    # -- arithmetic ---------------------------------------------------------------------------
    def op_arith_constant(self, op: Op) -> None:
        self.constants[op.result.id] = op.attrs["value"]
        self.let(op, wgsl_literal(op.attrs["value"], op.result.type))  # type: ignore[arg-type]

    def _binary(self, op: Op) -> None:
        a, b = op.operands
        self.let(op, f"{a.name} {BINARY[op.name]} {b.name}")

    op_arith_add = op_arith_sub = op_arith_mul = _binary

    def op_arith_div(self, op: Op) -> None:
        if op.result.type.elem.value != "f32" or self._nonzero(op.operands[1]):  # type: ignore[union-attr]
            self._binary(op)
            return
        a, b = op.operands
        self.let(op, f"{self._float_helper('div', op.result.type)}({a.name}, {b.name})")  # type: ignore[arg-type]

    def _nonzero(self, v) -> bool:  # type: ignore[no-untyped-def]
        """`v` is a finite non-zero literal, so IEEE's edges cannot meet it."""
        c = self.constants.get(v.id)
        return c is not None and math.isfinite(float(c)) and float(c) != 0.0  # type: ignore[arg-type]

    def _float_helper(self, kind: str, ty: Ty) -> str:
        """The name of the module-scope function that spells f32 `/` or `%` with IEEE's edges
        (`_FLOAT_HELPERS`), emitted once per kernel and type."""
        t = wgsl_type(ty)
        name = f"ieee_{kind}_{t.replace('<', '_').replace('>', '')}"
        if name not in self.helpers:
            u = wgsl_type(Ty(U32.elem, ty.width))
            self.helpers[name] = _FLOAT_HELPERS[kind].format(name=name, t=t, u=u)
        return name

    op_arith_bitand = op_arith_bitor = op_arith_bitxor = _binary

    def _shift(self, op: Op) -> None:
        # The language takes the amount mod 32 (docs/language.md; the CPU runtime does). WGSL
        # does too at run time, but naga refuses a *constant* amount >= 32 outright: spell the
        # mask out, so `x << 36` compiles and means `x << 4` everywhere.
        # An amount the kernel gives as a constant below 32 needs no mask (a strength-reduced
        # `x * 8` reads `x << v9`, v9 = 3u).
        a, b = op.operands
        amount = self.constants.get(b.id)
        if isinstance(amount, int) and not isinstance(amount, bool) and 0 <= amount < 32:
            self.let(op, f"{a.name} {BINARY[op.name]} {b.name}")
            return
        mask = f"{wgsl_type(b.type)}(31u)"  # a vector amount needs a vector mask
        self.let(op, f"{a.name} {BINARY[op.name]} ({b.name} & {mask})")

    op_arith_shl = op_arith_shr = _shift

    def op_arith_rem(self, op: Op) -> None:
        a, b = op.operands[0].name, op.operands[1].name
        elem = op.result.type.elem.value  # type: ignore[union-attr]
        if elem == "i32":
            # naga lowers a signed `%` to SPIR-V's OpSRem, which Vulkan leaves undefined for a
            # negative operand: NVIDIA returns the *unsigned* remainder (-7 % 2 == 1, found on
            # the H200; gfx-rs/wgpu#8191). WGSL's own definition, spelled out with the division
            # (well defined: x / 0 == x, MIN / -1 == MIN), gives the same answer everywhere.
            zero = f"{wgsl_type(op.result.type)}()"
            self.let(op, f"select({a} - {b} * ({a} / {b}), {zero}, {b} == {zero})")
        elif elem == "f32":
            self.let(op, f"{self._float_helper('rem', op.result.type)}({a}, {b})")  # type: ignore[arg-type]
        else:
            self.let(op, f"{a} {REMAINDER} {b}")

    def _min_max(self, op: Op) -> None:
        a, b = op.operands
        self.let(op, f"{op.name[6:]}({a.name}, {b.name})")

    op_arith_min = op_arith_max = _min_max

    def op_arith_cmp(self, op: Op) -> None:
        a, b = op.operands
        self.let(op, f"{a.name} {COMPARE[op.attrs['pred']]} {b.name}")

    def _logical(self, op: Op) -> None:
        # WGSL has no `&&`/`||` on vectors of bools: there `&`/`|` work componentwise
        a, b = op.operands
        vector = op.result.type.width > 1  # type: ignore[union-attr]
        sym = _VECTOR_LOGICAL[op.name] if vector else LOGICAL[op.name]
        self.let(op, f"{a.name} {sym} {b.name}")

    op_arith_and = op_arith_or = _logical

    def _unary(self, op: Op) -> None:
        self.let(op, f"{UNARY[op.name]}{op.operands[0].name}")

    op_arith_not = op_arith_bitnot = op_arith_neg = _unary

    def op_arith_select(self, op: Op) -> None:
        cond, t, f = op.operands
        self.let(op, f"select({f.name}, {t.name}, {cond.name})")  # WGSL puts the false value first

    def _is_nan(self, x: str, ty: Ty) -> str:
        """`x` is NaN, tested on its bits: WGSL lets a compiler assume floats are finite, and
        lavapipe folds `x != x` to false (docs/language.md)."""
        u = wgsl_type(Ty(U32.elem, ty.width))
        return f"((bitcast<{u}>({x}) & {u}(0x7fffffffu)) > {u}(0x7f800000u))"

    def op_arith_cast(self, op: Op) -> None:
        x = op.operands[0]
        ty = wgsl_type(op.result.type)
        if x.type.elem.value == "f32" and op.result.type.elem.value in ("i32", "u32"):  # type: ignore[union-attr]
            # the language says NaN -> 0 (the CPU runtime's rule); lavapipe gives i32 MIN
            self.let(op, f"select({ty}({x.name}), {ty}(), {self._is_nan(x.name, x.type)})")  # type: ignore[arg-type]
        else:
            self.let(op, f"{ty}({x.name})")

    # -- math and vectors ---------------------------------------------------------------------
    def op_math_unary(self, op: Op) -> None:
        fn = op.attrs["fn"]
        x = op.operands[0].name
        if fn in _FLOAT_CLASS:
            w = op.result.type.width  # type: ignore[union-attr]
            u = "u32" if w == 1 else f"vec{w}<u32>"
            self.let(op, f"(bitcast<{u}>({x}) & {u}(0x7fffffffu)) {_FLOAT_CLASS[fn]} "
                         f"{u}(0x7f800000u)")
            return
        if fn not in _MATH:
            raise CodegenError(f"math function {fn!r} has no WGSL lowering yet")
        if fn == "abs" and op.result.type.elem.value == "u32":  # type: ignore[union-attr]
            self.let(op, x)
        else:
            self.let(op, f"{_MATH[fn]}({x})")

    def op_math_binary(self, op: Op) -> None:
        fn = op.attrs["fn"]
        if fn not in ("pow", "atan2"):
            raise CodegenError(f"math function {fn!r} has no WGSL lowering yet")
        # WGSL's pow is exp2(y * log2(x)) and leaves the edges open (lavapipe: pow(0, 0) = 0,
        # pow(NaN, 1) = 0): spell out the C/numpy edges the CPU runtime gives, NaN for x < 0.
        a, b = op.operands
        if fn == "atan2":
            self.let(op, f"atan2({a.name}, {b.name})")
            return
        ty = op.result.type
        t = wgsl_type(ty)
        x, y = a.name, b.name
        inf, nan = (f"{t}({wgsl_literal(v, F32)})" for v in (math.inf, math.nan))
        zero, one = f"{t}(0.0)", f"{t}(1.0)"
        r = f"select(pow({x}, {y}), select({zero}, {inf}, {y} < {zero}), {x} == {zero})"
        r = f"select({r}, {nan}, {self._is_nan(x, ty)} | {self._is_nan(y, ty)})"  # type: ignore[arg-type]
        r = f"select({r}, {one}, ({y} == {zero}) | ({x} == {one}))"
        self.let(op, f"select({r}, {nan}, {x} < {zero})")

    def op_math_fma(self, op: Op) -> None:
        a, b, c = op.operands
        self.let(op, f"fma({a.name}, {b.name}, {c.name})")

    def op_vector_extract(self, op: Op) -> None:
        self.let(op, f"{op.operands[0].name}[{int(op.attrs['index'])}]")

    def op_arith_bitcast(self, op: Op) -> None:
        self.let(op, f"bitcast<{wgsl_type(op.result.type)}>({op.operands[0].name})")

    def op_vector_extract_at(self, op: Op) -> None:
        v, i = op.operands
        last = v.type.width - 1  # type: ignore[union-attr]
        self.let(op, f"{v.name}[min({i.name}, {last}u)]")

    def op_vector_splat(self, op: Op) -> None:
        self.let(op, f"{wgsl_type(op.result.type)}({op.operands[0].name})")

    def op_vector_insert(self, op: Op) -> None:
        v, x = op.operands
        ty = op.result.type
        assert isinstance(ty, Ty)
        k = int(op.attrs["index"])
        parts = [x.name if i == k else f"{v.name}[{i}]" for i in range(ty.width)]
        self.let(op, f"{wgsl_type(ty)}({', '.join(parts)})")

    def op_vector_insert_at(self, op: Op) -> None:
        # one select per component: an index past the end replaces none (OPS' rule)
        v, i, x = op.operands
        ty = op.result.type
        assert isinstance(ty, Ty)
        parts = [f"select({v.name}[{k}], {x.name}, {i.name} == {k}u)" for k in range(ty.width)]
        self.let(op, f"{wgsl_type(ty)}({', '.join(parts)})")

    # -- kernel inputs ------------------------------------------------------------------------
    def op_builtin_read(self, op: Op) -> None:
        self.let(op, _BUILTINS[op.attrs["name"]])

    # info.scalar, buffer.len, tensor.*: compiler.base.InfoReads, spelled for WGSL
    info_prefix, dynamic_meta_array, nonzero = "info.", "info.dynamic_meta", " != 0u"

    # -- memory -------------------------------------------------------------------------------
    def op_memory_index(self, op: Op) -> None:
        base, index = op.operands
        r = op.result
        test = self.bounds.get(r.id)
        at = index.name
        if test is not None and test.length is not None:
            # naga refuses a fixed-size array indexed past its end by a value it can fold
            # (`s[64u]` on 64 items) — the access under the test below never happens, but the
            # expression must still validate: index it at min(i, n - 1), which is i wherever
            # the test lets the access through.
            at = f"min({index.name}, {test.length - 1}u)"
        self.stmt(f"let {r.name} = &{self.place[base.id]}[{at}];", op.loc)
        self.place[r.id] = f"(*{r.name})"
        if test is not None:
            # OPS' rule, spelled out: out of range, a load gives zero and a store or an atomic
            # is dropped. Not left to the driver: lavapipe computes the byte offset in 32 bits
            # (`x[2**30 + i]` read `x[i]`) and naga clamps a fixed-size array's index.
            length = (self._static_meta(self.slots.length(op)) if test.length is None
                      else f"{test.length}u")
            self.inside[r.id] = f"{index.name} < {length}"

    def _tested(self, op: Op, expr: str) -> str:
        """A read through operand 0: `expr`, or zero where the item does not exist."""
        test = self.inside.get(op.operands[0].id)
        if test is None:
            return expr
        return f"select({wgsl_type(op.result.type)}(), {expr}, {test})"

    def _write(self, op: Op, stmt: str) -> None:
        """A write through operand 0, dropped where the item does not exist."""
        test = self.inside.get(op.operands[0].id)
        self.stmt(stmt if test is None else f"if {test} {{ {stmt} }}", op.loc)

    def _update(self, op: Op, expr: str) -> None:
        """An atomic update through operand 0 whose old value is its result: dropped (the
        result zero) where the item does not exist."""
        test = self.inside.get(op.operands[0].id)
        if test is None:
            self.let(op, expr)
            return
        r = op.result
        ty = wgsl_type(r.type)
        self.stmt(f"var o{r.id}: {ty};", op.loc)
        self.stmt(f"if {test} {{ o{r.id} = {expr}; }}", op.loc)
        self.let(op, f"o{r.id}")

    def op_memory_load(self, op: Op) -> None:
        self.let(op, self._tested(op, self.place[op.operands[0].id]))

    def op_memory_store(self, op: Op) -> None:
        ptr, value = op.operands
        self._write(op, f"{self.place[ptr.id]} = {value.name};")

    def op_var_declare(self, op: Op) -> None:
        r = op.result
        assert isinstance(r.type, Pointer)
        name = f"l{r.id}"
        self.stmt(f"var {name}: {wgsl_type(r.type.pointee)};", op.loc)
        self.place[r.id] = name

    def op_shared_declare(self, op: Op) -> None:  # declared at module scope by compile_wgsl
        self.place[op.result.id] = self.shared_names[op.result.id]

    # -- synchronisation and atomics ----------------------------------------------------------
    def op_sync_cube(self, op: Op) -> None:
        self.stmt("workgroupBarrier();", op.loc)

    def op_sync_storage(self, op: Op) -> None:
        self.stmt("storageBarrier();", op.loc)

    def op_sync_uniform_load(self, op: Op) -> None:
        self.let(op, self._tested(op, f"workgroupUniformLoad(&{self.place[op.operands[0].id]})"))

    def op_atomic_load(self, op: Op) -> None:
        self.let(op, self._tested(op, f"atomicLoad(&{self.place[op.operands[0].id]})"))

    def op_atomic_store(self, op: Op) -> None:
        ptr, value = op.operands
        self._write(op, f"atomicStore(&{self.place[ptr.id]}, {value.name});")

    def op_atomic_rmw(self, op: Op) -> None:
        ptr, value = op.operands
        self._update(op, f"{_RMW[op.attrs['kind']]}(&{self.place[ptr.id]}, {value.name})")

    def op_atomic_cas(self, op: Op) -> None:
        ptr, cmp, new = op.operands
        self._update(op, f"atomicCompareExchangeWeak(&{self.place[ptr.id]}, {cmp.name}, "
                         f"{new.name}).old_value")

    # -- plane (subgroup) ops -----------------------------------------------------------------
    def op_plane_reduce(self, op: Op) -> None:
        self.let(op, f"{_PLANE_REDUCE[op.attrs['kind']]}({op.operands[0].name})")

    def op_plane_vote(self, op: Op) -> None:
        self.let(op, f"{_PLANE_VOTE[op.attrs['kind']]}({op.operands[0].name})")

    def op_plane_broadcast(self, op: Op) -> None:
        value, lane = op.operands
        self.let(op, f"subgroupShuffle({value.name}, {lane.name})")

    def op_plane_scan(self, op: Op) -> None:
        fn = ("subgroup" + ("Inclusive" if op.attrs["inclusive"] else "Exclusive")
              + ("Add" if op.attrs["kind"] == "sum" else "Mul"))
        self.let(op, f"{fn}({op.operands[0].name})")

    def op_plane_ballot(self, op: Op) -> None:
        self.let(op, f"subgroupBallot({op.operands[0].name})")

    def op_plane_shuffle(self, op: Op) -> None:
        # WGSL leaves a source lane outside the plane undefined (lavapipe wraps around: lane 0's
        # `up` read the last lane); the IR defines it as the unit's own value, as CUDA and
        # Metal give it and CubeCL's plane.rs expects, so the range is tested here
        value, n = op.operands
        kind = op.attrs["kind"]
        fn = {"xor": "subgroupShuffleXor", "up": "subgroupShuffleUp",
              "down": "subgroupShuffleDown"}[kind]
        lane, size = "subgroup_invocation_id", "subgroup_size"
        inside = {"xor": f"({lane} ^ {n.name}) < {size}", "up": f"{lane} >= {n.name}",
                  "down": f"{n.name} < {size} - {lane}"}[kind]
        self.let(op, f"select({value.name}, {fn}({value.name}, {n.name}), {inside})")

    def op_plane_elect(self, op: Op) -> None:
        self.let(op, "subgroup_invocation_id == subgroupBroadcastFirst(subgroup_invocation_id)")

    # -- structured control flow --------------------------------------------------------------
    def op_scf_if(self, op: Op) -> None:
        self.stmt(f"if {op.operands[0].name} {{", op.loc)
        self.nested(op.regions[0])
        if op.regions[1].ops:
            self.stmt("} else {")
            self.nested(op.regions[1])
        self.stmt("}")

    def op_scf_switch(self, op: Op) -> None:
        sel = op.operands[0]
        assert isinstance(sel.type, Ty)
        self.stmt(f"switch {sel.name} {{", op.loc)
        labels = [", ".join(wgsl_literal(v, sel.type) for v in values)
                  for values in op.attrs["cases"]] + ["default"]
        self.depth += 1
        for label, region in zip(labels, op.regions):
            self.stmt(f"case {label}: {{" if label != "default" else "default: {")
            self.nested(region)
            self.stmt("}")
        self.depth -= 1
        self.stmt("}")

    def op_scf_for(self, op: Op) -> None:
        start, end, step = op.operands
        (body,) = op.regions
        (iv,) = body.args
        ty = wgsl_type(iv.type)
        ctr = f"i{iv.id}"
        guard = op.attrs.get("guard")
        k = int(op.attrs.get("unroll", 1))
        if k > 1:
            self._unrolled_for(op, k)
            return
        if guard is None:
            self.stmt(f"for (var {ctr}: {ty} = {start.name}; {ctr} < {end.name}; "
                      f"{ctr} = {ctr} + {step.name}) {{", op.loc)
        else:
            self._loop_prelude(op, guard, 1)
            self.stmt(f"for (var {ctr}: {ty} = {start.name}; ; {ctr} = {ctr} + {step.name}) {{",
                      op.loc)
            self.line(f"if !({ctr} < {end.name}) {{ g{guard} = true; break; }}", self.depth + 1,
                      op.loc)
            self._count(guard, op)
        self.line(f"let {iv.name}: {ty} = {ctr};", self.depth + 1, op.loc)
        self.nested(body)
        self.stmt("}")
        self._ended(guard, op)

    def _unrolled_for(self, op: Op, k: int) -> None:
        """`scf.for` with `unroll = k` (`ir/passes.py` LoopUnroll): the trip count is known
        when the loop starts, so the loop runs in blocks of k iterations with no test between
        them, then the rest one by one — the driver's loop limiter counts one step per block.
        A guarded loop counts k per block (exact: a block always runs whole) and records that
        *both* loops ended through their conditions (the driver may cut either)."""
        start, end, step = op.operands
        (body,) = op.regions
        (iv,) = body.args
        ty = wgsl_type(iv.type)
        n, ctr, guard = iv.id, f"i{iv.id}", op.attrs.get("guard")
        u = "" if ty == "u32" else "bitcast<u32>"
        span = f"{u}({end.name}) - {u}({start.name})"
        self._loop_prelude(op, guard, k)
        self.stmt("{", op.loc)
        self.depth += 1
        self.stmt(f"var {ctr}: {ty} = {start.name};", op.loc)
        self.stmt(f"let t{n}: u32 = select(0u, ({span}) / {u}({step.name}) + select(0u, 1u, "
                  f"({span}) % {u}({step.name}) != 0u), {start.name} < {end.name});", op.loc)
        self.stmt(f"var whole{n}: bool = false;", op.loc)
        self.stmt(f"for (var b{n}: u32 = t{n} / {k}u; ; b{n} = b{n} - 1u) {{", op.loc)
        self.line(f"if b{n} == 0u {{ whole{n} = true; break; }}", self.depth + 1, op.loc)
        self._count(guard, op, k)
        for _ in range(k):
            self._one_iteration(op, body, ty, ctr)
        self.stmt("}")
        self.stmt(f"if whole{n} {{", op.loc)
        self.depth += 1
        self.stmt(f"for (var r{n}: u32 = t{n} % {k}u; ; r{n} = r{n} - 1u) {{", op.loc)
        done = f"g{guard} = true; " if guard is not None else ""
        self.line(f"if r{n} == 0u {{ {done}break; }}", self.depth + 1, op.loc)
        self._count(guard, op)
        self._one_iteration(op, body, ty, ctr)
        self.stmt("}")
        self.depth -= 1
        self.stmt("}")
        self.depth -= 1
        self.stmt("}")
        self._ended(guard, op)

    def _loop_prelude(self, op: Op, guard: object, k: int) -> None:
        """What comes before a loop: why it is unrolled (`unroll = k`), and its guard's flag."""
        if k > 1:
            self.stmt(f"// unrolled x{k}: this driver ends a unit's loops after "
                      "65 535 steps in all (docs/language.md, the loop guard)", op.loc)
        if guard is not None:
            self.stmt(f"var g{guard}: bool = false; // loop {guard} ended through its condition",
                      op.loc)

    def _one_iteration(self, op: Op, body: Block, ty: str, ctr: str) -> None:
        """One copy of a `for` body, in a scope of its own (each copy redeclares its values),
        then the counter's step."""
        (iv,) = body.args
        self.line("{", self.depth + 1, op.loc)
        self.depth += 2
        self.stmt(f"let {iv.name}: {ty} = {ctr};", op.loc)
        self.block(body)
        self.depth -= 2
        self.line("}", self.depth + 1, op.loc)
        self.line(f"{ctr} = {ctr} + {op.operands[2].name};", self.depth + 1, op.loc)

    def op_scf_while(self, op: Op) -> None:
        cond_block, body = op.regions
        guard = op.attrs.get("guard")
        k = int(op.attrs.get("unroll", 1))
        self._loop_prelude(op, guard, k)
        self.stmt("loop {", op.loc)
        for _ in range(k):
            # each copy tests the condition itself (a while's trips are not known ahead)
            self._count(guard, op)
            if k == 1:
                self.nested(cond_block)
                self.nested(body)
                continue
            self.line("{", self.depth + 1, op.loc)
            self.depth += 2
            self.block(cond_block)
            self.block(body)
            self.depth -= 2
            self.line("}", self.depth + 1, op.loc)
        self.stmt("}")
        self._ended(guard, op)

    def op_scf_condition(self, op: Op) -> None:
        guard = self._loop_guard.get(id(op))
        if guard is None:
            self.stmt(f"if !({op.operands[0].name}) {{ break; }}", op.loc)
        else:
            self.stmt(f"if !({op.operands[0].name}) {{ g{guard} = true; break; }}", op.loc)

    # The loop guard (`ir/passes.py` LoopGuard): one iteration counter per unit for every loop;
    # the first iteration past the budget records its loop and every loop then ends at once; a
    # loop that ended without its condition saying so was ended by the driver.
    def _count(self, guard: object, op: Op, k: int = 1) -> None:
        """Count `k` iterations (a block of an unrolled loop runs k at once)."""
        if guard is None:
            return
        budget = self.kernel.loop_budget
        d = self.depth + 1
        self.line(f"guard_n = guard_n + {k}u;", d, op.loc)
        self.line(f"if guard_n > {budget}u {{", d, op.loc)
        crossed = f"guard_n == {budget + 1}u" if k == 1 else f"guard_n - {k}u <= {budget}u"  # type: ignore[operator]
        self.line(f"if {crossed} {{ atomicMax(&guard_status, "
                  f"{GUARD_BUDGET + int(guard)}u); }}", d + 1, op.loc)  # type: ignore[call-overload]
        self.line(f"g{guard} = true; break;", d + 1, op.loc)
        self.line("}", d, op.loc)

    def _ended(self, guard: object, op: Op) -> None:
        if guard is None:
            return
        self.stmt(f"if !g{guard} {{ atomicMax(&guard_status, {GUARD_DRIVER + int(guard)}u); }}",  # type: ignore[call-overload]
                  op.loc)

    # -- debugging ----------------------------------------------------------------------------
    def op_debug_print(self, op: Op) -> None:
        # WGSL has no printf: the call is left out, as CubeCL's WGSL backend leaves it out, and
        # the kernel runs without it. Unlike CubeCL, the student is told once (`notices`).
        fmt = json.dumps(str(op.attrs["format"]))
        self.stmt(f"// debug_print({fmt}, ...) left out: WGSL has no printf", op.loc)
        self.dropped_prints.append(op.loc.line if op.loc is not None else None)


# The ops this target lowers (`tests/test_wgsl.py` checks they cover `ir.core.OPS`).
_LOWER: dict[str, Callable[[_Emitter, Op], None]] = lowerings(_Emitter)
WGSL_OPS: tuple[str, ...] = tuple(_LOWER)


def compile_wgsl(kernel: KernelDefinition) -> CompiledSource:
    e = _Emitter(kernel)
    for b in kernel.buffers:
        ty = wgsl_type(RuntimeArray(b.item))  # type: ignore[arg-type]
        note = "" if b.writable else " (read-only; read_write because pooled slices share pages)"
        e.line(
            f"@group(0) @binding({b.index}) var<storage, read_write> {b.value.name}: {ty}; "
            f"// {b.name}{note}",
            0,
        )
    e.line("", 0)
    e.line("struct info_st {", 0)
    for f in e.info.fields:
        elem = "u32" if f.elem == "bool" else f.elem
        if f.name == "dynamic_meta":
            e.line(f"{f.name}: array<{elem}>,", 1)
        else:
            e.line(f"{f.name}: array<{elem}, {f.count}>,", 1)
    e.line("}", 0)
    e.line(f"@group(0) @binding({len(kernel.buffers)}) var<storage, read> info: info_st;", 0)
    if kernel.loop_budget is not None:
        e.line(f"@group(0) @binding({len(kernel.buffers) + 1}) var<storage, read_write> "
               "guard_status: atomic<u32>; // the loop guard's word for this launch", 0)
    e.line("", 0)
    for op in kernel.walk():
        if op.name == "shared.declare":
            ptr = op.result.type
            assert isinstance(ptr, Pointer)
            e.line(f"var<workgroup> {e.shared_names[op.result.id]}: {wgsl_type(ptr.pointee)};"
                   f" // {op.attrs.get('name', '')}", 0, op.loc)
    if e.shared_names:
        e.line("", 0)
    x, y, z = kernel.cube_dim
    head = len(e.lines)  # the helpers the body calls go here, once the body is written
    e.line(f"@compute @workgroup_size({x}, {y}, {z})", 0)
    e.line(
        f"fn {kernel.entry}(@builtin(workgroup_id) workgroup_id: vec3<u32>, "
        "@builtin(num_workgroups) num_workgroups: vec3<u32>, "
        "@builtin(local_invocation_index) local_invocation_index: u32, "
        "@builtin(local_invocation_id) local_invocation_id: vec3<u32>"
        + (", @builtin(subgroup_size) subgroup_size: u32, "
           "@builtin(subgroup_invocation_id) subgroup_invocation_id: u32" if e.uses_subgroups
           else "")
        + ") {",
        0,
    )
    if kernel.loop_budget is not None:
        e.line("var guard_n: u32 = 0u; // loop iterations this unit has run (the loop guard)", 1)
    _zero_shared(e, kernel)
    e.block(kernel.body)
    e.line("}", 0)
    if e.helpers:
        _insert_lines(e, head, "\n\n".join(e.helpers.values()).splitlines() + [""])
    notices = (dropped_print_notice(kernel.name, e.dropped_prints),) if e.dropped_prints else ()
    return CompiledSource("wgsl", kernel.entry, "\n".join(e.lines) + "\n", e.info, e.line_map,
                          notices)


def _insert_lines(e: _Emitter, at: int, lines: list[str]) -> None:
    """Put `lines` before line `at` (0-based), moving the line map down with them."""
    e.lines[at:at] = lines
    e.line_map = {(n + len(lines) if n > at else n): loc for n, loc in e.line_map.items()}


def _zero_shared(e: _Emitter, kernel: KernelDefinition) -> None:
    """Shared memory is zero at kernel start (the IR's rule, and WGSL's). wgpu leaves that to
    a driver that advertises zero-initialised workgroup memory, and lavapipe advertises it yet
    handed a kernel the previous dispatch's values (tests/test_wgsl.py pins the case), so the
    units zero every shared array themselves, strided, then meet at a barrier."""
    arrays = [op for op in kernel.walk() if op.name == "shared.declare"]
    if not arrays:
        return
    units = kernel.cube_dim[0] * kernel.cube_dim[1] * kernel.cube_dim[2]
    for op in arrays:
        ptr = op.result.type
        assert isinstance(ptr, Pointer) and isinstance(ptr.pointee, Array)
        name, item = e.shared_names[op.result.id], ptr.pointee.item
        zero = (f"atomicStore(&{name}[z], 0{'u' if item.elem.value == 'u32' else 'i'});"
                if isinstance(item, Atomic) else f"{name}[z] = {wgsl_type(item)}();")
        e.line(f"for (var z: u32 = local_invocation_index; z < {ptr.pointee.length}u; "
               f"z = z + {units}u) {{ {zero} }} // shared memory starts at zero", 1)
    e.line("workgroupBarrier();", 1)


def dropped_print_notice(kernel: str, lines: list[int | None]) -> str:
    """What a student is told, once per compiled kernel, when WGSL leaves its prints out."""
    known = sorted({n for n in lines if n is not None})
    where = f" (line {', '.join(map(str, known))})" if known else ""
    return (f"kernel `{kernel}`: debug_print{where} prints nothing on the wgpu runtime — "
            "WGSL has no printf, so the kernel runs without the call (as CubeCL's WGSL backend "
            "does). Launch it on the CPU runtime (Device.cpu().client()) to see each unit's "
            "line.")


class WgslTarget(LowersPluginOps):
    name = "wgsl"
    shown_only = False
    lexer = "wgsl"

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        return compile_wgsl(kernel)
