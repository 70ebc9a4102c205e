"""Chapter 8 · Streams, dynamic counts, capture, autotune (CubeCL's chapter on kernel launch and
execution: streams and dependencies, `CubeCount::Dynamic`, recording and sync, the autotune half
of `LaunchMode`, and the chapter's four exercises, as runs).

Counts come from the events of a real run. A flush count depends on whether the device thread ran
dry between two launches, so the exercises that count flushes queue their launches while the
device thread is held (`busy_device`), as it would be behind earlier work. Every exercise has
variants (`students.py`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from cubelab.errors import CaptureError
from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import (CallsExercise, CountExercise, FailedBuffersExercise,
                                     ValueExercise)
from cubelab.exercises.launching import (EIGHT, ONE, arg, busy_device, floats, inc, scale,
                                         tile_sum, write_count)
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _labelled_set(labels: str, chosen: list[int]) -> set[str]:
    return {labels[i] for i in chosen}


# -- 8.1 max_tasks: how many flushes does the queue force? (numeric) ------------------------------------

def _max_tasks(m: int, n: int) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        y = floats(client, [0] * 8)
        old = client.max_tasks
        client.set_max_tasks(m)
        try:
            with busy_device(client):
                for _ in range(n):
                    inc.launch(client, ONE, EIGHT, arg(y))
            client.read_one(y)
        finally:
            client.set_max_tasks(old)
    return run


@variants("ch08.max_tasks_flushes", [dict(m=2, n=11), dict(m=3, n=20), dict(m=2, n=15)])
def _max_tasks_flushes(v: Any) -> CountExercise:
    return CountExercise(
        "ch08.max_tasks_flushes", "max_tasks: how many flushes does the queue force?",
        f"`client.set_max_tasks({v.m})`, then {v.n} launches of `inc` on one stream while the "
        f"device thread is busy (none of them is processed until all {v.n} are queued). How many "
        "flushes happen *because the queue reached max_tasks* (`Flushed(why=\"max_tasks\")`)?",
        "`register` pushes the task on its stream's queue and executes the stream on the spot when "
        "the queue holds max_tasks tasks. What is left over is sent later — when the device runs "
        "out of work, or when a read needs it: a flush of another kind.",
        nudge="After which launch does the queue first hold max_tasks tasks, and what is in it "
        "right after that flush?",
        worked="A worked step on other numbers: max_tasks 4 and 10 launches. The queue fills at "
        "launches 4 and 8: two max_tasks flushes of 4; the last 2 leave with the idle flush or "
        "the read.",
        misconceptions=[
            Misconception("the leftover is a max_tasks flush too", lambda v: -(-v.n // v.m),
                          "That counts the last, partial queue. It never reached max_tasks: it "
                          "leaves with the idle flush or the read, a flush of another kind."),
            Misconception("every launch flushes", lambda v: v.n,
                          "A launch only queues its task; the queue executes when it reaches "
                          "max_tasks."),
        ],
        code=f"client.set_max_tasks({v.m})\nwith busy_device(client):\n    for _ in range({v.n}):\n"
        "        inc.launch(client, one, eight, y)\nclient.read_one(y)",
        launches=[_max_tasks(v.m, v.n)],
        count=lambda r: sum(1 for e in r.of(ev.Flushed) if e.why == "max_tasks"),
        what="max_tasks flushes",
        explanation="One flush each time the queue fills; the rest leaves otherwise — so when a "
        "stream executes is not decided by `sync` alone.",
    )


# -- 8.2 a dynamic count: which items change? ------------------------------------------------------

def _dynamic(client: Any, cubes: int) -> list[int]:
    y = floats(client, np.full(16, 5.0))
    cnt = client.empty(12)
    write_count.launch(client, ONE, CubeDim.new_1d(1), BufferArg.from_raw_parts(cnt, 3),  # noqa
                       cubes)
    inc.launch(client, CubeCount.Dynamic(cnt), CubeDim.new_1d(4), arg(y, 16))  # noqa: F405
    values = f32.from_bytes(client.read_one(y))  # noqa: F405
    return [i for i, v in enumerate(values) if v != 5.0]


@variants("ch08.dynamic_count", [dict(cubes=c) for c in (1, 2, 3)])
def _dynamic_count(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch08.dynamic_count", "A grid the device wrote",
        f"A kernel writes the count `({v.cubes}, 1, 1)` into a 12-byte buffer on the device; then "
        "`inc` (guarded) is launched on `y` — 16 items, all 5.0 — with `CubeCount.Dynamic(cnt)` "
        "and `CubeDim.new_1d(4)`. Which items of `y` change? Answer with a list of indices.",
        "A dynamic count is three u32 in device memory, read where the work runs, after the "
        "kernel that writes them (the count buffer is part of the launch's reads): the launch "
        "runs that many cubes of its cube dim — here 4 units each.",
        nudge="When is the count read — at `launch`, or when the work runs? And is it a number "
        "of cubes or of units?",
        worked="A worked step on other numbers: a count of (2, 1, 1) with `CubeDim.new_1d(8)` "
        "runs 2 cubes of 8 units: items 0 to 15 of a guarded kernel.",
        misconceptions=[
            Misconception("the count is read when launch is called",
                          [], "That reads the count before the kernel that writes it ran. A "
                          "dynamic count is read where the work runs, after the writer: the "
                          "count buffer is part of the launch's reads."),
            Misconception("the count is a number of units", lambda v: list(range(v.cubes)),
                          "The count is in cubes; each runs CubeDim's units."),
        ],
        code=f"write_count.launch(client, one, CubeDim.new_1d(1), cnt, {v.cubes})   "
        f"# cnt = ({v.cubes}, 1, 1)\n"
        "inc.launch(client, CubeCount.Dynamic(cnt), CubeDim.new_1d(4), y)",
        value=lambda c: _dynamic(c, v.cubes),
        explanation="cubes × 4 units, each adds one to its item.",
    )


# -- 8.3 what does a capture window refuse? -----------------------------------------------------------

def _capture_calls(client: Any, order: tuple[str, ...]) -> dict[str, Callable[[], Any]]:
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
        "create_from_slice": lambda: client.create_from_slice(b"\0" * 32),
        "check": lambda: client.check([y]),
    }
    return {str(i): in_window(calls[name]) for i, name in enumerate(order, 1)}


CAPTURE_ORDERS = [
    ("launch", "read_one", "check", "write", "sync"),
    ("sync_buffers", "launch", "profile", "check", "create_from_slice"),
    ("write", "check", "launch", "profile", "sync"),
]
_REFUSED = {"read_one", "sync", "sync_buffers", "profile", "write", "create_from_slice"}


@variants("ch08.capture_refusals", [dict(order=o) for o in CAPTURE_ORDERS])
def _capture_refusals(v: Any) -> CallsExercise:
    return CallsExercise(
        "ch08.capture_refusals", "What does a capture window refuse?",
        "After a warm-up launch, each of your five operations (below) runs alone inside its own "
        "`start_capture()` … `stop_capture()` window. Which are refused with `CaptureError`? "
        "Answer with their numbers, e.g. `\"2, 5\"`, or `\"none\"`.",
        "A recording holds kernel work only. A read or a sync would interrupt the recording; "
        "profiling needs timestamps on the device; and a recorded graph cannot carry a host copy "
        "(`write`, `create_from_slice`: fresh inputs are written between replays). A launch is "
        "recorded; `check` reads no bytes, only the ledger.",
        nudge="For each operation: is it kernel work, or does it need the host and the device to "
        "meet (bytes coming back, a wait, a copy from the host)?",
        worked="A worked step on other operations: in a window, `inc.launch(...)` is recorded; "
        "`client.read_one(out)` is refused (it would wait for bytes the recording has not "
        "produced); `client.empty(n)` copies nothing from the host and is allowed.",
        misconceptions=[
            Misconception("a window refuses everything but launches",
                          lambda v: {str(i) for i, n in enumerate(v.order, 1) if n != "launch"},
                          "`check` asks the failure ledger, not the device: it needs no bytes "
                          "and interrupts nothing, so a window lets it through."),
            Misconception("a window only refuses reads",
                          lambda v: {str(i) for i, n in enumerate(v.order, 1) if n == "read_one"},
                          "A sync, a profile and a host copy break a recording too: a recorded "
                          "graph can hold kernel work only."),
        ],
        code="client.start_capture()\n...   # one operation of your list\nclient.stop_capture()\n\n"
        + "\n".join(f"# {i}. {n}" for i, n in enumerate(v.order, 1)),
        calls=lambda c: _capture_calls(c, v.order),
        error=CaptureError,
        explanation="Each refusal raises at once. A read, a sync or a profiled launch leaves "
        "the recording as it was, so `stop_capture` still returns the graph and lists what it "
        "rejected (`graph.refused`); a host copy dooms the window — the launches after it were "
        "recorded to read data no graph can carry — so `stop_capture` fails instead of handing "
        "back a graph that quietly lacks it.",
    )


# -- 8.4 warm up, capture, replay: how many dispatches? (numeric) -------------------------------------

def _capture_and_replay(launches: int, replays: int) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        x = floats(client, range(8))
        t, y = floats(client, [0] * 8), floats(client, [0] * 8)
        steps = [lambda: scale.launch(client, ONE, EIGHT, arg(x), arg(t), 2.0),
                 lambda: inc.launch(client, ONE, EIGHT, arg(t)),
                 lambda: scale.launch(client, ONE, EIGHT, arg(t), arg(y), 3.0),
                 lambda: inc.launch(client, ONE, EIGHT, arg(y))][:launches]

        def work() -> None:
            for step in steps:
                step()

        work()                       # warm-up: compile and allocate outside the window
        client.sync()
        client.start_capture()
        work()
        graph = client.stop_capture()
        for _ in range(replays):
            graph.replay()
        client.read_one(y)
    return run


@variants("ch08.replay_dispatches", [dict(launches=4, replays=2), dict(launches=3, replays=4),
                                     dict(launches=4, replays=4)])
def _replay_dispatches(v: Any) -> CountExercise:
    return CountExercise(
        "ch08.replay_dispatches", "Warm up, capture, replay: how many dispatches?",
        f"Your `work()` makes {v.launches} launches. It runs once as a warm-up, once more inside a "
        f"capture window, and then the graph is replayed {v.replays} times. How many launches are "
        "dispatched in all (`LaunchDispatched`)?",
        "Launches inside a capture window are compiled and checked as usual, but *recorded*, not "
        "run. A replay re-encodes every recorded dispatch and submits them; the warm-up ran for "
        "real.",
        nudge="Count per phase: the warm-up, the window, each replay.",
        worked="A worked step on other numbers: work of 2 launches, one warm-up, a capture, 3 "
        "replays: 2 (warm-up) + 0 (recorded) + 3 × 2 = 8 dispatches.",
        misconceptions=[
            Misconception("launches in the window run too",
                          lambda v: v.launches * (v.replays + 2),
                          "That dispatches the launches of the capture window. They are "
                          "recorded, not run: the graph runs when it is replayed."),
            Misconception("a replay is one dispatch",
                          lambda v: v.launches + v.replays,
                          "A replay submits once, but it re-encodes every recorded dispatch: "
                          "each is dispatched again."),
        ],
        code="work()                 # warm-up\nclient.start_capture()\nwork()\n"
        f"graph = client.stop_capture()\nfor _ in range({v.replays}):\n    graph.replay()",
        launches=[_capture_and_replay(v.launches, v.replays)],
        count=lambda r: len(r.of(ev.LaunchDispatched)),
        what="dispatches",
        explanation="The warm-up and every replay dispatch the work; the window only records.",
    )


# -- 8.5 autotune as search: how many compiles? (numeric) -----------------------------------------------

def _tune(calls: tuple[int, ...]) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        from cubelab.runtime.autotune import Tuner

        n = max(calls)
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

        for m in calls:
            tuner(x, out, m)
    return run


@variants("ch08.autotune_compiles", [dict(calls=(64, 64)), dict(calls=(64, 64, 32)),
                                     dict(calls=(64, 32, 16))])
def _autotune_compiles(v: Any) -> CountExercise:
    return CountExercise(
        "ch08.autotune_compiles", "Autotune as search: how many compiles?",
        "A `Tuner` with three candidates: `scale` with one cube of n units, `scale` with cubes of "
        "8, and `tile_sum` (cannot compile). After `client.clear_cache()` it is called with your "
        f"n values in turn: {', '.join(map(str, v.calls))}. How many successful compiles "
        "(`CompileFinished`)?",
        "On a new key the tuner precompiles every candidate under a dry run, then measures the "
        "survivors under `real_run()`; a known key reuses its winner and searches nothing. "
        "Compiles are cached by KernelId, not by the tuner's key — and the cube dim is in the "
        "KernelId: n units per cube is another kernel for each n, cubes of 8 the same kernel for "
        "every n.",
        nudge="For each call: is its key new (a search), and which KernelIds does the search "
        "need that no earlier call compiled?",
        worked="A worked step on other calls: n = 16 then n = 16. The first call searches: "
        "`scale` with cube dim 16 and with cube dim 8 compile, `tile_sum` fails (not a "
        "successful compile). The second call reuses the winner: 2 compiles.",
        misconceptions=[
            Misconception("every call searches again", lambda v: 2 * len(v.calls),
                          "A known key reuses the cached winner: no search, no precompile."),
            Misconception("the failing candidate counts",
                          lambda v: len(set(v.calls)) + 1 + len(set(v.calls)),
                          "`tile_sum` never compiles: its precompile fails each search and "
                          "disqualifies it (a CompileFailed, not a CompileFinished)."),
        ],
        code="\n".join(f"tuner(x, out, {m})" for m in v.calls),
        launches=[_tune(v.calls)],
        explanation="One compile per new KernelId across the searches: the cube dim of `scale` "
        "for each n, and cubes of 8 once.",
    )


# -- 8.6 the chapter's exercise 3: guards that nest ---------------------------------------------------
# A program: a list of items, each a launch label ("L1") or (guard, [items]) with guard "dry" or
# "real".

NESTINGS = [
    [("dry", ["L1", ("real", ["L2", ("dry", ["L3"]), "L4"]), "L5"])],
    [("real", ["L1", ("dry", ["L2"]), "L3"]), "L4"],
    [("dry", ["L1", ("real", [("dry", ["L2"]), "L3"])])],
]


def _render(items: list[Any], depth: int = 0) -> list[str]:
    pad = "    " * depth
    out = []
    for it in items:
        if isinstance(it, str):
            out.append(f"{pad}launch()          # {it}")
        else:
            out.append(f"{pad}with {'dry_run' if it[0] == 'dry' else 'real_run'}():")
            out += _render(it[1], depth + 1)
    return out


def _nested(client: Any, program: list[Any]) -> set[str]:
    x, out = floats(client, range(8)), floats(client, [0] * 8)
    ran: set[str] = set()

    def walk(items: list[Any]) -> None:
        for it in items:
            if isinstance(it, str):
                with client.events.record(ev.LaunchDispatched) as rec:
                    scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
                    client.sync()
                if rec.of(ev.LaunchDispatched):
                    ran.add(it)
            else:
                guard = dry_run if it[0] == "dry" else real_run  # noqa: F405
                with guard():
                    walk(it[1])

    walk(program)
    return ran


def _innermost(program: list[Any], inner: str | None = None) -> set[str]:
    """The misconception's rule: the innermost guard alone decides."""
    out: set[str] = set()
    for it in program:
        if isinstance(it, str):
            if inner != "dry":
                out.add(it)
        else:
            out |= _innermost(it[1], it[0])
    return out


