"""`cubelab course build` and the nbgrader round trip it must survive unchanged.

The round trip runs the real nbgrader commands (generate_assignment, autograde, generate_feedback)
on a one-chapter course built from `tests/course_fixture/` — a chapter shaped exactly by the
exercise-cell convention, small enough that grading three students takes seconds — and reads the
grades back from nbgrader's gradebook. `test_the_real_chapters_build` builds the course's own
chapters.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "course_fixture"))
import fixture_exercises  # noqa: E402

from cubelab.cli import main
from cubelab.course import BuildError, build, build_chapter, read_solutions

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "course_fixture"
CHAPTER = "01_fixture"
KEYS = ("fixture.how_many_compiles", "fixture.double", "fixture.units")


def _two_students_with_other_variants() -> tuple[str, str]:
    """Two student ids whose variants of fixture.units differ (the first two that do)."""
    from cubelab.exercises.students import variant_index

    n = len(fixture_exercises.UNITS.params)
    first = "original"
    other = next(s for s in (f"copier{i}" for i in range(100))
                 if variant_index(s, "fixture.units", n) != variant_index(first, "fixture.units",
                                                                         n))
    return first, other


def _nbgrader(course: Path, *args: str) -> str:
    env = dict(os.environ)
    # nbgrader runs `alembic` by name; the kernels it starts must import cubelab and the fixture.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(FIXTURE), env.get("PYTHONPATH", "")])
    for var in ("CUBELAB_GRADING", "CUBELAB_DEVICE"):  # the course's config must set these
        env.pop(var, None)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _role(cell: dict) -> tuple[str | None, str | None]:
    tag = cell["metadata"].get("cubelab", {})
    return tag.get("exercise"), tag.get("role")


def _src(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@pytest.fixture(scope="module", autouse=True)
def fixture_registered() -> Iterator[None]:
    """The fixture chapter's exercises are registered in this process for this module only."""
    with fixture_exercises.registered():
        yield


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, fixture_registered: None) -> dict:
    """Build, release, submit three students (and one tampering), autograde, feedback."""
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "course" / "nbgrader_config.py", course)
    assert main(["course", "build", "--notebooks", str(FIXTURE / "notebooks"),
                 "--course", str(course)]) == 0
    _nbgrader(course, "generate_assignment", CHAPTER)
    release = course / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    solutions = read_solutions(FIXTURE / "notebooks" / "solutions" / f"{CHAPTER}.py")

    def submit(student: str, answers: dict[str, str], tamper: str | None = None) -> None:
        nb = json.loads(release.read_text())
        for cell in nb["cells"]:
            key, role = _role(cell)
            if role == "answer" and key in answers:
                cell["source"] = answers[key]
            if role == "check" and key == tamper:  # a student "fixes" the test to pass
                cell["source"] = 'print("correct")'
        target = course / "submitted" / student / CHAPTER / f"{CHAPTER}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(nb))

    submit("all_correct", solutions)
    submit("blank", {})
    submit("one_wrong", {**solutions, KEYS[0]: "answer = 4"}, tamper=KEYS[0])
    # a copier hands in the original's number for the exercise with variants
    original, copier = _two_students_with_other_variants()
    theirs = fixture_exercises.UNITS.for_student(original).variant
    copied = f"answer = {theirs.cubes * theirs.units}"
    submit(original, {**solutions, KEYS[2]: copied})
    submit(copier, {**solutions, KEYS[2]: copied})
    log = _nbgrader(course, "autograde", CHAPTER)
    _nbgrader(course, "generate_feedback", CHAPTER)

    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ("all_correct", "blank", "one_wrong", original, copier):
            sub = gb.find_submission(CHAPTER, student)
            scores[student] = {g.name: g.score for g in sub.notebooks[0].grades}
            scores[student]["total"] = (sub.score, sub.max_score)
    return {"course": course, "release": release, "log": log, "scores": scores,
            "original": original, "copier": copier}


