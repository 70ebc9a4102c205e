"""KernelInspector: one kernel, every stage — Source · Expanded · IR · Passes · one tab per target
of the registry (WGSL · MSL · CUDA · ...) · KernelIds — with a live list of the KernelIds compiled
so far and line correspondence.

Before any launch it shows a preview compiled on the calling thread (`inspect.compiled`, f32
for generic types, under the client's compilation options); every CompileFinished for this kernel on the client's bus adds its KernelId to
the dropdown, and picking one shows exactly what the server compiled (the event carries the IR,
the passes and the generated source). A launch that hits the cache for a KernelId compiled
before the inspector existed (a second Run All: same source, same KernelId, no compile) adds it
too, recompiled here through the same pipeline. Picking a kernel line highlights what it became
in the IR and the generated code; hovering a generated line says which kernel line it came from.

The header names where the kernel was written as its reader does (`Cell In[7], line 3`, never
IPython's temporary file), and a kernel whose preview cannot expand shows that error whole —
place, source line, caret, hint — in every compiled tab.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Sequence

import ipywidgets as W

from cubelab.errors import hinted
from cubelab import inspect as I
from cubelab.compiler.options import CompilationOptions, options_key
from cubelab.compiler.targets import TARGETS
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.inspect.highlight import to_html
from cubelab.inspect.lines import Correspondence, correspondence
from cubelab.inspect.live import Ledger
from cubelab.inspect.render import passes_view
from cubelab.errors import location
from cubelab.inspect.views import TableView, table_css
from cubelab.ir.passes import PassRecord
from cubelab.runtime import events as ev
from cubelab.runtime.kernel_id import KernelId
from cubelab.widgets._live import LiveView, UiThread, message_html, set_html

__all__ = ["KernelInspector", "tabs"]

_SHOW_ALIASES = {"source": "Source", "expanded": "Expanded", "ir": "IR", "passes": "Passes",
                 "ids": "KernelIds", "kernelids": "KernelIds", "kernel_ids": "KernelIds"}


def _tab_of(target: str) -> str:
    return target.upper()


def tabs() -> tuple[str, ...]:
    """The inspector's tabs: the stages, then one per target of `compiler.targets.TARGETS` (in
    the registry's order, named in capitals: "WGSL"), then the KernelIds."""
    return ("Source", "Expanded", "IR", "Passes", *(_tab_of(t) for t in TARGETS), "KernelIds")


@dataclass
class Stage:
    """Everything one KernelId compiled to (from a preview or from a CompileFinished event)."""

    label: str
    kernel_id: KernelId
    expanded_ir: str
    ir: str
    passes: list[PassRecord]
    sources: dict[str, str]  # target name -> its source (a failed shown target: the comment)
    launched: bool
    corr: Correspondence | None = None
    options_key: str = ""  # the compile's options (compiler/options.py), the cache key's half


class _KernelCompiles(Ledger):
    """What one kernel (by its type path and source digest) ran as: each CompileFinished, and
    each KernelId first met as a cache hit (compiled before this ledger listened), in order."""

    kinds = (ev.CompileFinished, ev.CacheHits)

    def __init__(self, kernel: CubeFunction, bus: ev.EventBus | None) -> None:
        self.suffix = f"::{kernel.__name__}::"
        self.origin = kernel.origin()
        self.events: list[ev.CompileFinished | KernelId] = []
        self._seen: set[KernelId] = set()
        super().__init__(bus)

    def _record(self, e: ev.Event) -> None:
        assert isinstance(e, (ev.CompileFinished, ev.CacheHits))
        kid = e.kernel_id
        if self.suffix not in kid.type or kid.origin != self.origin:
            return
        if isinstance(e, ev.CompileFinished):
            self.events.append(e)
        elif kid not in self._seen:
            self.events.append(kid)
        self._seen.add(kid)

    def _reset(self) -> None:
        self.events.clear()
        self._seen.clear()

    def snapshot(self) -> list[ev.CompileFinished | KernelId]:
        with self._lock:
            self._drain()
            return list(self.events)


