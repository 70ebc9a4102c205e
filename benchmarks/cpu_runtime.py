"""CPU runtime throughput and per-launch overhead, against numpy and lavapipe in the same run.

    python benchmarks/cpu_runtime.py [--quick]

- saxpy on 4 M floats (1 M vec4 units): the CPU runtime vs numpy computing `a * x + y` directly
  (in place, the way a careful numpy user would), vs the same kernel on wgpu (lavapipe here);
  throughput counts the 3 x 4 bytes per float saxpy must move. Target: >= 0.5x numpy.
- a shared-memory tree reduction (256 units per cube, 4 M floats): CPU runtime vs
  `x.reshape(-1, 256).sum(1)` vs wgpu.
- per-launch fixed overhead: a 4-unit saxpy launched back to back, time per launch (submit +
  run to completion, measured over a sync). Target: <= 100 µs.

No timing is asserted anywhere (benchmarks print, tests assert behaviour).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np

from _common import best_of, table  # noqa: E402  (sets sys.path and XDG_RUNTIME_DIR)

from cubelab import BufferArg, CubeCount, CubeDim, Device, DeviceError  # noqa: E402
from cubelab.prelude import f32  # noqa: E402
from cpu_kernels import block_sum  # noqa: E402
from kernels import saxpy  # noqa: E402

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


def main() -> None:
    rows: list[list[Any]] = []
    bench_saxpy(rows)
    bench_reduction(rows)
    bench_overhead(rows)
    print(table("CPU runtime vs numpy vs wgpu (same run)",
                ["workload", "runs on", "time", "throughput", "vs numpy"], rows))


if __name__ == "__main__":
    main()
