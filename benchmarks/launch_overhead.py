"""Launch overhead: cache-hit launches of a 16-element saxpy, cubelab vs raw wgpu-py.

The raw baseline is the best a Python program can do per launch with wgpu-py: pipeline, buffers,
bind group prebuilt, then one encoder + pass + dispatch + submit per launch. cubelab's launch
does more work (argument checks, KernelId lookup, the hand-off to the device thread, info and
bind-group cache lookups) but batches dispatches that queue up into one command buffer, so a
stream of launches can cost less than one submit each.

    python benchmarks/launch_overhead.py [--launches 2000]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import RawWgpu, best_of, table, timed

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab import inspect as ci
from cubelab.prelude import f32


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=2000)
    args = ap.parse_args()
    n = args.launches
    from kernels import saxpy

    client = Device.wgpu().client()
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    xa, ya = BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16)
    count, dim = CubeCount.Static(1, 1, 1), CubeDim.new_1d(4)
    launch = saxpy.launch[f32]
    launch(client, count, dim, 4, 2.0, xa, ya)  # compile once
    client.sync()

    def cubelab_run() -> float:
        def go() -> None:
            for _ in range(n):
                launch(client, count, dim, 4, 2.0, xa, ya)
            client.sync()
        return timed(go)

    # The same WGSL, through raw wgpu-py.
    k = ci.instance(saxpy, f32, sizes=(4,), cube_dim=dim)
    comp = ci.compiled(k)
    raw = RawWgpu()
    rx = raw.buffer(f32.as_bytes(np.arange(16, dtype=np.float32)))
    ry = raw.buffer(f32.as_bytes(np.ones(16, dtype=np.float32)))
    info = raw.buffer(comp.wgsl.info.pack({"f32": [2.0]}, [4, 4]))
    pipe, group = raw.pipeline(comp.wgsl.source, comp.wgsl.entry,
                               [(rx, False), (ry, True), (info, False)])

    def raw_run() -> float:
        def go() -> None:
            for _ in range(n):
                raw.launch(pipe, group, (1, 1, 1))
            raw.sync(ry)
        return timed(go)

    raw_run()
    c = best_of(cubelab_run, 3) / n * 1e6
    r = best_of(raw_run, 3) / n * 1e6
    adapter = client.properties().adapter
    print(table(f"launch_overhead — {n} cache-hit launches of saxpy(16), {adapter}",
                ["path", "µs / launch", "ratio vs raw"],
                [["raw wgpu-py, one submit per launch", f"{r:.1f}", "1.00"],
                 ["cubelab launch (batched on the device thread)", f"{c:.1f}", f"{c / r:.2f}"]]))
    print(f"\ntarget: ratio <= 1.0 -> {'met' if c / r <= 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
