"""Chapter 7 — failure is buffer state (seed 001, "failure is not a return value, it is a state on
a buffer", the runnable example, the failure modes).

The runtime itself answers: which buffers end failed is `client.check` on each; which calls
raise is found by calling them; whether a kernel repairs a buffer is found by failing the buffer
and relaunching the student's kernel into it.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from cubelab.errors import BufferFailure
from cubelab.exercises import register
from cubelab.exercises.kinds import (CallsExercise, CountExercise, FailedBuffersExercise,
                                     KernelExercise)
from cubelab.exercises.launching import (EIGHT, ONE, add_one_of_two, arg, floats, inc, scale,
                                         tile_sum)
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _travel(client: Any) -> dict[str, Any]:
    x = floats(client, range(8))
    a, b, c, d, spare = (floats(client, [0] * 8) for _ in range(5))
    tile_sum.launch(client, ONE, EIGHT, arg(x), arg(a), arg(spare))  # fails to compile
    scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
    scale.launch(client, ONE, EIGHT, arg(x), arg(a), 3.0)
    inc.launch(client, ONE, EIGHT, arg(b))
    scale.launch(client, ONE, EIGHT, arg(b), arg(c), 2.0)
    scale.launch(client, ONE, EIGHT, arg(x), arg(d), 2.0)
    inc.launch(client, ONE, EIGHT, arg(d))
    return {"a": a, "b": b, "c": c, "d": d}


register(FailedBuffersExercise(
    "ch07.which_failed",
    "Which buffers end failed?",
    "`tile_sum` cannot compile (it asks for more shared memory than a cube has). Read the "
    "program and say which of `a`, `b`, `c`, `d` carry a failure at the end (answer with names, "
    "e.g. `\"a, d\"`, or `\"none\"`).",
    "A launch that reads a failed buffer is skipped and its outputs point at the root cause; a "
    "launch whose inputs are clean writes its outputs and repairs them — but only a *pure* "
    "output is not a read: `inc` reads the buffer it writes.",
    ("a, b, c", "b", "a"),
    code="tile_sum.launch(client, one, eight, x, a, spare)   # compile failure: a (and spare)\n"
    "scale.launch(client, one, eight, a, b, 2.0)         # b = 2a\n"
    "scale.launch(client, one, eight, x, a, 3.0)         # a = 3x\n"
    "inc.launch(client, one, eight, b)                   # b += 1\n"
    "scale.launch(client, one, eight, b, c, 2.0)         # c = 2b\n"
    "scale.launch(client, one, eight, x, d, 2.0)         # d = 2x\n"
    "inc.launch(client, one, eight, d)                   # d += 1",
    program=_travel,
    explanation="`a` was repaired by `scale` (a pure output). `b` was claimed by the skipped "
    "scale; `inc` reads `b`, so it is skipped too and cannot repair it; `c` is skipped from "
    "`b`. Every one of them names `TileSum` as the root cause.",
))


def _written_sets(client: Any) -> dict[str, Any]:
    x = floats(client, range(8))
    p_out, p_spare = floats(client, [0] * 8), floats(client, [0] * 8)
    q_out, q_spare = floats(client, [0] * 8), floats(client, [0] * 8)
    tile_sum.launch(client, ONE, EIGHT, arg(x), arg(p_out), arg(p_spare))
    add_one_of_two.launch(client, ONE, EIGHT, arg(p_out), arg(q_out), arg(q_spare))
    return {"p_out": p_out, "p_spare": p_spare, "q_out": q_out, "q_spare": q_spare}


register(FailedBuffersExercise(
    "ch07.written_set",
    "The written set's fallback chain",
    "Both kernels declare `x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]`, and "
    "neither ever stores to `spare`. `tile_sum` cannot compile; `add_one_of_two` compiles but "
    "reads `p_out`, which `tile_sum` left failed. Which of `p_out`, `p_spare`, `q_out`, "
    "`q_spare` end failed?",
    "The written set is: what the compiled IR stores to → else the IO the signature declares "
    "(`SliceMut` is writable) → else every buffer. A compile failure has no IR to ask; a "
    "skipped launch was compiled first (the device thread compiles before it claims).",
    ("p_out, q_out", "p_out, p_spare, q_out, q_spare", "p_out"),
    code="tile_sum.launch(client, one, eight, x, p_out, p_spare)            # no IR\n"
    "add_one_of_two.launch(client, one, eight, p_out, q_out, q_spare)  # skipped",
    program=_written_sets,
    explanation="`tile_sum` has no IR, so the declared IO names the write set: both `p_out` "
    "and `p_spare`. `add_one_of_two` was compiled before the skip, so its IR answers: it stores "
    "only to `out` — `q_out` points at the root cause and `q_spare` stays clean.",
))


def _discovery(client: Any) -> dict[str, Callable[[], Any]]:
    x, out, spare = floats(client, range(8)), floats(client, [0] * 8), floats(client, [0] * 8)
    tile_sum.launch(client, ONE, EIGHT, arg(x), arg(out), arg(spare))
    return {"sync": client.sync, "check": lambda: client.check([out]),
            "sync_buffers": lambda: client.sync_buffers([out]),
            "read_one": lambda: client.read_one(out),
            "check_x": lambda: client.check([x])}


register(CallsExercise(
    "ch07.who_reports",
    "Who reports a launch failure?",
    "After `tile_sum` fails to compile into `out`, five calls are made in turn: "
    "`client.sync()`, `client.check([out])`, `client.sync_buffers([out])`, "
    "`client.read_one(out)`, and `client.check([x])` on its input. Which of them raise "
    "`BufferFailure`? (Names: `sync`, `check`, `sync_buffers`, `read_one`, `check_x`.)",
    "`sync()` answers for the device (device faults, which no buffer can carry), not for "
    "launches: a launch failure lives on the buffers the launch did not write. `check` is a "
    "read check without the read, `sync_buffers` a barrier and then that check. A read-only "
    "input is never claimed.",
    ("sync, check, sync_buffers, read_one", "check, read_one", "sync"),
    code="tile_sum.launch(client, one, eight, x, out, spare)\n"
    "client.sync()\nclient.check([out])\nclient.sync_buffers([out])\nclient.read_one(out)\n"
    "client.check([x])",
    calls=_discovery,
    error=BufferFailure,
    explanation="`sync()` returns quietly — the seed's point: a benchmark's sync says nothing "
    "about whether the data is good. The three discovery paths (check, sync_buffers, read) "
    "raise, in increasing cost; `x` was only read, so it is clean.",
))


def _dry_run_claims(client: Any) -> None:
    x = floats(client, range(8))
    outs = [floats(client, [0] * 8) for _ in range(3)]
    with dry_run():  # noqa: F405
        for o in outs:
            scale.launch(client, ONE, EIGHT, arg(x), arg(o), 2.0)
        inc.launch(client, ONE, EIGHT, arg(outs[0]))


register(CountExercise(
    "ch07.dry_run_claims",
    "Step 4: what does a skipped launch claim?",
    "After `client.clear_cache()`, inside `with dry_run():` three launches of `scale` into "
    "three outputs and one `inc` on the first. How many buffers are *claimed* "
    "(`BufferClaimed` events name them)?",
    "LaunchMode.Skip returns on the device thread right after compile-or-reuse, before the "
    "ExecuteScope opens: a skipped launch does all the compile work, runs nothing on the device "
    "and claims nothing.",
    (4, 3, 1),
    code="with dry_run():\n"
    "    for o in outs:\n"
    "        scale.launch(client, one, eight, x, o, 2.0)\n"
    "    inc.launch(client, one, eight, outs[0])",
    launches=[_dry_run_claims],
    count=lambda r: sum(len(e.handle_ids) for e in r.events if isinstance(e, ev.BufferClaimed)),
    what="claimed buffers",
    explanation="Zero: two compiles (`Scale`, `Inc`), four `LaunchSkipped(why=\"dry-run\")`, "
    "no claim, no dispatch — the buffers keep their old bytes.",
))


# -- fix a kernel: repair by relaunch ---------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def reset(a: SliceMut[f32]):  # noqa: F405
    """The template: sets every item to 1 — by reading it first."""
    if ABSOLUTE_POS < a.len():  # noqa: F405
        a[ABSOLUTE_POS] = a[ABSOLUTE_POS] * f32(0.0) + f32(1.0)  # noqa: F405


def _repair_launch(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    """Fail `a` (a compile failure writes it), then relaunch the student's kernel into it."""
    x, spare = floats(client, range(8)), floats(client, [0] * 8)
    tile_sum.launch(client, ONE, EIGHT, arg(x), arg(h["a"]), arg(spare))
    kernel.launch(client, ONE, EIGHT, arg(h["a"]))


register(KernelExercise(
    "ch07.repair",
    "Repair by relaunch",
    "`a` carries the failure of `tile_sum`. `reset` should set every item of `a` to 1.0 and so "
    "repair it — but after it runs, reading `a` still raises. Fix `reset` (the launch is fixed: "
    "one cube of 8 units, `a` only).",
    "A launch that *reads* a failed buffer is skipped, and a read-modify-write reads. Only a "
    "pure output — stored, never loaded — is outside the read set, which is exactly how a "
    "relaunch repairs a buffer.",
    (reset,),
    inputs=lambda: {"a": np.full(8, 7.0, np.float32)},
    spec=lambda b: {"a": np.ones(8, np.float32)},
    launch=_repair_launch,
))
