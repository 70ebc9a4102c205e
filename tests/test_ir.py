"""The IR layer on its own: scope, printer, CheckedIo's two rules, the info layout, WGSL."""

import pytest

from cubelab.compiler.info import info_layout
from cubelab.compiler.wgsl import compile_wgsl
from cubelab.ir import (
    F32,
    U32,
    BufferParam,
    CheckedIo,
    KernelDefinition,
    PassManager,
    Pointer,
    RuntimeArray,
    ScalarParam,
    Scope,
    print_kernel,
)
from cubelab.ir.types import Array


def tiny_kernel() -> KernelDefinition:
    """out[i] = x[i] * a, with checked indices, built by hand."""
    s = Scope(file="hand.py", kernel_name="scale")
    x = s.new_value(Pointer(RuntimeArray(F32), "global", False), "x")
    out = s.new_value(Pointer(RuntimeArray(F32), "global", True), "out")
    a = s.emit_prologue(("scalar", "a"), "info.scalar", [], F32, elem="f32", index=0)
    s.at(3, 4)
    i = s.emit("builtin.read", [], U32, name="local_invocation_index")
    p = s.emit("memory.index", [x, i], Pointer(F32, "global", False), checked=True)
    v = s.emit("memory.load", [p], F32)
    r = s.emit("arith.mul", [v, a], F32)
    q = s.emit("memory.index", [out, i], Pointer(F32, "global", True), checked=True)
    s.register("memory.store", [q, r])
    return KernelDefinition("scale", "scale_00000000", (4, 1, 1),
                            [BufferParam("x", 0, F32, False, x), BufferParam("out", 1, F32, True, out)],
                            [ScalarParam("a", "f32", 0)], s.root)


def test_printer_shows_ssa_values_types_and_source_lines():
    text = print_kernel(tiny_kernel())
    assert "kernel @scale_00000000(" in text and "cube_dim(4, 1, 1)" in text
    assert "= arith.mul %v" in text and ": f32" in text
    assert "memory.index" in text and "{checked = True}" in text
    assert "// line 3" in text


def test_prologue_values_come_first():
    k = tiny_kernel()
    assert k.body.ops[0].name == "info.scalar"


def test_fixed_checked_io_clamps_global_buffer_indices_to_len_minus_one():
    k = tiny_kernel()
    p = CheckedIo("fixed")
    p.run(k)
    assert p.rewritten == 2
    names = [op.name for op in k.body.ops]
    assert names.count("arith.min") == 2 and names.count("buffer.len") == 2
    assert all(not op.attrs.get("checked") for op in k.walk() if op.name == "memory.index")


def test_the_0_11_3_rule_never_matches_a_global_buffer_only_a_bare_runtime_array():
    k = tiny_kernel()
    p = CheckedIo("cubecl-0.11.3")
    p.run(k)
    assert p.rewritten == 0
    assert "arith.min" not in [op.name for op in k.body.ops]
    # its matching rule does fire on a base whose type *is* a runtime array
    s = Scope()
    arr = s.new_value(RuntimeArray(F32))
    i = s.emit("arith.constant", [], U32, value=0)
    op = s.register("memory.index", [arr, i], Pointer(F32, "global"), checked=True)
    assert CheckedIo("cubecl-0.11.3").matches(op)
    assert not CheckedIo("fixed").matches(op)


def test_pass_manager_records_ir_before_and_after():
    k = tiny_kernel()
    (rec,) = PassManager([CheckedIo("fixed")]).run(k, record=True)
    assert rec.name == "checked-io" and rec.changed
    assert "arith.min" not in rec.before and "arith.min" in rec.after


def test_info_layout_groups_scalars_by_type_then_static_meta():
    k = tiny_kernel()
    layout = info_layout(k)
    assert [(f.name, f.count, f.offset) for f in layout.fields] == [
        ("scalars_f32", 1, 0), ("static_meta", 2, 1)]
    packed = layout.pack({"f32": [2.0]}, [6, 8])
    assert packed == b"\x00\x00\x00\x40" + (6).to_bytes(4, "little") + (8).to_bytes(4, "little")


def test_wgsl_has_bindings_info_block_entry_and_a_line_map():
    k = tiny_kernel()
    CheckedIo("fixed").run(k)
    out = compile_wgsl(k)
    src = out.source
    # every buffer is read_write (pooled slices share pages); the comment keeps the IO
    assert ("@group(0) @binding(0) var<storage, read_write> v0: array<f32>; // x (read-only;"
            in src)
    assert "@group(0) @binding(1) var<storage, read_write> v1: array<f32>; // out" in src
    assert "scalars_f32: array<f32, 1>," in src and "static_meta: array<u32, 2>," in src
    assert "@compute @workgroup_size(4, 1, 1)" in src and "fn scale_00000000(" in src
    lines = src.splitlines()
    mul_line = next(i for i, ln in enumerate(lines, 1) if " * " in ln)
    assert out.line_map[mul_line].line == 3


def test_wgsl_refuses_an_op_it_does_not_know():
    from cubelab.compiler.base import CodegenError

    k = tiny_kernel()
    k.body.ops[-1].name = "made.up"
    with pytest.raises(CodegenError, match="does not implement op 'made.up'"):
        compile_wgsl(k)


def test_types_print_like_wgsl():
    assert str(F32.with_width(4)) == "vec4<f32>"
    assert str(Array(U32, 8)) == "array<u32, 8>"


def test_the_printers_line_map_names_exactly_the_lines_it_comments_with_their_source_line():
    """One layout, two readers: the CPU runtime's line map (`print_kernel_mapped`) and the
    inspector's `// line N` comments must point at the same printed lines."""
    from cubelab.ir.printer import print_kernel_mapped
    from tests.fixtures.kernel_instances import core_and_zoo_instances

    for name, k in core_and_zoo_instances():
        text, line_map = print_kernel_mapped(k.define())
        commented = {i: int(ln.rsplit("// line ", 1)[1])
                     for i, ln in enumerate(text.splitlines(), 1) if "// line " in ln}
        assert {i: loc.line for i, loc in line_map.items()} == commented, name
