"""What a device can do, measured with cubelab kernels: its bandwidth (a curve over working-set
size, and the plateau), its float throughput, the cost of an empty launch, its plane width.

    peaks = cubelab.inspect.device_peaks(client)   # measured once per client, then cached
    peaks.gbps, peaks.gflops       # the plateau of the bandwidth curve; FMA throughput
    peaks.curve                    # [BandwidthPoint(bytes, seconds, gbps)] — small sets first
    peaks.launch_seconds           # a one-cube launch, profiled: the floor under every kernel
    cubelab.inspect.peaks.plane_width(client)      # units per plane on this device

Why measured, not looked up: a roofline must compare a kernel with what *this* runtime reaches
through *this* path (wgpu on Vulkan, lavapipe, the CPU runtime), and a datasheet's figure is
not that: the H200's 4.8 TB/s is HBM's, and a profiled cubelab launch also pays its submit.
The kernels (`peak_kernels.py`) are ordinary cubelab kernels, timed through the same path as
`roofline` times a student's kernel (`client.profile()`) — so the two are comparable by
construction. A peak is the best the device does, so each point keeps the fastest of its
profiled launches (a roofline keeps the median: what a launch usually takes); on a busy machine
that keeps the peaks from sinking with the load.

The bandwidth curve copies `vec4<f32>`s (the widest coalesced access) over working sets from
64 KiB up to a size that suits the device (32 MiB on a CPU adapter or the CPU runtime, 2 GiB on
a GPU) — always up to an eighth of that, then while the time budget allows; like CubeCL's
own bandwidth curve it shows the caches at small sizes and the launch cost at the smallest.
The plateau is the median of the three largest working sets. Float throughput is four
independent `vec4` FMA chains per unit, with the loop lengthened until one launch is long
enough that its submit does not matter. Total time: about a second on lavapipe (the budget
is 3 s), a few seconds on a GPU.

The trap: the measuring kernels run on the client's device like any other launch, so a
`CacheMonitor` shows their compiles (`stream_copy`, `fma_chains`, `plane_dim`); and their buffers
are given back with `client.memory_cleanup()` at the end (a 2 GiB working set must not stay in
the pool), which also returns any other unused pooled page of that client.
"""

from __future__ import annotations

import statistics
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from cubelab.errors import CubeError, api_boundary, hinted
from cubelab.runtime.cpu.cost import DEFAULT_PLANE_WIDTH
from cubelab.runtime.handle import BufferArg
from cubelab.runtime.kernel_id import CubeDim
from cubelab.runtime.launch_args import CubeCount

__all__ = ["BandwidthPoint", "DevicePeaks", "device_peaks", "plane_width", "profiled"]

UNITS = 256  # units per cube of the measuring kernels
MAX_CUBES_X = 65535  # WebGPU's per-dimension limit: larger grids go 2-D
SMALLEST = 64 << 10  # the first working set of the curve (bytes read + written)

_peaks: "weakref.WeakKeyDictionary[Any, DevicePeaks]" = weakref.WeakKeyDictionary()
_widths: dict[int, int] = {}  # Device.id -> measured plane width


@dataclass(frozen=True)
class BandwidthPoint:
    bytes: int  # working set: bytes read + bytes written by one launch
    seconds: float  # the fastest of its profiled launches
    gbps: float  # bytes / seconds / 1e9


