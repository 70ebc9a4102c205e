"""What `@cube(launch=True)` made of a function, item by item — cubelab's `cargo expand` listing —
and its `launch`, written out step by step for one kernel.

    print(inspect.generated(saxpy))          # the items: the original, the generics, expand,
                                             # Saxpy / SaxpyInfo, new, id, define, launch
    print(inspect.generated_launch(saxpy))   # what saxpy.launch[F] does, as straight-line code

CubeCL's macro writes these items as Rust source (the chapter on `#[cube]` kernels lists them
from `cargo expand`); cubelab makes the same parts as Python objects (`CubeFunction`,
`KernelInstance`, `Launcher`), and these views print them in that listing's order, read from
the kernel itself: its parameters, their IO, its generics, the names its instances take. The
launch listing follows the loop in `frontend/launch.py` for this kernel's signature — what it
registers, in which order, and which part of each argument is compile-time — so it changes when
the kernel does.

The trap: the launch listing is a *reading* of the real launch, not code that runs; the real
one checks every argument (`LaunchError`) and keeps a cache-hit path that skips this work.
"""

from __future__ import annotations

from typing import Any

from cubelab.errors import hinted
from cubelab.frontend.kernel import CubeFunction
from cubelab.frontend.types import GenericScalar, GenericSize

__all__ = ["generated", "generated_launch"]


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p) or name


def _annotations(fn: CubeFunction) -> dict[str, str]:
    """Each parameter's annotation as written in the kernel's source."""
    import ast
    import textwrap

    src = textwrap.dedent(fn.source)
    try:
        node = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef))
    except (SyntaxError, StopIteration):
        return {}
    return {a.arg: ast.get_source_segment(src, a.annotation) or ""
            for a in node.args.args if a.annotation is not None}


def _signature(fn: CubeFunction) -> str:
    written = _annotations(fn)
    return ", ".join(f"{p.name}: {written.get(p.name, repr(p.spec))}" for p in fn.params)


def _launchers(fn: CubeFunction) -> list[tuple[str, str]]:
    from cubelab.frontend.launch import Launcher

    out = []
    if isinstance(fn.launch, Launcher):
        out.append(("launch", "ExecutionMode.Checked"))
    if isinstance(fn.launch_unchecked, Launcher):
        out.append(("launch_unchecked", "ExecutionMode.Unchecked"))
    return out


def _lay_out(rows: list[tuple[str, str]], width: int = 96) -> str:
    """Each code line under its note (a `#` comment at the code's indent, wrapped to `width`)."""
    import textwrap

    out = []
    for code, note in rows:
        indent = code[: len(code) - len(code.lstrip())]
        if note:
            out += textwrap.wrap(note, width, initial_indent=indent + "# ",
                                 subsequent_indent=indent + "#   ")
        out.append(code.rstrip())
    return "\n".join(out)


def generated(fn: CubeFunction) -> str:
    """The items `@cube` made of `fn`, in the order of CubeCL's `cargo expand` listing, each
    with what it is in cubelab and when it runs."""
    if not isinstance(fn, CubeFunction) or not fn.is_kernel:
        raise TypeError(hinted("generated(kernel) takes a @cube(launch=True) function",
                               "pass the kernel itself (not a helper, not a launch)"))
    name, kernel = fn.__name__, _camel(fn.__name__)
    scalars = [g for g in fn.generics if isinstance(g, GenericScalar)]
    sizes = [g for g in fn.generics if isinstance(g, GenericSize)]
    gen = f"[{', '.join(g.name for g in scalars)}]" if scalars else ""
    args = ", ".join(p.name for p in fn.params)
    rows: list[tuple[str, str]] = [
        (f"# what @cube(launch=True) made of `{name}`, item by item (CubeCL: `cargo expand`)", ""),
        ("", ""),
        (f"def {name}({_signature(fn)}):", f"{name}.fn, the original: kept to be read and "
         "checked, never called"),
        ("    ...", ""),
        ("", ""),
        (f"{name}:  # CubeFunction", f"CubeCL: the generated `mod {name}`, with:"),
    ]
    for g in scalars:
        rows.append((f"    {g.name} = {g!r}", f"CubeCL: `type {g.name} = DynamicScalar<_{g.name}>`, "
                     "looked up in the scope's type table"))
    for g in sizes:
        rows.append((f"    {g.name} = {g!r}", f"CubeCL: `type {g.name} = DynamicSize<_{g.name}>`"))
    rows += [
        (f"    def expand(__s, {args}): ...", f"{name}.expand_fn(): the body as IR-registering "
         f"calls (inspect.expanded({name}))"),
        (f"    class {kernel}(KernelInstance):", f"CubeCL: `struct {kernel}<..>`: one launch's "
         "compile-time arguments"),
        ("        settings, types, sizes, comptimes", "each argument's compile-time part, the "
         "widths: never the data"),
        (f"        info: {kernel}Info", f"CubeCL: `struct {kernel}Info<..>` (Hash, Eq, Debug)"),
        ("        def __init__(self, ...): ...", f"CubeCL: `{kernel}::new`, called by launch"),
        ("        def id(self) -> KernelId: ...", "CubeCL: `KernelMetadata::id`: the cache key"),
        ("        def define(self) -> KernelDefinition: ...", "CubeCL: `CubeKernel::define`: IR "
         "values for the arguments, then expand"),
    ]
    for launcher, mode in _launchers(fn):
        rows.append((f"    {name}.{launcher}{gen}(client, cube_count, cube_dim"
                     + "".join(f", {g.name.lower()}" for g in sizes) + f", {args})",
                     f"CubeCL: `pub fn {launcher}`: {mode}; registers, builds {kernel}, submits"))
    return _lay_out(rows)


