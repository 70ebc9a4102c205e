"""WGSL code generation: the source wgpu validates and runs.

Layout follows the seed's MSL, translated to WebGPU:

- one `var<storage, read>` (or `read_write`) binding per buffer argument, named after its IR value;
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
"""

from __future__ import annotations

import functools
import math
import struct

from cubelab.compiler.base import CodegenError, CompiledSource
from cubelab.compiler.info import info_layout
from cubelab.ir.core import Block, KernelDefinition, Loc, Op, Value
from cubelab.ir.types import Array, Atomic, Pointer, RuntimeArray, Ty

_BIN = {"arith.add": "+", "arith.sub": "-", "arith.mul": "*", "arith.div": "/", "arith.rem": "%",
        "arith.bitand": "&", "arith.bitor": "|", "arith.bitxor": "^", "arith.shl": "<<",
        "arith.shr": ">>"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
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
_MATH = {"abs", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "round"}
_RMW = {"add": "atomicAdd", "sub": "atomicSub", "min": "atomicMin", "max": "atomicMax",
        "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor", "swap": "atomicExchange"}
_PLANE_REDUCE = {"sum": "subgroupAdd", "min": "subgroupMin", "max": "subgroupMax"}
_PLANE_VOTE = {"all": "subgroupAll", "any": "subgroupAny"}


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
        if math.isnan(f) or math.isinf(f):
            bits = struct.unpack("<I", struct.pack("<f", f))[0]
            s = f"bitcast<f32>({bits}u)"
        else:
            s = repr(float(struct.unpack("<f", struct.pack("<f", f))[0]))
            if "e" not in s and "." not in s:
                s += ".0"
    elif elem == "u32":
        s = f"{int(value) & 0xFFFFFFFF}u"  # type: ignore[call-overload]
    else:
        iv = int(value)  # type: ignore[call-overload]
        s = f"i32({iv})" if iv == -(2**31) else f"{iv}i"
    return s if ty.width == 1 else f"{wgsl_type(ty)}({s})"


class _Emitter:
    def __init__(self, kernel: KernelDefinition) -> None:
        self.kernel = kernel
        self.lines: list[str] = []
        self.line_map: dict[int, Loc] = {}
        self.place: dict[int, str] = {}  # pointer value id -> WGSL place expression
        self.info = info_layout(kernel)
        self.meta_index = {b.value.id: i for i, b in enumerate(kernel.buffers)}
        self.tensor_index = {b.value.id: i for i, b in enumerate(kernel.tensors())}
        self.shared_names: dict[int, str] = {}
        self.uses_subgroups = False
        for op in kernel.walk():
            if op.name == "shared.declare":
                self.shared_names[op.result.id] = f"s{op.result.id}"
            elif op.name.startswith("plane.") or (
                    op.name == "builtin.read" and op.attrs["name"].startswith("subgroup")):
                self.uses_subgroups = True
        for b in kernel.buffers:
            self.place[b.value.id] = b.value.name

    def line(self, text: str, indent: int, loc: Loc | None = None) -> None:
        self.lines.append("    " * indent + text)
        if loc is not None:
            self.line_map[len(self.lines)] = loc

    def ref(self, v: Value) -> str:
        return v.name

    def emit_block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            self.emit_op(op, indent)

    def let(self, op: Op, expr: str, indent: int) -> None:
        r = op.result
        self.line(f"let {r.name}: {wgsl_type(r.type)} = {expr};", indent, op.loc)

    def emit_op(self, op: Op, indent: int) -> None:
        n = op.name
        a = [self.ref(v) for v in op.operands]
        if n == "arith.constant":
            self.let(op, wgsl_literal(op.attrs["value"], op.result.type), indent)
        elif n == "arith.rem" and op.result.type.elem.value == "i32":  # type: ignore[union-attr]
            # naga lowers a signed `%` to SPIR-V's OpSRem, which Vulkan leaves undefined for a
            # negative operand: NVIDIA returns the *unsigned* remainder (-7 % 2 == 1, found on
            # the H200; gfx-rs/wgpu#8191). WGSL's own definition, spelled out with the division
            # (well defined: x / 0 == x, MIN / -1 == MIN), gives the same answer everywhere.
            zero = f"{wgsl_type(op.result.type)}()"
            self.let(op, f"select({a[0]} - {a[1]} * ({a[0]} / {a[1]}), {zero}, "
                         f"{a[1]} == {zero})", indent)
        elif n in _BIN:
            self.let(op, f"{a[0]} {_BIN[n]} {a[1]}", indent)
        elif n in ("arith.min", "arith.max"):
            self.let(op, f"{n[6:]}({a[0]}, {a[1]})", indent)
        elif n == "arith.cmp":
            self.let(op, f"{a[0]} {_CMP[op.attrs['pred']]} {a[1]}", indent)
        elif n in ("arith.and", "arith.or"):
            vec = op.result.type.width > 1  # type: ignore[union-attr]
            sym = {"arith.and": "&", "arith.or": "|"}[n]
            self.let(op, f"{a[0]} {sym if vec else sym * 2} {a[1]}", indent)
        elif n == "arith.not":
            self.let(op, f"!{a[0]}", indent)
        elif n == "arith.bitnot":
            self.let(op, f"~{a[0]}", indent)
        elif n == "arith.select":
            # WGSL's select(f, t, cond) puts the false value first
            self.let(op, f"select({a[2]}, {a[1]}, {a[0]})", indent)
        elif n == "arith.neg":
            self.let(op, f"-{a[0]}", indent)
        elif n == "arith.cast":
            self.let(op, f"{wgsl_type(op.result.type)}({a[0]})", indent)
        elif n == "math.unary":
            fn = op.attrs["fn"]
            if fn not in _MATH:
                raise CodegenError(f"math function {fn!r} has no WGSL lowering yet")
            if fn == "abs" and op.result.type.elem.value == "u32":  # type: ignore[union-attr]
                self.let(op, a[0], indent)
            else:
                self.let(op, f"{fn}({a[0]})", indent)
        elif n == "math.binary":
            fn = op.attrs["fn"]
            if fn != "pow":
                raise CodegenError(f"math function {fn!r} has no WGSL lowering yet")
            self.let(op, f"pow({a[0]}, {a[1]})", indent)
        elif n == "math.fma":
            self.let(op, f"fma({a[0]}, {a[1]}, {a[2]})", indent)
        elif n == "vector.extract":
            self.let(op, f"{a[0]}[{int(op.attrs['index'])}]", indent)
        elif n == "vector.splat":
            self.let(op, f"{wgsl_type(op.result.type)}({a[0]})", indent)
        elif n == "builtin.read":
            self.let(op, _BUILTINS[op.attrs["name"]], indent)
        elif n == "info.scalar":
            elem, idx = op.attrs["elem"], op.attrs["index"]
            expr = f"info.scalars_{elem}[{idx}]"
            self.let(op, f"{expr} != 0u" if elem == "bool" else expr, indent)
        elif n == "buffer.len":
            base = op.operands[0]
            if base.id not in self.meta_index:
                raise CodegenError("buffer.len on a value that is not a buffer argument")
            self.let(op, f"info.static_meta[{self.meta_index[base.id]}]", indent)
        elif n in ("tensor.rank", "tensor.shape", "tensor.stride"):
            base = op.operands[0]
            if base.id not in self.tensor_index:
                raise CodegenError(f"{n} on a value that is not a tensor argument")
            at = len(self.kernel.buffers) + 2 * self.tensor_index[base.id]
            if n == "tensor.rank":
                self.let(op, f"info.static_meta[{at}]", indent)
            elif n == "tensor.shape":
                self.let(op, f"info.dynamic_meta[info.static_meta[{at + 1}] + {a[1]}]", indent)
            else:
                self.let(op, f"info.dynamic_meta[info.static_meta[{at + 1}] + "
                             f"info.static_meta[{at}] + {a[1]}]", indent)
        elif n == "memory.index":
            base, index = op.operands
            r = op.result
            self.line(f"let {r.name} = &{self.place[base.id]}[{index.name}];", indent, op.loc)
            self.place[r.id] = f"(*{r.name})"
        elif n == "memory.load":
            self.let(op, self.place[op.operands[0].id], indent)
        elif n == "memory.store":
            ptr, value = op.operands
            self.line(f"{self.place[ptr.id]} = {value.name};", indent, op.loc)
        elif n == "shared.declare":
            self.place[op.result.id] = self.shared_names[op.result.id]
        elif n == "sync.cube":
            self.line("workgroupBarrier();", indent, op.loc)
        elif n == "sync.storage":
            self.line("storageBarrier();", indent, op.loc)
        elif n == "atomic.load":
            self.let(op, f"atomicLoad(&{self.place[op.operands[0].id]})", indent)
        elif n == "atomic.store":
            ptr, value = op.operands
            self.line(f"atomicStore(&{self.place[ptr.id]}, {value.name});", indent, op.loc)
        elif n == "atomic.rmw":
            ptr, value = op.operands
            fn = _RMW[op.attrs["kind"]]
            self.let(op, f"{fn}(&{self.place[ptr.id]}, {value.name})", indent)
        elif n == "atomic.cas":
            ptr, cmp, new = op.operands
            self.let(op, f"atomicCompareExchangeWeak(&{self.place[ptr.id]}, {cmp.name}, "
                         f"{new.name}).old_value", indent)
        elif n == "plane.reduce":
            self.let(op, f"{_PLANE_REDUCE[op.attrs['kind']]}({a[0]})", indent)
        elif n == "plane.vote":
            self.let(op, f"{_PLANE_VOTE[op.attrs['kind']]}({a[0]})", indent)
        elif n == "plane.broadcast":
            self.let(op, f"subgroupShuffle({a[0]}, {a[1]})", indent)
        elif n == "plane.elect":
            self.let(op, "subgroup_invocation_id == subgroupBroadcastFirst(subgroup_invocation_id)",
                     indent)
        elif n == "scf.while":
            cond_block, body = op.regions
            self.line("loop {", indent, op.loc)
            self.emit_block(cond_block, indent + 1)
            self.emit_block(body, indent + 1)
            self.line("}", indent)
        elif n == "scf.condition":
            self.line(f"if !({a[0]}) {{ break; }}", indent, op.loc)
        elif n == "var.declare":
            r = op.result
            assert isinstance(r.type, Pointer)
            name = f"l{r.id}"
            self.line(f"var {name}: {wgsl_type(r.type.pointee)};", indent, op.loc)
            self.place[r.id] = name
        elif n == "scf.if":
            self.line(f"if {a[0]} {{", indent, op.loc)
            self.emit_block(op.regions[0], indent + 1)
            if op.regions[1].ops:
                self.line("} else {", indent)
                self.emit_block(op.regions[1], indent + 1)
            self.line("}", indent)
        elif n == "scf.for":
            start, end, step = op.operands
            (body,) = op.regions
            (iv,) = body.args
            ty = wgsl_type(iv.type)
            ctr = f"i{iv.id}"
            self.line(
                f"for (var {ctr}: {ty} = {start.name}; {ctr} < {end.name}; "
                f"{ctr} = {ctr} + {step.name}) {{",
                indent,
                op.loc,
            )
            self.line(f"let {iv.name}: {ty} = {ctr};", indent + 1, op.loc)
            self.emit_block(body, indent + 1)
            self.line("}", indent)
        elif n == "debug.print":
            where = f" (line {op.loc.line})" if op.loc else ""
            raise CodegenError(
                f"debug_print{where} is not supported on the wgpu runtime: WGSL has no printf. "
                "Launch the kernel on the CPU runtime (Device.cpu().client()), where each unit "
                "prints its line, or remove the call")
        else:
            raise CodegenError(f"the WGSL target does not implement op {n!r}")


def compile_wgsl(kernel: KernelDefinition) -> CompiledSource:
    e = _Emitter(kernel)
    for b in kernel.buffers:
        access = "read_write" if b.writable else "read"
        ty = wgsl_type(RuntimeArray(b.item))  # type: ignore[arg-type]
        e.line(
            f"@group(0) @binding({b.index}) var<storage, {access}> {b.value.name}: {ty}; // {b.name}",
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
    e.emit_block(kernel.body, 1)
    e.line("}", 0)
    return CompiledSource("wgsl", kernel.entry, "\n".join(e.lines) + "\n", e.info, e.line_map)


class WgslTarget:
    name = "wgsl"
    shown_only = False

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        return compile_wgsl(kernel)
