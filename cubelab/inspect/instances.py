"""Views of a kernel and its KernelIds that need no compile: its source, its generated `expand`
(`cargo expand`), the Kernel instance a launch would build, the KernelId field by field, and
why two ids differ ("why did this recompile?").

Nothing here defines IR or touches a device. `inspect/__init__.py` re-exports every name.
"""

from __future__ import annotations

import inspect as _pyinspect
from typing import Any

from cubelab.compiler.options import options_key
from cubelab.errors import api_boundary, hinted
from cubelab.frontend import aggregate_launch as _launch_args
from cubelab.frontend import types as _types
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.frontend.types import GenericScalar, GenericSize, ScalarKind, f32, i32
from cubelab.runtime.kernel_id import CubeDim, ExecutionMode, KernelId

_MISSING = object()

__all__ = ["expanded", "source", "instance", "default_instance", "instance_from_id",
           "kernel_id", "explain", "diff", "OPTIONS_MEANING", "defined_at"]


@api_boundary
def expanded(kernel: CubeFunction) -> str:
    """The source of the generated `expand` function (cubelab's `cargo expand`)."""
    return kernel.expand_source


@api_boundary
def instance(kernel: CubeFunction, *types: ScalarKind, sizes: tuple[int, ...] = (),
             cube_dim: CubeDim | None = None, comptime: tuple[Any, ...] = (),
             checked: bool = True) -> KernelInstance:
    """The Kernel object a launch with these compile-time arguments would build."""
    tg = [g for g in kernel.generics if isinstance(g, GenericScalar)]
    sg = [g for g in kernel.generics if isinstance(g, GenericSize)]
    if len(types) != len(tg) or len(sizes) != len(sg):
        raise TypeError(hinted(f"`{kernel.__name__}` needs types for {[g.name for g in tg]} and "
                               f"sizes for {[g.name for g in sg]}",
                               "e.g. instance(kernel, f32, sizes=(4,))"))
    mode = ExecutionMode.Checked if checked else ExecutionMode.Unchecked
    # `comptime` holds one entry per Comptime argument and per @cube_type argument (a host
    # instance, or its key), in signature order
    # (an argument of a cube type left out takes its default key, as default_instance does)
    given = iter(comptime)
    keys: list[Any] = []
    chosen = {g.name: t for g, t in zip(tg, types)}
    for p in kernel.params:
        if p.kind == "define":  # Define[T]: the type given for T is its value
            keys.append(chosen[p.spec.generic.name])
            continue
        if p.kind not in ("comptime", "aggregate"):
            continue
        c = next(given, _MISSING)
        if p.kind == "comptime":
            if c is not _MISSING:
                keys.append(c)
        elif c is _MISSING:
            keys.append(_launch_args.default_key(p.spec, kernel.__name__, p.name))
        else:
            keys.append(_launch_args.key_of(p.spec, c, kernel.__name__, p.name))
    return KernelInstance(kernel, mode, cube_dim or CubeDim.new_1d(1),
                          {g.name: t for g, t in zip(tg, types)},
                          {g.name: s for g, s in zip(sg, sizes)}, tuple(keys))


@api_boundary
def kernel_id(k: KernelInstance | KernelId) -> dict[str, Any]:
    kid = k.id() if isinstance(k, KernelInstance) else k
    return kid.fields()


@api_boundary
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
            elif key == "alignment":
                out.append(f"buffer views' alignment changed: {va.replace('—', 'aligned')} → "
                           f"{vb.replace('—', 'aligned')} (a view that starts off the binding "
                           "alignment gets a kernel that skips to its start)")
            else:
                out.append(f"`{label}` changed: {va} → {vb}")
    if not out and a.origin != b.origin:
        where = defined_at(b.origin)
        out.append("the kernel's source (or a helper's) changed" +
                   (f": defined again at {where}" if where else ""))
    return out


def defined_at(origin: str) -> str:
    """Where the source with digest `origin` (`KernelId.origin`) was last defined, as its reader
    names it ("Cell In[9], line 2", "kernels.py:12"); "" when this process never defined it."""
    from cubelab.errors import location
    from cubelab.frontend.kernel import DEFINED_AT

    place = DEFINED_AT.get(origin)
    return location(*place) if place else ""


@api_boundary
def source(kernel: CubeFunction) -> str:
    """The kernel's Python source, as written."""
    return kernel.source


