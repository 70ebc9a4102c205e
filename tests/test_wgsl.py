"""The WGSL target — the one that runs — lowers every IR op, and naga (through wgpu) accepts what
it writes: one hand-built kernel that uses every op of `OPS` (`test_msl.every_op_kernel`, the
same kernel MSL's syntax check compiles) becomes one module and one compute pipeline on the
wgpu device. `debug.print`'s lowering is a refusal that says where it does run."""

from __future__ import annotations

import pytest

from cubelab.compiler import wgsl as wgsl_mod
from cubelab.compiler.base import CodegenError
from cubelab.compiler.pipeline import check_definition
from cubelab.compiler.wgsl import WGSL_OPS, compile_wgsl
from cubelab.errors import FeatureError
from cubelab.ir.core import OPS, Block, KernelDefinition
from cubelab.runtime.server import PipelineEntry
from tests.test_msl import every_op_kernel

CPU_ONLY = {"debug.print"}  # WGSL has no printf: the lowering refuses, naming the CPU runtime


def without(kernel: KernelDefinition, names: set[str]) -> KernelDefinition:
    """`kernel` with every op named in `names` taken out (they must have no results in use)."""
    def strip(block: Block) -> None:
        block.ops[:] = [op for op in block.ops if op.name not in names]
        for op in block.ops:
            for region in op.regions:
                strip(region)

    strip(kernel.body)
    return kernel


def test_every_ir_op_has_a_wgsl_lowering():
    missing = sorted(set(OPS) - set(WGSL_OPS))
    assert not missing, f"ops in ir.core.OPS with no WGSL lowering: {missing}"
    for name in WGSL_OPS:
        assert callable(getattr(wgsl_mod._Emitter, "op_" + name.replace(".", "_"), None)), name


def test_debug_print_is_refused_with_a_pointer_to_the_cpu_runtime():
    with pytest.raises(CodegenError, match=r"debug_print.*not supported on the wgpu runtime.*Device\.cpu\(\)"):
        compile_wgsl(every_op_kernel())


def test_every_ir_op_lowers_to_wgsl_that_naga_validates(wgpu_client):
    kernel = without(every_op_kernel(), CPU_ONLY)
    used = {op.name for op in kernel.walk()}
    assert used == set(OPS) - CPU_ONLY, sorted((set(OPS) - CPU_ONLY) ^ used)
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
