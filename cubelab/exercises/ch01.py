"""Chapter 1 · First kernels (CubeCL's chapter on `#[cube]` kernels: its experiment program):
cubes and units, the `ABSOLUTE_POS` formula, `CubeCount` × `CubeDim`, and a warm-up kernel.

Every exercise has variants (`students.py`): each student is asked about their own launch, and
the kernel exercises are checked on two geometries, the chapter's and one that is the student's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import Geometry, KernelExercise, ValueExercise
from cubelab.prelude import *  # noqa: F403

SENTINEL = -1.0  # what an item nobody wrote still holds


@cube(launch=True)  # noqa: F405
def cube_of_each_unit(out: SliceMut[u32]):  # noqa: F405
    out[ABSOLUTE_POS] = CUBE_POS  # noqa: F405


@cube(launch=True)  # noqa: F405
def count_units(counter: SliceMut[Atomic[u32]]):  # noqa: F405
    counter[0].fetch_add(u32(1))  # noqa: F405


# -- 1.1 which cube is each unit in? --------------------------------------------------------------

def _cube_of_each_unit(client: Any, cubes: int, units: int) -> list[int]:
    n = cubes * units
    out = client.empty(n * 4)
    cube_of_each_unit.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(units),  # noqa: F405
                             BufferArg.from_raw_parts(out, n))  # noqa: F405
    return u32.from_bytes(client.read_one(out)).tolist()  # noqa: F405


@variants("ch01.cube_of_each_unit", [dict(cubes=2, units=5), dict(cubes=4, units=3),
                                     dict(cubes=5, units=2), dict(cubes=6, units=2)])
def _cube_of_each(v: Any) -> ValueExercise:
    n = v.cubes * v.units
    return ValueExercise(
        "ch01.cube_of_each_unit", "Which cube is each unit in?",
        f"`cube_of_each_unit` writes `CUBE_POS` into `out[ABSOLUTE_POS]`. Your launch: "
        f"`CubeCount.Static({v.cubes})` cubes of `CubeDim.new_1d({v.units})` units. What list "
        f"does `out` hold? Answer with a Python list of {n} numbers.",
        "ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS: the first CUBE_DIM units of the launch are "
        "cube 0, the next CUBE_DIM cube 1, and so on. CUBE_POS is the cube, the same for every "
        "unit in it.",
        nudge="Count the units in order, cube by cube: how many units does one cube hold, and "
        "what does CUBE_POS say about a unit?",
        worked="A worked step on another launch: 2 cubes of 3 units are units 0-5; units 0, 1, 2 "
        "are in cube 0 and units 3, 4, 5 in cube 1, so CUBE_POS per unit is [0, 0, 0, 1, 1, 1].",
        misconceptions=[
            Misconception("CUBE_POS is the unit's place in its cube",
                          lambda v: list(range(v.units)) * v.cubes,
                          "That list numbers each unit inside its cube — that is UNIT_POS, which "
                          "restarts at 0 in every cube. CUBE_POS says which cube."),
            Misconception("CUBE_POS is the unit's number in the launch",
                          lambda v: list(range(v.cubes * v.units)),
                          "That list numbers every unit of the launch — that is ABSOLUTE_POS. "
                          "CUBE_POS is the same for all units of one cube."),
        ],
        code="@cube(launch=True)\ndef cube_of_each_unit(out: SliceMut[u32]):\n"
        "    out[ABSOLUTE_POS] = CUBE_POS\n\n"
        f"cube_of_each_unit.launch(client, CubeCount.Static({v.cubes}), "
        f"CubeDim.new_1d({v.units}), out)",
        value=lambda c: _cube_of_each_unit(c, v.cubes, v.units),
        explanation="Each cube's units share its CUBE_POS; UNIT_POS restarts per cube.",
    )


# -- 1.2 how many units run? (numeric) -----------------------------------------------------------

def _units(client: Any, count: tuple[int, int, int], dim: tuple[int, int]) -> int:
    counter = client.create_from_slice(u32.as_bytes(np.zeros(1, np.uint32)))  # noqa: F405
    count_units.launch(client, CubeCount.Static(*count), CubeDim.new_2d(*dim),  # noqa: F405
                       BufferArg.from_raw_parts(counter, 1))  # noqa: F405
    return int(u32.from_bytes(client.read_one(counter))[0])  # noqa: F405


@variants("ch01.units_in_a_launch", [dict(count=(3, 2, 1), dim=(2, 2)),
                                     dict(count=(5, 1, 1), dim=(4, 2)),
                                     dict(count=(5, 3, 1), dim=(2, 2))])
def _units_in_a_launch(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch01.units_in_a_launch", "How many units run?",
        f"`count_units` adds one to an atomic counter in every unit. Your launch: "
        f"`CubeCount.Static{v.count}` and `CubeDim.new_2d{v.dim}`. What does the counter read "
        "afterwards?",
        "The launch runs CubeCount.x * .y * .z cubes, and every cube has CubeDim.x * .y * .z "
        "units: multiply all six numbers (a missing z is 1).",
        nudge="How many cubes does the count make, and how many units does each cube hold?",
        worked="A worked step on another launch: CubeCount.Static(2, 3, 1) is 2 * 3 * 1 = 6 "
        "cubes; CubeDim.new_2d(4, 1) is 4 units per cube; 6 * 4 = 24 units add one each.",
        misconceptions=[
            Misconception("the count is the number of units",
                          lambda v: v.count[0] * v.count[1] * v.count[2],
                          "That is the number of cubes. Each cube runs CubeDim's units."),
            Misconception("the cube dim is the number of units", lambda v: v.dim[0] * v.dim[1],
                          "That is the units of one cube. The count says how many cubes run."),
            Misconception("the numbers add up", lambda v: sum(v.count) + sum(v.dim),
                          "Cubes and units multiply, they do not add: every cube runs a whole "
                          "CubeDim of units."),
        ],
        code="counter[0].fetch_add(u32(1))   # in every unit\n"
        f"count_units.launch(client, CubeCount.Static{v.count}, CubeDim.new_2d{v.dim}, counter)",
        value=lambda c: _units(c, v.count, v.dim),
        explanation="Cubes times units per cube.",
    )


# -- kernels to a spec, on two geometries ------------------------------------------------------------

CHAPTER = Geometry(10, 3, 4)  # the chapter's launch: ten items, three cubes of four units
YOURS = [Geometry(13, 2, 8), Geometry(7, 4, 2), Geometry(11, 2, 6)]


def _items(g: Geometry) -> dict[str, np.ndarray]:
    return {"x": np.arange(g.n, dtype=np.float32) * 1.5,
            "out": np.full(g.n, SENTINEL, dtype=np.float32)}


def _launch_x_out(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch, client, h, "x", "out")


@cube(launch=True)  # noqa: F405
def double_it_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The chapter's broken kernel: it indexes with the unit's place in its cube."""
    if UNIT_POS < x.len():  # noqa: F405
        out[UNIT_POS] = x[UNIT_POS] * 2.0  # noqa: F405