_FIELD_MEANING = {
    "type": "the kernel function and its element types: another function is another kernel",
    "address_type": "index width used for addressing",
    "cube_dim": "units per cube; compiled into the kernel (@workgroup_size), so part of the key",
    "mode": "Checked for launch, Unchecked for launch_unchecked (the CheckedIo pass or not)",
    "alignment": "the alignment of the launch's buffer views, when one starts off the device's "
                 "binding alignment (the kernel then skips to each view's start itself); "
                 "seed 001's cache key is (KernelId, alignment)",
}


# What the options row of a cache key's explanation means (the KernelIds tab, `explain`).
OPTIONS_MEANING = ("not in the KernelId: the client's compilation options (CheckedIo rule, loop "
                   "budget, extra passes, each pass by its class and a digest of its code and "
                   "settings) are the other half of the pipeline cache's key — changing them "
                   "empties the cache, so a pass that changes the code never meets a pipeline "
                   "compiled without it")


@api_boundary
def explain(k: KernelInstance | KernelId, client: Any = None) -> list[tuple[str, str, str]]:
    """The KernelId field by field: (field, value, what it means); with `client`, a last row
    for the other half of the cache key, the client's compilation options
    (`compiler.options.options_key`)."""
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
        elif "CompilationArg" in text.split(" ", 1)[0]:
            why = ("a @cube_type struct or enum, field by field: its buffers and scalars are "
                   "launch data (), its Comptime fields and a default enum's variant are "
                   "compile-time: each value is a kernel")
            text = " ".join(text.split())
        else:
            why = "a compile-time value (vector width or Comptime argument): each value is a kernel"
        out.append((key, text, why))
    if client is not None:
        out.append(("compilation options", options_key(client.compilation_options()),
                    OPTIONS_MEANING))
    return out


@api_boundary
def default_instance(kernel: CubeFunction, cube_dim: CubeDim | None = None) -> KernelInstance:
    """An instance to look at before any launch: f32/i32 for generics, width 1, Comptime
    arguments at their default (or False/0 for bool/int ones); TypeError if none applies."""
    types = [i32 if getattr(g, "family", "") == "Int" else f32
             for g in kernel.generics if isinstance(g, GenericScalar)]
    sizes = tuple(1 for g in kernel.generics if isinstance(g, GenericSize))
    sig = _pyinspect.signature(kernel.fn)
    comptime = []
    for p in kernel.params:
        if p.kind == "aggregate":
            comptime.append(_launch_args.default_key(p.spec, kernel.__name__, p.name))
        elif p.kind == "comptime":
            default = sig.parameters[p.name].default
            if default is _pyinspect.Parameter.empty:
                inner = getattr(p.spec, "inner", None)
                if inner in (bool, int, float):  # the type's zero: False, 0, 0.0
                    comptime.append(inner())
                    continue
                raise TypeError(hinted(f"`{kernel.__name__}` has Comptime argument `{p.name}` "
                                       "without a default", "pass an instance "
                                       "(inspect.instance(..., comptime=(...))) or launch it"))
            comptime.append(default)
    return instance(kernel, *types, sizes=sizes, cube_dim=cube_dim, comptime=tuple(comptime))


@api_boundary
def instance_from_id(kernel: CubeFunction, kid: KernelId) -> KernelInstance:
    """Rebuild the Kernel a launch made from its KernelId (for line maps of a live compile)."""
    fields = dict(kid.info.fields)
    by_name = {repr(t): t for t in vars(_types).values() if isinstance(t, ScalarKind)}
    generic_text = kid.type.split("<", 1)[1].rstrip(">") if "<" in kid.type else ""
    type_names = [t.strip() for t in generic_text.split(",") if t.strip()]
    types = tuple(by_name[t] for t in type_names)
    sizes = tuple(int(fields[g.name.lower()]) for g in kernel.generics
                  if isinstance(g, GenericSize))
    comptime = tuple(fields[p.name] if p.kind == "comptime" else
                     _launch_args.key_from_compilation_arg(p.spec, fields[p.name])
                     for p in kernel.params if p.kind in ("comptime", "aggregate"))
    if len(types) != len([g for g in kernel.generics if isinstance(g, GenericScalar)]):
        raise ValueError(hinted(f"{kid.short()} does not match `{kernel.__name__}`'s generics",
                                "rebuild it from a KernelId this kernel's launch made"))
    return instance(kernel, *types, sizes=sizes, cube_dim=kid.cube_dim, comptime=comptime,
                    checked=kid.mode is ExecutionMode.Checked)
