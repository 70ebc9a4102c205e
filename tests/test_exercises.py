"""Every exercise of every chapter, every variant, on both runtimes: a blank answer is
"unanswered"; every listed wrong answer and every answer a misconception predicts is "wrong", with
a hint (or, for a kernel that does not compile, its own error) and nothing that holds the
answer; the solution (notebooks/solutions/, which computes from the student's variant) is
"correct"; the variants of a value exercise answer differently; every exercise has three hint
tiers.

Exercises are found through `cubelab.exercises.keys()`, which imports every chapter module on
disk — a new chapter's exercises are tested without editing this file. Every variant runs on the
CPU runtime; on wgpu, the variant of one student (a second runtime for each of them would double
this file's time and prove the runtimes agree, which tests/parity.py and the notebooks already
do). Plus the framework's own rules: how answers are read, the grading client, `show` never
raising.
"""

from __future__ import annotations

import numpy as np
import pytest

import cubelab.exercises as ex
from cubelab.exercises.students import variant_index
from tests.chapters import all_solutions, solved_answer

KEYS = [k for k in ex.keys() if "." in k]  # chapter exercises ("ch03.x"); the quizzes are tested
SOLUTIONS = all_solutions()
VARIANTS = [(k, i) for k in KEYS for i in range(len(ex.all_variants(k)))]


def student_of(key: str, index: int) -> str:
    """A student id whose variant of `key` is `index`."""
    n = len(ex.all_variants(key))
    return next(s for s in (f"student{i}" for i in range(1000))
                if variant_index(s, key, n) == index)


def test_every_chapter_exercise_has_a_solution_wrong_answers_and_three_hint_tiers():
    assert not [k for k in KEYS if k not in SOLUTIONS], "exercises without a solution section"
    assert not [k for k in KEYS if not ex.get(k).wrong_answers()], "exercises without a wrong answer"
    assert not [k for k in SOLUTIONS if k not in KEYS], "solutions of unknown exercises"
    thin = [k for k in KEYS if len(ex.get(k).hints()) < 3]
    assert not thin, f"exercises without a nudge, a concept and a worked step: {thin}"


@pytest.mark.parametrize("key", KEYS)
def test_a_blank_answer_is_unanswered(key, client):
    r = ex.get(key).check(..., client)
    assert r.status == "unanswered" and not r.correct and "`...`" in r.message


def _rejects(key: str, exercise: ex.Exercise, client) -> None:  # type: ignore[no-untyped-def]
    for wrong in exercise.wrong_answers():
        r = exercise.check(wrong, client)
        assert r.status == "wrong", f"{key} {exercise.variant} accepted the wrong answer " \
                                    f"{wrong!r}: {r}"
        # a kernel that does not compile is told its own error (caret, hint), not the exercise's
        assert r.hint or r.error is not None, f"{key} rejected {wrong!r} without a hint"
        assert r.report is None and not hasattr(r, "expected")


@pytest.mark.parametrize("key, index", VARIANTS, ids=[f"{k}[{i}]" for k, i in VARIANTS])
def test_every_variant_rejects_its_wrong_and_misconception_answers(key, index, cpu_client):
    _rejects(key, ex.all_variants(key)[index], cpu_client)


@pytest.mark.parametrize("key", KEYS)
def test_wrong_answers_are_rejected_on_wgpu_too(key, wgpu_client):
    _rejects(key, ex.get(key), wgpu_client)


@pytest.mark.parametrize("key, index", VARIANTS, ids=[f"{k}[{i}]" for k, i in VARIANTS])
def test_the_solution_is_accepted_for_every_variant(key, index, cpu_client, monkeypatch):
    monkeypatch.setenv("CUBELAB_STUDENT", student_of(key, index))
    answer = solved_answer(key, SOLUTIONS[key], cpu_client)
    r = ex.get(key).check(answer, cpu_client)
    assert r.status == "correct", str(r)


@pytest.mark.parametrize("key", KEYS)
def test_the_solution_is_accepted_on_wgpu(key, wgpu_client):
    answer = solved_answer(key, SOLUTIONS[key], wgpu_client)
    r = ex.get(key).check(answer, wgpu_client)
    assert r.status == "correct", str(r)


VALUE_KEYS = [k for k in KEYS if len(ex.all_variants(k)) > 1 and ex.get(k).takes_text]


