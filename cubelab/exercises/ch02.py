"""Chapter 2 · What `@cube` generates (seed 000, "what the macro expands to", "expand", "frontend
types", "launch"): which generated part runs where and when, generics and the type table,
comptime versus runtime `if`, the scalar-type rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import register
from cubelab.exercises.kinds import CountExercise, KernelExercise, ValueExercise
from cubelab.exercises.seed000 import saxpy
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

F = Float.generic("F")  # noqa: F405


@cube(launch=True)  # noqa: F405
def guarded_add(x: Slice[F], y: Slice[F], out: SliceMut[F], relu: Comptime[bool]):  # noqa: F405
    if ABSOLUTE_POS < out.len():  # noqa: F405
        v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405
        if relu:
            out[ABSOLUTE_POS] = F.max(v, F.new(0.0))  # noqa: F405
        else:
            out[ABSOLUTE_POS] = v  # noqa: F405


def _saxpy(width: int, a: float) -> Any:
    def launch(client: Any) -> None:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))  # noqa: F405
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))  # noqa: F405
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(16 // width),  # noqa: F405
                          width, a, BufferArg.from_raw_parts(x, 16),  # noqa: F405
                          BufferArg.from_raw_parts(y, 16))  # noqa: F405
    return launch


def _expand_thread(client: Any) -> str:
    client.clear_cache()  # so the launch below has to expand
    with client.events.record(ev.LaunchIssued, ev.CompileStarted) as rec:
        _saxpy(4, 2.0)(client)
        client.sync()
    issued, = rec.of(ev.LaunchIssued)
    started, = rec.of(ev.CompileStarted)
    return "calling" if started.thread == issued.thread else "device"


EXPAND_THREAD = ValueExercise(
    "ch02.expand_thread", "Where does expand run?",
    "A fresh launch of saxpy has to build its IR: `define` calls `expand`. On which thread does "
    "that happen: the thread that called `launch` (answer \"calling\") or the device thread "
    "(answer \"device\")?",
    "`launch` only registers the arguments, builds the Kernel object and hands it over; the IR "
    "is built where the pipeline cache is looked up. Compare the threads of the LaunchIssued and "
    "CompileStarted events.",
    ("calling",),
    value=_expand_thread,
    explanation="CompileStarted (define → expand) is published on the device thread; "
    "LaunchIssued on yours.",
)

EXPANDS_FOR_FIVE = CountExercise(
    "ch02.expands_for_five_launches", "Five launches, how many expansions?",
    "saxpy is launched five times on a cleared cache: width 4 with a = 2.0; width 4 with "
    "a = 3.0; width 2 with a = 2.0; width 4 with a = 5.0; width 2 with a = 0.5 (fresh buffers "
    "each time). How many times does `define` (and so `expand`) run?",
    "`define` runs on a cache miss only, once per new KernelId. The vector width is part of the "
    "Info; a scalar like `a` has no compile-time part (`a: ()` in the KernelId).",
    (5, 3, 1),
    code="for width, a in [(4, 2.0), (4, 3.0), (2, 2.0), (4, 5.0), (2, 0.5)]:\n"
    "    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(16 // width),\n"
    "                      width, a, x, y)",
    launches=[_saxpy(4, 2.0), _saxpy(4, 3.0), _saxpy(2, 2.0), _saxpy(4, 5.0), _saxpy(2, 0.5)],
    what="expansions",
    explanation="Two KernelIds (width 4 with cube_dim 4, width 2 with cube_dim 8): two "
    "expansions, three cache hits.",
)


def _guarded_add_relu(client: Any) -> None:
    x = client.create_from_slice(f32.as_bytes(np.arange(-4, 4, dtype=np.float32)))  # noqa: F405
    out = client.empty(32)
    guarded_add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                            BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(x, 8),  # noqa
                            BufferArg.from_raw_parts(out, 8), True)  # noqa: F405


IF_OPS = CountExercise(
    "ch02.if_ops_in_the_ir", "How many if ops reach the IR?",
    "`guarded_add` has two `if`s: the guard `if ABSOLUTE_POS < out.len():` and, inside it, "
    "`if relu:` on the `Comptime[bool]` parameter. Launched once with `relu=True`, how many "
    "`scf.if` ops are in the IR that was compiled?",
    "Only a condition the IR cannot know before the kernel runs becomes an `if` op. A Comptime "
    "value is a plain Python value while `expand` runs: that `if` is decided right there, and "
    "only the branch taken is expanded.",
    (2, 0),
    code="guarded_add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), x, x, out, True)",
    launches=[_guarded_add_relu],
    count=lambda r: sum(e.ir.count("scf.if") for e in r.events
                        if isinstance(e, ev.CompileFinished)),
    what="if ops",
    explanation="The guard is a runtime `if` (one `scf.if`); `if relu:` stayed Python and left "
    "only its `max` branch in the IR.",
)


def _scale_inputs() -> dict[str, np.ndarray]:
    return {"x": np.array([1, -2, 3, -4, 5, -6, 7, -8], dtype=np.float32),
            "out": np.full(8, -1.0, dtype=np.float32)}


def _launch_scale(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    kernel.launch[f32](client, CubeCount.Static(2), CubeDim.new_1d(4), 1.5,  # noqa: F405
                       BufferArg.from_raw_parts(h["x"], 8),  # noqa: F405
                       BufferArg.from_raw_parts(h["out"], 8))  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_template(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    ...


@cube(launch=True)  # noqa: F405
def scale_forgets_a(a: f32, x: Slice[F], out: SliceMut[F]):  # noqa: F405
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405


GENERIC_SCALE = KernelExercise(
    "ch02.generic_scale", "A generic scale kernel",
    "Write `scale(a: f32, x: Slice[F], out: SliceMut[F])` with `out[i] = a * x[i]`. It is "
    "launched as `scale.launch[f32](client, CubeCount.Static(2), CubeDim.new_1d(4), 1.5, x, out)` "
    "on 8 items.",
    "`a` is an f32 (a scalar argument needs a concrete type); `x[i]` is an F. Convert the scalar "
    "to the element type with `F.cast_from(a)` and multiply; guard with the length.",
    (scale_template, scale_forgets_a),
    inputs=_scale_inputs, spec=lambda b: {"out": b["x"] * np.float32(1.5)},
    launch=_launch_scale,
)

register(EXPAND_THREAD, EXPANDS_FOR_FIVE, IF_OPS, GENERIC_SCALE)
