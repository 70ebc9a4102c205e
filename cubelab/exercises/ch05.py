"""Chapter 5 · Bounds (CubeCL's chapter on `#[cube]` kernels: `launch` and `launch_unchecked`):
what `launch` does with an index past the end, under CubeCL 0.11.3's rule (the default) and under
the fixed rule, and the guard a kernel must therefore carry itself.

Every answer is decided by launching: the rows come from the buffers the launches leave; the
kernels are run against numpy on two launches (the chapter's and the student's) and re-run on the
CPU runtime with every access recorded, since on wgpu an out-of-bounds read quietly gives 0.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, NamedTuple

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import Geometry, KernelExercise, ValueExercise
from cubelab.exercises.seed000 import add  # CubeCL's `add`: no bounds guard of its own
from cubelab.prelude import *  # noqa: F403


@contextmanager
def checked_io(client: Any, rule: str | None) -> Iterator[None]:
    """Run the block under a CheckedIo rule (None: the client's current one), then put the
    client's rule back as it was (changing it clears the pipeline cache)."""
    before = client.device.server.options.checked_io
    if rule is None or rule == before:
        yield
        return
    client.set_compilation_options(checked_io=rule)
    try:
        yield
    finally:
        client.set_compilation_options(checked_io=before)


class Oob(NamedTuple):
    """The out-of-bounds program: x and y of `n` items, out of `m`, `units` units in cubes of
    at most 8 — units from n on read past the end of x and y."""

    n: int
    m: int
    units: int

    def __str__(self) -> str:
        return f"x, y of {self.n} items, out of {self.m}, {self.units} units"


def run_oob(client: Any, checked: bool, p: Oob = Oob(6, 8, 8), rule: str | None = None) -> list[float]:
    """`add` on the out-of-bounds program `p`; `checked` picks `launch` or `launch_unchecked`;
    `rule` a CheckedIo rule for this run (None: the client's)."""
    xs = np.arange(1, p.n + 1, dtype=np.float32)
    with checked_io(client, rule):
        x = client.create_from_slice(f32.as_bytes(xs))  # noqa: F405
        y = client.create_from_slice(f32.as_bytes(xs * 10))  # noqa: F405
        out = client.create_from_slice(f32.as_bytes(np.full(p.m, -1, np.float32)))  # noqa
        launcher = add.launch if checked else add.launch_unchecked
        per = min(p.units, 8)
        launcher[f32](client, CubeCount.Static(p.units // per), CubeDim.new_1d(per),  # noqa
                      BufferArg.from_raw_parts(x, p.n), BufferArg.from_raw_parts(y, p.n),  # noqa
                      BufferArg.from_raw_parts(out, p.m), False)  # noqa: F405
        return f32.from_bytes(client.read_one(out)).tolist()  # noqa: F405


def _zeros(values: list[float]) -> list[int]:
    return [i for i, v in enumerate(values) if v == 0.0]


def _past(p: Oob) -> list[int]:
    """The items written by units that read past the end."""
    return list(range(p.n, min(p.m, p.units)))


# -- 5.1 which items end 0.0, default rule ---------------------------------------------------------

OOB_YOURS = [Oob(5, 7, 8), Oob(3, 4, 8), Oob(10, 14, 16), Oob(6, 7, 8)]


@variants("ch05.default_zeros", [dict(p=p) for p in OOB_YOURS])
def _default_zeros(v: Any) -> ValueExercise:
    p = v.p
    return ValueExercise(
        "ch05.default_zeros", "Past the end, default settings",
        f"With cubelab's default settings, `add.launch` (Checked) runs your out-of-bounds "
        f"program: {p} — each unit adds `x[ABSOLUTE_POS] + y[ABSOLUTE_POS]` into "
        f"`out[ABSOLUTE_POS]`, and `x` holds 1, 2, 3, ..., `y` ten times that. Which items of "
        "`out` end up `0.0`? Answer with a list of indices (`[]` for none).",
        "In Checked mode the CheckedIo pass is meant to clamp every checked index to `len - 1`. "
        "Under CubeCL 0.11.3's rule (the default) it only matches an index whose base *is* a "
        "runtime array, and a global buffer is a *pointer to* one: nothing is clamped. A read "
        "past the end then gives what the platform gives: 0 on WebGPU (and on the CPU runtime, "
        "which copies it).",
        nudge="Which units have an item of x and y, which only an item of out, and which "
        "neither? What does a read past the end give here?",
        worked="A worked step on another program: x, y of 2 items, out of 4, 4 units. Units 2 "
        "and 3 read x[2], x[3] past the end: 0 each, so out[2] and out[3] are 0.0 + 0.0.",
        misconceptions=[
            Misconception("launch clamps the index", [],
                          "That has `launch` clamp x[i] to x[len - 1], so no item is 0. Under "
                          "CubeCL 0.11.3's rule the pass never fires on a global buffer."),
            Misconception("every unit writes, even past out's end", lambda v: list(
                range(v.p.n, v.p.units)),
                "Some of those items are not in `out`: a write past its end is dropped."),
        ],
        code=f"run_oob(client, checked=True, p=Oob(n={p.n}, m={p.m}, units={p.units}))",
        value=lambda c: _zeros(run_oob(c, True, p)),
        explanation="Nothing clamps: the units past the end of x and y read 0.",
    )


# -- 5.2 the fixed rule, both launchers ------------------------------------------------------------

FIXED_YOURS = [Oob(4, 8, 8), Oob(6, 8, 8), Oob(9, 12, 16)]


def _fixed_zeros(client: Any, p: Oob) -> tuple[list[int], list[int]]:
    return (_zeros(run_oob(client, True, p, "fixed")), _zeros(run_oob(client, False, p, "fixed")))


@variants("ch05.fixed_rows", [dict(p=p) for p in FIXED_YOURS])
def _fixed_rows(v: Any) -> ValueExercise:
    p = v.p
    return ValueExercise(
        "ch05.fixed_rows", "The fixed rule, both launchers",
        f"Now under the clamping rule CubeCL intends (`checked_io=\"fixed\"`: every checked "
        f"index becomes `min(index, len - 1)`), your program ({p}) runs once with `launch` and "
        "once with `launch_unchecked`. Which items of `out` end up `0.0` in each? Answer with a "
        "pair of lists: `(with launch, with launch_unchecked)`.",
        "The rule rewrites index ops marked *checked*, and only `launch` (ExecutionMode."
        "Checked) marks them: with `launch` every index past the end is pulled back to the last "
        "item; `launch_unchecked` is never clamped, whichever rule you choose, and reads 0 past "
        "the end as before.",
        nudge="Two questions per launcher: are its indices checked, and what does a clamped read "
        "of x past the end give?",
        worked="A worked step on another program: x, y of 2 items, 4 units, fixed rule. With "
        "`launch` units 2 and 3 read x[1] and y[1] (clamped): out[2] = out[3] = 2 + 20, no zero. "
        "With `launch_unchecked` they read 0: out[2], out[3] are 0.0.",
        misconceptions=[
            Misconception("nothing ever clamps", lambda v: (_past(v.p), _past(v.p)),
                          "That is the default rule's result for both. The fixed rule does "
                          "clamp — the indices `launch` marks checked."),
            Misconception("the fixed rule clamps both launchers", ([], []),
                          "`launch_unchecked` marks no index checked: no rule clamps it."),
        ],
        code=f'with checked_io(client, "fixed"):\n'
        f"    run_oob(client, checked=True, p=Oob(n={p.n}, m={p.m}, units={p.units}))\n"
        f"    run_oob(client, checked=False, p=Oob(n={p.n}, m={p.m}, units={p.units}))",
        value=lambda c: _fixed_zeros(c, p),
        explanation="`launch` clamps (the last item again, never 0); `launch_unchecked` does "
        "not.",
    )


# -- kernels: add the guard, fix the read ------------------------------------------------------------

GUARD_CHAPTER = Geometry(6, 1, 8)
GUARD_YOURS = [Geometry(10, 2, 8), Geometry(13, 4, 4), Geometry(5, 1, 16)]


@cube(launch=True)  # noqa: F405
def add6(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def add6_clamped(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Clamps the index itself: right values, no access past the end — and three units writing
    the last item."""
    i = min(ABSOLUTE_POS, x.len() - 1)  # noqa: F405
    out[i] = x[i] + y[i]


@cube(launch=True)  # noqa: F405
def add6_six(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The guard with the chapter's length written in."""
    if ABSOLUTE_POS < 6:  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405


def _add_inputs(g: Geometry) -> dict[str, np.ndarray]:
    x = np.arange(1, g.n + 1, dtype=np.float32)
    return {"x": x, "y": x * 10, "out": np.full(g.n, -1, np.float32)}


def _add_launch(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch, client, h, "x", "y", "out")


@variants("ch05.add_the_guard", [dict(yours=g) for g in GUARD_YOURS])
def _add_the_guard(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch05.add_the_guard", "Add the guard",
        "`add6` runs on 6 items with a cube of 8 units (and on yours: "
        f"{v.yours}). Some units have no item. Make the kernel correct *and* keep every unit "
        "inside the buffers: under the default rule, `launch` clamps nothing.",
        "On wgpu the stray reads give 0 and the stray writes are dropped, so the values can look "
        "right while units still touch memory past the end. For CubeCL 0.11.3 the advice is: "
        "the kernel carries its own guard, `if ABSOLUTE_POS < out.len():` — a unit with no item "
        "does nothing at all (a clamped index would give several units one item to write).",
        (add6, add6_clamped, add6_six),
        nudge="What should a unit whose ABSOLUTE_POS is past the last item do — read, write, or "
        "nothing?",
        worked="A worked step on another kernel: `negate` on 5 items with 8 units wraps its body "
        "in `if ABSOLUTE_POS < x.len():`, so units 5, 6, 7 skip it — no read, no write.",
        cases=(GUARD_CHAPTER, v.yours),
        inputs=_add_inputs, spec=lambda b, g: {"out": b["x"] + b["y"]}, launch=_add_launch,
    )


@cube(launch=True)  # noqa: F405
def reverse(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[x.len() - i]


@cube(launch=True)  # noqa: F405
def reverse_five(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Right for six items only."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[5 - i]


REVERSE_YOURS = [Geometry(9, 2, 8), Geometry(4, 1, 8), Geometry(15, 4, 4)]


def _reverse_inputs(g: Geometry) -> dict[str, np.ndarray]:
    return {"x": np.arange(1, g.n + 1, dtype=np.float32), "out": np.full(g.n, -1, np.float32)}


def _reverse_launch(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch, client, h, "x", "out")


@variants("ch05.fix_the_oob", [dict(yours=g) for g in REVERSE_YOURS])
def _fix_the_oob(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch05.fix_the_oob", "Fix the out-of-bounds read",
        "`reverse` should write `x` back to front: `out[i] = x[n - 1 - i]`. It has a guard, but "
        "the CPU runtime's report shows a unit reading past the end of `x`. Fix the index; it "
        f"is checked on 6 items with a cube of 8 units, and on yours ({v.yours}).",
        "Look at unit 0: it must read the last item, and the last valid index is "
        "`x.len() - 1`, not `x.len()`. Indices are u32: keep the subtraction from going below "
        "0 (the guard already does, for units with an item).",
        (reverse, reverse_five),
        nudge="Which item must unit 0 read, and which index does the kernel compute for it?",
        worked="A worked step on another kernel: `last_first` writes `out[i] = x[x.len() - 1]` — "
        "for 3 items that is x[2], the last one; x[x.len()] would be x[3], one past it.",
        cases=(Geometry(6, 1, 8), v.yours),
        inputs=_reverse_inputs, spec=lambda b, g: {"out": b["x"][::-1].copy()},
        launch=_reverse_launch,
    )
