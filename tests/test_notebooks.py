"""Every chapter notebook runs top to bottom on both runtimes, as a student would meet it and as
a student would finish it.

For each notebook in notebooks/ (found by glob) and each runtime (`CUBELAB_DEVICE=cpu|wgpu`,
which `Device.default()` obeys — the notebooks never name a runtime):

- blank: as committed (no outputs), every cell runs without an error or a line on stderr (a
  warning is a line on stderr), every exercise's check reports "unanswered", and the chapter
  prints what it must show (`chapters.MUST_SHOW`) and every output of the CubeCL chapters it
  teaches, as they print it (`chapters.SEED_OUTPUTS`, with cubelab's documented differences as
  patterns: the debug log's compile block, the generated items and launch, the quiz's answer,
  the out-of-bounds rows ...);
- solved (on the CPU runtime; `test_exercises.py` accepts every solution on both runtimes): each
  exercise's answer cell replaced by its section of notebooks/solutions/<stem>.py, the notebook
  runs the same way and every exercise reports "correct".

Cells tagged `raises-exception` may raise (none of the chapters needs it). How long each run
takes is measured by benchmarks/notebooks.py, not asserted here.

What git would commit of each notebook has no outputs. A student who runs and saves a notebook
has outputs in the working file; in a checkout set up by `scripts/setup.sh` the nbstripout git
filter strips them on the way into git, so that is neither a change nor a failure (the runs
start from cleared outputs). What must never happen is a commit *with* outputs: that check reads
the notebook as git's clean filter hands it to the repository.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests import student_view
from tests.chapters import (CHAPTERS, MUST_SHOW, SEED_OUTPUTS, exercise_cells, printed,
                            read_results, results_cell, solutions)

nbformat = pytest.importorskip("nbformat", reason="the test extra (nbformat, nbclient) is missing")
from nbclient import NotebookClient  # noqa: E402

RUNTIMES = ["cpu", "wgpu"]


def what_git_would_commit(path: Path) -> str:
    """The file as `git add` would store it: through its clean filter, when one is configured."""
    text = path.read_text()
    git = ["git", "-C", str(path.parent)]
    attr = subprocess.run([*git, "check-attr", "filter", "--", path.name], capture_output=True,
                          text=True, timeout=60)
    name = attr.stdout.rsplit(": ", 1)[-1].strip() if attr.returncode == 0 else ""
    if name in ("", "unspecified", "unset", "set"):
        return text
    clean = subprocess.run([*git, "config", f"filter.{name}.clean"], capture_output=True,
                           text=True, timeout=60).stdout.strip()
    if not clean:
        return text  # an attribute without a configured filter: git stores the file as it is
    cmd = clean.replace("%f", shlex.quote(path.name))
    out = subprocess.run(cmd, shell=True, input=text, capture_output=True, text=True,  # noqa: S602
                         cwd=path.parent, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_there_are_chapters():
    assert CHAPTERS, "notebooks/ is empty"


# CJK ideographs, kana and hangul, and full-width punctuation: they render as boxes on machines
# without those fonts, and the course is in English.
CJK = re.compile("[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                 "\uff00-\uffef]")


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_is_in_english_and_has_at_least_three_exercises(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        found = CJK.findall(cell.source)
        assert not found, f"{path.name} cell {i} has CJK characters {found[:5]}"
    assert len(exercise_cells(nb, path.name)) >= 3, f"{path.name} has fewer than 3 exercises"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_is_committed_without_outputs(path):
    nb = nbformat.reads(what_git_would_commit(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), (
                f"{path.name} would be committed with outputs: strip it "
                f"(nbstripout {path}), or run scripts/setup.sh once to install the git filter")


def execute(path, runtime, request, monkeypatch, solved=False):  # type: ignore[no-untyped-def]
    if runtime == "wgpu":
        request.getfixturevalue("wgpu_client")  # skips (or fails in CI) without an adapter
    monkeypatch.setenv("CUBELAB_DEVICE", runtime)
    monkeypatch.delenv("CUBELAB_GRADING", raising=False)
    monkeypatch.delenv("CUBELAB_DEBUG_LOG", raising=False)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # a notebook saved after a run still runs from a clean state
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    exercises = exercise_cells(nb, path.name)
    if solved:
        sol = solutions(path.stem)
        missing = [e.key for e in exercises if e.key not in sol]
        assert not missing, f"notebooks/solutions/{path.stem}.py has no section for {missing}"
        stale = sorted(set(sol) - {e.key for e in exercises})
        assert not stale, f"notebooks/solutions/{path.stem}.py solves exercises not in the " \
                          f"notebook: {stale}"
        for e in exercises:
            nb.cells[e.cells[1]].source = sol[e.key]
    nb.cells.append(nbformat.v4.new_code_cell(results_cell()))
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error" and \
                    "raises-exception" not in cell.metadata.get("tags", []):
                pytest.fail(f"{path.name} cell {i} raised {o['ename']}: {o['evalue']}\n"
                            f"{cell.source}")
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                pytest.fail(f"{path.name} cell {i} wrote to stderr:\n{o['text']}\n--- cell:\n"
                            f"{cell.source}")
    # nothing a student sees shows IPython's temp files, cubelab's frames or raw backticks
    shown = student_view.problems(nb, path.name)
    assert not shown, "\n".join(shown)
    return exercises, read_results(nb), printed(nb)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_runs_blank_and_every_exercise_says_unanswered(path, runtime, request,
                                                                 monkeypatch):
    exercises, results, text = execute(path, runtime, request, monkeypatch)
    assert {e.key: results.get(e.key) for e in exercises} == \
        {e.key: "unanswered" for e in exercises}
    for line in MUST_SHOW.get(path.stem, []):
        assert line in text, f"{path.name} does not show {line!r}"
    for seed in SEED_OUTPUTS.get(path.stem, []):
        missing = seed.find(text)
        assert missing is None, f"{path.name} on {runtime} does not print {seed.what}: " \
                                f"no line matches {missing}"


# Solved, on the CPU runtime only: every solution is also accepted on both runtimes by
# tests/test_exercises.py (which runs each solution section against each client), so a second
# solved run per chapter on lavapipe would cost the shared 2-core machine ~15 s a chapter and
# prove nothing new; the blank runs above execute every cell on both runtimes.
@pytest.mark.parametrize("runtime", ["cpu"])
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_runs_solved_and_every_exercise_says_correct(path, runtime, request,
                                                               monkeypatch):
    exercises, results, _ = execute(path, runtime, request, monkeypatch, solved=True)
    assert {e.key: results.get(e.key) for e in exercises} == \
        {e.key: "correct" for e in exercises}
