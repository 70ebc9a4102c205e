"""Start-up: from a fresh process to the first kernel results, cold and warm.

    python benchmarks/startup.py [--runtime wgpu|cpu] [--repeats 3] [--out FILE.json]

Each row is a new Python process (what a restarted notebook kernel is) that imports cubelab,
asks for the device, launches three kernels (saxpy, the zoo's gelu and its 16x16 matmul tile)
and reads their results. It reports, in milliseconds (median over `--repeats` processes):

- import: `import cubelab` and the prelude;
- adapter: importing wgpu and requesting the adapter (the driver is loaded here);
- device: requesting the device and setting up cubelab's server;
- first result: device ready -> the three results read back (wall time, and the process's CPU
  time, which other load on the machine inflates far less), split into cubelab's part (expand +
  passes + codegen, or reading the store) and the driver's (pipeline through the first
  dispatch; lavapipe compiles there).

Scenarios, each in a folder of its own:

- cold: an empty compilation store and an empty driver cache (the first run on a machine);
- warm: the same folders again (the store and the driver cache both warm: a kernel restart);
- store only: the warm store, the driver's cache off (`MESA_SHADER_CACHE_DISABLE=true`);
- driver cache only: the store off (`CUBELAB_CACHE_DIR=off`), the warm driver cache;
- neither: both off;
- without the driver warm-up (`CUBELAB_WARM_UP=0`: the driver's first-pipeline start-up falls
  on the first launch), and with the first launch 1 s after the device (a notebook's cells in
  between: the warm-up has run by then).

The goal (issue 29): device-ready -> first result warm <= 0.5 x cold on lavapipe. The ratio is
printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, table

CHILD = r'''
import time
t0 = time.perf_counter()
import numpy as np
import cubelab
from cubelab.prelude import *
t1 = time.perf_counter()
import sys
sys.path.insert(0, {root!r})
from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab.runtime import events as ev
from tests.fixtures.kernels import saxpy
from tests.zoo import kernels as zoo
t2 = time.perf_counter()
device = getattr(Device, {runtime!r})()
client = device.client()
import os
time.sleep(float(os.environ.get("STARTUP_PAUSE", "0")))  # a notebook's cells between the two
t3 = time.perf_counter()
c3 = time.process_time()
with client.events.record(ev.CompileFinished) as rec:
    def up(a):
        return client.create_from_slice(f32.as_bytes(np.asarray(a, np.float32)))
    x, y = up(np.arange(64)), up(np.ones(64))
    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(16), 4, 2.0,
                      BufferArg.from_raw_parts(x, 64), BufferArg.from_raw_parts(y, 64))
    g_in, g_out = up(np.linspace(-2, 2, 256)), up(np.zeros(256))
    zoo.gelu.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(64),
                         BufferArg.from_raw_parts(g_in, 256), BufferArg.from_raw_parts(g_out, 256))
    a, b, c = up(np.ones(32 * 32)), up(np.ones(32 * 32)), up(np.zeros(32 * 32))
    zoo.matmul.launch(client, CubeCount.Static(2, 2), CubeDim.new_2d(16, 16),
                      BufferArg.from_raw_parts(a, 1024), BufferArg.from_raw_parts(b, 1024),
                      BufferArg.from_raw_parts(c, 1024), 32, 32, 32, 16)
    results = [f32.from_bytes(client.read_one(h)) for h in (y, g_out, c)]
t4 = time.perf_counter()
c4 = time.process_time()
assert results[0][1] == 3.0 and abs(results[2][0] - 32.0) < 1e-3
from cubelab.runtime.wgpu.server import STARTUP
done = rec.of(ev.CompileFinished)
import json
print(json.dumps({{
    "import": (t1 - t0) * 1e3,
    "adapter": (STARTUP.get("import wgpu", 0) + STARTUP.get("adapter", 0)) * 1e3,
    "device": (t3 - t2) * 1e3 - (STARTUP.get("import wgpu", 0) + STARTUP.get("adapter", 0)) * 1e3,
    "first result": (t4 - t3) * 1e3,
    "first result cpu": (c4 - c3) * 1e3,
    "cubelab": sum(e.expand_s + e.passes_s + e.codegen_s + e.load_s for e in done) * 1e3,
    "driver": sum(e.driver_s for e in done) * 1e3,
    "origins": sorted(e.origin for e in done),
}}))
'''

SCENARIOS = [
    # name, store, driver cache ("fresh" | "warm" | "off"), driver warm-up, pause (s)
    ("cold", "fresh", "fresh", True, 0.0),
    ("warm", "warm", "warm", True, 0.0),
    ("store only", "warm", "off", True, 0.0),
    ("driver cache only", "off", "warm", True, 0.0),
    ("neither", "off", "off", True, 0.0),
    ("cold, no driver warm-up", "fresh", "fresh", False, 0.0),
    ("warm, no driver warm-up", "warm", "warm", False, 0.0),
    ("cold, first launch 1 s after the device", "fresh", "fresh", True, 1.0),
    ("warm, first launch 1 s after the device", "warm", "warm", True, 1.0),
]


def run_child(script: Path, runtime: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def scenario_env(base: Path, store: str, driver: str, fresh: int, warm_up: bool = True,
                 pause: float = 0.0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MESA_SHADER_CACHE", "MESA_GLSL_CACHE", "__GL_SHADER_DISK"))}
    env["CUBELAB_WARM_UP"] = "1" if warm_up else "0"
    env["STARTUP_PAUSE"] = str(pause)
    warm_dir = base / "warm"
    root = warm_dir if store == "warm" else base / f"fresh-{fresh}"
    env["CUBELAB_CACHE_DIR"] = "off" if store == "off" else str(root)
    if driver == "off":
        env["MESA_SHADER_CACHE_DISABLE"] = "true"
    elif driver == "warm":
        env["MESA_SHADER_CACHE_DIR"] = str(warm_dir / "mesa")
        env["__GL_SHADER_DISK_CACHE_PATH"] = str(warm_dir / "nvidia")
    else:  # fresh: a folder nobody used
        env["MESA_SHADER_CACHE_DIR"] = str(root / "mesa")
        env["__GL_SHADER_DISK_CACHE_PATH"] = str(root / "nvidia")
    return env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", default="wgpu", choices=["wgpu", "cpu", "cuda"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="also write the rows as JSON here")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cubelab-startup-"))
    script = base / "child.py"
    script.write_text(CHILD.format(root=str(ROOT), runtime=args.runtime))
    # fill the warm folders once (a cold run that writes them)
    run_child(script, args.runtime, scenario_env(base, "warm", "warm", 0))
    rows, medians = [], {}
    for name, store, driver, warm_up, pause in SCENARIOS:
        runs = []
        for i in range(args.repeats):
            env = scenario_env(base, store, driver, len(rows) * 100 + i + 1, warm_up, pause)
            runs.append(run_child(script, args.runtime, env))
        med = {k: statistics.median(r[k] for r in runs)
               for k in ("import", "adapter", "device", "first result", "first result cpu",
                         "cubelab", "driver")}
        medians[name] = med
        rows.append([name, f"{med['import']:.0f}", f"{med['adapter']:.0f}",
                     f"{med['device']:.0f}", f"{med['first result']:.0f}",
                     f"{med['first result cpu']:.0f}",
                     f"{med['cubelab']:.1f}", f"{med['driver']:.0f}",
                     " ".join(sorted(set(runs[-1]["origins"])))])
    cold = medians["cold"]["first result"]
    for row, (name, *_) in zip(rows, SCENARIOS):
        row.append(f"{medians[name]['first result'] / cold:.2f}")
        row.append(f"{medians[name]['first result cpu'] / medians['cold']['first result cpu']:.2f}")
    print(table(f"startup — fresh process -> three kernel results, {args.runtime}, median of "
                f"{args.repeats} processes (ms)",
                ["scenario", "import", "adapter", "device", "first result (device ready ->)",
                 "its CPU time", "of which cubelab", "of which driver", "origins", "vs cold",
                 "vs cold (CPU)"], rows))
    ratio = medians["warm"]["first result"] / cold
    cpu = medians["warm"]["first result cpu"] / medians["cold"]["first result cpu"]
    print(f"\nwarm / cold (device ready -> first result): {ratio:.2f} wall, {cpu:.2f} CPU time "
          f"(goal <= 0.50: {'met' if ratio <= 0.5 else 'NOT met'})")
    if args.out:
        Path(args.out).write_text(json.dumps(medians, indent=1))


if __name__ == "__main__":
    main()
