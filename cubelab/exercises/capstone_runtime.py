"""Capstone of part II (the runtime, chapters 5–8): a three-stage pipeline over batches that
survives what the runtime does to it.

The project, in five graded steps (notebooks/capstone_runtime.ipynb): write the guarded stage
kernel; predict which launches are dispatched when dry runs — one of them on another thread —
meet the batches; predict which buffers carry a failure when a stage fails and the next batch
reuses the intermediates; run two batches on two streams that never wait for each other (a
shared read-only buffer is enough to make them wait); record one batch and replay it on new
inputs. Every check runs the real thing on the student's client: the kernel against numpy on
hidden sizes, the dispatches and failures the runtime reports, the `StreamShared` alignments,
the replays' compiles.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from cubelab.errors import hinted
from cubelab.exercises import Misconception, register, variants
from cubelab.exercises.kinds import CountExercise, FailedBuffersExercise, KernelExercise, RunReport
from cubelab.exercises.puzzle_kinds import ProgramPuzzle, Rule, Trial, buffers_match, compiles
from cubelab.exercises.puzzle_programs import too_big
from cubelab.prelude import (
    ABSOLUTE_POS, BufferArg, CubeCount, CubeDim, Slice, SliceMut, cube, dry_run, f32, real_run)
from cubelab.runtime import events as ev

N = 24  # items per batch
CUBES, UNITS = CubeCount.Static(2), CubeDim.new_1d(16)


def _arg(h: Any, n: int = N) -> Any:
    return BufferArg.from_raw_parts(h, n)


def floats(client: Any, values: Any) -> Any:
    return client.create_from_slice(f32.as_bytes(np.asarray(values, np.float32)))


def batch(b: int, n: int = N) -> np.ndarray:
    """Batch b's inputs."""
    return ((np.arange(n) * (b + 3)) % 11 - 4).astype(np.float32)


def pipeline_spec(x: np.ndarray) -> np.ndarray:
    """What the three stages compute: y = 0.5 · relu(2x − 5) + 1."""
    return 0.5 * np.maximum(2 * x - 5, 0) + 1


# -- the pipeline's kernels (the notebook defines the same ones) ----------------------------------

@cube(launch=True)
def scale_shift(x: Slice[f32], out: SliceMut[f32], a: f32, b: f32):
    """out = a · x + b, guarded (the reference for step 1)."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + b


@cube(launch=True)
def relu(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = max(x[ABSOLUTE_POS], f32(0.0))


@cube(launch=True)
def affine_p(x: Slice[f32], p: Slice[f32], out: SliceMut[f32]):
    """out = p[0] · x + p[1]: the parameters in a buffer, as a model's weights would be."""
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = p[0] * x[ABSOLUTE_POS] + p[1]


def stage(client: Any, k: int, src: Any, dst: Any, fail: bool = False) -> None:
    """Stage k (1, 2, 3) of the pipeline from `src` into `dst`; `fail`: `too_big` instead."""
    if fail:
        too_big.launch(client, CUBES, UNITS, _arg(src), _arg(dst))
    elif k == 1:
        scale_shift.launch(client, CUBES, UNITS, _arg(src), _arg(dst), 2.0, -5.0)
    elif k == 2:
        relu.launch(client, CUBES, UNITS, _arg(src), _arg(dst))
    else:
        scale_shift.launch(client, CUBES, UNITS, _arg(src), _arg(dst), 0.5, 1.0)


def run_batch(client: Any, x: Any, t: Any, u: Any, y: Any) -> None:
    """x → t → u → y."""
    stage(client, 1, x, t)
    stage(client, 2, t, u)
    stage(client, 3, u, y)


# -- step 1: the stage kernel ---------------------------------------------------------------------

@cube(launch=True)
def scale_shift_template(x: Slice[f32], out: SliceMut[f32], a: f32, b: f32):
    pass


@cube(launch=True)
def scale_shift_unguarded(x: Slice[f32], out: SliceMut[f32], a: f32, b: f32):
    out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + b