@pytest.mark.parametrize("key", VALUE_KEYS)
def test_the_variants_of_a_value_exercise_answer_differently(key, cpu_client):
    truths = [e._truth(cpu_client) for e in ex.all_variants(key)]
    for i, a in enumerate(truths):
        for b in truths[i + 1:]:
            assert not ex.same(a, b), f"{key}: two variants answer {a!r}"


# -- the framework's rules ------------------------------------------------------------------------

def test_get_names_the_known_keys_when_a_key_is_unknown():
    with pytest.raises(KeyError, match="no exercise 'ch99.nothing'"):
        ex.get("ch99.nothing")


def test_the_first_wave_quizzes_are_count_exercises(client):
    assert ex.get("seed000-how-many-compiles") is ex.HOW_MANY_COMPILES
    r = ex.HOW_MANY_COMPILES.check(3, client)
    assert r.correct and r.report.compiles == 3 and r.report.hits == 1
    wrong = ex.HOW_MANY_COMPILES.check(4, client)
    assert wrong.status == "wrong" and "KernelId" in wrong.hint and "3" not in wrong.message
    assert wrong.report is None


def test_a_count_answer_must_be_a_whole_number(cpu_client):
    for bad in ("three", 2.5, True):
        r = ex.HOW_MANY_COMPILES.check(bad, cpu_client)
        assert r.status == "wrong" and "whole number" in r.message and r.unreadable


def test_names_are_read_from_text_or_collections():
    assert ex.names_of("mode, cube_dim") == ex.names_of(["cube_dim", "mode"]) == \
        {"mode", "cube_dim"}
    assert ex.names_of("none") == ex.names_of(set()) == ex.names_of("") == set()
    assert ex.names_of(3) is None


def test_grading_uses_the_cpu_runtime_when_no_client_is_given(monkeypatch):
    monkeypatch.setenv("CUBELAB_GRADING", "1")
    assert ex.grading_client().name() == "cpu<numpy>"


def test_show_never_raises_and_records_the_status(cpu_client):
    class Broken(ex.CountExercise):
        def run(self, client=None):  # type: ignore[no-untyped-def]
            raise RuntimeError("the exercise itself is broken")

    b = Broken("test.broken", "broken", "?", "a hint")
    r = b.show(1, cpu_client)
    assert r.status == "wrong" and "RuntimeError" in r.message
    assert ex.results()["test.broken"] == "wrong"
    assert b.show(..., cpu_client).status == "unanswered"
    assert "not answered yet" in b.show(...)._repr_html_()


def test_the_exercise_widget_checks_what_is_typed(client):
    from cubelab.widgets.exercise import ExerciseView

    view = ExerciseView(ex.HOW_MANY_COMPILES.show(..., client))
    assert view.answer is not None and view.answer.value == ""
    assert view.submit("4").status == "wrong"
    assert 'data-status="wrong"' in view.verdict.value
    assert view.submit("3").correct and 'data-status="correct"' in view.verdict.value


def test_a_kernel_exercise_compares_with_the_spec_and_sees_out_of_bounds(client):
    from cubelab.prelude import BufferArg, CubeCount, CubeDim, Slice, SliceMut, cube, f32
    from cubelab.prelude import ABSOLUTE_POS  # noqa: F401 - read by the kernels below

    from tests.fixtures.kernels_for_exercises import double_guarded, double_unguarded, double_wrong

    def launch(k, c, h):  # type: ignore[no-untyped-def]
        k.launch(c, CubeCount.Static(1), CubeDim.new_1d(8),
                 BufferArg.from_raw_parts(h["x"], 6), BufferArg.from_raw_parts(h["out"], 6))

    e = ex.KernelExercise(
        "test.double", "double", "out = 2 x", "double each item",
        inputs=lambda: {"x": np.arange(6, dtype=np.float32),
                        "out": np.zeros(6, dtype=np.float32)},
        spec=lambda b: {"out": 2 * b["x"]}, launch=launch)
    assert e.check(double_guarded, client).correct
    wrong = e.check(double_wrong, client)
    assert wrong.status == "wrong" and "out[1] = " in wrong.details
    oob = e.check(double_unguarded, client)
    assert oob.status == "wrong" and "unit 6 reads x[6] but x has 6 items" in oob.details
    assert "Guard" in oob.hint
    assert e.check(lambda: None, client).status == "wrong"
    del cube, f32, Slice, SliceMut
