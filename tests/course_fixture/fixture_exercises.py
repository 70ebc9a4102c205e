"""The fixture chapter's two exercises, declared with the course's own exercise kinds.

The fixture chapter (`notebooks/01_fixture.ipynb`) is shaped exactly by the exercise-cell
convention (question / answer / check cells tagged `{"cubelab": {"exercise", "role"}}`, solutions
in `notebooks/solutions/01_fixture.py`), so `cubelab course build`, nbgrader and the hub are
tested on a chapter small enough to grade three submissions in seconds, and independent of how
the course's chapters change. Its checks run for real, like the course's: one counts the
compiles of four launches (seed 000's quiz under another key), one launches the student's kernel
and compares with numpy, and one has variants — each student is asked about their own launch, and
grading must judge each submission against its student's variant. The chapter's set-up cell calls `register_all()`; the test process uses
`registered()`, which takes them out of the registry again, so the course's own tests (every
registered exercise has a solution in notebooks/solutions/) never see them.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

import numpy as np

from cubelab.exercises import (EXERCISES, HOW_MANY_COMPILES, KernelExercise, ValueExercise,
                               Variants, register)
from cubelab.prelude import Atomic, BufferArg, CubeCount, CubeDim, SliceMut, cube, u32

N = 10

HOW_MANY = replace(HOW_MANY_COMPILES, key="fixture.how_many_compiles")

DOUBLE = KernelExercise(
    "fixture.double", "Twice x",
    "Fix `double` so that each unit writes `out[i] = 2 * x[i]`.",
    "Each unit writes one element: out[ABSOLUTE_POS] must be twice x[ABSOLUTE_POS].",
    inputs=lambda: {"x": np.arange(N, dtype=np.float32), "out": np.full(N, -1, np.float32)},
    spec=lambda b: {"out": 2 * b["x"]},
    launch=lambda kernel, client, h: kernel.launch(
        client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(16),
        BufferArg.from_raw_parts(h["x"], N), BufferArg.from_raw_parts(h["out"], N)),
)



@cube(launch=True)
def count_units(counter: SliceMut[Atomic[u32]]):
    counter[0].fetch_add(u32(1))


def _units(client, v):  # type: ignore[no-untyped-def]
    counter = client.create_from_slice(np.zeros(1, np.uint32).tobytes())
    count_units.launch(client, CubeCount.Static(v.cubes), CubeDim.new_1d(v.units),
                       BufferArg.from_raw_parts(counter, 1))
    return int(np.frombuffer(client.read_one(counter), np.uint32)[0])


def _make_units(v):  # type: ignore[no-untyped-def]
    return ValueExercise(
        "fixture.units", "How many units?",
        f"`count_units` adds one to a counter in every unit; it is launched with "
        f"`CubeCount.Static({v.cubes})` and `CubeDim.new_1d({v.units})`. What does it read?",
        "cubes times units per cube", nudge="count the units", worked="2 cubes of 3: 6",
        value=lambda c: _units(c, v))


UNITS = Variants("fixture.units", (dict(cubes=3, units=4), dict(cubes=5, units=2),
                                   dict(cubes=7, units=3)), _make_units)


def register_all() -> None:
    register(HOW_MANY, DOUBLE, UNITS)


@contextmanager
def registered() -> Iterator[None]:
    register_all()
    try:
        yield
    finally:
        for key in (HOW_MANY.key, DOUBLE.key, UNITS.key):
            EXERCISES.pop(key, None)
