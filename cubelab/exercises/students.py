"""One variant per student: who the student is, and which variant of an exercise is theirs.

    student_id()                        # CUBELAB_STUDENT, else nbgrader's id in a grading run,
                                        # else the login name
    variant_index(student, key, k)      # which of an exercise's k variants is this student's

The contract (shared/DESIGN.md §8): a variant changes what the real run answers — geometry,
sizes, which launch comes first — never only the wording, and the check computes the answer for
the student's variant by running it. The same student always gets the same variant of an
exercise (on any machine, in any process, before and after a teacher rebuilds the course), so
a notebook a student ran in class is graded against the program they were shown.

Why the numeric exercises share one code: two students who copy each other's numbers should
fail most of them. Hashing each (student, exercise) on its own gives two students the same
variant of a 3-variant exercise a third of the time, so some pairs would share most of their
numbers. Instead the numeric exercises listed in `NUMERIC` take their variants, eight at a time,
from a codeword of a ternary [8, 4, 4] linear code (81 codewords of length 8; any two differ in
at least 4 places): two students whose codewords differ — 80 pairs in 81 — have different
variants in at least half of each block of eight, and the variants of one exercise are built to
give different answers (tests/test_exercise_framework.py runs them). An exercise not in
`NUMERIC` (or with a variant count that is not a multiple of 3) is hashed on its own.

The trap: `NUMERIC` is append-only. Its order is the slot each exercise takes in the codeword;
inserting or removing a key moves the slots of every key after it, and with them the variants
of students who already answered.
"""

from __future__ import annotations

import getpass
import hashlib
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from cubelab.errors import hinted

__all__ = ["student_id", "variant_index", "Variant", "NUMERIC", "codeword"]

# The numeric exercises, in the order of their slots in the code (append only; see above).
NUMERIC: tuple[str, ...] = (
    "ch01.units_in_a_launch",
    "ch03.four_launches",
    "ch04.clamps_when_fixed",
    "ch04.msl_cube_dim",
    "ch06.threads",
    "ch08.max_tasks_flushes",
    "ch08.replay_dispatches",
    "ch08.autotune_compiles",
    # the performance track (chapters 12, 13 and its capstone); its exercises whose answers are
    # small counts (ways, compiles) stay out: too few small numbers are left unused
    "ch12.profiled_submissions",
    "ch12.bytes_requested",
    "ch12.flops_counted",
    "ch12.accumulated",
    "ch13.sectors_of_a_stride",
    "ch13.tiled_bytes",
    "capstone_performance.naive_sectors",
    "capstone_performance.naive_flops",
    # the compiler track's numeric exercises (ch10, ch11, its capstone) stay out: their answers
    # are small counts (0-8) that two exercises above already answer, so a block of them would
    # let "answer 3 everywhere" pass a third exercise; each is hashed on its own
)

# Generator [I | S] of a ternary [8, 4, 4] code (found by search; the framework's tests check
# that any two codewords differ in at least 4 places).
_S = ((2, 1, 1, 1), (2, 2, 0, 1), (2, 2, 1, 2), (2, 1, 2, 2))
_G = tuple(tuple(int(i == j) for j in range(4)) + _S[i] for i in range(4))
BLOCK = 8


def _hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")


def codeword(student: str, block: int = 0) -> tuple[int, ...]:
    """The student's codeword for one block of eight numeric exercises."""
    m = _hash("cubelab-variant-block", str(block), student) % 3**4
    msg = [(m // 3**i) % 3 for i in range(4)]
    return tuple(sum(msg[i] * _G[i][j] for i in range(4)) % 3 for j in range(BLOCK))


def variant_index(student: str, key: str, k: int) -> int:
    """Which of the `k` variants of exercise `key` is `student`'s (stable everywhere)."""
    if k <= 1:
        return 0
    if key in NUMERIC and k % 3 == 0:
        block, slot = divmod(NUMERIC.index(key), BLOCK)
        digit = codeword(student, block)[slot]
        return digit + 3 * (_hash("cubelab-variant", key, student) % (k // 3))
    return _hash("cubelab-variant", key, student) % k


def _nbgrader_student() -> str:
    """The student whose submission nbgrader is grading, in a grading run.

    `nbgrader autograde` runs each submission with `NBGRADER_EXECUTION=autograde`, in its own
    folder `<autograded>/<student id>/<assignment>/`: the student is the folder above."""
    if os.environ.get("NBGRADER_EXECUTION") != "autograde":
        return ""
    try:
        return Path.cwd().parent.name
    except OSError:
        return ""


def student_id() -> str:
    """Who the student is: `CUBELAB_STUDENT`, else nbgrader's student id in a grading run, else
    the login name (on a JupyterHub that is the hub user, which nbgrader uses as the id)."""
    named = os.environ.get("CUBELAB_STUDENT", "").strip()
    if named:
        return named
    graded = _nbgrader_student()
    if graded:
        return graded
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a bare container): everyone is "student"
        return "student"


class Variant(Mapping[str, Any]):
    """One variant's parameters: a read-only mapping that also reads as attributes
    (`v.count`, `v["count"]`)."""

    __slots__ = ("_values", "index")

    def __init__(self, values: Mapping[str, Any], index: int = 0) -> None:
        if "index" in values:
            # `v.index` is the variant's own number: a parameter of that name would read as it
            raise ValueError(hinted("a variant parameter cannot be named `index` (v.index is "
                                    "the variant's number)",
                                    "call it `item`, `position` ..."))
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "index", index)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a variant is read-only")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inside = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Variant({inside})"
