"""BufferBoard: every buffer and its seed-001 state — clean, claimed, failed (with the root
cause), skipped-from, repaired — plus out-of-bounds reports; select a buffer to see its history.

`BufferBoard(client, claims=True)` also shows each claim and release (a launch in flight is
"claimed"; history counts successful writes); without it a successful launch costs the board
nothing, which is what keeps an attached board within the ≤ 5 % launch-overhead budget.

Built only from buffer events (BufferCreated/Claimed/Released/Failed/Repaired, LaunchFailed,
LaunchSkipped, OobReported) through `inspect.BufferStates`. A buffer is shown by the name the
notebook gave it (`out #6`): the names come from the notebook's own variables that hold the
handle (IPython's user namespace, looked at when the board redraws), never from the runtime.
"""

from __future__ import annotations

import html
import sys
from typing import Any

import ipywidgets as W

from cubelab.inspect.live import BUFFER_STATES, BuffersSnapshot, BufferStates
from cubelab.inspect.views import table_css
from cubelab.widgets._live import LiveView, UiThread, client_of, message_html, set_html

__all__ = ["BufferBoard"]


class BufferBoard(LiveView):
    css_class = "cubelab-buffer-board"

    def __init__(self, client: Any = None, *, claims: bool = False, live: bool = True,
                 ui: UiThread | None = None) -> None:
        self.client = client_of(client)
        self.states = BufferStates(self.client.events, claims=claims)
        super().__init__([self.states], live=live, ui=ui)
        self.table = W.HTML()
        self.table.add_class("cubelab-buffer-table")
        self.picker = W.Select(options=[], rows=8, description="history",
                               layout=W.Layout(width="16em"))
        self.history = W.HTML()
        self.history.add_class("cubelab-buffer-history")
        self.selected: int | None = None
        self.picker.observe(self._on_pick, names="value")
        self._mount(self.table, W.HBox([self.picker, self.history]))

    def select(self, handle_id: int | None) -> None:
        """Show the history of one buffer (what clicking it in the list does)."""
        with self._render_lock:
            self.selected = handle_id
            self.render()

    def _on_pick(self, change: dict[str, Any]) -> None:
        value = change.get("new")
        if isinstance(value, int) and value != self.selected:
            self.select(value)

    def model(self) -> dict[int, dict[str, Any]]:
        snap = self.states.snapshot()
        return {b.handle_id: {"state": b.state, "kernel": b.kernel, "root_kernel": b.root_kernel,
                              "error": b.error, "history": [h.state for h in b.history]}
                for b in snap.buffers}

    def render(self) -> None:
        snap = self.states.snapshot()
        names = notebook_names()
        options = [(f"{_label(b.handle_id, names)} {b.state}", b.handle_id)
                   for b in snap.buffers]
        with self._root.hold_sync():
            set_html(self.table, self._table_html(snap, names))
            if list(self.picker.options) != options:
                self.picker.options = options
                if self.selected is not None and any(v == self.selected for _, v in options):
                    self.picker.value = self.selected
            set_html(self.history, self._history_html(snap))

    def _history_html(self, snap: BuffersSnapshot) -> str:
        if self.selected is None:
            return '<div class="cubelab-code cl-muted">select a buffer to see its history</div>'
        try:
            b = snap.get(self.selected)
        except KeyError:
            return ""
        rows = "".join(
            f'<tr class="cl-state-{h.state}"><td>{h.state}</td><td>{html.escape(h.kernel)}</td>'
            f"<td>{h.launch_seq or ''}</td><td>{message_html(h.detail)}</td></tr>"
            for h in b.history)
        name = html.escape(_label(b.handle_id, notebook_names()))
        return (f'<div class="cubelab-code"><div class="cl-title">buffer {name}</div>'
                '<table class="cl-table"><thead><tr><th>state</th><th>launch</th><th>#</th>'
                f"<th>what happened</th></tr></thead><tbody>{rows}</tbody></table></div>")

    @staticmethod
    def _table_html(snap: BuffersSnapshot, names: dict[int, str] | None = None) -> str:
        names = names or {}
        rows = []
        for b in snap.buffers:
            cause = ""
            if b.state in ("failed", "skipped"):
                cause = (f'<span class="cl-root-cause">root cause: <code>'
                         f'{html.escape(b.root_kernel)}</code></span>'
                         f"<div class='cl-muted'>{message_html(b.error)}</div>")
            size = "" if b.size is None else f"{b.size} B"
            rows.append(
                f'<tr class="cl-buffer cl-state-{b.state}" data-buffer="{b.handle_id}" '
                f'data-state="{b.state}" title="{html.escape(BUFFER_STATES.get(b.state, ""))}">'
                f"<td class='cl-nowrap'>{html.escape(_label(b.handle_id, names))}</td>"
                f"<td class='cl-nowrap'>{size}</td><td class='cl-state'>{b.state}</td>"
                f"<td>{html.escape(b.kernel)}</td><td>{cause}</td></tr>")
        if not rows:
            rows.append('<tr><td colspan="5" class="cl-muted">no buffers yet</td></tr>')
        counts = snap.counts()
        legend = " · ".join(f"{k}: {v}" for k, v in counts.items() if v)
        oob = ""
        if snap.oob:
            orows = "".join(
                f"<tr><td>{html.escape(o.kernel)}</td><td>{html.escape(o.buffer)}</td>"
                f"<td>{o.index}</td><td>{o.length}</td><td>{o.unit}</td>"
                f"<td>{'write' if o.write else 'read'}</td><td>{html.escape(o.loc)}</td></tr>"
                for o in snap.oob[-20:])
            oob = ('<div class="cl-title">out-of-bounds reports</div><table class="cl-table '
                   'cl-oob"><thead><tr><th>kernel</th><th>buffer</th><th>index</th><th>len</th>'
                   f"<th>unit</th><th>access</th><th>at</th></tr></thead><tbody>{orows}</tbody>"
                   "</table>")
        return (f'<div class="cubelab-code"><style>{table_css()}</style>'
                f'<div class="cl-title">buffers</div><div class="cl-muted">{legend}</div>'
                '<table class="cl-table"><thead><tr><th>buffer</th><th>size</th><th>state</th>'
                f"<th>last launch</th><th>root cause</th></tr></thead><tbody>{''.join(rows)}"
                f"</tbody></table>{oob}</div>")


def _label(handle_id: int, names: dict[int, str]) -> str:
    name = names.get(handle_id)
    return f"{name} #{handle_id}" if name else f"#{handle_id}"


def notebook_names() -> dict[int, str]:
    """{handle id: the notebook variable holding it} from IPython's user namespace (the first
    name in definition order; "" outside IPython). Read on the UI thread: a namespace changing
    under the look is looked at again at the next redraw."""
    from cubelab.runtime.handle import Handle

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return {}
    try:
        items = list(shell.user_ns.items())
    except RuntimeError:  # changed size while copied: the next redraw reads it again
        return {}
    out: dict[int, str] = {}
    for name, value in items:
        if isinstance(value, Handle) and not name.startswith("_"):
            out.setdefault(value.id, name)
    return out
