"""Which Python route to CUDA the CUDA runtime is built on: launch cost, import cost, weight.

Measures, in one process on one NVIDIA GPU, interleaved rounds (best of `--rounds`), the host
time of one launch of the same tiny kernel (`y = 2x + 1` on 1 024 floats) enqueued
`--launches` times and synced once, through:

- NVIDIA's `cuda-bindings`, `cuLaunchKernel` with a `void**` packed once (what
  `runtime/cuda/server.py` does for a cache-hit launch);
- the same, packing the arguments per call (the bindings' `(values, types)` tuple form);
- CuPy's `RawKernel`, arguments hoisted out of the loop;
- `cuda.core` (NVIDIA's higher-level layer over the bindings), when installed;

and the compile (NVRTC → cubin → module load) of that kernel through the bindings and through
CuPy (CuPy caches compiled kernels on disk: its figure is a cache miss only in a fresh cache).
It also prints the time to import each package and its size on disk here.

    python benchmarks/cuda_launch_cost.py [--launches 20000] [--rounds 5]

Without an NVIDIA driver it says so and exits 0 (nothing to measure).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.metadata as md
import os
import sys
import time
from typing import Any, Callable

import numpy as np

SRC = r"""
extern "C" __global__ void axpb(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}
"""
TINY = 1024
UNITS = 256


def dist_size(name: str) -> str:
    try:
        files = md.files(name) or []
        total = sum((f.size or 0) for f in files)  # type: ignore[attr-defined]
        if not total:
            dist = md.distribution(name)
            total = sum(os.path.getsize(dist.locate_file(f)) for f in files
                        if os.path.exists(dist.locate_file(f)))
        return f"{total / 2**20:.0f} MiB"
    except md.PackageNotFoundError:
        return "not installed"


def import_seconds(module: str) -> str:
    if module in sys.modules:
        return "(already imported)"
    t0 = time.perf_counter()
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001
        return f"fails: {type(exc).__name__}"
    return f"{(time.perf_counter() - t0) * 1e3:.0f} ms"


class Bindings:
    def __init__(self) -> None:
        from cuda.bindings import driver as d
        from cuda.bindings import nvrtc

        from cubelab.runtime.cuda.driver import bindings, nvrtc_compile, ok

        bindings()
        self.d, self.ok = d, ok
        dev = ok(d.cuDeviceGet(0), "cuDeviceGet")
        ctx = ok(d.cuDevicePrimaryCtxRetain(dev), "ctx")
        ok(d.cuCtxSetCurrent(ctx), "ctx")
        major = ok(d.cuDeviceGetAttribute(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc")
        minor = ok(d.cuDeviceGetAttribute(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc")
        t0 = time.perf_counter()
        cubin, _ = nvrtc_compile(nvrtc, SRC, "axpb", f"sm_{major}{minor}")
        mod = ok(d.cuModuleLoadData(cubin), "load")
        self.fn = ok(d.cuModuleGetFunction(mod, b"axpb"), "fn")
        self.compile_s = time.perf_counter() - t0
        self.stream = ok(d.cuStreamCreate(0), "stream")
        self.x = int(ok(d.cuMemAlloc(TINY * 4), "alloc"))
        self.y = int(ok(d.cuMemAlloc(TINY * 4), "alloc"))
        host = np.arange(TINY, dtype=np.float32)
        ok(d.cuMemcpyHtoD(self.x, host.ctypes.data, TINY * 4), "copy")
        self.vals = (ctypes.c_uint64 * 3)(self.x, self.y, TINY)
        base = ctypes.addressof(self.vals)
        self.ptrs = (ctypes.c_void_p * 3)(base, base + 8, base + 16)
        self.addr = ctypes.addressof(self.ptrs)

    def hoisted(self, n: int) -> Callable[[], None]:
        launch, fn, st, addr, d = self.d.cuLaunchKernel, self.fn, self.stream, self.addr, self.d
        g, b = TINY // UNITS, UNITS

        def go() -> None:
            for _ in range(n):
                launch(fn, g, 1, 1, b, 1, 1, 0, st, addr, 0)
            d.cuStreamSynchronize(st)
        return go

    def tuple_args(self, n: int) -> Callable[[], None]:
        d = self.d
        launch, fn, st = d.cuLaunchKernel, self.fn, self.stream
        vp = ctypes.c_void_p
        g, b = TINY // UNITS, UNITS
        x, y = self.x, self.y

        def go() -> None:
            for _ in range(n):
                launch(fn, g, 1, 1, b, 1, 1, 0, st,
                       ((x, y, TINY), (vp, vp, ctypes.c_uint32)), 0)
            d.cuStreamSynchronize(st)
        return go

    def ok_result(self) -> bool:
        host = np.empty(TINY, np.float32)
        self.ok(self.d.cuMemcpyDtoH(host.ctypes.data, self.y, TINY * 4), "copy")
        return bool(np.array_equal(host, np.arange(TINY, dtype=np.float32) * 2 + 1))


class Cupy:
    def __init__(self) -> None:
        import cupy as cp

        self.cp = cp
        t0 = time.perf_counter()
        self.k = cp.RawModule(code=SRC).get_function("axpb")
        self.x = cp.arange(TINY, dtype=cp.float32)
        self.y = cp.empty_like(self.x)
        self.k((TINY // UNITS,), (UNITS,), (self.x, self.y, np.uint32(TINY)))
        cp.cuda.Device().synchronize()
        self.compile_s = time.perf_counter() - t0

    def hoisted(self, n: int) -> Callable[[], None]:
        k, sync = self.k, self.cp.cuda.Device().synchronize
        args, g, b = (self.x, self.y, np.uint32(TINY)), (TINY // UNITS,), (UNITS,)

        def go() -> None:
            for _ in range(n):
                k(g, b, args)
            sync()
        return go

    def ok_result(self) -> bool:
        return bool((self.y == self.x * 2 + 1).all())


class CudaCore:
    def __init__(self) -> None:
        from cuda.core import Device as CDevice  # type: ignore[import-not-found]
        from cuda.core import LaunchConfig, Program, ProgramOptions, launch

        dev = CDevice()
        dev.set_current()
        self.dev, self.launch_fn = dev, launch
        arch = "".join(str(v) for v in dev.compute_capability)
        prog = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
        self.k = prog.compile("cubin").get_kernel("axpb")
        self.stream = dev.create_stream()
        self.cfg = LaunchConfig(grid=TINY // UNITS, block=UNITS)
        import cupy as cp  # buffers: cuda.core takes any object with a device pointer

        self.x = cp.arange(TINY, dtype=cp.float32)
        self.y = cp.empty_like(self.x)

    def hoisted(self, n: int) -> Callable[[], None]:
        launch, st, cfg, k = self.launch_fn, self.stream, self.cfg, self.k
        args = (self.x.data.ptr, self.y.data.ptr, np.uint32(TINY))

        def go() -> None:
            for _ in range(n):
                launch(st, cfg, k, *args)
            st.sync()
        return go

    def ok_result(self) -> bool:
        return bool((self.y == self.x * 2 + 1).all())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print("| package | import | size on disk |")
    print("|---|---|---|")
    for dist, module in (("cuda-bindings", "cuda.bindings.driver"),
                         ("nvidia-cuda-nvrtc", "cuda.bindings.nvrtc"),
                         ("cuda-core", "cuda.core"), ("cupy-cuda13x", "cupy")):
        print(f"| {dist} | {import_seconds(module)} | {dist_size(dist)} |")
    print()
    from cubelab.errors import DeviceError

    try:
        b = Bindings()
    except DeviceError as exc:
        print(f"no CUDA here: {exc}")
        return
    peers: dict[str, tuple[Any, Callable[[int], Callable[[], None]]]] = {
        "cuda-bindings, void** packed once": (b, b.hoisted),
        "cuda-bindings, (values, types) per call": (b, b.tuple_args),
    }
    compiles = {"cuda-bindings (NVRTC + cuModuleLoadData)": b.compile_s}
    for name, make in (("CuPy RawKernel, arguments hoisted", Cupy),
                       ("cuda.core launch()", CudaCore)):
        try:
            p = make()
        except Exception as exc:  # noqa: BLE001 - a peer that cannot start is reported
            print(f"{name}: not available ({type(exc).__name__}: {exc})")
            continue
        peers[name] = (p, p.hoisted)
        if isinstance(p, Cupy):
            compiles["CuPy RawModule (its disk cache may hold it)"] = p.compile_s
    n = args.launches
    best = {k: float("inf") for k in peers}
    for _ in range(args.rounds):
        for name, (p, make) in peers.items():
            go = make(n)
            t0 = time.perf_counter()
            go()
            best[name] = min(best[name], time.perf_counter() - t0)
    ref = best["cuda-bindings, void** packed once"]
    print(f"| launch route ({n} launches, one sync, best of {args.rounds}) | µs / launch | "
          "÷ bindings, packed once | result |")
    print("|---|---|---|---|")
    for name, (p, _) in peers.items():
        print(f"| {name} | {best[name] / n * 1e6:.2f} | {best[name] / ref:.2f} | "
              f"{'yes' if p.ok_result() else 'WRONG'} |")
    print()
    for name, s in compiles.items():
        print(f"compile, {name}: {s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
