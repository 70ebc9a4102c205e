"""The exercise framework's promises, on small exercises declared here (the chapters' own
exercises are held to the same rules in tests/test_exercises.py):

- a variant per student, stable, from `CUBELAB_STUDENT`, nbgrader's student id in a grading
  run, or the login name; numeric exercises take their variants from a code in which any two
  students' codewords differ in at least half of the places;
- a result that is not correct holds nothing that reveals the answer — no attribute, nothing in
  its repr, text or HTML;
- hints in tiers (nudge, concept, worked step), one more per wrong attempt, a misconception
  named when the answer is the one it predicts; an unreadable answer is not an attempt;
- a wrong kernel is told what its run showed: which item differs, which unit wrote it, what it
  read.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import cubelab.exercises as ex
from cubelab.exercises import students as V
from cubelab.exercises.base import Misconception, same


# -- who the student is, which variant is theirs -------------------------------------------------

def test_the_student_is_cubelab_student_then_nbgraders_id_then_the_login(monkeypatch, tmp_path):
    import getpass

    monkeypatch.setenv("CUBELAB_STUDENT", "ada")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    submission = tmp_path / "autograded" / "grace" / "03_kernel_id_and_cache"
    submission.mkdir(parents=True)
    monkeypatch.chdir(submission)
    assert V.student_id() == "ada"
    monkeypatch.delenv("CUBELAB_STUDENT")
    assert V.student_id() == "grace"  # the folder nbgrader grades the submission in
    monkeypatch.delenv("NBGRADER_EXECUTION")
    assert V.student_id() == getpass.getuser()  # outside a grading run the folder means nothing


def test_a_students_variant_is_stable_and_in_range():
    for key, k in [("ch03.four_launches", 3), ("ch07.which_failed", 4), ("ch99.x", 5)]:
        seen = {V.variant_index(f"s{i}", key, k) for i in range(60)}
        assert seen == set(range(k)), (key, seen)
        assert V.variant_index("ada", key, k) == V.variant_index("ada", key, k)


def test_a_variant_parameter_cannot_be_named_index():
    # `v.index` is the variant's number: a parameter `index` would silently read as it
    with pytest.raises(ValueError, match="cannot be named `index`"):
        V.Variant({"index": 3, "a": 2.0}, 1)
    assert V.Variant({"item": 3}, 1).item == 3 and V.Variant({"item": 3}, 1).index == 1


def test_the_numeric_code_keeps_any_two_codewords_at_least_half_apart():
    words = set()
    for m in itertools.product(range(3), repeat=4):
        words.add(tuple(sum(m[i] * V._G[i][j] for i in range(4)) % 3 for j in range(V.BLOCK)))
    assert len(words) == 81
    for a, b in itertools.combinations(words, 2):
        assert sum(x != y for x, y in zip(a, b)) >= V.BLOCK // 2


def test_two_students_who_copy_numbers_have_other_variants_in_half_the_numeric_exercises():
    students = [f"student{i:02}" for i in range(40)]
    numeric = V.NUMERIC[:V.BLOCK]
    differ_everywhere = 0
    for a, b in itertools.combinations(students, 2):
        if V.codeword(a) == V.codeword(b):
            continue  # one pair in 81 shares a codeword
        differ = sum(V.variant_index(a, k, 3) != V.variant_index(b, k, 3) for k in numeric)
        assert differ >= len(numeric) // 2, (a, b, differ)
        differ_everywhere += differ == len(numeric)
    assert differ_everywhere  # and most pairs differ in far more


# -- a small exercise with variants ---------------------------------------------------------------

@pytest.fixture
def units():
    """A count-the-units exercise with three variants, registered for this test only."""
    from cubelab.prelude import BufferArg, CubeCount, CubeDim
    from tests.fixtures.kernels_for_exercises import count_units

    def run(client, v):  # type: ignore[no-untyped-def]
        counter = client.create_from_slice(np.zeros(1, np.uint32).tobytes())
        count_units.launch(client, CubeCount.Static(*v.count), CubeDim.new_1d(v.dim),
                           BufferArg.from_raw_parts(counter, 1))
        return int(np.frombuffer(client.read_one(counter), np.uint32)[0])

    def make(v):  # type: ignore[no-untyped-def]
        return ex.ValueExercise(
            "test.units", "How many units?", f"count {v.count} x dim {v.dim}: how many units?",
            "multiply every count by the cube dim", nudge="every unit adds one",
            worked="a worked step on another launch: 2 cubes of 3 units are 6 units",
            misconceptions=[Misconception("only the cubes", lambda v: v.count[0] * v.count[1],
                                          "that counts cubes, not units")],
            value=lambda c: run(c, v))

    vs = ex.variants("test.units", [dict(count=(3, 2), dim=4), dict(count=(5, 1), dim=8),
                                    dict(count=(2, 2), dim=15)])(make)
    yield vs
    ex.EXERCISES.pop("test.units", None)


def test_get_returns_each_students_variant_and_its_question(units, monkeypatch):
    monkeypatch.setenv("CUBELAB_STUDENT", "ada")
    mine = ex.get("test.units")
    assert mine is ex.get("test.units", "ada") and mine.variant.index == \
        V.variant_index("ada", "test.units", 3)
    assert str(mine.variant.count) in mine.ask().markdown()
    assert f"your variant ({mine.variant.index + 1} of 3)" in mine.ask()._repr_markdown_()
    others = ex.all_variants("test.units")
    assert len(others) == 3 and mine in others


def test_the_variants_answer_differently_and_each_check_runs_its_own(units, cpu_client):
    truths = [e._truth(cpu_client) for e in ex.all_variants("test.units")]
    assert truths == [24, 40, 60]
    for e, truth in zip(ex.all_variants("test.units"), truths):
        assert e.check(truth, cpu_client).correct
        for other in set(truths) - {truth}:
            assert e.check(other, cpu_client).status == "wrong"


LEAKS = ("expected", "truth", "answer_key")


def test_a_wrong_result_holds_nothing_that_reveals_the_answer(units, cpu_client):
    e = ex.all_variants("test.units")[1]  # answer 40
    r = e.check(41, cpu_client)
    assert r.status == "wrong" and r.report is None
    assert not any(hasattr(r, name) for name in LEAKS)
    shown = " ".join([repr(r), str(r), r._repr_html_(), r.message, r.hint, r.details])
    assert not re.search(r"\b40\b", shown), shown
    from cubelab.widgets.exercise import ExerciseView

    view = ExerciseView(r)
    assert not re.search(r"\b40\b", view.verdict.value)
    assert e.check(40, cpu_client).correct


def test_answering_one_number_everywhere_passes_no_more_than_two_numeric_exercises(cpu_client):
    """Over every variant of every numeric exercise, no number is the answer of more than two
    exercises: "answer k everywhere" passes at most two, whoever the student is."""
    answers: dict[int, set[str]] = {}
    for key in V.NUMERIC:
        for e in ex.all_variants(key):
            answers.setdefault(int(e._truth(cpu_client)), set()).add(key)
        truths = [int(e._truth(cpu_client)) for e in ex.all_variants(key)]
        assert len(set(truths)) == len(truths), f"{key}: two variants answer the same {truths}"
    crowded = {k: sorted(v) for k, v in answers.items() if len(v) > 2}
    assert not crowded, crowded


def test_hints_come_in_tiers_one_more_per_wrong_attempt(units, cpu_client):
    e = ex.all_variants("test.units")[0]  # answer 24
    e.reset_attempts()
    levels = [e.check(n, cpu_client) for n in (1, 2, 3, 4)]
    assert [r.level for r in levels] == [1, 2, 3, 3] and [r.attempt for r in levels] == [1, 2, 3, 4]
    assert [r.hint for r in levels[:3]] == e.hints()
    assert "(1 of 3)" in levels[0]._repr_html_()
    assert e.check(24, cpu_client).correct
    assert e.check(5, cpu_client).level == 1  # a right answer starts the hints over


def test_a_misconceptions_answer_gets_a_hint_that_names_it(units, cpu_client):
    e = ex.all_variants("test.units")[0]  # count (3, 2), dim 4: the cubes alone are 6
    e.reset_attempts()
    r = e.check(6, cpu_client)
    assert r.hint.startswith("that counts cubes, not units")
    assert 6 in e.wrong_answers()


def test_an_unreadable_answer_says_how_to_write_it_and_is_not_an_attempt(cpu_client):
    e = ex.HOW_MANY_COMPILES
    e.reset_attempts()
    r = e.check("three", cpu_client)
    assert r.status == "wrong" and r.unreadable and "whole number" in r.message
    assert e.check(7, cpu_client).attempt == 1


def test_same_compares_values_not_truthiness():
    assert same([0, 1], np.array([0, 1])) and same((0, 1), [0, 1]) and same(" Device ", "device")
    assert same([3, 1], {1, 3}) and not same([1, 1, 3], {1, 3}) and not same("1, 3", {1, 3})
    assert same({"launch": [6], "unchecked": []}, {"Launch": [6], "unchecked": []})
    assert not same(0, False) and not same(True, 1) and not same(1, "1")
    assert same((2, 0), (2, 0)) and not same((2, 0), (0, 2))


# -- kernels: what the run showed -----------------------------------------------------------------

def test_a_wrong_kernel_is_told_which_unit_wrote_the_item_that_differs(client):
    from tests.fixtures.kernels_for_exercises import double_wrong
    from cubelab.prelude import BufferArg, CubeCount, CubeDim

    def launch(k, c, h, n):  # type: ignore[no-untyped-def]
        k.launch(c, CubeCount.Static(1), CubeDim.new_1d(8),
                 BufferArg.from_raw_parts(h["x"], n), BufferArg.from_raw_parts(h["out"], n))

    e = ex.KernelExercise(
        "test.double2", "double", "out = 2 x", "double each item",
        inputs=lambda n: {"x": np.arange(n, dtype=np.float32), "out": np.zeros(n, np.float32)},
        spec=lambda b, n: {"out": 2 * b["x"]}, launch=launch, cases=(6, 5))
    r = e.check(double_wrong, client)
    assert r.status == "wrong" and "on 6:" in r.message
    assert re.search(r"out\[1\] = .*, the spec says 2\.0 — written by unit 1 \(line \d+: ",
                     r.details), r.details
    assert "which read x[1]" in r.details
