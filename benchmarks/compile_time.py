"""Compile time per new KernelId: cubelab's own part (expand + passes + WGSL codegen, the shown
targets beside it) and the driver's part (shader module + pipeline + the first dispatch, where lavapipe compiles
lazily) — and whether cubelab's part stays linear in the kernel's size.

    python benchmarks/compile_time.py [--repeats 20] [--no-driver]

Four tables:

- the seed-000 kernels (saxpy, add, topology): expand + passes + WGSL <= 2 ms;
- the zoo (`tests/zoo`): expand + passes + WGSL <= 5 ms per kernel;
- the big unrolled kernels (a 36-stage bitonic sort, the 16x16 tile of the zoo's matmul, a
  64-step unrolled scan): <= 10 ms;
- ops per millisecond for generated kernels of 10 to 10 000 IR ops (an unrolled chain of
  arithmetic, and one with a runtime branch per step): flat from row to row means linear.

Each part is timed as the server runs it when nobody listens for the IR texts (the debug log,
an inspector): define, then the passes, then each target (the shown ones — MSL, CUDA — in
their own column: every compile renders them too), with the cycle collector paused
(`compiler.pipeline.paused_gc`). The "IR texts" column is what a listener adds (the IR printed
as expanded and after each pass that changed it). Times are the best of `--repeats` runs of the
process's CPU time, which a busy machine inflates far less than wall time. Targets are the
issue's; the benchmark prints whether each is met, and asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import table

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab import inspect as ci
from cubelab.compiler.pipeline import CompilationOptions, paused_gc, select_passes
from cubelab.compiler.targets import TARGETS
from cubelab.compiler.wgsl import compile_wgsl
from cubelab.ir.analysis import all_ops
from cubelab.ir.printer import print_kernel
from cubelab.prelude import (Comptime, Slice, SliceMut, f32, u32, cube, unroll, ABSOLUTE_POS)
from cubelab.runtime import events as ev

PARTS = ("expand", "passes", "wgsl", "shown", "texts")


def frontend_times(k: Any, repeats: int) -> dict[str, float]:
    """Best-of CPU times (ms) of one instance's define (expand), passes, WGSL codegen and the
    shown targets' (MSL, CUDA: every compile renders them beside the WGSL), and of printing the
    IR texts a listener gets; plus `ops`, the IR ops after the passes."""
    clock = time.process_time
    best = dict.fromkeys(PARTS, 1e9)
    ops = 0
    for _ in range(repeats):
        with paused_gc():
            t0 = clock()
            d = k.define()
            t1 = clock()
            select_passes(k.mode, CompilationOptions()).run(d)
            t2 = clock()
            compile_wgsl(d)
            t3 = clock()
            for name, target in TARGETS.items():  # every shown target rides along on a compile
                if name != "wgsl":
                    target.compile(d)
            t4 = clock()
        d2 = k.define()
        t5 = clock()
        text = print_kernel(d2)
        select_passes(k.mode, CompilationOptions()).run(d2, record=True, before=text)
        t6 = clock()
        for part, dt in zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t6 - t5)):
            best[part] = min(best[part], dt * 1e3)
        ops = len(all_ops(d))
    best["ops"] = ops
    return best


def driver_time(client: Any, launch: Any) -> float:
    """ms from codegen's end through the first dispatch, from the CompileFinished event."""
    client.clear_cache()
    with client.events.record(ev.CompileFinished, ev.CompileFailed, ev.LaunchFailed) as rec:
        launch()
        client.sync()
    failed = rec.of(ev.CompileFailed) + rec.of(ev.LaunchFailed)
    if failed:
        raise RuntimeError(f"the benchmark's launch failed: {failed[0].error}")
    (done,) = rec.of(ev.CompileFinished)
    return done.driver_s * 1e3


def core_kernels() -> list[tuple[str, Any, Any]]:
    """(name, KernelInstance, launch-through-a-client thunk maker) for the seed-000 kernels."""
    from tests.fixtures.kernels import add, saxpy, topology

    def saxpy_launch(client: Any) -> Any:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
        return lambda: saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4,
                                         2.0, BufferArg.from_raw_parts(x, 16),
                                         BufferArg.from_raw_parts(y, 16))

    def add_launch(client: Any) -> Any:
        h = [client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
             for _ in range(3)]
        return lambda: add.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(8),
                                       *[BufferArg.from_raw_parts(b, 8) for b in h], True)

    def topo_launch(client: Any) -> Any:
        out = client.empty(420 * 4)
        return lambda: topology.launch(client, CubeCount.Static(3, 5, 7), CubeDim.new_2d(2, 2),
                                       BufferArg.from_raw_parts(out, 420))

    return [
        ("saxpy<f32, 4>", ci.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4)),
         saxpy_launch),
        ("add<f32> relu", ci.instance(add, f32, cube_dim=CubeDim.new_1d(8), comptime=(True,)),
         add_launch),
        ("topology", ci.instance(topology, cube_dim=CubeDim.new_2d(2, 2)), topo_launch),
    ]


def core_table(repeats: int, client: Any) -> str:
    rows = []
    for name, k, make_launch in core_kernels():
        t = frontend_times(k, repeats)
        ours = t["expand"] + t["passes"] + t["wgsl"]
        drv = f"{driver_time(client, make_launch(client)):.2f}" if client is not None else "-"
        rows.append([name, f"{t['expand']:.3f}", f"{t['passes']:.3f}", f"{t['wgsl']:.3f}",
                     f"{ours:.3f}", "yes" if ours <= 2.0 else "NO", f"{t['shown']:.3f}", drv])
    where = client.properties().adapter if client is not None else "no device"
    return table(f"compile_time — per new KernelId, best of {repeats} (CPU ms), {where}",
                 ["kernel", "expand", "passes", "WGSL", "expand+passes+WGSL", "<= 2 ms",
                  SHOWN, "driver through 1st dispatch"], rows)