@cube(launch=True)
def scale_shift_fixed_size(x: Slice[f32], out: SliceMut[f32], a: f32, b: f32):
    if ABSOLUTE_POS < 24:
        out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + b


_SIZES = [(24, 2, 16), (13, 1, 16), (40, 3, 16), (7, 1, 8)]  # items, cubes, units


def _stage_inputs(case: tuple[int, int, int]) -> dict[str, np.ndarray]:
    return {"x": batch(1, case[0]), "out": np.full(case[0], -1.0, np.float32)}


def _stage_launch(kernel: Any, client: Any, h: dict[str, Any], case: tuple[int, int, int]) -> None:
    n, cubes, units = case
    kernel.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(units),
                  _arg(h["x"], n), _arg(h["out"], n), 2.0, -5.0)


@variants("capstone_runtime.stage", [dict(yours=s) for s in _SIZES[1:]])
def _stage(v: Any) -> KernelExercise:
    n, cubes, units = v.yours
    return KernelExercise(
        "capstone_runtime.stage", "Step 1 · The stage kernel",
        "Write `scale_shift(x, out, a: f32, b: f32)`: `out = a · x + b`. Batches do not fill "
        f"the launch: it runs on 24 items in 2 cubes of 16 units, and on yours: {n} items in "
        f"{cubes} cube(s) of {units}. The check compares with numpy and re-runs it with every "
        "access recorded: no unit may step past the end of a buffer.",
        "More units than items: the units past the end must touch nothing. Guard with the "
        "buffer's own length (`out.len()`), not a number written in — the batch size changes.",
        (scale_shift_template, scale_shift_unguarded, scale_shift_fixed_size),
        nudge="How many units does the launch run, and how many items are there?",
        worked="10 items in one cube of 16: units 10–15 must skip; `if ABSOLUTE_POS < "
        "out.len():` does it for any size.",
        inputs=_stage_inputs, spec=lambda b, case: {"out": 2.0 * b["x"] - 5.0},
        launch=_stage_launch, cases=[_SIZES[0], v.yours])


# -- step 2: which batches are dispatched ---------------------------------------------------------

def dispatch_program(v: Any) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        x = floats(client, batch(0))
        t, u, y = (floats(client, np.zeros(N)) for _ in range(3))
        if v.warm_up == "dry":
            with dry_run():
                run_batch(client, x, t, u, y)
        else:
            run_batch(client, x, t, u, y)
        for b in range(1, 5):
            how = v.batches.get(b, "real")
            if how == "dry":
                with dry_run():
                    run_batch(client, x, t, u, y)
            elif how == "dry+real":
                with dry_run(), real_run():
                    run_batch(client, x, t, u, y)
            elif how == "other thread":
                entered, done = threading.Event(), threading.Event()

                def monitor() -> None:
                    with dry_run():
                        entered.set()
                        done.wait(10)

                th = threading.Thread(target=monitor)
                th.start()
                entered.wait(10)
                try:
                    run_batch(client, x, t, u, y)
                finally:
                    done.set()
                    th.join()
            else:
                run_batch(client, x, t, u, y)
        client.sync()
    return run


def _dispatch_code(v: Any) -> str:
    lines = [("with dry_run():\n    run_batch(...)   # the warm-up" if v.warm_up == "dry"
              else "run_batch(...)                       # the warm-up")]
    for b in range(1, 5):
        how = v.batches.get(b, "real")
        lines.append({"real": f"run_batch(...)                       # batch {b}",
                      "dry": f"with dry_run():\n    run_batch(...)   # batch {b}",
                      "dry+real": f"with dry_run(), real_run():\n    run_batch(...)   # batch {b}",
                      "other thread": f"run_batch(...)                       # batch {b}, while "
                                      "another thread sits inside `with dry_run():`"}[how])
    return "\n".join(lines)


def _dispatched(v: Any) -> int:
    runs = (v.warm_up != "dry") + sum(1 for b in range(1, 5)
                                      if v.batches.get(b, "real") in ("real", "dry+real"))
    return 3 * runs


