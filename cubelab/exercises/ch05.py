"""Chapter 5 — bounds (seed 000, "launch and launch_unchecked"): what `launch` does with an index
past the end, under the seed's 0.11.3 rule (the default) and under the fixed rule, and the guard
a kernel must therefore carry itself.

Every answer is decided by launching: the counts come from the buffers the launches leave, the
kernels are run against numpy and, on the CPU runtime, with every index checked (`KernelExercise`
re-runs them in "report" mode, since on wgpu an out-of-bounds read quietly gives 0).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from cubelab.exercises import register
from cubelab.exercises.kinds import CountExercise, KernelExercise, KernelIdDiffExercise
from cubelab.exercises.seed000 import add  # seed 000's `add`: no bounds guard of its own
from cubelab.prelude import *  # noqa: F403

X6 = np.array([1, 2, 3, 4, 5, 6], dtype=np.float32)
Y6 = np.array([10, 20, 30, 40, 50, 60], dtype=np.float32)


@contextmanager
def checked_io(client: Any, rule: str | None) -> Iterator[None]:
    """Run the block under a CheckedIo rule (None: the client's current one), then put the
    client's rule back as it was (changing it clears the pipeline cache)."""
    before = client.compilation_options().checked_io
    if rule is None or rule == before:
        yield
        return
    client.set_compilation_options(checked_io=rule)
    try:
        yield
    finally:
        client.set_compilation_options(checked_io=before)


def run_oob(client: Any, checked: bool, rule: str | None = None) -> np.ndarray:
    """Seed 000's out-of-bounds program: x, y of 6 items, out of 8, 8 units — units 6 and 7 read
    x[6], x[7] (and y's). `checked` picks `launch` or `launch_unchecked`."""
    with checked_io(client, rule):
        xh = client.create_from_slice(f32.as_bytes(X6))  # noqa: F405
        yh = client.create_from_slice(f32.as_bytes(Y6))  # noqa: F405
        out = client.create_from_slice(f32.as_bytes(np.full(8, -1, np.float32)))  # noqa: F405
        launcher = add.launch if checked else add.launch_unchecked
        launcher[f32](client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                      BufferArg.from_raw_parts(xh, 6), BufferArg.from_raw_parts(yh, 6),  # noqa
                      BufferArg.from_raw_parts(out, 8), False)  # noqa: F405
        return f32.from_bytes(client.read_one(out))  # noqa: F405


register(KernelIdDiffExercise(
    "ch05.two_launchers",
    "Two launchers, two KernelIds",
    "`add.launch[f32]` and `add.launch_unchecked[f32]` are called with the same arguments (the "
    "seed's out-of-bounds program). Which fields of the KernelId differ between the two "
    "launches? (Answer with field names, e.g. `\"cube_dim\"`, or `\"none\"`.)",
    "`#[cube(launch, launch_unchecked)]` generates two functions that differ only in what they "
    "put into KernelSettings. Everything else — the kernel type, the cube dim, the Info "
    "(element type, Comptime `relu`) — is the same.",
    ("none", "mode, relu", "cube_dim"),
    code="run_oob(client, checked=True)    # add.launch[f32]\n"
    "run_oob(client, checked=False)   # add.launch_unchecked[f32]",
    first=lambda c: run_oob(c, checked=True),
    second=lambda c: run_oob(c, checked=False),
    explanation="Only `mode` (Checked vs Unchecked): a second compile — even though, under "
    "0.11.3's rule, the two compile to the same code apart from the entry name.",
))


def _zeros(report: Any) -> int:
    return int(np.count_nonzero(report.outputs[-1] == 0.0))


register(CountExercise(
    "ch05.default_rows",
    "Seed 000's out-of-bounds rows, default settings",
    "With cubelab's default settings, `add.launch` (Checked) runs seed 000's program: `x` and "
    "`y` hold 6 items, `out` 8, and 8 units each add `x[ABSOLUTE_POS] + y[ABSOLUTE_POS]` — so "
    "units 6 and 7 read past the end of `x` and `y`. How many of the 8 items of `out` end up "
    "`0.0`?",
    "Under the default (the seed's 0.11.3 rule) the CheckedIo pass matches index ops whose base "
    "*is* a runtime array, but a global buffer is a *pointer to* one: the pass never fires, "
    "nothing is clamped, and a read past the end gives what the runtime gives for it. On "
    "WebGPU (and the CPU runtime, which copies it) that is 0.",
    (0, 8),
    code="run_oob(client, checked=True)   # add.launch[f32], 8 units, x and y of 6 items",
    launches=[lambda c: run_oob(c, checked=True)],
    count=_zeros, what="zeros",
    explanation="Units 6 and 7 read x[6], x[7] and y[6], y[7] past the end and get 0, exactly "
    "the seed's row `oob checked=true out = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]`.",
))

register(CountExercise(
    "ch05.fixed_rule_unchecked",
    "The fixed rule, and launch_unchecked",
    "Now switch to the clamping rule CubeCL intends (`checked_io=\"fixed\"`: every checked index "
    "becomes `min(index, len - 1)`) and run the same program, but with `launch_unchecked`. How "
    "many of the 8 items of `out` end up `0.0`?",
    "The rule only rewrites index ops marked *checked*, and only `launch` (ExecutionMode."
    "Checked) marks them. `launch_unchecked` is ExecutionMode.Unchecked: no rule clamps "
    "anything there, whichever you choose.",
    (0,),
    code='with checked_io(client, "fixed"):\n    run_oob(client, checked=False)',
    launches=[lambda c: run_oob(c, checked=False, rule="fixed")],
    count=_zeros, what="zeros",
    explanation="launch_unchecked is never clamped: out[6] and out[7] are 0 under both rules. "
    "With `launch` and the fixed rule they would be 66.0 (x[5] + y[5]).",
))


def _clamps(client: Any) -> int:
    """How many index ops the fixed rule rewrote in `add` (read from the compile event)."""
    from cubelab.runtime import events as ev

    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        run_oob(client, checked=True, rule="fixed")
    (compiled,) = [c for c in rec.of(ev.CompileFinished) if c.kernel == "Add"]
    (_, before, after) = next(p for p in compiled.passes if p[0] == "checked-io")
    return after.count("arith.min") - before.count("arith.min")


register(CountExercise(
    "ch05.clamps",
    "How many clamps does the fixed rule insert?",
    "Under `checked_io=\"fixed\"`, the CheckedIo pass turns every checked index op of `add` "
    "(relu=False) into `min(index, len - 1)`. How many `arith.min` ops does the pass add to "
    "the IR? (The compile event carries the IR before and after each pass.)",
    "Count the indexing expressions in the branch that reaches the IR: `relu` is Comptime, so "
    "only one of the two `out[...] =` lines is expanded. Reads and writes are both indexed.",
    (2, 4),
    code='with checked_io(client, "fixed"):\n    run_oob(client, checked=True)',
    launches=[_clamps], count=lambda r: r.outputs[-1], what="min ops",
    explanation="x[ABSOLUTE_POS], y[ABSOLUTE_POS] and out[ABSOLUTE_POS]: three index ops, "
    "three clamps. The relu=True branch never reached the IR.",
))


# -- fix a kernel ---------------------------------------------------------------------------------
# The templates, as the notebook's answer cells give them (each is the exercise's wrong answer).

@cube(launch=True)  # noqa: F405
def add6(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def reverse(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[x.len() - i]


def _add_inputs() -> dict[str, np.ndarray]:
    return {"x": X6.copy(), "y": Y6.copy(), "out": np.full(6, -1, np.float32)}


def _add_launch(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    kernel.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                  BufferArg.from_raw_parts(h["x"], 6), BufferArg.from_raw_parts(h["y"], 6),  # noqa
                  BufferArg.from_raw_parts(h["out"], 6))  # noqa: F405


register(KernelExercise(
    "ch05.add_the_guard",
    "Add the guard",
    "`add6` runs on 6 items with a cube of 8 units (the geometry is fixed: 8 is what the "
    "hardware likes). Units 6 and 7 have no item. Make the kernel correct *and* keep every unit "
    "inside the buffers: under the default rule, `launch` clamps nothing.",
    "On wgpu the stray reads give 0 and the stray writes are dropped, so the values can look "
    "right while units 6 and 7 still touch memory past the end. The seed's advice for 0.11.3: "
    "the kernel carries its own guard, `if ABSOLUTE_POS < out.len():`.",
    wrong=(add6,),
    inputs=_add_inputs,
    spec=lambda b: {"out": b["x"] + b["y"]},
    launch=_add_launch,
))


def _reverse_inputs() -> dict[str, np.ndarray]:
    return {"x": np.arange(1, 7, dtype=np.float32), "out": np.full(6, -1, np.float32)}


def _reverse_launch(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    kernel.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                  BufferArg.from_raw_parts(h["x"], 6), BufferArg.from_raw_parts(h["out"], 6))  # noqa


register(KernelExercise(
    "ch05.fix_the_oob",
    "Fix the out-of-bounds read",
    "`reverse` should write `x` back to front: `out[i] = x[n - 1 - i]`. It has a guard, but the "
    "CPU runtime's report (run the cell above the exercise) shows a unit reading past the end "
    "of `x`. Fix the index.",
    "Look at unit 0: with n = 6 it must read the last item, x[5]. Indices are u32, and the "
    "last valid one is `x.len() - 1`.",
    wrong=(reverse,),
    inputs=_reverse_inputs,
    spec=lambda b: {"out": b["x"][::-1].copy()},
    launch=_reverse_launch,
))
