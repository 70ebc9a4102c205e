"""Autotune as search: compile every candidate for nothing, measure the survivors, cache the
winner per key.

A `Tuner` holds candidate launch functions that compute the same thing differently (another
cube dim, vector width, algorithm). Called with some inputs, it derives a key from them (say,
the problem size); on a cache miss it searches:

1. **precompile** every candidate under `dry_run()`: each launch is expanded, compiled and
   cached, and dispatches nothing — this is what makes a cold search cheap (the dry-run path
   exists for it). A candidate that fails to compile is disqualified here;
2. **measure** each survivor under `real_run()` — the measurements are the workload a dry run
   must *not* skip, even if the caller is inside one: 3 warm-ups, then `samples` timed runs,
   each ended by `client.sync()`;
3. **score** as CubeCL does: mostly the minimum (`0.8·min + 0.2·median`), inflated by the
   relative spread (`× (1 + std/mean)`), lower wins. A candidate whose launches failed (compile
   error, a skip, a refused resource, a Python exception) is disqualified — never the winner;
4. **cache** the winner under the key and run it on the caller's inputs (under the caller's own
   LaunchMode: inside a dry run the final run is dropped like any launch).

Failures are found the runtime's way, as events tied to this thread's launches — a failing
candidate also leaves its failure on the buffers it would have written, which the next
candidate writing them as pure outputs repairs (the seed's exercise 2 is about exactly this).

Every step is an event (`AutotuneStarted`, `AutotuneProgress`, `AutotuneCandidateFailed`,
`AutotuneCandidateMeasured`, `AutotuneFinished`) so a progress bar or a table can be drawn by a
subscriber (`cubelab.terminal.autotune_progress` draws one with rich); this module imports no UI.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from cubelab.errors import CubeError, hinted
from cubelab.runtime import events as ev
from cubelab.runtime.dry_run import dry_run, real_run

Launcher = Callable[..., Any]


def score(durations: list[float]) -> float:
    """CubeCL's benchmark score: optimistic (mostly the fastest run), penalized by spread."""
    lo = min(durations)
    med = statistics.median(durations)
    mean = statistics.fmean(durations)
    std = statistics.pstdev(durations) if len(durations) > 1 else 0.0
    return (0.8 * lo + 0.2 * med) * (1.0 + std / mean if mean > 0 else 1.0)


@dataclass
class Candidate:
    name: str
    fn: Launcher


@dataclass
class TuneResult:
    key: Hashable
    winner: Candidate
    scores: dict[str, float | None] = field(default_factory=dict)
    failures: dict[str, BaseException] = field(default_factory=dict)


class AutotuneError(CubeError):
    """Every candidate failed: there is nothing to pick."""


class _Watch:
    """Collects failures of the launches this thread issues while it is open."""

    _FAILS = (ev.CompileFailed, ev.LaunchFailed, ev.LaunchSkipped)

    def __init__(self, bus: ev.EventBus) -> None:
        self.thread = threading.current_thread().name
        self.seqs: set[int] = set()
        self.error: BaseException | None = None
        self._unsub = bus.subscribe(self._on, ev.LaunchIssued, *self._FAILS)

    def _on(self, e: ev.Event) -> None:
        if isinstance(e, ev.LaunchIssued):
            if e.thread == self.thread:
                self.seqs.add(e.launch_seq)
            return
        if getattr(e, "launch_seq", None) not in self.seqs or self.error is not None:
            return
        if isinstance(e, ev.LaunchSkipped):
            if e.why == "tainted-input" and e.root_error is not None:
                self.error = e.root_error
        else:
            self.error = e.error  # type: ignore[attr-defined]

    def close(self) -> None:
        self._unsub()


