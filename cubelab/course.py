"""`cubelab course build`: the chapter notebooks as nbgrader *source* assignments.

    cubelab course build                  every notebooks/NN_*.ipynb and capstone_*.ipynb →
                                          course/source/<stem>/<stem>.ipynb
    cubelab course build 03 05            only chapters 03 and 05
    cubelab course build --points 2       two points per exercise (default 1)

The contract, cell by cell (the exercise-cell convention of docs/exercises.md: an exercise is a
question, an answer and a check cell, each tagged `{"cubelab": {"exercise": KEY, "role": ...}}`):

- the *answer* cell becomes an nbgrader solution cell: the chapter's template stays on top, and
  below it a `### BEGIN SOLUTION` … `### END SOLUTION` region holds the solved source from
  `notebooks/solutions/<stem>.py`. `nbgrader generate_assignment` cuts the region out (the
  course's `nbgrader_config.py` sets an empty code stub), so the student receives exactly the
  chapter's template — kernel with its blank, `answer = ...` — and the teacher's source notebook
  runs the solution (it redefines the template's names, so it must come after the template);
- the *check* cell becomes a graded, locked autograder test cell worth `points`: it runs
  `cubelab.exercises.get(KEY).check(answer)` — the real launches, not an answer key — prints the
  verdict and asserts the status is "correct", with the hint as the assertion's message, so the
  feedback a student gets names the exercise and says why;
- the *question* cell (markdown, or for an exercise with variants a code cell that calls
  `.ask()`, which prints the question with the student's own numbers) is locked like prose;
- every other cell (prose, set-up, experiments) is read-only: nbgrader locks it in
  the student's copy and `autograde` restores it from the source if a student edited it anyway,
  so what is graded is the student's answers run through the teacher's chapter.

Grading is deterministic because `course/nbgrader_config.py` sets `CUBELAB_GRADING=1` (a check
without a client runs on the CPU runtime) and `CUBELAB_DEVICE=cpu` (the chapter's own cells too),
which every kernel nbgrader starts inherits. Each submission is graded against its own student's
variants: in an autograde run `cubelab.exercises` takes the student id from the submission's
folder (`autograded/<student>/<assignment>/`, `exercises/students.py`), so the question cell
and the check see the numbers the student was shown (on a JupyterHub the hub user name is both
the login name the student's own session used and nbgrader's student id). The trap: a grade_id is the exercise key with dots
made dashes, and it must stay stable across rebuilds — renaming a key after students submitted
orphans their grades in the gradebook.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["BuildError", "Chapter", "build", "build_chapter", "read_solutions", "add_parser"]

SOLUTION_MARK = re.compile(r"^# %% exercise:\s*(\S+)\s*$")
# a chapter (two-digit prefix) or a part's capstone project, graded the same way
CHAPTER_NAME = re.compile(r"^(\d\d_|capstone_).+\.ipynb$")
ROLES = ("question", "answer", "check")


class BuildError(Exception):
    """The chapters and solutions do not make a course; the message says where and what to do."""


@dataclass
class Chapter:
    """One built source assignment: where it went and what it grades."""

    name: str
    path: Path
    exercises: list[str]
    points: float


def read_solutions(path: Path) -> dict[str, str]:
    """`# %% exercise: KEY` sections of a solutions file → {KEY: solved answer-cell source}."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot read the solutions ({exc}) — hint: save it as UTF-8 "
                         "text") from None
    for line in text.splitlines():
        m = SOLUTION_MARK.match(line)
        if m:
            if m.group(1) in sections:
                raise BuildError(f"{path}: exercise {m.group(1)!r} has two solution sections — "
                                 "hint: keep one `# %% exercise:` section per key")
            current = sections[m.group(1)] = []
        elif line.startswith("# %%"):
            current = None  # any other cell marker ends the section
        elif current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip("\n") for key, lines in sections.items()}


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _grade_id(key: str, suffix: str = "") -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", key) + suffix


def _nbgrader(cell: dict[str, Any], grade_id: str, *, solution: bool = False, grade: bool = False,
              locked: bool = False, points: float | None = None) -> None:
    meta: dict[str, Any] = {"schema_version": 3, "grade_id": grade_id, "solution": solution,
                            "grade": grade, "locked": locked}
    if grade:
        meta["points"] = points
    cell.setdefault("metadata", {})["nbgrader"] = meta


def graded_test_source(key: str) -> str:
    """The autograder test that replaces an exercise's check cell."""
    return (f"# Graded (locked): runs your answer for real; when grading, on the CPU runtime.\n"
            f"import cubelab.exercises\n"
            f"_verdict = cubelab.exercises.get({key!r}).check(answer)\n"
            f"print(f\"{key}: {{_verdict.status}} — {{_verdict.message}}\")\n"
            f"assert _verdict.status == \"correct\", (\n"
            f"    f\"exercise {key} is {{_verdict.status}}: {{_verdict.hint}}\")")


