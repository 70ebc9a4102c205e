"""The answer box keeps the answer as written and reads it as the student means it; a kernel
answer that does not compile is told its own error.

- Round trips: an answer cell's value (list, tuple, set, dict, string, number) is shown in the
  box as its literal — a list in its own order, never sorted — and "Check" reads back exactly
  that value.
- Typed forms: with or without brackets, commas or spaces, quotes or none; text that is no
  answer (a bracket left open) is "could not read your answer" with how to write it, and is not
  graded.
- A kernel answer that fails to compile: the verdict is its error (place, caret, the error's
  hint), without the exercise's hint.
"""

from __future__ import annotations

import numpy as np
import pytest

import cubelab.exercises as ex
from cubelab.exercises.answer_text import Unreadable, as_text, read

ROUND_TRIPS = [
    [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3],  # the list: never shown sorted
    (3, 1, 2),
    {"b", "c"},
    {"relu": True, "n": 4},
    "calling",
    "calling thread",
    7,
    2.5,
    True,
    [],
]


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=[type(v).__name__ + str(i)
                                                    for i, v in enumerate(ROUND_TRIPS)])
def test_an_answer_round_trips_through_the_box_as_written(value):
    text = as_text(value)
    back = read(text)
    assert back == value and type(back) is type(value), (value, text, back)
    if isinstance(value, list):
        assert text == repr(value)  # the order the student wrote, not sorted


@pytest.mark.parametrize("text, value", [
    ("0 0 0 0 1 1 1 1", [0, 0, 0, 0, 1, 1, 1, 1]),
    ("0, 1, 2, 3, 0", [0, 1, 2, 3, 0]),
    ("[0 1 2]", [0, 1, 2]),
    ("b, c", ["b", "c"]),
    ("{b, c}", {"b", "c"}),
    ("'b' 'c'", ["b", "c"]),  # Python alone would read 'bc'
    ('"device"', "device"),
    ("`mode`, cube_dim", ["mode", "cube_dim"]),
    ("false", False),
    ("  3 ", 3),
    ("", ...),
])
def test_an_unbracketed_or_quoted_answer_is_read_as_meant(text, value):
    assert read(text) == value


@pytest.mark.parametrize("text", ["[0, 1, 2", "0, 1, two]", "{b: c}", "'calling"])
def test_text_that_is_no_answer_says_how_to_write_one(text):
    with pytest.raises(Unreadable, match="could not read .* write"):
        read(text)


@pytest.fixture(scope="module")
def cpu():  # type: ignore[no-untyped-def]
    from cubelab.runtime.device import Device

    return Device.cpu().client()


def test_the_box_shows_a_list_answer_in_its_order_and_checks_what_was_typed(cpu):
    from cubelab.widgets.exercise import ExerciseView

    e = ex.get("ch01.cube_of_each_unit")
    written = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]  # a wrong answer, in a deliberate order
    view = ExerciseView(e.show(written, cpu))
    assert view.answer is not None and view.answer.value == repr(written)
    assert view.result.status == "wrong"
    right = e.value(cpu)
    typed = " ".join(str(v) for v in right)  # the right answer, without brackets
    assert view.submit(typed).correct, view.result
    assert view.answer.value == repr(written)  # submit never rewrites the box
    assert view.result.answer == right


def test_an_unreadable_answer_is_not_graded_and_says_how_to_write_it(cpu):
    from cubelab.widgets.exercise import ExerciseView

    view = ExerciseView(ex.get("ch03.four_launches").show(..., cpu))
    before = view.result
    assert view.submit("three") is before  # not a count: not graded
    assert 'data-status="unreadable"' in view.verdict.value
    assert "could not read your answer" in view.verdict.value
    assert "whole number" in view.model()["unreadable"]
    assert view.submit("[3").status == "unanswered"
    assert view.submit("3").status in ("correct", "wrong")  # a count: graded for real
    assert 'data-status="unreadable"' not in view.verdict.value


def test_a_names_answer_is_read_in_every_form(cpu):
    e = ex.get("ch07.which_failed")
    forms = ["b, c", "b c", "[b, c]", "{'b', 'c'}", "'b' 'c'", "c,b"]
    statuses = {f: e.check(e.parse(f), cpu).status for f in forms}
    assert len(set(statuses.values())) == 1, statuses  # one set of names, one verdict


def test_a_kernel_answer_that_does_not_compile_shows_its_error_as_the_verdict(client):
    from cubelab.prelude import BufferArg, CubeCount, CubeDim

    from tests.fixtures.kernels_for_exercises import double_does_not_compile

    def launch(k, c, h):  # type: ignore[no-untyped-def]
        k.launch(c, CubeCount.Static(1), CubeDim.new_1d(8),
                 BufferArg.from_raw_parts(h["x"], 6), BufferArg.from_raw_parts(h["out"], 6))

    e = ex.KernelExercise(
        "test.double_compile", "double", "out = 2 x", "guard the access with x.len()",
        inputs=lambda: {"x": np.arange(6, dtype=np.float32),
                        "out": np.zeros(6, dtype=np.float32)},
        spec=lambda b: {"out": 2 * b["x"]}, launch=launch)
    r = e.show(double_does_not_compile, client)
    assert r.status == "wrong" and r.message == "your kernel does not compile"
    assert r.hint == "", "the exercise's hint is about something else"
    assert "BufferFailure" not in r.details and "KernelSourceError" in r.details
    assert "in kernel `double_does_not_compile`" in r.details
    lines = r.details.splitlines()
    caret = next(i for i, ln in enumerate(lines) if ln.strip() == "^")
    assert "ABSOLUTE_POS / 2" in lines[caret - 1]
    start = lines[caret - 1].index("ABSOLUTE_POS / 2")
    assert start <= lines[caret].index("^") < start + len("ABSOLUTE_POS / 2")
    assert "hint: " in r.details and "//" in r.details  # the error's own hint
    page = r._repr_html_()
    assert "Hint:" not in page and "guard the access" not in page
    assert "your kernel does not compile</div>" in page  # no dangling colon
