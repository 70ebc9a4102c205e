"""Roofline: kernels on their device's roofline, as a widget — the chart, a row per kernel, and
the numbers behind the one picked.

    naive = cubelab.inspect.roofline(matmul_naive.launch, client, ...)
    tiled = cubelab.inspect.roofline(matmul_tiled.launch, client, ...)
    view = Roofline(naive, tiled)      # both on one chart
    view.add(inspect.roofline(...))    # a third, after a student's next attempt

The chart is `inspect.roofline_chart(...).to_svg()` (matplotlib), the table and the details are
the `Roofline` records' own numbers; picking a kernel shows its full report (time, bytes, flops,
bound, the model's traffic, the notes). A roofline is plain data made before the widget exists,
so the widget needs no events and no UI thread.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.errors import hinted
from cubelab.inspect.roofline import Roofline as RooflineData
from cubelab.inspect.roofline import RooflineChart
from cubelab.inspect.views import table_css
from cubelab.widgets._live import View

__all__ = ["Roofline"]


class Roofline(View):
    css_class = "cubelab-roofline"

    def __init__(self, *rooflines: RooflineData, title: str | None = None) -> None:
        if not rooflines or not all(isinstance(r, RooflineData) for r in rooflines):
            raise TypeError(hinted("Roofline needs one or more rooflines",
                                   "make them with cubelab.inspect.roofline(...)"))
        self.rooflines: list[RooflineData] = list(rooflines)
        self.title = title
        self.picked = 0
        self.chart = W.HTML()
        self.chart.add_class("cubelab-roofline-chart")
        self.table = W.HTML()
        self.table.add_class("cubelab-roofline-table")
        self.picker = W.Dropdown(description="details", layout=W.Layout(width="24em"))
        self.picker.observe(lambda c: self.pick(c["new"]), names="value")
        self.details = W.HTML()
        self.details.add_class("cubelab-roofline-details")
        self._mount(W.Box([self.chart], layout=W.Layout(overflow="auto")), self.table,
                    self.picker, self.details)
        self.render()

    def add(self, roofline: RooflineData) -> None:
        """One more kernel on the chart (picked)."""
        if not isinstance(roofline, RooflineData):
            raise TypeError(hinted("add() needs a roofline",
                                   "make one with cubelab.inspect.roofline(...)"))
        self.rooflines.append(roofline)
        self.picked = len(self.rooflines) - 1
        self.render()

    def pick(self, index: int) -> None:
        if not 0 <= index < len(self.rooflines):
            raise ValueError(hinted(f"kernel {index}: this chart has {len(self.rooflines)}",
                                    f"pick 0 .. {len(self.rooflines) - 1}"))
        self.picked = index
        self.details.value = self._details_html()

    def model(self) -> dict[str, Any]:
        return {"kernels": [r.label for r in self.rooflines], "picked": self.picked,
                "rooflines": [r.to_dict() for r in self.rooflines]}

    def render(self) -> None:
        chart = RooflineChart(self.rooflines, self.title)
        with self._root.hold_sync():
            try:
                self.chart.value = chart.to_svg()
            except ImportError as exc:
                self.chart.value = f'<div class="cl-muted">{html.escape(str(exc))}</div>'
            self.table.value = self._table_html()
            options = [(f"{r.label} ({r.bound}-bound)", i) for i, r in enumerate(self.rooflines)]
            if self.picker.options != tuple(options):
                self.picker.options = options
            self.picker.value = self.picked
            self.details.value = self._details_html()

    def _table_html(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("kernel", "µs", "flop/byte", "GB/s", "GFLOP/s",
                                                 "bound", "of the roof"))
        rows = "".join(
            f'<tr class="cl-roofline-row" data-bound="{r.bound}"><td>{html.escape(r.label)}</td>'
            f"<td>{r.seconds * 1e6:,.1f}</td><td>{r.intensity:.3g}</td>"
            f"<td>{r.achieved_gbps:,.2f}</td><td>{r.achieved_gflops:,.2f}</td><td>{r.bound}</td>"
            f"<td>{r.fraction_of_roof:.0%}</td></tr>" for r in self.rooflines)
        return (f'<div class="cubelab-code"><style>{table_css()}</style><table class="cl-table">'
                f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>")

    def _details_html(self) -> str:
        r = self.rooflines[self.picked]
        return (f'<div class="cubelab-code"><pre class="cl-msg">{html.escape(r.table())}'
                "</pre></div>")
