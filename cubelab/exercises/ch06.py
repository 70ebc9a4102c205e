"""Chapter 6 — two hand-offs (seed 001, "why a launch needs two irreversible hand-offs", "the
four gates", "LaunchMode", "the device thread compiles first").

Each answer is counted from the events of a real run: which launches reached the device thread,
which were dispatched, which threads published what.
"""

from __future__ import annotations

import threading
from typing import Any

from cubelab.exercises import register
from cubelab.exercises.kinds import CountExercise, RunReport
from cubelab.exercises.launching import EIGHT, arg, floats, scale
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _zero_dims(client: Any) -> None:
    x, out = floats(client, range(8)), floats(client, [0] * 8)
    for count in [(0, 1, 1), (4, 0, 1), (1, 1, 1), (2, 1, 1)]:
        scale.launch(client, CubeCount.Static(*count), EIGHT, arg(x), arg(out), 2.0)  # noqa


register(CountExercise(
    "ch06.zero_dim_compiles",
    "Gate one: how many compiles?",
    "After `client.clear_cache()`, `scale` is launched four times with the same cube dim and "
    "arguments and these cube counts: `(0, 1, 1)`, `(4, 0, 1)`, `(1, 1, 1)`, `(2, 1, 1)`. How "
    "many times does the device thread compile `scale`?",
    "A static count with a zero dimension never leaves the calling thread (gate one: "
    "`LaunchGated`), so the device thread never hears of it. And the cube count is not part of "
    "the KernelId: two launches that differ only in their count share one pipeline.",
    (2, 3, 4),
    code="for count in [(0, 1, 1), (4, 0, 1), (1, 1, 1), (2, 1, 1)]:\n"
    "    scale.launch(client, CubeCount.Static(*count), CubeDim.new_1d(8), x, out, 2.0)",
    launches=[_zero_dims],
    explanation="The two zero counts are gated on the calling thread; (1, 1, 1) compiles and "
    "(2, 1, 1) is a cache hit — the count is not in the KernelId.",
))


def _dry_then_real(client: Any) -> None:
    x, out = floats(client, range(8)), floats(client, [0] * 8)
    with dry_run():  # noqa: F405
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), arg(x), arg(out), 2.0)  # noqa
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out), 2.0)  # noqa
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), arg(x), arg(out), 3.0)  # noqa
    scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), arg(x), arg(out), 4.0)  # noqa
    scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out), 5.0)  # noqa


register(CountExercise(
    "ch06.dry_run_dispatches",
    "Dry run, then real run: how many dispatches?",
    "Three launches of `scale` inside `with dry_run():` (cube dims 8, 4 and 8), then two after "
    "it (cube dims 8 and 4). How many launches are *dispatched* (run on the device)?",
    "Inside a dry run every launch is compiled and cached and then dropped (LaunchMode.Skip): "
    "nothing is dispatched, nothing claimed. After the guard ends, launches execute again — "
    "and find their pipelines already in the cache.",
    (5, 3, 0),
    code="with dry_run():\n"
    "    scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, out, 2.0)\n"
    "    scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), x, out, 2.0)\n"
    "    scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, out, 3.0)\n"
    "scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, out, 4.0)\n"
    "scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), x, out, 5.0)",
    launches=[_dry_then_real],
    count=RunReport.dispatched, what="dispatches",
    explanation="Only the two launches after the guard run. The dry run compiled both "
    "KernelIds (cube dims 8 and 4 are two keys), so those two are cache hits.",
))


def _first_launch(client: Any) -> None:
    x, out = floats(client, range(8)), floats(client, [0] * 8)
    scale.launch(client, CubeCount.Static(1), EIGHT, arg(x), arg(out), 2.0)  # noqa: F405


register(CountExercise(
    "ch06.threads",
    "How many threads does one launch touch?",
    "After `client.clear_cache()`, one launch of `scale`. Every event the runtime publishes "
    "carries the name of the thread that published it. Counting `LaunchIssued`, "
    "`CompileStarted`, `CompileFinished`, `BufferClaimed`, `BufferReleased` and "
    "`LaunchDispatched`, how many different threads published them?",
    "A launch crosses from the calling thread to the device thread once, and never comes back: "
    "the gates run where the launch was issued; compiling, claiming and dispatching happen on "
    "the one thread that owns the server.",
    (1, 3),
    code="scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, out, 2.0)",
    launches=[_first_launch],
    count=lambda r: len({e.thread for e in r.events if isinstance(e, (
        ev.LaunchIssued, ev.CompileStarted, ev.CompileFinished, ev.BufferClaimed,
        ev.BufferReleased, ev.LaunchDispatched))}),
    what="threads",
    explanation="Two: `LaunchIssued` on the calling thread (MainThread), everything else on "
    "the device thread (`cubelab-<runtime>-<n>`).",
))


def _real_run_elsewhere(client: Any) -> None:
    x, out = floats(client, range(8)), floats(client, [0] * 8)

    def launch() -> None:
        scale.launch(client, CubeCount.Static(1), EIGHT, arg(x), arg(out), 2.0)  # noqa: F405

    def worker() -> None:
        with real_run():  # noqa: F405
            launch()                      # issued by the worker, inside its RealRun
            helper = threading.Thread(target=launch)
            helper.start()                # issued by a helper thread with no RealRun
            helper.join()
            launch()

    with dry_run():  # noqa: F405
        launch()                          # the main thread: no RealRun here
        t = threading.Thread(target=worker)
        t.start()
        t.join()


register(CountExercise(
    "ch06.real_run_threads",
    "RealRun belongs to the thread that issues the launch",
    "The main thread opens a dry run and launches once. Inside it, a worker thread opens "
    "`real_run()` and launches, starts a helper thread that launches once, then launches "
    "again itself. Of the four launches, how many are dispatched?",
    "The dry run is process-wide (a counter every thread sees); RealRun is a depth *per "
    "thread*. What counts is the thread that issues the launch, not the one that asked for the "
    "work — the verdict is taken on the calling thread, before the hand-off.",
    (4, 3, 1, 0),
    code="def worker():\n"
    "    with real_run():\n"
    "        launch()                                   # worker\n"
    "        helper = threading.Thread(target=launch)   # a thread of its own\n"
    "        helper.start(); helper.join()\n"
    "        launch()                                   # worker\n\n"
    "with dry_run():\n"
    "    launch()                                       # main thread\n"
    "    t = threading.Thread(target=worker); t.start(); t.join()",
    launches=[_real_run_elsewhere],
    count=RunReport.dispatched, what="dispatches",
    explanation="The worker's two launches execute; the main thread's and the helper's are "
    "skipped — the helper never entered a RealRun, even though the worker that started it had.",
))
