"""AccessMap: the access map of one launch, explorable — pick a unit, step through barrier phases,
hover or pick a cell to see who touched it.

    m = cubelab.inspect.access_map(block_sum.launch[f32], client, count, dim, x_arg, out_arg)
    AccessMap(m)

The drawing is `m.to_svg(phase, unit)` (the same SVG the static view shows): hovering a cell
shows its `<title>` (every access to it: unit, kind, value, line); its access lines are
coloured by what they cost, and the details fold out the coalescing and bank-conflict tables
(`m.coalescing()`, `m.conflicts()`) with the same colours. The "cell" picker answers the
same question in text for a projector, where hovering is awkward. An access map is plain data
made before the widget exists, so the widget needs no events and no UI thread.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.errors import hinted
from cubelab.inspect.access_map import AccessMap as AccessMapData
from cubelab.inspect.access_svg import theme_css
from cubelab.inspect.views import inline_markdown, table_css
from cubelab.widgets._live import View

__all__ = ["AccessMap"]


class AccessMap(View):
    css_class = "cubelab-access-map"

    def __init__(self, access_map: AccessMapData) -> None:
        if not isinstance(access_map, AccessMapData):
            raise TypeError(hinted("AccessMap needs an access map",
                                   "make one with cubelab.inspect.access_map(...)"))
        m = self.map = access_map
        self.phase: int | None = 0 if m.phases > 1 else None
        self.unit: int | None = None
        self.cell: tuple[str, int] | None = None
        self.back_button = W.Button(description="◀ phase", layout=W.Layout(width="7em"))
        self.forward_button = W.Button(description="phase ▶", layout=W.Layout(width="7em"))
        label = {"description_width": "initial"}  # the label whole, never cut to "un…"
        self.phase_picker = W.Dropdown(
            options=[("all phases", -1)] + [(f"phase {p}", p) for p in range(m.phases)],
            value=-1 if self.phase is None else self.phase, description="show",
            layout=W.Layout(width="14em"), style=label)
        self.unit_picker = W.Dropdown(
            options=[("every unit", -1)] + [(self._unit_label(u), u) for u in m.units],
            value=-1, description="unit", layout=W.Layout(width="24em"), style=label)
        arrays = list(m.arrays) or ["-"]
        self.array_picker = W.Dropdown(options=arrays, value=arrays[0], description="cell",
                                       layout=W.Layout(width="14em"), style=label)
        self.index_picker = W.BoundedIntText(value=0, min=0, max=10**9, description="index",
                                             layout=W.Layout(width="10em"), style=label)
        self.drawing = W.HTML()
        self.drawing.add_class("cubelab-access-map-drawing")
        self.details = W.HTML()
        self.details.add_class("cubelab-access-map-details")
        self.back_button.on_click(lambda _b: self.step(-1))
        self.forward_button.on_click(lambda _b: self.step(1))
        self.phase_picker.observe(lambda c: self.show_phase(None if c["new"] < 0 else c["new"]),
                                  names="value")
        self.unit_picker.observe(lambda c: self.select(None if c["new"] < 0 else c["new"]),
                                 names="value")
        self.array_picker.observe(lambda c: self.pick(c["new"], self.index_picker.value),
                                  names="value")
        self.index_picker.observe(lambda c: self.pick(self.array_picker.value, c["new"]),
                                  names="value")
        self._mount(
            W.HBox([self.back_button, self.forward_button, self.phase_picker, self.unit_picker]),
            W.HBox([self.array_picker, self.index_picker]),
            self.details,
            W.Box([self.drawing], layout=W.Layout(overflow="auto")),
        )
        self.render()

    def _unit_label(self, u: int) -> str:
        dx, dy, dz = self.map.cube_dim
        per = dx * dy * dz
        return f"unit {u} (cube {u // per}, UNIT_POS {u % per})"

    # -- what the controls do -----------------------------------------------------------------
    def show_phase(self, phase: int | None) -> None:
        if phase is not None and not 0 <= phase < self.map.phases:
            raise ValueError(hinted(f"phase {phase} is not one of this launch's",
                                    f"pick 0 .. {self.map.phases - 1} (or None for all)"))
        self.phase = phase
        self.render()

    def step(self, n: int) -> None:
        cur = -1 if self.phase is None else self.phase
        self.show_phase(max(0, min(self.map.phases - 1, cur + n)))

    def select(self, unit: int | None) -> None:
        if unit is not None and unit not in self.map.units:
            raise ValueError(hinted(f"unit {unit} was not recorded",
                                    "record its cube (access_map(..., cubes=[...]))"))
        self.unit = unit
        self.render()

    def pick(self, array: str, index: int) -> None:
        self.cell = (array, int(index))
        self.render()

    # -- model and rendering ------------------------------------------------------------------
    def model(self) -> dict[str, Any]:
        m = self.map
        touched = m.cells_of(self.unit, self.phase) if self.unit is not None else {}
        cell = None
        if self.cell is not None:
            arr, idx = self.cell
            cell = [a.to_dict() for a in m.who_touched(arr, idx, self.phase)]
        return {"phase": self.phase, "phases": m.phases, "unit": self.unit, "touched": touched,
                "cell": self.cell, "who_touched": cell, "races": len(m.races),
                "uninitialised": len(m.uninitialised), "oob": len(m.oob),
                "coalescing": m.coalescing().to_dict(), "conflicts": m.conflicts().to_dict()}

    def render(self) -> None:
        m = self.map
        with self._root.hold_sync():
            want = -1 if self.phase is None else self.phase
            if self.phase_picker.value != want:
                self.phase_picker.value = want
            if self.unit_picker.value != (-1 if self.unit is None else self.unit):
                self.unit_picker.value = -1 if self.unit is None else self.unit
            self.back_button.disabled = self.phase is not None and self.phase <= 0
            self.forward_button.disabled = self.phase is not None and \
                self.phase >= m.phases - 1
            self.drawing.value = f"<style>{theme_css()}</style>{m.to_svg(self.phase, self.unit)}"
            self.details.value = self._details_html()

    def _cost_html(self) -> str:
        """What each access line costs: the coalescing and bank-conflict tables, their rows
        coloured as in the drawing, folded under a summary of the worst line."""
        m = self.map
        tables = [t for t in (m.coalescing(), m.conflicts()) if len(t)]
        if not tables:
            return ""
        worst: list[str] = []
        co = min(m.coalescing(), key=lambda r: r.efficiency, default=None)
        cf = max(m.conflicts(), key=lambda r: r.worst / max(1, r.ideal), default=None)
        if co is not None:
            worst.append(f"least coalesced: {co.array} {co.kind} {co.efficiency:.0%} "
                         f"(line {co.line})")
        if cf is not None:
            worst.append(f"worst bank conflict: {cf.array} {cf.kind} {cf.worst}-way "
                         f"(line {cf.line})")
        body = "".join(t.html_body() for t in tables)
        return (f'<details class="cubelab-access-cost"><summary>memory cost · '
                f"{html.escape(' · '.join(worst))}</summary>{body}</details>")

    def _details_html(self) -> str:
        m = self.map
        parts = [f'<div class="cubelab-code"><style>{table_css()}</style>']
        # the findings (the drawing below carries the kernel's name and the counts)
        rows = [str(r) for r in m.races[:20]] + [f"out of bounds: {o}" for o in m.oob[:20]]
        rows += [f"uninitialised read: unit {a.unit} reads {a.array}[{a.index}] in phase "
                 f"{a.phase} (line {a.line})" for a in m.uninitialised[:20]]
        if rows:
            parts.append('<ul class="cl-findings">' + "".join(
                f"<li>{inline_markdown(r)}</li>" for r in rows) + "</ul>")
        parts.append(self._cost_html())
        if self.unit is not None:
            s = m.scores[self.unit]
            touched = m.cells_of(self.unit, self.phase)
            cells = "; ".join(f"{k}: {v}" for k, v in touched.items()) or "nothing"
            parts.append(f"<div>{html.escape(self._unit_label(self.unit))}: global reads "
                         f"{s.global_reads}, writes {s.global_writes} · shared reads "
                         f"{s.shared_reads}, writes {s.shared_writes} · touched "
                         f"{html.escape(cells)}</div>")
        if self.cell is not None:
            arr, idx = self.cell
            who = m.who_touched(arr, idx, self.phase)
            body = "".join(
                f"<tr><td>{a.unit}</td><td>{a.cube}</td><td>{a.phase}</td><td>{a.kind}</td>"
                f"<td>{html.escape(str(a.value))}</td><td>{a.line}: "
                f"{html.escape(m.source(a.line))}</td></tr>" for a in who[:64])
            parts.append(f"<div><b>{html.escape(arr)}[{idx}]</b>: "
                         f"{'touched by ' + str(len({a.unit for a in who})) + ' unit(s)' if who else 'not touched'}"
                         "</div>")
            if who:
                parts.append('<table class="cl-table"><thead><tr><th>unit</th><th>cube</th>'
                             "<th>phase</th><th>kind</th><th>value</th><th>line</th></tr></thead>"
                             f"<tbody>{body}</tbody></table>")
        parts.append("</div>")
        return "".join(parts)
