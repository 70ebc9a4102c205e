"""Terminal views that draw the runtime's events (rich when installed, plain lines otherwise).

The runtime never imports a UI: it publishes events, and a view like this one subscribes. rich is
imported here, lazily, when a view is created — `import cubelab` stays light.

    from cubelab.terminal import autotune_progress
    with autotune_progress(client):
        tuner(x, out)        # a progress bar per search, then a table of the scores
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import Any, TextIO

from cubelab.runtime import events as ev

_KINDS = (ev.AutotuneStarted, ev.AutotuneProgress, ev.AutotuneCandidateFailed,
          ev.AutotuneCandidateMeasured, ev.AutotuneFinished)


class AutotuneProgress:
    """Subscribes to a client's autotune events while open (`with`), and draws them."""

    def __init__(self, client: Any, file: TextIO | None = None, plain: bool = False) -> None:
        self.client = client
        self.file = file or sys.stderr
        self.lines: list[str] = []  # what was reported, also kept for tests and notebooks
        self._lock = threading.Lock()
        self._unsub: Any = None
        self._rich: Any = None
        self._bar: Any = None
        self._task: Any = None
        if not plain:
            try:
                from rich.console import Console

                self._rich = Console(file=self.file)
            except ImportError:
                self._rich = None

    def __enter__(self) -> "AutotuneProgress":
        self._unsub = self.client.events.subscribe(self._on, *_KINDS)
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._unsub is not None:
            self._unsub()
        self._stop_bar()

    def _say(self, text: str) -> None:
        self.lines.append(text)
        if self._rich is not None:
            self._rich.print(text, markup=False, highlight=False)
        else:
            self.file.write(text + "\n")
            self.file.flush()

    def _stop_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = self._task = None

    def _on(self, e: ev.Event) -> None:
        with self._lock:
            if isinstance(e, ev.AutotuneStarted):
                self._say(f"autotune `{e.tuner}` key={e.key!r}: {len(e.candidates)} candidates "
                          f"({', '.join(e.candidates)})")
                if self._rich is not None:
                    from rich.progress import Progress

                    self._bar = Progress(console=self._rich, transient=True)
                    self._bar.start()
                    self._task = self._bar.add_task(f"tuning {e.tuner}", total=None)
            elif isinstance(e, ev.AutotuneProgress):
                if self._bar is not None:
                    self._bar.update(self._task, completed=e.done, total=e.total,
                                     description=f"{e.phase} {e.candidate}")
            elif isinstance(e, ev.AutotuneCandidateFailed):
                first = str(e.error).strip().splitlines()[0] if str(e.error).strip() else ""
                self._say(f"  ✗ {e.candidate}: disqualified ({type(e.error).__name__}: {first})")
            elif isinstance(e, ev.AutotuneCandidateMeasured):
                self._say(f"  · {e.candidate}: min {e.min_s * 1e6:.1f} µs, median "
                          f"{e.median_s * 1e6:.1f} µs, score {e.score * 1e6:.1f}")
            elif isinstance(e, ev.AutotuneFinished):
                self._stop_bar()
                self._say(f"  → winner for key={e.key!r}: {e.winner}")


def autotune_progress(client: Any, file: TextIO | None = None,
                      plain: bool = False) -> AutotuneProgress:
    """`with autotune_progress(client): ...` — draw every autotune search while open."""
    return AutotuneProgress(client, file, plain)
