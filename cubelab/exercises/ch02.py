"""Chapter 2 · What `@cube` generates (CubeCL's chapter on `#[cube]` kernels: what the macro
expands to, `expand`, the frontend types, `launch`): which generated part runs on which thread,
which launches expand, comptime versus runtime `if`, and the scalar-type rule.

Every value exercise has variants (`students.py`); the kernel exercise runs on two sizes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import (Geometry, KernelExercise, ValueExercise, first_seen,
                                     launches_that_compile)
from cubelab.exercises.seed000 import saxpy
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

F = Float.generic("F")  # noqa: F405


# -- 2.1 on which thread does each step run? ----------------------------------------------------

# Each step of one launch, the event that marks it, and how the question names it.
STEPS = {
    "register": (ev.LaunchIssued, "registers the arguments and builds the Kernel object"),
    "lookup": (ev.CompileStarted, "looks the KernelId up in the pipeline cache (a miss here)"),
    "expand": (ev.CompileFinished, "calls `define`, which calls `expand` to build the IR"),
    "dispatch": (ev.LaunchDispatched, "dispatches the work"),
}


def _saxpy(width: int, a: float) -> Any:
    def launch(client: Any) -> None:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))  # noqa: F405
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))  # noqa: F405
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(16 // width),  # noqa: F405
                          width, a, BufferArg.from_raw_parts(x, 16),  # noqa: F405
                          BufferArg.from_raw_parts(y, 16))  # noqa: F405
    return launch


def _threads(client: Any, order: tuple[str, ...]) -> list[str]:
    """One first launch of saxpy; for each step, "calling" if its event was published on the
    thread that called `launch`, else "device"."""
    client.clear_cache()  # so the launch has to expand
    with client.events.record() as rec:
        _saxpy(4, 2.0)(client)
        client.sync()
    issued, = rec.of(ev.LaunchIssued)
    out = []
    for step in order:
        kind, _ = STEPS[step]
        e = rec.of(kind)[0]
        out.append("calling" if e.thread == issued.thread else "device")
    return out


ORDERS = [("lookup", "register", "dispatch", "expand"), ("expand", "dispatch", "register", "lookup"),
          ("dispatch", "expand", "lookup", "register"), ("register", "lookup", "expand", "dispatch")]


@variants("ch02.threads_of_a_launch", [dict(order=o) for o in ORDERS])
def _threads_of_a_launch(v: Any) -> ValueExercise:
    listing = "\n".join(f"{i}. {STEPS[s][1]}" for i, s in enumerate(v.order, 1))
    return ValueExercise(
        "ch02.threads_of_a_launch", "Which thread runs each step?",
        "On a cleared cache, saxpy is launched once. Here are four steps of that launch, in your "
        f"order:\n\n{listing}\n\nFor each, in this order, answer `\"calling\"` (the thread "
        "that called `launch`) or `\"device\"` (the device's own thread): a list of four words.",
        "`launch` only registers the arguments, builds the Kernel and hands it over; the device "
        "thread owns the pipeline cache, so the lookup, `define` → `expand` and the compile run "
        "there, and so does the dispatch.",
        nudge="Ask of each step whether it needs the pipeline cache or the device: who owns "
        "those?",
        worked="A worked step on another kernel: for `scale`, the calling thread publishes "
        "LaunchIssued and returns; a second launch of the same KernelId publishes CacheHit — on "
        "the device thread, because that thread holds the cache the lookup reads.",
        misconceptions=[Misconception(
            "expand runs when you call launch",
            lambda v: ["calling" if s in ("register", "expand", "lookup") else "device"
                       for s in v.order],
            "That answer builds the IR on your thread, as part of `launch`. `launch` builds no "
            "IR: the KernelId is looked up, and on a miss `define` → `expand` runs, where the "
            "cache lives.")],
        code="saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, x, y)",
        value=lambda c: _threads(c, v.order),
        explanation="LaunchIssued is published on your thread; CompileStarted, CompileFinished "
        "and LaunchDispatched on the device thread.",
    )


# -- 2.2 which launches expand? -------------------------------------------------------------------

PROGRAMS = [
    ((4, 2.0), (4, 3.0), (2, 2.0), (4, 5.0), (2, 0.5)),
    ((2, 1.0), (2, 1.0), (4, 1.0), (1, 1.0), (4, 2.0)),
    ((1, 2.0), (4, 2.0), (1, 3.0), (2, 2.0), (2, 7.0)),
    ((4, 1.5), (2, 1.5), (1, 1.5), (4, 2.5), (1, 0.5)),
]


def _expanding(client: Any, program: tuple[tuple[int, float], ...]) -> list[int]:
    """The launches (1-based) that reached `define` → `expand` (a CompileStarted)."""
    return launches_that_compile(client, [lambda w=w, a=a: _saxpy(w, a)(client)
                                          for w, a in program])


@variants("ch02.which_launches_expand", [dict(program=p) for p in PROGRAMS])
def _which_launches_expand(v: Any) -> ValueExercise:
    calls = "\n".join(f"saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d({16 // w}), "
                      f"{w}, {a}, x, y)   # {i}" for i, (w, a) in enumerate(v.program, 1))
    return ValueExercise(
        "ch02.which_launches_expand", "Which launches expand?",
        "On a cleared cache, saxpy (16 floats) is launched five times with fresh buffers: "
        "vector width `w` and scalar `a` as below, one unit per vector. Which launches make the "
        "device thread call `define`, and so `expand`? Answer with a list of launch numbers.",
        "`define` runs on a cache miss only: once per new KernelId. The vector width is part of "
        "the Info (`n`) and sets the cube dim; a scalar like `a` has no compile-time part "
        "(`a: ()` in the KernelId) — a new value is only new data.",
        nudge="For each launch, write down its KernelId's fields that can change here (cube_dim, "
        "the width n); has an earlier launch had exactly those?",
        worked="A worked step on another kernel: `add` launched with relu = False, True, False "
        "expands at launches 1 and 2 — relu is Comptime, in the key; launch 3 has launch 1's "
        "key. A scalar argument changing between launches would change nothing.",
        misconceptions=[
            Misconception("every launch expands", [1, 2, 3, 4, 5],
                          "That has every launch call expand. expand runs in define, and define "
                          "only on a cache miss."),
            Misconception("the scalar is part of the key",
                          lambda v: first_seen(v.program),
                          "That counts a new value of the scalar `a` as a new kernel. A scalar "
                          "is runtime data: its KernelId part is `()`."),
        ],
        code=calls,
        value=lambda c: _expanding(c, v.program),
        explanation="One expand per new (width, cube_dim): the scalar never makes a new key.",
    )


# -- 2.3 which ifs become `scf.if` ops? --------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def clip_a(x: Slice[F], out: SliceMut[F], relu: Comptime[bool]):  # noqa: F405
    if ABSOLUTE_POS < out.len():  # A  # noqa: F405
        v = x[ABSOLUTE_POS]  # noqa: F405
        if relu:  # B
            v = F.max(v, F.new(0.0))  # noqa: F405
        if v > F.new(10.0):  # C  # noqa: F405
            v = F.new(10.0)  # noqa: F405
        out[ABSOLUTE_POS] = v  # noqa: F405


@cube(launch=True)  # noqa: F405
def clip_b(x: Slice[F], out: SliceMut[F], n: u32, wide: Comptime[bool],  # noqa: F405
           limit: Comptime[int]):  # noqa: F405
    if wide:  # A
        if ABSOLUTE_POS < n:  # B  # noqa: F405
            out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405
    if limit > 4:  # C
        out[0] = F.new(0.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def clip_c(x: Slice[F], out: SliceMut[F], a: f32, twice: Comptime[bool]):  # noqa: F405
    if a > 0.0:  # A
        if ABSOLUTE_POS < out.len():  # B  # noqa: F405
            out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405
    if twice:  # C
        out[0] = x[0]  # noqa: F405


class IfProgram(NamedTuple):
    kernel: Any
    launch: str  # the launch as the question shows it
    comptimes: tuple[Any, ...]
    scalars: tuple[Any, ...] = ()


IF_PROGRAMS = [
    IfProgram(clip_a, "clip_a.launch[f32](client, one, CubeDim.new_1d(8), x, out, True)",
              (True,)),
    IfProgram(clip_b, "clip_b.launch[f32](client, one, CubeDim.new_1d(8), x, out, 8, True, 6)",
              (True, 6), (8,)),
    IfProgram(clip_c, "clip_c.launch[f32](client, one, CubeDim.new_1d(8), x, out, 2.0, False)",
              (False,), (2.0,)),
]


def _labels(kernel: Any) -> dict[int, str]:
    """File line → the label (A, B, C) written on it in the kernel's source."""
    out = {}
    for i, line in enumerate(kernel.source.splitlines()):
        for label in "ABC":
            if f"# {label}" in line:
                out[kernel.first_line + i] = label
    return out


