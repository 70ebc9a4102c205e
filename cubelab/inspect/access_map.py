"""Seeing units: which cells of which array every unit read and wrote, per barrier phase.

    m = cubelab.inspect.access_map(conv.launch[f32], client, CubeCount.Static(2),
                                   CubeDim.new_1d(8), x_arg, w_arg, out_arg)
    m.accesses        # [Access(unit, cube, phase, array, index, kind, value, line, ...)]
    m.races           # [Race(array, index, units, lines, phase, ...)]  — nothing orders the pair
    m.uninitialised   # shared reads of elements nobody wrote before (Access records)
    m.oob             # [OobRecord(array, index, length, unit, line, outcome)] — index as computed
    m.scores          # per unit: global/shared reads/writes; .max(), .total(), .table()
    m.nonfinite       # ops that made inf/NaN from finite operands (unit, op, line)
    m.to_svg()        # one standalone SVG (the notebook shows it through _repr_html_)
    m.who_touched("sm", 3, phase=1, cube=0); m.touched_by(unit=5)
    m.transactions    # [Transaction(cube, plane, phase, line, array, kind, bytes, sectors, ideal)]
    m.coalescing()    # per source line: sectors, ideal, efficiency (a CostTable)
    m.bank_conflicts  # [BankConflict(cube, plane, phase, line, array, kind, ways, ideal)]
    m.conflicts()     # per source line: worst and mean ways

The launch runs on the CPU runtime, for real, with an instrumented plan that records every
global and shared access of the chosen cubes (`cubes=None`: every cube, up to `MAX_CUBES`; the
ordinary plan stays uninstrumented, so recording costs nothing when off). A launch issued with
a wgpu client is re-run on the CPU runtime on copies of its buffers, as `trace` does: the wgpu
buffers are left alone and `m.client` is the CPU client holding the copies.

Everything is plain data; the rules (races, uninitialised reads, scores) live in
`cubelab.runtime.cpu.access`, the cost rules (sectors, bank conflicts) in
`cubelab.runtime.cpu.cost`, and both work on hand-made records too (`AccessMap.from_records`).
The cost records group accesses by plane: `plane_width` consecutive units of a cube
(`access_map(..., plane_width=None)` asks the launching client's device for its plane size —
`cubelab.inspect.peaks.plane_width` — and uses 32 where the device does not say). They are
computed when first read, so recording costs what it did before they existed.
What the runtime cannot show: the *outcome* of a race — the CPU runtime runs units in lockstep,
so a racy kernel usually computes the right answer here; the map is how you see it is wrong.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from cubelab.errors import CubeError, FailedTraceWarning, api_boundary, hinted
from cubelab.inspect.cost import CostTable
from cubelab.runtime.cpu import cost as _cost
from cubelab.runtime.cpu.access import (
    Access,
    AccessTable,
    ArrayInfo,
    NonFinite,
    OobRecord,
    Race,
    Scores,
    find_races,
    find_uninitialised,
    unit_scores,
)

__all__ = ["AccessMap", "access_map", "MAX_CUBES"]

MAX_CUBES = 64  # cubes recorded when `cubes=None` (the first ones, in CUBE_POS order)

CellKey = tuple[str, int, int, int]  # (array, cube or -1 for a global buffer, index, phase)


@dataclass
class AccessMap:
    kernel: str
    table: AccessTable  # the accesses as columns; `.accesses` as records
    arrays: dict[str, ArrayInfo]
    cubes: list[int]
    units: list[int]
    oob: list[OobRecord] = field(default_factory=list)
    phases: int = 1
    cube_dim: tuple[int, int, int] = (1, 1, 1)
    source_lines: list[str] = field(default_factory=list)
    first_line: int = 1
    truncated: bool = False
    nonfinite: list[NonFinite] = field(default_factory=list)
    client: Any = None  # the CPU client the launch ran on
    copied: bool = False  # the buffers were copied from another runtime first
    args: tuple[Any, ...] = ()  # the launch's arguments as run (CPU copies when `copied`)
    plane_width: int = _cost.DEFAULT_PLANE_WIDTH  # units per plane, for the cost records
    # why the recorded launch failed (a loop guard, a fault): its accesses end where it stopped
    failure: BaseException | None = None
    races: list[Race] = field(init=False)
    races_total: int = field(init=False)
    uninitialised: list[Access] = field(init=False)
    scores: Scores = field(init=False)
    _accesses: list[Access] | None = field(default=None, init=False, repr=False)
    _cells: dict[CellKey, list[Access]] | None = field(default=None, init=False, repr=False)
    _transactions: list[_cost.Transaction] | None = field(default=None, init=False, repr=False)
    _conflicts: list[_cost.BankConflict] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        t = self.table
        # races and uninitialised reads are judged on the cells that exist; an index out of
        # bounds is an `oob` record (it touched no cell, or cell len-1 after a clamp)
        lengths = np.array([self.arrays[n].length if n in self.arrays else 2**62
                            for n in t.names] + [0], dtype=np.int64)
        inside = (t.index >= 0) & (t.index < lengths[t.array]) if len(t) else \
            np.zeros(0, dtype=bool)
        judged = t if inside.all() else t.select(inside)
        self.races, self.races_total = find_races(judged)
        self.uninitialised = find_uninitialised(judged)
        dx, dy, dz = self.cube_dim
        per = dx * dy * dz
        self.scores = unit_scores(t, [(u, u // per) for u in self.units])
        top = int(t.phase.max()) if len(t) else 0
        top = max([top] + [o.phase for o in self.oob])
        self.phases = max(self.phases, top + 1)

    @property
    def accesses(self) -> list[Access]:
        """Every recorded access, in execution order (within a unit: program order)."""
        if self._accesses is None:
            self._accesses = self.table.records()
        return self._accesses

    # -- what it costs (the rules: cubelab.runtime.cpu.cost) ------------------------------------
    @property
    def transactions(self) -> list[_cost.Transaction]:
        """One record per global access instruction per plane: bytes requested, distinct
        32-byte sectors touched, the ideal (fewest) sectors."""
        if self._transactions is None:
            self._transactions = _cost.transactions(self.table, self.arrays, self.plane_width)
        return self._transactions

    @property
    def bank_conflicts(self) -> list[_cost.BankConflict]:
        """One record per shared-memory access instruction per plane: `ways`, the most
        distinct 4-byte words one of the 32 banks must deliver (1 = no conflict)."""
        if self._conflicts is None:
            self._conflicts = _cost.bank_conflicts(self.table, self.arrays, self.plane_width)
        return self._conflicts

    def coalescing(self) -> CostTable:
        """Per source line and array: plane-instructions, sectors, ideal, efficiency."""
        return CostTable("coalescing", _cost.coalescing_by_line(self.transactions),
                         f"coalescing of `{self.kernel}` ({self.plane_width} units per plane, "
                         "32-byte sectors)", self.source,
                         "efficiency = ideal sectors / sectors touched (1.0: every byte of "
                         "every sector was asked for)")

    def conflicts(self) -> CostTable:
        """Per source line and shared array: worst and mean ways over the plane-instructions."""
        return CostTable("conflicts", _cost.conflicts_by_line(self.bank_conflicts),
                         f"bank conflicts of `{self.kernel}` ({self.plane_width} units per "
                         "plane, 32 banks × 4 bytes)", self.source,
                         "ways = the most distinct words one bank must deliver (1: no "
                         "conflict; a broadcast of one word is 1)")

    def cost_report(self) -> str:
        """Both tables as text, one line per access of a source line."""
        return "\n".join(_cost.cost_lines(self.kernel,
                                          _cost.coalescing_by_line(self.transactions),
                                          _cost.conflicts_by_line(self.bank_conflicts),
                                          self.source))

    @classmethod
    def from_records(cls, accesses: Iterable[Access], arrays: dict[str, ArrayInfo] | None = None,
                     kernel: str = "kernel", oob: Sequence[OobRecord] = (),
                     cube_dim: tuple[int, int, int] | None = None,
                     plane_width: int = _cost.DEFAULT_PLANE_WIDTH) -> "AccessMap":
        """An access map of hand-made (or saved) records; array lengths default to the largest
        index seen + 1, cube size to the most units seen in one cube, items to 4 bytes."""
        acc = list(accesses)
        infos = dict(arrays or {})
        for a in acc:
            if a.array not in infos:
                top = max(b.index for b in acc if b.array == a.array)
                infos[a.array] = ArrayInfo(a.array, a.space, top + 1)
        units = sorted({a.unit for a in acc})
        cubes = sorted({a.cube for a in acc})
        if cube_dim is None:
            per: dict[int, set[int]] = {}
            for a in acc:
                per.setdefault(a.cube, set()).add(a.local)
            cube_dim = (max((max(v) + 1 for v in per.values()), default=1), 1, 1)
        return cls(kernel, AccessTable.from_records(acc), infos, cubes, units, list(oob),
                   cube_dim=cube_dim, plane_width=plane_width)

    # -- questions a teacher asks --------------------------------------------------------------
    def cells(self) -> dict[CellKey, list[Access]]:
        """Every touched in-bounds cell → the accesses to it, in execution order."""
        if self._cells is None:
            out: dict[CellKey, list[Access]] = {}
            for a in self.accesses:
                out.setdefault((a.array, a.cube if a.space == "shared" else -1, a.index,
                                a.phase), []).append(a)
            self._cells = out
        return self._cells

    def who_touched(self, array: str, index: int, phase: int | None = None,
                    cube: int | None = None) -> list[Access]:
        """The accesses to `array[index]` (in `phase`, or all; a shared array: of `cube`)."""
        return [a for a in self.accesses if a.array == array and a.index == index
                and (phase is None or a.phase == phase)
                and (cube is None or a.space != "shared" or a.cube == cube)]

    def touched_by(self, unit: int, phase: int | None = None) -> list[Access]:
        return [a for a in self.accesses if a.unit == unit and (phase is None or a.phase == phase)]

    def cells_of(self, unit: int, phase: int | None = None,
                 kind: str | None = None) -> dict[str, list[int]]:
        """array → the sorted distinct indices `unit` touched (optionally one phase or kind)."""
        out: dict[str, set[int]] = {}
        for a in self.touched_by(unit, phase):
            if kind is None or a.kind == kind:
                out.setdefault(a.array, set()).add(a.index)
        return {k: sorted(v) for k, v in out.items()}

    def source(self, line: int | None) -> str:
        if line is None:
            return ""
        i = line - self.first_line
        return self.source_lines[i].strip() if 0 <= i < len(self.source_lines) else ""

    # -- output --------------------------------------------------------------------------------
    def to_svg(self, phase: int | None = None, unit: int | None = None) -> str:
        """A standalone SVG: every phase (or one), `unit`'s cells outlined when given."""
        from cubelab.inspect.access_svg import render

        return render(self, phase, unit)

    def report(self) -> str:
        """The findings as text: races, uninitialised reads, out-of-bounds, non-finite values."""
        lines = [f"access map of `{self.kernel}`: {len(self.accesses)} accesses by "
                 f"{len(self.units)} units in {len(self.cubes)} cube(s), {self.phases} phase(s)"]
        if self.truncated:
            lines.append("  (recording truncated: only the first accesses are kept)")
        if self.failure is not None:
            first = str(self.failure).splitlines()[0] if str(self.failure) else ""
            lines.append(f"  the launch FAILED ({type(self.failure).__name__}: {first}): the "
                         "accesses end where it stopped, so this is not the whole kernel")
        if not (self.races or self.uninitialised or self.oob or self.nonfinite):
            among = " among the recorded accesses" if self.failure is not None else ""
            lines.append(f"no race, no uninitialised shared read, no out-of-bounds access{among}")
        for r in self.races:
            lines.append(f"  {r}")
        if self.races_total > len(self.races):
            lines.append(f"  ... {self.races_total - len(self.races)} more races")
        for a in self.uninitialised[:50]:
            lines.append(f"  uninitialised read: unit {a.unit} reads {a.array}[{a.index}] "
                         f"(cube {a.cube}) in phase {a.phase}, line {a.line}, but no unit "
                         "wrote it before")
        for o in self.oob[:50]:
            lines.append(f"  out of bounds: {o}")
        for n in self.nonfinite[:50]:
            lines.append(f"  non-finite: {n}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def _repr_html_(self) -> str:
        from cubelab.inspect.access_svg import theme_css
        from cubelab.inspect.views import inline_markdown

        return (f'<div class="cubelab-access-map-view"><style>{theme_css()}</style>'
                f'<pre style="white-space:pre-wrap">{inline_markdown(self.report())}</pre>'
                f"{self.to_svg()}</div>")

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "cubes": list(self.cubes), "units": list(self.units),
                "phases": self.phases, "truncated": self.truncated,
                "arrays": {k: {"space": v.space, "length": v.length, "shape": list(v.shape)}
                           for k, v in self.arrays.items()},
                "accesses": [a.to_dict() for a in self.accesses],
                "races": [r.to_dict() for r in self.races],
                "uninitialised": [a.to_dict() for a in self.uninitialised],
                "oob": [o.to_dict() for o in self.oob],
                "scores": [s.to_dict() for s in self.scores],
                "nonfinite": [n.to_dict() for n in self.nonfinite],
                "plane_width": self.plane_width,
                "coalescing": self.coalescing().to_dict(),
                "conflicts": self.conflicts().to_dict()}