def _normalize_show(show: Sequence[str] | str | None) -> list[str]:
    all_tabs = tabs()
    if show is None:
        return list(all_tabs)
    aliases = {**_SHOW_ALIASES, **{t: _tab_of(t) for t in TARGETS}}
    items = show.split(",") if isinstance(show, str) else list(show)
    out = []
    for s in items:
        key = s.strip()
        name = aliases.get(key.lower(), key)
        if name not in all_tabs:
            names = [k for k, v in aliases.items() if k in ("source", "expanded", "ir", "passes",
                                                             "ids") or k in TARGETS]
            raise ValueError(hinted(f"unknown inspector view {s!r}",
                                    f"choose from {', '.join(names)}"))
        out.append(name)
    # Source first when asked, then in the canonical order
    return [t for t in all_tabs if t in out]


class KernelInspector(LiveView):
    css_class = "cubelab-kernel-inspector"
    counters = False

    def __init__(self, kernel: CubeFunction, client: Any = None, *,
                 instance: KernelInstance | None = None, show: Sequence[str] | str | None = None,
                 label: str | None = None, live: bool = True, ui: UiThread | None = None) -> None:
        if not isinstance(kernel, CubeFunction):
            raise TypeError(hinted(f"KernelInspector needs a @cube function, got "
                                   f"{type(kernel).__name__}", "pass the kernel itself"))
        self.kernel = kernel
        self.client = client
        self.compiles = _KernelCompiles(kernel, client.events if client is not None else None)
        super().__init__([self.compiles], live=live and client is not None, ui=ui)
        self.tab_names = _normalize_show(show)
        self._stages: dict[str, Stage] = {}
        self.preview_error = ""
        if kernel.is_kernel:
            try:
                inst = instance or I.default_instance(kernel)
                self._add_preview(inst)
            except Exception as exc:  # noqa: BLE001 - show why, keep the other tabs
                self.preview_error = f"{type(exc).__name__}: {exc}".strip()
        self.selected: str | None = next(iter(self._stages), None)
        self.line: int | None = None

        self.ids = W.Dropdown(options=list(self._stages), description="KernelId",
                              layout=W.Layout(width="34em"))
        self.ids.add_class("cubelab-kernel-ids")
        self.lines = W.Dropdown(options=[("—", None)], description="kernel line",
                                layout=W.Layout(width="34em"))
        self.lines.add_class("cubelab-ellipsis")
        self.lines.add_class("cubelab-kernel-lines")
        self.panes = {name: W.HTML() for name in self.tab_names}
        for name, pane in self.panes.items():
            pane.add_class(f"cubelab-tab-{name.lower()}")
        self.tabs = W.Tab(children=[self.panes[n] for n in self.tab_names])
        for i, name in enumerate(self.tab_names):
            self.tabs.set_title(i, name)
        self.ids.observe(self._on_id, names="value")
        self.lines.observe(self._on_line, names="value")
        where = self.label = label or location(kernel.file, kernel.first_line)
        self._mount(W.HTML(f'<b>@cube {html.escape(kernel.__name__)}</b> '
                                    f'<span style="opacity:.7">{html.escape(where)}</span>'),
                             W.HBox([self.ids, self.lines]), self.tabs)

    # -- data ---------------------------------------------------------------------------------
    def _add_preview(self, inst: KernelInstance) -> None:
        c = I.compiled(inst, client=self.client)  # under the client's compilation options
        label = f"preview (not launched) {c.kernel_id.short()}"
        sources = {name: src.source for name, src in c.sources.items()}
        key = options_key(self.client.compilation_options() if self.client is not None
                          else CompilationOptions())
        self._stages[label] = Stage(label, c.kernel_id, c.expanded_ir, c.ir, list(c.passes),
                                    sources, False, I.correspondence(c, self.kernel.file), key)

    def _stage_from_hit(self, kid: KernelId, n: int) -> Stage:
        """A KernelId this inspector first saw as a cache hit: compiled before it listened (a
        second Run All), so rebuilt here through the same pipeline."""
        label = f"#{n} cached {kid.short()} ({kid.mode.value})"
        try:  # under the client's options, as its launches compiled it
            c = I.compiled(I.instance_from_id(self.kernel, kid), client=self.client)
        except Exception:  # noqa: BLE001 - an id this source cannot rebuild: keep the others
            return Stage(label, kid, "", "", [], {}, True)
        sources = {name: src.source for name, src in c.sources.items()}
        key = options_key(self.client.compilation_options() if self.client is not None
                          else CompilationOptions())
        return Stage(label, kid, c.expanded_ir, c.ir, list(c.passes), sources, True,
                     I.correspondence(c, self.kernel.file), key)

    def _stage_from_event(self, e: ev.CompileFinished, n: int) -> Stage:
        label = f"#{n} compiled {e.kernel_id.short()} ({e.kernel_id.mode.value})"
        passes = [PassRecord(name, before, after, before != after)
                  for name, before, after in e.passes]
        sources = {e.target: e.source, **e.extra_sources}
        stage = Stage(label, e.kernel_id, e.expanded_ir, e.ir, passes,
                      {name: sources[name] for name in TARGETS if name in sources}, True,
                      options_key=e.options_key)
        stage.corr = self._corr_for(e, sources)
        return stage

    def _corr_for(self, e: ev.CompileFinished, sources: dict[str, str]) -> Correspondence:
        """Line maps for a live compile: recompile here, under the client's options, and keep
        each target's map only if its generated text is the same as the server's."""
        try:
            c = I.compiled(I.instance_from_id(self.kernel, e.kernel_id), client=self.client)
        except Exception:  # noqa: BLE001
            return correspondence(e.ir_lines, None, self.kernel.file)
        targets = {name: src for name, src in c.sources.items()
                   if sources.get(name) == src.source}
        return correspondence(e.ir_lines, targets, self.kernel.file)

    @property
    def kernel_ids(self) -> list[str]:
        return list(self._stages)

    def stage(self, label: str | None = None) -> Stage:
        return self._stages[label or self.selected or next(iter(self._stages))]

    # -- interaction --------------------------------------------------------------------------
    def select(self, label: str) -> None:
        with self._render_lock:
            if label not in self._stages:
                raise KeyError(label)
            self.selected = label
            self.render()

    def select_line(self, line: int | None) -> None:
        """Highlight what kernel line `line` (as numbered in its file) became."""
        with self._render_lock:
            self.line = line
            self.render()

    def _on_id(self, change: dict[str, Any]) -> None:
        if change.get("new") and change["new"] != self.selected:
            self.select(change["new"])

    def _on_line(self, change: dict[str, Any]) -> None:
        if change.get("new") != self.line:
            self.select_line(change.get("new"))

    # -- rendering ----------------------------------------------------------------------------
    def model(self) -> dict[str, Any]:
        st = self._stages.get(self.selected or "")
        hl = {}
        if st is not None and st.corr is not None and self.line is not None:
            hl = {"ir": st.corr.ir.get(self.line, []),
                  **{k: v.get(self.line, []) for k, v in st.corr.targets.items()}}
        return {"tabs": list(self.tab_names), "kernel_ids": self.kernel_ids,
                "selected": self.selected, "line": self.line, "highlight": hl,
                "preview_error": self.preview_error}

    def tab_html(self, name: str) -> str:
        return str(self.panes[name].value)

    def render(self) -> None:
        events = self.compiles.snapshot()
        launched = [s for s in self._stages.values() if s.launched]
        for n, e in enumerate(events[len(launched):], start=len(launched) + 1):
            st = self._stage_from_event(e, n) if isinstance(e, ev.CompileFinished) \
                else self._stage_from_hit(e, n)
            self._stages[st.label] = st
            if self.selected is None or not self._stages[self.selected].launched:
                self.selected = st.label  # follow the first real compile
        st = self._stages.get(self.selected or "")
        with self._root.hold_sync():
            if list(self.ids.options) != list(self._stages):
                self.ids.options = list(self._stages)
            if self.selected is not None and self.ids.value != self.selected:
                self.ids.value = self.selected
            line_opts = self._line_options(st)
            if list(self.lines.options) != line_opts:
                self.lines.options = line_opts
            for name in self.tab_names:
                set_html(self.panes[name], self._pane(name, st))

    def _line_options(self, st: Stage | None) -> list[tuple[str, int | None]]:
        opts: list[tuple[str, int | None]] = [("—", None)]
        if st is None or st.corr is None:
            return opts
        src = self.kernel.source.splitlines()
        for n in st.corr.source_lines():
            i = n - self.kernel.first_line
            text = src[i].strip() if 0 <= i < len(src) else ""
            opts.append((f"{n}: {text if len(text) <= 60 else text[:59] + '…'}", n))
        return opts

    def _pane(self, name: str, st: Stage | None) -> str:
        k = self.kernel
        line = self.line
        if name == "Source":
            rel = [line - k.first_line + 1] if line else []
            gutter = {i: str(k.first_line + i - 1)
                      for i in range(1, len(k.source.splitlines()) + 1)}
            return to_html(k.source, "python", hl_lines=rel, gutter=gutter,
                           title=self.label)
        if name == "Expanded":
            return to_html(I.expanded(k), "python",
                           title="the generated expand function (cubelab's `cargo expand`)")
        if st is None:
            if self.preview_error:  # the error whole: its lines, the caret under the mistake
                return ('<div class="cubelab-code cubelab-preview-error"><div class="cl-title '
                        'cl-state-failed">this kernel does not expand</div>'
                        f"{message_html(self.preview_error, 40)}</div>")
            return ('<div class="cubelab-code cl-muted">nothing compiled: helpers are inlined '
                    "into the kernels that call them; inspect one of those</div>")
        corr = st.corr
        if name == "IR":
            fwd = corr.ir_to_source if corr else {}
            hl = corr.ir.get(line, []) if (corr and line) else []
            return to_html(st.ir, "ir", hl_lines=hl, line_titles=self._titles(fwd),
                           title=f"IR after passes — {st.kernel_id.short()}")
        if name == "Passes":
            view = passes_view(st.passes)
            pre = to_html(st.expanded_ir, "ir", title="IR as expanded (before passes)")
            return pre + view.html()
        key = name.lower()
        if key in TARGETS:
            text = st.sources.get(key)
            if text is None:
                return (f'<div class="cubelab-code cl-muted">no {html.escape(name)} source for '
                        "this compile (the target was added after it)</div>")
            fwd = corr.target_to_source.get(key, {}) if corr else {}
            hl = corr.targets.get(key, {}).get(line, []) if (corr and line) else []
            gutter = {ln: f"py{src}" for ln, src in fwd.items()}
            return to_html(text, key, hl_lines=hl, line_titles=self._titles(fwd), gutter=gutter,
                           title=f"{name} — {st.label}")
        if name == "KernelIds":
            return self._ids_html(st)
        raise KeyError(name)

    def _titles(self, fwd: dict[int, int]) -> dict[int, str]:
        src = self.kernel.source.splitlines()
        out = {}
        for gen, n in fwd.items():
            i = n - self.kernel.first_line
            text = src[i].strip() if 0 <= i < len(src) else ""
            out[gen] = f"from kernel line {n}: {text}"
        return out

    def _ids_html(self, st: Stage) -> str:
        rows = [*I.explain(st.kernel_id), ("compilation options", st.options_key,
                                           I.instances.OPTIONS_MEANING)]
        table = TableView(["field", "value", "what it means"], rows,
                          title=f"KernelId of {st.label}, and the options it compiled with")
        parts = [table.html_body(), to_html(st.kernel_id.debug(), "rust", with_css=False,
                                           title="as the debug log prints it")]
        launched = [s for s in self._stages.values() if s.launched]
        if len(launched) > 1:
            rows = []
            for i, s in enumerate(launched):
                if i == 0:
                    rows.append((s.label, "first compile"))
                    continue
                _, why = I.live.nearest_earlier(s.kernel_id, [p.kernel_id for p in launched[:i]])
                rows.append((s.label, "; ".join(why)))
            parts.append(TableView(["compiled", "why a new KernelId"], rows,
                                   title="why each compile happened").html_body())
        return f'<div class="cubelab-code"><style>{table_css()}</style>{"".join(parts)}</div>'
