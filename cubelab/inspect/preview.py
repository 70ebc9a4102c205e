"""The compile preview: what a launch of a Kernel instance would compile, without a device.

`compiled(k)` runs the server's own pipeline (`compiler/pipeline.py`: the same pass selection
and targets), so the IR, pass records, WGSL and MSL shown here are what a launch compiles —
`tests/test_inspect_matches_server.py` pins it byte for byte. `correspondence` lines up kernel
source, IR and generated lines. `inspect/__init__.py` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from cubelab.compiler import TARGETS, CompiledSource, Target
from cubelab.compiler.pipeline import Compilation, CompilationOptions, compile_definition
from cubelab.errors import api_boundary
from cubelab.frontend.kernel import KernelInstance
from cubelab.inspect.lines import Correspondence, correspondence as _correspondence
from cubelab.ir.passes import DEFAULT_CHECKED_IO, CheckedIoRule, PassRecord
from cubelab.runtime.kernel_id import KernelId

__all__ = ["Compiled", "compiled", "ir", "passes", "wgsl", "msl", "correspondence"]


@dataclass
class Compiled:
    kernel_id: KernelId
    expanded_ir: str
    passes: list[PassRecord]
    ir: str
    # one entry per target of `compiler.targets.TARGETS` that could express the kernel, in the
    # registry's order; a target that failed is in `failures` (a launch shows it as a comment)
    sources: dict[str, CompiledSource]
    failures: dict[str, BaseException] = field(default_factory=dict)

    @property
    def wgsl(self) -> CompiledSource:
        return self.sources["wgsl"]

    @property
    def msl_compiled(self) -> CompiledSource | None:
        return self.sources.get("msl")

    @property
    def msl(self) -> str | None:
        return self.msl_compiled.source if self.msl_compiled is not None else None


@api_boundary
def compiled(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> Compiled:
    """Define, then the server's own pipeline (`compiler/pipeline.py`: the same pass selection,
    the same targets) — without a device. The WGSL is what a launch runs; MSL is None when that
    target cannot express the kernel (a launch then shows a comment saying why)."""
    c = _pipeline(k, checked_io, run=TARGETS["wgsl"],
                  show=[t for name, t in TARGETS.items() if name != "wgsl"])
    sources = {name: c.sources[name] for name in TARGETS if name in c.sources}
    return Compiled(k.id(), c.expanded_ir, c.passes, c.ir, sources, c.failures)


def _pipeline(k: KernelInstance, checked_io: CheckedIoRule, run: Target,
              show: Sequence[Target] = ()) -> Compilation:
    return compile_definition(k.define(), k.mode, CompilationOptions(checked_io), run=run,
                              show=show)


@api_boundary
def ir(k: KernelInstance, after_passes: bool = False,
       checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    c = compiled(k, checked_io)
    return c.ir if after_passes else c.expanded_ir


@api_boundary
def passes(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> list[PassRecord]:
    return compiled(k, checked_io).passes


@api_boundary
def wgsl(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    return compiled(k, checked_io).wgsl.source


@api_boundary
def msl(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    """The generated MSL, in seed 000's shape: shown beside the WGSL, never run here."""
    return _pipeline(k, checked_io, run=TARGETS["msl"]).sources["msl"].source


@api_boundary
def correspondence(c: Compiled, file: str | None = None) -> Correspondence:
    """Kernel source line ↔ IR (after passes) ↔ WGSL lines, for one compiled kernel."""
    return _correspondence(c.ir, {"wgsl": c.wgsl, "msl": c.msl_compiled}, file)
