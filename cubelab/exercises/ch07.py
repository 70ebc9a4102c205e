"""Chapter 7 · Failure is buffer state (CubeCL's chapter on kernel launch and execution: failure is
not a return value but a state on a buffer, the written set's fallback chain, discovery, the
runnable example).

The runtime itself answers: which buffers end failed is `client.check` on each; which calls
raise is found by calling them; what a dry run compiles and claims is counted from its events;
whether a kernel repairs a buffer is found by failing the buffer and relaunching the student's
kernel into it. Every exercise has variants (`students.py`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from cubelab.errors import BufferFailure
from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import (CallsExercise, FailedBuffersExercise, Geometry,
                                     KernelExercise, ValueExercise)
from cubelab.exercises.launching import (EIGHT, ONE, add_one_of_two, add_to_spare, arg, floats,
                                         inc, scale, tile_sum)
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

# -- 7.1 which buffers end failed? -------------------------------------------------------------------
# A program is a list of steps: ("fail", dst) — tile_sum cannot compile into dst;
# ("scale", src, dst) — dst = 2 src, a pure output; ("inc", buf) — buf += 1, read and written.

Step = tuple[str, ...]

FAIL_PROGRAMS: list[list[Step]] = [
    [("fail", "a"), ("scale", "a", "b"), ("scale", "x", "a"), ("inc", "b"), ("scale", "b", "c"),
     ("scale", "x", "d"), ("inc", "d")],
    [("fail", "a"), ("inc", "a"), ("scale", "x", "b"), ("scale", "a", "c"), ("scale", "c", "d"),
     ("inc", "b")],
    [("fail", "b"), ("scale", "b", "a"), ("scale", "x", "b"), ("inc", "a"), ("scale", "a", "c"),
     ("scale", "x", "d")],
]


def _line(step: Step) -> str:
    kind = step[0]
    if kind == "fail":
        return f"tile_sum.launch(client, one, eight, x, {step[1]}, spare)   # cannot compile"
    if kind == "scale":
        return f"scale.launch(client, one, eight, {step[1]}, {step[2]}, 2.0)          " \
               f"# {step[2]} = 2{step[1]}"
    return f"inc.launch(client, one, eight, {step[1]})                  # {step[1]} += 1"


def _run_program(client: Any, program: list[Step]) -> dict[str, Any]:
    bufs = {"x": floats(client, range(8)), "spare": floats(client, [0] * 8)}
    for name in "abcd":
        bufs[name] = floats(client, [0] * 8)
    for step in program:
        if step[0] == "fail":
            tile_sum.launch(client, ONE, EIGHT, arg(bufs["x"]), arg(bufs[step[1]]),
                            arg(bufs["spare"]))
        elif step[0] == "scale":
            scale.launch(client, ONE, EIGHT, arg(bufs[step[1]]), arg(bufs[step[2]]), 2.0)
        else:
            inc.launch(client, ONE, EIGHT, arg(bufs[step[1]]))
    return {n: bufs[n] for n in "abcd"}


def model(program: list[Step], rmw_repairs: bool = False, skip_leaves_clean: bool = False
          ) -> set[str]:
    """The failure rules on paper (for the misconceptions' answers): what a reader of the rules
    predicts, with one rule bent."""
    failed: set[str] = set()
    for step in program:
        if step[0] == "fail":
            failed.add(step[1])
        elif step[0] == "scale":
            src, dst = step[1], step[2]
            if src in failed:
                if skip_leaves_clean:
                    failed.discard(dst)
                else:
                    failed.add(dst)
            else:
                failed.discard(dst)
        elif step[1] in failed and rmw_repairs:
            failed.discard(step[1])
    return failed


@variants("ch07.which_failed", [dict(program=p) for p in FAIL_PROGRAMS])
def _which_failed(v: Any) -> FailedBuffersExercise:
    return FailedBuffersExercise(
        "ch07.which_failed", "Which buffers end failed?",
        "`tile_sum` cannot compile (it asks for more shared memory than a cube has). Read your "
        "program (below) and say which of `a`, `b`, `c`, `d` carry a failure at the end. Answer "
        "with names, e.g. `\"a, d\"`, or `\"none\"`.",
        "A launch that reads a failed buffer is skipped and its outputs point at the root cause; "
        "a launch whose inputs are clean writes its outputs and so repairs them — but only a "
        "*pure* output is not a read: `inc` reads the buffer it writes.",
        nudge="Follow the failure step by step: after each launch, which buffers carry it?",
        worked="A worked step on another program: tile_sum → p; inc p; scale x → p. inc reads p "
        "(failed): skipped, p still failed. scale reads only x and writes p as a pure output: it "
        "runs and repairs p. At the end: none.",
        misconceptions=[
            Misconception("a read-modify-write repairs", lambda v: model(v.program, rmw_repairs=True),
                          "That lets `inc` repair the buffer it writes. `inc` *reads* it first, "
                          "so a failed input skips it: only a pure output repairs."),
            Misconception("a skipped launch leaves its outputs alone",
                          lambda v: model(v.program, skip_leaves_clean=True),
                          "That has a skipped launch's outputs stay clean. A skip claims its "
                          "write set with the same failure, so a reader sees the root cause."),
        ],
        code="\n".join(_line(s) for s in v.program),
        program=lambda c: _run_program(c, v.program),
        explanation="Every failed buffer names `TileSum` as the root cause.",
    )


# -- 7.2 the written set's fallback chain --------------------------------------------------------------

class WrittenCase(NamedTuple):
    second: Any  # the kernel launched after the compile failure
    reads: str  # which buffer it reads: "p_out" (failed) or "x" (clean)


WRITTEN_CASES = [WrittenCase(add_one_of_two, "p_out"), WrittenCase(add_to_spare, "p_out"),
                 WrittenCase(add_one_of_two, "x")]


def _written_sets(client: Any, case: WrittenCase) -> dict[str, Any]:
    x = floats(client, range(8))
    p_out, p_spare = floats(client, [0] * 8), floats(client, [0] * 8)
    q_out, q_spare = floats(client, [0] * 8), floats(client, [0] * 8)
    tile_sum.launch(client, ONE, EIGHT, arg(x), arg(p_out), arg(p_spare))
    src = p_out if case.reads == "p_out" else x
    case.second.launch(client, ONE, EIGHT, arg(src), arg(q_out), arg(q_spare))
    return {"p_out": p_out, "p_spare": p_spare, "q_out": q_out, "q_spare": q_spare}


@variants("ch07.written_set", [dict(case=c) for c in WRITTEN_CASES])
def _written_set(v: Any) -> FailedBuffersExercise:
    c = v.case
    second = c.second.__name__
    stores = "out" if second == "add_one_of_two" else "spare"
    return FailedBuffersExercise(
        "ch07.written_set", "The written set's fallback chain",
        f"Both kernels declare `x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]`. "
        f"`tile_sum` cannot compile; `{second}` compiles, and its body only ever stores to "
        f"`{stores}`. In your program (below) it reads `{c.reads}`. Which of `p_out`, `p_spare`, "
        "`q_out`, `q_spare` end failed?",
        "The written set is: what the compiled IR stores to → else the IO the signature declares "
        "(`SliceMut` is writable) → else every buffer. A compile failure has no IR to ask; a "
        "skipped launch was compiled first (the device thread compiles before it claims), so its "
        "IR answers.",
        nudge="For each launch: does it have an IR the runtime can ask, and which buffers does "
        "that IR (or else the signature) say it writes?",
        worked="A worked step on another pair: `boom(x, a: SliceMut, b: SliceMut)` cannot "
        "compile: no IR, so both a and b (declared writable) carry its failure. A compiled "
        "`copy_a(x, a, b)` that stores only to a, skipped because x failed, fails a and leaves "
        "b as it was.",
        misconceptions=[
            Misconception("a skipped launch claims everything it declares",
                          {"p_out", "p_spare", "q_out", "q_spare"},
                          "That has every launch claim its whole declared IO. A skipped launch "
                          "was compiled before it was skipped: its IR says which buffer it "
                          "stores to, and only that one is claimed."),
            Misconception("a compile failure claims only what it would store",
                          lambda v: {"p_out"} | ({f"q_{'out' if v.case.second is add_one_of_two else 'spare'}"}
                                                 if v.case.reads == "p_out" else set()),
                          "A kernel that did not compile has no IR to say what it would store: "
                          "the declared IO names its write set, `out` *and* `spare`."),
        ],
        code=f"tile_sum.launch(client, one, eight, x, p_out, p_spare)            # no IR\n"
        f"{second}.launch(client, one, eight, {c.reads}, q_out, q_spare)",
        program=lambda cl: _written_sets(cl, c),
        explanation="No IR: the declared IO. Compiled (even when skipped): the IR's stores.",
    )


# -- 7.3 who reports a launch failure? --------------------------------------------------------------

CALLS = {
    "sync()": lambda c, b: c.sync(),
    "check([out])": lambda c, b: c.check([b["out"]]),
    "check([spare])": lambda c, b: c.check([b["spare"]]),
    "check([x])": lambda c, b: c.check([b["x"]]),
    "sync_buffers([out])": lambda c, b: c.sync_buffers([b["out"]]),
    "sync_buffers([x])": lambda c, b: c.sync_buffers([b["x"]]),
    "read_one(out)": lambda c, b: c.read_one(b["out"]),
    "read_one(x)": lambda c, b: c.read_one(b["x"]),
    "read_one(spare)": lambda c, b: c.read_one(b["spare"]),
}

CALL_PROGRAMS = [
    ("sync()", "check([out])", "sync_buffers([x])", "read_one(spare)", "check([x])"),
    ("check([x])", "read_one(out)", "sync()", "check([spare])", "sync_buffers([out])"),
    ("sync_buffers([out])", "check([x])", "read_one(x)", "sync()", "check([out])"),
]


def _discovery(client: Any, calls: tuple[str, ...]) -> dict[str, Callable[[], Any]]:
    b = {"x": floats(client, range(8)), "out": floats(client, [0] * 8),
         "spare": floats(client, [0] * 8)}
    tile_sum.launch(client, ONE, EIGHT, arg(b["x"]), arg(b["out"]), arg(b["spare"]))
    return {str(i): (lambda name=name: CALLS[name](client, b))
            for i, name in enumerate(calls, 1)}


@variants("ch07.who_reports", [dict(calls=c) for c in CALL_PROGRAMS])
def _who_reports(v: Any) -> CallsExercise:
    sync_at = str(v.calls.index("sync()") + 1)
    return CallsExercise(
        "ch07.who_reports", "Who reports a launch failure?",
        "`tile_sum` fails to compile; it declares `x` read-only and `out`, `spare` writable. "
        "Then your five calls (below) are made in turn. Which of them raise `BufferFailure`? "
        "Answer with the calls' numbers, e.g. `\"1, 3\"`, or `\"none\"`.",
        "`sync()` answers for the device (device faults, which no buffer can carry), not for "
        "launches: a launch failure lives on the buffers the launch did not write — its whole "
        "declared write set when it never compiled. `check` is a read check without the read, "
        "`sync_buffers` a barrier and then that check, `read_one` the bytes or the failure. A "
        "read-only input is never claimed.",
        nudge="For each call, ask two things: does it look at buffers at all, and does the "
        "buffer it looks at carry the failure?",
        worked="A worked step on another program: `broken` fails into `dst` (declared "
        "writable), reading `src`. `client.sync()` returns quietly; `client.check([dst])` "
        "raises; `client.read_one(src)` gives src's bytes — src was only read.",
        misconceptions=[Misconception(
            "sync reports the failure",
            lambda v: {str(i) for i, name in enumerate(v.calls, 1)
                       if name == "sync()" or "x" not in name},
            "That has `sync()` raise. It waits for the work and reports device faults only; a "
            "launch failure is found by check, sync_buffers or a read of the buffer that "
            "carries it.")],
        code="tile_sum.launch(client, one, eight, x, out, spare)   # fails to compile\n"
        + "\n".join(f"client.{name:<22}# {i}" for i, name in enumerate(v.calls, 1)),
        calls=lambda c: _discovery(c, v.calls),
        error=BufferFailure,
        explanation=f"Call {sync_at}, `sync()`, returns quietly: a benchmark's sync says nothing "
        "about whether the data is good. The buffers tile_sum declared writable carry its "
        "failure; `x` was only read.",
    )


# -- 7.4 what does a skipped launch cost and claim? ---------------------------------------------------

DRY_CLAIMS = [
    dict(scales=(8, 8, 8), incs=(8,)),
    dict(scales=(8, 4), incs=(8, 8)),
    dict(scales=(4,), incs=(8, 4, 2)),
]


def _dry_run_claims(client: Any, scales: tuple[int, ...], incs: tuple[int, ...]) -> tuple[int, int]:
    x = floats(client, range(8))
    outs = [floats(client, [0] * 8) for _ in scales]
    client.clear_cache()
    with client.events.record(ev.CompileFinished, ev.BufferClaimed) as rec:
        with dry_run():  # noqa: F405
            for o, dim in zip(outs, scales):
                scale.launch(client, CubeCount.Static(8 // dim), CubeDim.new_1d(dim),  # noqa
                             arg(x), arg(o), 2.0)
            for dim in incs:
                inc.launch(client, CubeCount.Static(8 // dim), CubeDim.new_1d(dim),  # noqa
                           arg(outs[0]))
        client.sync()
    return (len(rec.of(ev.CompileFinished)),
            sum(len(e.handle_ids) for e in rec.of(ev.BufferClaimed)))


@variants("ch07.dry_run_claims", DRY_CLAIMS)
def _dry_run_claims_exercise(v: Any) -> ValueExercise:
    code = "with dry_run():\n" + "".join(
        f"    scale.launch(client, CubeCount.Static({8 // d}), CubeDim.new_1d({d}), x, out{i}, 2.0)\n"
        for i, d in enumerate(v.scales)) + "".join(
        f"    inc.launch(client, CubeCount.Static({8 // d}), CubeDim.new_1d({d}), out0)\n"
        for d in v.incs)
    return ValueExercise(
        "ch07.dry_run_claims", "What does a skipped launch cost, and claim?",
        "After `client.clear_cache()`, your launches (below) all run inside `with dry_run():`. "
        "How many compiles happen, and how many buffers are *claimed* (`BufferClaimed` events "
        "name them)? Answer with a pair: `(compiles, claimed buffers)`.",
        "LaunchMode.Skip returns on the device thread right after compile-or-reuse, before the "
        "ExecuteScope opens: a skipped launch does all the compile work (one compile per new "
        "KernelId — kernel and cube dim), runs nothing on the device and claims nothing.",
        nudge="Where on the device thread does a Skip return: before or after the compile? "
        "Before or after the claim?",
        worked="A worked step on another program: in a dry run, `copy` with cube dim 8 twice "
        "and `fill` with cube dim 4 once: two KernelIds, two compiles; no buffer claimed — (2, 0).",
        misconceptions=[
            Misconception("a skipped launch does nothing", (0, 0),
                          "That has the dry run do nothing at all. A skip still compiles and "
                          "fills the cache — that is what a dry run is for (autotune's "
                          "precompile) — it only claims and runs nothing."),
            Misconception("a skipped launch claims its outputs",
                          lambda v: (len({("s", d) for d in v.scales} | {("i", d) for d in v.incs}),
                                     len(v.scales) + len(v.incs)),
                          "That claims each launch's outputs. Skip returns before the "
                          "ExecuteScope opens: no claim, so the buffers keep their old bytes."),
        ],
        code=code,
        value=lambda c: _dry_run_claims(c, v.scales, v.incs),
        explanation="Every new KernelId compiles; nothing is claimed or dispatched.",
    )


# -- 7.5 repair by relaunch ---------------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def reset(a: SliceMut[f32]):  # noqa: F405
    """The template: sets every item to 1 — by reading it first."""
    if ABSOLUTE_POS < a.len():  # noqa: F405
        a[ABSOLUTE_POS] = a[ABSOLUTE_POS] * f32(0.0) + f32(1.0)  # noqa: F405


def _repair_launch(kernel: Any, client: Any, h: dict[str, Any], c: Geometry) -> None:
    """Fail `a` (a compile failure writes it), then relaunch the student's kernel into it."""
    x, spare = floats(client, range(c.n)), floats(client, [0] * c.n)
    tile_sum.launch(client, ONE, EIGHT, arg(x, c.n), arg(h["a"], c.n), arg(spare, c.n))
    c.launch(kernel.launch, client, h, "a")


@variants("ch07.repair", [dict(yours=c) for c in (Geometry(12, 2, 8), Geometry(5, 1, 8),
                                                  Geometry(20, 5, 4))])
def _repair(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch07.repair", "Repair by relaunch",
        "`a` carries the failure of `tile_sum`. `reset` should set every item of `a` to 1.0 and "
        "so repair it — but after it runs, reading `a` still raises. Fix `reset` (the launch is "
        f"fixed: one cube of 8 units on 8 items, and yours: {v.yours}; `a` only).",
        "A launch that *reads* a failed buffer is skipped, and a read-modify-write reads. Only a "
        "pure output — stored, never loaded — is outside the read set, which is exactly how a "
        "relaunch repairs a buffer.",
        (reset,),
        nudge="Does `reset` read `a`? What happens to a launch that reads a failed buffer?",
        worked="A worked step on another kernel: `zero(b)` writing `b[i] = b[i] - b[i]` reads b "
        "and is skipped when b is failed; `b[i] = f32(0.0)` only stores, so it runs and repairs "
        "b.",
        cases=(Geometry(8, 1, 8), v.yours),
        inputs=lambda c: {"a": np.full(c.n, 7.0, np.float32)},
        spec=lambda b, c: {"a": np.ones(c.n, np.float32)},
        launch=_repair_launch,
    )