def zoo_driver_time(client: Any, k: Any) -> float:
    """Driver ms (shader module + pipeline + first dispatch) of one zoo instance, launched once
    on tiny zero-filled arguments (every zoo kernel guards its lengths, so nothing runs far)."""
    from cubelab.runtime.launch_args import Bindings, BufferBinding

    d = k.define()
    buffers = []
    for b in d.buffers:
        h = client.create_from_slice(bytes(16 * b.item.size))
        shape = (1, 1) if b.tensor else None
        buffers.append(BufferBinding(h, 4, b.writable, b.name, shape,
                                     (1, 1) if b.tensor else None))
    scalars: dict[str, list[Any]] = {}
    for sp in d.scalars:
        scalars.setdefault(sp.elem, []).append(False if sp.elem == "bool" else 0)
    return driver_time(client, lambda: client.launch(k, CubeCount.Static(1, 1, 1),
                                                     Bindings(buffers, scalars)))


UNROLLED = ("bitonic_sort", "matmul_16x16", "scan_unrolled")


def zoo_rows(repeats: int, client: Any, names: Any, limit: float) -> list[list[str]]:
    from tests.zoo import ZOO

    rows = []
    for name, k in ZOO:
        if name not in names:
            continue
        t = frontend_times(k, repeats)
        ours = t["expand"] + t["passes"] + t["wgsl"]
        drv = f"{zoo_driver_time(client, k):.2f}" if client is not None else "-"
        rows.append([name, str(t["ops"]), f"{t['expand']:.3f}", f"{t['passes']:.3f}",
                     f"{t['wgsl']:.3f}", f"{ours:.3f}", "yes" if ours <= limit else "NO",
                     f"{t['shown']:.3f}", f"{t['texts']:.3f}", drv])
    return rows


SHOWN = " + ".join(n.upper() for n in TARGETS if n != "wgsl") + " (shown)"
ZOO_HEADER = ["kernel", "IR ops", "expand", "passes", "WGSL", "expand+passes+WGSL", "<= {} ms",
              SHOWN, "IR texts (a listener)", "driver through 1st dispatch"]


def zoo_table(repeats: int, client: Any = None) -> str:
    """cubelab's part for every kernel of tests/zoo: expand + passes + WGSL against the zoo's
    target of 5 ms each (the unrolled ones: 10 ms, their own table), the shown targets (which
    ride along on every compile) and the IR texts in their own columns, the driver's part reported apart."""
    from tests.zoo import ZOO

    small = [name for name, _ in ZOO if name not in UNROLLED]
    header = [h.format(5) for h in ZOO_HEADER]
    out = table(f"compile_time — the zoo, best of {repeats} (CPU ms)", header,
                zoo_rows(repeats, client, small, 5.0))
    header = [h.format(10) for h in ZOO_HEADER]
    return out + "\n\n" + table(
        f"compile_time — the big unrolled kernels, best of {repeats} (CPU ms)", header,
        zoo_rows(repeats, client, UNROLLED, 10.0))


# -- linear in ops: generated kernels of 10 to 10 000 ops ---------------------------------------
@cube(launch=True)
def unrolled_chain(x: Slice[f32], out: SliceMut[f32], steps: Comptime[int]):
    """`steps` multiply-adds, each reading the next item: straight-line code."""
    i = ABSOLUTE_POS
    acc = f32(0.0)
    for k in unroll(range(steps)):
        acc = acc * 0.5 + x[i + u32(k)]
    out[i] = acc


@cube(launch=True)
def unrolled_branches(x: Slice[f32], out: SliceMut[f32], steps: Comptime[int]):
    """`steps` reads, each under a runtime branch that stores into a local (an `scf.if` per
    step): control flow and mutable locals."""
    i = ABSOLUTE_POS
    acc = f32(0.0)
    for k in unroll(range(steps)):
        v = x[i + u32(k)]
        if v > acc:
            acc = v
    out[i] = acc


def scaling_table(repeats: int) -> str:
    rows = []
    for fn, steps in ((unrolled_chain, (1, 10, 100, 1000, 1400)),
                      (unrolled_branches, (1, 10, 100, 800, 1100))):
        for n in steps:
            k = ci.instance(fn, cube_dim=CubeDim.new_1d(64), comptime=(n,))
            t = frontend_times(k, max(3, repeats // 4) if n >= 100 else repeats)
            ours = t["expand"] + t["passes"] + t["wgsl"]
            rows.append([fn.__name__, str(n), str(t["ops"]), f"{ours:.2f}",
                         f"{t['ops'] / ours:.0f}", f"{t['ops'] / t['expand']:.0f}",
                         f"{t['ops'] / t['wgsl']:.0f}", f"{t['ops'] / t['shown']:.0f}"])
    return table("compile_time — linear in ops? generated kernels (ops per CPU ms; flat = linear)",
                 ["kernel", "steps", "IR ops", "expand+passes+WGSL ms", "ops/ms",
                  "expand ops/ms", "WGSL ops/ms", SHOWN + " ops/ms"], rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--no-driver", action="store_true",
                    help="cubelab's part only (no device: no driver column)")
    args = ap.parse_args()
    client = None if args.no_driver else Device.wgpu().client()
    print(core_table(args.repeats, client))
    print()
    print(zoo_table(args.repeats, client))
    print()
    print(scaling_table(args.repeats))


if __name__ == "__main__":
    main()
