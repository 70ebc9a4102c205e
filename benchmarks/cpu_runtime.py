"""CPU runtime throughput and per-launch overhead, against numpy and lavapipe in the same run.

    python benchmarks/cpu_runtime.py [--quick] [--recording] [--shm] [--base COMMIT[,COMMIT]]

- saxpy on 4 M floats (1 M vec4 units): the CPU runtime vs numpy computing `a * x + y` directly
  (in place, the way a careful numpy user would), vs the same kernel on wgpu (lavapipe here);
  throughput counts the 3 x 4 bytes per float saxpy must move. Target: >= 0.5x numpy.
- a shared-memory tree reduction (256 units per cube, 4 M floats): CPU runtime vs
  `x.reshape(-1, 256).sum(1)` vs wgpu.
- shared-memory kernels on the CPU runtime (issue #17): the tree reduction above, the zoo's
  tiled 256x256 matmul (16x16 tiles) and its 1-D 3-point stencil with a halo in shared memory
  (4 M floats), against numpy and against *baseline checkouts* of cubelab run in subprocesses
  in the same run (`--base COMMIT,...`, default 7aac876, the code before any of this work, and
  c39e9c0, main before the third round of it; checked out with `git worktree add` into a
  temporary directory), so the speed-up is measured, not remembered. CPU seconds
  (`time.process_time`, every thread of the process), best of N, baseline and current code
  timed alternately twice each: the VM these run on is shared. numpy's BLAS runs one thread here
  (OPENBLAS_NUM_THREADS=1, set before numpy loads), as the interpreter does: a spinning BLAS
  thread pool counts its CPU seconds on a busy machine.
- per-launch fixed overhead: a 4-unit saxpy launched back to back, time per launch (submit +
  run to completion, measured over a sync). Target: <= 100 µs.
- access recording (issue #14): a 4-cube x 256-unit kernel with 10 accesses per unit launched
  plainly (recording off: the plain plan runs, so this must match the same figure measured on
  the code before recording existed — run this file with that checkout on PYTHONPATH for the
  "before" column), then `inspect.access_map` of the same launch (recording, judging races and
  scores; target < 0.2 s) and the same launch inside `race_report`.

No timing is asserted anywhere (benchmarks print, tests assert behaviour).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads its BLAS (see above)

import numpy as np  # noqa: E402

from _common import ROOT, best_of, table  # noqa: E402  (sets sys.path and XDG_RUNTIME_DIR)

if "--shm-worker" in sys.argv:  # time another checkout's cubelab (and its test kernels)
    sys.path.insert(0, sys.argv[sys.argv.index("--shm-worker") + 1])

from cubelab import BufferArg, CubeCount, CubeDim, Device, DeviceError  # noqa: E402
from cubelab import inspect as cl_inspect  # noqa: E402
from cubelab.prelude import *  # noqa: E402,F403  (the kernel below is written as a student would)
from cubelab.prelude import f32  # noqa: E402
from tests.fixtures.cpu_kernels import block_sum  # noqa: E402
from tests.fixtures.kernels import saxpy  # noqa: E402
from tests.zoo import kernels as zoo  # noqa: E402

QUICK = "--quick" in sys.argv
N = 1 << 22  # 4 M floats


def timed(fn: Callable[[], Any], client: Any | None = None, repeats: int = 5) -> float:
    def once() -> float:
        t0 = time.perf_counter()
        fn()
        if client is not None:
            client.sync()
        return time.perf_counter() - t0

    once()  # warm-up: compile, first dispatch, page faults
    return best_of(once, repeats)


def clients() -> list[tuple[str, Any]]:
    out = [("cpu<numpy>", Device.cpu().client())]
    try:
        out.append(("wgpu (" + Device.wgpu().client().properties().adapter + ")",
                    Device.wgpu().client()))
    except DeviceError as exc:
        print(f"(no wgpu adapter: {exc})")
    return out


def bench_saxpy(rows: list[list[Any]]) -> None:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(N).astype(np.float32)
    ys = rng.standard_normal(N).astype(np.float32)
    a = np.float32(2.0)
    moved = 3 * 4 * N

    x_np, y_np = xs.copy(), ys.copy()

    def numpy_saxpy() -> None:
        np.multiply(x_np, a, out=tmp)
        np.add(tmp, y_np, out=y_np)

    tmp = np.empty_like(x_np)
    t_np = timed(numpy_saxpy)
    rows.append(["saxpy 4M f32", "numpy (direct)", f"{t_np * 1e3:.2f} ms",
                 f"{moved / t_np / 1e9:.2f} GB/s", "1.00x"])
    for name, client in clients():
        x = client.create_from_slice(f32.as_bytes(xs))
        y = client.create_from_slice(f32.as_bytes(ys))
        units = N // 4
        dim = 256
        count = CubeCount.Static(units // dim)

        def run() -> None:
            saxpy.launch[f32](client, count, CubeDim.new_1d(dim), 4, 2.0,
                              BufferArg.from_raw_parts(x, N), BufferArg.from_raw_parts(y, N))

        t = timed(run, client)
        rows.append(["saxpy 4M f32", name, f"{t * 1e3:.2f} ms", f"{moved / t / 1e9:.2f} GB/s",
                     f"{t_np / t:.2f}x"])


def bench_reduction(rows: list[list[Any]]) -> None:
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(N).astype(np.float32)
    t_np = timed(lambda: xs.reshape(-1, 256).sum(axis=1))
    rows.append(["shared-mem reduction 4M f32", "numpy (direct)", f"{t_np * 1e3:.2f} ms",
                 f"{4 * N / t_np / 1e9:.2f} GB/s", "1.00x"])
    for name, client in clients():
        x = client.create_from_slice(f32.as_bytes(xs))
        cubes = N // 256
        out = client.empty(4 * cubes)

        def run() -> None:
            block_sum.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                             BufferArg.from_raw_parts(x, N), BufferArg.from_raw_parts(out, cubes))

        t = timed(run, client, repeats=3)
        got = f32.from_bytes(client.read_one(out))
        err = float(np.max(np.abs(got - xs.reshape(-1, 256).sum(axis=1))))
        rows.append(["shared-mem reduction 4M f32", f"{name} (max |err| {err:.1e})",
                     f"{t * 1e3:.2f} ms", f"{4 * N / t / 1e9:.2f} GB/s", f"{t_np / t:.2f}x"])


def bench_overhead(rows: list[list[Any]]) -> None:
    launches = 200 if QUICK else 1000
    for name, client in clients():
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.zeros(16, dtype=np.float32)))
        xa, ya = BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16)

        def run() -> None:
            for _ in range(launches):
                saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, xa, ya)

        t = timed(run, client, repeats=3) / launches
        rows.append(["per-launch overhead (4 units)", name, f"{t * 1e6:.1f} µs / launch", "", ""])


@cube(launch=True)  # noqa: F405
def ten_accesses(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """4 global reads, a shared write, a barrier, 4 shared reads, a global write per unit."""
    sm = SharedMemory[f32](256)  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    sm[UNIT_POS] = x[i] + x[(i + 1) % x.len()] + x[(i + 2) % x.len()] + x[(i + 3) % x.len()]  # noqa: F405,E501
    sync_cube()  # noqa: F405
    acc = f32(0.0)
    for k in unroll(range(4)):  # noqa: F405
        acc += sm[(UNIT_POS + k) % 256]  # noqa: F405
    out[i] = acc


def bench_recording(rows: list[list[Any]]) -> None:
    client = Device.cpu().client()
    n = 4 * 256
    x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))
    out = client.empty(4 * n)
    args = (BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, n))
    count, dim = CubeCount.Static(4), CubeDim.new_1d(256)
    launches = 50 if QUICK else 200

    def plain() -> None:
        for _ in range(launches):
            ten_accesses.launch(client, count, dim, *args)

    t_off = timed(plain, client, repeats=5) / launches
    rows.append(["4x256 units, 10 accesses each", "cpu<numpy>, recording off",
                 f"{t_off * 1e6:.1f} µs / launch", "", ""])
    if not hasattr(cl_inspect, "access_map"):
        rows.append(["4x256 units, 10 accesses each", "access_map", "(not in this version)",
                     "", ""])
        return
    from cubelab.runtime.cpu import race_report

    holder: list[Any] = []

    def record() -> None:
        holder[:] = [cl_inspect.access_map(ten_accesses.launch, client, count, dim, *args)]

    t_map = timed(record, repeats=5)
    m = holder[0]
    rows.append(["4x256 units, 10 accesses each",
                 f"access_map ({len(m.table)} accesses, {len(m.races)} races)",
                 f"{t_map * 1e3:.1f} ms", "", f"target < 200 ms: {'ok' if t_map < 0.2 else 'MISSED'}"])

    if hasattr(m, "coalescing"):  # the cost instruments (issue #25): recording + analysis
        def costed() -> None:
            mm = cl_inspect.access_map(ten_accesses.launch, client, count, dim, *args,
                                       plane_width=32)
            holder[:] = [mm, mm.coalescing(), mm.conflicts()]

        t_cost = timed(costed, repeats=5)
        mm = holder[0]
        rows.append(["4x256 units, 10 accesses each",
                     f"access_map + coalescing() + conflicts() ({len(mm.transactions)} global "
                     f"and {len(mm.bank_conflicts)} shared plane-instructions)",
                     f"{t_cost * 1e3:.1f} ms", "",
                     f"{t_cost / t_map:.2f}x access_map alone (target <= 2x)"])

    def reported() -> None:
        with race_report(client):
            ten_accesses.launch(client, count, dim, *args)

    t_rep = timed(reported, repeats=5)
    rows.append(["4x256 units, 10 accesses each", "inside race_report",
                 f"{t_rep * 1e3:.1f} ms / launch", "", f"{t_rep / t_off:.0f}x the plain launch"])


# main before the CPU runtime's unit-only memo (issue #17: "5x faster than today" is against it),
# and main before the third round (cube-minor dot products, row views, affine global reads)
BASES = ("7aac876", "c39e9c0")
MM, TILE, BLOCK = 256, 16, 256


def cpu_time(fn: Callable[[], Any], client: Any | None = None, repeats: int = 5) -> float:
    """Best-of CPU seconds of `fn` (+ sync): every thread of this process, so a busy VM's other
    processes do not count."""
    def once() -> float:
        t0 = time.process_time()
        fn()
        if client is not None:
            client.sync()
        return time.process_time() - t0

    once()
    return best_of(once, repeats)


def shm_workloads(client: Any) -> dict[str, tuple[Callable[[], None], Callable[[], float]]]:
    """name -> (launch, max |error| against numpy) for the three shared-memory kernels."""
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(N).astype(np.float32)
    a = rng.standard_normal((MM, MM)).astype(np.float32)
    b = rng.standard_normal((MM, MM)).astype(np.float32)

    def up(v: np.ndarray) -> BufferArg:
        return BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(v.ravel())), v.size)

    x, ha, hb = up(xs), up(a), up(b)
    out = client.empty(4 * (N // 256))
    hc = client.empty(4 * MM * MM)
    hs = client.empty(4 * N)

    def read(h: Any) -> np.ndarray:
        return f32.from_bytes(client.read_one(h))

    padded = np.concatenate([[0], xs, [0]]).astype(np.float32)
    return {
        "block_sum": (
            lambda: block_sum.launch(client, CubeCount.Static(N // 256), CubeDim.new_1d(256), x,
                                     BufferArg.from_raw_parts(out, N // 256)),
            lambda: float(np.abs(read(out) - xs.reshape(-1, 256).sum(1)).max())),
        "matmul": (
            lambda: zoo.matmul.launch(client, CubeCount.Static(MM // TILE, MM // TILE, 1),
                                      CubeDim.new_2d(TILE, TILE), ha, hb,
                                      BufferArg.from_raw_parts(hc, MM * MM), MM, MM, MM, TILE),
            lambda: float(np.abs(read(hc).reshape(MM, MM) - a @ b).max())),
        "stencil3": (
            lambda: zoo.stencil3.launch(client, CubeCount.Static(N // BLOCK),
                                        CubeDim.new_1d(BLOCK), x, BufferArg.from_raw_parts(hs, N),
                                        BLOCK),
            lambda: float(np.abs(read(hs) - (padded[:-2] + padded[1:-1] + padded[2:]) / 3).max())),
    }


def shm_times() -> dict[str, tuple[float, float]]:
    """CPU seconds and max |error| of each shared-memory workload on this process's cubelab."""
    client = Device.cpu().client()
    out = {}
    for name, (run, err) in shm_workloads(client).items():
        out[name] = (cpu_time(run, client, repeats=3 if QUICK else 5), err())
    return out