@variants("ch08.guards_nest", [dict(program=p) for p in NESTINGS])
def _guards_nest(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch08.guards_nest", "A DryRun inside a RealRun",
        "The Rust chapter asks what happens when a `DryRun` is added inside `real_run_nests`. "
        "Your program (below) makes launches under nested guards, on one thread. Which are "
        "dispatched? Answer with a set of labels, e.g. `{\"L2\"}`.",
        "The verdict is `Execute` unless the process is in a dry run *and* this thread holds no "
        "RealRun. Both are depths: an inner dry run raises the dry-run depth but does not cancel "
        "the RealRun around it; leaving a guard restores the depth, not a saved boolean.",
        nudge="At each launch, write down two numbers: the dry-run depth, and this thread's "
        "RealRun depth.",
        worked="A worked step on another program: `with dry_run(): with real_run(): with "
        "dry_run(): launch()` — dry-run depth 2, RealRun depth 1: Execute. Leave the RealRun and "
        "launch: depth 1 dry, 0 real: Skip.",
        misconceptions=[Misconception("the innermost guard decides",
                                      lambda v: _innermost(v.program),
                                      "That lets the innermost guard decide. A RealRun around a "
                                      "DryRun still holds: the two depths add, and only `dry "
                                      "and no RealRun` skips.")],
        code="\n".join(_render(v.program)),
        value=lambda c: _nested(c, v.program),
        explanation="Execute unless (dry-run depth > 0 and RealRun depth == 0).",
    )


