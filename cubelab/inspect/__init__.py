"""Plain-data views of everything cubelab builds: the functions behind every widget and CLI view.

    inspect.expanded(saxpy)                      # the generated expand function (`cargo expand`)
    k = inspect.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))
    inspect.kernel_id(k)                         # the KernelId, field by field
    inspect.ir(k), inspect.passes(k)             # IR before passes, and each pass's before/after
    inspect.wgsl(k)                              # the generated WGSL
    inspect.diff(id_a, id_b)                     # "why did this recompile?"

Everything here returns strings, dicts and dataclasses; renderers for notebooks and terminals
sit on top. Nothing here runs on a device: these functions define and compile on the calling
thread, for looking, never for launching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cubelab.compiler.base import CompiledSource
from cubelab.compiler.wgsl import compile_wgsl
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.frontend.types import ScalarKind
from cubelab.ir.passes import CheckedIo, CheckedIoRule, PassManager, PassRecord
from cubelab.ir.printer import print_kernel
from cubelab.runtime.kernel import CubeDim, ExecutionMode, KernelId

__all__ = ["expanded", "instance", "kernel_id", "ir", "passes", "wgsl", "compiled", "diff",
           "Compiled"]


def expanded(kernel: CubeFunction) -> str:
    """The source of the generated `expand` function (cubelab's `cargo expand`)."""
    return kernel.expand_source


def instance(kernel: CubeFunction, *types: ScalarKind, sizes: tuple[int, ...] = (),
             cube_dim: CubeDim | None = None, comptime: tuple[Any, ...] = (),
             checked: bool = True) -> KernelInstance:
    """The Kernel object a launch with these compile-time arguments would build."""
    from cubelab.frontend.types import GenericScalar, GenericSize

    tg = [g for g in kernel.generics if isinstance(g, GenericScalar)]
    sg = [g for g in kernel.generics if isinstance(g, GenericSize)]
    if len(types) != len(tg) or len(sizes) != len(sg):
        raise TypeError(f"`{kernel.__name__}` needs types for {[g.name for g in tg]} and sizes "
                        f"for {[g.name for g in sg]}")
    mode = ExecutionMode.Checked if checked else ExecutionMode.Unchecked
    return KernelInstance(kernel, mode, cube_dim or CubeDim.new_1d(1),
                          {g.name: t for g, t in zip(tg, types)},
                          {g.name: s for g, s in zip(sg, sizes)}, tuple(comptime))


def kernel_id(k: KernelInstance | KernelId) -> dict[str, Any]:
    kid = k.id() if isinstance(k, KernelInstance) else k
    return kid.fields()


@dataclass
class Compiled:
    kernel_id: KernelId
    expanded_ir: str
    passes: list[PassRecord]
    ir: str
    wgsl: CompiledSource


def compiled(k: KernelInstance, checked_io: CheckedIoRule = "fixed") -> Compiled:
    """Define, run the passes a server would run, and generate WGSL — without a device."""
    definition = k.define()
    before = print_kernel(definition)
    pm = PassManager([CheckedIo(checked_io)] if k.mode is ExecutionMode.Checked else [])
    records = pm.run(definition, record=True)
    return Compiled(k.id(), before, records, print_kernel(definition), compile_wgsl(definition))


def ir(k: KernelInstance, after_passes: bool = False, checked_io: CheckedIoRule = "fixed") -> str:
    c = compiled(k, checked_io)
    return c.ir if after_passes else c.expanded_ir


def passes(k: KernelInstance, checked_io: CheckedIoRule = "fixed") -> list[PassRecord]:
    return compiled(k, checked_io).passes


def wgsl(k: KernelInstance, checked_io: CheckedIoRule = "fixed") -> str:
    return compiled(k, checked_io).wgsl.source


def diff(a: KernelId, b: KernelId) -> list[str]:
    """Why two launches did not share a pipeline: the KernelId fields that differ, in words."""
    fa, fb = a.fields(), b.fields()
    out: list[str] = []
    for key in list(dict.fromkeys([*fa, *fb])):
        va, vb = fa.get(key, "—"), fb.get(key, "—")
        if va != vb:
            label = key.removeprefix("info.")
            if key == "mode":
                out.append(f"execution mode changed: {va} → {vb} (launch vs launch_unchecked)")
            elif key == "cube_dim":
                out.append(f"cube_dim changed: {va} → {vb} (it is compiled into the kernel)")
            elif key == "type":
                out.append(f"kernel type changed: {va} → {vb}")
            else:
                out.append(f"`{label}` changed: {va} → {vb}")
    if not out and a.origin != b.origin:
        out.append("the kernel's source (or a helper's) changed")
    return out
