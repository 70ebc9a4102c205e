"""MSL code generation: the Metal source a student reads beside the seed's debug log.

Contract: `compile_msl(kernel)` turns a `KernelDefinition` that has been through the passes into
Metal Shading Language in the shape CubeCL's Metal compiler prints in seed 000 — the same entry
name as the WGSL target, so the two views of one KernelId line up:

    #include <metal_stdlib>
    using namespace metal;
    typedef unsigned int uint32_t; ...               (the fixed-width typedef prelude)
    struct alignas(16) float_4 { float i_0; float i_1; float i_2; float i_3; };
    struct info_st {
        float scalars_f32[1];uint32_t static_meta[2];
    };
    [[max_total_threads_per_threadgroup(4)]] [[kernel]] void saxpy_f_f32_n_4_<hash8>(
        device float_4 const* const v1 [[buffer(0)]], device float_4 * const v2 [[buffer(1)]],
        constant info_st const* const v40, uint3 const threadgroups_per_grid_v41 [[...]], ...)

Every SSA value is `T const vN = ...;`, a pointer into a buffer is
`device float_4 const* const v18 = &v2[v88];`, and arithmetic on vectors is written one component
at a time (`float const v42 = v0 * v41;` for `i_0` ... `i_3`, then `float_4{...}` only where a
whole vector is needed), exactly as the seed's `v19.i_0 ... i_3` lines.

Why a target that never runs here: seed 000 teaches through this text; the wgpu runtime runs the
WGSL of the same IR. `tests/metal_shim/` lets `g++ -fsyntax-only` check every generated kernel for
syntax and C++ types — not Metal semantics (address spaces, SIMD-group rules, what the Metal
compiler would reject), see `docs/msl.md`.

Traps:
- one deliberate word of difference from the seed: the info reference is
  `constant info_st const& info_vN = *vM;` (the seed omits `const`; Metal accepts both, and C++,
  where `constant` is an empty macro, only the `const` form);
- the info block's counts come from `compiler/info.py` (the layout the runtime packs), not from
  CubeCL's padding (the seed prints `scalars_f32[2]` for one scalar);
- Metal wants threadgroup arrays at kernel scope, so shared memory is declared at the top of the
  body; and Metal's threadgroup memory starts undefined while the IR promises zeros (WGSL's
  guarantee), so the kernel zeroes its shared arrays and meets a barrier before its body;
- integer edge cases the IR defines (x / 0, i32 MIN / -1, shifts by >= 32, i32 overflow) are
  plain C++ operators here, as CubeCL writes them: undefined on Metal. This text is for reading;
  the WGSL and CPU targets are the ones that run, and they follow `OPS` to the letter;
- fresh names (info pointer, builtin parameters, vector components) take ids after the kernel's
  largest, so they never collide with IR values.

Size: ~740 lines, over the project's ~600, on purpose: one `_Emitter` with one `op_*` method per
IR op, all built on the same per-component vector machinery (`component`, `value`,
`elementwise`) and scope-local name caches; splitting the op methods from that machinery would
put one target's text in two files that cannot be read apart.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from typing import Callable

from cubelab.compiler.base import CodegenError, CompiledSource, InfoReads, InfoSlots, lowerings
from cubelab.compiler.spelling import BINARY, COMPARE, LOGICAL, MATH_SAME, REMAINDER, UNARY
from cubelab.compiler.info import info_layout
from cubelab.ir.analysis import all_ops, buffer_io, max_value_id
from cubelab.ir.core import Block, KernelDefinition, Loc, Op, Value
from cubelab.ir.types import Array, Atomic, Elem, Pointer, RuntimeArray, Ty

_SCALAR = {Elem.F32: "float", Elem.I32: "int32_t", Elem.U32: "uint32_t", Elem.BOOL: "bool"}
_ELEM_BYTES = {Elem.F32: 4, Elem.I32: 4, Elem.U32: 4, Elem.BOOL: 1}
_SPACE = {"global": "device", "shared": "threadgroup", "function": "thread"}
_MATH2 = {"pow": "pow", "atan2": "atan2"}
_RMW = {"add": "atomic_fetch_add_explicit", "sub": "atomic_fetch_sub_explicit",
        "min": "atomic_fetch_min_explicit", "max": "atomic_fetch_max_explicit",
        "and": "atomic_fetch_and_explicit", "or": "atomic_fetch_or_explicit",
        "xor": "atomic_fetch_xor_explicit", "swap": "atomic_exchange_explicit"}
_PLANE_REDUCE = {"sum": "simd_sum", "min": "simd_min", "max": "simd_max", "prod": "simd_product"}
_PLANE_VOTE = {"all": "simd_all", "any": "simd_any"}
_RELAXED = "memory_order_relaxed"
# IR builtin -> (Metal attribute, component or None for a scalar attribute)
_BUILTINS: dict[str, tuple[str, int | None]] = {
    "num_workgroups_x": ("threadgroups_per_grid", 0),
    "num_workgroups_y": ("threadgroups_per_grid", 1),
    "num_workgroups_z": ("threadgroups_per_grid", 2),
    "local_invocation_index": ("thread_index_in_threadgroup", None),
    "workgroup_id_x": ("threadgroup_position_in_grid", 0),
    "workgroup_id_y": ("threadgroup_position_in_grid", 1),
    "workgroup_id_z": ("threadgroup_position_in_grid", 2),
    "local_invocation_id_x": ("thread_position_in_threadgroup", 0),
    "local_invocation_id_y": ("thread_position_in_threadgroup", 1),
    "local_invocation_id_z": ("thread_position_in_threadgroup", 2),
    "global_invocation_id_x": ("thread_position_in_grid", 0),
    "global_invocation_id_y": ("thread_position_in_grid", 1),
    "global_invocation_id_z": ("thread_position_in_grid", 2),
    "subgroup_size": ("threads_per_simdgroup", None),
    "subgroup_invocation_id": ("thread_index_in_simdgroup", None),
    "subgroup_id": ("simdgroup_index_in_threadgroup", None),
}
# Parameter order of the builtins: the seed's three first, in the seed's order.
_BUILTIN_ORDER = (
    "threadgroups_per_grid", "thread_index_in_threadgroup", "threadgroup_position_in_grid",
    "thread_position_in_threadgroup", "thread_position_in_grid", "threads_per_simdgroup",
    "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup",
)
_SCALAR_BUILTINS = {"thread_index_in_threadgroup", "threads_per_simdgroup",
                    "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup"}
# math.unary fn -> MSL function. WGSL's round is half-to-even, which is Metal's `rint`.
_MATH = {
    **{fn: fn for fn in MATH_SAME}, "round": "rint",
    "trunc": "trunc", "exp2": "exp2", "log2": "log2", "rsqrt": "rsqrt",
    "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan",
    "fract": "fract", "sign": "sign", "saturate": "saturate", "asinh": "asinh",
    "acosh": "acosh", "atanh": "atanh", "inverse_sqrt": "rsqrt", "count_ones": "popcount",
    "reverse_bits": "reverse_bits", "leading_zeros": "clz", "trailing_zeros": "ctz",
    "is_nan": "isnan", "is_inf": "isinf",
}


def msl_type(ty: object) -> str:
    """The MSL spelling of a value type: `float`, `uint32_t`, `float_4` (never `float4`)."""
    if isinstance(ty, Ty):
        base = _SCALAR[ty.elem]
        return base if ty.width == 1 else f"{base}_{ty.width}"
    if isinstance(ty, Atomic):
        return f"atomic<{_SCALAR[ty.elem]}>"
    raise CodegenError(f"no MSL value type for {ty}")


def vector_struct(ty: Ty) -> str:
    """`struct alignas(16) float_4 { float i_0; ... };` — the seed's stand-in for `float4`."""
    base = _SCALAR[ty.elem]
    size = _ELEM_BYTES[ty.elem] * ty.width
    align = 1 << (size - 1).bit_length()
    fields = " ".join(f"{base} i_{i};" for i in range(ty.width))
    return f"struct alignas({align}) {base}_{ty.width} {{ {fields} }};"


