"""The access map drawn as one standalone SVG: what a teacher points at on a projector.

Layout: one section per barrier phase ("phase 0: before the first sync_cube()"), and in it one
row per array — each global buffer, then each drawn cube's shared array — one square per
element (a 2-D tensor is a grid). In a cell:

- fill: untouched (white), read (blue), written (orange), read and written (orange, blue
  corner), atomic (purple);
- the number is who touched it: the writer's unit (UNIT_POS in shared memory, ABSOLUTE_POS in a
  global buffer), or "n×" when several units did;
- a thick red border: a race on that element in that phase; an orange dashed border: a shared
  read of an element nobody wrote before (uninitialised);
- red cells after a gap, past the end of the row: out-of-bounds indices, labelled by the index
  the kernel computed and where the access went: `6→5` (clamped to item 5), `6=0` (read as 0),
  `6✗` (write dropped);
- with a `unit` chosen, the cells that unit touched are outlined in black and the rest faded.

Above the phases, each access line of the kernel (one per source line, array and kind) is
listed with what it costs, coloured green → amber → red by its coalescing efficiency or bank
conflict degree (`inspect/cost.py`, the same scale as `AccessMap.coalescing()`'s table).

Every cell is exactly one `<rect class="cell ...">` carrying `data-array`, `data-index`,
`data-phase` and a `<title>` (hover: who touched it, how, on which line). Colours are
presentation attributes, not CSS, so the drawing survives the sanitisers of exported HTML and
GitHub's notebook preview; inside JupyterLab, `theme_css()` (a stylesheet the widget and the
notebook view put next to the drawing) repaints the background, the text and the untouched
cells from the theme's variables, so the map is no white panel in the dark theme — the
presentation attributes stay the fallback. An array longer than `MAX_CELLS` is drawn as `BINS` bins (class
"bin", shaded by how many accesses fell in each), and at most `MAX_CUBES` cubes' shared arrays are
drawn: a larger launch is summarised, not drawn unreadably.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from cubelab.inspect.cost import cost_lines_svg

if TYPE_CHECKING:
    from cubelab.inspect.access_map import AccessMap
    from cubelab.runtime.cpu.access import Access

CELL = 20
GAP = 2
LABEL_W = 150
ROW_GAP = 10
MAX_CELLS = 512  # per row: more are binned
WRAP = 64  # cells per line of a long 1-D row
BINS = 64
MAX_CUBES = 4  # shared arrays of at most this many cubes are drawn
MAX_OOB_CELLS = 8

FILL = {"none": "#ffffff", "read": "#bcd7ff", "write": "#ffb866", "atomic": "#c9a6f0"}
READ_CORNER = "#4a8fe7"
RACE = "#d62728"
UNINIT = "#ff8c00"
OOB_FILL = "#ffd6d6"
FONT = "font-family:DejaVu Sans Mono,Menlo,Consolas,monospace"
_THEMED = {"#222": "ink", "#555": "muted", "#777": "muted"}  # text fill → its theme class


def theme_css() -> str:
    """The drawing in JupyterLab's colours (light or dark), each with the SVG's own colour as
    the fallback outside JupyterLab. Cell fills (read, written, atomic) and the labels on them
    keep their colours: they are light in both themes."""
    svg = "svg.cubelab-access-map"
    return (f"{svg} rect.bg {{ fill: var(--jp-layout-color0, #ffffff); }}"
            f"{svg} text.ink {{ fill: var(--jp-content-font-color1, #222222); }}"
            f"{svg} text.muted {{ fill: var(--jp-content-font-color2, #555555); }}"
            f"{svg} rect.untouched, {svg} rect.blank {{ fill: var(--jp-layout-color2, #ffffff); }}")


def _esc(x: Any) -> str:
    return escape(str(x), quote=True)


def _who(accs: list["Access"], local: bool) -> str:
    units = {a.unit for a in accs}
    if len(units) > 1:
        return f"{len(units)}×"
    a = accs[0]
    return str(a.local if local else a.unit)


def _title(array: str, index: int, phase: int, accs: list["Access"]) -> str:
    if not accs:
        return f"{array}[{index}] · phase {phase}: not touched"
    parts = []
    for a in accs[:12]:
        v = "" if a.value is None else f" = {a.value}"
        parts.append(f"unit {a.unit} (cube {a.cube}, unit {a.local}) {a.kind}{v}, line {a.line}")
    more = f"\n… {len(accs) - 12} more" if len(accs) > 12 else ""
    return f"{array}[{index}] · phase {phase}:\n" + "\n".join(parts) + more


class _Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y = 0
        self.width = 400

    def text(self, x: float, y: float, s: str, size: int = 12, weight: str = "normal",
             fill: str = "#222", anchor: str = "start", cls: str = "",
             themed: bool = True) -> None:
        if themed and fill in _THEMED:
            cls = f"{cls} {_THEMED[fill]}".strip()
        c = f' class="{cls}"' if cls else ""
        self.parts.append(f'<text{c} x="{x:g}" y="{y:g}" font-size="{size}" '
                          f'font-weight="{weight}" fill="{fill}" text-anchor="{anchor}" '
                          f'style="{FONT}">{_esc(s)}</text>')


def render(m: "AccessMap", phase: int | None = None, unit: int | None = None) -> str:
    """The SVG text of access map `m` (every phase, or one), with `unit`'s cells outlined."""
    s = _Svg()
    phases = list(range(m.phases)) if phase is None else [phase]
    by_cell = m.cells()
    race_cells = {(r.array, r.cubes[k] if r.space == "shared" else -1, r.index, r.phases[k])
                  for r in m.races for k in (0, 1)}
    uninit = {(a.array, a.cube, a.index, a.phase) for a in m.uninitialised}
    mine = ({(a.array, a.cube if a.space == "shared" else -1, a.index, a.phase)
             for a in m.accesses if a.unit == unit} if unit is not None else None)
    oob_by = {}
    for o in m.oob:
        oob_by.setdefault((o.array, o.cube if m.arrays.get(o.array) and
                           m.arrays[o.array].space == "shared" else -1, o.phase), []).append(o)

    s.y = 18
    s.text(8, s.y, f"access map of {m.kernel}", 14, "bold")
    s.y += 16
    summary = (f"{len(m.units)} units in {len(m.cubes)} cube(s) recorded · "
               f"{len(m.accesses)} accesses · {m.races_total} race(s) · "
               f"{len(m.uninitialised)} uninitialised read(s) · {len(m.oob)} out of bounds")
    if m.truncated:
        summary += " · (truncated)"
    s.text(8, s.y, summary, 11, fill="#555")
    s.width = max(s.width, 16 + int(6.8 * len(summary)))
    s.y += 8
    _legend(s)
    cost_lines_svg(s, m)  # each access line coloured by what it costs (inspect/cost.py)
    rows = _rows(m)
    if len(m.cubes) > MAX_CUBES and any(i.space == "shared" for i in m.arrays.values()):
        s.y += 16
        s.text(8, s.y, f"shared memory drawn for cubes {m.cubes[:MAX_CUBES]} only; the other "
               f"{len(m.cubes) - MAX_CUBES} recorded cubes are in the data (and the findings)",
               11, fill="#a60")
    for p in phases:
        s.y += 22
        if m.phases == 1:  # nothing to be before or after
            title = "every access (no sync_cube() in this launch)"
        else:
            title = f"phase {p} · " + ("before the first barrier" if p == 0
                                       else f"after barrier {p}")
        s.text(8, s.y, title, 13, "bold", cls="phase-title")
        s.y += 8
        for row in rows:
            _row(s, m, row, p, by_cell, race_cells, uninit, mine, oob_by)
    s.y += 12
    body = "".join(s.parts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="cubelab-access-map" '
            f'width="{s.width}" height="{s.y}" viewBox="0 0 {s.width} {s.y}">'
            f'<rect class="bg" x="0" y="0" width="{s.width}" height="{s.y}" fill="#ffffff"/>'
            f"{body}</svg>")


