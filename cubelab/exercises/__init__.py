"""Exercises whose answers are checked against a real run, not against an answer key.

    import cubelab.exercises as ex
    e = ex.get("ch03.four_launches")        # this student's variant (student=None: see below)
    e.ask()                                 # the question, with this student's numbers
    r = e.check(3)                          # runs the launches of that variant, counts compiles
    r.status, r.hint, r.message, r.correct  # a wrong result never holds the expected answer
    e.show(answer)                          # in a notebook's check cell: never raises

Every exercise lives in a chapter module (`ch01.py` ... `ch08.py`, `puzzles.py`) as data, under a
stable key `"<module>.<name>"`; `get(key)` imports that module on first use. An exercise whose
answer is a value has variants: `get(key, student)` returns the exercise of that student's
variant, where `student=None` reads `CUBELAB_STUDENT`, then nbgrader's student id in a grading
run, then the login name (`variants.py`). The kinds — predict a count, predict a value, predict
a KernelId diff, which buffers end failed, which calls raise, fix or write a kernel — are in
`kinds.py`; the result, the tiered hints and the rules every check keeps are in `base.py`; the
notebook convention (three cells per exercise, solutions in `notebooks/solutions/`) in
`docs/exercises.md`. The first wave's `HOW_MANY_COMPILES` and `HOW_MANY_SKIPPED` (shown by
`cubelab.widgets.Quiz`) are count exercises like any other.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from cubelab.errors import hinted
from cubelab.exercises.base import (Exercise, Misconception, Question, Result, Status,
                                    grading_client, results, same)
from cubelab.exercises.kinds import (CallsExercise, CountExercise, FailedBuffersExercise,
                                     KernelExercise, KernelIdDiffExercise, RunReport,
                                     ValueExercise, count_compiles, names_of, record_run)
from cubelab.exercises.students import Variant, student_id, variant_index

__all__ = ["get", "register", "variants", "keys", "all_variants", "chapter_modules",
           "EXERCISES", "Exercise", "Result", "Status", "Verdict", "RunReport", "Misconception",
           "Question", "Variants", "Variant", "CountExercise", "ValueExercise",
           "KernelIdDiffExercise", "FailedBuffersExercise", "CallsExercise", "KernelExercise",
           "record_run", "count_compiles", "compile_count_exercise", "grading_client", "results",
           "names_of", "same", "student_id", "HOW_MANY_COMPILES", "HOW_MANY_SKIPPED"]

Verdict = Result  # the first wave's name for a check's outcome


@dataclass
class Variants:
    """An exercise with variants: `make(variant)` declares the exercise of one variant (its
    question, its launches and its wrong answers all read the variant's parameters)."""

    key: str
    params: tuple[Mapping[str, Any], ...]
    make: Callable[[Variant], Exercise]
    _bound: dict[int, Exercise] = field(default_factory=dict, repr=False)

    def of(self, index: int) -> Exercise:
        """The exercise of variant `index` (declared once, then kept)."""
        if index not in self._bound:
            v = Variant(self.params[index], index)
            ex = self.make(v)
            ex.key, ex.variant, ex.variant_count = self.key, v, len(self.params)
            self._bound[index] = ex
        return self._bound[index]

    def for_student(self, student: str) -> Exercise:
        return self.of(variant_index(student, self.key, len(self.params)))

    @property
    def title(self) -> str:
        return self.of(0).title


EXERCISES: dict[str, Exercise | Variants] = {}

# chapter modules hold exercises (a capstone's module is named as its notebook); the rest of the
# package is the machinery
_CHAPTER = re.compile(r"^(ch\d+|puzzles(_cubelab)?|capstone_\w+)$")


def register(*exercises: Exercise | Variants) -> None:
    """Add exercises to the registry (a chapter module calls this for each it declares)."""
    for e in exercises:
        if e.key in EXERCISES and EXERCISES[e.key] is not e:
            existing = EXERCISES[e.key]
            if type(existing) is not type(e) or existing.title != e.title:
                raise ValueError(hinted(f"two exercises share the key {e.key!r}",
                                        "give each exercise a key of its own"))
        EXERCISES[e.key] = e


def variants(key: str, params: Iterable[Mapping[str, Any]]) -> Callable[[Callable[[Variant], Exercise]], Variants]:
    """Declare an exercise with variants:

        @variants("ch01.units_in_a_launch", [dict(count=(3, 2, 1), dim=(4, 2)), ...])
        def units_in_a_launch(v):
            return ValueExercise("ch01.units_in_a_launch", ..., value=lambda c: run(c, v))
    """
    def declare(make: Callable[[Variant], Exercise]) -> Variants:
        vs = Variants(key, tuple(params), make)
        if len(vs.params) < 1:
            raise ValueError(hinted(f"{key}: an exercise with variants needs at least one",
                                    "list the variants, or leave them out"))
        register(vs)
        return vs
    return declare


def chapter_modules() -> list[str]:
    """Names of the modules that hold exercises (`ch01` ..., `puzzles`, `capstone_*`), found on
    disk."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if _CHAPTER.match(m.name))


class UnknownExercise(KeyError):
    """`get(key)` of a key no exercise has. A KeyError, printed as its message (a KeyError
    prints the repr of its argument, which would show the hint's line break as `\\n`)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _entry(key: str) -> Exercise | Variants:
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
        raise UnknownExercise(hinted(f"no exercise {key!r}",
                                     f"the keys are {', '.join(keys()) or 'none'}")) from None


def get(key: str, student: str | None = None) -> Exercise:
    """The exercise registered under `key` ("ch03.four_launches"), importing its module; for an
    exercise with variants, the one of `student` (None: `variants.student_id()`)."""
    entry = _entry(key)
    if isinstance(entry, Variants):
        return entry.for_student(student if student is not None else student_id())
    return entry


def all_variants(key: str) -> list[Exercise]:
    """Every variant of an exercise (one element for an exercise without variants)."""
    entry = _entry(key)
    if isinstance(entry, Variants):
        return [entry.of(i) for i in range(len(entry.params))]
    return [entry]


def keys() -> list[str]:
    """Every exercise key of every chapter module (imports them all)."""
    for m in chapter_modules():
        importlib.import_module(f"{__name__}.{m}")
    return sorted(EXERCISES)


def compile_count_exercise(key: str, title: str, question: str, code: str, launches: list,
                           explanation: str = "", hint: str = "") -> CountExercise:
    """Declare a "how many compiles?" exercise in a few lines."""
    ex = CountExercise(key, title, question, hint or _COMPILE_HINT, code=code,
                       launches=launches, explanation=explanation, nudge=_COMPILE_NUDGE,
                       worked=_COMPILE_WORKED)
    register(ex)
    return ex


_COMPILE_NUDGE = ("Go through the launches one at a time and ask, for each: has a launch "
                  "with exactly this KernelId run before?")
_COMPILE_HINT = ("A launch compiles when its KernelId is new: kernel type, address type, "
                 "cube_dim, execution mode and the Info (Comptime values, vector width). "
                 "Runtime data and the cube count are not in the key.")
_COMPILE_WORKED = ("A worked example on another program: `scale` launched with cube dims 8, 4, "
                   "8 and scalars 2.0, 2.0, 3.0. Launch 1 is new (compile). Launch 2 changes "
                   "cube_dim, a KernelId field (compile). Launch 3 has launch 1's cube_dim; its "
                   "scalar differs, but a scalar is runtime data (cache hit). Two compiles.")

from cubelab.exercises.seed_quizzes import HOW_MANY_COMPILES, HOW_MANY_SKIPPED  # noqa: E402