def _if_ops(client: Any, p: IfProgram) -> set[str]:
    """Which labelled `if`s are `scf.if` ops in the IR the device thread compiled."""
    import re

    client.clear_cache()
    x = client.create_from_slice(f32.as_bytes(np.arange(-4, 4, dtype=np.float32)))  # noqa: F405
    out = client.empty(32)
    args = [BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8),  # noqa: F405
            *p.scalars, *p.comptimes]
    with client.events.record(ev.CompileFinished) as rec:
        p.kernel.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), *args)  # noqa: F405
        client.sync()
    compiled, = rec.of(ev.CompileFinished)
    labels = _labels(p.kernel)
    return {labels[int(m.group(1))] for line in compiled.expanded_ir.splitlines()
            if "scf.if" in line for m in [re.search(r"// line (\d+)", line)] if m}


@variants("ch02.if_ops", [dict(program=i) for i in range(len(IF_PROGRAMS))])
def _if_ops_exercise(v: Any) -> ValueExercise:
    p = IF_PROGRAMS[v.program]
    import inspect as _inspect
    import textwrap

    source = textwrap.dedent(_inspect.getsource(p.kernel.fn)).replace("  # noqa: F405", "")
    runtime = {"A", "B", "C"}
    return ValueExercise(
        "ch02.if_ops", "Which `if`s reach the IR?",
        "Your kernel has three `if`s, labelled `# A`, `# B`, `# C`. It is launched once, as "
        "below. Which of them become `scf.if` ops in the IR the device thread compiles? Answer "
        "with a set of labels, e.g. `{\"A\", \"C\"}`.",
        "Only a condition the IR cannot know before the kernel runs becomes an `if` op: one on "
        "a position, a buffer's item or a scalar argument. A `Comptime` value is a plain Python "
        "value while `expand` runs: that `if` is decided right there, only the branch taken is "
        "expanded — and an `if` inside a branch that was dropped never reaches the IR at all.",
        nudge="For each condition, ask: is its value known while the kernel is being built "
        "(Comptime), or only when a unit runs?",
        worked="A worked step on another kernel: in `add`, `if relu:` (Comptime) stays a Python "
        "`if` in `inspect.expanded(add)`, so `relu=True` leaves only the `max` branch and no if "
        "op; `if ABSOLUTE_POS < n:` becomes `__cl.if_(...)`, an `scf.if` with a then-block.",
        misconceptions=[Misconception("every if becomes an if op", runtime,
                                      "That makes every `if` an IR op. A `Comptime[...]` "
                                      "parameter is a Python value while expand runs: its "
                                      "`if` is decided then and never reaches the IR.")],
        code=f"{source.rstrip()}\n\n{p.launch}",
        value=lambda c: _if_ops(c, p),
        explanation="Runtime conditions are `scf.if` ops; Comptime ones were decided in Python.",
    )


