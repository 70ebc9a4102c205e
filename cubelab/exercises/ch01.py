"""Chapter 1 · First kernels (seed 000, "the experiment program"): cubes and units, the
`ABSOLUTE_POS` formula, `CubeCount` × `CubeDim`, and a warm-up kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import register
from cubelab.exercises.kinds import KernelExercise, ValueExercise
from cubelab.prelude import *  # noqa: F403

SENTINEL = -1.0  # what an item nobody wrote still holds


@cube(launch=True)  # noqa: F405
def cube_of_each_unit(out: SliceMut[u32]):  # noqa: F405
    out[ABSOLUTE_POS] = CUBE_POS  # noqa: F405


@cube(launch=True)  # noqa: F405
def count_units(counter: SliceMut[Atomic[u32]]):  # noqa: F405
    counter[0].fetch_add(u32(1))  # noqa: F405


def _cube_of_each_unit(client: Any) -> Any:
    out = client.empty(12 * 4)
    cube_of_each_unit.launch(client, CubeCount.Static(3), CubeDim.new_1d(4),  # noqa: F405
                             BufferArg.from_raw_parts(out, 12))  # noqa: F405
    return u32.from_bytes(client.read_one(out)).tolist()  # noqa: F405


CUBE_OF_EACH_UNIT = ValueExercise(
    "ch01.cube_of_each_unit", "Which cube is each unit in?",
    "`cube_of_each_unit` writes `CUBE_POS` into `out[ABSOLUTE_POS]`, launched with "
    "`CubeCount.Static(3)` and `CubeDim.new_1d(4)`. What list does `out` hold?",
    "ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS: the first CUBE_DIM units are cube 0, the next "
    "CUBE_DIM cube 1, ... CUBE_POS is the cube, not the unit inside it (that is UNIT_POS).",
    ([0, 1, 2, 3] * 3, list(range(12)), [0, 1, 2] * 4),
    code="out[ABSOLUTE_POS] = CUBE_POS   # 3 cubes of 4 units",
    value=_cube_of_each_unit,
    explanation="Units 0-3 are cube 0, units 4-7 cube 1, units 8-11 cube 2.",
)


def _units(client: Any) -> int:
    counter = client.create_from_slice(u32.as_bytes(np.zeros(1, np.uint32)))  # noqa: F405
    count_units.launch(client, CubeCount.Static(3, 2, 1), CubeDim.new_2d(4, 2),  # noqa: F405
                       BufferArg.from_raw_parts(counter, 1))  # noqa: F405
    return int(u32.from_bytes(client.read_one(counter))[0])  # noqa: F405


UNITS_IN_A_LAUNCH = ValueExercise(
    "ch01.units_in_a_launch", "How many units run?",
    "`count_units` adds 1 to an atomic counter in every unit. It is launched with "
    "`CubeCount.Static(3, 2, 1)` and `CubeDim.new_2d(4, 2)`. What does the counter read?",
    "The launch runs CubeCount.x * .y * .z cubes, each of CubeDim.x * .y * .z units: multiply all "
    "six numbers.",
    (24, 14, 10, 6),
    code="counter[0].fetch_add(u32(1))   # CubeCount.Static(3, 2, 1) x CubeDim.new_2d(4, 2)",
    value=_units,
    explanation="(3 x 2 x 1) cubes of (4 x 2 x 1) units: 6 x 8 = 48.",
)


# -- kernels to a spec: ten items, three cubes of four units (12 units) ---------------------------

N = 10


def _ten() -> dict[str, np.ndarray]:
    return {"x": np.arange(N, dtype=np.float32) * 1.5,
            "out": np.full(N, SENTINEL, dtype=np.float32)}


def _launch_x_out(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    kernel.launch(client, CubeCount.Static(3), CubeDim.new_1d(4),  # noqa: F405
                  BufferArg.from_raw_parts(h["x"], N),  # noqa: F405
                  BufferArg.from_raw_parts(h["out"], N))  # noqa: F405


@cube(launch=True)  # noqa: F405
def double_it_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The chapter's broken kernel: it indexes with the unit's place in its cube."""
    if UNIT_POS < x.len():  # noqa: F405
        out[UNIT_POS] = x[UNIT_POS] * 2.0  # noqa: F405


FIX_THE_INDEX = KernelExercise(
    "ch01.fix_the_index", "Fix the index",
    "`double_it` should double all ten items of `x` into `out` (three cubes of four units), but "
    "only the first four come out. Fix it.",
    "UNIT_POS restarts at 0 in every cube, so the three cubes all write items 0-3. The item a "
    "unit owns in the whole launch is ABSOLUTE_POS (keep the guard: 12 units, 10 items).",
    (double_it_template,),
    inputs=_ten, spec=lambda b: {"out": b["x"] * 2}, launch=_launch_x_out,
)


@cube(launch=True)  # noqa: F405
def add_ten_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    ...


@cube(launch=True)  # noqa: F405
def add_ten_unguarded(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 10.0  # noqa: F405


WARM_UP = KernelExercise(
    "ch01.warm_up", "Warm-up: add ten",
    "Write `add_ten(x, out)` so that `out[i] = x[i] + 10` for the ten items, launched with "
    "`CubeCount.Static(3)` and `CubeDim.new_1d(4)`.",
    "Each unit handles item ABSOLUTE_POS. Twelve units run for ten items, so the last two must "
    "do nothing: guard with `if ABSOLUTE_POS < x.len():` (cubelab, like CubeCL 0.11.3, does not "
    "clamp for you).",
    (add_ten_template, add_ten_unguarded),
    inputs=_ten, spec=lambda b: {"out": b["x"] + 10}, launch=_launch_x_out,
)

register(CUBE_OF_EACH_UNIT, UNITS_IN_A_LAUNCH, FIX_THE_INDEX, WARM_UP)
