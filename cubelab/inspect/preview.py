"""The compile preview: what a launch of a Kernel instance would compile, without a device.

Every function takes the kernel itself — `wgsl(saxpy)` (the preview instance: f32 for generic
floats, width 1, Comptime defaults), `wgsl(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))`
(the generics as arguments, as `instance` takes them) — or a Kernel instance
(`wgsl(inspect.instance(saxpy, f32))`), as `expanded(kernel)` does (`as_instance`). The CheckedIo
rule and the client are keyword arguments.

`compiled(k)` runs the server's own pipeline (`compiler/pipeline.py`: the same pass selection
and targets), so the IR, pass records, WGSL and MSL shown here are what a launch compiles —
`tests/test_inspect_matches_server.py` pins it byte for byte. `correspondence` lines up kernel
source, IR and generated lines. `inspect/__init__.py` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from cubelab.compiler import TARGETS, CompiledSource, Target
from cubelab.compiler.targets import default_target
from cubelab.compiler.options import CompilationOptions
from cubelab.compiler.pipeline import Compilation, compile_definition
from cubelab.errors import api_boundary, hinted
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.frontend.types import ScalarKind
from cubelab.inspect.instances import default_instance, instance
from cubelab.inspect.lines import Correspondence, correspondence as _correspondence
from cubelab.ir.core import Loc
from cubelab.ir.passes import CheckedIoRule, PassRecord
from cubelab.runtime.kernel_id import KernelId

__all__ = ["Compiled", "compiled", "ir", "passes", "source_of", "wgsl", "msl", "correspondence",
           "options_for", "as_instance"]


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
    ir_lines: dict[int, Loc] = field(default_factory=dict)  # IR text line -> kernel location

    # Named conveniences for the two targets the seed shows; views iterate `sources`.
    @property
    def wgsl(self) -> CompiledSource:
        return self.sources["wgsl"]

    @property
    def msl_compiled(self) -> CompiledSource | None:
        return self.sources.get("msl")

    @property
    def msl(self) -> str | None:
        return self.msl_compiled.source if self.msl_compiled is not None else None


def options_for(client: Any = None, checked_io: CheckedIoRule | None = None,
                options: CompilationOptions | None = None) -> CompilationOptions:
    """What a preview compiles with: `options`, else the client's (what its launches compile
    with), else the defaults — with `checked_io` over it when given."""
    base = options or (client.compilation_options() if client is not None
                       else CompilationOptions())
    return base if checked_io is None else base.replace(checked_io=checked_io)


Inspectable = CubeFunction | KernelInstance


def as_instance(k: Inspectable, *types: ScalarKind, **generics: Any) -> KernelInstance:
    """The Kernel instance to look at: `k` itself, or the kernel `k` with the compile-time
    arguments `instance` takes (`sizes`, `cube_dim`, `comptime`, `checked`), or — with none —
    its preview instance (`default_instance`)."""
    if isinstance(k, KernelInstance):
        if types or generics:
            raise TypeError(hinted("this is already a Kernel instance, and types were given too",
                                   "give the kernel itself with the types "
                                   "(inspect.wgsl(kernel, f32, ...)), or the instance alone"))
        return k
    if isinstance(k, CubeFunction):
        if not k.is_kernel:
            raise TypeError(hinted(f"`{k.__name__}` is a @cube helper: it is inlined into the "
                                   "kernels that call it",
                                   "inspect one of those (or mark it @cube(launch=True))"))
        if not types and not generics:
            return default_instance(k)
        return instance(k, *types, **generics)
    raise TypeError(hinted(f"cubelab.inspect needs a kernel, not {type(k).__name__}",
                           "pass a @cube(launch=True) function (with its types, if generic) or "
                           "an instance from inspect.instance(...)"))


@api_boundary
def compiled(k: Inspectable, *types: ScalarKind, checked_io: CheckedIoRule | None = None,
             client: Any = None, options: CompilationOptions | None = None,
             **generics: Any) -> Compiled:
    """Define, then the server's own pipeline (`compiler/pipeline.py`: the same pass selection,
    the same targets) — without a device. With `client`, under that client's compilation
    options (`client.compilation_options()`: its CheckedIo rule, loop budget and extra passes),
    so the preview is byte for byte what its launch compiles; `checked_io` overrides the rule.
    The WGSL is what a launch runs; a shown target that cannot express the kernel is in
    `failures` (a launch then shows a comment saying why)."""
    k = as_instance(k, *types, **generics)
    run = _run_target(client)
    c = _pipeline(k, options_for(client, checked_io, options), run=run,
                  show=[t for name, t in TARGETS.items() if name != run.name], client=client)
    sources = {name: c.sources[name] for name in TARGETS if name in c.sources}
    ir, ir_lines = c.ir_mapped()
    return Compiled(k.id(), c.expanded_ir, c.passes, ir, sources, c.failures, ir_lines)


def _run_target(client: Any) -> Target:
    """The target whose failure is the preview's: the one the client's server runs, when it is
    a registered target, else the default runnable one."""
    server = getattr(getattr(client, "device", None), "server", None)
    name = getattr(getattr(server, "target", None), "name", None)
    return TARGETS[name] if name in TARGETS else default_target()


def _pipeline(k: KernelInstance, options: CompilationOptions, run: Target | None,
              show: Sequence[Target] = (), client: Any = None) -> Compilation:
    # the client's device properties, as its server defines the kernel (`device_properties()`)
    # and compiles it (lavapipe's loop cap makes its compile unroll long loops)
    props = client.properties() if client is not None else None
    return compile_definition(k.define(props), k.mode, options, run=run, show=show, limits=props)


@api_boundary
def ir(k: Inspectable, *types: ScalarKind, after_passes: bool = False,
       checked_io: CheckedIoRule | None = None, client: Any = None, **generics: Any) -> str:
    """The IR as expanded, or after the passes: define and the passes only, no target — so the
    IR of a kernel whose op a target cannot spell yet (a plug-in op being added) still shows."""
    k = as_instance(k, *types, **generics)
    c = _pipeline(k, options_for(client, checked_io), run=None, client=client)
    return c.ir if after_passes else c.expanded_ir


@api_boundary
def passes(k: Inspectable, *types: ScalarKind, checked_io: CheckedIoRule | None = None,
           client: Any = None, **generics: Any) -> list[PassRecord]:
    """Each pass's name and the IR before and after it: the built-in ones, then the client's
    extra passes (`client.set_compilation_options(extra_passes=[...])`)."""
    k = as_instance(k, *types, **generics)
    return _pipeline(k, options_for(client, checked_io), run=None, client=client).passes


@api_boundary
def source_of(k: Inspectable, target: str, *types: ScalarKind,
              checked_io: CheckedIoRule | None = None, client: Any = None,
              **generics: Any) -> str:
    """The generated source of `k` for `target` (any name of `compiler.targets.TARGETS`)."""
    if target not in TARGETS:
        raise ValueError(hinted(f"no target {target!r}", f"the targets are "
                                f"{', '.join(TARGETS)}"))
    k = as_instance(k, *types, **generics)
    c = _pipeline(k, options_for(client, checked_io), run=TARGETS[target], client=client)
    return c.sources[target].source


@api_boundary
def wgsl(k: Inspectable, *types: ScalarKind, checked_io: CheckedIoRule | None = None,
         client: Any = None, **generics: Any) -> str:
    return compiled(k, *types, checked_io=checked_io, client=client, **generics).wgsl.source


@api_boundary
def msl(k: Inspectable, *types: ScalarKind, checked_io: CheckedIoRule | None = None,
        client: Any = None, **generics: Any) -> str:
    """The generated MSL, in seed 000's shape: shown beside the WGSL, never run here."""
    return source_of(k, "msl", *types, checked_io=checked_io, client=client, **generics)


@api_boundary
def correspondence(c: Compiled, file: str | None = None) -> Correspondence:
    """Kernel source line ↔ IR (after passes) ↔ every target's lines, for one compiled kernel."""
    return _correspondence(c.ir_lines, c.sources, file)
