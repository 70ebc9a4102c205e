"""Which saxpy shape moves the most bytes? cubelab kernels on one GPU, with CuPy's in the same run.

`peers.py` compares every peer's *natural* saxpy (for cubelab: one `vec4` per unit, 256 units per
cube, a checked launch). This benchmark asks what a student could change in the kernel itself to
get closer to the best peer: the vector width per unit is fixed at 4 (WGSL's widest), and it
varies the units per cube, how many `vec4`s each unit handles (`K`, coalesced: unit `p` handles
`p, p + P, p + 2P, …` where `P` is the number of units launched), and checked vs unchecked
launches (the clamp CheckedIo adds). Each row: `--reps` launches with one sync at the end, best of
`--rounds`, GB/s at 12 bytes per float. The shapes are timed in interleaved rounds, like `peers.py`,
and the accumulated result is checked once at the end: on the H200, bandwidth sometimes halved for
the rest of a process (raw wgpu-py's too, and only after large read-backs or long runs), so a
shape timed alone after another's read-back would be compared with a different machine. CuPy's
`float4` kernel (the best peer on the H200) runs in the same process when CuPy is installed.

    python benchmarks/saxpy_shapes.py [--floats 64M] [--reps 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import table

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab.prelude import (ABSOLUTE_POS, CUBE_COUNT, CUBE_DIM, Comptime, Slice, SliceMut, Vector,
                             cube, f32, unroll)

MAX_X = 32768


@cube(launch=True, launch_unchecked=True)
def saxpy_k(a: f32, x: Slice[Vector[f32, 4]], y: SliceMut[Vector[f32, 4]], k: Comptime[int]):
    """y = a x + y; each unit handles `k` vec4s, one launch-width apart (coalesced)."""
    units = CUBE_COUNT * CUBE_DIM
    for j in unroll(range(k)):
        i = ABSOLUTE_POS + units * j
        if i < x.len():
            y[i] = Vector.new(a) * x[i] + y[i]


def grid(cubes: int) -> tuple[int, int, int]:
    x = min(cubes, MAX_X)
    return (x, math.ceil(cubes / x), 1)


def gbs(bytes_per_s: float) -> str:
    v = bytes_per_s / 1e9
    return f"{v:.0f}" if v >= 100 else f"{v:.2f}"


def parse_count(text: str) -> int:
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t.rstrip("KMG")) * mult)


def cupy_row(floats: int, reps: int, rounds: int) -> list[object] | None:
    try:
        import cupy as cp
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    mod = cp.RawModule(code=r'''
extern "C" __global__ void saxpy4(float a, const float4* x, float4* y, unsigned n4) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { float4 p = x[i], q = y[i];
        y[i] = make_float4(a * p.x + q.x, a * p.y + q.y, a * p.z + q.z, a * p.w + q.w); }
}''')
    k = mod.get_function("saxpy4")
    x = cp.arange(floats, dtype=cp.float32) % 1024
    y = cp.ones(floats, dtype=cp.float32)
    n4 = floats // 4
    blocks = (n4 + 255) // 256
    sync = cp.cuda.Device().synchronize

    def go() -> float:
        t0 = time.perf_counter()
        for _ in range(reps):
            k((blocks,), (256,), (np.float32(1.0), x, y, np.uint32(n4)))
        sync()
        return time.perf_counter() - t0
    go()
    best = min(go() for _ in range(rounds)) / reps
    return ["CuPy RawKernel float4, 256 threads", f"{best * 1e3:.3f}", gbs(12 * floats / best)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floats", default=None)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    client = Device.wgpu().client()
    adapter = client.properties().adapter
    on_cpu = "llvmpipe" in str(adapter).lower() or "lavapipe" in str(adapter).lower()
    floats = parse_count(args.floats) if args.floats else (4 << 20 if on_cpu else 64 << 20)
    host_x = np.arange(floats, dtype=np.float32) % 1024
    sx = client.create_from_slice(f32.as_bytes(host_x))
    sy = client.create_from_slice(f32.as_bytes(np.ones(floats, dtype=np.float32)))
    xa, ya = BufferArg.from_raw_parts(sx, floats), BufferArg.from_raw_parts(sy, floats)
    items = floats // 4
    shapes = [(256, 1, "checked"), (256, 1, "unchecked"), (64, 1, "checked"), (128, 1, "checked"),
              (256, 2, "checked"), (256, 4, "checked"), (128, 4, "checked"), (256, 8, "checked"),
              (256, 4, "unchecked")]
    runs = []
    for units, k, mode in shapes:
        launch = saxpy_k.launch if mode == "checked" else saxpy_k.launch_unchecked
        count = CubeCount.Static(*grid(math.ceil(items / (units * k))))
        runs.append((launch, count, CubeDim.new_1d(units), k))
    done = 0

    def timed(launch, count, dim, k) -> float:  # type: ignore[no-untyped-def]
        nonlocal done
        t0 = time.perf_counter()
        for _ in range(args.reps):
            launch(client, count, dim, 1.0, xa, ya, k)
        client.sync()
        done += args.reps
        return (time.perf_counter() - t0) / args.reps

    best = [math.inf] * len(shapes)
    for r in range(args.rounds + 1):  # interleaved rounds: every shape sees the same moments;
        for i, run in enumerate(runs):  # round 0 compiles and warms up
            t = timed(*run)
            best[i] = min(best[i], t) if r else best[i]
    got = f32.from_bytes(client.read_one(sy))[:4096]
    ok = "yes" if np.allclose(got, 1 + done * host_x[:4096], rtol=1e-5) else "NO"
    rows: list[list[object]] = [
        [f"cubelab {mode}, {units} units/cube, {k} vec4/unit", f"{b * 1e3:.3f}",
         gbs(12 * floats / b), ok] for (units, k, mode), b in zip(shapes, best)]
    ref = cupy_row(floats, args.reps, args.rounds)
    best_gbs = max(float(r[2]) for r in rows + ([ref] if ref else []))  # type: ignore[arg-type]
    if ref:
        rows.append([*ref, "yes"])
    for r in rows:
        r.insert(3, f"{float(r[2]) / best_gbs * 100:.1f}%")  # type: ignore[arg-type]
    print(table(f"saxpy shapes — {floats >> 20}M floats, {args.reps} launches per run, best of "
                f"{args.rounds}, {adapter}",
                ["kernel shape", "ms / launch", "GB/s", "of the best", "result"], rows))


if __name__ == "__main__":
    main()