def test_build_keeps_the_template_above_a_solution_region(tmp_path: Path) -> None:
    notebooks = FIXTURE / "notebooks"
    solutions = read_solutions(notebooks / "solutions" / f"{CHAPTER}.py")
    chapter = build_chapter(notebooks / f"{CHAPTER}.ipynb", solutions, tmp_path)
    assert chapter.exercises == list(KEYS) and chapter.points == 3
    original = {(_role(c)): _src(c) for c in _cells(notebooks / f"{CHAPTER}.ipynb")}
    for cell in _cells(chapter.path):
        key, role = _role(cell)
        grading = cell["metadata"]["nbgrader"]
        if role == "answer":
            template, region = _src(cell).split("\n### BEGIN SOLUTION\n")
            assert template == original[key, role]
            assert region == solutions[key] + "\n### END SOLUTION"
            assert grading["solution"] and not grading["locked"] and not grading["grade"]
        elif role == "check":
            assert f"cubelab.exercises.get({key!r}).check(answer)" in _src(cell)
            assert grading["grade"] and grading["locked"] and grading["points"] == 1
        else:
            assert grading["locked"] and not grading["grade"] and not grading["solution"]


def test_build_refuses_an_exercise_without_a_solution(tmp_path: Path) -> None:
    notebooks = FIXTURE / "notebooks"
    solutions = read_solutions(notebooks / "solutions" / f"{CHAPTER}.py")
    del solutions[KEYS[1]]
    with pytest.raises(BuildError, match=r"fixture.double.*# %% exercise: fixture.double"):
        build_chapter(notebooks / f"{CHAPTER}.ipynb", solutions, tmp_path)


def test_build_refuses_cells_out_of_the_conventions_order(tmp_path: Path) -> None:
    nb = json.loads((FIXTURE / "notebooks" / f"{CHAPTER}.ipynb").read_text())
    answer = next(i for i, c in enumerate(nb["cells"]) if _role(c)[1] == "answer")
    nb["cells"][answer], nb["cells"][answer + 1] = nb["cells"][answer + 1], nb["cells"][answer]
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / f"{CHAPTER}.ipynb").write_text(json.dumps(nb))
    with pytest.raises(BuildError, match=r"role 'check' where the convention wants 'answer'"):
        build(tmp_path / "notebooks", tmp_path / "course")


def test_the_released_assignment_is_the_chapter_with_graded_cells_locked(graded: dict) -> None:
    chapter = {(_role(c)): c for c in _cells(FIXTURE / "notebooks" / f"{CHAPTER}.ipynb")}
    for cell in _cells(graded["release"]):
        key, role = _role(cell)
        assert "BEGIN SOLUTION" not in _src(cell) and "answer = 3" not in _src(cell)
        if role == "answer":  # the student gets the chapter's template back, blank answer and all
            assert _src(cell).rstrip("\n") == _src(chapter[key, role])
            assert cell["metadata"].get("editable", True)
        else:
            assert cell["metadata"]["editable"] is False
            assert cell["metadata"]["deletable"] is False


def test_autograde_gives_full_points_to_correct_answers(graded: dict) -> None:
    assert graded["scores"]["all_correct"]["total"] == (3.0, 3.0)


def test_autograde_gives_zero_to_a_blank_submission(graded: dict) -> None:
    assert graded["scores"]["blank"]["total"] == (0.0, 3.0)


def test_autograde_judges_each_submission_against_its_students_variant(graded: dict) -> None:
    """The same number is right for the student whose launch it counts and wrong for a student
    who copied it: grading reads the student id from the submission (not the grader's login)."""
    scores = graded["scores"]
    assert scores[graded["original"]]["fixture-units"] == 1.0
    assert scores[graded["copier"]]["fixture-units"] == 0.0
    released = graded["course"] / "autograded" / graded["copier"] / CHAPTER / f"{CHAPTER}.ipynb"
    asked = next(c for c in _cells(released) if _role(c) == (KEYS[2], "question"))
    shown = "".join("".join(o.get("data", {}).get("text/plain", "") or o.get("text", ""))
                    for o in asked.get("outputs", []))
    theirs = fixture_exercises.UNITS.for_student(graded["copier"]).variant
    assert f"CubeCount.Static({theirs.cubes})" in shown, shown


def test_one_wrong_answer_loses_that_exercise_only(graded: dict) -> None:
    scores = graded["scores"]["one_wrong"]
    assert scores["fixture-how_many_compiles"] == 0.0
    assert scores["fixture-double"] == 1.0


def test_autograde_restores_a_locked_cell_the_student_edited(graded: dict) -> None:
    assert re.search(r"checksum' for cell fixture-how_many_compiles has changed", graded["log"])
    graded_nb = graded["course"] / "autograded" / "one_wrong" / CHAPTER / f"{CHAPTER}.ipynb"
    test = next(c for c in _cells(graded_nb) if _role(c) == (KEYS[0], "check"))
    assert "check(answer)" in _src(test) and 'print("correct")' not in _src(test)


