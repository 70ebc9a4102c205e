"""Reading the course: chapter notebooks, their exercise cells and their solutions.

The convention (docs/exercises.md): an exercise is three consecutive cells whose metadata is
`{"cubelab": {"exercise": key, "role": "question" | "answer" | "check"}}`; the answer cell ends
with `answer = ...`; `notebooks/solutions/<stem>.py` holds one section per exercise, opened by
`# %% exercise: <key>`, with the solved source of that answer cell. Everything here is found by
globbing, so a new chapter is picked up without editing the tests.
"""

from __future__ import annotations

import json
import linecache
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
CHAPTERS = sorted(NOTEBOOKS.glob("*.ipynb"))
ROLES = ("question", "answer", "check")
RESULTS_MARK = "CUBELAB-EXERCISE-RESULTS "
# what a solution section may assume besides itself: the notebooks' first-cell imports
SOLUTION_PRELUDE = "import numpy as np\nimport cubelab\nfrom cubelab.prelude import *\n"


# What a chapter must print when it runs as committed (the "must show"): text each
# chapter's outputs contain, on both runtimes. A chapter not listed has no such line.
MUST_SHOW: dict[str, list[str]] = {
    # the comptime `if` stays a plain Python `if` in the expanded source; the runtime one is IR
    "02_what_cube_generates": ["    if relu:\n", "__cl.if_(__s, __cl.cmp(__s, 'lt', ABSOLUTE_POS"],
    # the seed's out-of-bounds rows, with default settings
    "05_bounds": ["oob checked=true out = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]\n"
                  "oob checked=false out = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]"],
    # the seed's four steps: silent compile failure, check reports it, relaunch repairs, dry run
    "07_failure_is_buffer_state": ["1. launch returned None", "2. check([out]) raised",
                                   "3. relaunch", "4. under dry_run"],
}


def printed(nb: Any) -> str:
    """Everything the notebook's cells printed or displayed as text."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o.get("text", ""))
            elif "data" in o:
                out.append(o["data"].get("text/plain", ""))
    return "".join(out)


@dataclass
class ExerciseCells:
    key: str
    cells: list[int]  # indices of the question, answer and check cells


def exercise_cells(nb: Any, name: str = "") -> list[ExerciseCells]:
    """The notebook's exercises, after checking each is three consecutive cells in order."""
    found: dict[str, dict[str, int]] = {}
    order: list[str] = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("cubelab", {})
        if "exercise" not in meta:
            continue
        key, role = meta["exercise"], meta.get("role")
        assert role in ROLES, f"{name} cell {i}: role {role!r} is not one of {ROLES}"
        roles = found.setdefault(key, {})
        assert role not in roles, f"{name}: {key} has two {role} cells"
        roles[role] = i
        if key not in order:
            order.append(key)
    out = []
    for key in order:
        roles = found[key]
        assert set(roles) == set(ROLES), f"{name}: {key} has cells {sorted(roles)}"
        idx = [roles[r] for r in ROLES]
        assert idx == list(range(idx[0], idx[0] + 3)), \
            f"{name}: {key}'s question, answer and check cells must be consecutive: {idx}"
        q, a, c = (nb.cells[i] for i in idx)
        assert a.cell_type == "code" and c.cell_type == "code", key
        # the question: markdown, or (an exercise with variants) a code cell that asks it with
        # this student's numbers
        assert q.cell_type == "markdown" or (
            re.fullmatch(rf"""cubelab\.exercises\.get\(["']{re.escape(key)}["']\)\.ask\(\)""",
                         q.source.strip())), \
            f"{name}: {key}'s question cell is markdown or exactly `...get({key!r}).ask()`"
        last = [ln for ln in a.source.strip().splitlines() if ln.strip()][-1]
        assert re.fullmatch(r"answer\s*=\s*\.\.\.\s*(#.*)?", last.strip()), \
            f"{name}: {key}'s answer cell must end with a blank `answer = ...`, not {last!r}"
        assert f'"{key}"' in c.source or f"'{key}'" in c.source, \
            f"{name}: {key}'s check cell does not name its exercise"
        out.append(ExerciseCells(key, idx))
    return out


def solutions(stem: str) -> dict[str, str]:
    """{key: solved answer-cell source} from notebooks/solutions/<stem>.py."""
    path = SOLUTIONS / f"{stem}.py"
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    key = None
    lines: list[str] = []
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*%%\s*exercise:\s*(\S+)\s*$", line)
        if m:
            if key is not None:
                out[key] = "\n".join(lines).strip() + "\n"
            key, lines = m.group(1), []
        elif key is not None:
            lines.append(line)
    if key is not None:
        out[key] = "\n".join(lines).strip() + "\n"
    return out


def all_solutions() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(SOLUTIONS.glob("*.py")):
        out.update(solutions(path.stem))
    return out


def solved_answer(key: str, source: str, client: Any) -> Any:
    """Run a solution section on its own (with the notebooks' imports and `client`) and return
    its `answer`. The source goes into linecache under a name, as a notebook cell's does, so
    `@cube` can read the kernels it defines."""
    src = SOLUTION_PRELUDE + source
    filename = f"<solution {key}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": f"solution_{key.replace('.', '_')}", "client": client}
    exec(compile(src, filename, "exec"), ns)
    return ns["answer"]


def results_cell() -> str:
    return ("import json as _json, cubelab.exercises as _ex\n"
            f"print({RESULTS_MARK!r} + _json.dumps(_ex.results()))")


def read_results(nb: Any) -> dict[str, str]:
    for o in nb.cells[-1].get("outputs", []):
        if o.get("output_type") == "stream" and RESULTS_MARK in o.get("text", ""):
            return json.loads(o["text"].split(RESULTS_MARK, 1)[1])
    raise AssertionError("the results cell printed nothing")
