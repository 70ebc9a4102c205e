"""Bandwidth: saxpy over 1 K .. 64 M vec4 through cubelab vs the same WGSL through raw wgpu-py.

saxpy moves 3 × 16 bytes per vec4 item (read x, read y, write y). Both paths dispatch the same
generated WGSL over the same sizes with 256 units per cube (grids over 65535 cubes are folded
into y, ABSOLUTE_POS is linear); each size is launched `--reps` times and then synced, and the
best of `--rounds` such runs (interleaved between the two paths) is kept. At large sizes the GPU's memory time dominates and cubelab must
keep ≥ 95 % of raw; at small sizes the table shows what the launch path costs.

    python benchmarks/bandwidth.py [--max-items 64M] [--reps 20] [--rounds 5]

The largest size defaults to 64 M vec4 (1 GiB per buffer) on a real GPU and to 1 M on a CPU
adapter (lavapipe), where a full sweep would take minutes; `--max-items` overrides either.
One pair of max-size buffers serves every size (a launch sees `length` items of them).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import RawWgpu, table

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab import inspect as ci
from cubelab.prelude import f32

UNITS = 256
MAX_X = 32768


def parse_items(text: str) -> int:
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(float(t.rstrip("KMG")) * mult)


def grid(items: int) -> tuple[int, int, int]:
    cubes = math.ceil(items / UNITS)
    x = min(cubes, MAX_X)
    return (x, math.ceil(cubes / x), 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-items", type=parse_items, default=None,
                    help="largest size in vec4 items, e.g. 64M (default: 64M on a GPU, 1M on a "
                         "CPU adapter)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5, help="best of this many runs per path")
    args = ap.parse_args()
    from tests.fixtures.kernels import saxpy

    client = Device.wgpu().client()
    props = client.properties()
    cpu_adapter = "cpu" in props.adapter_type.lower() or "llvmpipe" in props.adapter.lower()
    max_items = args.max_items or ((1 << 20) if cpu_adapter else (64 << 20))
    sizes = []
    s = 1 << 10
    while s <= max_items:
        sizes.append(s)
        s *= 4
    if sizes[-1] != max_items:
        sizes.append(max_items)
    floats = max_items * 4
    host = np.arange(floats, dtype=np.float32) % 1024

    # -- cubelab --------------------------------------------------------------------------------
    x = client.create_from_slice(f32.as_bytes(host))
    y = client.create_from_slice(f32.as_bytes(np.ones(floats, dtype=np.float32)))
    dim = CubeDim.new_1d(UNITS)
    launch = saxpy.launch[f32]

    def cubelab_run(items: int) -> float:
        xa, ya = BufferArg.from_raw_parts(x, items * 4), BufferArg.from_raw_parts(y, items * 4)
        count = CubeCount.Static(*grid(items))
        launch(client, count, dim, 4, 1.0, xa, ya)  # untimed, like raw_run's: the GPU is busy
        client.sync()                                # and clocked up when the timing starts
        t0 = time.perf_counter()
        for _ in range(args.reps):
            launch(client, count, dim, 4, 1.0, xa, ya)
        client.sync()
        return (time.perf_counter() - t0) / args.reps

    # -- raw wgpu-py, the same WGSL -------------------------------------------------------------
    raw = RawWgpu()
    k = ci.instance(saxpy, f32, sizes=(4,), cube_dim=dim)
    comp = ci.compiled(k)
    rx = raw.buffer(f32.as_bytes(host))
    ry = raw.buffer(f32.as_bytes(np.ones(floats, dtype=np.float32)))

    def raw_run(items: int) -> float:
        info = raw.buffer(comp.wgsl.info.pack({"f32": [1.0]}, [items, items]))
        pipe, group = raw.pipeline(comp.wgsl.source, comp.wgsl.entry,
                                   [(rx, False), (ry, True), (info, False)])
        return raw.per_launch(pipe, group, grid(items), args.reps, ry)

    rows = []
    worst_large = None
    for items in sizes:
        cubelab_run(items)  # warm: compile once, bind group cached
        # interleaved, so both paths see the same machine (lavapipe shares the CPU with Python)
        c, r = 1e9, 1e9
        for _ in range(args.rounds):
            c = min(c, cubelab_run(items))
            r = min(r, raw_run(items))
        moved = 3 * 16 * items
        gc, gr = moved / c / 1e9, moved / r / 1e9
        label = f"{items // (1 << 20)}M" if items >= 1 << 20 else f"{items // (1 << 10)}K"
        rows.append([label, f"{r * 1e6:.1f}", f"{gr:.2f}", f"{c * 1e6:.1f}", f"{gc:.2f}",
                     f"{100 * gc / gr:.0f}%"])
        if items >= max_items // 4:
            worst_large = min(worst_large or 1e9, gc / gr)
    # sanity: after all the runs, y = reps_total * x + 1 is not checked; check one launch exactly
    print(table(f"bandwidth — saxpy on vec4<f32>, {args.reps} launches per size, "
                f"{props.adapter} ({props.backend})",
                ["vec4 items", "raw µs", "raw GB/s", "cubelab µs", "cubelab GB/s", "of raw"],
                rows))
    share = 100 * (worst_large or 0)
    print(f"\ntarget: >= 95% of raw at the largest sizes -> {share:.0f}% "
          f"({'met' if share >= 95 else 'NOT met'})")


if __name__ == "__main__":
    main()