def test_feedback_names_the_failed_exercise_and_its_hint(graded: dict) -> None:
    page = graded["course"] / "feedback" / "one_wrong" / CHAPTER / f"{CHAPTER}.html"
    text = unescape(re.sub(r"<[^>]+>", "", page.read_text()))
    hint = fixture_exercises.HOW_MANY.hints()[0]  # a first wrong attempt gets the first tier
    assert f"exercise fixture.how_many_compiles is wrong: {hint[:60]}" in text
    assert "fixture.how_many_compiles: wrong — 4 is not what the run did." in text


def test_grading_runs_every_cell_on_the_cpu_runtime(graded: dict) -> None:
    graded_nb = graded["course"] / "autograded" / "all_correct" / CHAPTER / f"{CHAPTER}.ipynb"
    printed = "".join("".join(o.get("text", "")) for c in _cells(graded_nb)
                      for o in c.get("outputs", []))
    assert "running on cpu<numpy>" in printed


def test_every_chapter_of_the_course_builds(tmp_path: Path) -> None:
    import cubelab.exercises

    built = build(ROOT / "notebooks", tmp_path)
    chapters = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb")
                      if re.match(r"(\d\d|capstone)_", p.name))
    assert [c.name for c in built] == chapters
    for chapter in built:
        cells = _cells(chapter.path)
        checks = [_role(c)[0] for c in cells if _role(c)[1] == "check"]
        assert chapter.exercises == checks
        for key in checks:
            assert cubelab.exercises.get(key).key == key
        solution_file = ROOT / "notebooks" / "solutions" / f"{chapter.name}.py"
        if checks:
            solutions = read_solutions(solution_file)
            for cell in cells:
                if _role(cell)[1] == "answer":
                    assert solutions[_role(cell)[0]] in _src(cell)


def test_a_check_cell_naming_an_unknown_exercise_stops_the_build(tmp_path: Path) -> None:
    nb = json.loads((FIXTURE / "notebooks" / f"{CHAPTER}.ipynb").read_text())
    for cell in nb["cells"]:
        if _role(cell)[0] == KEYS[1]:
            cell["metadata"]["cubelab"]["exercise"] = "fixture.dubble"
    (tmp_path / f"{CHAPTER}.ipynb").write_text(json.dumps(nb))
    solutions = read_solutions(FIXTURE / "notebooks" / "solutions" / f"{CHAPTER}.py")
    solutions["fixture.dubble"] = solutions.pop(KEYS[1])
    with pytest.raises(BuildError, match=r"no exercise registered as fixture.dubble"):
        build_chapter(tmp_path / f"{CHAPTER}.ipynb", solutions, tmp_path / "out")


