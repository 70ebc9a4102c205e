"""Many students on one device: per-launch latency with 1, 4, 16 client processes at once.

    PYTHONPATH=$PWD python benchmarks/concurrent_clients.py [--procs 1,4,16] [--seconds 3]
                                                            [--runtime wgpu|cpu ...]

On a hub every student is their own process with their own client (test_jupyterhub.py shows
no cache is shared), all on one machine's cores — or one GPU. Each worker process here compiles a
small kernel, says it is ready, waits for a common start time, then for `--seconds` repeats a round trip a
student's cell makes: launch `add_one` on 4096 floats and read the result back. Reported per
configuration: the per-launch latency every worker saw (median and 95th percentile over all
round trips of all workers), and the machine's total round trips per second. The ratio to the
1-process median is how much a crowded node slows each student down.

On lavapipe each process renders with LP_NUM_THREADS threads (default: one per core), so 16
processes on a 2-core machine are 16 × cores threads; `--lp-threads 1` measures the hub's
setting (deploy/ sets it to the CPU limit). On an NVIDIA GPU set `VK_DRIVER_FILES` to the NVIDIA
ICD (benchmarks/README.md) and the processes share the GPU by time-slicing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N = 4096

WORKER = r'''
import json, sys, time
import numpy as np
from cubelab.prelude import *
from cubelab.runtime.device import Device

@cube(launch=True)
def add_one(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32.new(1.0)

runtime, seconds, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
client = (Device.cpu() if runtime == "cpu" else Device.wgpu()).client()
x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))
out = client.empty(4 * n)
args = (client, CubeCount.Static(n // 256, 1, 1), CubeDim.new_1d(256),
        BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, n))
add_one.launch(*args); client.read_one(out)          # compile and first dispatch, untimed
print("READY", flush=True)
start_at = float(sys.stdin.readline())                # the same start for every worker
while time.time() < start_at:
    time.sleep(0.001)
lat = []
end = start_at + seconds
while time.time() < end:
    t0 = time.perf_counter()
    add_one.launch(*args)
    client.read_one(out)
    lat.append(time.perf_counter() - t0)
assert f32.from_bytes(client.read_one(out))[7] == 8.0
print(json.dumps({"name": client.name(), "lat": lat}))
'''


def run(runtime: str, procs: int, seconds: float, lp_threads: str | None) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    if lp_threads:
        env["LP_NUM_THREADS"] = lp_threads
    else:
        env.pop("LP_NUM_THREADS", None)
    script = Path(tempfile.gettempdir()) / "cubelab_concurrent_worker.py"
    script.write_text(WORKER)  # a @cube kernel needs its source in a file
    workers = [subprocess.Popen([sys.executable, str(script), runtime, str(seconds), str(N)],
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True) for _ in range(procs)]
    for w in workers:  # each has imported cubelab, compiled and dispatched once
        assert w.stdout is not None and w.stdout.readline().strip() == "READY"
    start_at = time.time() + 0.5
    results = []
    for w in workers:
        assert w.stdin is not None
        w.stdin.write(f"{start_at}\n")
        w.stdin.flush()
    for w in workers:
        out, _ = w.communicate(timeout=seconds + 120)
        if w.returncode != 0:
            raise SystemExit(f"a worker failed ({runtime}, {procs} processes)")
        results.append(json.loads(out.strip().splitlines()[-1]))
    import numpy as np

    lat = np.concatenate([r["lat"] for r in results])
    late = [r for r in results if not r["lat"]]
    return {"name": results[0]["name"], "median_us": float(np.median(lat)) * 1e6,
            "p95_us": float(np.percentile(lat, 95)) * 1e6, "per_s": len(lat) / seconds,
            "starved": len(late)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="1,4,16")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runtime", action="append", choices=["wgpu", "cpu"])
    ap.add_argument("--lp-threads", default=None,
                    help="LP_NUM_THREADS for lavapipe (default: unset, one per core)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import table

    rows = []
    for runtime in args.runtime or ["wgpu", "cpu"]:
        base = None
        for procs in (int(p) for p in args.procs.split(",")):
            r = run(runtime, procs, args.seconds, args.lp_threads)
            base = base or r["median_us"]
            rows.append([r["name"], procs, f"{r['median_us']:.0f}", f"{r['p95_us']:.0f}",
                         f"{r['median_us'] / base:.2f}", f"{r['per_s']:.0f}", r["starved"]])
            print(f"  {r['name']:40} {procs:3} procs  median {r['median_us']:8.0f} µs  "
                  f"p95 {r['p95_us']:8.0f} µs  total {r['per_s']:7.0f}/s", flush=True)
    lp = args.lp_threads or "unset (one per core)"
    print()
    print(table(f"concurrent_clients — launch add_one({N}) + read back, per process; "
                f"{os.cpu_count()} cores, LP_NUM_THREADS {lp}",
                ["device", "processes", "median µs", "p95 µs", "× 1-proc median",
                 "round trips/s (all)", "workers with none"], rows))


if __name__ == "__main__":
    main()
