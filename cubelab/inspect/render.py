"""`view(x)` builds the renderable for any inspectable thing; `show(x)` displays it where it is.

In a Jupyter kernel `show` hands the view to IPython's `display` (HTML + text); in a terminal it
prints through rich when rich is installed, else plain text. IPython and rich are imported only
inside these calls.
"""

from __future__ import annotations

import difflib
import functools
import sys
from typing import Any

from cubelab.errors import api_boundary
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.inspect import live
from cubelab.inspect.instances import expanded, explain
from cubelab.inspect.live import clock, distinguishing_fields, plural
from cubelab.inspect.preview import Compiled, compiled
from cubelab.inspect.trace import Trace
from cubelab.inspect.views import CodeView, NoteView, SectionsView, TableView, View
from cubelab.ir.passes import PassRecord
from cubelab.runtime.kernel_id import KernelId

__all__ = ["view", "show", "kernel_id_view", "passes_view", "cache_view", "buffers_view",
           "launches_view"]


def kernel_id_view(kid: Any, title: str | None = None) -> View:
    rows = [(k, v, why) for k, v, why in explain(kid)]
    return SectionsView([
        TableView(["field", "value", "what it means"], rows),
        CodeView(kid.debug(), "rust", title="as the debug log prints it"),
    ], title=title or f"KernelId {kid.short()}")


def passes_view(records: Any) -> View:
    sections: list[View] = []
    for r in records:
        d = "\n".join(difflib.unified_diff(r.before.splitlines(), r.after.splitlines(),
                                           "before", "after", lineterm="", n=1))
        sections.append(CodeView(d or "(no change)", "diff",
                                 title=f"pass `{r.name}`" + ("" if r.changed else " — no change")))
    if not sections:
        sections.append(NoteView(["no passes ran (launch_unchecked runs none)"]))
    return SectionsView(sections, title="Passes")


def cache_view(snap: Any) -> View:
    keys = distinguishing_fields([r.kernel_id for r in snap.rows])
    rows, classes = [], []
    for r in snap.rows:
        rows.append((r.short, keys[r.kernel_id], r.compiles, r.hits, clock(r.last_launched),
                     f"{r.compile_s * 1e3:.1f} ms", "; ".join(r.why)))
        classes.append("cl-state-failed" if r.failures else "")
    return TableView(["KernelId", "differs in", "compiles", "hits", "last launched at",
                      "compile time", "why?"],
                     rows, title=f"Pipeline cache — {plural(snap.total_compiles, 'compile')}, "
                                 f"{plural(snap.total_hits, 'hit')}", row_classes=classes)


def buffers_view(snap: Any) -> View:
    rows, classes = [], []
    for b in snap.buffers:
        cause = ""
        if b.state in ("failed", "skipped"):
            cause = f"root cause: `{b.root_kernel}` — {b.error}"
        rows.append((f"#{b.handle_id}", "" if b.size is None else f"{b.size} B", b.state,
                     b.kernel, cause))
        classes.append(f"cl-state-{b.state}")
    views: list[View] = [TableView(["buffer", "size", "state", "last launch", "root cause"], rows,
                                   title="Buffers", row_classes=classes)]
    if snap.oob:
        views.append(TableView(
            ["kernel", "buffer", "index", "len", "unit", "cube", "access", "at"],
            [(o.kernel, o.buffer, o.index, o.length, o.unit, o.cube,
              "write" if o.write else "read", o.loc) for o in snap.oob],
            title="Out-of-bounds reports"))
    return SectionsView(views) if len(views) > 1 else views[0]


