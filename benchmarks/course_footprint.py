"""What one student costs a hub: memory and CPU of a kernel that runs the whole course.

    PYTHONPATH=$PWD python benchmarks/course_footprint.py [--runtime cpu|wgpu ...] [STEM ...]

One Jupyter kernel per runtime runs every chapter top to bottom, answers solved (the solutions
from notebooks/solutions/ substituted, as a diligent student would have them), one chapter after
another without a restart — the worst case a hub must hold. After each chapter it reads the
kernel process's resident memory (RSS) and its CPU seconds (user + system, all threads: lavapipe
renders on its own threads). Rows: the fresh kernel, after `import cubelab` and the first client,
then one per chapter. docs/classroom.md's sizing table is made from this output.

The trap: RSS counts shared libraries once per process (LLVM in lavapipe, numpy's BLAS), which
is what a node's memory really pays when every student is their own process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import table  # noqa: E402

from cubelab.course import CHAPTER_NAME, read_solutions  # noqa: E402

MIB = 1024 * 1024


def solved_cells(path: Path) -> list[str]:
    """The chapter's code cells, each answer cell replaced by its solution."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    sol_file = ROOT / "notebooks" / "solutions" / f"{path.stem}.py"
    solutions = read_solutions(sol_file) if sol_file.is_file() else {}
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tag = cell.metadata.get("cubelab", {})
        if tag.get("role") == "answer" and tag.get("exercise") in solutions:
            cells.append(solutions[tag["exercise"]])
        else:
            cells.append(cell.source)
    return cells


def _usage(proc: Any) -> tuple[float, float]:
    t = proc.cpu_times()
    return proc.memory_info().rss / MIB, t.user + t.system


def run_course(runtime: str, chapters: list[Path]) -> list[list[Any]]:
    import psutil
    from jupyter_client.manager import KernelManager

    env = dict(os.environ, CUBELAB_DEVICE=runtime, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(ROOT / "notebooks"))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    proc = psutil.Process(km.provisioner.process.pid)
    rows: list[list[Any]] = []
    errors: list[str] = []

    def hook(msg: dict) -> None:
        if msg["msg_type"] == "error":
            errors.append(f"{msg['content']['ename']}: {msg['content']['evalue']}"[:200])

    def step(label: str, cells: list[str]) -> None:
        rss0, cpu0 = _usage(proc)
        t0 = time.perf_counter()
        for code in cells:
            kc.execute_interactive(code, timeout=600, output_hook=hook, allow_stdin=False)
        wall = time.perf_counter() - t0
        rss, cpu = _usage(proc)
        rows.append([label, runtime, len(cells), f"{wall:.1f}", f"{cpu - cpu0:.1f}",
                     f"{rss:.0f}", f"{rss - rss0:+.0f}", len(errors)])
        print(f"  {label:34} {runtime:5} wall {wall:6.1f} s  cpu {cpu - cpu0:6.1f} s  "
              f"rss {rss:6.0f} MiB  errors {len(errors)}", flush=True)

    try:
        step("(fresh kernel)", [])
        step("(import cubelab, first client)", [
            "%load_ext cubelab\nimport cubelab\nfrom cubelab.runtime.device import Device\n"
            "print(Device.default().client().name())"])
        for path in chapters:
            step(path.stem, solved_cells(path))
        _, total_cpu = _usage(proc)
        rows.append(["(whole course, total)", runtime, "", "", f"{total_cpu:.1f}",
                     f"{_usage(proc)[0]:.0f}", "", len(errors)])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    for e in errors:
        print(f"  error: {e}", file=sys.stderr)
    return rows


def server_rss() -> list[Any]:
    """RSS of the other process every student has: their Jupyter server (JupyterLab), idle."""
    import socket
    import subprocess
    import tempfile
    import urllib.request

    import psutil

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = tempfile.mkdtemp(prefix="cubelab-server-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.port={port}",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", "--IdentityProvider.token=t",
         f"--ServerApp.root_dir={root}", "--ServerApp.allow_root=True"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=t", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token=t", timeout=20).read()
        time.sleep(1)
        p = psutil.Process(proc.pid)
        rss, cpu = _usage(p)
        return ["(the student's JupyterLab server, idle)", "-", "", "", f"{cpu:.1f}",
                f"{rss:.0f}", "", 0]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", action="append", choices=["cpu", "wgpu"],
                    help="default: both")
    ap.add_argument("stems", nargs="*", help="only these chapters (default: all)")
    args = ap.parse_args()
    chapters = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb")
                      if CHAPTER_NAME.match(p.name)
                      and (not args.stems or any(p.stem.startswith(s) for s in args.stems)))
    print("chapters:", ", ".join(p.stem for p in chapters), flush=True)
    rows: list[list[Any]] = [server_rss()]
    for runtime in args.runtime or ["cpu", "wgpu"]:
        rows += run_course(runtime, chapters)
    print()
    print(table("course_footprint — one kernel runs the whole course, solved",
                ["after", "runtime", "cells", "wall s", "CPU s", "RSS MiB", "Δ RSS", "errors"],
                rows))


if __name__ == "__main__":
    main()