def test_a_capstone_is_built_and_graded_like_a_chapter(tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    (notebooks / "solutions").mkdir(parents=True)
    shutil.copy(FIXTURE / "notebooks" / f"{CHAPTER}.ipynb", notebooks / "capstone_fixture.ipynb")
    shutil.copy(FIXTURE / "notebooks" / "solutions" / f"{CHAPTER}.py",
                notebooks / "solutions" / "capstone_fixture.py")
    (notebooks / "notes.ipynb").write_text("{}")  # neither a chapter nor a capstone: left out
    (built,) = build(notebooks, tmp_path / "course")
    assert built.name == "capstone_fixture" and built.exercises == list(KEYS)


def _damaged(tmp_path: Path, how: str) -> Path:
    """A chapters folder holding one chapter broken in the way `how` names."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    path = folder / f"{CHAPTER}.ipynb"
    nb = json.loads((FIXTURE / "notebooks" / f"{CHAPTER}.ipynb").read_text())
    if how == "empty":
        path.write_text("")
    elif how == "not-json":
        path.write_text('{"cells": [ {"cell_type": "code", ')
    elif how == "cells-not-a-list":
        path.write_text(json.dumps({"cells": "all of them"}))
    elif how == "tag-is-a-string":
        nb["cells"][1]["metadata"]["cubelab"] = "fixture.double"
        path.write_text(json.dumps(nb))
    elif how == "key-is-a-number":
        nb["cells"][1]["metadata"]["cubelab"] = {"exercise": 7, "role": "question"}
        path.write_text(json.dumps(nb))
    elif how == "not-utf8":
        path.write_bytes(b'{"cells": [], "x": "\xff\xfe"}')
    return folder


@pytest.mark.parametrize("how, says", [
    ("empty", "the file is empty, not a notebook"),
    ("not-json", "not a notebook (its JSON breaks at line 1"),
    ("cells-not-a-list", "not a notebook (no list of cells"),
    ("tag-is-a-string", 'cell 2: metadata.cubelab is "fixture.double"; the convention is an '
                        "object"),
    ("key-is-a-number", "cell 2: metadata.cubelab.exercise is 7; an exercise key is a string"),
    ("not-utf8", "cannot read it"),
])
def test_a_damaged_chapter_stops_the_build_with_one_line_naming_the_notebook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, says: str) -> None:
    folder = _damaged(tmp_path, how)
    with pytest.raises(SystemExit) as info:
        main(["course", "build", "--notebooks", str(folder), "--course", str(tmp_path / "c")])
    message = str(info.value.code)
    assert message.startswith("cubelab course build: ") and "\n" not in message
    assert f"{CHAPTER}.ipynb" in message and says in message, message
    assert " — " in message  # and what to do about it
    assert "Traceback" not in capsys.readouterr().err


def test_the_performance_capstone_round_trips_through_nbgrader(tmp_path: Path) -> None:
    """The real capstone (device peaks, rooflines and all) released, submitted solved, autograded
    on the CPU runtime: full points, against the student's own variant. (A blank submission
    scoring zero is the fixture's round trip above; this one costs a capstone's run.)"""
    name = "capstone_performance"
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course" / "nbgrader_config.py", course)
    assert main(["course", "build", "--notebooks", str(ROOT / "notebooks"), "--course",
                 str(course), name]) == 0
    _nbgrader(course, "generate_assignment", name)
    release = course / "release" / name / f"{name}.ipynb"
    solutions = read_solutions(ROOT / "notebooks" / "solutions" / f"{name}.py")
    nb = json.loads(release.read_text())
    for cell in nb["cells"]:
        key, role = _role(cell)
        if role == "answer":
            cell["source"] = solutions[key]
    target = course / "submitted" / "solver" / name / f"{name}.ipynb"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(nb))
    _nbgrader(course, "autograde", name)

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        solved = gb.find_submission(name, "solver")
        assert {g.name: g.score for g in solved.notebooks[0].grades} and \
            (solved.score, solved.max_score) == (5, 5)


def test_the_compiler_capstones_source_assignment_grades_its_solutions_full_marks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The capstone as nbgrader's source notebook (template, then the solution region, then the
    locked graded checks), run as a grader runs it — the CPU runtime, `CUBELAB_GRADING=1`: every
    graded cell passes. (The round trip through nbgrader itself is the fixture's, above.)"""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    (built,) = build(ROOT / "notebooks", tmp_path, only=["capstone_compiler"])
    monkeypatch.setenv("CUBELAB_GRADING", "1")
    monkeypatch.setenv("CUBELAB_DEVICE", "cpu")
    nb = nbformat.read(built.path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(graded) == len(built.exercises) == 4
    for cell in graded:
        shown = "".join(o.get("text", "") for o in cell.outputs)
        assert ": correct — " in shown, shown


def test_the_runtime_capstone_round_trips_through_nbgrader(tmp_path: Path) -> None:
    """Part II's capstone as a class would get it: built, released, a solved submission
    autograded on the CPU runtime (threads, streams, a capture window and all) — full marks.
    Each other chapter and capstone builds (above); this one is graded for real."""
    name = "capstone_runtime"
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course" / "nbgrader_config.py", course)
    assert main(["course", "build", name, "--notebooks", str(ROOT / "notebooks"),
                 "--course", str(course)]) == 0
    _nbgrader(course, "generate_assignment", name)
    release = json.loads((course / "release" / name / f"{name}.ipynb").read_text())
    solutions = read_solutions(ROOT / "notebooks" / "solutions" / f"{name}.py")
    for cell in release["cells"]:
        key, role = _role(cell)
        if role == "answer":
            assert "BEGIN SOLUTION" not in _src(cell) and _src(cell).rstrip().endswith("...")
            cell["source"] = solutions[key]
    target = course / "submitted" / "student" / name / f"{name}.ipynb"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(release))
    _nbgrader(course, "autograde", name)

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(name, "student")
        assert (sub.score, sub.max_score) == (5.0, 5.0), \
            {g.name: g.score for g in sub.notebooks[0].grades}
