"""How long each chapter notebook takes to run top to bottom, on each runtime.

    PYTHONPATH=$PWD python benchmarks/notebooks.py [--solved] [STEM ...]

The course's budget is 10 s per chapter on the 2-core reference machine (kernel start-up
included). Prints one row per notebook and runtime: seconds and the ratio to the budget.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the suite's helpers: `tests.chapters`
BUDGET_S = 10.0


def main() -> None:
    from tests.chapters import CHAPTERS, exercise_cells, solutions

    ap = argparse.ArgumentParser()
    ap.add_argument("--solved", action="store_true", help="with the solutions substituted")
    ap.add_argument("stems", nargs="*")
    args = ap.parse_args()
    print(f"{'notebook':44} {'runtime':8} {'seconds':>8} {'/budget':>8}")
    for path in CHAPTERS:
        if args.stems and path.stem not in args.stems:
            continue
        for runtime in ("cpu", "wgpu"):
            os.environ["CUBELAB_DEVICE"] = runtime
            nb = nbformat.read(path, as_version=4)
            if args.solved:
                sol = solutions(path.stem)
                for e in exercise_cells(nb, path.name):
                    nb.cells[e.cells[1]].source = sol[e.key]
            t0 = time.perf_counter()
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            dt = time.perf_counter() - t0
            print(f"{path.name:44} {runtime:8} {dt:8.2f} {dt / BUDGET_S:8.2f}", flush=True)


if __name__ == "__main__":
    main()
