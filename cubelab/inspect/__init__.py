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
from typing import Any, Sequence

from cubelab.compiler import TARGETS, CompiledSource, Target
from cubelab.compiler.pipeline import Compilation, CompilationOptions, compile_definition
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.frontend.types import ScalarKind
from cubelab.ir.passes import DEFAULT_CHECKED_IO, CheckedIoRule, PassRecord
from cubelab.runtime.kernel import CubeDim, ExecutionMode, KernelId

__all__ = ["expanded", "instance", "kernel_id", "ir", "passes", "wgsl", "compiled", "diff",
           "Compiled", "source", "explain", "default_instance", "instance_from_id",
           "correspondence", "view", "show", "CacheStats", "BufferStates", "LaunchLog", "msl",
           "trace", "Trace", "TraceStep", "unit_position"]


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
    # MSL when the MSL target is installed (shown, never run here)
    msl_compiled: CompiledSource | None = None

    @property
    def msl(self) -> str | None:
        return self.msl_compiled.source if self.msl_compiled is not None else None


def compiled(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> Compiled:
    """Define, then the server's own pipeline (`compiler/pipeline.py`: the same pass selection,
    the same targets) — without a device. The WGSL is what a launch runs; MSL is None when that
    target cannot express the kernel (a launch then shows a comment saying why)."""
    c = _pipeline(k, checked_io, run=TARGETS["wgsl"],
                  show=[t for name, t in TARGETS.items() if name != "wgsl"])
    return Compiled(k.id(), c.expanded_ir, c.passes, c.ir, c.sources["wgsl"], c.sources.get("msl"))


def _pipeline(k: KernelInstance, checked_io: CheckedIoRule, run: Target,
              show: Sequence[Target] = ()) -> Compilation:
    return compile_definition(k.define(), k.mode, CompilationOptions(checked_io), run=run,
                              show=show)


def ir(k: KernelInstance, after_passes: bool = False,
       checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    c = compiled(k, checked_io)
    return c.ir if after_passes else c.expanded_ir


def passes(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> list[PassRecord]:
    return compiled(k, checked_io).passes


def wgsl(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    return compiled(k, checked_io).wgsl.source


def msl(k: KernelInstance, checked_io: CheckedIoRule = DEFAULT_CHECKED_IO) -> str:
    """The generated MSL, in seed 000's shape: shown beside the WGSL, never run here."""
    return _pipeline(k, checked_io, run=TARGETS["msl"]).sources["msl"].source


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


# -- views over a kernel, added for the notebook and terminal layers ---------------------------


def source(kernel: CubeFunction) -> str:
    """The kernel's Python source, as written."""
    return kernel.source


_FIELD_MEANING = {
    "type": "the kernel function and its element types: another function is another kernel",
    "address_type": "index width used for addressing",
    "cube_dim": "units per cube; compiled into the kernel (@workgroup_size), so part of the key",
    "mode": "Checked for launch, Unchecked for launch_unchecked (the CheckedIo pass or not)",
}


def explain(k: KernelInstance | KernelId) -> list[tuple[str, str, str]]:
    """The KernelId field by field: (field, value, what it means)."""
    kid = k.id() if isinstance(k, KernelInstance) else k
    out: list[tuple[str, str, str]] = []
    for key, value in kid.fields().items():
        text = str(value)
        if key in _FIELD_MEANING:
            why = _FIELD_MEANING[key]
        elif text == "()":
            why = "a runtime scalar: no compile-time part, a new value never recompiles"
        elif text.startswith("BufferCompilationArg"):
            why = "a buffer: only its compile-time part (in-place reuse) is in the key, not its data"
            text = " ".join(text.split())
        else:
            why = "a compile-time value (vector width or Comptime argument): each value is a kernel"
        out.append((key, text, why))
    return out


def default_instance(kernel: CubeFunction, cube_dim: CubeDim | None = None) -> KernelInstance:
    """An instance to look at before any launch: f32/i32 for generics, width 1, Comptime
    arguments at their default (or False/0 for bool/int ones); TypeError if none applies."""
    import inspect as _pyinspect

    from cubelab.frontend.types import GenericScalar, GenericSize, f32, i32

    types = [i32 if getattr(g, "family", "") == "Int" else f32
             for g in kernel.generics if isinstance(g, GenericScalar)]
    sizes = tuple(1 for g in kernel.generics if isinstance(g, GenericSize))
    sig = _pyinspect.signature(kernel.fn)
    comptime = []
    for p in kernel.params:
        if p.kind == "comptime":
            default = sig.parameters[p.name].default
            if default is _pyinspect.Parameter.empty:
                inner = getattr(p.spec, "inner", None)
                if inner in (bool, int, float):  # the type's zero: False, 0, 0.0
                    comptime.append(inner())
                    continue
                raise TypeError(f"`{kernel.__name__}` has Comptime argument `{p.name}` without a "
                                "default: pass an instance (inspect.instance(...)) or launch it")
            comptime.append(default)
    return instance(kernel, *types, sizes=sizes, cube_dim=cube_dim, comptime=tuple(comptime))


def instance_from_id(kernel: CubeFunction, kid: KernelId) -> KernelInstance:
    """Rebuild the Kernel a launch made from its KernelId (for line maps of a live compile)."""
    from cubelab.frontend.types import GenericScalar, GenericSize, ScalarKind

    from cubelab.frontend import types as _types

    fields = dict(kid.info.fields)
    by_name = {repr(t): t for t in vars(_types).values() if isinstance(t, ScalarKind)}
    generic_text = kid.type.split("<", 1)[1].rstrip(">") if "<" in kid.type else ""
    type_names = [t.strip() for t in generic_text.split(",") if t.strip()]
    types = tuple(by_name[t] for t in type_names)
    sizes = tuple(int(fields[g.name.lower()]) for g in kernel.generics
                  if isinstance(g, GenericSize))
    comptime = tuple(fields[p.name] for p in kernel.params if p.kind == "comptime")
    if len(types) != len([g for g in kernel.generics if isinstance(g, GenericScalar)]):
        raise ValueError(f"{kid.short()} does not match `{kernel.__name__}`'s generics")
    return instance(kernel, *types, sizes=sizes, cube_dim=kid.cube_dim, comptime=comptime,
                    checked=kid.mode is ExecutionMode.Checked)


def correspondence(c: Compiled, file: str | None = None) -> "Correspondence":
    """Kernel source line ↔ IR (after passes) ↔ WGSL lines, for one compiled kernel."""
    return _correspondence(c.ir, {"wgsl": c.wgsl, "msl": c.msl_compiled}, file)


from cubelab.inspect import live  # noqa: E402
from cubelab.inspect.lines import Correspondence, correspondence as _correspondence  # noqa: E402
from cubelab.inspect.live import BufferStates, CacheStats, LaunchLog  # noqa: E402
from cubelab.inspect.render import show, view  # noqa: E402


# The CPU runtime's step-through (runs a launch for real; see inspect/trace.py).
from cubelab.inspect.trace import Trace, TraceStep, trace, unit_position  # noqa: E402