@cube(launch=True)  # noqa: F405
def double_it_four_per_cube(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Right for the chapter's launch only: the cube size written as 4."""
    i = CUBE_POS * 4 + UNIT_POS  # noqa: F405
    if i < x.len():
        out[i] = x[i] * 2.0


@variants("ch01.fix_the_index", [dict(yours=g) for g in YOURS])
def _fix_the_index(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch01.fix_the_index", "Fix the index",
        "`double_it` should double every item of `x` into `out`. On ten items with three cubes "
        "of four units only the first four come out. Fix it; it is checked on that launch and "
        f"on yours ({v.yours}).",
        "UNIT_POS restarts at 0 in every cube, so every cube writes the same items. The item a "
        "unit owns in the whole launch is ABSOLUTE_POS (= CUBE_POS * CUBE_DIM + UNIT_POS); keep "
        "the guard, there are more units than items.",
        (double_it_template, double_it_four_per_cube),
        nudge="Which items do the units of cube 1 write? Draw it: "
        "`cubelab.inspect.access_map(double_it.launch, client, ...)` shows every unit's cells.",
        worked="A worked step on another kernel: a `negate` run with 2 cubes of 3 units must "
        "give unit 4 (cube 1, UNIT_POS 1) the item 1 * 3 + 1 = 4, not item 1.",
        cases=(CHAPTER, v.yours),
        inputs=_items, spec=lambda b, g: {"out": b["x"] * 2}, launch=_launch_x_out,
    )


@cube(launch=True)  # noqa: F405
def add_ten_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    ...


@cube(launch=True)  # noqa: F405
def add_ten_unguarded(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 10.0  # noqa: F405


@variants("ch01.warm_up", [dict(yours=g) for g in YOURS])
def _warm_up(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch01.warm_up", "Warm-up: add ten",
        "Write `add_ten(x, out)` so that `out[i] = x[i] + 10` for every item of `x`; it is "
        f"checked on ten items with three cubes of four units, and on yours ({v.yours}).",
        "Each unit handles item ABSOLUTE_POS. A launch comes in whole cubes, so some units "
        "have no item: guard with `if ABSOLUTE_POS < x.len():` (cubelab, like CubeCL 0.11.3, "
        "does not clamp for you).",
        (add_ten_template, add_ten_unguarded),
        nudge="Which item does each unit own, and what should the units with none do?",
        worked="A worked step on another kernel: `square` on 5 items with one cube of 8 units "
        "reads `x[ABSOLUTE_POS]` only when `ABSOLUTE_POS < x.len()`, so units 5, 6, 7 do nothing.",
        cases=(CHAPTER, v.yours),
        inputs=_items, spec=lambda b, g: {"out": b["x"] + 10}, launch=_launch_x_out,
    )
