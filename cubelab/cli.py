"""`python -m cubelab` / `cubelab`: the inspector's views in a terminal, and the seed-000 demo.

    cubelab expand kernels.py::saxpy                 the generated expand function
    cubelab ir kernels.py::saxpy --types f32 --sizes 4 [--after-passes]
    cubelab wgsl kernels.py::add --types f32 --comptime true --unchecked
    cubelab msl kernels.py::saxpy --types f32 --sizes 4 --cube-dim 4
    cubelab cuda kernels.py::saxpy ...               (one command per target of the registry,
                                                      compiler/targets.py TARGETS)
    cubelab id kernels.py::add --types f32 --comptime false   the KernelId, field by field
    cubelab demo [--device cpu|wgpu]                 seed 000: saxpy, the quiz, the cache, OOB rows
    cubelab course build [01 03 ...]                 nbgrader source assignments (cubelab/course.py)
    cubelab cost kernels.py::saxpy --count 4 --cube-dim 256 --arg a=2.0
                                                     coalescing and bank conflicts (cli_cost.py)

Output is highlighted through rich when it is installed (`pip install cubelab[terminal]`) and
stdout is a terminal (`--color always|never` overrides); otherwise it is plain text — no boxes,
nothing cropped — so `cubelab wgsl kernels.py::add > add.wgsl` writes the WGSL itself (the code commands print
only the code then; the title goes with the colours). Nothing
here runs on a device except `demo` and `cost`.
"""

from __future__ import annotations

from cubelab.errors import hinted
import argparse
import ast
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["main", "load_kernel"]


def load_kernel(spec: str) -> Any:
    """`path/to/file.py::name` → the @cube function `name` defined in that file."""
    from cubelab.frontend.kernel import CubeFunction

    if "::" not in spec:
        raise SystemExit(hinted(f"cubelab: expected FILE::KERNEL, got {spec!r}",
                                "name the file and the kernel, e.g. kernels.py::saxpy"))
    file, name = spec.rsplit("::", 1)
    path = Path(file).resolve()
    if not path.is_file():
        raise SystemExit(hinted(f"cubelab: no such file: {file}",
                                "give the path of the .py file that defines the kernel"))
    loaded = sys.modules.get(path.stem)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        module = loaded  # already imported (in-process use): keep one set of kernel objects
    else:
        sys.path.insert(0, str(path.parent))  # the file may import its neighbours
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        assert mod_spec is not None and mod_spec.loader is not None
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[path.stem] = module  # the KernelId's type path starts with the file's stem
        mod_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not isinstance(fn, CubeFunction):
        kernels = [k for k, v in vars(module).items() if isinstance(v, CubeFunction)]
        raise SystemExit(hinted(f"cubelab: {file} has no @cube function {name!r}",
                                f"its @cube functions: {', '.join(kernels) or 'none'}"))
    return fn