# -- 8.7 the chapter's exercise 1: where does a zero count go? -----------------------------------------

ZERO_LAUNCHES = {
    "Static(0)": (lambda c, cnt0, cnt2: CubeCount.Static(0), False),  # noqa: F405
    "Static(1, 0, 1)": (lambda c, cnt0, cnt2: CubeCount.Static(1, 0, 1), False),  # noqa: F405
    "Static(2)": (lambda c, cnt0, cnt2: CubeCount.Static(2), True),  # noqa: F405
    "Dynamic(cnt0)": (lambda c, cnt0, cnt2: CubeCount.Dynamic(cnt0), True),  # noqa: F405
    "Dynamic(cnt2)": (lambda c, cnt0, cnt2: CubeCount.Dynamic(cnt2), True),  # noqa: F405
}
ZERO_ORDERS = [
    ("Static(0)", "Dynamic(cnt0)", "Static(2)", "Static(1, 0, 1)"),
    ("Dynamic(cnt2)", "Static(1, 0, 1)", "Dynamic(cnt0)", "Static(0)"),
    ("Static(2)", "Static(0)", "Dynamic(cnt2)", "Dynamic(cnt0)"),
]


def _zero_reach(client: Any, order: tuple[str, ...]) -> set[int]:
    y = floats(client, [0] * 8)
    cnt0, cnt2 = client.empty(12), client.empty(12)
    write_count.launch(client, ONE, CubeDim.new_1d(1), BufferArg.from_raw_parts(cnt0, 3), 0)  # noqa
    write_count.launch(client, ONE, CubeDim.new_1d(1), BufferArg.from_raw_parts(cnt2, 3), 2)  # noqa
    client.sync()
    reached = set()
    for i, name in enumerate(order, 1):
        make, _ = ZERO_LAUNCHES[name]
        with client.events.record(ev.CompileStarted, ev.CacheHit) as rec:
            inc.launch(client, make(client, cnt0, cnt2), EIGHT, arg(y))
            client.sync()
        if any(e.kernel == "Inc" for e in rec.events):
            reached.add(i)
    return reached


