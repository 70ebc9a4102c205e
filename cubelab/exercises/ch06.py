"""Chapter 6 · Two hand-offs (CubeCL's chapter on kernel launch and execution: why a launch needs
two irreversible hand-offs, the four gates on the calling thread, `LaunchMode`, the device
thread compiles first).

Each answer is counted from the events of a real run: which launches reached the device thread
and compiled, which were dispatched, which threads published what. Every exercise has variants
(`students.py`).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import (CountExercise, ValueExercise, first_seen,
                                     launches_that_compile)
from cubelab.exercises.launching import EIGHT, arg, floats, scale
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


# -- 6.1 gate one: which launches compile? --------------------------------------------------------

GATE_PROGRAMS = [
    [((0, 1, 1), 4), ((2, 1, 1), 8), ((3, 0, 1), 16), ((1, 1, 1), 8), ((1, 1, 1), 4)],
    [((1, 1, 1), 16), ((4, 0, 1), 8), ((2, 1, 1), 16), ((0, 2, 1), 4), ((3, 1, 1), 8)],
    [((2, 2, 0), 8), ((1, 1, 1), 4), ((0, 1, 1), 16), ((5, 1, 1), 16), ((2, 1, 1), 4)],
]


def _gated(client: Any, program: list[tuple[tuple[int, int, int], int]]) -> list[int]:
    x, out = floats(client, range(64)), floats(client, [0] * 64)
    return launches_that_compile(client, [
        (lambda count=count, dim=dim: scale.launch(
            client, CubeCount.Static(*count), CubeDim.new_1d(dim),  # noqa: F405
            arg(x, 64), arg(out, 64), 2.0)) for count, dim in program])


@variants("ch06.zero_dim_compiles", [dict(program=p) for p in GATE_PROGRAMS])
def _zero_dim_compiles(v: Any) -> ValueExercise:
    code = "\n".join(f"scale.launch(client, CubeCount.Static{count}, CubeDim.new_1d({dim}), x, "
                     f"out, 2.0)   # {i}" for i, (count, dim) in enumerate(v.program, 1))
    return ValueExercise(
        "ch06.zero_dim_compiles", "Gate one: which launches compile?",
        "After `client.clear_cache()`, `scale` is launched five times with these cube counts and "
        "cube dims. Which launches make the device thread compile `scale`? Answer with a list of "
        "launch numbers.",
        "A static count with a zero dimension never leaves the calling thread (gate one, "
        "`LaunchGated`): the device thread never hears of it, so it compiles nothing for it. "
        "Of the launches that cross, a compile happens when the KernelId is new — and the cube "
        "dim is in the KernelId, the cube count is not.",
        nudge="First cross out the launches that never reach the device thread; then, for the "
        "rest, ask which KernelIds are new.",
        worked="A worked step on another program: counts (0,1,1) dim 8, (1,1,1) dim 8, (2,1,1) "
        "dim 8. The first is gated on the calling thread; the second compiles dim 8; the third "
        "has the second's KernelId (the count is not in it). Only launch 2 compiles.",
        misconceptions=[
            Misconception("a zero count still reaches the device",
                          lambda v: first_seen([d for _, d in v.program]),
                          "That compiles the zero-count launches too. Gate one returns on the "
                          "calling thread before the hand-off: the device thread never sees "
                          "them."),
            Misconception("the cube count is in the key",
                          lambda v: [i for i, (c, d) in enumerate(v.program, 1) if 0 not in c
                                     and (c, d) not in [(c2, d2) for c2, d2 in v.program[:i - 1]]],
                          "That compiles every new count. The cube count is a dispatch "
                          "parameter, not compiled in: not in the KernelId."),
        ],
        code=code,
        value=lambda c: _gated(c, v.program),
        explanation="Zero counts are gated on the calling thread; the rest compile once per "
        "cube dim.",
    )


# -- 6.2 dry run, then real run: compiles and dispatches -----------------------------------------------

DRY_PROGRAMS = [
    dict(dry=(8, 4, 8), real=(8, 2)),
    dict(dry=(16, 2), real=(4, 16, 4)),
    dict(dry=(4, 8, 16), real=(8,)),
]


def _dry_then_real(client: Any, dry: tuple[int, ...], real: tuple[int, ...]) -> tuple[int, int]:
    x, out = floats(client, range(16)), floats(client, [0] * 16)

    def launch(dim: int) -> None:
        scale.launch(client, CubeCount.Static(16 // dim), CubeDim.new_1d(dim),  # noqa: F405
                     arg(x, 16), arg(out, 16), 2.0)

    client.clear_cache()
    with client.events.record(ev.CompileFinished, ev.LaunchDispatched) as rec:
        with dry_run():  # noqa: F405
            for dim in dry:
                launch(dim)
        for dim in real:
            launch(dim)
        client.sync()
    return len(rec.of(ev.CompileFinished)), len(rec.of(ev.LaunchDispatched))


@variants("ch06.dry_run_dispatches", DRY_PROGRAMS)
def _dry_run_dispatches(v: Any) -> ValueExercise:
    def line(dim: int) -> str:
        return f"scale.launch(client, CubeCount.Static({16 // dim}), CubeDim.new_1d({dim}), x, out, 2.0)"

    code = "with dry_run():\n" + "".join(f"    {line(d)}\n" for d in v.dry) + \
        "".join(f"{line(d)}\n" for d in v.real)
    return ValueExercise(
        "ch06.dry_run_dispatches", "Dry run, then real run: compiles and dispatches",
        "On a cleared cache, your program launches `scale` inside `with dry_run():` and then "
        "after it, with the cube dims below. How many compiles happen, and how many launches are "
        "dispatched (run on the device)? Answer with a pair: `(compiles, dispatches)`.",
        "Inside a dry run every launch is compiled and cached and then dropped (LaunchMode.Skip): "
        "it does all the compile work, runs nothing and claims nothing. After the guard ends, "
        "launches execute again — and find their pipelines in the cache if a skipped launch "
        "already compiled that KernelId (the cube dim is in it).",
        nudge="Go launch by launch: does it compile (is its KernelId new?), and is it "
        "dispatched (is it inside the dry run?)",
        worked="A worked step on another program: `with dry_run():` dims 8 and 8, then dim 8 "
        "after it. The first skipped launch compiles dim 8, the second is a cache hit, the real "
        "launch is a cache hit and the only dispatch: (1, 1).",
        misconceptions=[
            Misconception("a skipped launch does nothing",
                          lambda v: (len(set(v.real)), len(v.real)),
                          "That has the skipped launches do nothing at all. A skip still "
                          "compiles (and caches): LaunchMode.Skip drops the launch only after "
                          "compile-or-reuse, so the dry run's KernelIds count as compiles."),
            Misconception("a dry run runs too",
                          lambda v: (len(set(v.dry) | set(v.real)), len(v.dry) + len(v.real)),
                          "That dispatches the dry run's launches. Skip compiles and drops: "
                          "nothing runs on the device."),
        ],
        code=code,
        value=lambda c: _dry_then_real(c, v.dry, v.real),
        explanation="Compiles: one per distinct cube dim, dry or not. Dispatches: only the "
        "launches after the guard.",
    )


# -- 6.3 RealRun belongs to the thread that issues the launch ----------------------------------------

def _real_run_elsewhere(client: Any, labels: str) -> set[str]:
    """Four launches under a process-wide dry run: which are dispatched, by label."""
    x, out = floats(client, range(8)), floats(client, [0] * 8)
    dispatched: list[bool] = []
    lock = threading.Lock()

    def launch() -> None:
        with client.events.record(ev.LaunchDispatched) as rec:
            scale.launch(client, CubeCount.Static(1), EIGHT, arg(x), arg(out), 2.0)  # noqa
            client.sync()
        with lock:
            dispatched.append(bool(rec.of(ev.LaunchDispatched)))

    def worker() -> None:
        with real_run():  # noqa: F405
            launch()                      # the worker, inside its RealRun
            helper = threading.Thread(target=launch)
            helper.start()                # a helper thread, with no RealRun of its own
            helper.join()
            launch()                      # the worker again

    with dry_run():  # noqa: F405
        launch()                          # the main thread: no RealRun here
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    return {labels[i] for i, d in enumerate(dispatched) if d}


REAL_RUN_LABELS = ["ABCD", "BADC", "ACBD", "DBCA"]


@variants("ch06.real_run_threads", [dict(labels=s) for s in REAL_RUN_LABELS])
def _real_run_threads(v: Any) -> ValueExercise:
    a, b, c, d = v.labels
    return ValueExercise(
        "ch06.real_run_threads", "RealRun belongs to the thread that issues the launch",
        "The main thread opens a dry run and launches once. Inside it, a worker thread opens "
        "`real_run()` and launches, starts a helper thread that launches once, then launches "
        "again itself. The four launches carry your labels (below). Which are dispatched? "
        "Answer with a set of labels.",
        "The dry run is process-wide (a counter every thread sees); RealRun is a depth *per "
        "thread*. What counts is the thread that issues the launch, not the one that asked for "
        "the work — the verdict is taken on the calling thread, before the hand-off.",
        nudge="For each launch, which thread issues it, and does *that* thread hold a RealRun?",
        worked="A worked step on another program: thread T opens real_run() and submits a "
        "launch to a thread pool; the pool's thread issues it with no RealRun of its own, inside "
        "the process's dry run: skipped. T's own launches run.",
        misconceptions=[Misconception("RealRun is inherited by the threads it starts",
                                      lambda v: {v.labels[1], v.labels[2], v.labels[3]},
                                      "That lets the helper run because the worker that started "
                                      "it holds a RealRun. RealRun is per thread: the helper "
                                      "holds none, so in a dry run its launch is skipped.")],
        code="def worker():\n"
        "    with real_run():\n"
        f"        launch()                                   # {b}: the worker\n"
        "        helper = threading.Thread(target=launch)\n"
        f"        helper.start(); helper.join()              # {c}: the helper thread\n"
        f"        launch()                                   # {d}: the worker\n\n"
        "with dry_run():\n"
        f"    launch()                                       # {a}: the main thread\n"
        "    t = threading.Thread(target=worker); t.start(); t.join()",
        value=lambda cl: _real_run_elsewhere(cl, v.labels),
        explanation="Only the worker's own two launches: it holds the RealRun; the main thread "
        "and the helper do not.",
    )


# -- 6.4 how many threads does a program touch? (numeric) ---------------------------------------------

THREAD_EVENTS = (ev.LaunchIssued, ev.CompileStarted, ev.CompileFinished, ev.CacheHit,
                 ev.BufferClaimed, ev.BufferReleased, ev.LaunchDispatched)


def _from_workers(k: int) -> Callable[[Any], None]:
    def launches(client: Any) -> None:
        x, out = floats(client, range(8)), floats(client, [0] * 8)

        def launch() -> None:
            scale.launch(client, CubeCount.Static(1), EIGHT, arg(x), arg(out), 2.0)  # noqa

        launch()                         # the main thread
        for _ in range(k):               # then k worker threads, one after the other
            t = threading.Thread(target=launch)
            t.start()
            t.join()
    return launches


@variants("ch06.threads", [dict(workers=k) for k in (7, 8, 9)])
def _threads(v: Any) -> CountExercise:
    return CountExercise(
        "ch06.threads", "How many threads does a program touch?",
        f"After `client.clear_cache()`, `scale` is launched once from the main thread and then "
        f"once from each of {v.workers} worker threads (one after another). Every event carries "
        "the name of the thread that published it. Counting `LaunchIssued`, `CompileStarted`, "
        "`CompileFinished`, `CacheHit`, `BufferClaimed`, `BufferReleased` and "
        "`LaunchDispatched`, how many different threads published them?",
        "Each launch is issued on the thread that calls `launch` (LaunchIssued is published "
        "there) and crosses once to the device thread — one runner thread per device, whoever "
        "the callers are: compiling, cache hits, claiming and dispatching all happen there.",
        nudge="Which events are published where the launch is issued, and which on the thread "
        "that owns the device?",
        worked="A worked step on another program: two launches from the main thread and one "
        "from one worker: LaunchIssued on MainThread and on the worker; everything else on "
        "`cubelab-<runtime>-1`. Three threads.",
        misconceptions=[
            Misconception("every caller has a device thread of its own",
                          lambda v: 2 * (v.workers + 1),
                          "That gives each calling thread its own device thread. There is one "
                          "runner thread per device: every launch crosses to the same one."),
            Misconception("a launch runs on the thread that calls it",
                          lambda v: v.workers + 1,
                          "That runs everything on the callers' threads. A launch crosses to "
                          "the device thread: compiles, claims and dispatches happen there."),
        ],
        code="launch()                             # main thread\n"
        f"for _ in range({v.workers}):\n"
        "    t = threading.Thread(target=launch); t.start(); t.join()",
        launches=[_from_workers(v.workers)],
        count=lambda r: len({e.thread for e in r.events if isinstance(e, THREAD_EVENTS)}),
        what="threads",
        explanation="The callers plus one device thread.",
    )
