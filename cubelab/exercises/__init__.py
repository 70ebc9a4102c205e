"""Exercises whose answers are checked against a real run, not against an answer key.

    import cubelab.exercises as ex
    r = ex.get("ch03.four_launches").check(3)     # runs the launches, counts the compiles
    r.status, r.hint, r.message, r.correct
    ex.get("ch03.four_launches").show(answer)     # in a notebook's check cell: never raises

Every exercise lives in a chapter module (`ch01.py` ... `ch08.py`, `puzzles.py`) as data, under a
stable key `"<module>.<name>"`; `get(key)` imports that module on first use. The kinds — predict
a count, predict a value, predict a KernelId diff, which buffers end failed, fix or write a
kernel — are in
`kinds.py`; the result and the rules every check keeps are in `base.py`; the notebook
convention (three cells per exercise, solutions in `notebooks/solutions/`) in
`docs/exercises.md`. The first wave's `HOW_MANY_COMPILES` and `HOW_MANY_SKIPPED` (shown by
`cubelab.widgets.Quiz`) are count exercises like any other.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from cubelab.exercises.base import Exercise, Result, Status, grading_client, results
from cubelab.exercises.kinds import (CallsExercise, CountExercise, FailedBuffersExercise,
                                     KernelExercise, KernelIdDiffExercise, RunReport,
                                     ValueExercise, count_compiles, names_of, record_run)

__all__ = ["get", "register", "keys", "chapter_modules", "EXERCISES", "Exercise", "Result",
           "Status", "Verdict", "RunReport", "CountExercise", "ValueExercise",
           "KernelIdDiffExercise", "FailedBuffersExercise", "CallsExercise", "KernelExercise",
           "record_run", "count_compiles", "compile_count_exercise", "grading_client", "results",
           "names_of",
           "HOW_MANY_COMPILES", "HOW_MANY_SKIPPED"]

Verdict = Result  # the first wave's name for a check's outcome

EXERCISES: dict[str, Exercise] = {}

# chapter modules hold exercises; the rest of the package is the machinery
_CHAPTER = re.compile(r"^(ch\d+|puzzles)$")


def register(*exercises: Exercise) -> None:
    """Add exercises to the registry (a chapter module calls this for each it declares)."""
    for e in exercises:
        if e.key in EXERCISES and EXERCISES[e.key] is not e:
            existing = EXERCISES[e.key]
            if type(existing) is not type(e) or existing.title != e.title:
                raise ValueError(f"two exercises share the key {e.key!r}")
        EXERCISES[e.key] = e


def chapter_modules() -> list[str]:
    """Names of the modules that hold exercises (`ch01` ..., `puzzles`), found on disk."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if _CHAPTER.match(m.name))


def get(key: str) -> Exercise:
    """The exercise registered under `key` ("ch03.four_launches"), importing its module."""
    if key not in EXERCISES:
        module = key.split(".", 1)[0]
        if _CHAPTER.match(module):
            try:
                importlib.import_module(f"{__name__}.{module}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{module}":
                    raise
    try:
        return EXERCISES[key]
    except KeyError:
        raise KeyError(f"no exercise {key!r}; known: {', '.join(keys()) or 'none'}") from None


def keys() -> list[str]:
    """Every exercise key of every chapter module (imports them all)."""
    for m in chapter_modules():
        importlib.import_module(f"{__name__}.{m}")
    return sorted(EXERCISES)


def compile_count_exercise(key: str, title: str, question: str, code: str, launches: list,
                           explanation: str = "", hint: str = "") -> CountExercise:
    """Declare a "how many compiles?" exercise in a few lines."""
    ex = CountExercise(key, title, question, hint or _COMPILE_HINT, code=code,
                       launches=launches, explanation=explanation)
    register(ex)
    return ex


_COMPILE_HINT = ("A launch compiles when its KernelId is new: kernel type, address type, "
                 "cube_dim, execution mode and the Info (Comptime values, vector width). "
                 "Runtime data and the cube count are not in the key.")

from cubelab.exercises.seed_quizzes import HOW_MANY_COMPILES, HOW_MANY_SKIPPED  # noqa: E402
