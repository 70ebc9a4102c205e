"""The threading contract every live view follows (see docs/jupyter.md, "Why views never slow a
launch").

Events arrive on the device thread. A widget trait update costs ~110 µs and a display update
~370 µs, so touching a widget there would slow every launch. Instead:

1. a ledger (`cubelab.inspect.live`) subscribes with a bare `deque.append` — on the device
   thread an event costs a C call, no lock, no Python frame;
2. one UI thread per view set (`UiThread`) looks at its views ten times a second; a view whose
   ledgers have queued events folds them (`snapshot()`) and redraws — at most 10 redraws a
   second however many launches happen, and none while nothing happens;
3. exactly one thread mutates a given widget at a time (`LiveView._render_lock`); user clicks
   arrive on the kernel's main thread and take the same lock.

Trait changes from a background thread reach the front end with ipykernel >= 6.29 (not 7.0.x).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Iterable

import ipywidgets as W

from cubelab.inspect.live import Ledger
from cubelab.inspect.views import inline_markdown

__all__ = ["UiThread", "View", "LiveView", "default_ui", "client_of", "message_html",
           "inline_markdown"]


def message_html(text: str, shown_lines: int = 12) -> str:
    """An error or hint as a view shows it: whole lines only — never cut mid-word — wrapped at
    the view's edge; a long one (a traceback) opens its remaining lines on a click."""
    import html

    lines = text.strip("\n").splitlines() or [""]
    head = html.escape("\n".join(lines[:shown_lines]))
    if len(lines) <= shown_lines:
        return f'<pre class="cl-msg">{head}</pre>'
    rest = html.escape("\n".join(lines[shown_lines:]))
    return (f'<pre class="cl-msg">{head}</pre><details><summary class="cl-muted">'
            f'{len(lines) - shown_lines} more lines</summary><pre class="cl-msg">{rest}</pre>'
            "</details>")


def client_of(client: Any) -> Any:
    """The client a view watches: the one given, else the default device's."""
    if client is None:
        from cubelab.runtime.device import Device

        return Device.default().client()
    return client


class View:
    """Base of every widget: one root `VBox` carrying the house class and the view's own.

    The one home of the mounting boilerplate (root box, CSS classes, `widget`, notebook display).
    """

    css_class = "cubelab-view"
    _root: W.VBox

    def _mount(self, *children: Any) -> None:
        """Build the root box from `children` (call once the child widgets exist)."""
        self._root = W.VBox(list(children))
        self._root.add_class("cubelab-view")
        self._root.add_class(self.css_class)

    @property
    def widget(self) -> W.VBox:
        return self._root

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


class UiThread:
    """Looks at its views `hz` times a second and redraws the ones whose ledgers moved."""

    def __init__(self, hz: float = 10.0, name: str = "cubelab-ui") -> None:
        self.period = 1.0 / hz
        self.name = name
        self._views: "weakref.WeakSet[LiveView]" = weakref.WeakSet()
        self._has_views = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.redraws = 0  # how many view redraws this thread has done (tests, benchmark)

    def add(self, view: "LiveView") -> None:
        self._views.add(view)
        self._has_views.set()
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def remove(self, view: "LiveView") -> None:
        self._views.discard(view)

    def stop(self) -> None:
        self._stop.set()
        self._has_views.set()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            views = list(self._views)
            if not views:  # sleep until a view is added instead of polling nothing
                self._has_views.clear()
                self._has_views.wait()
                continue
            for view in views:
                if view.dirty():
                    try:
                        view.refresh()
                        self.redraws += 1
                    except Exception:  # noqa: BLE001 - a broken view must not stop the others
                        pass


_default_ui: UiThread | None = None


def default_ui() -> UiThread:
    global _default_ui
    if _default_ui is None:
        _default_ui = UiThread()
    return _default_ui


_open_views: "weakref.WeakSet[LiveView]" = weakref.WeakSet()


def open_views() -> list["LiveView"]:
    """Every live view not yet closed or collected (`%cubelab reset` zeroes their counters)."""
    return list(_open_views)


class LiveView(View):
    """Base of every widget view: ledgers in, one root ipywidget out.

    `live=False` builds the same widget without the UI thread: tests call `refresh()` and read
    the model; a notebook gets `live=True` (the default) and never calls anything.
    """

    counters = True  # `%cubelab reset` zeroes it (an inspector's list of compiles is not a counter)

    def __init__(self, ledgers: Iterable[Ledger], *, live: bool = True,
                 ui: UiThread | None = None) -> None:
        self._ledgers = list(ledgers)
        self._seen: list[int] = [-1] * len(self._ledgers)
        self._render_lock = threading.RLock()
        self._ui = (ui or default_ui()) if live else None
        _open_views.add(self)

    def _mount(self, *children: Any) -> None:
        """Build the root box, then render once and go live (`_start`)."""
        super()._mount(*children)
        self._start()

    def _start(self) -> None:
        """Subclasses call this once their widgets exist: first render, then go live."""
        # The displayed widget keeps its view alive: `display(LaunchTimeline(client))` without
        # a name must keep updating (the UI thread only holds views weakly), and a collected
        # view would leave its ledger's queue subscribed and growing.
        self.widget._cubelab_view = self
        self.refresh()
        if self._ui is not None:
            self._ui.add(self)

    def dirty(self) -> bool:
        return any(led.pending or led.version != seen
                   for led, seen in zip(self._ledgers, self._seen))

    def refresh(self) -> None:
        """Render the ledgers' snapshots into the widgets (UI thread, or a test)."""
        with self._render_lock:
            self.render()  # render() snapshots, which folds the queued events in
            self._seen = [led.version for led in self._ledgers]

    def render(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop listening (the widget stays on screen, frozen)."""
        _open_views.discard(self)
        if self._ui is not None:
            self._ui.remove(self)
        for led in self._ledgers:
            led.close()


def set_html(w: Any, value: str) -> None:
    """Assign only when it changed: an unchanged assignment would still cost a comm message."""
    if w.value != value:
        w.value = value
