"""What grading costs: every chapter built, released and autograded for a solved and a blank
submission, with the scores (solved must get full points, blank zero) and the seconds per
submission.

    PYTHONPATH=$PWD python benchmarks/autograde_time.py [STEM ...]

Runs the real commands in a temporary course folder: `cubelab course build`, then nbgrader's
`generate_assignment` and `autograde` per chapter (with `course/nbgrader_config.py`, so on the
CPU runtime). `nbgrader autograde` grades one submission after another in one process, each in a
fresh kernel; docs/classroom.md turns the seconds into the time a class of 500 takes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import table  # noqa: E402

from cubelab.course import build, read_solutions  # noqa: E402

SUBMISSIONS = ("solved", "blank")


def nbgrader(course: Path, *args: str) -> None:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get(
                   "PYTHONPATH")])]))
    subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    from nbgrader.api import Gradebook

    only = sys.argv[1:]
    course = Path(tempfile.mkdtemp(prefix="cubelab-course-"))
    (course / "nbgrader_config.py").write_text((ROOT / "course" / "nbgrader_config.py").read_text())
    chapters = [c for c in build(ROOT / "notebooks", course, only) if c.exercises]
    rows = []
    for ch in chapters:
        nbgrader(course, "generate_assignment", ch.name)
        release = json.loads((course / "release" / ch.name / f"{ch.name}.ipynb").read_text())
        solutions = read_solutions(ROOT / "notebooks" / "solutions" / f"{ch.name}.py")
        for student in SUBMISSIONS:
            nb = json.loads(json.dumps(release))
            for cell in nb["cells"]:
                tag = cell["metadata"].get("cubelab", {})
                if student == "solved" and tag.get("role") == "answer":
                    cell["source"] = solutions[tag["exercise"]]
            target = course / "submitted" / student / ch.name / f"{ch.name}.ipynb"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(nb))
        t0, c0 = time.perf_counter(), _children_cpu()
        nbgrader(course, "autograde", ch.name)
        per = (time.perf_counter() - t0) / len(SUBMISSIONS)
        cpu = (_children_cpu() - c0) / len(SUBMISSIONS)  # nbgrader and the kernels it reaped
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            scores = {s: gb.find_submission(ch.name, s).score for s in SUBMISSIONS}
        ok = scores["solved"] == ch.points and scores["blank"] == 0
        rows.append([ch.name, len(ch.exercises), f"{scores['solved']:g}/{ch.points:g}",
                     f"{scores['blank']:g}/{ch.points:g}", f"{per:.1f}", f"{cpu:.1f}",
                     "yes" if ok else "NO"])
        print(f"  {ch.name:30} solved {scores['solved']:g}/{ch.points:g}  blank "
              f"{scores['blank']:g}  {per:5.1f} s, {cpu:5.1f} CPU s per submission", flush=True)
    print()
    print(table(f"autograde_time — nbgrader autograde per chapter, {os.cpu_count()} cores",
                ["chapter", "exercises", "solved", "blank", "s / submission", "CPU s / submission",
                 "as expected"],
                rows))
    if not all(r[-1] == "yes" for r in rows):
        raise SystemExit("some chapter did not grade as expected")


if __name__ == "__main__":
    main()
