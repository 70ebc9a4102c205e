"""Chapter 3 · The KernelId and the pipeline cache (CubeCL's chapter on `#[cube]` kernels: one
function, several kernels, and its "how many compiles?" quiz): what is in the key, what is not,
and predicting what a launch changes.

Every exercise has variants (`students.py`): the quiz's sequence of launches, the pair of
launches to compare, the program whose compiles to predict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import _COMPILE_HINT, _COMPILE_NUDGE, _COMPILE_WORKED, Misconception, variants
from cubelab.exercises.kinds import (CountExercise, KernelIdDiffExercise, ValueExercise,
                                     launches_that_compile)
from cubelab.exercises.seed000 import add, saxpy
from cubelab.exercises.seed_quizzes import _run_add
from cubelab.prelude import BufferArg, CubeCount, CubeDim, f32
from cubelab.runtime import events as ev

# -- 3.1 the quiz: how many compiles? (numeric) ------------------------------------------------------

T, F_ = True, False
QUIZZES = [
    ((T, F_), (F_, F_), (T, T), (T, F_), (F_, F_)),   # three KernelIds
    ((T, F_), (F_, F_), (T, F_), (F_, F_), (T, F_)),  # two
    ((F_, F_), (T, F_), (F_, T), (T, F_), (T, T)),    # four
]


def _code(program: tuple[tuple[bool, bool], ...]) -> str:
    return "\n".join(f"run_add(checked={c!s:5}, relu={r!s:5})   # {i}".replace("=True ", "=True  ")
                     for i, (c, r) in enumerate(program, 1))


@variants("ch03.four_launches", [dict(program=p) for p in QUIZZES])
def _four_launches(v: Any) -> CountExercise:
    return CountExercise(
        "ch03.four_launches", "Same add, five launches: how many compiles?",
        "`run_add(checked, relu)` launches CubeCL's `add` once on 6 elements with 8 units; "
        "`checked` picks `launch` or `launch_unchecked`, `relu` is its Comptime parameter. On a "
        "cleared cache your program makes the five calls below, with the debug log on. How many "
        "times does `[START_KERNEL_COMPILATION]` appear?",
        _COMPILE_HINT,
        nudge=_COMPILE_NUDGE, worked=_COMPILE_WORKED,
        misconceptions=[
            Misconception("every launch compiles", 5,
                          "That compiles every launch. A launch compiles only when its KernelId "
                          "is new; one with the KernelId of an earlier launch reuses its "
                          "pipeline."),
            Misconception("launch and launch_unchecked share a pipeline",
                          lambda v: len({r for _, r in v.program}),
                          "That counts only the different `relu` values, as if `launch` and "
                          "`launch_unchecked` shared a pipeline. The execution mode is a "
                          "KernelId field: Checked and Unchecked are two keys even where the "
                          "code is the same."),
        ],
        code=_code(v.program),
        launches=[_run_add(c, r) for c, r in v.program],
        explanation="A compile per distinct (mode, relu): both are KernelId fields; a repeat "
        "reuses the pipeline, whatever its data.",
    )


# -- 3.2 which KernelId fields differ? ---------------------------------------------------------

def _add(checked: bool = True, relu: bool = False, cubes: int = 1, units: int = 8,
         fill: float = 1.0) -> Any:
    def launch(client: Any) -> None:
        n = cubes * units
        x = client.create_from_slice(f32.as_bytes(np.full(n, fill, np.float32)))
        out = client.empty(4 * n)
        launcher = add.launch if checked else add.launch_unchecked
        launcher[f32](client, CubeCount.Static(cubes), CubeDim.new_1d(units),
                      BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(x, n),
                      BufferArg.from_raw_parts(out, n), relu)
    return launch


def _saxpy(width: int, units: int, cubes: int = 1, a: float = 2.0) -> Any:
    def launch(client: Any) -> None:
        n = width * units * cubes
        x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.ones(n, dtype=np.float32)))
        saxpy.launch[f32](client, CubeCount.Static(cubes), CubeDim.new_1d(units), width, a,
                          BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(y, n))
    return launch


PAIRS = [
    dict(code="add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), x8, x8, out8, False)"
         "     # 8 items of 1.0\n"
         "add.launch[f32](client, CubeCount.Static(2), CubeDim.new_1d(16), x32, x32, out32, False)"
         "  # 32 items of 7.0",
         first=_add(units=8), second=_add(cubes=2, units=16, fill=7.0), data=True),
    dict(code="saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, x, y)"
         "   # 16 floats, width 4\n"
         "saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), 2, 2.0, x, y)"
         "   # 16 floats, width 2",
         first=_saxpy(4, 4), second=_saxpy(2, 8), data=False),
    dict(code="saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, x16, y16)\n"
         "saxpy.launch[f32](client, CubeCount.Static(3), CubeDim.new_1d(4), 4, 3.0, x48, y48)",
         first=_saxpy(4, 4), second=_saxpy(4, 4, cubes=3, a=3.0), data=True),
    dict(code="saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 1, 2.0, x4, y4)"
         "     # width 1\n"
         "saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, x16, y16)"
         "   # width 4",
         first=_saxpy(1, 4), second=_saxpy(4, 4), data=False),
]


@variants("ch03.which_fields", PAIRS)
def _which_fields(v: Any) -> KernelIdDiffExercise:
    return KernelIdDiffExercise(
        "ch03.which_fields", "Which KernelId fields differ?",
        "Your two launches are below. Which KernelId fields differ between them? Answer with "
        "field names — `\"cube_dim\"`, `\"mode\"`, an Info field such as `\"n\"` or `\"relu\"` — "
        "separated by commas, or `\"none\"` if the second launch is a cache hit.",
        "The KernelId holds what is compiled into the kernel: kernel type, address type, "
        "cube_dim, execution mode, and the Info (each Comptime value, each vector width `n`, each "
        "buffer's compile-time part; a scalar's part is `()`). The cube count, the data and a "
        "scalar's value are not compiled in.",
        nudge="List everything that changed between the two calls; then, for each, ask whether "
        "it is compiled into the kernel.",
        worked="A worked step on another pair: `add` with relu=False on 8 items, then relu=True "
        "on 64 items with 8 cubes: `relu` differs (a Comptime value, in the Info); the items and "
        "the cube count are not in the key. Answer: relu.",
        misconceptions=[
            Misconception("the cube count is in the key", "cube_count",
                          "The cube count is a dispatch parameter, not compiled in: it is not a "
                          "KernelId field, and changing it never recompiles."),
            Misconception("a scalar's value is in the key", "a",
                          "`a` is in the Info, but as `()`: a scalar has no compile-time part, so "
                          "a new value of `a` is the same KernelId."),
        ],
        code=v.code, first=v.first, second=v.second,
        explanation="Only what is compiled in differs; counts, data and scalar values never do.",
    )


# -- 3.3 which launches compile? -----------------------------------------------------------------

PROGRAMS = [
    [("add", dict(checked=True, relu=False, cubes=1)), ("add", dict(checked=True, relu=False, cubes=4)),
     ("saxpy", dict(width=4, units=4)), ("add", dict(checked=False, relu=False, cubes=1)),
     ("saxpy", dict(width=4, units=4, a=5.0)), ("saxpy", dict(width=2, units=8))],
    [("saxpy", dict(width=2, units=8)), ("add", dict(checked=True, relu=True, cubes=1)),
     ("add", dict(checked=True, relu=True, cubes=2, fill=3.0)), ("saxpy", dict(width=2, units=4)),
     ("add", dict(checked=True, relu=False, cubes=1)), ("saxpy", dict(width=2, units=8, a=0.5))],
    [("add", dict(checked=False, relu=True, cubes=1)), ("add", dict(checked=True, relu=True, cubes=1)),
     ("add", dict(checked=False, relu=True, cubes=3)), ("saxpy", dict(width=1, units=8)),
     ("saxpy", dict(width=1, units=8, cubes=2)), ("add", dict(checked=False, relu=False, cubes=1))],
]


def _show(kind: str, p: dict[str, Any]) -> str:
    if kind == "add":
        n = 8 * p.get("cubes", 1)
        launcher = "add.launch" if p["checked"] else "add.launch_unchecked"
        return (f"{launcher}[f32](client, CubeCount.Static({p.get('cubes', 1)}), "
                f"CubeDim.new_1d(8), x{n}, x{n}, out{n}, {p['relu']})")
    n = p["width"] * p["units"] * p.get("cubes", 1)
    return (f"saxpy.launch[f32](client, CubeCount.Static({p.get('cubes', 1)}), "
            f"CubeDim.new_1d({p['units']}), {p['width']}, {p.get('a', 2.0)}, x{n}, y{n})")


def _launch(kind: str, p: dict[str, Any]) -> Any:
    if kind == "add":
        return _add(checked=p["checked"], relu=p["relu"], cubes=p.get("cubes", 1),
                    fill=p.get("fill", 1.0))
    return _saxpy(p["width"], p["units"], p.get("cubes", 1), p.get("a", 2.0))


def _compiling(client: Any, program: list[tuple[str, dict[str, Any]]]) -> list[int]:
    return launches_that_compile(client, [lambda k=k, p=p: _launch(k, p)(client)
                                          for k, p in program])


@variants("ch03.which_compile", [dict(program=p) for p in PROGRAMS])
def _which_compile(v: Any) -> ValueExercise:
    code = "\n".join(f"{_show(k, p)}   # {i}" for i, (k, p) in enumerate(v.program, 1))
    return ValueExercise(
        "ch03.which_compile", "Which launches compile?",
        "On a cleared cache your program makes the six launches below, with fresh buffers of "
        "the sizes their names say. Which of them compile (print `[START_KERNEL_COMPILATION]`)? "
        "Answer with a list of launch numbers.",
        _COMPILE_HINT,
        nudge=_COMPILE_NUDGE, worked=_COMPILE_WORKED,
        misconceptions=[Misconception("every launch compiles", [1, 2, 3, 4, 5, 6],
                                      "That compiles every launch; a launch whose KernelId ran "
                                      "before is a cache hit.")],
        code=code,
        value=lambda c: _compiling(c, v.program),
        explanation="A launch compiles exactly when its KernelId is new.",
    )