class Tuner:
    """`tuner(*args)` runs the fastest candidate for `key(*args)`, searching on a cache miss.

        tuner = Tuner(client, "scale", key=lambda x, out, n: n)

        @tuner.candidate
        def one_per_unit(x, out, n): scale.launch(client, ...)

        @tuner.candidate
        def four_per_unit(x, out, n): scale4.launch(client, ...)

        tuner(x, out, 4096)   # first call per key: precompile, measure, cache; then run
    """

    def __init__(self, client: Any, name: str = "autotune", *,
                 key: Callable[..., Hashable] | None = None,
                 candidates: tuple[Launcher, ...] | list[Launcher] = (),
                 warmups: int = 3, samples: int = 10) -> None:
        if warmups < 0 or samples < 1:
            raise ValueError(hinted("autotune needs warmups >= 0 and samples >= 1",
                                    "e.g. warmups=3, samples=10 (the defaults)"))
        self.client = client
        self.name = name
        self.key = key or (lambda *a, **k: None)
        self.warmups, self.samples = warmups, samples
        self.candidates: list[Candidate] = []
        self.cache: dict[Hashable, TuneResult] = {}
        self._lock = threading.Lock()
        for fn in candidates:
            self.candidate(fn)

    def candidate(self, fn: Launcher | None = None, *, name: str | None = None) -> Any:
        """Add a candidate (usable as a decorator, with or without `name=`)."""
        def add(f: Launcher) -> Launcher:
            self.candidates.append(Candidate(str(name or getattr(f, "__name__", repr(f))), f))
            return f
        return add(fn) if fn is not None else add

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.select(*args, **kwargs).fn(*args, **kwargs)

    def select(self, *args: Any, **kwargs: Any) -> Candidate:
        key = self.key(*args, **kwargs)
        with self._lock:
            found = self.cache.get(key)
            if found is None:
                found = self.cache[key] = self.tune(key, *args, **kwargs)
        return found.winner

    # -- the search ---------------------------------------------------------------------------
    def _publish(self, event: ev.Event) -> None:
        bus = self.client.events
        if bus.active:
            bus.publish(event)

    def _run(self, cand: Candidate, args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
        """One run to completion (sync included); raises what made it fail."""
        bus = self.client.events
        watch = _Watch(bus)
        try:
            t0 = time.perf_counter()
            cand.fn(*args, **kwargs)
            self.client.sync()
            dt = time.perf_counter() - t0
        finally:
            watch.close()
        if watch.error is not None:
            raise watch.error
        return dt

    def tune(self, key: Hashable, *args: Any, **kwargs: Any) -> TuneResult:
        if not self.candidates:
            raise AutotuneError(hinted(f"tuner `{self.name}` has no candidates",
                                       "add one with @tuner.candidate above a function that "
                                       "launches"))
        names = tuple(c.name for c in self.candidates)
        n = len(self.candidates)
        total = n + n * (self.warmups + self.samples)
        done = 0
        self._publish(ev.AutotuneStarted(self.name, key, names))
        failures: dict[str, BaseException] = {}
        scores: dict[str, float | None] = {}

        def fail(c: Candidate, exc: BaseException) -> None:
            failures[c.name] = exc
            scores[c.name] = None
            self._publish(ev.AutotuneCandidateFailed(self.name, key, c.name, exc))

        # 1. precompile all candidates: compiled and cached, nothing dispatched
        for c in self.candidates:
            with dry_run():
                try:
                    self._run(c, args, kwargs)
                except Exception as exc:  # noqa: BLE001 - disqualified, not fatal
                    fail(c, exc)
            done += 1
            self._publish(ev.AutotuneProgress(self.name, key, c.name, "precompile", done, total))

        # 2. measure the survivors, even inside a caller's dry run
        with real_run():
            for c in self.candidates:
                if c.name in failures:
                    done += self.warmups + self.samples
                    continue
                durations: list[float] = []
                try:
                    for i in range(self.warmups + self.samples):
                        dt = self._run(c, args, kwargs)
                        phase = "warmup" if i < self.warmups else "sample"
                        if phase == "sample":
                            durations.append(dt)
                        done += 1
                        self._publish(ev.AutotuneProgress(self.name, key, c.name, phase, done,
                                                          total))
                except Exception as exc:  # noqa: BLE001
                    fail(c, exc)
                    done = n + (self.candidates.index(c) + 1) * (self.warmups + self.samples)
                    continue
                s = score(durations)
                scores[c.name] = s
                self._publish(ev.AutotuneCandidateMeasured(
                    self.name, key, c.name, min(durations), statistics.median(durations), s,
                    len(durations)))

        # 3. the lowest score wins; a failed candidate never does
        ranked: list[tuple[float, int]] = []
        for i, c in enumerate(self.candidates):
            sc = scores.get(c.name)
            if sc is not None and math.isfinite(sc):
                ranked.append((sc, i))
        if not ranked:
            raise AutotuneError(hinted(
                f"tuner `{self.name}`: every candidate failed for key {key!r}:\n" + "\n".join(
                    f"  {name}: {type(e).__name__}: {e}" for name, e in failures.items()),
                "fix the first failure listed (each candidate's own error), then call the "
                "tuner again"))
        winner = self.candidates[min(ranked)[1]]
        self._publish(ev.AutotuneFinished(self.name, key, winner.name,
                                          tuple((c.name, scores.get(c.name))
                                                for c in self.candidates)))
        return TuneResult(key, winner, scores, failures)


def autotune(client: Any, *candidates: Launcher, key: Callable[..., Hashable] | None = None,
             name: str | None = None, warmups: int = 3, samples: int = 10) -> Tuner:
    """`autotune(client, cand_a, cand_b, key=...)` — a `Tuner` over the given launch functions."""
    return Tuner(client, name or "autotune", key=key, candidates=candidates, warmups=warmups,
                 samples=samples)