@variants("ch08.zero_reaches_device", [dict(order=o) for o in ZERO_ORDERS])
def _zero_reaches_device(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch08.zero_reaches_device", "Where does a zero count go?",
        "The Rust chapter's first exercise deletes gate one and launches `CubeCount::Static(0, "
        "1, 1)`. Here the gate stays, but a count it cannot see can be launched: `cnt0` holds "
        "`(0, 1, 1)` and `cnt2` holds `(2, 1, 1)`, both written by a kernel. Your four launches of "
        "`inc` are below. Which of them reach the device thread (a compile or a cache hit there)? "
        "Answer with their numbers, as a set, e.g. `{1, 4}`.",
        "Gate one looks at a *static* count on the calling thread and returns before the "
        "hand-off when a dimension is 0. A dynamic count's value lives in device memory: only "
        "the device thread (or the GPU) can read it, so the launch must cross, and the device "
        "thread must handle a zero itself.",
        nudge="Which counts can the calling thread read, and which only the device?",
        worked="A worked step on another pair: `Static(3, 0, 1)` is gated (LaunchGated, on "
        "your thread); `Dynamic(buf)` crosses whatever `buf` holds — the device thread then "
        "drops a zero (the CPU runtime) or dispatches zero cubes (wgpu).",
        misconceptions=[Misconception(
            "gate one sees every zero count",
            lambda v: {i for i, n in enumerate(v.order, 1) if n in ("Static(2)", "Dynamic(cnt2)")},
            "That stops `Dynamic(cnt0)` on the calling thread. Gate one cannot read a dynamic "
            "count: its value is in device memory, so the launch crosses and the device thread "
            "handles the zero.")],
        code="write_count.launch(client, one, CubeDim.new_1d(1), cnt0, 0)   # cnt0 = (0, 1, 1)\n"
        "write_count.launch(client, one, CubeDim.new_1d(1), cnt2, 2)   # cnt2 = (2, 1, 1)\n"
        + "\n".join(f"inc.launch(client, CubeCount.{n}, eight, y)   # {i}"
                    for i, n in enumerate(v.order, 1)),
        value=lambda c: _zero_reach(c, v.order),
        explanation="Every dynamic count crosses; a static zero never does.",
    )