def _registered(key: str) -> bool:
    import cubelab.exercises

    try:
        cubelab.exercises.get(key)
    except KeyError:
        return False
    return True


def _read_notebook(notebook: Path) -> dict[str, Any]:
    """The notebook's JSON, or a BuildError that names it and says what is wrong, in one line."""
    try:
        text = notebook.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{notebook}: cannot read it ({exc}) — hint: save it again from "
                         "Jupyter") from None
    if not text.strip():
        raise BuildError(f"{notebook}: the file is empty, not a notebook — hint: open it in "
                         "Jupyter and save it, or remove it from the chapters' folder")
    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise BuildError(f"{notebook}: not a notebook (its JSON breaks at line {getattr(exc, 'lineno', '?')}: "
                         f"{getattr(exc, 'msg', exc)}) — hint: restore it from git, or open it in "
                         "Jupyter and save it again") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise BuildError(f"{notebook}: not a notebook (no list of cells at its top level) — hint: "
                         "restore it from git, or open it in Jupyter and save it again")
    return nb


def _cubelab_tag(cell: Any, where: str) -> dict[str, Any]:
    """The cell's `metadata.cubelab` (the exercise-cell convention), checked for its shape."""
    if not isinstance(cell, dict):
        raise BuildError(f"{where}: a cell is a {type(cell).__name__}, not an object — "
                         "hint: the notebook is damaged, restore it from git")
    meta = cell.get("metadata", {})
    tag = meta.get("cubelab", {}) if isinstance(meta, dict) else None
    if not isinstance(tag, dict):
        raise BuildError(f"{where}: metadata.cubelab is {json.dumps(tag)[:60]}; the convention "
                         'is an object — hint: write {"exercise": KEY, "role": "question" | "answer" | '
                         '"check"} (docs/exercises.md)')
    return tag


def build_chapter(notebook: Path, solutions: dict[str, str], out_dir: Path,
                  points: float = 1.0) -> Chapter:
    """Turn one chapter notebook into `out_dir/<stem>/<stem>.ipynb` (an nbgrader source)."""
    nb = _read_notebook(notebook)
    stem = notebook.stem
    cells: list[dict[str, Any]] = nb.get("cells", [])
    seen: dict[str, list[str]] = {}
    exercises: list[str] = []
    out_cells = []
    tags = [_cubelab_tag(c, f"{notebook.name} cell {i + 1}") for i, c in enumerate(cells)]
    for index, cell in enumerate(cells):
        cell = copy.deepcopy(cell)
        tag = tags[index]
        key, role = tag.get("exercise"), tag.get("role")
        where = f"{notebook.name} cell {index + 1}"
        if key is not None and not isinstance(key, str):
            raise BuildError(f"{where}: metadata.cubelab.exercise is {json.dumps(key)}; an "
                             "exercise key is a string — hint: write it as one, e.g. \"ch05.guard\"")
        if key is None:
            # the cell's nbformat id when it has one: stable when a teacher inserts a cell
            _nbgrader(cell, f"{stem}-{cell.get('id') or f'cell-{index + 1}'}", locked=True)
        elif role not in ROLES:
            raise BuildError(f"{where}: exercise {key!r} has role {role!r} — hint: the "
                             f"convention's roles are {', '.join(ROLES)}")
        else:
            roles = seen.setdefault(key, [])
            expected = ROLES[len(roles)] if len(roles) < len(ROLES) else None
            if role != expected:
                raise BuildError(f"{where}: exercise {key!r} cell with role {role!r} where the "
                                 f"convention wants {expected!r} — hint: question, answer, "
                                 "check, three consecutive cells")
            roles.append(role)
            if role == "question":
                _nbgrader(cell, _grade_id(key, "-question"), locked=True)
            elif role == "answer":
                if cell.get("cell_type") != "code":
                    raise BuildError(f"{where}: the answer cell of {key!r} must be a code cell "
                                     "— hint: change the cell's type to code")
                if key not in solutions:
                    raise BuildError(f"{where}: exercise {key!r} has no solution — hint: add a "
                                     "section "
                                     f"`# %% exercise: {key}` to notebooks/solutions/{stem}.py")
                template = _source(cell).rstrip("\n")
                cell["source"] = (f"{template}\n### BEGIN SOLUTION\n{solutions[key]}\n"
                                  "### END SOLUTION")
                _nbgrader(cell, _grade_id(key, "-answer"), solution=True)
            else:
                if cell.get("cell_type") != "code":
                    raise BuildError(f"{where}: the check cell of {key!r} must be a code cell "
                                     "— hint: change the cell's type to code")
                cell["source"] = graded_test_source(key)
                _nbgrader(cell, _grade_id(key), grade=True, locked=True, points=points)
                exercises.append(key)
            if cell.get("cell_type") == "code":
                cell["outputs"], cell["execution_count"] = [], None
        out_cells.append(cell)
        if (key is not None and index + 1 < len(cells)
                and len(seen[key]) < len(ROLES)
                and tags[index + 1].get("exercise") != key):
            raise BuildError(f"{where}: exercise {key!r} stops after its {role} cell — hint: "
                             "the convention is three consecutive cells: question, answer, "
                             "check")
    unknown = [k for k in seen if not _registered(k)]
    if unknown:
        raise BuildError(f"{notebook.name}: no exercise registered as {', '.join(unknown)} in "
                         "cubelab.exercises, so every student would score zero — hint: fix "
                         "the key in the cells' metadata or register the exercise")
    incomplete = [k for k, r in seen.items() if len(r) != len(ROLES)]
    if incomplete:
        raise BuildError(f"{notebook.name}: exercise(s) {', '.join(incomplete)} lack a check "
                         "cell — hint: add the check cell right after the answer cell")
    unused = sorted(set(solutions) - set(seen))
    if unused:
        raise BuildError(f"notebooks/solutions/{stem}.py: solution(s) for {', '.join(unused)} "
                         f"match no exercise in {notebook.name} — hint: rename the section "
                         "to the exercise's key, or remove it")
    nb["cells"] = out_cells
    nb.setdefault("metadata", {}).setdefault(
        "kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    target = out_dir / stem / f"{stem}.ipynb"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise BuildError(f"{notebook.name}: cannot write {target} ({exc.strerror or exc}) — "
                         "hint: check that the course folder is writable (--course)") from None
    return Chapter(stem, target, exercises, points * len(exercises))


