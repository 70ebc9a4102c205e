"""A roofline of one launch: measured time, counted bytes and flops, and what bounds it.

    r = cubelab.inspect.roofline(saxpy.launch[f32], client, count, dim, 4, 2.0, x_arg, y_arg)
    r.seconds, r.bytes, r.flops           # median profiled time; counted from a recorded run
    r.intensity, r.bound                  # flops per byte; "memory" | "compute"
    r.achieved_gbps, r.achieved_gflops    # what the launch reached
    r.peak_gbps, r.peak_gflops            # what the device reaches (`device_peaks`, cached)
    r                                     # in a notebook: the numbers and the chart
    cubelab.inspect.roofline_chart(naive, tiled)   # several kernels on one chart
    cubelab.widgets.Roofline(naive, tiled)         # the same, as a widget
    w = cubelab.inspect.work(saxpy.launch[f32], client, count, dim, 4, 2.0, x_arg, y_arg)
    w.bytes, w.flops, w.intensity, w.bound(peaks)  # the counted half alone: no timing, the same
                                                   # on every machine (what an exercise checks)

How each number is made, so a student can trust it:

- **time**: the launch is run once (compiling), then `repeats` times inside `client.profile()`
  — each launch blocking and timed on the device thread, submit included — and the median is
  kept. The kernel's buffers are read before and written back after, so a roofline leaves them
  as they were (a kernel that updates `y` in place is timed `repeats + 1` times, yet `y` is
  unchanged afterwards).
- **bytes and flops**: counted, not guessed — the launch is re-run on the CPU runtime, on copies
  of its buffers, with counting instruments (`runtime/cpu/instruments.py`): every global load,
  store and atomic of an active unit adds its item's bytes, every float op its flops
  (`cost.FLOPS`: fma = 2, a math function = 1). A launch of more than `sample_cubes` cubes is
  counted on that many cubes spread evenly over it (the first and the last included) and scaled:
  exact when its cubes do the same work, an estimate otherwise (`r.cubes_counted` says).
- **the model's traffic**: `bytes` is what the kernel *asks* for. Two other figures bracket what
  the memory system moves: `sector_bytes` (the coalescing model: 32-byte sectors per plane-
  instruction, no reuse between instructions — a strided kernel pays for whole sectors) and
  `compulsory_bytes` (every buffer the kernel touches, read once and written once: what a
  perfect cache would move). A real GPU lands between them: its caches turn repeated reads of
  the same data (a naive matmul's rows) into far fewer DRAM bytes than requested.
- **bound**: "memory" when the intensity (flops / requested bytes) is below the device's ridge
  point (peak GFLOP/s ÷ peak GB/s), else "compute". `attainable_gflops` = min(peak GFLOP/s,
  intensity × peak GB/s) is the roof above the kernel; `predicted_seconds` the time that roof
  allows.

The trap: a launch shorter than a few empty launches (`launch_seconds`) measures the submit,
not the kernel — the report says so, and the fix is a bigger problem, not a faster kernel.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from cubelab.errors import CubeError, api_boundary, hinted
from cubelab.frontend import aggregate_launch
from cubelab.inspect.peaks import DevicePeaks, device_peaks, profiled
from cubelab.runtime.cpu.cost import SECTOR_BYTES, transactions
from cubelab.runtime.handle import BufferArg, TensorArg

__all__ = ["Roofline", "RooflineChart", "Work", "bound_of", "roofline", "roofline_chart", "work"]

SAMPLE_CUBES = 64  # cubes counted when a launch has more (spread evenly, scaled)
MODEL_CUBES = 4  # of those, cubes whose accesses are recorded for the sector model
MODEL_ACCESSES = 200_000  # accesses kept for the sector model


@dataclass
class Roofline:
    kernel: str
    label: str
    seconds: float  # median profiled time of one launch
    bytes: int  # global bytes requested (loads + stores + atomics), whole launch
    flops: int  # floating-point operations executed, whole launch
    peak_gbps: float
    peak_gflops: float
    sector_bytes: int = 0  # the coalescing model: sectors touched × 32
    compulsory_bytes: int = 0  # every touched buffer read once / written once
    launch_seconds: float = 0.0  # an empty launch on this device (device_peaks)
    device: str = ""
    cubes_counted: int = 0
    cubes_total: int = 0
    samples: list[float] = field(default_factory=list, repr=False)

    # -- derived --------------------------------------------------------------------------------
    @property
    def intensity(self) -> float:
        """Flops per requested byte."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def achieved_gbps(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds else 0.0

    @property
    def achieved_gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds else 0.0

    @property
    def ridge(self) -> float:
        return self.peak_gflops / self.peak_gbps if self.peak_gbps else float("inf")

    @property
    def bound(self) -> str:
        return bound_of(self.intensity, self.ridge)

    @property
    def attainable_gflops(self) -> float:
        """The roof above this kernel: min(peak GFLOP/s, intensity × peak GB/s)."""
        return min(self.peak_gflops, self.intensity * self.peak_gbps)

    @property
    def predicted_seconds(self) -> float:
        """The time the roof allows: the larger of bytes / peak bandwidth and flops / peak
        throughput (no launch cost)."""
        return max(self.bytes / (self.peak_gbps * 1e9) if self.peak_gbps else 0.0,
                   self.flops / (self.peak_gflops * 1e9) if self.peak_gflops else 0.0)

    @property
    def fraction_of_roof(self) -> float:
        """Achieved over attainable: 1.0 = on the roof."""
        if self.bound == "memory" or not self.flops:
            return self.achieved_gbps / self.peak_gbps if self.peak_gbps else 0.0
        return self.achieved_gflops / self.attainable_gflops if self.attainable_gflops else 0.0

    @property
    def launch_bound(self) -> bool:
        """As short as a few empty launches: the time is mostly the submit's."""
        return self.launch_seconds > 0 and self.seconds < 3 * self.launch_seconds

    # -- output ---------------------------------------------------------------------------------
    def notes(self) -> list[str]:
        out = []
        if self.launch_bound:
            out.append(f"{self.seconds * 1e6:,.0f} µs is within 3× of an empty launch "
                       f"({self.launch_seconds * 1e6:,.0f} µs): the time is mostly the submit, "
                       "so this roofline says little about the kernel — give it more work")
        if self.cubes_counted < self.cubes_total:
            out.append(f"bytes and flops counted on {self.cubes_counted} of {self.cubes_total} "
                       "cubes (spread evenly) and scaled: exact when every cube does the same")
        if self.sector_bytes > self.bytes * 1.01:
            out.append(f"the coalescing model moves {self.sector_bytes / self.bytes:.2f}× the "
                       "requested bytes (partly used 32-byte sectors): see access_map(...)"
                       ".coalescing()")
        if self.achieved_gbps > self.peak_gbps * 1.05:
            out.append("faster than the bandwidth roof allows for the requested bytes: caches "
                       "served repeated reads (DRAM moved fewer bytes than the kernel asked "
                       f"for; at least {_bytes(self.compulsory_bytes)} had to move)")
        return out

    def table(self) -> str:
        rows = [f"roofline of `{self.label}` on {self.device}",
                f"  time {self.seconds * 1e6:,.1f} µs (median of {len(self.samples)}) · "
                f"{_bytes(self.bytes)} requested · {self.flops:,} flops · intensity "
                f"{self.intensity:.3g} flop/byte",
                f"  achieved {self.achieved_gbps:,.2f} GB/s, {self.achieved_gflops:,.2f} GFLOP/s · "
                f"peak {self.peak_gbps:,.1f} GB/s, {self.peak_gflops:,.1f} GFLOP/s (ridge "
                f"{self.ridge:.2f})",
                f"  bound: {self.bound} · {self.fraction_of_roof:.0%} of the roof · the roof "
                f"allows {self.predicted_seconds * 1e6:,.1f} µs",
                f"  the model's traffic: {_bytes(self.sector_bytes)} in 32-byte sectors, "
                f"{_bytes(self.compulsory_bytes)} compulsory"]
        rows += [f"  note: {n}" for n in self.notes()]
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()

    def to_svg(self) -> str:
        """This kernel on its device's roofline (matplotlib; `pip install cubelab[lab]`)."""
        return RooflineChart([self]).to_svg()

    def _repr_html_(self) -> str:
        return RooflineChart([self])._repr_html_()

    def to_dict(self) -> dict[str, Any]:
        keys = ("kernel", "label", "seconds", "bytes", "flops", "peak_gbps", "peak_gflops",
                "sector_bytes", "compulsory_bytes", "launch_seconds", "device", "cubes_counted",
                "cubes_total", "intensity", "achieved_gbps", "achieved_gflops", "bound",
                "attainable_gflops", "predicted_seconds", "fraction_of_roof")
        return {k: getattr(self, k) for k in keys}


