"""Run every benchmark once and print one markdown section: date, adapter, versions, then each
benchmark's tables — what `benchmarks/README.md` keeps per machine.

    python benchmarks/run_all.py [--only bandwidth,launch_overhead] >> benchmarks/README.md

Each benchmark runs in its own process (a fresh device, no cache shared between them); one that
fails is reported with its exit status and the tail of its output, and the others still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import subprocess
import sys
from pathlib import Path

import _common  # noqa: F401 - sets XDG_RUNTIME_DIR and sys.path like every benchmark

HERE = Path(__file__).resolve().parent
ORDER = ["launch_overhead", "bandwidth", "compile_time", "cpu_runtime", "widget_overhead"]


def adapter_line() -> str:
    try:
        import wgpu

        a = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        info = a.info
        return (f"{info.get('device', '?')} ({info.get('backend_type', '?')}, "
                f"{info.get('adapter_type', '?')}), wgpu-py {wgpu.__version__}")
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return f"no wgpu adapter ({type(exc).__name__}: {exc})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    args = ap.parse_args()
    names = [n for n in ORDER if (HERE / f"{n}.py").exists()]
    names += sorted(p.stem for p in HERE.glob("*.py")
                    if not p.stem.startswith("_") and p.stem not in ORDER and p.stem != "run_all")
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        names = [n for n in names if n in wanted]
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"## Machine: {adapter_line()}\n")
    print(f"{now} · Python {platform.python_version()} · {platform.machine()} · "
          f"{platform.processor() or platform.system()}\n")
    for name in names:
        proc = subprocess.run([sys.executable, str(HERE / f"{name}.py")], capture_output=True,
                              text=True, cwd=HERE.parent)
        # one level below the machine's heading
        out = "\n".join("#" + ln if ln.startswith("## ") else ln
                        for ln in proc.stdout.strip().splitlines())
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            out = f"### {name}\n\nFAILED (exit {proc.returncode}):\n\n```\n{tail}\n```"
        print(out + "\n", flush=True)


if __name__ == "__main__":
    main()