@api_boundary
def access_map(launcher: Any, client: Any, cube_count: Any, cube_dim: Any, *args: Any,
               cubes: Iterable[Any] | None = None, limit: int = 1_000_000,
               nonfinite: bool = True, plane_width: int | None = None) -> AccessMap:
    """Run `launcher(client, cube_count, cube_dim, *args)` on the CPU runtime, recording every
    global and shared access of the chosen `cubes` (linear CUBE_POS values or (x, y, z) tuples;
    None: every cube, at most `MAX_CUBES`), and (`nonfinite`) every op that made inf or NaN
    from finite operands (`.nonfinite`). `plane_width` groups units into planes for the cost
    records (None: the plane size of `client`'s device, 32 where it gives none)."""
    from cubelab.inspect.peaks import plane_width as device_plane_width
    from cubelab.inspect.trace import failure_of, run_recorded

    width = device_plane_width(client) if plane_width is None else plane_width
    _cost.check_width(width)

    if getattr(cube_count, "handle", None) is not None:
        raise CubeError(hinted("access_map needs a static cube count",
                               "pass CubeCount.Static(x, y, z): a dynamic count is known only "
                               "on the device"))
    cx, cy, cz = cube_count.as_tuple()
    total = cx * cy * cz
    if cubes is None:
        chosen = list(range(min(total, MAX_CUBES)))
    else:
        chosen = []
        for c in cubes:
            lin = c[0] + c[1] * cx + c[2] * cx * cy if isinstance(c, (tuple, list)) else int(c)
            if not 0 <= lin < total:
                raise ValueError(hinted(f"cube {c} is not part of this launch ({total} cubes)",
                                        f"pick cubes 0 .. {total - 1} (or (x, y, z) tuples)"))
            chosen.append(lin)
        if not chosen:
            raise ValueError(hinted("access_map(..., cubes=[...]) needs at least one cube",
                                    "leave cubes=None for every cube"))
        chosen = sorted(set(chosen))
    result, client, args, copied = run_recorded(client, launcher, cube_count, cube_dim, args,
                                                "record", (frozenset(chosen), limit, nonfinite))
    log, report, definition, _counts = result
    per = cube_dim.num_units
    units = [c * per + u for c in chosen for u in range(per)]
    m = AccessMap(definition.name, log.table(), dict(log.arrays), chosen, units,
                  list(log.oob), 1, cube_dim.as_tuple() if hasattr(cube_dim, "as_tuple")
                  else tuple(cube_dim), list(definition.source_lines), definition.first_line,
                  log.truncated, list(getattr(report, "nonfinite", []) or []), client, copied,
                  tuple(args), int(width), failure_of(client, args))
    if m.failure is not None:
        warnings.warn(FailedTraceWarning(
            f"access map of `{m.kernel}`: the launch failed, so its accesses end where it "
            f"stopped (`AccessMap.failure`): {type(m.failure).__name__}: {m.failure}"),
            stacklevel=2)
    return m