@dataclass
class RooflineChart:
    """Several kernels on one device's roofline (a student's naive and tiled matmul)."""

    rooflines: list[Roofline]
    title: str | None = None

    def table(self) -> str:
        head = f"{'kernel':<24} {'µs':>10} {'flop/B':>8} {'GB/s':>9} {'GFLOP/s':>9} {'bound':>8} " \
               f"{'of roof':>8}"
        rows = [self.title or "roofline", head]
        for r in self.rooflines:
            rows.append(f"{r.label[:24]:<24} {r.seconds * 1e6:>10,.1f} {r.intensity:>8.3g} "
                        f"{r.achieved_gbps:>9,.2f} {r.achieved_gflops:>9,.2f} {r.bound:>8} "
                        f"{r.fraction_of_roof:>8.0%}")
        return "\n".join(rows)

    def __str__(self) -> str:
        return "\n\n".join([self.table()] + [r.table() for r in self.rooflines])

    def to_svg(self) -> str:
        from cubelab.inspect.roofline_plot import roofline_svg

        return roofline_svg(self.rooflines, self.title)

    def _repr_html_(self) -> str:
        from html import escape

        try:
            svg = self.to_svg()
        except ImportError as exc:
            svg = f'<div class="cl-muted">{escape(str(exc))}</div>'
        return (f'<div class="cubelab-roofline-view"><pre style="white-space:pre-wrap">'
                f"{escape(str(self))}</pre>{svg}</div>")


