"""The roofline and bandwidth charts, drawn by matplotlib as standalone SVG.

matplotlib is Jupyter's plotting convention and does the dull part (log axes, ticks, labels,
legend) better than hand-written SVG would; it is an optional dependency (the `lab` extra) and
imported here only, lazily, when a chart is asked for — `import cubelab` and `Roofline`'s numbers
never need it. A `Figure` is built directly (no `pyplot`: no global state, no GUI backend, safe
on the device-free threads a notebook uses) and saved as SVG with text kept as text, so the chart
stays small, sharp and searchable.

What the roofline shows, per kernel: a filled marker at (intensity, achieved GFLOP/s) — where
the launch is; a hollow one straight above it on the roof — where the model says it could be;
and a thin bar from its intensity over requested bytes to its intensity over compulsory bytes
(every buffer moved once) — how far caching or tiling could move it to the right.
"""

from __future__ import annotations

from cubelab.errors import hinted
import io
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from cubelab.inspect.peaks import DevicePeaks
    from cubelab.inspect.roofline import Roofline

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"]


def _figure(width: float = 7.0, height: float = 4.4) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(hinted("drawing a roofline needs matplotlib",
                                 "pip install 'cubelab[lab]' (or pip install matplotlib); the "
                                 "numbers are in str(roofline)")) from None
    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Any) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "cubelab"}):
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # standalone, without the XML prolog: embeddable in HTML


def roofline_svg(rooflines: Sequence["Roofline"], title: str | None = None) -> str:
    fig = _figure()
    ax = fig.add_subplot()
    first = rooflines[0]
    bw, peak = first.peak_gbps, first.peak_gflops
    xs = [r.intensity for r in rooflines] + \
        [r.flops / r.compulsory_bytes for r in rooflines if r.compulsory_bytes and r.flops]
    xs = [x for x in xs if 0 < x < float("inf")]
    ridge = peak / bw if bw else 1.0
    lo = min(xs + [ridge]) / 8
    hi = max(xs + [ridge]) * 8
    import numpy as np

    x = np.geomspace(lo, hi, 200)
    ax.plot(x, np.minimum(peak, x * bw), color="#444", lw=2,
            label=f"roof: {bw:,.1f} GB/s, {peak:,.1f} GFLOP/s")
    ax.axvline(ridge, color="#999", lw=0.8, ls=":")
    ax.annotate(f"ridge {ridge:.2g} flop/B", (ridge, peak), textcoords="offset points",
                xytext=(4, -14), fontsize=8, color="#666")
    ys = [peak]
    for i, r in enumerate(rooflines):
        c = COLOURS[i % len(COLOURS)]
        if not (0 < r.intensity < float("inf")) or r.achieved_gflops <= 0:
            continue
        ys += [r.achieved_gflops, r.attainable_gflops]
        if r.compulsory_bytes and r.flops:
            ax.plot([r.intensity, r.flops / r.compulsory_bytes], [r.achieved_gflops] * 2,
                    color=c, lw=1, alpha=0.5)
        ax.plot([r.intensity], [r.attainable_gflops], marker="o", mfc="none", mec=c, ms=9)
        ax.plot([r.intensity], [r.achieved_gflops], marker="o", color=c, ms=7, ls="none",
                label=f"{r.label}: {r.achieved_gflops:,.2f} GFLOP/s, {r.bound}-bound, "
                      f"{r.fraction_of_roof:.0%} of roof")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(ys) / 8, peak * 3)
    ax.set_xlabel("arithmetic intensity (flops per requested byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title or f"roofline · {first.device}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _svg(fig)


def bandwidth_svg(peaks: "DevicePeaks") -> str:
    fig = _figure(6.0, 3.2)
    ax = fig.add_subplot()
    sizes = [p.bytes for p in peaks.curve]
    ax.plot(sizes, [p.gbps for p in peaks.curve], marker="o", color=COLOURS[0])
    ax.axhline(peaks.gbps, color="#444", ls="--", lw=1,
               label=f"plateau {peaks.gbps:,.1f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("working set (bytes read + written)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"bandwidth · {peaks.device}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)