# -- 8.8 the chapter's exercise 2: a compile failure in a dry run ---------------------------------------

SWEEPS = ["alone", "repaired", "read_after"]


def _precompile_sweep(client: Any, sweep: str) -> dict[str, Any]:
    n = 64
    x = floats(client, range(n))
    out, scratch, y = floats(client, [0] * n), floats(client, [0] * n), floats(client, [0] * n)
    with dry_run():  # noqa: F405  (a tuner's precompile pass, candidate by candidate)
        scale.launch(client, CubeCount.Static(8), EIGHT, arg(x, n), arg(out, n), 2.0)  # noqa
        tile_sum.launch(client, CubeCount.Static(8), EIGHT, arg(x, n), arg(out, n),  # noqa
                        arg(scratch, n))
    if sweep == "repaired":     # the next candidate's measurement writes out as a pure output
        scale.launch(client, CubeCount.Static(8), EIGHT, arg(x, n), arg(out, n), 2.0)  # noqa
    elif sweep == "read_after":  # a real launch reads out after the dry run
        scale.launch(client, CubeCount.Static(8), EIGHT, arg(out, n), arg(y, n), 2.0)  # noqa
    return {"x": x, "out": out, "scratch": scratch, "y": y}


_AFTER = {"alone": "", "repaired": "scale.launch(client, eight_cubes, eight, x, out, 2.0)       "
          "# after the dry run: measured for real",
          "read_after": "scale.launch(client, eight_cubes, eight, out, y, 2.0)       # after the "
          "dry run, for real"}