def base_times(commit: str) -> dict[str, tuple[float, float]] | str:
    """`shm_times` of a baseline checkout, in a subprocess (or why it could not run)."""
    import json
    import subprocess
    import tempfile

    where = Path(tempfile.gettempdir()) / f"cubelab-base-{commit}"
    if not where.exists():
        made = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach",
                               str(where), commit], capture_output=True, text=True)
        if made.returncode:
            return f"no baseline checkout: {made.stderr.strip()}"
    done = subprocess.run([sys.executable, __file__, "--shm-worker", str(where)]
                          + (["--quick"] if QUICK else []), capture_output=True, text=True)
    if done.returncode:
        return f"baseline run failed: {done.stderr.strip()[-300:]}"
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if not got.pop("_from").startswith(str(where)):
        return "baseline run imported the wrong cubelab"
    return {k: (v[0], v[1]) for k, v in got.items()}


def bench_shared_memory(rows: list[list[Any]]) -> None:
    commits = sys.argv[sys.argv.index("--base") + 1].split(",") if "--base" in sys.argv \
        else list(BASES)
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(N).astype(np.float32)
    a = rng.standard_normal((MM, MM)).astype(np.float32)
    b = rng.standard_normal((MM, MM)).astype(np.float32)
    padded = np.concatenate([[0], xs, [0]]).astype(np.float32)
    numpy_ref = {
        "block_sum": lambda: xs.reshape(-1, 256).sum(axis=1),
        "matmul": lambda: a @ b,
        "stencil3": lambda: (padded[:-2] + padded[1:-1] + padded[2:]) / np.float32(3),
    }
    label = {"block_sum": "shared-mem reduction 4M f32", "matmul": f"tiled matmul {MM}x{MM}",
             "stencil3": "stencil3 (halo in shared) 4M f32"}
    # baseline, current, baseline, current: each sampled twice, so neither side alone meets a
    # quiet or a busy spell of the shared VM
    before = {c: base_times(c) for c in commits}
    now = shm_times()
    after = {c: base_times(c) for c in commits}
    again = shm_times()
    now = {k: min(now[k], again[k]) for k in now}
    for name, (t, err) in now.items():
        t_np = cpu_time(numpy_ref[name])
        rows.append([label[name], "numpy (direct)", f"{t_np * 1e3:.2f} ms", "", "1.00x"])
        speedups = []
        for c in commits:
            b0, b1 = before[c], after[c]
            if isinstance(b0, str) or isinstance(b1, str):
                rows.append([label[name], f"cpu<numpy> at {c}", str(b0 if isinstance(b0, str)
                                                                     else b1), "", ""])
                continue
            t_base = min(b0[name][0], b1[name][0])
            rows.append([label[name], f"cpu<numpy> at {c}", f"{t_base * 1e3:.2f} ms", "",
                         f"{t_np / t_base:.3f}x"])
            speedups.append(f"{t_base / t:.2f}x {c}")
        rows.append([label[name], f"cpu<numpy> now (max |err| {err:.1e})", f"{t * 1e3:.2f} ms",
                     "", f"{t_np / t:.3f}x" + "".join(f", {s}" for s in speedups)])


