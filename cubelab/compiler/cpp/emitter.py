"""The one C-family emitter: IR → C++-shaped kernel source, in whichever dialect it is given.

Contract: `compile_c(kernel, dialect)` turns a `KernelDefinition` that has been through the passes
into the dialect's source and a line map (generated line → the kernel line that produced it). It
reads the IR and never changes it. Everything here is what Metal and CUDA write the same way —
SSA values as `T const vN = ...;`, pointers as `T const* const vN = &buf[i];`, vectors as the
seed's `struct float_4 { float i_0; ... }` written one component at a time, structured control
flow, the info block's reads — and every spelling that differs (types, address spaces, builtins,
barriers, atomics, plane ops, math names, the kernel's signature) is asked of the dialect object
(`dialect.py`), so a dialect module holds only its own words.

Why one emitter: CubeCL's `cubecl-cpp` shares one C++ emitter between its CUDA, HIP and Metal
dialects (tinygrad's `CStyleLanguage` is the same idea); a second C-family target copied from the
first would be 700 lines that drift apart. Why a *given* dialect (not a module-global table that
each target fills in): the emitter then imports no dialect, and a dialect imports only this
module — no base↔metal import circle, and two dialects can be used side by side in one process.

Traps:
- vector arithmetic is per component (`float const v42 = v0 * v41;` for `i_0` ... `i_3`), and a
  whole `float_4{...}` is built only where a use needs the whole vector (a store, a call); the
  name caches are per C++ block (`_Scope`), so a component extracted inside an `if` is not reused
  after it;
- shared memory is declared at kernel scope (Metal requires it) and zeroed by the kernel before
  its body, then a barrier: the IR promises zeros (WGSL's guarantee) and neither Metal nor CUDA
  gives them;
- fresh names (info pointer, builtins, components) take ids after the kernel's largest, so they
  never collide with IR values; the order in which they are drawn is part of the output (the MSL
  golden test pins it), so reorder `fresh()` calls only on purpose;
- integer edge cases the IR defines (x / 0, i32 MIN / -1, i32 overflow) are plain C++ operators
  unless the dialect asks for the defined forms (`defined_integer_edges`: a dialect whose source
  runs must, since C++ leaves them undefined; Metal's, shown only, prints CubeCL's plain form).

Size: ~720 lines, over the project's ~700, on purpose: one `CEmitter` with one `op_*` method per IR
op, all built on the same per-component vector machinery (`component`, `value`, `elementwise`)
and scope-local name caches, plus the frame every dialect shares (`compile_c`, `prelude`,
`shared_prologue`, `CTarget`); it replaces the 737-line standalone MSL emitter and serves two
dialects, which hold only their words (~170 and ~250 lines).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from cubelab.compiler.base import (CodegenError, CompiledSource, InfoReads, InfoSlots,
                                   LowersPluginOps, lowerings, plugin_spelling)
from cubelab.compiler.info import info_layout
from cubelab.compiler.spelling import BINARY, COMPARE, LOGICAL, REMAINDER, UNARY
from cubelab.ir.analysis import all_ops, bounds_tests, buffer_io, max_value_id
from cubelab.ir.core import Block, KernelDefinition, Loc, Op, Value
from cubelab.ir.passes import GUARD_BUDGET
from cubelab.ir.types import Array, Atomic, Elem, Pointer, RuntimeArray, Ty

from cubelab.compiler.cpp.dialect import TYPEDEFS

if TYPE_CHECKING:
    from cubelab.compiler.cpp.dialect import Dialect


def vector_types(kernel: KernelDefinition, ops: list[Op]) -> list[Ty]:
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


def written_buffers(kernel: KernelDefinition, ops: list[Op]) -> set[int]:
    """Ids of buffer values that get a non-`const` pointer: declared writable (`SliceMut`) and
    written by the IR (`ir/analysis.py`, the same answer the runtime's write set uses)."""
    io = buffer_io(kernel, ops)
    return {b.value.id for b, use in zip(kernel.buffers, io) if b.writable and use.writable}


@dataclass
class _Scope:
    """Names visible in one C++ block: extracted components and materialized whole vectors."""

    names: dict[tuple[object, ...], str] = field(default_factory=dict)


class CEmitter(InfoReads):
    """Writes one kernel's body in `dialect`; `compile_c` frames it. One `op_*` method per IR op
    (`lowerings` builds the dispatch table), each asking the dialect for what differs."""

    def __init__(self, kernel: KernelDefinition, dialect: "Dialect") -> None:
        self.kernel = kernel
        self.d = dialect
        self.info = info_layout(kernel)
        self.body: list[str] = []
        self.body_map: dict[int, Loc] = {}
        self.shared_decls: list[tuple[str, Loc | None]] = []
        self.shared_zero: list[tuple[str, Array]] = []
        ops = all_ops(kernel)
        self.vector_types = vector_types(kernel, ops)
        self.next_id = max_value_id(kernel, ops) + 1
        self.place: dict[int, str] = {}  # pointer value id -> lvalue (locals, shared arrays)
        self.ptr_space: dict[int, tuple[str, bool]] = {}  # pointer id -> (IR space, const)
        self.splat: dict[int, str] = {}  # vector id -> the scalar every component equals
        self.comps: dict[int, list[str]] = {}  # vector id -> its component scalars
        self.whole: set[int] = set()  # vectors defined as a whole (loads, arguments, ...)
        self.scopes: list[_Scope] = [_Scope()]
        self.builtins: dict[str, str] = {}  # dialect parameter (Metal attribute) -> its name
        self.slots = InfoSlots(kernel, self.info)
        written = written_buffers(kernel, ops)
        for b in kernel.buffers:
            self.ptr_space[b.value.id] = ("global", b.value.id not in written)
        self.const_buffers = {b.value.id for b in kernel.buffers if b.value.id not in written}
        self.info_ptr = self.fresh()
        self.info_ref = f"info_{self.fresh()}"
        self.dyn_meta = f"dynamic_meta_{self.fresh()}"
        self.info_prefix, self.dynamic_meta_array = f"{self.info_ref}.", self.dyn_meta
        self.nonzero = dialect.nonzero
        self.loc: Loc | None = None
        self.dropped_prints: list[int | None] = []  # kernel lines of debug_prints shown as comments
        # the loop guard (ir/passes.py LoopGuard), where the dialect runs it
        self.guarded = dialect.loop_guard and kernel.loop_budget is not None
        # the indices that may be out of range (`ir/analysis.py` bounds_tests), and for each
        # pointer made from one the test that its item exists (OPS' `memory.index` rule)
        self.bounds = bounds_tests(kernel, ops) if dialect.bounds_tests else {}
        self.inside: dict[int, str] = {}

    # -- names and lines ----------------------------------------------------------------------
    def fresh(self) -> str:
        name = f"v{self.next_id}"
        self.next_id += 1
        return name

    def line(self, text: str) -> None:
        self.body.append(text)
        if self.loc is not None:
            self.body_map[len(self.body)] = self.loc

    def type(self, ty: object) -> str:
        """The dialect's spelling of a value type: `float`, `uint32_t`, `float_4` (never the
        native `float4`: the seed's structs), an atomic."""
        if isinstance(ty, Ty):
            base = self.d.scalar[ty.elem]
            return base if ty.width == 1 else f"{base}_{ty.width}"
        if isinstance(ty, Atomic):
            return self.d.atomic_type(self.d.scalar[ty.elem])
        raise CodegenError(f"no {self.d.label} value type for {ty}")

    def scalar(self, ty: object) -> str:
        """The scalar type of `ty`'s elements (`float` for a `float_4`)."""
        assert isinstance(ty, Ty)
        return self.d.scalar[ty.elem]

    def define(self, ty: object, name: str, expr: str) -> None:
        self.line(f"{self.type(ty)} const {name} = {expr};")

    def let(self, op: Op, expr: str) -> None:
        r = op.result
        self.define(r.type, r.name, expr)
        self.whole.add(r.id)

    def lookup(self, key: tuple[object, ...]) -> str | None:
        for s in reversed(self.scopes):
            if key in s.names:
                return s.names[key]
        return None

    def builtin(self, param: str) -> str:
        """The name of a kernel parameter the dialect declares on first use (Metal's
        `[[threadgroup_position_in_grid]]` and friends)."""
        if param not in self.builtins:
            self.builtins[param] = f"{param}_{self.fresh()}"
        return self.builtins[param]

    def literal(self, value: object, elem: Elem) -> str:
        return self.d.literal(value, elem)

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
            self.line(f"{self.scalar(ty)} const {name} = {self.value(v)}.i_{i};")
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
            self.define(v.type, v.name, f"{self.type(v.type)}{{{', '.join(parts)}}}")
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
        base = self.scalar(r.type)
        for i in range(r.type.width):
            args = [self.component(v, i) for v in op.operands]
            name = self.fresh()
            self.line(f"{base} const {name} = {scalar(args)};")
            names.append(name)
        self.comps[r.id] = names

    def components(self, op: Op, exprs: list[str]) -> None:
        """`op`'s vector result as one fresh scalar per component, each `exprs[i]`."""
        base = self.scalar(op.result.type)
        names = []
        for expr in exprs:
            name = self.fresh()
            self.line(f"{base} const {name} = {expr};")
            names.append(name)
        self.comps[op.result.id] = names

    # -- pointers -----------------------------------------------------------------------------
    def deref(self, ptr: Value) -> str:
        return self.place[ptr.id] if ptr.id in self.place else f"*{ptr.name}"

    def address(self, ptr: Value) -> str:
        return f"&{self.place[ptr.id]}" if ptr.id in self.place else ptr.name

    def pointer_type(self, space: str, pointee: object, const: bool) -> str:
        """`device float const* const` (Metal) / `float const* const` (CUDA): the address space
        is the dialect's word for the IR's space ("global", "shared", "function")."""
        qualifier = self.d.space[space]
        head = f"{qualifier} " if qualifier else ""
        return f"{head}{self.type(pointee)} {'const' if const else ''}* const"

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
        if lower is None:  # a plug-in op (ir/plugins.py): its spelling, one component at a time
            spelling = plugin_spelling(op, self.d.name, self.d.label)
            self.elementwise(op, lambda a: spelling.format(*a))
            return
        lower(self, op)

    # -- one method per op --------------------------------------------------------------------
    def op_arith_constant(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        lit = self.literal(op.attrs["value"], ty.elem)
        if ty.width == 1:
            self.let(op, lit)
        else:
            self.splat[op.result.id] = lit

    def _wrapping(self, ty: object) -> bool:
        """i32 arithmetic must wrap (the IR's rule), which C++ leaves undefined: the dialect
        says whether to spell it out (through u32, where wrapping is defined)."""
        return self.d.defined_integer_edges and isinstance(ty, Ty) and ty.elem is Elem.I32

    def _binary(self, op: Op) -> None:
        sym = BINARY[op.name]
        if self._wrapping(op.result.type) and op.name in ("arith.add", "arith.sub", "arith.mul"):
            u = self.d.scalar[Elem.U32]
            i = self.d.scalar[Elem.I32]
            self.elementwise(op, lambda a: f"{i}({u}({a[0]}) {sym} {u}({a[1]}))")
            return
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    op_arith_add = op_arith_sub = op_arith_mul = _binary
    op_arith_bitand = op_arith_bitor = op_arith_bitxor = _binary

    def op_arith_div(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        if ty.elem is Elem.F32 or not self.d.defined_integer_edges:
            self._binary(op)
            return
        # the IR's defined results (OPS): x / 0 == x, i32 MIN / -1 == MIN
        zero = self.literal(0, ty.elem)
        if ty.elem is Elem.I32:
            low, minus = self.literal(-(2**31), ty.elem), self.literal(-1, ty.elem)
            self.elementwise(op, lambda a: f"({a[1]} == {zero} || ({a[0]} == {low} && "
                                           f"{a[1]} == {minus}) ? {a[0]} : {a[0]} / {a[1]})")
        else:
            self.elementwise(op, lambda a: f"({a[1]} == {zero} ? {a[0]} : {a[0]} / {a[1]})")

    def _shift(self, op: Op) -> None:
        # C++ leaves a shift by >= the width undefined; the language takes the amount mod 32
        sym = BINARY[op.name]
        if self._wrapping(op.result.type) and op.name == "arith.shl":
            u, i = self.d.scalar[Elem.U32], self.d.scalar[Elem.I32]
            self.elementwise(op, lambda a: f"{i}({u}({a[0]}) {sym} ({a[1]} & 31u))")
            return
        self.elementwise(op, lambda a: f"{a[0]} {sym} ({a[1]} & 31u)")

    op_arith_shl = op_arith_shr = _shift

    def _unary(self, op: Op) -> None:
        sym = UNARY[op.name]
        if self._wrapping(op.result.type) and op.name == "arith.neg":  # -MIN == MIN
            u, i = self.d.scalar[Elem.U32], self.d.scalar[Elem.I32]
            self.elementwise(op, lambda a: f"{i}(0u - {u}({a[0]}))")
            return
        self.elementwise(op, lambda a: f"{sym}{a[0]}")

    op_arith_bitnot = op_arith_not = op_arith_neg = _unary

    def op_arith_select(self, op: Op) -> None:
        # A scalar condition picks whole vectors; per component it picks the same side each time.
        self.elementwise(op, lambda a: f"{a[0]} ? {a[1]} : {a[2]}")

    def op_arith_rem(self, op: Op) -> None:
        ty = op.result.type
        assert isinstance(ty, Ty)
        if ty.elem.is_float:  # the IR's float remainder truncates, as C's fmod does
            fmod = self.d.float_rem
            self.elementwise(op, lambda a: f"{fmod}({a[0]}, {a[1]})")
        elif self.d.defined_integer_edges:  # x % 0 == 0, i32 MIN % -1 == 0 (OPS)
            zero = self.literal(0, ty.elem)
            bad = (f" || {{0}} == {self.literal(-1, ty.elem)}" if ty.elem is Elem.I32 else "")
            self.elementwise(op, lambda a: f"({a[1]} == {zero}{bad.format(a[1])} ? {zero} : "
                                           f"{a[0]} {REMAINDER} {a[1]})")
        else:
            self.elementwise(op, lambda a: f"{a[0]} {REMAINDER} {a[1]}")

    def _min_max(self, op: Op) -> None:
        fn = self.d.min_max(op.name[6:], op.result.type.elem)  # type: ignore[union-attr]
        self.elementwise(op, lambda a: f"{fn}({a[0]}, {a[1]})")

    op_arith_min = op_arith_max = _min_max

    def op_arith_cmp(self, op: Op) -> None:
        sym = COMPARE[op.attrs["pred"]]
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    def _logical(self, op: Op) -> None:  # per component, so always the scalar operator
        sym = LOGICAL[op.name]
        self.elementwise(op, lambda a: f"{a[0]} {sym} {a[1]}")

    op_arith_and = op_arith_or = _logical

    def op_arith_cast(self, op: Op) -> None:
        ty, src = op.result.type, op.operands[0].type
        assert isinstance(ty, Ty) and isinstance(src, Ty)
        cast = self.d.cast(src.elem, ty.elem)
        self.elementwise(op, lambda a: cast.format(a[0]))

    def op_arith_bitcast(self, op: Op) -> None:
        ty, src = op.result.type, op.operands[0].type
        assert isinstance(ty, Ty) and isinstance(src, Ty)
        cast = self.d.bitcast(src.elem, ty.elem)
        self.elementwise(op, lambda a: cast.format(a[0]))

    def op_math_unary(self, op: Op) -> None:
        fn = op.attrs["fn"]
        ty = op.operands[0].type
        assert isinstance(ty, Ty)
        form = self.d.math_unary(fn, ty.elem)
        if form is None:
            raise CodegenError(f"math function {fn!r} has no {self.d.label} lowering")
        self.elementwise(op, lambda a: form.format(a[0]))

    def op_math_binary(self, op: Op) -> None:
        fn = op.attrs["fn"]
        form = self.d.math_binary.get(fn)
        if form is None:
            raise CodegenError(f"math function {fn!r} has no {self.d.label} lowering")
        self.elementwise(op, lambda a: form.format(*a))

    def op_math_fma(self, op: Op) -> None:
        fma = self.d.fma
        self.elementwise(op, lambda a: f"{fma}({a[0]}, {a[1]}, {a[2]})")

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
        expr = self.d.builtin(self, name)
        if expr is None:
            raise CodegenError(f"builtin {name!r} has no {self.d.label} spelling")
        self.let(op, expr)

    # info.scalar, buffer.len, tensor.*: compiler.base.InfoReads (the prefix and the
    # dynamic_meta pointer are fresh names, set in __init__)
    def operand(self, v: Value) -> str:
        return self.value(v)

    def op_memory_index(self, op: Op) -> None:
        base, index = op.operands
        r = op.result
        assert isinstance(r.type, Pointer)
        if base.id in self.ptr_space:
            space, const = self.ptr_space[base.id]
        else:
            space, const = r.type.space, False
        target = self.place.get(base.id, base.name)
        ptr_ty = self.pointer_type(space, r.type.pointee, const)
        self.line(f"{ptr_ty} {r.name} = &{target}[{self.value(index)}];")
        self.ptr_space[r.id] = (space, const)
        test = self.bounds.get(r.id)
        if test is not None:
            # OPS' rule, spelled out: out of range, a load gives zero and a store or atomic is
            # dropped — never left to the device (CUDA faults, or reads a neighbour's data).
            # Forming the address is harmless; only the accesses below are guarded.
            length = (self._static_meta(self.slots.length(op)) if test.length is None
                      else self.literal(test.length, Elem.U32))
            self.inside[r.id] = f"{self.value(index)} < {length}"

    def _tested(self, op: Op, expr: str) -> str:
        """A read through operand 0: `expr`, or zero where the item does not exist (a C
        conditional evaluates only the branch it takes: no out-of-range read happens)."""
        test = self.inside.get(op.operands[0].id)
        if test is None:
            return expr
        return f"({test}) ? {expr} : {self.type(op.result.type)}{{}}"

    def _write(self, stmt: str, ptr: Value) -> None:
        """A write through `ptr`, dropped where the item does not exist."""
        test = self.inside.get(ptr.id)
        self.line(stmt if test is None else f"if ({test}) {{ {stmt} }}")

    def op_memory_load(self, op: Op) -> None:
        self.let(op, self._tested(op, self.deref(op.operands[0])))

    def op_memory_store(self, op: Op) -> None:
        ptr, value = op.operands
        self._write(f"{self.deref(ptr)} = {self.value(value)};", ptr)

    def op_var_declare(self, op: Op) -> None:
        r = op.result
        assert isinstance(r.type, Pointer)
        pointee = r.type.pointee
        name = f"l{r.id}"
        # Zero-initialised, as WGSL's `var` is: every target of one IR must agree.
        if isinstance(pointee, Array):
            self.line(f"{self.type(pointee.item)} {name}[{pointee.length}] = {{}};")
        else:
            self.line(f"{self.type(pointee)} {name} = {{}};")
        self.place[r.id] = name
        self.ptr_space[r.id] = ("function", False)

    def op_shared_declare(self, op: Op) -> None:
        r = op.result
        assert isinstance(r.type, Pointer) and isinstance(r.type.pointee, Array)
        arr = r.type.pointee
        name = f"s{r.id}"
        label = op.attrs.get("name", "")
        self.shared_decls.append(
            (f"{self.d.shared_decl} {self.type(arr.item)} {name}[{arr.length}];"
             + (f" // {label}" if label else ""), op.loc))
        self.shared_zero.append((name, arr))
        self.place[r.id] = name
        self.ptr_space[r.id] = ("shared", False)

    def op_sync_cube(self, op: Op) -> None:
        self.line(self.d.barrier("cube"))

    def op_sync_storage(self, op: Op) -> None:
        self.line(self.d.barrier("storage"))

    def op_sync_uniform_load(self, op: Op) -> None:
        # No C-family target has WGSL's uniform load: the barrier, then a plain load (what
        # CubeCL's non-WGSL backends do); every unit reads the same shared item — an atomic
        # one with the dialect's atomic load.
        self.line(self.d.barrier("cube"))
        ptr = op.operands[0]
        if isinstance(getattr(ptr.type, "pointee", None), Atomic):
            self.let(op, self._tested(op, self.d.atomic_load(self.address(ptr),
                                                             self.type(op.result.type))))
        else:
            self.let(op, self._tested(op, self.deref(ptr)))

    def op_atomic_load(self, op: Op) -> None:
        self.let(op, self._tested(op, self.d.atomic_load(self.address(op.operands[0]),
                                                         self.type(op.result.type))))

    def op_atomic_store(self, op: Op) -> None:
        ptr, value = op.operands
        self._write(self.d.atomic_store(self.address(ptr), self.value(value)) + ";", ptr)

    def op_atomic_rmw(self, op: Op) -> None:
        ptr, value = op.operands
        expr = self.d.atomic_rmw(op.attrs["kind"], self.address(ptr), self.value(value))
        test = self.inside.get(ptr.id)
        if test is None:
            self.let(op, expr)
            return
        old = self.fresh()  # dropped out of range: the old value is zero
        self.line(f"{self.type(op.result.type)} {old} = {{}};")
        self.line(f"if ({test}) {{ {old} = {expr}; }}")
        self.let(op, old)

    def op_atomic_cas(self, op: Op) -> None:
        ptr, cmp, new = op.operands
        test = self.inside.get(ptr.id)
        if test is None:
            self.d.atomic_cas(self, op, self.address(ptr), self.value(cmp), self.value(new))
            return
        # out of range the exchange is dropped and the old value is zero: the dialect writes
        # its exchange into a scope of its own, under the test, for a stand-in of the op
        old = self.fresh()
        self.line(f"{self.type(op.result.type)} {old} = {{}};")
        self.line(f"if ({test}) {{")
        inner = Op(op.name, op.operands, [Value(self.next_id, op.result.type)], op.attrs, [],
                   op.loc)
        self.next_id += 1
        self.scopes.append(_Scope())
        try:
            self.d.atomic_cas(self, inner, self.address(ptr), self.value(cmp), self.value(new))
        finally:
            self.scopes.pop()
        self.line(f"    {old} = {inner.result.name};")
        self.line("}")
        self.let(op, old)

    # plane (subgroup) ops: the dialect's functions, per component
    def op_plane_reduce(self, op: Op) -> None:
        form = self.d.plane_reduce(op.attrs["kind"])
        self.elementwise(op, lambda a: form.format(a[0]))

    def op_plane_vote(self, op: Op) -> None:
        form = self.d.plane_vote(op.attrs["kind"])
        self.elementwise(op, lambda a: form.format(a[0]))

    def op_plane_broadcast(self, op: Op) -> None:
        form = self.d.plane_broadcast
        self.elementwise(op, lambda a: form.format(a[0], a[1]))

    def op_plane_scan(self, op: Op) -> None:
        form = self.d.plane_scan(op.attrs["kind"], bool(op.attrs["inclusive"]))
        self.elementwise(op, lambda a: form.format(a[0]))

    def op_plane_ballot(self, op: Op) -> None:
        self.d.plane_ballot(self, op)

    def op_plane_shuffle(self, op: Op) -> None:
        form = self.d.plane_shuffle(self, op.attrs["kind"])
        self.elementwise(op, lambda a: form.format(a[0], a[1]))

    def op_plane_elect(self, op: Op) -> None:
        self.let(op, self.d.plane_elect(self))

    def op_debug_print(self, op: Op) -> None:
        # Printed by the CPU runtime only; the comment keeps the call visible where it was.
        runtime = iter(op.operands)
        args = [self.value(next(runtime)) if t is None else
                (json.dumps(t) if isinstance(t, str) else repr(t))
                for t in op.attrs.get("args", ())]
        shown = ", ".join([json.dumps(str(op.attrs["format"])), *args])
        self.line(f"// debug_print({shown}) -- printed by Device.cpu() only")
        self.dropped_prints.append(op.loc.line if op.loc is not None else None)

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
        labels = [" ".join(f"case {self.literal(v, sel.type.elem)}:" for v in values)
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
        ty = self.type(iv.type)
        n = iv.name
        guard = op.attrs.get("guard") if self.guarded else None
        self.line(f"for({ty} {n} = {start}; {n} < {end}; {n} += {step}) {{")
        if guard is not None:
            self._count(guard)
        self.block(body)
        self.loc = None
        self.line("}")

    def op_scf_while(self, op: Op) -> None:
        cond, body = op.regions
        self.line("while(true) {")
        guard = op.attrs.get("guard") if self.guarded else None
        if guard is not None:
            self._count(guard)
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

    def _count(self, guard: object) -> None:
        """The loop guard (`ir/passes.py` LoopGuard) for a dialect whose source runs: one
        iteration counter per unit for every loop; the first iteration past the budget records
        its loop in the launch's status word, and every loop then ends at once. (Unlike WGSL on
        lavapipe, no driver here ends a loop by itself, so there is no "ended by the driver"
        check.)"""
        budget = self.kernel.loop_budget
        code = GUARD_BUDGET + int(guard)  # type: ignore[call-overload]
        self.line(f"guard_n += 1u; if(guard_n > {budget}u) {{ if(guard_n == {budget + 1}u) "  # type: ignore[operator]
                  f"{{ {self.d.atomic_rmw('max', 'guard_status', f'{code}u')}; }} break; }}")


# The ops the emitter lowers (`tests/test_msl.py`, `tests/test_cuda.py` check they cover
# `ir.core.OPS`).
_LOWER: dict[str, Callable[[CEmitter, Op], None]] = lowerings(CEmitter)
C_OPS: tuple[str, ...] = tuple(_LOWER)


def compile_c(kernel: KernelDefinition, dialect: "Dialect") -> CompiledSource:
    """`kernel` (already through the passes) in `dialect`. Reads the IR; never changes it."""
    e = CEmitter(kernel, dialect)
    e.block(kernel.body)
    e.loc = None
    e.line("return;")
    prologue = shared_prologue(e, kernel)
    head = dialect.head(e, kernel)
    line_map: dict[int, Loc] = {}
    for decl, loc in e.shared_decls:
        head.append(decl)
        if loc is not None:
            line_map[len(head)] = loc
    head += prologue
    lines = head + e.body + ["}"]
    line_map.update({n + len(head): loc for n, loc in e.body_map.items()})
    notices = dialect.notices(kernel, e)
    return CompiledSource(dialect.name, kernel.entry, "\n".join(lines) + "\n", e.info, line_map,
                          notices)


class CTarget(LowersPluginOps):
    """A C-family target (`compiler/base.py` `Target`): the emitter given one dialect. A
    dialect module's target is a subclass naming its `dialect`, its `lexer` (pygments) and
    whether it is only shown here."""

    dialect: "Dialect"
    lexer = "cpp"
    shown_only = True

    @property
    def name(self) -> str:
        return self.dialect.name

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        return compile_c(kernel, self.dialect)


def prelude(e: CEmitter, long: str) -> list[str]:
    """What every C-family kernel starts with after its includes: the fixed-width typedefs
    (64-bit ones as `long`), one struct per vector type it uses, the info struct."""
    return ([t.format(long=long) for t in TYPEDEFS] + [vector_struct(e, t) for t in e.vector_types]
            + info_struct(e))


def info_struct(e: CEmitter) -> list[str]:
    """`struct info_st { ... };` as `compiler/info.py` lays the block out: the scalar groups
    then `static_meta`, on one line as the seed prints it; `dynamic_meta` is not a member (it
    follows the struct, read through a pointer past it)."""
    scalars, static = [], ""
    for f in e.info.fields:
        elem = e.d.scalar[Elem.U32] if f.elem == "bool" else e.d.scalar[Elem(f.elem)]
        if f.name.startswith("scalars_"):
            scalars.append(f"{elem} {f.name}[{f.count}];")
        elif f.name == "static_meta":
            static = f"{elem} {f.name}[{f.count}];"
    return ["", "struct info_st {", "    " + "\n    ".join(scalars) + static, "};"]


def vector_struct(e: CEmitter, ty: Ty) -> str:
    """`struct alignas(16) float_4 { float i_0; ... };` — the seed's stand-in for `float4`."""
    base = e.d.scalar[ty.elem]
    size = ty.elem.size * ty.width if ty.elem is not Elem.BOOL else ty.width
    align = 1 << (size - 1).bit_length()
    fields = " ".join(f"{base} i_{i};" for i in range(ty.width))
    return f"struct {e.d.align.format(align)} {base}_{ty.width} {{ {fields} }};"


def shared_prologue(e: CEmitter, kernel: KernelDefinition) -> list[str]:
    """Zero the shared arrays, then a barrier: the IR promises shared memory starts at zero
    (WGSL guarantees it), while Metal's threadgroup and CUDA's __shared__ memory start
    undefined."""
    if not e.shared_zero:
        return []
    x, y, z = kernel.cube_dim
    unit = e.d.unit_index(e)
    u32 = e.d.scalar[Elem.U32]
    out = [e.d.shared_zero_comment]
    for name, arr in e.shared_zero:
        i = e.fresh()
        out.append(f"for({u32} {i} = {unit}; {i} < {arr.length}; {i} += {x * y * z}) {{")
        if isinstance(arr.item, Atomic):
            zero = f"{e.d.scalar[arr.item.elem]}(0)"
            out.append(e.d.atomic_store(f"&{name}[{i}]", zero) + ";")
        else:
            out.append(f"{name}[{i}] = {{}};")
        out.append("}")
    out.append(e.d.barrier("cube"))
    return out