@variants("ch08.precompile_taints", [dict(sweep=s) for s in SWEEPS])
def _precompile_taints(v: Any) -> FailedBuffersExercise:
    return FailedBuffersExercise(
        "ch08.precompile_taints", "A compile failure in a dry run",
        "An autotune sweep precompiles its candidates under a dry run: first `scale(x → out)`, "
        "then `tile_sum(x → out, scratch)`, which cannot compile; your program (below) may go on "
        "after the dry run. At the end, which of `x`, `out`, `scratch`, `y` carry a failure?",
        "The device thread compiles *before* it looks at the LaunchMode, and a compile failure "
        "claims the declared write set (`buffers_written(None)`: every `SliceMut`) — in a dry "
        "run too. Read-only inputs are never claimed. A later launch repairs a buffer it writes "
        "as a pure output, and is skipped (failing its own outputs) when it reads one.",
        nudge="Does a compile failure inside a dry run touch any buffer? Which ones — and what "
        "does each later launch do to them?",
        worked="A worked step on another sweep: in a dry run, `boom(a → b)` cannot compile: b "
        "(declared writable) carries the failure, a (only read) does not, even though nothing "
        "ran.",
        misconceptions=[
            Misconception("a dry run touches no buffer", set(),
                          "The compile happens before the mode is looked at, and a failed "
                          "compile claims its declared outputs — in a dry run too."),
            Misconception("a compile failure claims every buffer it names",
                          lambda v: {"x", "out", "scratch"} | ({"y"} if v.sweep == "read_after"
                                                               else set()),
                          "Over-claiming the read-only input `x` would make the next "
                          "candidate's legal reads of x fail loudly. `buffers_written(None)` "
                          "names only the writable ones."),
        ],
        code="with dry_run():\n"
        "    scale.launch(client, eight_cubes, eight, x, out, 2.0)\n"
        "    tile_sum.launch(client, eight_cubes, eight, x, out, scratch)   # cannot compile\n"
        + _AFTER[v.sweep],
        program=lambda c: _precompile_sweep(c, v.sweep),
        explanation="The failed compile claims `out` and `scratch` even in a dry run; later "
        "launches repair or propagate it by the usual rules.",
    )
