"""The WGSL target — the one that runs — lowers every IR op, and naga (through wgpu) accepts what
it writes: one hand-built kernel that uses every op of `OPS` (`test_msl.every_op_kernel`, the
same kernel MSL's syntax check compiles) becomes one module and one compute pipeline on the
wgpu device. `debug.print`'s lowering is a comment and a notice (WGSL has no printf): the kernel
still compiles and runs, as with CubeCL's WGSL backend."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.compiler import wgsl as wgsl_mod
from cubelab.compiler.pipeline import check_definition
from cubelab.compiler.wgsl import WGSL_OPS, compile_wgsl
from cubelab.errors import FeatureError
from cubelab.ir.core import OPS
from cubelab.prelude import Atomic, SharedMemory, SliceMut, UNIT_POS, cube, u32
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


@cube(launch=True)
def _fill_one(out: SliceMut[u32]):
    if UNIT_POS == 0:
        out[0] = u32(12)


@cube(launch=True)
def _read_shared(out: SliceMut[u32]):
    plain = SharedMemory[u32](4)
    counts = SharedMemory[Atomic[u32]](4)
    if UNIT_POS < 4:
        out[UNIT_POS] = plain[UNIT_POS] + counts[UNIT_POS].load()


def test_shared_memory_starts_at_zero_even_after_other_dispatches(client):
    """Lavapipe advertises zero-initialised workgroup memory, so wgpu leaves the zeroing to it,
    yet after two unrelated dispatches a kernel read the previous values (pointer-like words);
    the WGSL target zeroes shared arrays itself (`wgsl._zero_shared`)."""
    for _ in range(2):
        one = client.create_from_slice(u32.as_bytes(np.zeros(1, np.uint32)))
        _fill_one.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                         BufferArg.from_raw_parts(one, 1))
        client.read_one(one)
    for _ in range(3):
        out = client.create_from_slice(u32.as_bytes(np.full(4, 9, np.uint32)))
        _read_shared.launch(client, CubeCount.Static(1), CubeDim.new_1d(12),
                            BufferArg.from_raw_parts(out, 4))
        assert u32.from_bytes(client.read_one(out)).tolist() == [0, 0, 0, 0]
