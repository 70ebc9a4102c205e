"""CacheMonitor: the pipeline cache, live — compiles and hits per KernelId, and why each new id.

Each compile also says where its code came from (`CompileFinished.origin`): "compiled", "loaded"
from the persistent compilation store (a kernel another process compiled: nothing expanded), or
"rekeyed" (compiled, and the same code was already stored under another key); the total says how
many the store served.

Built only from CompileFinished / CompileFailed / CacheHits / CacheCleared events (through
`inspect.CacheStats`); the "why?" column is `inspect.diff` against the nearest earlier id of the
same kernel, so the seed's quiz reads straight off the table: 3 compiles, 1 hit, and the reasons
"execution mode changed" and "`relu` changed".
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.inspect.live import CacheSnapshot, CacheStats, clock, distinguishing_fields, plural
from cubelab.inspect.views import inline_markdown, table_css
from cubelab.widgets._live import LiveView, UiThread, client_of, set_html

__all__ = ["CacheMonitor"]


class CacheMonitor(LiveView):
    css_class = "cubelab-cache-monitor"

    def __init__(self, client: Any = None, *, live: bool = True, ui: UiThread | None = None) -> None:
        self.client = client_of(client)
        self.stats = CacheStats(self.client.events)
        super().__init__([self.stats], live=live, ui=ui)
        self.total = W.HTML(layout=W.Layout(min_width="12em"))
        self.total.add_class("cubelab-cache-total")
        self.table = W.HTML()
        self.table.add_class("cubelab-cache-table")
        self.reset_button = W.Button(description="reset counters", icon="undo",
                                     tooltip="Forget the counts (the pipelines stay cached)")
        self.clear_button = W.Button(description="clear cache", icon="trash",
                                     tooltip="client.clear_cache(): every KernelId compiles again")
        self.reset_button.on_click(lambda _b: self.reset())
        self.clear_button.on_click(lambda _b: self.client.clear_cache())
        self._mount(
            W.HBox([self.total, W.VBox([self.reset_button, self.clear_button])]),
            self.table,)

    def reset(self) -> None:
        self.stats.reset()
        self.refresh()

    def model(self) -> dict[str, Any]:
        """The monitor's state as plain data (what the table shows)."""
        snap = self.stats.snapshot()
        return {
            "total_compiles": snap.total_compiles,
            "total_hits": snap.total_hits,
            "total_loaded": snap.total_loaded,
            "rows": [{"kernel_id": r.short, "entry": r.entry, "compiles": r.compiles,
                      "hits": r.hits, "failures": r.failures, "why": list(r.why),
                      "origin": r.origin, "origins": dict(r.origins)}
                     for r in snap.rows],
        }

    def render(self) -> None:
        snap = self.stats.snapshot()
        with self._root.hold_sync():
            set_html(self.total, self._total_html(snap))
            set_html(self.table, self._table_html(snap))

    @staticmethod
    def _total_html(snap: CacheSnapshot) -> str:
        return (f'<div class="cubelab-code"><style>{table_css()}</style>'
                f'<div class="cl-big cl-total-compiles" data-compiles="{snap.total_compiles}">'
                f'{snap.total_compiles}</div><div class="cl-muted">'
                f'{plural(snap.total_compiles, "compile").split(" ", 1)[1]}</div>'
                f'<div class="cl-total-hits" data-hits="{snap.total_hits}">'
                f'{plural(snap.total_hits, "cache hit")}</div>'
                + (f'<div class="cl-total-loaded" data-loaded="{snap.total_loaded}">'
                   f'{snap.total_loaded} loaded from the store</div>' if snap.total_loaded else "")
                + "</div>")

    @staticmethod
    def _table_html(snap: CacheSnapshot) -> str:
        rows = []
        keys = distinguishing_fields([r.kernel_id for r in snap.rows])
        for r in snap.rows:
            kid = (f"<details><summary><code>{html.escape(r.short)}</code></summary>"
                   f"<pre>{html.escape(r.kernel_id.debug())}</pre></details>"
                   f"<div class='cl-key'>{html.escape(keys[r.kernel_id])}</div>")
            why = "<br>".join(inline_markdown(w) for w in r.why)
            fail = f' <span class="cl-state-failed">({r.failures} failed)</span>' \
                if r.failures else ""
            origin = ", ".join(f"{n} {o}" for o, n in r.origins.items() if o != "compiled")
            if origin:  # the store's part: "1 loaded", "1 rekeyed"
                fail += f' <span class="cl-origin" data-origin="{html.escape(r.origin)}">' \
                        f'({html.escape(origin)})</span>'
            else:
                fail += f'<span class="cl-origin" data-origin="{html.escape(r.origin)}"></span>'
            rows.append(
                f'<tr class="cl-row" data-kernel-id="{html.escape(r.short)}">'
                f"<td>{kid}<div class='cl-muted'>{html.escape(r.entry)}</div></td>"
                f'<td class="cl-compiles">{r.compiles}{fail}</td><td class="cl-hits">{r.hits}</td>'
                f"<td class='cl-nowrap'>{html.escape(clock(r.last_launched))}</td>"
                f"<td>{r.compile_s * 1e3:.1f} ms</td><td>{why}</td></tr>")
        if not rows:
            rows.append('<tr><td colspan="6" class="cl-muted">no launches yet</td></tr>')
        cleared = "".join(f'<div class="cl-muted">cache cleared: {html.escape(c)}</div>'
                          for c in snap.cleared[-3:])
        return ('<div class="cubelab-code"><table class="cl-table"><thead><tr><th>KernelId</th>'
                "<th>compiles</th><th>hits</th><th>last launched at</th><th>compile time</th>"
                f"<th>why?</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{cleared}</div>")