def msl_literal(value: object, elem: Elem) -> str:
    if elem is Elem.BOOL:
        return "true" if value else "false"
    if elem is Elem.F32:
        f = float(value)  # type: ignore[arg-type]
        bits = struct.unpack("<I", struct.pack("<f", f))[0]
        if math.isnan(f) or math.isinf(f):
            return f"as_type<float>({bits}u)"
        return f"{_shortest_f32(f)}f"
    iv = int(value)  # type: ignore[call-overload]
    if elem is Elem.U32:
        iv &= 0xFFFFFFFF
        return str(iv) if iv < 2**31 else f"{iv}u"
    return "(-2147483647 - 1)" if iv == -(2**31) else str(iv)


def _shortest_f32(f: float) -> str:
    """The fewest digits that read back as the same f32: `0.1`, not `0.10000000149011612`."""
    want = struct.pack("<f", f)
    for digits in range(1, 10):
        s = f"{f:.{digits}g}"
        try:
            if struct.pack("<f", float(s)) == want:
                break
        except OverflowError:  # rounding up past the largest f32
            continue
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def _vector_types(kernel: KernelDefinition, ops: list[Op]) -> list[Ty]:
    """Every vector type the kernel uses, in order of first appearance."""
    seen: dict[Ty, None] = {}

    def visit(ty: object) -> None:
        if isinstance(ty, Ty):
            if ty.width > 1:
                seen.setdefault(ty)
        elif isinstance(ty, (Array, RuntimeArray)):
            visit(ty.item)
        elif isinstance(ty, Pointer):
            visit(ty.pointee)

    for b in kernel.buffers:
        visit(b.item)
    for op in ops:
        for v in op.results:
            visit(v.type)
        for r in op.regions:
            for a in r.args:
                visit(a.type)
    return list(seen)