@dataclass
class DevicePeaks:
    device: str
    gbps: float  # the plateau: median of the three largest working sets
    gflops: float  # FMA throughput
    launch_seconds: float  # a one-cube copy, profiled: what any launch costs at least
    curve: list[BandwidthPoint] = field(default_factory=list)
    plane_width: int = DEFAULT_PLANE_WIDTH
    seconds: float = 0.0  # how long measuring took

    @property
    def ridge(self) -> float:
        """Flops per byte where the roofline bends: below it a kernel is memory-bound."""
        return self.gflops / self.gbps if self.gbps else float("inf")

    def table(self) -> str:
        rows = [f"peaks of {self.device} (measured with cubelab kernels in {self.seconds:.1f} s)",
                f"  bandwidth plateau {self.gbps:,.1f} GB/s · float throughput "
                f"{self.gflops:,.1f} GFLOP/s · ridge {self.ridge:.2f} flop/byte",
                f"  an empty launch costs {self.launch_seconds * 1e6:,.1f} µs · "
                f"{self.plane_width} units per plane", "",
                f"  {'working set':>12}  {'µs / launch':>12}  {'GB/s':>10}"]
        for p in self.curve:
            rows.append(f"  {_size(p.bytes):>12}  {p.seconds * 1e6:>12,.1f}  {p.gbps:>10,.2f}")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()

    def to_svg(self) -> str:
        """The bandwidth curve as SVG (matplotlib; `pip install cubelab[lab]`)."""
        from cubelab.inspect.roofline_plot import bandwidth_svg

        return bandwidth_svg(self)

    def _repr_html_(self) -> str:
        from html import escape

        try:
            svg = self.to_svg()
        except ImportError:
            svg = ""
        return (f'<div class="cubelab-peaks"><pre style="white-space:pre-wrap">'
                f"{escape(self.table())}</pre>{svg}</div>")

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "gbps": self.gbps, "gflops": self.gflops,
                "launch_seconds": self.launch_seconds, "plane_width": self.plane_width,
                "seconds": self.seconds, "ridge": self.ridge,
                "curve": [{"bytes": p.bytes, "seconds": p.seconds, "gbps": p.gbps}
                          for p in self.curve]}


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):g} {unit}"
    return f"{n} B"


def profiled(client: Any, launch: Any, repeats: int) -> list[float]:
    """The profiled times (seconds) of `repeats` calls of `launch()`, after one unprofiled
    call that compiles — how `device_peaks` and `roofline` both time a launch (they keep the
    median)."""
    launch()
    client.sync()
    with client.profile() as p:
        for _ in range(repeats):
            launch()
    if not p.samples:
        raise CubeError(hinted("the profiled launches did not run (a dry run, a capture, or a "
                               "failed launch)", "read one of its output buffers to see why"))
    return [s.duration_s for s in p.samples]