_DISPATCH_VARIANTS = [dict(warm_up="dry", batches={2: "dry"}),
                      dict(warm_up="dry", batches={2: "dry", 3: "dry", 4: "dry+real"}),
                      dict(warm_up="real", batches={3: "other thread"})]


@variants("capstone_runtime.dispatched", _DISPATCH_VARIANTS)
def _dispatched_ex(v: Any) -> CountExercise:
    return CountExercise(
        "capstone_runtime.dispatched", "Step 2 · Which batches run?",
        "`run_batch` launches the three stages. The program below runs a warm-up and four "
        "batches under the guards shown. How many launches are dispatched (reach the device)?",
        "The launch mode is decided on the calling thread at each launch: skip when the "
        "process is inside a dry run *and* this thread holds no `real_run()`. The dry-run depth "
        "belongs to the process, not the thread: a dry run entered on another thread skips "
        "this thread's launches too; a `real_run()` is per thread and wins.",
        (), nudge="For each `run_batch`, at the moment it launches: is the process inside a dry "
        "run, and does this thread hold a real run?",
        worked="Another program: `with dry_run(): run_batch()`, then `run_batch()` while a "
        "second thread sits in a dry run, then `with real_run(): run_batch()` while it still "
        "does: 0 + 0 + 3 = 3 dispatches.",
        misconceptions=[
            Misconception("a dry run on another thread does not matter", lambda v: (
                _dispatched(v) + 3 if "other thread" in v.batches.values() else 15),
                "The dry-run depth is the process's: any thread's dry run skips every thread's "
                "launches that hold no real run."),
            Misconception("a real run inside a dry run is skipped too", lambda v: (
                _dispatched(v) - 3 if "dry+real" in v.batches.values() else 0),
                "`real_run()` makes this thread's launches run whatever the dry-run depth."),
            Misconception("every launch is dispatched", 15, "A launch in a dry run is compiled "
                          "and skipped.")],
        code=_dispatch_code(v), launches=[dispatch_program(v)],
        count=RunReport.dispatched, what="dispatched launches",
        explanation="Three per batch that ran: the others were compiled (or found in the cache) "
        "and skipped.")


# -- step 3: which buffers carry a failure --------------------------------------------------------

def failure_program(v: Any) -> Callable[[Any], dict[str, Any]]:
    def run(client: Any) -> dict[str, Any]:
        x1, x2 = floats(client, batch(1)), floats(client, batch(2))
        t, u, y, y2 = (floats(client, np.zeros(N)) for _ in range(4))
        stage(client, 1, x1, t, fail=v.fails == 1)
        stage(client, 2, t, u, fail=v.fails == 2)
        stage(client, 3, u, y)
        srcs = {1: x2, 2: t, 3: u}
        dsts = {1: t, 2: u, 3: y2}
        for k in v.reruns:  # batch 2 reuses the intermediates t and u
            stage(client, k, srcs[k], dsts[k])
        return {"t": t, "u": u, "y": y, "y2": y2}
    return run


def _failure_code(v: Any) -> str:
    names = {1: "x1 → t", 2: "t → u", 3: "u → y"}
    lines = [f"stage {k}: {names[k]}" + ("   # too_big instead: its compile fails"
                                          if v.fails == k else "") for k in (1, 2, 3)]
    second = {1: "x2 → t", 2: "t → u", 3: "u → y2"}
    lines += [f"batch 2, stage {k}: {second[k]}" for k in v.reruns]
    return "\n".join(lines)


@variants("capstone_runtime.failed", [dict(fails=1, reruns=(1, 2, 3)),
                                      dict(fails=1, reruns=(2, 3)),
                                      dict(fails=2, reruns=(3,))])