def roofline_chart(*rooflines: Roofline | Iterable[Roofline], title: str | None = None
                   ) -> RooflineChart:
    """Several `Roofline`s (or lists of them) on one chart."""
    flat: list[Roofline] = []
    for r in rooflines:
        flat += [r] if isinstance(r, Roofline) else list(r)
    if not flat:
        raise ValueError(hinted("roofline_chart needs at least one Roofline",
                                "make one with cubelab.inspect.roofline(...)"))
    return RooflineChart(flat, title)


def _bytes(n: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= k:
            return f"{n / k:,.2f} {unit}"
    return f"{n:,.0f} B"


def _sample(total: int, k: int) -> list[int]:
    """`k` cubes spread evenly over `total`, the first and the last included."""
    if total <= k:
        return list(range(total))
    return sorted({int(round(x)) for x in np.linspace(0, total - 1, k)})


def _runs(cubes: Sequence[int]) -> tuple[tuple[int, int], ...]:
    runs: list[list[int]] = []
    for c in cubes:
        if runs and runs[-1][1] == c:
            runs[-1][1] = c + 1
        else:
            runs.append([c, c + 1])
    return tuple((a, b) for a, b in runs)


def _handles(args: Sequence[Any]) -> list[Any]:
    seen: dict[int, Any] = {}
    for x in args:
        for a in aggregate_launch.host_values(x):
            if isinstance(a, (BufferArg, TensorArg)):
                seen.setdefault(a.handle.id, a.handle)
    return list(seen.values())


@dataclass(frozen=True)
class Work:
    """What one launch asks of the device, counted from a recorded run on the CPU runtime —
    no timing: the half of a roofline that is the same on every machine (an exercise checks
    with it; `roofline` adds the time and the device's roof)."""

    kernel: str
    bytes: int  # global bytes requested (loads + stores + atomics), whole launch
    flops: int  # floating-point operations executed, whole launch
    sector_bytes: int  # the coalescing model: sectors touched × 32
    compulsory_bytes: int  # every touched buffer read once / written once
    cubes_counted: int
    cubes_total: int

    @property
    def intensity(self) -> float:
        """Flops per requested byte."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def bound(self, peaks: DevicePeaks) -> str:
        """"memory" or "compute" under `peaks`' roof (`bound_of`)."""
        return bound_of(self.intensity, peaks.ridge)


def bound_of(intensity: float, ridge: float) -> str:
    """The one rule: below the ridge (peak GFLOP/s ÷ peak GB/s) a kernel is memory-bound."""
    return "compute" if intensity >= ridge else "memory"


@api_boundary
def work(launcher: Any, client: Any, cube_count: Any, cube_dim: Any, *args: Any,
         sample_cubes: int = SAMPLE_CUBES) -> Work:
    """Count what `launcher(client, cube_count, cube_dim, *args)` asks of the device — global
    bytes requested, flops executed, the sector model's bytes and the compulsory bytes — by
    re-running it on the CPU runtime on copies of its buffers (they are left alone). A launch
    of more than `sample_cubes` cubes is counted on that many, spread evenly, and scaled."""
    from cubelab.inspect.trace import run_recorded

    if getattr(cube_count, "handle", None) is not None:
        raise CubeError(hinted("counting a launch needs a static cube count: the bytes and "
                               "flops are counted on the CPU runtime, which must know the grid",
                               "pass CubeCount.Static(x, y, z)"))
    cx, cy, cz = cube_count.as_tuple()
    total = cx * cy * cz
    if total == 0:
        raise CubeError(hinted("a launch with no cube: nothing runs, nothing to count",
                               "give the launch a non-zero CubeCount"))
    sample = _sample(total, max(1, sample_cubes))
    runs = None if len(sample) == total else _runs(sample)
    model = frozenset(sample[:MODEL_CUBES])
    result, _cpu, _args, _copied = run_recorded(
        client, launcher, cube_count, cube_dim, args, "record",
        (model, MODEL_ACCESSES, False, True, runs), copy=True)
    log, _report, definition, counts = result
    scale = total / len(sample)
    nbytes = int(round(counts.bytes * scale))
    flops = int(round(counts.flops * scale))
    moved = transactions(log.table(), dict(log.arrays))
    asked = sum(x.bytes for x in moved)
    ratio = sum(x.sectors for x in moved) * SECTOR_BYTES / asked if asked else 1.0
    compulsory = sum(items * item * ((name in counts.read_arrays) + (name in counts.written_arrays))
                     for name, (items, item) in counts.arrays.items())
    return Work(definition.name, nbytes, flops, int(round(nbytes * ratio)),
                min(compulsory, nbytes), len(sample), total)


@api_boundary
def roofline(launcher: Any, client: Any, cube_count: Any, cube_dim: Any, *args: Any,
             repeats: int = 20, label: str | None = None, peaks: DevicePeaks | None = None,
             sample_cubes: int = SAMPLE_CUBES) -> Roofline:
    """Time `launcher(client, cube_count, cube_dim, *args)` on `client` (median of `repeats`
    profiled launches), count its bytes and flops from a recorded run on the CPU runtime
    (`work`), and place it under the device's roof (`device_peaks(client)` unless `peaks` is
    given)."""
    if getattr(cube_count, "handle", None) is not None:
        raise CubeError(hinted("roofline needs a static cube count: the bytes and flops are "
                               "counted on the CPU runtime, which must know the grid",
                               "pass CubeCount.Static(x, y, z)"))
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(hinted(f"repeats must be a positive int, got {repeats!r}",
                                "e.g. repeats=20, the default"))
    if 0 in cube_count.as_tuple():
        raise CubeError(hinted("roofline of a launch with no cube: nothing runs, nothing to "
                               "time", "give the launch a non-zero CubeCount"))
    pk = peaks if peaks is not None else device_peaks(client)
    w = work(launcher, client, cube_count, cube_dim, *args, sample_cubes=sample_cubes)
    # time it on the client, leaving its buffers as they were
    handles = _handles(args)
    saved = client.read(handles) if handles else []
    try:
        samples = profiled(client, lambda: launcher(client, cube_count, cube_dim, *args),
                           repeats)
    finally:
        for h, data in zip(handles, saved):
            client.write(h, data)
    return Roofline(w.kernel, label or w.kernel, statistics.median(samples), w.bytes, w.flops,
                    pk.gbps, pk.gflops, w.sector_bytes, w.compulsory_bytes, pk.launch_seconds,
                    pk.device, w.cubes_counted, w.cubes_total, samples)
