"""MemoryBoard: the device's memory pools — pages, their slices, which handle lives where, and
what the allocator has done (allocations, reuses, releases, releases that waited for queued
work, cleanups).

    MemoryBoard(client)      # live: redraws as memory events arrive
    board.text()             # the same picture as plain text (a terminal, a test)

Built from memory events through `inspect.MemoryMap` (seeded once from
`client.memory_usage()`); it never looks at the pool itself. An allocation costs the board one
event when it is attached, nothing when it is not.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from cubelab.inspect.memory import MemoryMap, MemoryView
from cubelab.inspect.views import table_css
from cubelab.widgets._live import LiveView, UiThread, client_of, set_html

__all__ = ["MemoryBoard"]


class MemoryBoard(LiveView):
    css_class = "cubelab-memory-board"

    def __init__(self, client: Any = None, *, live: bool = True,
                 ui: UiThread | None = None) -> None:
        self.client = client_of(client)
        self.map = MemoryMap(self.client)
        super().__init__([self.map], live=live, ui=ui)
        self.board = W.HTML()
        self.board.add_class("cubelab-memory-pages")
        self.cleanup_button = W.Button(description="memory_cleanup()",
                                       tooltip="give pages without a live buffer back")
        self.cleanup_button.on_click(lambda _: self.client.memory_cleanup())
        self._mount(self.board, self.cleanup_button)

    def view(self) -> MemoryView:
        return self.map.snapshot()

    def text(self) -> str:
        return self.view().text()

    def model(self) -> dict[str, Any]:
        v = self.view()
        return {"pages": [(p.id, p.pool, p.size, [(s.offset, s.size, s.handle_id, s.state)
                                                  for s in p.slices]) for p in v.pages],
                "handles": v.handles, "counters": dict(v.counters)}

    def render(self) -> None:
        v = self.view()
        set_html(self.board, f'<div class="cubelab-code"><style>{table_css()}</style>'
                             f"{v.html_body()}</div>")
