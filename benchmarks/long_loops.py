"""What unrolling long loops costs on a driver that caps them (#28; `ir/passes.py` LoopUnroll).

lavapipe ends a unit's loops once all of them together ran 65 535 steps, silently; cubelab
unrolls runtime loops there (`for` in blocks of up to 256, `while` up to 16 copies) so a correct
loop of 10^5..10^7 iterations runs to its end. This measures, for three loop shapes, with the
unrolling and without it (the pass's factors forced to 1) in the same process:

- compile: the first launch after `clear_cache()` (cubelab's part, naga, and lavapipe's LLVM,
  which compiles at the first dispatch), with Mesa's shader cache off;
- run: a launch of 60 000 iterations per unit (right either way), best of `--reps`;
- whether 10^5 / 10^7 iterations come out right.

    python benchmarks/long_loops.py [--reps 5] [--units 64]

On a device without a loop cap (a real GPU) the pass does not run: nothing to measure.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "true")  # noqa: E402 - before the device

import numpy as np
from _common import table

import cubelab.ir.passes as passes
from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, f32, u32


@cube(launch=True)
def count_for(n: u32, x: Slice[f32], out: SliceMut[f32]):
    acc = f32(0.0)
    for i in range(n):
        acc += f32(i & u32(1))
    out[ABSOLUTE_POS] = acc


@cube(launch=True)
def heavy_for(n: u32, x: Slice[f32], out: SliceMut[f32]):
    acc = f32(0.0)
    for i in range(n):
        v = x[i % u32(16)]
        acc = acc * f32(0.5) + v * v - f32(0.25) * v
        if acc > f32(1000.0):
            acc = acc - f32(1000.0)
    out[ABSOLUTE_POS] = acc


@cube(launch=True)
def lcg_while(n: u32, x: Slice[f32], out: SliceMut[f32]):
    s = ABSOLUTE_POS
    i = u32(0)
    while i < n:
        s = s * u32(1664525) + u32(1013904223)
        i += u32(1)
    out[ABSOLUTE_POS] = f32(s >> u32(8))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--units", type=int, default=64)
    args = ap.parse_args()
    client = Device.wgpu().client()
    cap = client.properties().driver_loop_limit
    if cap is None:
        print(f"{client.properties().adapter}: no driver loop cap, LoopUnroll does not run")
        return
    units = args.units
    x = BufferArg.from_raw_parts(client.create_from_slice(
        f32.as_bytes(np.arange(16, dtype=np.float32) / 16)), 16)
    out = client.empty(4 * units)
    o = BufferArg.from_raw_parts(out, units)
    saved = passes.UNROLL_MAX, passes.UNROLL_MAX_WHILE

    def launch(kernel, n: int) -> float:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        kernel.launch(client, CubeCount.Static(1), CubeDim.new_1d(units), n, x, o)
        client.read_one(out)
        return time.perf_counter() - t0

    def right(kernel, n: int) -> str:  # type: ignore[no-untyped-def]
        try:
            launch(kernel, n)
            return "right"
        except Exception as exc:  # noqa: BLE001 - the loop guard's refusal is the answer
            return type(getattr(exc, "cause", exc)).__name__

    launch(count_for, 10)  # the first pipeline ever costs lavapipe extra: not anyone's
    rows = []
    for kernel in (count_for, heavy_for, lcg_while):
        result = {}
        for label, factors in (("as written", (1, 1)), ("unrolled", saved)):
            passes.UNROLL_MAX, passes.UNROLL_MAX_WHILE = factors
            client.clear_cache()
            compile_s = launch(kernel, 10)
            run_s = min(launch(kernel, 60_000) for _ in range(args.reps))
            result[label] = (compile_s, run_s, right(kernel, 100_000), right(kernel, 10**7))
        passes.UNROLL_MAX, passes.UNROLL_MAX_WHILE = saved
        (c0, r0, a0, b0), (c1, r1, a1, b1) = result["as written"], result["unrolled"]
        rows.append([kernel.__name__, f"{c0 * 1e3:.0f}", f"{c1 * 1e3:.0f}", f"{c1 / c0:.1f}",
                     f"{r0 * 1e3:.1f}", f"{r1 * 1e3:.1f}", f"{r1 / r0:.2f}",
                     f"{a0} / {b0}", f"{a1} / {b1}"])
    print(table(f"long loops on {client.properties().adapter} — {units} units, driver cap {cap}",
                ["kernel", "compile ms (as written)", "compile ms (unrolled)", "ratio",
                 "run 6e4 ms (as written)", "run 6e4 ms (unrolled)", "ratio",
                 "1e5 / 1e7 as written", "1e5 / 1e7 unrolled"], rows))


if __name__ == "__main__":
    main()