def _legend(s: _Svg) -> None:
    s.y += 10
    x = 8.0
    items = [("read", FILL["read"], "#999", ""), ("written", FILL["write"], "#999", ""),
             ("atomic", FILL["atomic"], "#999", ""), ("race", "#ffffff", RACE, ""),
             ("uninitialised", "#ffffff", UNINIT, "4 2"), ("out of bounds", OOB_FILL, RACE, "")]
    for label, fill, stroke, dash in items:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        sw = 2.5 if stroke != "#999" else 1
        blank = " blank" if fill == "#ffffff" else ""
        s.parts.append(f'<rect class="legend{blank}" x="{x:g}" y="{s.y:g}" width="12" height="12" '
                       f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{d}/>')
        s.text(x + 16, s.y + 10, label, 11)
        x += 26 + 7 * len(label)
    s.y += 12
    s.width = max(s.width, int(x))


def _rows(m: "AccessMap") -> list[tuple[str, int]]:
    """(array, cube) rows: each global array (cube -1), then shared arrays per drawn cube."""
    rows: list[tuple[str, int]] = []
    touched = {a.array for a in m.accesses} | {o.array for o in m.oob}
    for name, info in m.arrays.items():
        if info.space != "shared" and name in touched:
            rows.append((name, -1))
    shared = [n for n, i in m.arrays.items() if i.space == "shared" and n in touched]
    for c in m.cubes[:MAX_CUBES]:
        for name in shared:
            rows.append((name, c))
    return rows


def _row(s: _Svg, m: "AccessMap", row: tuple[str, int], p: int, by_cell: Any, race_cells: Any,
         uninit: Any, mine: Any, oob_by: Any) -> None:
    name, cube = row
    info = m.arrays[name]
    label = name if cube < 0 else f"{name} · cube {cube}"
    s.y += ROW_GAP
    top = s.y
    s.text(8, top + 14, label, 12, cls="row-label")
    if info.space == "shared" or len(info.shape) != 2:
        sub = f"{info.length} items" if info.space != "shared" else "shared"
    else:
        sub = f"{info.shape[0]}×{info.shape[1]}"
    s.text(8, top + 27, sub, 10, fill="#777")
    length = info.length
    if length > MAX_CELLS:
        _bins(s, m, name, cube, p, length)
        return
    if len(info.shape) == 2 and info.shape[0] * info.shape[1] == length:
        cols = info.shape[1]
    else:
        cols = min(length, WRAP) or 1
    nlines = (length + cols - 1) // cols
    local = info.space == "shared" or len(m.cubes) == 1
    x0 = LABEL_W
    for i in range(length):
        accs = by_cell.get((name, cube, i, p), [])
        x = x0 + (i % cols) * (CELL + GAP)
        y = top + (i // cols) * (CELL + GAP)
        kinds = {a.kind for a in accs}
        if "atomic" in kinds:
            fill, cls = FILL["atomic"], "atomic"
        elif "write" in kinds:
            fill, cls = FILL["write"], ("rw" if "read" in kinds else "write")
        elif "read" in kinds:
            fill, cls = FILL["read"], "read"
        else:
            fill, cls = FILL["none"], "untouched"
        stroke, sw, dash = "#999", 1.0, ""
        if (name, cube, i, p) in race_cells and accs:
            stroke, sw, cls = RACE, 3.0, cls + " race"
        elif (name, cube, i, p) in uninit:
            stroke, sw, dash, cls = UNINIT, 2.5, "4 2", cls + " uninitialised"
        opacity = ""
        if mine is not None:
            if (name, cube, i, p) in mine:
                if stroke == "#999":
                    stroke, sw = "#000", 2.5
                cls += " selected"
            else:
                opacity = ' opacity="0.35"'
        d = f' stroke-dasharray="{dash}"' if dash else ""
        s.parts.append(
            f'<rect class="cell {cls}" data-array="{_esc(name)}" data-index="{i}" '
            f'data-phase="{p}" data-cube="{cube}" x="{x}" y="{y}" width="{CELL}" '
            f'height="{CELL}" fill="{fill}" stroke="{stroke}" stroke-width="{sw:g}"{d}{opacity}>'
            f"<title>{_esc(_title(name, i, p, accs))}</title></rect>")
        if cls.startswith("rw"):
            s.parts.append(f'<path d="M{x} {y}h7l-7 7z" fill="{READ_CORNER}"/>')
        if accs:
            s.text(x + CELL / 2, y + CELL - 6, _who(accs, local), 9, anchor="middle",
                   fill="#222", themed=False)  # on a light cell in either theme
    right = x0 + min(length, cols) * (CELL + GAP)
    # out-of-bounds accesses of this row and phase, past the end
    oobs = oob_by.get((name, cube, p), [])
    if oobs:
        idx = sorted({o.index for o in oobs})
        x = right + 14
        s.text(x - 10, top + 14, "…", 12, fill=RACE)
        for k in idx[:MAX_OOB_CELLS]:
            who = [o for o in oobs if o.index == k]
            title = f"{name}[{k}] is out of bounds ({length} items) · phase {p}:\n" + "\n".join(
                f"unit {o.unit} {o.kind}, line {o.line}: {o.outcome}" for o in who[:12])
            s.parts.append(
                f'<rect class="cell oob" data-array="{_esc(name)}" data-index="{k}" '
                f'data-phase="{p}" data-cube="{cube}" x="{x}" y="{top}" width="{CELL * 2}" '
                f'height="{CELL}" fill="{OOB_FILL}" stroke="{RACE}" stroke-width="2">'
                f"<title>{_esc(title)}</title></rect>")
            s.text(x + CELL, top + CELL - 6, _oob_label(k, who[0].outcome, length), 9,
                   anchor="middle", fill=RACE)
            x += 2 * CELL + GAP
        if len(idx) > MAX_OOB_CELLS:
            s.text(x + 4, top + 14, f"+{len(idx) - MAX_OOB_CELLS} more", 10, fill=RACE)
            x += 60
        right = x
    s.width = max(s.width, int(right) + 10)
    s.y = top + max(nlines * (CELL + GAP), 30)


def _oob_label(index: int, outcome: str, length: int) -> str:
    """`6→5` (clamped to 5), `6=0` (read as 0), `6✗` (write dropped): where the access went."""
    k = str(index) if index < 10**5 else f"{index:.0e}"
    return {"clamped": f"{k}→{length - 1}", "zero": f"{k}=0"}.get(outcome, f"{k}✗")


def _bins(s: _Svg, m: "AccessMap", name: str, cube: int, p: int, length: int) -> None:
    per = -(-length // BINS)
    counts = [0] * BINS
    writes = [0] * BINS
    for a in m.accesses:
        if a.array == name and a.phase == p and 0 <= a.index < length and \
                (cube < 0 or a.cube == cube):
            counts[a.index // per] += 1
            writes[a.index // per] += a.kind != "read"
    top = max(counts) or 1
    for b in range(BINS):
        x = LABEL_W + b * 8
        if counts[b]:
            fill = FILL["write"] if writes[b] else FILL["read"]
            op = 0.3 + 0.7 * counts[b] / top
        else:
            fill, op = FILL["none"], 1.0
        lo, hi = b * per, min(length, (b + 1) * per) - 1
        s.parts.append(
            f'<rect class="bin" data-array="{_esc(name)}" data-phase="{p}" x="{x}" y="{s.y}" '
            f'width="8" height="{CELL}" fill="{fill}" fill-opacity="{op:.2f}" stroke="#bbb" '
            f'stroke-width="0.5"><title>{_esc(name)}[{lo}..{hi}]: {counts[b]} accesses '
            f"({writes[b]} writes)</title></rect>")
    s.text(LABEL_W + BINS * 8 + 8, s.y + 14, f"{length} items in {BINS} bins of {per}", 10,
           fill="#777")
    s.width = max(s.width, LABEL_W + BINS * 8 + 200)
    s.y += 30
