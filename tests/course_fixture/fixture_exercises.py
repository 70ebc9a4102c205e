"""The fixture chapter's two exercises, declared with the course's own exercise kinds.

The fixture chapter (`notebooks/01_fixture.ipynb`) is shaped exactly by the exercise-cell
convention (question / answer / check cells tagged `{"cubelab": {"exercise", "role"}}`, solutions
in `notebooks/solutions/01_fixture.py`), so `cubelab course build`, nbgrader and the hub are
tested on a chapter small enough to grade three submissions in seconds, and independent of how
the course's chapters change. Its checks run for real, like the course's: one counts the
compiles of four launches (seed 000's quiz under another key), one launches the student's kernel
and compares with numpy. Importing this module registers both.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from cubelab.exercises import HOW_MANY_COMPILES, KernelExercise, register
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

register(HOW_MANY, DOUBLE)