def _failed(v: Any) -> FailedBuffersExercise:
    return FailedBuffersExercise(
        "capstone_runtime.failed", "Step 3 · A stage fails",
        "In batch 1 one stage is `too_big` (its compile fails). Batch 2 then reruns some "
        "stages, reusing the intermediates `t` and `u` (printed below). Which of `t`, `u`, `y`, "
        "`y2` carry a failure at the end?",
        "A failed launch fails the buffers it would write; a launch that reads a failed buffer "
        "is skipped and fails its outputs with the same root cause; a launch that writes a "
        "buffer as a pure output from clean inputs repairs it.",
        ("none", "y2"),
        nudge="Walk the launches in order, keeping a set of failed buffers: a launch reading one "
        "adds its output; a clean launch removes its output.",
        worked="Stages `p → q` (fails), `q → r`; then `p → q` again: q is repaired by the "
        "rerun, r stays failed — nothing rewrote it.",
        code=_failure_code(v), program=failure_program(v),
        explanation="Each failed buffer names `too_big` as its root cause.")


# -- step 4: two batches, two streams, no waiting -------------------------------------------------

_PARAMS = np.array([2.0, -5.0], np.float32)


def _play_streams(answer: Any, client: Any, trial: Trial) -> None:
    xs = [floats(client, batch(b)) for b in (1, 2)]
    ys = [floats(client, np.zeros(N)) for _ in range(2)]
    answer(client, xs, ys, _PARAMS.copy())
    client.sync()
    for i, y in enumerate(ys, 1):
        trial.read(f"y{i}", y)


def _streams_used(t: Trial) -> str | None:
    used = {e.stream for e in t.events if isinstance(e, ev.LaunchIssued)}
    return None if len(used) >= 2 else "every launch ran on one stream."


def _no_waiting(t: Trial) -> str | None:
    shared = t.report.of(ev.StreamShared)
    return None if not shared else (f"{len(shared)} binding(s) crossed streams (`StreamShared`): "
                                    "a stream had to flush for the other.")


_STREAMS_FIRST = '''def run_two(client, xs, ys, params):
    # FILL ME IN: batch i on a stream of its own; the streams must never wait for each other
    p = client.create_from_slice(f32.as_bytes(params))
    for i, (x, y) in enumerate(zip(xs, ys), 1):
        t = client.empty(24 * 4)
        with stream(i):
            affine_p.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                            BufferArg.from_raw_parts(x, 24), BufferArg.from_raw_parts(p, 2),
                            BufferArg.from_raw_parts(t, 24))
            relu.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                        BufferArg.from_raw_parts(t, 24), BufferArg.from_raw_parts(y, 24))
'''


def _define(source: str, name: str) -> Any:
    import linecache

    text = ("import numpy as np\nfrom cubelab.prelude import *\n"
            "from cubelab.exercises.capstone_runtime import affine_p, relu\n" + source)
    filename = f"<capstone_runtime {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - our own template text
    return ns[name]


_STREAMS_ONE = '''def run_two(client, xs, ys, params):
    p = client.create_from_slice(f32.as_bytes(params))
    for x, y in zip(xs, ys):
        t = client.empty(24 * 4)
        affine_p.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                        BufferArg.from_raw_parts(x, 24), BufferArg.from_raw_parts(p, 2),
                        BufferArg.from_raw_parts(t, 24))
        relu.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                    BufferArg.from_raw_parts(t, 24), BufferArg.from_raw_parts(y, 24))
'''

register(ProgramPuzzle(
    "capstone_runtime.two_streams", "Step 4 · Two batches that never wait", "",
    "Streams depend on each other through buffers: a launch whose buffer was last touched on "
    "another stream flushes that stream first (`StreamShared`). The rule sees buffers, not "
    "whether they are only read: two streams reading one parameter buffer still wait for each "
    "other. Give each stream its own copy of what both read.",
    (_define(_STREAMS_FIRST, "run_two"), _define(_STREAMS_ONE, "run_two")),
    nudge="Which buffer do both streams' launches name?",
    worked="Two streams each running `neg(x_i → y_i)` and both reading a lookup table `lut`: "
    "one `StreamShared` per switch; with `lut1`, `lut2` made from the same data, none.",
    story="Each batch runs `affine_p` (parameters `p = [2, −5]` in a buffer, as a model's "
    "weights would be) then `relu`: `y = relu(2x − 5)`. Write `run_two(client, xs, ys, params)` "
    "so batch i runs on a stream of its own (`with stream(i):`), the two streams **never "
    "wait for each other** (zero `StreamShared` events) and the values are right. `params` is "
    "the parameters as a numpy array.",
    template=_STREAMS_FIRST + "\nanswer = ...\n", play=_play_streams,
    params=("client", "xs", "ys", "params"),
    rules=(buffers_match(lambda t: {f"y{i}": np.maximum(2 * batch(b) - 5, 0)
                                    for i, b in ((1, 1), (2, 2))}),
           Rule("at least two streams", _streams_used),
           Rule("no binding shared across streams", _no_waiting)),
    program="xs = [batch 1, batch 2]; ys = [zeros, zeros]\n"
    "answer(client, xs, ys, np.array([2.0, -5.0], np.float32))",
))


