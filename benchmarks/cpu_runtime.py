"""CPU runtime throughput and per-launch overhead, against numpy and lavapipe in the same run.

    python benchmarks/cpu_runtime.py [--quick] [--recording]

- saxpy on 4 M floats (1 M vec4 units): the CPU runtime vs numpy computing `a * x + y` directly
  (in place, the way a careful numpy user would), vs the same kernel on wgpu (lavapipe here);
  throughput counts the 3 x 4 bytes per float saxpy must move. Target: >= 0.5x numpy.
- a shared-memory tree reduction (256 units per cube, 4 M floats): CPU runtime vs
  `x.reshape(-1, 256).sum(1)` vs wgpu.
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

import sys
import time
from typing import Any, Callable

import numpy as np

from _common import best_of, table  # noqa: E402  (sets sys.path and XDG_RUNTIME_DIR)

from cubelab import BufferArg, CubeCount, CubeDim, Device, DeviceError  # noqa: E402
from cubelab import inspect as cl_inspect  # noqa: E402
from cubelab.prelude import *  # noqa: E402,F403  (the kernel below is written as a student would)
from cubelab.prelude import f32  # noqa: E402
from tests.fixtures.cpu_kernels import block_sum  # noqa: E402
from tests.fixtures.kernels import saxpy  # noqa: E402

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

    def reported() -> None:
        with race_report(client):
            ten_accesses.launch(client, count, dim, *args)

    t_rep = timed(reported, repeats=5)
    rows.append(["4x256 units, 10 accesses each", "inside race_report",
                 f"{t_rep * 1e3:.1f} ms / launch", "", f"{t_rep / t_off:.0f}x the plain launch"])


def main() -> None:
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


if __name__ == "__main__":
    main()