def _literal(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _instance(args: argparse.Namespace) -> Any:
    from cubelab import inspect as I
    from cubelab.frontend import types as T
    from cubelab.runtime.kernel_id import CubeDim

    fn = load_kernel(args.kernel)
    if not fn.is_kernel:
        raise SystemExit(hinted(f"cubelab: `{fn.__name__}` is a helper (no launch=True)",
                                "name a kernel that calls it: a helper is inlined there"))
    by_name = {repr(t): t for t in vars(T).values() if isinstance(t, T.ScalarKind)}
    try:
        types = [by_name[t] for t in args.types.split(",") if t] if args.types else []
    except KeyError as exc:
        raise SystemExit(hinted(f"cubelab: unknown element type {exc}",
                                f"use {', '.join(by_name)}")) from None
    sizes = tuple(int(s) for s in args.sizes.split(",") if s) if args.sizes else ()
    comptime = tuple(_literal(c) for c in args.comptime.split(",")) if args.comptime else ()
    cube_dim = CubeDim.new_1d(args.cube_dim)
    if not types and not sizes and not comptime:
        return I.default_instance(fn, cube_dim), fn
    return I.instance(fn, *types, sizes=sizes, cube_dim=cube_dim, comptime=comptime,
                      checked=not args.unchecked), fn


class Out:
    """Print views through rich (colour, panels) or as plain text.

    Plain text whenever stdout is not a terminal (`cubelab wgsl ... > x.wgsl`, a pipe, a
    notebook's `!cubelab`) or with `--color never`: what lands in a file is the code, never a
    box drawn around it. rich only for a terminal (or `--color always`), and never cropped: code
    wraps at the terminal's edge, and output forced into colour off a terminal gets the width
    its widest line needs."""

    def __init__(self, color: str) -> None:
        self.console = None
        tty = sys.stdout.isatty()
        if color == "never" or (color == "auto" and (not tty or os.environ.get("NO_COLOR"))):
            return
        try:
            from rich.console import Console
        except ImportError:
            return
        self.console = Console(force_terminal=True, highlight=False)
        self.fit_width = not tty

    code_only = False  # `expand`, `ir`, a target: plain output is the code and nothing else

    def __call__(self, view: Any) -> None:
        if self.console is None:
            from cubelab.inspect.views import CodeView

            if self.code_only and isinstance(view, CodeView):
                print(view.source.rstrip("\n"))
            else:
                print(view.text() if hasattr(view, "text") else view)
            return
        renderable = view.rich() if hasattr(view, "rich") else view
        width = None
        if self.fit_width:
            from rich.measure import Measurement

            need = Measurement.get(self.console, self.console.options.update_width(10_000),
                                   renderable).maximum
            width = max(self.console.width, need)
        self.console.print(renderable, width=width)


def _cmd_expand(args: argparse.Namespace, out: Out) -> None:
    from cubelab import inspect as I
    from cubelab.inspect.views import CodeView

    fn = load_kernel(args.kernel)
    out(CodeView(I.expanded(fn), "python", title=f"expand of `{fn.__name__}`"))


def _cmd_ir(args: argparse.Namespace, out: Out) -> None:
    from cubelab import inspect as I
    from cubelab.inspect.views import CodeView

    k, _ = _instance(args)
    c = I.compiled(k, checked_io=args.checked_io)
    text = c.ir if args.after_passes else c.expanded_ir
    out(CodeView(text, "ir", title=("IR after passes" if args.after_passes else "IR") +
                 f" — {c.kernel_id.short()}"))


def _cmd_target(args: argparse.Namespace, out: Out) -> None:
    """`cubelab <target> FILE::KERNEL`: that target's generated source (every registered one)."""
    from cubelab import inspect as I
    from cubelab.inspect.views import CodeView

    k, _ = _instance(args)
    c = I.compiled(k, checked_io=args.checked_io)
    if args.command not in c.sources:
        why = c.failures.get(args.command)
        raise SystemExit(hinted(f"cubelab: the {args.command} target cannot express this "
                                f"kernel: {why}", "look at another target's source (cubelab "
                                "wgsl FILE::KERNEL), which runs"))
    src = c.sources[args.command]
    out(CodeView(src.source, args.command, title=f"{args.command.upper()} — {src.entry}"))


def _cmd_id(args: argparse.Namespace, out: Out) -> None:
    from cubelab import inspect as I

    k, _ = _instance(args)
    out(I.view(k.id()))


def _cmd_demo(args: argparse.Namespace, out: Out) -> None:
    from cubelab.cli_demo import run_demo

    run_demo(out, args.device)


def _kernel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", help="FILE::KERNEL, e.g. kernels.py::saxpy")
    p.add_argument("--types", default="", help="element types of the generics, e.g. f32")
    p.add_argument("--sizes", default="", help="vector widths of the Size generics, e.g. 4")
    p.add_argument("--comptime", default="", help="Comptime argument values, e.g. true")
    p.add_argument("--cube-dim", type=int, default=1, help="units per cube (x)")
    p.add_argument("--unchecked", action="store_true", help="as launch_unchecked")
    from typing import get_args

    from cubelab.ir.passes import DEFAULT_CHECKED_IO, CheckedIoRule

    p.add_argument("--checked-io", default=DEFAULT_CHECKED_IO, choices=get_args(CheckedIoRule),
                   help="the CheckedIo matching rule (default: the seed's 0.11.3 rule)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cubelab", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    sub = ap.add_subparsers(dest="command", required=True)
    from cubelab.compiler.targets import TARGETS

    commands: dict[str, tuple[Callable[[argparse.Namespace, Out], None], str]] = {
        "expand": (_cmd_expand, "the generated expand function (cubelab's cargo expand)"),
        "ir": (_cmd_ir, "the kernel's IR (before passes, or --after-passes)"),
        # one command per registered target, in the registry's order
        **{name: (_cmd_target, f"the generated {name.upper()}" +
                  ("" if t.shown_only else " (what runs)")) for name, t in TARGETS.items()},
        "id": (_cmd_id, "the KernelId, field by field"),
    }
    for name, (fn, help_) in commands.items():
        p = sub.add_parser(name, help=help_)
        if name == "expand":
            p.add_argument("kernel", help="FILE::KERNEL")
        else:
            _kernel_args(p)
            p.add_argument("--after-passes", action="store_true") if name == "ir" else None
        p.set_defaults(fn=fn)
    d = sub.add_parser("demo", help="seed 000's experiments: saxpy, the quiz, the cache, OOB rows")
    d.add_argument("--device", choices=["cpu", "wgpu"], default=None)
    d.set_defaults(fn=_cmd_demo)
    from cubelab.course import add_parser as add_course  # `cubelab course build` (teachers)

    add_course(sub)
    from cubelab.cli_cost import add_parser as add_cost  # `cubelab cost FILE::KERNEL`

    add_cost(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from cubelab.errors import CubeError

    try:
        out = Out(args.color)
        out.code_only = args.fn in (_cmd_expand, _cmd_ir, _cmd_target)
        args.fn(args, out)
    except CubeError as exc:
        print(f"cubelab: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
