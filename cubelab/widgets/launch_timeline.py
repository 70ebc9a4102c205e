"""LaunchTimeline: the last N launches as the seed draws them — two irreversible hops.

Hop 1, calling thread: the gates (zero count, foreign handle, limits, profiling) and the hand-off.
Hop 2, device thread: compile or cache hit, then skip (dry run, tainted input) or claim the write
set, dispatch, and the outcome. The calling thread and the stream it queued on are shown (a
launch uses its thread's stream unless pinned).

Cost: showing every launch means subscribing to the per-launch events (LaunchIssued, CacheHit,
LaunchDispatched), each built only because someone wants it — a few µs per launch, measured in
benchmarks/widget_overhead.py. Close the view (or don't display one) when timing launches.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.inspect.live import LaunchLog, LaunchRecord
from cubelab.inspect.views import table_css
from cubelab.widgets._live import LiveView, UiThread, client_of, message_html, set_html

__all__ = ["LaunchTimeline"]


def _hop2(r: LaunchRecord) -> list[tuple[str, str]]:
    steps: list[tuple[str, str]] = []
    if r.cache == "hit":
        steps.append(("hit", "cache hit"))
    elif r.cache == "compile":
        steps.append(("compile", f"compile {r.compile_s * 1e3:.1f} ms" if r.compile_s
                      else "compile"))
    elif r.cache == "compile-failed":
        steps.append(("failed", "compile failed"))
    if r.skipped:
        steps.append(("skipped", f"skip: {r.skipped}"))
    if r.claimed:
        steps.append(("claimed", "claim " + " ".join(f"#{h}" for h in r.claimed)))
    if r.failed:
        steps.append(("failed", r.failed))
    elif r.dispatched_t:
        steps.append(("clean", "dispatched"))
    return steps


class LaunchTimeline(LiveView):
    css_class = "cubelab-launch-timeline"

    def __init__(self, client: Any = None, *, last: int = 20, live: bool = True,
                 ui: UiThread | None = None) -> None:
        self.client = client_of(client)
        self.log = LaunchLog(self.client.events, keep=last)
        super().__init__([self.log], live=live, ui=ui)
        self.table = W.HTML()
        self.table.add_class("cubelab-timeline-table")
        self._mount(self.table)

    def model(self) -> list[dict[str, Any]]:
        return [{"seq": r.seq, "kernel": r.kernel, "status": r.status, "cache": r.cache,
                 "gated": r.gated, "skipped": r.skipped, "thread": r.calling_thread,
                 "stream": r.stream, "mode": r.mode,
                 "device_thread": r.device_thread, "hop2": [s for s, _ in _hop2(r)]}
                for r in self.log.snapshot()]

    def render(self) -> None:
        recs = self.log.snapshot()
        longest = max((r.latency_s or 0.0 for r in recs), default=0.0) or 1.0
        rows = []
        threads: set[str] = set()
        for r in reversed(recs):
            hop1 = (f' <span class="cl-state-failed">gated: {html.escape(r.gated)}</span>'
                    if r.gated else "")
            steps = _hop2(r)
            # one row per launch: the steps on one line; a failure's message (whole, never cut)
            # goes under them
            failure = steps.pop()[1] if steps and steps[-1][0] == "failed" \
                and "\n" in steps[-1][1] else None
            if r.gated:  # ended on the calling thread: it never reached a queue
                hop2 = '<span class="cl-muted">— (never handed off)</span>'
            else:
                hop2 = " → ".join(f'<span class="cl-state-{k}">{html.escape(t)}</span>'
                                  for k, t in steps) or '<span class="cl-muted">queued</span>'
            if failure is not None:
                hop2 += f'<div class="cl-state-failed">{message_html(failure, 1)}</div>'
            lat = r.latency_s
            bar = ""
            if lat is not None:
                width = max(2, int(60 * lat / longest))
                bar = (f'<span style="display: inline-block; background: var(--jp-brand-color2, '
                       f'#6aa8e8); height: 6px; width: {width}px; margin-right: 4px"></span>'
                       f"{lat * 1e3:.2f} ms")
            where1 = html.escape(r.calling_thread) + (f" · stream {html.escape(r.stream)}"
                                                      if r.stream else "")
            rows.append(
                f'<tr class="cl-launch" data-status="{r.status}"><td>{r.seq if r.seq > 0 else "—"}'
                f"</td><td class='cl-nowrap'>{html.escape(r.kernel)}</td>"
                f"<td class='cl-nowrap'>{where1}{hop1}</td>"
                f"<td class='cl-hop2' title='on {html.escape(r.device_thread or 'no thread')}'>"
                f"{hop2}</td>"
                f"<td class='cl-nowrap'>{bar}</td></tr>")
            if r.device_thread:  # a gated launch never met one
                threads.add(r.device_thread)
        if not rows:
            rows.append('<tr><td colspan="5" class="cl-muted">no launches yet</td></tr>')
        set_html(self.table,
                 f'<div class="cubelab-code"><style>{table_css()}</style>'
                 '<div class="cl-title">launches (newest first)</div>'
                 f"<div class='cl-muted'>hop 1: on the calling thread, the gates pass and the "
                 f"launch is handed off to a stream · hop 2: on the device thread "
                 f"({html.escape(', '.join(sorted(threads)) or 'none yet')}), compile or cache "
                 "hit, claim the written buffers, dispatch</div><table class='cl-table'>"
                 "<thead><tr><th>#</th><th>kernel</th><th>hop 1: thread · stream</th>"
                 "<th>hop 2</th><th class='cl-nowrap'>issue → dispatch</th>"
                 f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
