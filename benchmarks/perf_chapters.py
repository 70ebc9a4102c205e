"""The performance chapters (12, 13 and the capstone) run solved on each runtime, without Jupyter:
what their cells print on this machine — the launch costs, the device's peaks, the rooflines, the
matmul journey, the autotune sweep, the runtime comparison — and whether every exercise's
solution is accepted there.

    PYTHONPATH=$PWD python benchmarks/perf_chapters.py            # runtimes: cuda, wgpu, cpu
    CUBELAB_PERF_RUNTIMES=cuda,wgpu python benchmarks/perf_chapters.py

Why: the chapters say what a real GPU does differently from lavapipe (the tiled matmul wins,
the ridge is far to the right, the CUDA row of the comparison) — this is how those sentences are
checked on one, in one command (`scripts/gpu_check.sh`, `CUBELAB_GPU_BENCH=perf_chapters`).
Each runtime runs in its own process (`CUBELAB_DEVICE`), every chapter with its answer cells
replaced by `notebooks/solutions/`; a cell's printed lines and the text of its last expression
(tables, rooflines, verdicts) go to stdout as Markdown, with the cell's time. A runtime that
cannot start is one line saying so.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import linecache
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ("12_performance_launch_and_bandwidth", "13_performance_memory_access",
            "capstone_performance")
PER_RUNTIME_S = 200


def shown(value: Any) -> str:
    """The text a notebook would show for a cell's last expression (tables and verdicts)."""
    if value is None:
        return ""
    for attr in ("table", "text"):
        fn = getattr(value, attr, None)
        if callable(fn):
            try:
                return str(fn())
            except TypeError:
                pass
    inner = getattr(value, "rooflines", None)
    if inner is not None:  # the Roofline widget: its rooflines' table
        from cubelab.inspect.roofline import RooflineChart

        return RooflineChart(list(inner)).table()
    return str(value).splitlines()[0][:200]


def run_chapter(stem: str) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.chapters import solutions  # plain file reading: no Jupyter needed

    cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    sol = solutions(stem)
    ns: dict[str, Any] = {"__name__": f"chapter_{stem}"}
    os.chdir(ROOT / "notebooks")
    t_all = time.perf_counter()
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        tag = cell.get("metadata", {}).get("cubelab", {})
        if tag.get("role") == "answer":
            source = sol[tag["exercise"]]
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        name = f"<{stem} cell {i}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        out = io.StringIO()
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(tree, name, "exec"), ns)  # noqa: S102 - the chapter's own cells
                value = eval(compile(ast.Expression(last.value), name, "eval"), ns) \
                    if last is not None else None  # noqa: S307
                text = shown(value)
        except Exception as exc:  # noqa: BLE001 - reported, the chapter goes on
            text = f"ERROR {type(exc).__name__}: {exc}"
        dt = time.perf_counter() - t0
        printed = (out.getvalue() + ("\n" + text if text else "")).strip()
        if printed:
            print(f"cell {i} ({dt:.2f} s)\n```\n{printed}\n```", flush=True)
    import cubelab.exercises as ex

    prefix = "capstone_performance." if stem.startswith("capstone") else f"ch{stem[:2]}."
    verdicts = {k: v for k, v in ex.results().items() if k.startswith(prefix)}
    print(f"\n{stem}: {time.perf_counter() - t_all:.1f} s, exercises: "
          f"{sum(v == 'correct' for v in verdicts.values())} of {len(verdicts)} correct "
          f"{'' if all(v == 'correct' for v in verdicts.values()) else verdicts}\n", flush=True)


def one_runtime(runtime: str) -> None:
    from cubelab import Device, DeviceError

    try:
        client = getattr(Device, runtime)().client()
    except DeviceError as exc:
        print(f"## {runtime}: not on this machine ({str(exc).splitlines()[0]})\n")
        return
    print(f"## {runtime}: {client.name()} on {client.properties().adapter}\n", flush=True)
    for stem in CHAPTERS:
        print(f"### {stem}\n", flush=True)
        run_chapter(stem)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one_runtime(sys.argv[2])
        return
    runtimes = os.environ.get("CUBELAB_PERF_RUNTIMES", "cuda,wgpu,cpu").split(",")
    print("## The performance chapters, solved, on each runtime\n")
    for runtime in (r.strip() for r in runtimes if r.strip()):
        env = dict(os.environ, CUBELAB_DEVICE=runtime, CUBELAB_STUDENT="perf-bench")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", runtime], env=env,
                                  capture_output=True, text=True, timeout=PER_RUNTIME_S)
            print(proc.stdout, flush=True)
            if proc.returncode != 0:
                print(f"({runtime} exited {proc.returncode})\n```\n"
                      f"{proc.stderr.strip()[-2000:]}\n```\n", flush=True)
        except subprocess.TimeoutExpired as exc:
            tail = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else \
                (exc.stdout or "")
            print(f"{tail}\n({runtime} did not finish within {PER_RUNTIME_S} s)\n", flush=True)


if __name__ == "__main__":
    main()
