"""A stand-in for `cubelab.exercises.get`, for the classroom tests' fixture chapter.

The fixture chapter (`notebooks/01_fixture.ipynb`) is shaped exactly by the exercise-cell
convention (question / answer / check cells tagged `{"cubelab": {"exercise", "role"}}`, solutions
in `notebooks/solutions/01_fixture.py`), so `cubelab course build` and nbgrader are tested on a
chapter small enough to grade three submissions in seconds. Its two exercises run for real, like
the course's: one asks how many compiles four launches make (the runtime counts), one asks for a
kernel (it is launched and compared with numpy). `install()` makes `cubelab.exercises.get` find
them (and defer to the course's own exercises for every other key).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Result:
    status: str  # "unanswered" | "wrong" | "correct"
    message: str
    hint: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"


def _client(client: Any) -> Any:
    from cubelab.runtime.device import Device

    if client is not None:
        return client
    device = Device.cpu() if os.environ.get("CUBELAB_GRADING") == "1" else Device.default()
    return device.client()


class HowManyCompiles:
    key = "fixture.how_many_compiles"

    def check(self, answer: Any, client: Any = None) -> Result:
        from cubelab.exercises import HOW_MANY_COMPILES

        if answer is Ellipsis:
            return Result("unanswered", "not answered yet: replace ... with a number")
        verdict = HOW_MANY_COMPILES.check(answer, _client(client))
        if verdict.correct:
            return Result("correct", verdict.message)
        return Result("wrong", f"you said {answer}, the runtime compiled {verdict.expected}",
                      "the execution mode and a Comptime value are fields of the KernelId; "
                      "the data is not")

    def show(self, answer: Any) -> Result:
        result = self.check(answer)
        print(f"{self.key}: {result.status} — {result.message} {result.hint}".rstrip())
        return result


class Double:
    key = "fixture.double"

    def check(self, answer: Any, client: Any = None) -> Result:
        from cubelab.prelude import BufferArg, CubeCount, CubeDim, f32

        if answer is Ellipsis:
            return Result("unanswered", "not answered yet: set answer = your kernel")
        client = _client(client)
        x = np.arange(10, dtype=np.float32)
        xh = client.create_from_slice(f32.as_bytes(x))
        out = client.empty(4 * len(x))
        answer.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(16),
                      BufferArg.from_raw_parts(xh, len(x)), BufferArg.from_raw_parts(out, len(x)))
        got = f32.from_bytes(client.read_one(out))
        if np.array_equal(got, 2 * x):
            return Result("correct", f"out = {got.tolist()}")
        return Result("wrong", f"out = {got.tolist()}, want {(2 * x).tolist()}",
                      "each unit writes one element: out[ABSOLUTE_POS] must be twice "
                      "x[ABSOLUTE_POS]")

    show = HowManyCompiles.show


FIXTURE = {ex.key: ex for ex in (HowManyCompiles(), Double())}


def install() -> None:
    import cubelab.exercises as exercises

    course_get = getattr(exercises, "get", None)
    if getattr(course_get, "fixture", False):
        return

    def get(key: str) -> Any:
        if key in FIXTURE:
            return FIXTURE[key]
        if course_get is None:
            raise KeyError(key)
        return course_get(key)

    get.fixture = True  # type: ignore[attr-defined]
    exercises.get = get  # type: ignore[attr-defined]


install()