def generated_launch(fn: CubeFunction, launcher: str = "launch") -> str:
    """What `fn.<launcher>[...]` does on the calling thread, written out for this kernel in the
    order of CubeCL's generated `launch`: settings, the launcher, the type table, each argument
    registered with its IO, the Kernel built from the compile-time parts, and the hand-off."""
    modes = dict(_launchers(fn))
    if launcher not in modes:
        raise ValueError(hinted(f"`{fn.__name__}` has no `{launcher}`",
                                f"it declares {', '.join(modes) or 'none'}"))
    kernel = _camel(fn.__name__)
    written = _annotations(fn)
    sizes = [g for g in fn.generics if isinstance(g, GenericSize)]
    scalars = [g for g in fn.generics if isinstance(g, GenericScalar)]
    params = "".join(f", {g.name.lower()}" for g in sizes) + "".join(f", {p.name}"
                                                                    for p in fn.params)
    gen = f"[{', '.join(g.name for g in scalars)}]" if scalars else ""
    rows: list[tuple[str, str]] = [
        (f"# {fn.__name__}.{launcher}{gen}(...), written out: what it does on the calling "
         "thread, every call", ""),
        (f"def {launcher}(client, cube_count, cube_dim{params}):", ""),
        (f"    settings = KernelSettings(cube_dim, {modes[launcher]}, AddressType.U32)", ""),
        ("    launcher = KernelLauncher()", ""),
    ]
    for g in scalars:
        rows.append((f"    types[{g.name!r}] = {g.name}", f"register_type: the element type {g.name} "
                     "stands for at this launch"))
    for g in sizes:
        rows.append((f"    sizes[{g.name!r}] = {g.name.lower()}", f"register_size: the vector width "
                     f"{g.name}"))
    info = [f"{g.name.lower()}: {g.name.lower()}" for g in sizes]
    for p in fn.params:
        what = written.get(p.name, repr(p.spec))
        if p.kind == "buffer":
            io = "ReadWrite" if p.spec.writable else "ReadOnly"
            rows.append((f"    launcher.register_buffer({p.name})", f"declare_io({io}), {what}: "
                         "binding and length, runtime only"))
            info.append(f"{p.name}: BufferCompilationArg")
        elif p.kind == "scalar":
            rows.append((f"    launcher.register_scalar({p.spec.elem.value!r}, {p.name})",
                         f"{what}: its bytes go to info_st.scalars_{p.spec.elem.value}"))
            info.append(f"{p.name}: ()")
        elif p.kind == "comptime":
            rows.append((f"    comptimes.append({p.name})", f"{what}: no runtime part; its value "
                         "is in the KernelId"))
            info.append(f"{p.name}: {p.name}")
        else:
            rows.append((f"    launcher.register({p.name})", f"{what}: flattened into its fields"))
            info.append(f"{p.name}: its comptime fields")
    rows += [
        (f"    kernel = {kernel}(settings, types, sizes, comptimes)", f"{kernel}::new: the "
         "compile-time parts only"),
        (f"    # kernel.info = {kernel}Info {{ {', '.join(info)} }}", ""),
        ("    launcher.launch(client, kernel, cube_count)", "client.launch: hands it to the device "
         "thread, returns; no IR built"),
    ]
    return _lay_out(rows)
