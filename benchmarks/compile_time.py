"""Compile time per new KernelId: cubelab's own part (expand + passes + WGSL codegen) and the
driver's part (shader module + pipeline + the first dispatch, where lavapipe compiles lazily).

    python benchmarks/compile_time.py [--repeats 50]

Targets: cubelab's part <= 2 ms for saxpy-class kernels; the MSL target (shown, never run) <= 1 ms
on its own. Both targets run on every new KernelId (MSL rides along in CompileFinished), so the
MSL column is part of what a first launch costs. Other sections (the zoo) add below as they land.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import table

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab import inspect as ci
from cubelab.compiler.targets import TARGETS
from cubelab.compiler.wgsl import compile_wgsl
from cubelab.ir.passes import CheckedIo, PassManager
from cubelab.prelude import f32
from cubelab.runtime import events as ev


def frontend_times(k: Any, repeats: int) -> dict[str, float]:
    """Best-of times (ms) for define (expand), passes, WGSL and MSL codegen of one instance."""
    best = {"expand": 1e9, "passes": 1e9, "wgsl": 1e9, "msl": 1e9}
    for _ in range(repeats):
        t0 = time.perf_counter()
        d = k.define()
        t1 = time.perf_counter()
        PassManager([CheckedIo()]).run(d)
        t2 = time.perf_counter()
        compile_wgsl(d)
        t3 = time.perf_counter()
        TARGETS["msl"].compile(d)
        t4 = time.perf_counter()
        best["expand"] = min(best["expand"], (t1 - t0) * 1e3)
        best["passes"] = min(best["passes"], (t2 - t1) * 1e3)
        best["wgsl"] = min(best["wgsl"], (t3 - t2) * 1e3)
        best["msl"] = min(best["msl"], (t4 - t3) * 1e3)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    client = Device.wgpu().client()
    rows = []
    for name, k, make_launch in core_kernels():
        t = frontend_times(k, args.repeats)
        ours = t["expand"] + t["passes"] + t["wgsl"] + t["msl"]
        drv = driver_time(client, make_launch(client))
        rows.append([name, f"{t['expand']:.3f}", f"{t['passes']:.3f}", f"{t['wgsl']:.3f}",
                     f"{t['msl']:.3f}", "yes" if t["msl"] <= 1.0 else "NO", f"{ours:.3f}",
                     "yes" if ours <= 2.0 else "NO", f"{drv:.2f}"])
    print(table(f"compile_time — per new KernelId, best of {args.repeats} (ms), "
                f"{client.properties().adapter}",
                ["kernel", "expand", "passes", "WGSL", "MSL", "MSL <= 1 ms", "cubelab total",
                 "<= 2 ms",
                 "driver through 1st dispatch"], rows))
    print()
    print(zoo_table(args.repeats, client))


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


def zoo_table(repeats: int, client: Any = None) -> str:
    """cubelab's part for every kernel of tests/zoo: expand + passes + WGSL against the zoo's
    target of 5 ms each, MSL (which rides along on every compile) in its own column, and the
    driver's part (one launch each, on tiny arguments) reported separately."""
    from tests.zoo import ZOO

    rows = []
    for name, k in ZOO:
        t = frontend_times(k, repeats)
        lines = len(TARGETS["msl"].compile(k.define()).source.splitlines())
        ours = t["expand"] + t["passes"] + t["wgsl"]
        drv = f"{zoo_driver_time(client, k):.2f}" if client is not None else "-"
        rows.append([name, f"{t['expand']:.3f}", f"{t['passes']:.3f}", f"{t['wgsl']:.3f}",
                     f"{ours:.3f}", "yes" if ours <= 5.0 else "NO", f"{t['msl']:.3f}",
                     str(lines), drv])
    return table(f"compile_time — the zoo, best of {repeats} (ms)",
                 ["kernel", "expand", "passes", "WGSL", "expand+passes+WGSL", "<= 5 ms", "MSL",
                  "MSL lines", "driver through 1st dispatch"], rows)


if __name__ == "__main__":
    main()