def main() -> None:
    if "--shm-worker" in sys.argv:
        import json

        import cubelab
        got: dict[str, Any] = dict(shm_times())
        got["_from"] = cubelab.__file__
        print(json.dumps(got))
        return
    if "--shm" in sys.argv:  # only the shared-memory rows (issue #17's before/after)
        rows_shm: list[list[Any]] = []
        bench_shared_memory(rows_shm)
        print(table("CPU runtime on shared-memory kernels: numpy, the baseline, now (CPU time)",
                    ["workload", "runs on", "CPU time", "", "vs numpy"], rows_shm))
        return
    rows: list[list[Any]] = []
    if "--recording" in sys.argv:  # only the access-recording rows (issue #14's before/after)
        bench_overhead(rows)
        bench_recording(rows)
        print(table("CPU runtime: access recording off and on", ["workload", "runs on", "time",
                                                                   "throughput", "note"], rows))
        return
    bench_saxpy(rows)
    bench_reduction(rows)
    bench_overhead(rows)
    bench_recording(rows)
    print(table("CPU runtime vs numpy vs wgpu (same run)",
                ["workload", "runs on", "time", "throughput", "vs numpy"], rows))
    shm: list[list[Any]] = []
    bench_shared_memory(shm)
    print()
    print(table("CPU runtime on shared-memory kernels: numpy, the baseline, now (CPU time)",
                ["workload", "runs on", "CPU time", "", "vs numpy"], shm))


if __name__ == "__main__":
    main()