def launches_view(records: Any) -> View:
    rows = []
    for r in records:
        hop1 = f"{r.calling_thread}" + (f" — gated: {r.gated}" if r.gated else " → queued")
        parts = [r.cache or ""]
        if r.skipped:
            parts.append(f"skipped ({r.skipped})")
        if r.claimed:
            parts.append("claimed " + ",".join(f"#{h}" for h in r.claimed))
        if r.failed:
            parts.append(f"failed: {r.failed}")
        elif r.dispatched_t:
            parts.append("dispatched")
        lat = r.latency_s
        rows.append((r.seq if r.seq > 0 else "—", r.kernel, hop1, " → ".join(p for p in parts if p),
                     r.device_thread, "" if lat is None else f"{lat * 1e3:.2f} ms"))
    return TableView(["#", "kernel", "hop 1: calling thread", "hop 2: device thread",
                      "device thread", "issue→dispatch"], rows, title="Launches")


@api_boundary
def view(x: Any) -> View:
    """The renderable for `x` (a kernel, a Kernel instance, a KernelId, passes, a ledger, ...):
    one renderer per type (`_view.register`), the most specific type's."""
    return _view(x)


@functools.singledispatch
def _view(x: Any) -> View:
    return CodeView(repr(x), "text")


@_view.register(View)
def _(x: View) -> View:
    return x


@_view.register(CubeFunction)
def _(x: CubeFunction) -> View:
    return SectionsView([
        CodeView(x.source, "python", title=f"Source — {x.file}:{x.first_line}",
                 first_line=x.first_line),
        CodeView(expanded(x), "python", title="Expanded (the generated expand function)"),
    ], title=f"@cube {x.__name__}")


@_view.register(KernelInstance)
def _(x: KernelInstance) -> View:
    return _view(compiled(x))


@_view.register(Compiled)
def _(x: Compiled) -> View:
    sections: list[View] = [CodeView(x.expanded_ir, "ir", title="IR (as expanded)"),
                            passes_view(x.passes)]
    # one section per target of the registry, in its order (compiler/targets.py)
    sections += [CodeView(src.source, name, title=f"{name.upper()} — {src.entry}")
                 for name, src in x.sources.items()]
    return SectionsView(sections, title=f"{x.kernel_id.short()}", collapsible=True)


@_view.register(KernelId)
def _(x: KernelId) -> View:
    return kernel_id_view(x)


@_view.register(PassRecord)
def _(x: PassRecord) -> View:
    return passes_view([x])


@_view.register(list)
@_view.register(tuple)
def _(x: list[Any] | tuple[Any, ...]) -> View:
    if x and all(isinstance(r, PassRecord) for r in x):
        return passes_view(x)
    if all(isinstance(s, str) for s in x):  # an empty one too: `diff` of two equal ids
        return NoteView(list(x) or ["identical"], title="Why a new KernelId")
    if isinstance(x, tuple) and all(isinstance(r, live.LaunchRecord) for r in x):
        return launches_view(x)
    return CodeView(repr(x), "text")


@_view.register(live.CacheSnapshot)
def _(x: live.CacheSnapshot) -> View:
    return cache_view(x)


@_view.register(live.BuffersSnapshot)
def _(x: live.BuffersSnapshot) -> View:
    return buffers_view(x)


@_view.register(Trace)
def _(x: Trace) -> View:
    return CodeView(x.table(), "text", title=f"trace of `{x.kernel}`, unit {x.unit} "
                                             f"(step {x.position + 1} of {len(x)})")


@_view.register(live.Ledger)
def _(x: live.Ledger) -> View:
    return _view(x.snapshot())  # type: ignore[attr-defined]


@_view.register(str)
def _(x: str) -> View:
    return CodeView(x, "text")


def _in_kernel() -> bool:
    ipy = sys.modules.get("IPython")
    if ipy is None:
        return False
    shell = ipy.get_ipython()  # type: ignore[attr-defined]
    return shell is not None and shell.__class__.__name__ != "TerminalInteractiveShell"


@api_boundary
def show(x: Any) -> View:
    """Display `x` here: rich HTML in a notebook, rich text in a terminal. Returns the view."""
    v = view(x)
    if _in_kernel():
        from IPython.display import display

        display(v)
        return v
    try:
        from rich.console import Console
    except ImportError:
        print(v.text())
    else:
        Console().print(v.rich())
    return v
