"""The cost instruments' tables and colours: what `AccessMap.coalescing()` and `.conflicts()`
return, and the one colour scale every view of them uses.

    m = cubelab.inspect.access_map(...)
    m.coalescing()      # per source line and array: sectors, ideal, efficiency  (a CostTable)
    m.conflicts()       # per source line and array: worst and mean ways
    m.coalescing()[0].efficiency, list(m.conflicts())   # rows are plain records

A `CostTable` is a list of records (`LineCoalescing` / `LineConflicts`, from
`cubelab.runtime.cpu.cost`, where the rules live) that prints as a plain-text table, renders as
HTML in a notebook with each row's efficiency or conflict degree coloured (`cost_colour`), and as
a rich table in a terminal. The access map's SVG and widget colour access lines with the same
scale, so "green" means the same thing everywhere: 1.0 coalesced / 1-way is green, half the
sectors wasted / 2-way is amber, 1/8 of them / 32-way is red.
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Iterator, Sequence

from cubelab.errors import hinted
from cubelab.inspect.views import TableView, inline_markdown
from cubelab.runtime.cpu.cost import LineCoalescing, LineConflicts

__all__ = ["CostTable", "cost_colour", "badness"]

GOOD = (44, 160, 44)
MIDDLE = (255, 159, 28)
BAD = (214, 39, 40)


def badness(row: LineCoalescing | LineConflicts) -> float:
    """0 (as good as the access can be) … 1 (as bad as the model counts): log2 of the waste,
    over 3 for sectors (1/8 efficiency: the worst a 4-byte access can be) and over 5 for ways
    (32-way: every unit in one bank)."""
    if isinstance(row, LineCoalescing):
        e = row.efficiency
        return min(1.0, max(0.0, math.log2(1 / e) / 3)) if e > 0 else 1.0
    return min(1.0, max(0.0, math.log2(max(1.0, row.worst / max(1, row.ideal))) / 5))


def cost_colour(row: LineCoalescing | LineConflicts) -> str:
    """The row's colour on the green → amber → red scale (`badness`)."""
    b = badness(row)
    lo, hi, f = (GOOD, MIDDLE, b * 2) if b <= 0.5 else (MIDDLE, BAD, b * 2 - 1)
    r, g, bl = (round(x + (y - x) * f) for x, y in zip(lo, hi))
    return f"#{r:02x}{g:02x}{bl:02x}"


class CostTable(TableView):
    """Per-line cost records as a table (a list of them, too: `len`, iteration, indexing)."""

    def __init__(self, kind: str, records: Sequence[LineCoalescing | LineConflicts], title: str,
                 source: Callable[[int | None], str] | None = None, note: str = "") -> None:
        if kind not in ("coalescing", "conflicts"):
            raise ValueError(hinted(f"a cost table is 'coalescing' or 'conflicts', not {kind!r}",
                                    "ask for one of the two"))
        self.kind = kind
        self.records = list(records)
        self.source = source or (lambda _line: "")
        if kind == "coalescing":
            columns = ["line", "array", "kind", "plane-instr.", "bytes", "sectors", "ideal",
                       "efficiency", "source"]
            rows = [[r.line, r.array, r.kind, r.instructions, r.bytes, r.sectors, r.ideal,
                     f"{r.efficiency:.0%}", self.source(r.line)] for r in self.records]
        else:
            columns = ["line", "array", "kind", "plane-instr.", "worst ways", "mean ways",
                       "ideal", "source"]
            rows = [[r.line, r.array, r.kind, r.instructions, r.worst, f"{r.mean:.2f}",
                     r.ideal, self.source(r.line)] for r in self.records]
        super().__init__(columns, rows, title, note=note)

    # a list of records
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.records)

    def __getitem__(self, i: int) -> Any:
        return self.records[i]

    def __eq__(self, other: object) -> bool:
        return list(self.records) == list(other) if isinstance(other, (list, CostTable)) \
            else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.records]

    def text(self) -> str:
        if not self.records:
            return f"── {self.title} ──\nno {'global' if self.kind == 'coalescing' else 'shared'}" \
                   " access recorded"
        return super().text()

    def html_body(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = []
        judged = self.columns.index("efficiency" if self.kind == "coalescing" else "worst ways")
        for rec, row in zip(self.records, self.rows):
            colour = cost_colour(rec)
            cells = []
            for j, v in enumerate(row):
                style = (f' style="background:{colour};color:#fff;font-weight:bold"'
                         if j == judged else "")
                cls = ' class="cl-nowrap"' if j == len(row) - 1 else ""
                cells.append(f"<td{style}{cls}>{html.escape(str(v))}</td>")
            body.append(f'<tr class="cl-cost" data-line="{rec.line}" '
                        f'data-badness="{badness(rec):.3f}">{"".join(cells)}</tr>')
        title = f'<div class="cl-title">{inline_markdown(self.title or "")}</div>'
        if not self.records:
            empty = inline_markdown(self.text().splitlines()[-1])
            return title + f'<div class="cl-muted">{empty}</div>'
        note = f'<div class="cl-muted">{inline_markdown(self.note)}</div>' if self.note else ""
        return (f'{title}<table class="cl-table"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table>{note}')


def cost_lines_svg(svg: Any, m: Any) -> None:
    """Draw `m`'s access lines, one per (line, array, kind), each coloured by its coalescing
    efficiency or conflict degree, onto the access map's SVG builder `svg` (`access_svg._Svg`:
    `parts`, `y`, `width`, `text`). Each is a `<g class="cost-line">` with `data-line`,
    `data-array`, `data-kind` and `data-badness`, and a `<title>` with the counts."""
    rows: list[tuple[Any, str]] = []
    for c in m.coalescing():
        rows.append((c, f"{c.efficiency:.0%} coalesced · {c.sectors_per_instruction:.1f} sectors "
                        f"per plane, ideal {c.ideal / max(1, c.instructions):.1f}"))
    for b in m.conflicts():
        what = "no bank conflict" if b.worst <= b.ideal else f"{b.worst}-way bank conflict"
        rows.append((b, f"{what} · mean {b.mean:.1f} ways"))
    if not rows:
        return
    svg.y += 22
    svg.text(8, svg.y, f"memory cost per access line · {m.plane_width} units per plane", 12,
             "bold", cls="cost-title")
    svg.y += 4
    for rec, what in rows:
        svg.y += 17
        colour = cost_colour(rec)
        space = "global" if isinstance(rec, LineCoalescing) else "shared"
        label = f"line {rec.line} · {rec.array} {rec.kind} ({space}) · {what}"
        text = m.source(rec.line)
        tip = f"{label}\n{text}" if text else label
        svg.parts.append(
            f'<g class="cost-line" data-line="{rec.line}" data-array="{html.escape(rec.array)}" '
            f'data-kind="{rec.kind}" data-badness="{badness(rec):.3f}">'
            f"<title>{html.escape(tip)}</title>"
            f'<rect class="cost" x="8" y="{svg.y - 10}" width="12" height="12" fill="{colour}"/>')
        svg.text(26, svg.y, label, 11, fill=colour if badness(rec) > 0 else "#222")
        if text:
            svg.text(34 + 6.6 * len(label), svg.y, text, 11, fill="#555")
        svg.parts.append("</g>")
        svg.width = max(svg.width, int(40 + 6.6 * (len(label) + len(text))))
