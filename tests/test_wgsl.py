"""The WGSL target — the one that runs — lowers every IR op, and naga (through wgpu) accepts what
it writes: one hand-built kernel that uses every op of `OPS` (`test_msl.every_op_kernel`, the
same kernel MSL's syntax check compiles) becomes one module and one compute pipeline on the
wgpu device. `debug.print`'s lowering is a comment and a notice (WGSL has no printf): the kernel
still compiles and runs, as with CubeCL's WGSL backend."""

from __future__ import annotations

import pytest

from cubelab.compiler import wgsl as wgsl_mod
from cubelab.compiler.pipeline import check_definition
from cubelab.compiler.wgsl import WGSL_OPS, compile_wgsl
from cubelab.errors import FeatureError
from cubelab.ir.core import OPS
from cubelab.runtime.server import PipelineEntry
from tests.test_msl import every_op_kernel



def test_every_ir_op_has_a_wgsl_lowering():
    missing = sorted(set(OPS) - set(WGSL_OPS))
    assert not missing, f"ops in ir.core.OPS with no WGSL lowering: {missing}"
    for name in WGSL_OPS:
        assert callable(getattr(wgsl_mod._Emitter, "op_" + name.replace(".", "_"), None)), name


def test_debug_print_is_left_out_of_the_wgsl_with_a_comment_and_one_notice():
    kernel = every_op_kernel()
    compiled = compile_wgsl(kernel)
    assert '// debug_print("a = {}", ...) left out: WGSL has no printf' in compiled.source
    (notice,) = compiled.notices
    assert notice.startswith(f"kernel `{kernel.name}`: debug_print")
    assert "WGSL has no printf" in notice and "Device.cpu().client()" in notice


def test_every_ir_op_lowers_to_wgsl_that_naga_validates(wgpu_client):
    kernel = every_op_kernel()
    used = {op.name for op in kernel.walk()}
    assert used == set(OPS), sorted(set(OPS) ^ used)
    server = wgpu_client.device.server
    if "subgroup" not in server.properties.features:
        # An adapter without subgroups cannot take the plane ops at all; the runtime refuses
        # them before codegen, and that refusal is what this device can check.
        with pytest.raises(FeatureError):
            check_definition(kernel, server.properties, server.name)
        return
    compiled = compile_wgsl(kernel)
    entry = PipelineEntry(None, kernel.entry, compiled, kernel)  # type: ignore[arg-type]
    wgpu_client.device.runner.call(server.build_pipeline, entry)  # raises CompileError if not
    assert entry.pipeline is not None
