"""The device's memory as a picture: pools, pages, and which handles live where.

    cubelab.inspect.memory_map(client)     # one look: a MemoryView (text / HTML / rich)
    live = MemoryMap(client)               # a ledger kept current by memory events
    live.snapshot()                        # -> MemoryView

`memory_map` asks `client.memory_usage()` once. `MemoryMap` is what a live view uses: it
subscribes to the memory events (`PageAllocated`, `MemoryAllocated`, `MemoryReleaseDeferred`,
`MemoryReleased`, `MemoryCleanedUp`), then seeds itself from `memory_usage()` — subscribing
first, so nothing happens unseen. An event that the seed already reflects is folded in again
harmlessly: each one sets or removes one slice or page by its key, so replaying the tail of
the history on top of a later state lands on the same state. Counters (allocations, reuses,
releases, deferred releases, cleanups) count the events seen since the ledger was made.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from cubelab.errors import api_boundary
from cubelab.inspect.live import Ledger, on
from cubelab.inspect.views import View
from cubelab.runtime import events as ev
from cubelab.runtime.memory_pool import MemoryUsage

__all__ = ["MemoryMap", "MemoryView", "PageView", "SliceView", "memory_map"]

BAR = 48  # characters per page in the text picture


def _fmt(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class SliceView:
    offset: int
    size: int  # bytes reserved
    handle_id: int  # 0: free
    requested: int = 0
    pending: bool = False  # released, waiting for queued work

    @property
    def state(self) -> str:
        return "free" if not self.handle_id else ("pending" if self.pending else "live")


@dataclass(frozen=True)
class PageView:
    id: int
    pool: str
    size: int
    slices: tuple[SliceView, ...]  # by offset, free gaps included

    @property
    def used(self) -> int:
        return sum(s.size for s in self.slices if s.handle_id)


@dataclass(repr=False)
class MemoryView(View):
    """Pages with their slices, plus counters; `text()` draws one bar per page."""

    pages: tuple[PageView, ...]
    counters: dict[str, int] = field(default_factory=dict)
    title: str | None = "device memory"

    @property
    def handles(self) -> dict[int, tuple[int, int, int]]:
        """handle id -> (page, offset, bytes reserved), for live and pending slices."""
        return {s.handle_id: (p.id, s.offset, s.size)
                for p in self.pages for s in p.slices if s.handle_id}

    def summary(self) -> str:
        live = [s for p in self.pages for s in p.slices if s.handle_id]
        in_use = sum(s.requested for s in live)
        reserved = sum(p.size for p in self.pages)
        pending = sum(1 for s in live if s.pending)
        line = (f"{len(live) - pending} handles, {_fmt(in_use)} in use, {_fmt(reserved)} "
                f"reserved in {len(self.pages)} page{'s' if len(self.pages) != 1 else ''}")
        if pending:
            line += f", {pending} waiting for queued work"
        c = self.counters
        if "allocated" in c:
            line += f" · allocated {c['allocated']} (reused {c.get('reused', 0)})"
        if "released" in c:
            line += f" · released {c['released']} ({c.get('deferred', 0)} after queued work)"
        if "cleanups" in c:
            line += f" · cleanups {c['cleanups']}"
        elif "pages_freed" in c:
            line += f" · pages created {c.get('pages_created', 0)}, freed {c['pages_freed']}"
        return line

    def text(self) -> str:
        out = [f"── {self.title} ──"] if self.title else []
        out.append(self.summary())
        for p in self.pages:
            bar = ["·"] * BAR
            for s in p.slices:
                if not s.handle_id:
                    continue
                a = s.offset * BAR // p.size
                b = max(a + 1, -(-(s.offset + s.size) * BAR // p.size))
                for i in range(a, min(b, BAR)):
                    bar[i] = "~" if s.pending else "#"
            out.append(f"page {p.id:<3} {p.pool:<9} {_fmt(p.size):>8} [{''.join(bar)}] "
                       f"{_fmt(p.used)} used")
            for s in p.slices:
                if s.handle_id:
                    note = " (released; waits for queued work)" if s.pending else ""
                    out.append(f"    #{s.handle_id:<6} at {s.offset:>9}  {_fmt(s.size):>8}{note}")
        if not self.pages:
            out.append("(no pages yet)")
        return "\n".join(out)

    def html_body(self) -> str:
        rows = []
        for p in self.pages:
            cells = []
            for s in p.slices:
                width = max(0.4, 100.0 * s.size / p.size)
                label = f"#{s.handle_id}" if s.handle_id and width > 6 else ""
                tip = (f"handle #{s.handle_id}: {_fmt(s.size)} at offset {s.offset}"
                       + (" — released, waiting for queued work" if s.pending else "")
                       if s.handle_id else f"free: {_fmt(s.size)} at offset {s.offset}")
                # a buffer is at least a few pixels wide at any page size (a 16-byte slice of a
                # 64 MiB page would be 0.00002 % of it: invisible); free space gives way
                grow = "1 1" if s.state == "free" else "0 0"
                cells.append(f'<div class="cl-mem-{s.state}" data-handle="{s.handle_id}" '
                             f'title="{html.escape(tip)}" style="flex: {grow} {width:.2f}%; '
                             f'min-width: {"0" if s.state == "free" else "4px"}">'
                             f"{label}</div>")
            rows.append(
                f'<tr data-page="{p.id}"><td class="cl-nowrap">page {p.id}</td><td>{p.pool}</td>'
                f"<td class='cl-nowrap'>{_fmt(p.size)}</td><td class='cl-mem-page'>"
                f"<div class='cl-mem-bar'>{''.join(cells)}</div></td>"
                f"<td class='cl-nowrap'>{_fmt(p.used)}</td></tr>")
        if not rows:
            rows.append('<tr><td colspan="5" class="cl-muted">no pages yet</td></tr>')
        title = f'<div class="cl-title">{html.escape(self.title)}</div>' if self.title else ""
        return (f"<style>{_CSS}</style>{title}<div class='cl-muted'>"
                f"{html.escape(self.summary())}</div><table class='cl-table'><thead><tr>"
                "<th>page</th><th>pool</th><th>size</th><th>slices (live · waiting · free)</th>"
                f"<th>used</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


_CSS = """
.cl-mem-page { width: 28em; }
.cl-mem-bar { display: flex; height: 1.4em; border: 1px solid var(--jp-border-color1, #999); }
.cl-mem-bar > div { overflow: hidden; font-size: 0.8em; text-align: center; white-space: nowrap;
  border-right: 1px solid var(--jp-layout-color0, #fff); box-sizing: border-box; }
.cl-mem-live { background: var(--jp-brand-color2, #90caf9); }
.cl-mem-pending { background: var(--jp-warn-color2, #ffcc80); }
.cl-mem-free { background: var(--jp-layout-color2, #eee); }
"""


def _view_of(usage: MemoryUsage, counters: dict[str, int] | None = None) -> MemoryView:
    pages = tuple(
        PageView(p.id, p.pool, p.size, tuple(
            SliceView(s.offset, s.size, s.handle_id, s.requested, s.pending) for s in p.slices))
        for p in usage.pages)
    return MemoryView(pages, dict(counters or {}))


@api_boundary
def memory_map(client: Any) -> MemoryView:
    """The device's pools right now (one `client.memory_usage()`)."""
    u = client.memory_usage()
    return _view_of(u, {"allocated": u.allocations, "reused": u.reuses,
                        "pages_created": u.pages_created, "pages_freed": u.pages_freed})


class MemoryMap(Ledger):
    """Pages and live slices, kept current by memory events (see the module docstring)."""

    def __init__(self, client: Any) -> None:
        # page id -> [pool, size, {offset: [reserved, handle id, requested, pending]}]
        self._pages: dict[int, list[Any]] = {}
        self._where: dict[int, tuple[int, int]] = {}  # handle id -> (page, offset)
        self._counts = dict.fromkeys(("allocated", "reused", "released", "deferred",
                                      "cleanups", "pages_created", "pages_freed"), 0)
        super().__init__(client.events)
        usage = client.memory_usage()
        with self._lock:
            for p in usage.pages:
                live = {s.offset: [s.size, s.handle_id, s.requested, s.pending]
                        for s in p.slices if s.handle_id}
                self._pages[p.id] = [p.pool, p.size, live]
                for off, (_, hid, _, _) in live.items():
                    self._where[hid] = (p.id, off)
            self.version += 1

    @on(ev.MemoryAllocated)
    def _allocated(self, e: ev.MemoryAllocated) -> None:
        c = self._counts
        c["allocated"] += 1
        c["reused"] += e.reused
        page = self._pages.get(e.page)
        if page is None:
            page = self._pages[e.page] = [e.pool, e.reserved, {}]
        page[2][e.offset] = [e.reserved, e.handle_id, e.size, False]
        self._where[e.handle_id] = (e.page, e.offset)

    @on(ev.MemoryReleased)
    def _released(self, e: ev.MemoryReleased) -> None:
        c = self._counts
        c["released"] += 1
        c["deferred"] += e.deferred
        where = self._where.pop(e.handle_id, None)
        if where is not None:
            page = self._pages.get(where[0])
            if page is not None:
                s = page[2].get(where[1])
                if s is not None and s[1] == e.handle_id:
                    del page[2][where[1]]

    @on(ev.MemoryReleaseDeferred)
    def _deferred(self, e: ev.MemoryReleaseDeferred) -> None:
        where = self._where.get(e.handle_id)
        if where is not None and where[0] in self._pages:
            s = self._pages[where[0]][2].get(where[1])
            if s is not None and s[1] == e.handle_id:
                s[3] = True

    @on(ev.PageAllocated)
    def _page(self, e: ev.PageAllocated) -> None:
        self._counts["pages_created"] += 1
        page = self._pages.setdefault(e.page, [e.pool, e.size, {}])
        page[0], page[1] = e.pool, e.size

    @on(ev.MemoryCleanedUp)
    def _cleaned(self, e: ev.MemoryCleanedUp) -> None:
        self._counts["cleanups"] += 1
        self._counts["pages_freed"] += len(e.pages)
        for pid in e.pages:
            self._pages.pop(pid, None)

    def _reset(self) -> None:
        for k in self._counts:
            self._counts[k] = 0

    def snapshot(self) -> MemoryView:
        with self._lock:
            self._drain()
            pages = []
            for pid, (pool, size, live) in sorted(self._pages.items()):
                slices: list[SliceView] = []
                at = 0
                for off in sorted(live):
                    reserved, hid, requested, pending = live[off]
                    if off > at:
                        slices.append(SliceView(at, off - at, 0))
                    slices.append(SliceView(off, reserved, hid, requested, pending))
                    at = off + reserved
                if at < size:
                    slices.append(SliceView(at, size - at, 0))
                pages.append(PageView(pid, pool, size, tuple(slices)))
            return MemoryView(tuple(pages), dict(self._counts))