# -- step 5: record one batch, replay it on new ones ----------------------------------------------

def _play_replay(answer: Any, client: Any, trial: Trial) -> None:
    x, y = floats(client, np.zeros(N)), floats(client, np.zeros(N))
    with trial.watch("record"):
        graph = answer(client, x, y)
    if not hasattr(graph, "replay"):
        raise TypeError(hinted(f"`record` returned {graph!r}, not the graph of `stop_capture()`",
                               "end `record` with `return client.stop_capture()`"))
    trial.notes["recorded"] = len(graph)
    with trial.watch("replays"):
        for b in (1, 2, 3):
            client.write(x, batch(b).tobytes())
            graph.replay()
            trial.read(f"y of batch {b}", y)


def _three_launches(t: Trial) -> str | None:
    n = t.notes["recorded"]
    return None if n == 3 else f"the graph holds {n} launch{'es' * (n != 1)}."


_REPLAY_FIRST = '''def record(client, x, y):
    # FILL ME IN: record the three stages once; the check replays the graph on new batches
    t, u = client.empty(24 * 4), client.empty(24 * 4)
    run_batch(client, x, t, u, y)
    return None
'''


def _define_replay(source: str) -> Any:
    import linecache

    text = ("import numpy as np\nfrom cubelab.prelude import *\n"
            "from cubelab.exercises.capstone_runtime import run_batch\n" + source)
    filename = "<capstone_runtime record>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - our own template text
    return ns["record"]


_REPLAY_TWICE = '''def record(client, x, y):
    t, u = client.empty(24 * 4), client.empty(24 * 4)
    client.start_capture()
    run_batch(client, x, t, u, y)
    run_batch(client, x, t, u, y)
    return client.stop_capture()
'''

register(ProgramPuzzle(
    "capstone_runtime.replay", "Step 5 · Record one batch, replay the rest", "",
    "A capture window records launches instead of running them; `stop_capture()` seals them "
    "into a graph whose `replay()` submits them all at once, against the same buffers — so new "
    "inputs are written into those buffers between replays. Buffers made without host data "
    "(`client.empty`) may be made before the window or inside it.",
    (_define_replay(_REPLAY_FIRST), _define_replay(_REPLAY_TWICE)),
    nudge="What turns launches into a graph instead of running them?",
    worked="Recording `neg(x → y)`: `client.start_capture(); neg.launch(...); graph = "
    "client.stop_capture()`, then `client.write(x, data); graph.replay()` for each input.",
    story="Write `record(client, x, y)`: it returns a graph (`client.stop_capture()`) of **the "
    "three stages once** (`run_batch(client, x, t, u, y)` with intermediates of your own). The "
    "check writes batches 1, 2, 3 into `x` and replays the graph after each: `y` must be the "
    "pipeline's output each time, and the replays must compile nothing.",
    template=_REPLAY_FIRST + "\nanswer = ...\n", play=_play_replay, params=("client", "x", "y"),
    rules=(Rule("a graph of the three stages", _three_launches),
           buffers_match(lambda t: {f"y of batch {b}": pipeline_spec(batch(b))
                                    for b in (1, 2, 3)}),
           compiles(0, window="replays")),
    program="graph = answer(client, x, y)\n"
    "for b in (1, 2, 3):\n"
    "    client.write(x, batch(b).tobytes())\n"
    "    graph.replay()\n"
    "    read y",
))