# -- 2.4 a generic kernel with a scalar ------------------------------------------------------------

SCALE_A = {8: 1.5, 11: -2.0, 6: 0.25, 20: 3.0}  # the scalar of each size's launch
SCALE_CHAPTER = Geometry(8, 2, 4)
SCALE_YOURS = [Geometry(11, 3, 4), Geometry(6, 1, 8), Geometry(20, 2, 16)]


def _scale_inputs(g: Geometry) -> dict[str, np.ndarray]:
    x = np.array([1, -2, 3, -4, 5, -6, 7, -8] * 3, dtype=np.float32)[: g.n]
    return {"x": x, "out": np.full(g.n, -1.0, dtype=np.float32)}


def _launch_scale(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch[f32], client, h, "x", "out", before=(SCALE_A[g.n],))  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_template(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    ...


@cube(launch=True)  # noqa: F405
def scale_forgets_a(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_mixes_types(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    """Right numbers where F is f32 — and refused, as CubeCL's type checker refuses it."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS]  # noqa: F405


@variants("ch02.generic_scale", [dict(yours=s) for s in SCALE_YOURS])
def _generic_scale(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch02.generic_scale", "A generic kernel with a scalar",
        "Write `scale(a: f32, x: Slice[F], out: SliceMut[F])` with `out[i] = a * x[i]`. It is "
        "launched as `scale.launch[f32](client, count, dim, a, x, out)` on 8 items (two cubes "
        f"of four units, a = 1.5) and on yours ({v.yours}, a = {SCALE_A[v.yours.n]}).",
        "`a` is an f32 (a scalar argument takes a concrete type); `x[i]` is an F. CubeCL checks "
        "the kernel for every F, so the two do not multiply until `a` is an F too: "
        "`F.cast_from(a) * x[i]`. Guard with the length.",
        (scale_template, scale_forgets_a, scale_mixes_types),
        nudge="What type does `a` have, and what type does `x[i]` have — for every F, not just "
        "for f32?",
        worked="A worked step on another kernel: `shift(b: f32, x: Slice[F], ...)` adds b with "
        "`x[i] + F.cast_from(b)`; `x[i] + b` is refused with a caret at the `+`, even when F is "
        "f32, because for F = f16 it would mean f16 + f32.",
        cases=(SCALE_CHAPTER, v.yours),
        inputs=_scale_inputs, spec=lambda b, g: {"out": b["x"] * np.float32(SCALE_A[g.n])},
        launch=_launch_scale,
    )
