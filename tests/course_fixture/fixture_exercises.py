"""The fixture chapter's two exercises, declared with the course's own exercise kinds.

The fixture chapter (`notebooks/01_fixture.ipynb`) is shaped exactly by the exercise-cell
convention (question / answer / check cells tagged `{"cubelab": {"exercise", "role"}}`, solutions
in `notebooks/solutions/01_fixture.py`), so `cubelab course build`, nbgrader and the hub are
tested on a chapter small enough to grade three submissions in seconds, and independent of how
the course's chapters change. Its checks run for real, like the course's: one counts the
compiles of four launches (seed 000's quiz under another key), one launches the student's kernel
and compares with numpy. The chapter's set-up cell calls `register_all()`; the test process uses
`registered()`, which takes them out of the registry again, so the course's own tests (every
registered exercise has a solution in notebooks/solutions/) never see them.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

import numpy as np

from cubelab.exercises import EXERCISES, HOW_MANY_COMPILES, KernelExercise, register
from cubelab.prelude import BufferArg, CubeCount, CubeDim

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



def register_all() -> None:
    register(HOW_MANY, DOUBLE)


@contextmanager
def registered() -> Iterator[None]:
    register_all()
    try:
        yield
    finally:
        for key in (HOW_MANY.key, DOUBLE.key):
            EXERCISES.pop(key, None)