def chapters(notebooks: Path, only: Sequence[str] = ()) -> list[Path]:
    """The chapter notebooks (two-digit prefix) and the capstones (`capstone_*`), optionally only
    those whose name starts so."""
    found = sorted(p for p in notebooks.glob("*.ipynb") if CHAPTER_NAME.match(p.name))
    if only:
        found = [p for p in found if any(p.name.startswith(o) for o in only)]
        missing = [o for o in only if not any(p.name.startswith(o) for p in found)]
        if missing:
            raise BuildError(f"no chapter in {notebooks} starts with {', '.join(missing)} — "
                             "hint: give two-digit prefixes of the chapters, e.g. 01 05")
    return found


def build(notebooks: Path, course: Path, only: Sequence[str] = (),
          points: float = 1.0) -> list[Chapter]:
    """Write every chapter's source assignment under `course/source/`."""
    if not notebooks.is_dir():
        raise BuildError(f"no notebooks folder at {notebooks} — hint: run from the repository "
                         "root, or pass --notebooks")
    built = []
    for nb in chapters(notebooks, only):
        sol_file = notebooks / "solutions" / f"{nb.stem}.py"
        solutions = read_solutions(sol_file) if sol_file.is_file() else {}
        built.append(build_chapter(nb, solutions, course / "source", points))
    return built


def add_parser(sub: Any) -> None:
    """Register `cubelab course build` on the CLI's sub-command parsers."""
    course = sub.add_parser("course", help="the chapters: copy them into a folder, or build "
                                           "nbgrader assignments (teachers)")
    csub = course.add_subparsers(dest="course_command", required=True)
    b = csub.add_parser("build", help="write nbgrader source assignments into course/source/")
    b.add_argument("chapters", nargs="*", help="chapter prefixes, e.g. 01 03 (default: all)")
    b.add_argument("--notebooks", type=Path, default=Path("notebooks"),
                   help="the chapters' folder (default: notebooks)")
    b.add_argument("--course", type=Path, default=Path("course"),
                   help="the nbgrader course folder (default: course)")
    b.add_argument("--points", type=float, default=1.0, help="points per exercise (default 1)")
    b.set_defaults(fn=_cmd_build)
    from cubelab.lab import add_parsers  # `cubelab course copy`, `cubelab lab` (students)

    add_parsers(sub, csub)


def _cmd_build(args: argparse.Namespace, out: Any) -> None:
    # plain print, not `out`: paths may hold brackets (rich markup) and lines must not wrap
    try:
        built = build(args.notebooks, args.course, args.chapters, args.points)
    except BuildError as exc:
        raise SystemExit(f"cubelab course build: {exc}") from None  # hint: the BuildError's
    for ch in built:
        print(f"{ch.path}: {len(ch.exercises)} graded exercise(s), {ch.points:g} point(s)")
    config = args.course / "nbgrader_config.py"
    shipped = Path(__file__).resolve().parent.parent / "course" / "nbgrader_config.py"
    if not config.is_file() and shipped.is_file():
        shutil.copy(shipped, config)
        print(f"{config}: copied from {shipped}")
    elif not config.is_file():
        print(f"note: {config} is missing; take course/nbgrader_config.py from the cubelab "
              "repository (it sets the empty code stub and CPU grading)")
    print(f"next: cd {args.course} && nbgrader generate_assignment <chapter>")
