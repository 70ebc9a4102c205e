"""Chapter 8 — streams, dynamic counts, capture, autotune (seed 001, "streams and dependencies",
"CubeCount::Dynamic", "recording and sync", "LaunchMode", and the chapter's four exercises).

Counts come from the events of a real run. A flush count depends on whether the device thread
ran dry between two launches, so the exercises that count flushes queue their launches while the
device thread is held (`busy_device`), as it would be behind earlier work.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from cubelab.errors import CaptureError
from cubelab.exercises import register
from cubelab.exercises.kinds import (CallsExercise, CountExercise, FailedBuffersExercise,
                                     RunReport)
from cubelab.exercises.launching import (EIGHT, ONE, arg, busy_device, floats, inc, scale,
                                         tile_sum, write_count)
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _max_tasks(client: Any) -> None:
    y = floats(client, [0] * 8)
    old = client.max_tasks
    client.set_max_tasks(4)
    try:
        with busy_device(client):
            for _ in range(10):
                inc.launch(client, ONE, EIGHT, arg(y))
        client.read_one(y)
    finally:
        client.set_max_tasks(old)


register(CountExercise(
    "ch08.max_tasks_flushes",
    "max_tasks: how many flushes does the queue force?",
    "`client.set_max_tasks(4)`, then ten launches of `inc` on one stream while the device "
    "thread is busy (none of them is processed until all ten are queued). How many flushes "
    "happen *because the queue reached max_tasks* (`Flushed(why=\"max_tasks\")`)?",
    "`register` pushes the task on its stream's queue and executes the stream on the spot when "
    "the queue holds max_tasks tasks. What is left over is sent later — when the device runs out "
    "of work, or when a read needs it.",
    (3, 10, 1),
    code="client.set_max_tasks(4)\n"
    "with busy_device(client):\n"
    "    for _ in range(10):\n"
    "        inc.launch(client, one, eight, y)\n"
    "client.read_one(y)",
    launches=[_max_tasks],
    count=lambda r: sum(1 for e in r.of(ev.Flushed) if e.why == "max_tasks"),
    what="max_tasks flushes",
    explanation="Two: after the 4th and the 8th launch, 4 dispatches each. The last two leave "
    "with the idle flush (or the read) — so when a stream executes is not decided by `sync` "
    "alone.",
))


def _zero_count(client: Any) -> Any:
    y = floats(client, np.full(8, 5.0))
    cnt = client.empty(12)
    write_count.launch(client, ONE, CubeDim.new_1d(1), BufferArg.from_raw_parts(cnt, 3), 0)  # noqa
    inc.launch(client, CubeCount.Dynamic(cnt), EIGHT, arg(y))  # noqa: F405
    return f32.from_bytes(client.read_one(y))  # noqa: F405


register(CountExercise(
    "ch08.dynamic_zero",
    "A dynamic count of zero",
    "A kernel writes the count `(0, 1, 1)` into a 12-byte buffer on the device; then `inc` is "
    "launched on `y` (8 items, all 5.0) with `CubeCount.Dynamic(cnt)`. How many items of `y` "
    "change?",
    "A dynamic count is read where the work runs, not on the calling thread: gate one (zero "
    "dimensions) cannot see it. The CPU runtime drains the stream and reads the 12 bytes; wgpu "
    "dispatches indirectly and the GPU reads them. Either way a zero count runs zero cubes.",
    (8, 1),
    code="write_count.launch(client, one, CubeDim.new_1d(1), cnt, 0)   # cnt = (0, 1, 1)\n"
    "inc.launch(client, CubeCount.Dynamic(cnt), eight, y)",
    launches=[_zero_count],
    count=lambda r: int(np.count_nonzero(r.outputs[-1] != 5.0)),
    what="changed items",
    explanation="None: zero cubes ran. On the CPU runtime the launch is dropped after the "
    "read-back (`LaunchSkipped(why=\"zero-count\")`); on wgpu it is dispatched indirectly and "
    "the GPU runs nothing.",
))


def _capture_calls(client: Any) -> dict[str, Callable[[], Any]]:
    x, y = floats(client, range(8)), floats(client, [0] * 8)
    scale.launch(client, ONE, EIGHT, arg(x), arg(y), 2.0)   # warm up: compile outside
    client.sync()

    def in_window(call: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> None:
            client.start_capture()
            try:
                call()
            finally:
                try:
                    client.stop_capture()
                except CaptureError:
                    pass
        return run

    def profiled() -> None:
        with client.profile():
            scale.launch(client, ONE, EIGHT, arg(x), arg(y), 2.0)

    calls = {
        "launch": lambda: scale.launch(client, ONE, EIGHT, arg(x), arg(y), 3.0),
        "read_one": lambda: client.read_one(y),
        "sync": client.sync,
        "sync_buffers": lambda: client.sync_buffers([y]),
        "profile": profiled,
        "write": lambda: client.write(y, f32.as_bytes(np.ones(8, np.float32))),  # noqa: F405
    }
    return {name: in_window(call) for name, call in calls.items()}


register(CallsExercise(
    "ch08.capture_refusals",
    "What does a capture window refuse?",
    "Each of these runs alone inside its own `start_capture()` … `stop_capture()` window (after "
    "a warm-up launch): a `launch`, `read_one`, `sync`, `sync_buffers`, a launch under "
    "`client.profile()`, and a host `write`. Which are refused with `CaptureError`?",
    "A recording holds kernel work only. Reads and syncs would interrupt the recording, "
    "profiling needs device timestamps, and a recorded graph cannot carry a host copy (fresh "
    "inputs are written between replays).",
    ("read_one, sync", "launch, read_one, sync, sync_buffers, profile, write", "write"),
    code='for op in ["launch", "read_one", "sync", "sync_buffers", "profile", "write"]:\n'
    "    client.start_capture()\n"
    "    ...   # the one operation\n"
    "    client.stop_capture()",
    calls=_capture_calls,
    error=CaptureError,
    explanation="Everything but the launch. Each refusal raises at once. A read, a sync or a "
    "profiled launch leaves the recording as it was, so `stop_capture` still returns the graph "
    "and lists what it rejected; a host write dooms the window, since the launches after it "
    "were recorded to read data no graph can carry — `stop_capture` fails instead of handing "
    "back a graph that quietly lacks it.",
))


def _capture_and_replay(client: Any) -> None:
    x = floats(client, range(8))
    t, y = floats(client, [0] * 8), floats(client, [0] * 8)

    def work() -> None:
        scale.launch(client, ONE, EIGHT, arg(x), arg(t), 2.0)
        inc.launch(client, ONE, EIGHT, arg(t))
        scale.launch(client, ONE, EIGHT, arg(t), arg(y), 3.0)
        inc.launch(client, ONE, EIGHT, arg(y))

    work()                       # warm-up: compile and allocate outside the window
    client.sync()
    client.start_capture()
    work()
    graph = client.stop_capture()
    for _ in range(3):
        graph.replay()
    client.read_one(y)


register(CountExercise(
    "ch08.replay_compiles",
    "Warm up, capture, replay: how many compiles?",
    "After `client.clear_cache()`: the four launches of `work()` (`scale`, `inc`, `scale`, "
    "`inc`) as a warm-up, then the same four inside a capture window, then `graph.replay()` "
    "three times. How many compiles?",
    "Compiling is keyed by KernelId, whatever the mode: the warm-up compiles each distinct "
    "kernel once; launches inside the window are recorded (and hit the cache); a replay "
    "re-encodes the recorded dispatches and compiles nothing.",
    (4, 6, 0),
    code="work()                 # warm-up\n"
    "client.start_capture()\nwork()\ngraph = client.stop_capture()\n"
    "for _ in range(3):\n    graph.replay()",
    launches=[_capture_and_replay],
    explanation="Two (`Scale` and `Inc`), both in the warm-up; the capture and the 3 replays "
    "(12 dispatches in 3 submissions) reuse them.",
))


def _tune(client: Any) -> None:
    from cubelab.runtime.autotune import Tuner

    n = 64
    x, out = floats(client, range(n)), floats(client, [0] * n)
    spare = floats(client, [0] * n)
    tuner = Tuner(client, "scale", key=lambda x, out, n: n, warmups=1, samples=2)

    @tuner.candidate
    def one_cube(x: Any, out: Any, n: int) -> None:
        scale.launch(client, ONE, CubeDim.new_1d(n), arg(x, n), arg(out, n), 2.0)  # noqa

    @tuner.candidate
    def cubes_of_8(x: Any, out: Any, n: int) -> None:
        scale.launch(client, CubeCount.Static(n // 8), EIGHT, arg(x, n), arg(out, n), 2.0)  # noqa

    @tuner.candidate
    def too_much_shared(x: Any, out: Any, n: int) -> None:
        tile_sum.launch(client, CubeCount.Static(n // 8), EIGHT, arg(x, n), arg(out, n),  # noqa
                        arg(spare, n))

    tuner(x, out, n)
    tuner(x, out, n)
    tuner(x, out, 32)


register(CountExercise(
    "ch08.autotune_compiles",
    "Autotune as search: how many compiles?",
    "A `Tuner` with three candidates: `scale` with one cube of n units, `scale` with cubes of 8, "
    "and `tile_sum` (cannot compile). After `client.clear_cache()` it is called with n = 64, "
    "again with n = 64, then with n = 32. How many successful compiles (`CompileFinished`)?",
    "On a new key the tuner precompiles every candidate under a dry run, then measures the "
    "survivors under `real_run()`. Compiles are cached by KernelId, not by the tuner's key — "
    "and the cube dim is in the KernelId (n units per cube is a different kernel for each n).",
    (2, 4, 6),
    code="tuner(x, out, 64)\ntuner(x, out, 64)   # cached winner\ntuner(x, out, 32)",
    launches=[_tune],
    explanation="Three: `scale` with cube dim 64, `scale` with cube dim 8 (its KernelId is "
    "the same for n = 32), and `scale` with cube dim 32 on the second search. The second "
    "n = 64 call searches nothing; `tile_sum` fails each precompile and is disqualified.",
))


# -- the seed's end-of-chapter exercises, as runs ---------------------------------------------------

def _nested(client: Any) -> None:
    x, out = floats(client, range(8)), floats(client, [0] * 8)

    def launch() -> None:
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)

    with dry_run():  # noqa: F405
        launch()                  # 1
        with real_run():  # noqa: F405
            launch()              # 2
            with dry_run():  # noqa: F405
                launch()          # 3
            launch()              # 4
        launch()                  # 5


register(CountExercise(
    "ch08.guards_nest",
    "Seed exercise 3: a DryRun inside a RealRun",
    "The seed asks what happens when a `DryRun` is added inside `real_run_nests`. Here: five "
    "launches under nested guards (below). How many are dispatched?",
    "The verdict is `Execute` unless the process is in a dry run *and* this thread holds no "
    "RealRun. Both are depths: an inner dry run raises the dry-run depth but does not cancel "
    "the RealRun around it; leaving it restores the depth, not a saved boolean.",
    (2, 1, 5),
    code="with dry_run():\n"
    "    launch()              # 1\n"
    "    with real_run():\n"
    "        launch()          # 2\n"
    "        with dry_run():\n"
    "            launch()      # 3\n"
    "        launch()          # 4\n"
    "    launch()              # 5",
    launches=[_nested],
    count=RunReport.dispatched, what="dispatches",
    explanation="Launches 2, 3 and 4 run: inside the RealRun the thread executes whatever "
    "the dry-run depth is. 1 and 5 are skipped.",
))


def _zero_gates(client: Any) -> None:
    y = floats(client, [0] * 8)
    cnt = client.empty(12)
    write_count.launch(client, ONE, CubeDim.new_1d(1), BufferArg.from_raw_parts(cnt, 3), 0)  # noqa
    client.sync()
    inc.launch(client, CubeCount.Static(0), EIGHT, arg(y))  # noqa: F405
    inc.launch(client, CubeCount.Dynamic(cnt), EIGHT, arg(y))  # noqa: F405
    client.sync()


register(CountExercise(
    "ch08.zero_reaches_device",
    "Seed exercise 1: where does a zero count go?",
    "Gate one cannot be removed here, but a zero count that gate one cannot see can be "
    "launched: `inc` with `CubeCount.Static(0)` and then with `CubeCount.Dynamic(cnt)` where a "
    "kernel wrote `cnt = (0, 1, 1)`. How many of the two `inc` launches reach the device "
    "thread (compile or cache hit there)?",
    "Gate one looks at a *static* count on the calling thread and returns before the hand-off. "
    "A dynamic count's value lives in device memory: only the device thread (or the GPU) can "
    "read it, so the launch must cross and the device thread must handle the zero itself — "
    "the situation the seed's exercise provokes by deleting the gate.",
    (0, 2),
    code="inc.launch(client, CubeCount.Static(0), eight, y)\n"
    "inc.launch(client, CubeCount.Dynamic(cnt), eight, y)   # cnt holds (0, 1, 1)",
    launches=[_zero_gates],
    count=lambda r: len({e.launch_seq for e in r.events
                         if isinstance(e, (ev.CompileStarted, ev.CacheHit))
                         and e.kernel == "Inc"}),
    what="launches on the device thread",
    explanation="One: the static zero is `LaunchGated` on the calling thread; the dynamic one "
    "is compiled on the device thread, which then drops it after reading the count (CPU "
    "runtime) or dispatches zero cubes indirectly (wgpu).",
))


def _precompile_sweep(client: Any) -> dict[str, Any]:
    n = 64
    x = floats(client, range(n))
    out, scratch = floats(client, [0] * n), floats(client, [0] * n)
    with dry_run():  # noqa: F405  (a tuner's precompile pass, candidate by candidate)
        scale.launch(client, CubeCount.Static(8), EIGHT, arg(x, n), arg(out, n), 2.0)  # noqa
        tile_sum.launch(client, CubeCount.Static(8), EIGHT, arg(x, n), arg(out, n),  # noqa
                        arg(scratch, n))
    return {"x": x, "out": out, "scratch": scratch}


register(FailedBuffersExercise(
    "ch08.precompile_taints",
    "Seed exercise 2: a compile failure in a dry run",
    "An autotune sweep precompiles its candidates under a dry run: first `scale(x → out)`, "
    "then `tile_sum(x → out, scratch)`, which cannot compile. After the dry run, which of `x`, "
    "`out`, `scratch` carry a failure?",
    "The device thread compiles *before* it looks at the LaunchMode, and a compile failure "
    "claims the declared write set (`buffers_written(None)`: every `SliceMut`). Read-only "
    "inputs are never claimed — over-claiming them would make the next candidate's legal reads "
    "fail loudly.",
    ("none", "x, out, scratch", "out"),
    code="with dry_run():\n"
    "    scale.launch(client, eight_cubes, eight, x, out, 2.0)\n"
    "    tile_sum.launch(client, eight_cubes, eight, x, out, scratch)",
    program=_precompile_sweep,
    explanation="`out` and `scratch`: even in a dry run the failed compile claims its declared "
    "outputs, and they stay failed until a later candidate writes them as pure outputs. `x` "
    "is only read.",
))
