"""A student's lab and a teacher's lab: the course's chapters in a folder, JupyterLab on it.

    cubelab course copy ~/cubelab-course      the chapters (no solutions) into a folder
    cubelab lab ~/cubelab-course              ... and JupyterLab there (copies first if empty)
    cubelab lab --teacher ~/course            a teacher's lab: nbgrader's menus and solutions

`bash scripts/lab.sh` (a git checkout) and `pip install "cubelab[lab]"` end here alike: one home
for how the class's JupyterLab starts.

The chapters ship inside the package as `cubelab/chapters/` — in the repository a symbolic link
to `notebooks/`, so they are written once; a wheel holds them as files (`pyproject.toml`'s
package data, `solutions/` left out). `copy_course` copies what is there, minus `solutions/`.

The lab's settings are Jupyter configuration directories shipped in `cubelab/lab_config/`, put
on `JUPYTER_CONFIG_PATH` for this one server — never written into the user's home, whose own
`~/.jupyter` still wins:

- `classroom/` (everyone): no "would you like the news?" prompt, no update check, kernels on
  local IPC sockets instead of unencrypted TCP;
- `student/` (the default): nbgrader's server and JupyterLab extensions off — its menu, its
  "Create Assignment" sidebar and "Validate" button are a teacher's tools, and a venv that ran
  the tests has nbgrader installed — and any `solutions/` folder hidden from the file browser.

`--teacher` leaves both on. The trap: nbgrader shells out to `alembic` by name, so the lab puts
the running interpreter's `bin/` first on PATH (a venv used without being activated otherwise
fails with "no alembic").
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Sequence

from cubelab.errors import hinted

__all__ = ["chapters_dir", "copy_course", "lab_command", "add_parsers", "CONFIG"]

PACKAGE = Path(__file__).resolve().parent
CONFIG = PACKAGE / "lab_config"
_LEFT_OUT = {"solutions", ".ipynb_checkpoints", "__pycache__"}


def chapters_dir() -> Path:
    """Where this installation's chapters are (`cubelab/chapters/`)."""
    here = PACKAGE / "chapters"
    if not any(here.glob("*.ipynb")):
        raise FileNotFoundError(hinted(
            f"this cubelab has no chapters at {here}",
            "reinstall it from a wheel (pip install cubelab), or run from a git checkout"))
    return here


def copy_course(dest: Path, source: Path | None = None) -> list[Path]:
    """Copy the chapters (and their figures) into `dest`, without `solutions/`. A file already
    there is kept — a student's work is never overwritten; returns the files copied."""
    src = source or chapters_dir()
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if _LEFT_OUT & set(rel.parts) or not path.is_file():
            continue
        target = dest / rel
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(target)
    return copied


def lab_command(folder: Path, teacher: bool = False,
                extra: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The JupyterLab command line and environment for `folder` (student or teacher)."""
    dirs = [CONFIG / "classroom"] if teacher else [CONFIG / "student", CONFIG / "classroom"]
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        [str(d) for d in dirs] + ([env["JUPYTER_CONFIG_PATH"]] if env.get("JUPYTER_CONFIG_PATH")
                                  else []))
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")  # containers and cloud machines often give you only root
    return cmd + list(extra), env


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


def _cmd_copy(args: argparse.Namespace, out: Any) -> None:
    try:
        copied = copy_course(args.folder)
    except FileNotFoundError as exc:
        raise SystemExit(f"cubelab course copy: {exc}") from None  # hint: exc's
    kept = "" if copied else " (every chapter was already there: nothing overwritten)"
    print(f"cubelab: {len(copied)} file(s) copied into {args.folder}{kept}")
    print(f"next: cubelab lab {args.folder}")


def _cmd_lab(args: argparse.Namespace, out: Any) -> None:
    folder: Path = args.folder.expanduser().resolve()
    if _missing("jupyterlab"):
        raise SystemExit(hinted("cubelab lab: JupyterLab is not installed here",
                                'pip install "cubelab[lab]"'))
    if args.teacher and _missing("nbgrader"):
        raise SystemExit(hinted("cubelab lab --teacher: nbgrader is not installed here",
                                'pip install "cubelab[teach]" (or: bash scripts/lab.sh '
                                '--teacher)'))
    if folder.exists() and not folder.is_dir():
        raise SystemExit(hinted(f"cubelab lab: {folder} is a file, not a folder",
                                "give a folder: an empty or new one gets the chapters"))
    if not folder.is_dir() or not any(folder.glob("*.ipynb")):
        try:
            copied = copy_course(folder)
        except FileNotFoundError as exc:
            raise SystemExit(f"cubelab lab: {exc}") from None  # hint: exc's
        print(f"cubelab: the course's chapters are now in {folder} ({len(copied)} file(s))")
    cmd, env = lab_command(folder, args.teacher, args.jupyter_args)
    sys.stdout.flush()
    os.execve(cmd[0], cmd, env)


def add_parsers(sub: Any, course: Any) -> None:
    """`cubelab lab` on the CLI's sub-commands, `copy` under `cubelab course`."""
    c = course.add_parser("copy", help="copy the chapters (without solutions) into a folder")
    c.add_argument("folder", type=Path, help="where the chapters go (created if missing)")
    c.set_defaults(fn=_cmd_copy)
    lab = sub.add_parser("lab", help="JupyterLab on the course's chapters (copied into FOLDER "
                                     "first if it has none)")
    lab.add_argument("folder", type=Path, nargs="?", default=Path("cubelab-course"),
                     help="the course folder (default: ./cubelab-course)")
    lab.add_argument("--teacher", action="store_true",
                     help="a teacher's lab: nbgrader's menus and the solutions folder shown")
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER,
                     help="anything after the folder goes to JupyterLab (e.g. --port 9000)")
    lab.set_defaults(fn=_cmd_lab)
