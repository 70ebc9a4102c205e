"""WGSL code generation: the source wgpu validates and runs.

Layout follows the seed's MSL, translated to WebGPU:

- one `var<storage, read>` (or `read_write`) binding per buffer argument, named after its IR value;
- one `info` storage binding after them, an `info_st` struct of scalar groups then `static_meta`;
- the entry `@compute @workgroup_size(x, y, z) fn <entry>(...)` takes the primitive builtins
  (`workgroup_id`, `num_workgroups`, `local_invocation_index`, `local_invocation_id`); derived
  positions such as ABSOLUTE_POS are arithmetic already in the IR, as in the seed (its `v88`);
- every SSA value is a typed `let vN: T = ...;`, pointers are `let vN = &v2[v88];` like the seed's
  `device float_4 const* const v18 = &v2[v88];`, mutable locals are `var lN: T;`.
"""

from __future__ import annotations

import math
import struct

from cubelab.compiler.base import CodegenError, CompiledSource
from cubelab.compiler.info import info_layout
from cubelab.ir.core import Block, KernelDefinition, Loc, Op, Value
from cubelab.ir.types import Array, Pointer, RuntimeArray, Ty

_BIN = {"arith.add": "+", "arith.sub": "-", "arith.mul": "*", "arith.div": "/", "arith.rem": "%"}
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
}
_MATH = {"abs", "sqrt", "exp", "log"}


def wgsl_type(ty) -> str:  # type: ignore[no-untyped-def]
    if isinstance(ty, Ty):
        return ty.elem.value if ty.width == 1 else f"vec{ty.width}<{ty.elem.value}>"
    if isinstance(ty, Array):
        return f"array<{wgsl_type(ty.item)}, {ty.length}>"
    if isinstance(ty, RuntimeArray):
        return f"array<{wgsl_type(ty.item)}>"
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
        elif n == "arith.neg":
            self.let(op, f"-{a[0]}", indent)
        elif n == "arith.cast":
            self.let(op, f"{wgsl_type(op.result.type)}({a[0]})", indent)
        elif n == "math.unary":
            fn = op.attrs["fn"]
            if fn not in _MATH:
                raise CodegenError(f"math function {fn!r} has no WGSL lowering yet")
            self.let(op, f"{fn}({a[0]})", indent)
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
        e.line(f"{f.name}: array<{elem}, {f.count}>,", 1)
    e.line("}", 0)
    e.line(f"@group(0) @binding({len(kernel.buffers)}) var<storage, read> info: info_st;", 0)
    e.line("", 0)
    x, y, z = kernel.cube_dim
    e.line(f"@compute @workgroup_size({x}, {y}, {z})", 0)
    e.line(
        f"fn {kernel.entry}(@builtin(workgroup_id) workgroup_id: vec3<u32>, "
        "@builtin(num_workgroups) num_workgroups: vec3<u32>, "
        "@builtin(local_invocation_index) local_invocation_index: u32, "
        "@builtin(local_invocation_id) local_invocation_id: vec3<u32>) {",
        0,
    )
    e.emit_block(kernel.body, 1)
    e.line("}", 0)
    return CompiledSource("wgsl", kernel.entry, "\n".join(e.lines) + "\n", e.info, e.line_map)


class WgslTarget:
    name = "wgsl"

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        return compile_wgsl(kernel)
