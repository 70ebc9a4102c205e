"""Dry runs: compile and cache every launch, dispatch none of them.

A dry run is how a whole program's kernels get compiled without paying for the work: inside
`with cubelab.dry_run():` every launch goes through everything a first launch does short of
dispatching — expand, passes, codegen, pipeline, cache — and is then dropped. The caller pays in
buffer contents: nothing is claimed, nothing is written, so every buffer is left exactly as it
was (a later read sees the old bytes, not an error).

The one exception is autotune. Its launches are the measurement a dry run exists to provoke, not
the workload it exists to skip, so the tuner wraps them in `with cubelab.real_run():`, which
executes even inside a dry run. What matters is the thread that *issues* the launch: a guard
held by the thread that merely asked for the tuning does nothing for launches another thread
makes.

Where the verdict is made, and the trap: on the calling thread, in `Client.launch`, because by
the time a launch reaches the device thread the context that produced it is gone. The device
thread receives a `LaunchMode` argument; it never asks "are we in a dry run?" itself (its own
thread has its own, unrelated RealRun depth).

Why depths and not booleans: a dry run is process-wide and guards on two threads overlap. With
swap-and-restore, thread A's guard ending would cancel thread B's dry run still in progress, and
when B's guard then "restored" A's value the process would be stuck in a dry run for good. A
counter per guard kind composes: the process is in a dry run while any guard is alive, and a
thread executes while any of *its* RealRun guards is alive.
"""

from __future__ import annotations

import threading
from enum import Enum
from types import TracebackType


class LaunchMode(Enum):
    """What the device thread does with one launch, decided on the calling thread."""

    #: Compile if needed, then run it. The normal case.
    Execute = "Execute"
    #: Compile if needed, cache the pipeline, and drop the launch: no buffer is claimed or
    #: touched, nothing is dispatched.
    Skip = "Skip"

    @property
    def is_skipped(self) -> bool:
        return self is LaunchMode.Skip


_dry_lock = threading.Lock()
_dry_depth = 0  # process-wide: every thread's launches are skipped while > 0
_real = threading.local()  # per thread: `depth`


def dry_run_depth() -> int:
    return _dry_depth


def real_run_depth() -> int:
    return getattr(_real, "depth", 0)


def is_dry_run() -> bool:
    """True while any thread holds a `dry_run()` guard (RealRun does not change this)."""
    return _dry_depth > 0


def launch_mode() -> LaunchMode:
    """The verdict for a launch issued on this thread, right now."""
    if _dry_depth == 0 or real_run_depth() > 0:
        return LaunchMode.Execute
    return LaunchMode.Skip


class DryRun:
    """`with dry_run():` — launches on every thread compile and are dropped until it ends."""

    __slots__ = ("_entered",)

    def __init__(self) -> None:
        self._entered = False

    def __enter__(self) -> "DryRun":
        global _dry_depth
        with _dry_lock:
            _dry_depth += 1
        self._entered = True
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        global _dry_depth
        if self._entered:
            with _dry_lock:
                _dry_depth -= 1
            self._entered = False


class RealRun:
    """`with real_run():` — launches issued by *this thread* execute, even inside a dry run."""

    __slots__ = ("_entered",)

    def __init__(self) -> None:
        self._entered = False

    def __enter__(self) -> "RealRun":
        _real.depth = real_run_depth() + 1
        self._entered = True
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._entered:
            _real.depth = real_run_depth() - 1
            self._entered = False


def dry_run() -> DryRun:
    """Compile and cache every launch (on every thread) without dispatching it."""
    return DryRun()


def real_run() -> RealRun:
    """Execute this thread's launches even inside a dry run (autotune's measurements)."""
    return RealRun()