def _grid(units: int) -> CubeCount:
    cubes = -(-units // UNITS)
    if cubes <= MAX_CUBES_X:
        return CubeCount.Static(cubes, 1, 1)
    return CubeCount.Static(MAX_CUBES_X, -(-cubes // MAX_CUBES_X), 1)


def _kind(client: Any) -> str:
    """"gpu", or "cpu" for the CPU runtime and CPU adapters (lavapipe): they get small sizes."""
    props = client.properties()
    return "cpu" if client.name().startswith("cpu") or \
        str(props.adapter_type).lower() == "cpu" else "gpu"


@api_boundary
def device_peaks(client: Any, refresh: bool = False, budget_s: float | None = None) -> DevicePeaks:
    """Measure (once per client; `refresh` to measure again) the bandwidth curve and its
    plateau, float throughput and the cost of a launch, with cubelab kernels on `client`'s
    device. `budget_s` bounds the curve's time (default: 1 s on a CPU adapter, 10 s on a GPU;
    the float measurement and the compiles come on top)."""
    if not refresh:
        found = _peaks.get(client)
        if found is not None:
            return found
    from cubelab.inspect.peak_kernels import fma_chains, stream_copy

    t0 = time.perf_counter()
    kind = _kind(client)
    largest = (32 << 20) if kind == "cpu" else (2 << 30)
    repeats = 5 if kind == "cpu" else 10
    budget = budget_s if budget_s is not None else (1.0 if kind == "cpu" else 10.0)
    dim = CubeDim.new_1d(UNITS)

    def copy_time(items: int, x: Any, out: Any) -> float:
        return min(profiled(client, lambda: stream_copy.launch_unchecked(
            client, _grid(items), dim, BufferArg.from_raw_parts(x, 4 * items),
            BufferArg.from_raw_parts(out, 4 * items)), repeats))  # lengths count floats

    # the floor: one cube
    small_x, small_out = client.empty(UNITS * 16), client.empty(UNITS * 16)
    floor = copy_time(UNITS, small_x, small_out)
    curve: list[BandwidthPoint] = []
    size = SMALLEST
    while size <= largest:
        items = size // 32  # vec4s: 16 bytes read and 16 written each
        try:
            x, out = client.empty(items * 16), client.empty(items * 16)
            s = copy_time(items, x, out)
        except CubeError:
            break  # past what this device can bind or allocate: the curve ends here
        finally:
            x = out = None
        curve.append(BandwidthPoint(size, s, size / s / 1e9))
        # the sizes up to an eighth of the largest are always measured (a busy machine's slow
        # launch must not cut the curve to one point); past them the time budget decides
        spent = time.perf_counter() - t0
        if size * 8 >= largest and (spent > budget or spent + s * 2 * (repeats + 1) > budget):
            break
        size *= 2
    if not curve:
        raise CubeError(hinted(f"device_peaks: not even a {_size(SMALLEST)} copy ran on "
                               f"{client.name()}", "free memory (client.memory_cleanup()) and "
                               "run it outside dry_run() and graph capture"))
    tail = sorted(p.gbps for p in curve[-3:])
    gbps = statistics.median(tail)
    gflops = _fma_throughput(client, fma_chains, kind, dim)
    # the curve's buffers (up to 2 GiB on a GPU) go back to the driver, not into the pool
    del small_x, small_out
    client.memory_cleanup()
    peaks = DevicePeaks(f"{client.name()} · {client.properties().adapter}", gbps, gflops, floor,
                        curve, plane_width(client), time.perf_counter() - t0)
    _peaks[client] = peaks
    return peaks


def _fma_throughput(client: Any, kernel: Any, kind: str, dim: CubeDim) -> float:
    """GFLOP/s of `fma_chains`, its loop doubled until one launch takes `target` seconds."""
    units = 1024 * UNITS  # lanes enough for an interpreter to amortise each op (the CPU runtime)
    target = 0.02 if kind == "cpu" else 0.004
    out = client.empty(units * 16)
    steps = 16
    while True:
        s = min(profiled(client, lambda: kernel.launch_unchecked(
            client, _grid(units), dim, 1.0, steps, BufferArg.from_raw_parts(out, 4 * units)), 3))
        # 4 chains × 4 lanes × an FMA (2 flops) per step; the set-up (5 flops + 3 vec4 adds)
        flops = units * (steps * 32 + 5 + 12)
        # lavapipe stops loops at 65 535 iterations, so the loop never goes past 2^15
        if s >= target or steps >= 1 << 15:
            return flops / s / 1e9
        steps = min(1 << 15, steps * (8 if s * 16 < target else 2))


@api_boundary
def plane_width(client: Any) -> int:
    """Units per plane on `client`'s device: the one width its properties name
    (`plane_size_min == plane_size_max`: the CPU runtime's 32), else what a one-cube kernel
    reading `PLANE_DIM` reports (once per device: lavapipe its SIMD width, 8 on a 256-bit
    llvmpipe, inside the 4..128 it reports; NVIDIA 32; AMD 32 or 64), else 32 (no subgroups)."""
    props = client.properties()
    if props.plane_size_min == props.plane_size_max:  # the device names one width
        return int(props.plane_size_min)
    dev = client.device
    found = _widths.get(dev.id)
    if found is not None:
        return found
    width = DEFAULT_PLANE_WIDTH
    if props.has_subgroups:
        from cubelab.inspect.peak_kernels import plane_dim
        from cubelab.prelude import u32

        out = client.create_from_slice(bytes(16))
        plane_dim.launch(client, CubeCount.Static(1), CubeDim.new_1d(64),
                         BufferArg.from_raw_parts(out, 4))
        width = int(u32.from_bytes(client.read_one(out))[0]) or DEFAULT_PLANE_WIDTH
    _widths[dev.id] = width
    return width