def _written_buffers(kernel: KernelDefinition, ops: list[Op]) -> set[int]:
    """Ids of buffer values that get a non-`const` pointer: declared writable (`SliceMut`) and
    written by the IR (`ir/analysis.py`, the same answer the runtime's write set uses)."""
    io = buffer_io(kernel, ops)
    return {b.value.id for b, use in zip(kernel.buffers, io) if b.writable and use.writable}


@dataclass
class _Scope:
    """Names visible in one C++ block: extracted components and materialized whole vectors."""

    names: dict[tuple[object, ...], str] = field(default_factory=dict)


class _Emitter(InfoReads):
    def __init__(self, kernel: KernelDefinition) -> None:
        self.kernel = kernel
        self.info = info_layout(kernel)
        self.body: list[str] = []
        self.body_map: dict[int, Loc] = {}
        self.shared_decls: list[tuple[str, Loc | None]] = []
        self.shared_zero: list[tuple[str, Array]] = []
        ops = all_ops(kernel)
        self.vector_types = _vector_types(kernel, ops)
        self.next_id = max_value_id(kernel, ops) + 1
        self.place: dict[int, str] = {}  # pointer value id -> lvalue (locals, shared arrays)
        self.ptr_space: dict[int, tuple[str, bool]] = {}  # pointer id -> (space, const)
        self.splat: dict[int, str] = {}  # vector id -> the scalar every component equals
        self.comps: dict[int, list[str]] = {}  # vector id -> its component scalars
        self.whole: set[int] = set()  # vectors defined as a whole (loads, arguments, ...)
        self.scopes: list[_Scope] = [_Scope()]
        self.builtins: dict[str, str] = {}  # Metal attribute -> parameter name
        self.slots = InfoSlots(kernel, self.info)
        written = _written_buffers(kernel, ops)
        for b in kernel.buffers:
            self.ptr_space[b.value.id] = ("device", b.value.id not in written)
        self.const_buffers = {b.value.id for b in kernel.buffers if b.value.id not in written}
        self.info_ptr = self.fresh()
        self.info_ref = f"info_{self.fresh()}"
        self.dyn_meta = f"dynamic_meta_{self.fresh()}"
        self.info_prefix, self.dynamic_meta_array = f"{self.info_ref}.", self.dyn_meta
        self.loc: Loc | None = None

    # -- names and lines ----------------------------------------------------------------------
    def fresh(self) -> str:
        name = f"v{self.next_id}"
        self.next_id += 1
        return name

    def line(self, text: str) -> None:
        self.body.append(text)
        if self.loc is not None:
            self.body_map[len(self.body)] = self.loc

    def define(self, ty: object, name: str, expr: str) -> None:
        self.line(f"{msl_type(ty)} const {name} = {expr};")

    def let(self, op: Op, expr: str) -> None:
        r = op.result
        self.define(r.type, r.name, expr)
        self.whole.add(r.id)

    def lookup(self, key: tuple[object, ...]) -> str | None:
        for s in reversed(self.scopes):
            if key in s.names:
                return s.names[key]
        return None

    def builtin(self, attr: str) -> str:
        if attr not in self.builtins:
            self.builtins[attr] = f"{attr}_{self.fresh()}"
        return self.builtins[attr]

    # -- vectors, one component at a time -----------------------------------------------------
    def component(self, v: Value, i: int) -> str:
        """The scalar name of component `i` of `v` (a scalar is its own every component)."""
        ty = v.type
        if not isinstance(ty, Ty) or ty.width == 1:
            return v.name
        if v.id in self.splat:
            return self.splat[v.id]
        if v.id in self.comps:
            return self.comps[v.id][i]
        key = ("comp", v.id, i)
        name = self.lookup(key)
        if name is None:
            name = self.fresh()
            self.line(f"{_SCALAR[ty.elem]} const {name} = {self.value(v)}.i_{i};")
            self.scopes[-1].names[key] = name
        return name

    def value(self, v: Value) -> str:
        """`v` as a whole value; builds `float_4{...}` here if it only exists as components."""
        if v.id in self.whole or not isinstance(v.type, Ty) or v.type.width == 1:
            return v.name
        key = ("whole", v.id)
        name = self.lookup(key)
        if name is None:
            parts = (self.splat[v.id],) * v.type.width if v.id in self.splat else self.comps[v.id]
            self.define(v.type, v.name, f"{msl_type(v.type)}{{{', '.join(parts)}}}")
            self.scopes[-1].names[key] = v.name
            name = v.name
        return name

    def elementwise(self, op: Op, scalar: Callable[[list[str]], str]) -> None:
        """`op` applied per component (the seed's `v19.i_0 ... i_3` lines) or directly."""
        r = op.result
        assert isinstance(r.type, Ty)
        if r.type.width == 1:
            self.let(op, scalar([self.value(v) for v in op.operands]))
            return
        names = []
        base = _SCALAR[r.type.elem]
        for i in range(r.type.width):
            args = [self.component(v, i) for v in op.operands]
            name = self.fresh()
            self.line(f"{base} const {name} = {scalar(args)};")
            names.append(name)
        self.comps[r.id] = names

    # -- pointers -----------------------------------------------------------------------------
    def deref(self, ptr: Value) -> str:
        return self.place[ptr.id] if ptr.id in self.place else f"*{ptr.name}"

    def address(self, ptr: Value) -> str:
        return f"&{self.place[ptr.id]}" if ptr.id in self.place else ptr.name

    def pointer_type(self, space: str, pointee: object, const: bool) -> str:
        return f"{space} {msl_type(pointee)} {'const' if const else ''}* const"

    # -- blocks -------------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        self.scopes.append(_Scope())
        try:
            for op in block.ops:
                self.op(op)
        finally:
            self.scopes.pop()

    def op(self, op: Op) -> None:
        self.loc = op.loc
        lower = _LOWER.get(op.name)
        if lower is None:
            raise CodegenError(f"the MSL target does not implement op {op.name!r}")
        lower(self, op)

    # -- one method per op --------------------------------------------------------------------
    def op_arith_constant(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        lit = msl_literal(op.attrs["value"], ty.elem)
        if ty.width == 1:
            self.let(op, lit)
        else:
            self.splat[op.result.id] = lit

    def _binary(self, op: Op) -> None:
        sym = BINARY[op.name]
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    op_arith_add = op_arith_sub = op_arith_mul = op_arith_div = _binary
    op_arith_bitand = op_arith_bitor = op_arith_bitxor = _binary

    def _shift(self, op: Op) -> None:
        # C++ leaves a shift by >= the width undefined; the language takes the amount mod 32
        sym = BINARY[op.name]
        self.elementwise(op, lambda a: f"{a[0]} {sym} ({a[1]} & 31u)")

    op_arith_shl = op_arith_shr = _shift

    def _unary(self, op: Op) -> None:
        sym = UNARY[op.name]
        self.elementwise(op, lambda a: f"{sym}{a[0]}")

    op_arith_bitnot = op_arith_not = op_arith_neg = _unary

    def op_arith_select(self, op: Op) -> None:
        # A scalar condition picks whole vectors; per component it picks the same side each time.
        self.elementwise(op, lambda a: f"{a[0]} ? {a[1]} : {a[2]}")

    def op_arith_rem(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        if ty.elem.is_float:  # WGSL's float % truncates, as Metal's fmod does
            self.elementwise(op, lambda a: f"fmod({a[0]}, {a[1]})")
        else:
            self.elementwise(op, lambda a: f"{a[0]} {REMAINDER} {a[1]}")

    def op_arith_min(self, op: Op) -> None:
        self.elementwise(op, lambda a: f"min({a[0]}, {a[1]})")

    def op_arith_max(self, op: Op) -> None:
        self.elementwise(op, lambda a: f"max({a[0]}, {a[1]})")

    def op_arith_cmp(self, op: Op) -> None:
        sym = COMPARE[op.attrs["pred"]]
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    def _logical(self, op: Op) -> None:  # per component, so always the scalar operator
        sym = LOGICAL[op.name]
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    op_arith_and = op_arith_or = _logical

    def op_arith_cast(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        target = _SCALAR[ty.elem]
        self.elementwise(op, lambda a: f"{target}({a[0]})")

    def op_arith_bitcast(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        target = _SCALAR[ty.elem]
        self.elementwise(op, lambda a: f"as_type<{target}>({a[0]})")

    def _math(self, op: Op) -> None:
        fn = op.attrs["fn"]
        name = (_MATH if op.name == "math.unary" else _MATH2).get(fn)
        if name is None:
            raise CodegenError(f"math function {fn!r} has no MSL lowering")
        self.elementwise(op, lambda a: f"{name}({', '.join(a)})")

    op_math_unary = op_math_binary = _math

    def op_math_fma(self, op: Op) -> None:
        self.elementwise(op, lambda a: f"fma({a[0]}, {a[1]}, {a[2]})")

    def op_vector_extract(self, op: Op) -> None:
        self.let(op, self.component(op.operands[0], int(op.attrs["index"])))

    def op_vector_extract_at(self, op: Op) -> None:
        # the seed's `float_4 {i_0 .. i_3}` structs have no runtime index: pick with a chain
        # of conditionals, the last component for any index past it (the clamp of OPS)
        v, i = op.operands
        width = v.type.width  # type: ignore[union-attr]
        index = self.value(i)
        expr = self.component(v, width - 1)
        for k in reversed(range(width - 1)):
            expr = f"({index} == {k}u ? {self.component(v, k)} : {expr})"
        self.let(op, expr)

    def op_vector_splat(self, op: Op) -> None:
        self.splat[op.result.id] = self.value(op.operands[0])

    def op_vector_insert(self, op: Op) -> None:
        v, x = op.operands
        ty = op.result.type
        assert isinstance(ty, Ty)
        k = int(op.attrs["index"])
        # component form, as elementwise results are: built whole only where a use needs it
        self.comps[op.result.id] = [self.value(x) if i == k else self.component(v, i)
                                    for i in range(ty.width)]

    def op_vector_insert_at(self, op: Op) -> None:
        # component form, each picking the new scalar where the runtime index names it
        v, i, x = op.operands
        ty = op.result.type
        assert isinstance(ty, Ty)
        index, item = self.value(i), self.value(x)
        self.comps[op.result.id] = [f"({index} == {k}u ? {item} : {self.component(v, k)})"
                                    for k in range(ty.width)]

    def op_builtin_read(self, op: Op) -> None:
        name = op.attrs["name"]
        if name not in _BUILTINS:
            raise CodegenError(f"builtin {name!r} has no MSL attribute")
        attr, index = _BUILTINS[name]
        param = self.builtin(attr)
        self.let(op, f"uint32_t({param})" if index is None else f"{param}[{index}]")

    # info.scalar, buffer.len, tensor.*: compiler.base.InfoReads, spelled for MSL (the prefix
    # and the dynamic_meta pointer are fresh names, set in __init__)
    nonzero = " != 0"

    def operand(self, v: Value) -> str:
        return self.value(v)

    def op_memory_index(self, op: Op) -> None:
        base, index = op.operands
        r = op.result
        assert isinstance(r.type, Pointer)
        if base.id in self.ptr_space:
            space, const = self.ptr_space[base.id]
        else:
            space, const = _SPACE[r.type.space], False
        target = self.place.get(base.id, base.name)
        ptr_ty = self.pointer_type(space, r.type.pointee, const)
        self.line(f"{ptr_ty} {r.name} = &{target}[{self.value(index)}];")
        self.ptr_space[r.id] = (space, const)

    def op_memory_load(self, op: Op) -> None:
        self.let(op, self.deref(op.operands[0]))

    def op_memory_store(self, op: Op) -> None:
        ptr, value = op.operands
        self.line(f"{self.deref(ptr)} = {self.value(value)};")

    def op_var_declare(self, op: Op) -> None:
        r = op.result
        assert isinstance(r.type, Pointer)
        pointee = r.type.pointee
        name = f"l{r.id}"
        # Zero-initialised, as WGSL's `var` is: the two targets of one IR must agree.
        if isinstance(pointee, Array):
            self.line(f"{msl_type(pointee.item)} {name}[{pointee.length}] = {{}};")
        else:
            self.line(f"{msl_type(pointee)} {name} = {{}};")
        self.place[r.id] = name
        self.ptr_space[r.id] = ("thread", False)

    def op_shared_declare(self, op: Op) -> None:
        r = op.result
        assert isinstance(r.type, Pointer) and isinstance(r.type.pointee, Array)
        arr = r.type.pointee
        name = f"s{r.id}"
        label = op.attrs.get("name", "")
        self.shared_decls.append(
            (f"threadgroup {msl_type(arr.item)} {name}[{arr.length}];"
             + (f" // {label}" if label else ""), op.loc))
        self.shared_zero.append((name, arr))
        self.place[r.id] = name
        self.ptr_space[r.id] = ("threadgroup", False)

    def op_sync_cube(self, op: Op) -> None:
        self.line("threadgroup_barrier(mem_flags::mem_threadgroup);")

    def op_sync_storage(self, op: Op) -> None:
        self.line("threadgroup_barrier(mem_flags::mem_device);")

    def op_sync_uniform_load(self, op: Op) -> None:
        # Metal has no uniform load: the barrier, then a plain load (what CubeCL's non-WGSL
        # backends do); every unit reads the same threadgroup item.
        self.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
        self.let(op, self.deref(op.operands[0]))

    def op_atomic_load(self, op: Op) -> None:
        self.let(op, f"atomic_load_explicit({self.address(op.operands[0])}, {_RELAXED})")

    def op_atomic_store(self, op: Op) -> None:
        ptr, value = op.operands
        self.line(f"atomic_store_explicit({self.address(ptr)}, {self.value(value)}, {_RELAXED});")

    def op_atomic_rmw(self, op: Op) -> None:
        ptr, value = op.operands
        fn = _RMW[op.attrs["kind"]]
        self.let(op, f"{fn}({self.address(ptr)}, {self.value(value)}, {_RELAXED})")

    def op_atomic_cas(self, op: Op) -> None:
        # Metal writes the old value into `expected` when the exchange fails and leaves it
        # (equal to the old value) when it succeeds: either way it ends up holding the old value.
        ptr, cmp, new = op.operands
        expected = self.fresh()
        ty = msl_type(op.result.type)
        self.line(f"{ty} {expected} = {self.value(cmp)};")
        self.line(f"atomic_compare_exchange_weak_explicit({self.address(ptr)}, &{expected}, "
                  f"{self.value(new)}, {_RELAXED}, {_RELAXED});")
        self.let(op, expected)

    def op_plane_reduce(self, op: Op) -> None:
        fn = _PLANE_REDUCE[op.attrs["kind"]]
        self.elementwise(op, lambda a: f"{fn}({a[0]})")

    def op_plane_vote(self, op: Op) -> None:
        fn = _PLANE_VOTE[op.attrs["kind"]]
        self.elementwise(op, lambda a: f"{fn}({a[0]})")

    def op_plane_broadcast(self, op: Op) -> None:
        self.elementwise(op, lambda a: f"simd_shuffle({a[0]}, ushort({a[1]}))")

    def op_plane_scan(self, op: Op) -> None:
        fn = ("simd_prefix_" + ("inclusive" if op.attrs["inclusive"] else "exclusive") + "_"
              + ("sum" if op.attrs["kind"] == "sum" else "product"))
        self.elementwise(op, lambda a: f"{fn}({a[0]})")

    def op_plane_ballot(self, op: Op) -> None:
        # simd_ballot gives a simd_vote (64 bits, one per lane): split into the IR's vec4<u32>
        bits = self.fresh()
        self.line(f"uint64_t const {bits} = uint64_t(simd_ballot({self.value(op.operands[0])}));")
        words = []
        for expr in (f"uint32_t({bits})", f"uint32_t({bits} >> 32)", "0u", "0u"):
            name = self.fresh()
            self.line(f"uint32_t const {name} = {expr};")
            words.append(name)
        self.comps[op.result.id] = words

    def op_plane_shuffle(self, op: Op) -> None:
        fn = {"xor": "simd_shuffle_xor", "up": "simd_shuffle_up",
              "down": "simd_shuffle_down"}[op.attrs["kind"]]
        self.elementwise(op, lambda a: f"{fn}({a[0]}, ushort({a[1]}))")

    def op_plane_elect(self, op: Op) -> None:
        self.let(op, "simd_is_first()")

    def op_debug_print(self, op: Op) -> None:
        # Metal cannot print here (CubeCL's `os_log_default.log` needs Metal 3.2 and a log
        # state); the CPU runtime prints. The comment keeps the call visible where it was.
        runtime = iter(op.operands)
        args = [self.value(next(runtime)) if t is None else
                (json.dumps(t) if isinstance(t, str) else repr(t))
                for t in op.attrs.get("args", ())]
        shown = ", ".join([json.dumps(str(op.attrs["format"])), *args])
        self.line(f"// debug_print({shown}) -- printed by Device.cpu() only")

    def op_scf_if(self, op: Op) -> None:
        self.line(f"if({self.value(op.operands[0])}) {{")
        self.block(op.regions[0])
        if len(op.regions) > 1 and op.regions[1].ops:
            self.loc = None
            self.line("} else {")
            self.block(op.regions[1])
        self.loc = None
        self.line("}")

    def op_scf_switch(self, op: Op) -> None:
        sel = op.operands[0]
        assert isinstance(sel.type, Ty)
        self.line(f"switch({self.value(sel)}) {{")
        labels = [" ".join(f"case {msl_literal(v, sel.type.elem)}:" for v in values)
                  for values in op.attrs["cases"]] + ["default:"]
        for label, region in zip(labels, op.regions):
            self.loc = None
            self.line(f"{label} {{")
            self.block(region)
            self.loc = None
            self.line("break;")  # no fall-through (the IR's switch has none)
            self.line("}")
        self.line("}")

    def op_scf_for(self, op: Op) -> None:
        start, end, step = (self.value(v) for v in op.operands)
        (body,) = op.regions
        (iv,) = body.args
        ty = msl_type(iv.type)
        n = iv.name
        self.line(f"for({ty} {n} = {start}; {n} < {end}; {n} += {step}) {{")
        self.block(body)
        self.loc = None
        self.line("}")

    def op_scf_while(self, op: Op) -> None:
        cond, body = op.regions
        self.line("while(true) {")
        # One C++ scope for both regions: the body may use what the condition computed.
        self.scopes.append(_Scope())
        try:
            for inner in [*cond.ops, *body.ops]:
                self.op(inner)
        finally:
            self.scopes.pop()
        self.loc = None
        self.line("}")

    def op_scf_condition(self, op: Op) -> None:
        self.line(f"if(!{self.value(op.operands[0])}) {{ break; }}")


# The ops this target lowers (`tests/test_msl.py` checks they cover `ir.core.OPS`).
_LOWER: dict[str, Callable[[_Emitter, Op], None]] = lowerings(_Emitter)
MSL_OPS: tuple[str, ...] = tuple(_LOWER)

_TYPEDEFS = (
    "typedef unsigned int uint32_t;",
    "typedef unsigned char uint8_t;",
    "typedef unsigned short uint16_t;",
    "typedef unsigned long int uint64_t;",
    "typedef signed char int8_t;",
    "typedef signed short int16_t;",
    "typedef signed int int32_t;",
    "typedef signed long int int64_t;",
)


def compile_msl(kernel: KernelDefinition) -> CompiledSource:
    """MSL for `kernel` (already through the passes). Reads the IR; never changes it."""
    e = _Emitter(kernel)
    e.block(kernel.body)
    e.loc = None
    e.line("return;")
    prologue = _shared_prologue(e, kernel)

    head = ["#include <metal_stdlib>", "using namespace metal;", *_TYPEDEFS]
    head += [vector_struct(t) for t in e.vector_types]
    head += ["", "struct info_st {"]
    scalars, static = [], ""
    for f in e.info.fields:
        elem = "uint32_t" if f.elem == "bool" else _SCALAR[Elem(f.elem)]
        if f.name.startswith("scalars_"):
            scalars.append(f"{elem} {f.name}[{f.count}];")
        elif f.name == "static_meta":
            static = f"{elem} {f.name}[{f.count}];"
        # dynamic_meta is not a member: it follows the struct (`dynamic_meta_vN` below)
    head.append("    " + "\n    ".join(scalars) + static)  # the seed's one-line join
    head.append("};")

    params = []
    for b in kernel.buffers:
        const = b.value.id in e.const_buffers
        params.append(f"{e.pointer_type('device', b.item, const)} {b.value.name} "
                      f"[[buffer({b.index})]]")
    params.append(f"constant info_st const* const {e.info_ptr}")
    for attr in sorted(e.builtins, key=_BUILTIN_ORDER.index):
        ty = "uint32_t" if attr in _SCALAR_BUILTINS else "uint3"
        params.append(f"{ty} const {e.builtins[attr]} [[{attr}]]")
    x, y, z = kernel.cube_dim
    head.append(f"[[max_total_threads_per_threadgroup({x * y * z})]] [[kernel]] void "
                f"{kernel.entry}({', '.join(params)}) {{")
    head.append(f"constant uint32_t const* const {e.dyn_meta} = "
                f"reinterpret_cast<constant uint32_t const*>({e.info_ptr} + 1);")
    head.append(f"constant info_st const& {e.info_ref} = *{e.info_ptr};")

    line_map: dict[int, Loc] = {}
    for decl, loc in e.shared_decls:
        head.append(decl)
        if loc is not None:
            line_map[len(head)] = loc
    head += prologue
    lines = head + e.body + ["}"]
    line_map.update({n + len(head): loc for n, loc in e.body_map.items()})
    return CompiledSource("msl", kernel.entry, "\n".join(lines) + "\n", e.info, line_map)


def _shared_prologue(e: _Emitter, kernel: KernelDefinition) -> list[str]:
    """Zero the threadgroup arrays, then a barrier: the IR promises shared memory starts at zero
    (WGSL guarantees it), while Metal's threadgroup memory starts undefined."""
    if not e.shared_zero:
        return []
    x, y, z = kernel.cube_dim
    unit = e.builtin("thread_index_in_threadgroup")
    out = ["// Metal's threadgroup memory starts undefined; the IR's (as WGSL's) starts at zero."]
    for name, arr in e.shared_zero:
        i = e.fresh()
        out.append(f"for(uint32_t {i} = uint32_t({unit}); {i} < {arr.length}; "
                   f"{i} += {x * y * z}) {{")
        if isinstance(arr.item, Atomic):
            zero = f"{_SCALAR[arr.item.elem]}(0)"
            out.append(f"atomic_store_explicit(&{name}[{i}], {zero}, {_RELAXED});")
        else:
            out.append(f"{name}[{i}] = {{}};")
        out.append("}")
    out.append("threadgroup_barrier(mem_flags::mem_threadgroup);")
    return out


class MslTarget:
    name = "msl"
    shown_only = True

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        return compile_msl(kernel)
