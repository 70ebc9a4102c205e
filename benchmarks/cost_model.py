"""Is the cost model right? Its predictions beside a real GPU's measurements, with correlations.

    python benchmarks/cost_model.py [--runtime wgpu|cuda|all] [--quick]

For each runtime (wgpu — Vulkan on an NVIDIA GPU, lavapipe here — and the CUDA runtime,
`Device.cuda()`, when it exists and finds a driver; otherwise a sentence says why it was
skipped):

1. **Strided reads**, strides 1, 2, 4, 8, 16, 32: unit i reads `x[i * stride]` and writes
   `out[i]`. The model (`inspect.access_map` on a small launch of the same kernel) predicts the
   32-byte sectors per plane-instruction; the GPU's median profiled time of the large launch
   gives the effective bandwidth (bytes the kernel asked for / time). The correlation is
   between predicted sectors (read + write, per launch) and measured time.
2. **Shared memory at a stride**, strides 1 … 32: each unit reads `sm[(UNIT_POS * stride + r)
   % 1024]` `reps` times. The model predicts the bank-conflict ways; the GPU's time per launch
   is measured; the correlation is between ways and time.
3. **Naive vs tiled matmul on the roofline**: `inspect.roofline` of both — measured time and
   GFLOP/s beside the model's predictions: the time the roof allows for the requested bytes,
   for the sector bytes, and for the compulsory bytes (every buffer moved once: a perfect
   cache). A real GPU's caches put a naive matmul well above what its requested bytes allow.

Sizes suit the device: a GPU gets 4 M units for the strided reads and n = 1024 for the matmul,
a CPU adapter (lavapipe) 64 K units and n = 128. Everything runs under a watchdog that dumps
every thread's stack and exits after `--limit` seconds (default 170), so a hung driver still
leaves the tables already printed. The tables go to stdout and, when `$OUT` is set (the device
tool's folder), to `$OUT/cost_model.md` and `$OUT/cost_model.json`. No time is asserted.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import table

from cubelab import BufferArg, CubeCount, CubeDim, Device, inspect
from cubelab.inspect.peaks import profiled
from cubelab.prelude import (
    ABSOLUTE_POS,
    UNIT_POS,
    SharedMemory,
    Slice,
    SliceMut,
    cube,
    f32,
    sync_cube,
    u32,
)
from tests.fixtures.cost_kernels import matmul_naive, matmul_tiled

STRIDES = (1, 2, 4, 8, 16, 32)
UNITS = 256
OUT_LINES: list[str] = []
RESULTS: dict[str, Any] = {}


@cube(launch=True, launch_unchecked=True)
def strided_read(x: Slice[f32], out: SliceMut[f32], stride: u32):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i * stride]


@cube(launch=True, launch_unchecked=True)
def shared_bank(out: SliceMut[f32], stride: u32, reps: u32):
    sm = SharedMemory[f32](1024)
    for k in range(4):
        sm[UNIT_POS + k * 256] = f32.cast_from(UNIT_POS + k)
    sync_cube()
    acc = f32(0.0)
    base = UNIT_POS * stride
    for r in range(reps):
        acc += sm[(base + r) % 1024]
    out[ABSOLUTE_POS] = acc


def say(text: str = "") -> None:
    print(text, flush=True)
    OUT_LINES.append(text)


def grid(units: int) -> CubeCount:
    cubes = -(-units // UNITS)
    return CubeCount.Static(cubes, 1, 1) if cubes <= 65535 else \
        CubeCount.Static(65535, -(-cubes // 65535), 1)


def pearson(a: list[float], b: list[float]) -> float:
    return float(np.corrcoef(np.asarray(a, float), np.asarray(b, float))[0, 1])


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> np.ndarray:
        x = np.asarray(v, float)
        order = x.argsort(kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        for val in np.unique(x):  # ties share their mean rank
            r[x == val] = r[x == val].mean()
        return r
    return pearson(list(ranks(a)), list(ranks(b)))


def correlate(what: str, predicted: list[float], rows: list[dict[str, Any]]) -> dict[str, float]:
    """Pearson and Spearman correlation of the model's `predicted` with each row's measured
    time, said and returned."""
    measured = [d["seconds"] for d in rows]
    corr = {"pearson": pearson(predicted, measured), "spearman": spearman(predicted, measured)}
    say(f"\ncorrelation of the model's {what} with the measured time: Pearson "
        f"{corr['pearson']:.3f}, Spearman {corr['spearman']:.3f}\n")
    return corr


def median_time(client: Any, launch: Any, repeats: int) -> float:
    return statistics.median(profiled(client, launch, repeats))


# -- 1. strided reads -------------------------------------------------------------------------
def strided(client: Any, gpu: bool, repeats: int) -> dict[str, Any]:
    units = (1 << 22) if gpu else (1 << 16)
    x = client.empty(units * max(STRIDES) * 4)
    out = client.empty(units * 4)
    # the model: 4 cubes of 256 units, recorded on the CPU runtime (on buffers of their own:
    # access_map copies its launch's buffers to the CPU runtime, and x is 512 MiB on a GPU)
    small = CubeCount.Static(4)
    x_model = client.empty(4 * UNITS * max(STRIDES) * 4)
    out_model = client.empty(4 * UNITS * 4)
    rows, data = [], []
    for s in STRIDES:
        m = inspect.access_map(strided_read.launch_unchecked, client, small, CubeDim.new_1d(UNITS),
                               BufferArg.from_raw_parts(x_model, 4 * UNITS * s),
                               BufferArg.from_raw_parts(out_model, 4 * UNITS), s, plane_width=32)
        read = next(r for r in m.coalescing() if r.array == "x")
        write = next(r for r in m.coalescing() if r.array == "out")
        per_plane = read.sectors_per_instruction + write.sectors_per_instruction
        planes = units // 32
        predicted_bytes = per_plane * planes * 32
        t = median_time(client, lambda: strided_read.launch_unchecked(
            client, grid(units), CubeDim.new_1d(UNITS), BufferArg.from_raw_parts(x, units * s),
            BufferArg.from_raw_parts(out, units), s), repeats)
        useful = units * 8
        data.append({"stride": s, "read_sectors_per_plane": read.sectors_per_instruction,
                     "efficiency": read.efficiency, "predicted_bytes": predicted_bytes,
                     "seconds": t, "useful_gbps": useful / t / 1e9,
                     "moved_gbps": predicted_bytes / t / 1e9})
        rows.append([s, f"{read.sectors_per_instruction:g}", f"{read.efficiency:.3f}",
                     f"{predicted_bytes / 1e6:,.1f}", f"{t * 1e6:,.1f}",
                     f"{useful / t / 1e9:,.1f}", f"{predicted_bytes / t / 1e9:,.1f}"])
    t1 = data[0]["seconds"]
    for r, d in zip(rows, data):
        r.append(f"{d['seconds'] / t1:.2f}")
        r.append(f"{d['predicted_bytes'] / data[0]['predicted_bytes']:.2f}")
    say(table(f"strided reads, {units:,} units (f32), {client.name()}",
              ["stride", "model: x sectors / plane", "model: efficiency",
               "model: MB moved (read + write)", "measured µs", "measured GB/s (asked for)",
               "GB/s if the model's bytes moved", "time ÷ stride 1", "model bytes ÷ stride 1"],
              rows))
    corr = correlate("bytes", [d["predicted_bytes"] for d in data], data)
    return {"units": units, "rows": data, "correlation": corr}


# -- 2. shared memory at a stride ------------------------------------------------------------------
def shared(client: Any, gpu: bool, repeats: int) -> dict[str, Any]:
    cubes = 1056 if gpu else 16
    reps = 4096 if gpu else 256
    units = cubes * UNITS
    out = client.empty(units * 4)
    rows, data = [], []
    for s in STRIDES:
        m = inspect.access_map(shared_bank.launch_unchecked, client, CubeCount.Static(1),
                               CubeDim.new_1d(UNITS), BufferArg.from_raw_parts(out, UNITS), s, 4,
                               plane_width=32)
        read = max((r for r in m.conflicts() if r.kind == "read"), key=lambda r: r.worst)
        t = median_time(client, lambda: shared_bank.launch_unchecked(
            client, CubeCount.Static(cubes), CubeDim.new_1d(UNITS),
            BufferArg.from_raw_parts(out, units), s, reps), repeats)
        per_access = t / (units * reps)
        data.append({"stride": s, "ways": read.worst, "mean_ways": read.mean, "seconds": t,
                     "ns_per_read_per_unit": per_access * 1e9})
        rows.append([s, read.worst, f"{t * 1e6:,.1f}", f"{units * reps / t / 1e9:,.2f}"])
    t1 = data[0]["seconds"]
    for r, d in zip(rows, data):
        r.append(f"{d['seconds'] / t1:.2f}")
    say(table(f"shared memory at a stride, {cubes} cubes × {UNITS} units × {reps} reads, "
              f"{client.name()}",
              ["stride", "model: ways", "measured µs", "G shared reads / s", "time ÷ stride 1"],
              rows))
    corr = correlate("ways", [d["ways"] for d in data], data)
    return {"cubes": cubes, "reps": reps, "rows": data, "correlation": corr}


# -- 3. matmul on the roofline ---------------------------------------------------------------------
def matmuls(client: Any, gpu: bool, repeats: int, peaks: Any) -> dict[str, Any]:
    n = 1024 if gpu else 128
    a = client.create_from_slice(f32.as_bytes(np.ones(n * n, dtype=np.float32)))
    b = client.create_from_slice(f32.as_bytes(np.ones(n * n, dtype=np.float32)))
    c = client.empty(4 * n * n)
    rows, data = [], []
    rls = []
    for kernel in (matmul_naive, matmul_tiled):
        r = inspect.roofline(kernel.launch, client, CubeCount.Static(n // 16, n // 16),
                             CubeDim.new_2d(16, 16), BufferArg.from_raw_parts(a, n * n),
                             BufferArg.from_raw_parts(b, n * n), BufferArg.from_raw_parts(c, n * n),
                             n, repeats=repeats, peaks=peaks, label=kernel.__name__)
        rls.append(r)
        bw = r.peak_gbps * 1e9
        compute = r.flops / (r.peak_gflops * 1e9)
        pred = {"requested": max(r.bytes / bw, compute), "sectors": max(r.sector_bytes / bw, compute),
                "compulsory": max(r.compulsory_bytes / bw, compute)}
        d = r.to_dict()
        d.update({f"predicted_seconds_{k}": v for k, v in pred.items()})
        data.append(d)
        rows.append([r.label, f"{r.intensity:.3g}", f"{r.flops / r.compulsory_bytes:.3g}",
                     f"{r.seconds * 1e6:,.1f}", f"{pred['requested'] * 1e6:,.1f}",
                     f"{pred['sectors'] * 1e6:,.1f}", f"{pred['compulsory'] * 1e6:,.1f}",
                     f"{r.achieved_gflops:,.1f}", f"{r.attainable_gflops:,.1f}", r.bound])
    say(table(f"matmul n = {n} on the roofline ({peaks.gbps:,.1f} GB/s, {peaks.gflops:,.1f} "
              f"GFLOP/s measured), {client.name()}",
              ["kernel", "flop/B asked", "flop/B compulsory", "measured µs",
               "roof µs (asked bytes)", "roof µs (sector bytes)", "roof µs (compulsory)",
               "measured GFLOP/s", "roof GFLOP/s (asked)", "bound (asked)"], rows))
    say(f"\ntiled ÷ naive time: measured {rls[1].seconds / rls[0].seconds:.3f}, model (requested "
        f"bytes) {data[1]['predicted_seconds_requested'] / data[0]['predicted_seconds_requested']:.3f}\n")
    return {"n": n, "rows": data}


def run_on(name: str, client: Any, quick: bool) -> None:
    gpu = str(client.properties().adapter_type).lower() != "cpu" and \
        not client.name().startswith("cpu")
    repeats = 5 if quick else (20 if gpu else 7)
    say(f"## {name}: {client.name()} · {client.properties().adapter}\n")
    t0 = time.perf_counter()
    peaks = inspect.device_peaks(client)
    say(f"device peaks ({time.perf_counter() - t0:.1f} s): {peaks.gbps:,.1f} GB/s plateau, "
        f"{peaks.gflops:,.1f} GFLOP/s, empty launch {peaks.launch_seconds * 1e6:,.1f} µs, "
        f"{peaks.plane_width} units per plane\n")
    out: dict[str, Any] = {"device": client.name(), "adapter": client.properties().adapter,
                           "peaks": peaks.to_dict()}
    RESULTS[name] = out
    for what, fn in (("strided", lambda: strided(client, gpu, repeats)),
                     ("shared", lambda: shared(client, gpu, repeats)),
                     ("matmul", lambda: matmuls(client, gpu, max(3, repeats // 2), peaks))):
        t0 = time.perf_counter()
        try:
            out[what] = fn()
        except Exception as exc:  # noqa: BLE001 - one failing part must not hide the others
            say(f"{what} failed on {client.name()}: {type(exc).__name__}: {exc}\n")
            out[what] = {"error": f"{type(exc).__name__}: {exc}"}
        say(f"({what}: {time.perf_counter() - t0:.1f} s)\n")
    flush()


def flush() -> None:
    dest = os.environ.get("OUT")
    if not dest:
        return
    Path(dest).mkdir(parents=True, exist_ok=True)
    (Path(dest) / "cost_model.md").write_text("\n".join(OUT_LINES) + "\n")
    (Path(dest) / "cost_model.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", choices=["wgpu", "cuda", "all"], default="all")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--limit", type=float, default=170.0,
                    help="seconds before the watchdog dumps every stack and exits")
    args = ap.parse_args()
    faulthandler.dump_traceback_later(args.limit, exit=True)
    say(f"# cost model vs measurement — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    if args.runtime in ("wgpu", "all"):
        try:
            client = Device.wgpu().client()
        except Exception as exc:  # noqa: BLE001
            say(f"wgpu: skipped — no adapter ({type(exc).__name__}: {exc})\n")
        else:
            run_on("wgpu", client, args.quick)
    if args.runtime in ("cuda", "all"):
        if not hasattr(Device, "cuda"):
            say("cuda: skipped — this cubelab has no CUDA runtime yet (Device.cuda() does not "
                "exist)\n")
        else:
            try:
                client = Device.cuda().client()
            except Exception as exc:  # noqa: BLE001
                say(f"cuda: skipped — Device.cuda() is not available here: "
                    f"{type(exc).__name__}: {exc}\n")
            else:
                run_on("cuda", client, args.quick)
    flush()
    faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    sys.exit(main())
