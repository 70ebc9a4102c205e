"""Who touched which element, and when: access records, and the rules that judge them.

The CPU runtime can record, for chosen cubes, every global-buffer and shared-memory access of
every unit (`AccessLog`, filled by an instrumented plan; `cubelab.inspect.access_map` is the
user's door). This module holds the plain records and the three analyses a teacher needs, as
pure functions over records — so they are testable on hand-made records and usable on their own:

- `find_races`: two *different* units touch the same element with at least one plain
  (non-atomic) write, and nothing orders them. Within a cube, `sync_cube()` orders: accesses in
  different barrier phases never race. Across cubes nothing orders (a kernel has no grid-wide
  barrier), so on a global buffer units of different cubes race in any phase. Shared memory is
  per cube, so only units of one cube can meet there.
- `find_uninitialised`: a plain read of a shared-memory element that no unit wrote in an earlier
  phase, or in this phase (a write by another unit in the same phase is a race, reported as such;
  the unit's own earlier write counts). WGSL zero-fills shared memory, CUDA does not: a kernel
  that reads it unwritten is not portable, and usually wrong.
- `unit_scores`: per unit, global and shared reads and writes — what a puzzle's check counts.

The trap: the interpreter runs units in lockstep, so a racy kernel usually *computes the right
answer here* (and often on lavapipe). Races are found from the records, never from the output.

`phase` is the number of barriers (`sync_cube`/`sync_storage`) the unit had passed when it made
the access. `index` is the index *as the kernel computed it* — before CheckedIo's clamp and
before the runtime zeroes a read or drops a write — so an out-of-bounds access is seen where it
happened (`OobRecord.outcome` says what then happened to it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

KINDS = ("read", "write", "atomic")
OUTCOMES = ("clamped", "zero", "dropped", "failed")
RACE_LIMIT = 1000  # races kept per analysis (the count is always exact)


@dataclass(frozen=True, slots=True)
class Access:
    """One access of one unit to one element of a global buffer or a cube's shared array."""

    unit: int  # the unit's linear position in the dispatch (ABSOLUTE_POS)
    cube: int  # the cube's linear position (CUBE_POS)
    phase: int  # barriers the unit had passed
    array: str  # buffer argument name, or the shared array's variable name
    index: int  # as the kernel computed it (may be out of bounds)
    kind: str  # "read" | "write" | "atomic"
    value: Any = None  # the value read or written (a list for a vector); for an atomic the operand
    line: int | None = None  # kernel source line
    space: str = "global"  # "global" | "shared"
    local: int = 0  # the unit's position in its cube (UNIT_POS)
    seq: int = 0  # execution order: within one unit, program order

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "?"
        return (f"unit {self.unit} (cube {self.cube}) {self.kind} {self.array}[{self.index}] "
                f"in phase {self.phase} — {where}")


@dataclass(frozen=True, slots=True)
class Race:
    """Two units touching one element with nothing between them (at least one plain write)."""

    array: str
    index: int
    units: tuple[int, int]  # (the plain writer, the other unit)
    lines: tuple[int | None, int | None]
    phase: int  # the writer's phase
    kinds: tuple[str, str] = ("write", "read")
    phases: tuple[int, int] = (0, 0)
    cubes: tuple[int, int] = (0, 0)
    space: str = "global"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        (a, b), (la, lb) = self.units, self.lines
        where = (f"in phase {self.phase}" if self.cubes[0] == self.cubes[1]
                 else f"from cubes {self.cubes[0]} and {self.cubes[1]} (no barrier orders cubes)")
        return (f"race on {self.array}[{self.index}] {where}: unit {a} {self.kinds[0]}s it "
                f"(line {la}), unit {b} {self.kinds[1]}s it (line {lb})")


@dataclass(frozen=True, slots=True)
class OobRecord:
    """An access whose computed index is outside its array, and what then happened to it."""

    array: str
    index: int
    length: int
    unit: int
    line: int | None
    outcome: str  # "clamped" (to length-1) | "zero" (read as 0) | "dropped" | "failed"
    kind: str = "read"
    cube: int = 0
    phase: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        what = {"clamped": f"clamped to {self.array}[{self.length - 1}]", "zero": "read as 0",
                "dropped": "write dropped",
                "failed": f"write dropped; {self.array} now carries the failure"}[self.outcome]
        return (f"unit {self.unit} {self.kind}s {self.array}[{self.index}] but {self.array} has "
                f"{self.length} items ({what}) — line {self.line}")


@dataclass(frozen=True, slots=True)
class UnitScore:
    """One unit's count of accesses (an atomic counts as a write, and in `atomics`)."""

    unit: int
    cube: int
    global_reads: int = 0
    global_writes: int = 0
    shared_reads: int = 0
    shared_writes: int = 0
    atomics: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SCORE_FIELDS = ("global_reads", "global_writes", "shared_reads", "shared_writes", "atomics")


@dataclass
class Scores:
    """Per-unit access counts, with the maximum and the total of each count over the units."""

    per_unit: dict[int, UnitScore] = field(default_factory=dict)

    def __getitem__(self, unit: int) -> UnitScore:
        return self.per_unit[unit]

    def __len__(self) -> int:
        return len(self.per_unit)

    def __iter__(self) -> Any:
        return iter(self.per_unit.values())

    def max(self) -> dict[str, int]:
        return {f: max((getattr(s, f) for s in self.per_unit.values()), default=0)
                for f in SCORE_FIELDS}

    def total(self) -> dict[str, int]:
        return {f: sum(getattr(s, f) for s in self.per_unit.values()) for f in SCORE_FIELDS}

    def table(self) -> str:
        head = f"{'unit':>6} {'cube':>5} " + " ".join(f"{f:>13}" for f in SCORE_FIELDS)
        rows = [head]
        for s in self.per_unit.values():
            rows.append(f"{s.unit:>6} {s.cube:>5} "
                        + " ".join(f"{getattr(s, f):>13}" for f in SCORE_FIELDS))
        mx, tot = self.max(), self.total()
        rows.append(f"{'max':>12} " + " ".join(f"{mx[f]:>13}" for f in SCORE_FIELDS))
        rows.append(f"{'total':>12} " + " ".join(f"{tot[f]:>13}" for f in SCORE_FIELDS))
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()


@dataclass(frozen=True, slots=True)
class NonFinite:
    """An op that made inf or NaN from finite operands (WGSL lets a GPU assume floats are
    finite, so such a kernel is not portable: lavapipe may drop the store or give anything)."""

    kernel: str
    unit: int
    op: str  # "arith.div"
    result: str  # "inf" | "-inf" | "nan"
    operands: tuple[Any, ...]
    line: int | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        args = ", ".join(str(o) for o in self.operands)
        return (f"unit {self.unit}: {self.op}({args}) made {self.result} — line {self.line}: "
                f"{self.source}")


# -- the analyses ------------------------------------------------------------------------------
def _key(a: Access) -> tuple[str, str, int, int]:
    """The element: shared memory is one array per cube, a global buffer one for the launch."""
    return (a.space, a.array, a.cube if a.space == "shared" else -1, a.index)


def _conflict(w: Access, o: Access) -> bool:
    if o.unit == w.unit:
        return False
    return o.cube != w.cube or o.phase == w.phase


def find_races(accesses: Iterable[Access], limit: int = RACE_LIMIT) -> tuple[list[Race], int]:
    """Races (one per element and phase of its writer, the first pair in execution order), and
    how many there are in all."""
    by_elem: dict[tuple[str, str, int, int], list[Access]] = {}
    for a in accesses:
        by_elem.setdefault(_key(a), []).append(a)
    races: list[Race] = []
    total = 0
    for (space, array, _, index), group in by_elem.items():
        writes = [a for a in group if a.kind == "write"]
        if not writes or len({a.unit for a in group}) < 2:
            continue
        group = sorted(group, key=lambda a: a.seq)
        seen: set[tuple[int, int]] = set()  # (writer's cube, writer's phase) already reported
        pairs: set[tuple[frozenset[int], int]] = set()  # a cross-cube pair is one race
        for w in sorted(writes, key=lambda a: a.seq):
            if (w.cube, w.phase) in seen:
                continue
            other = next((o for o in group if _conflict(w, o)), None)
            if other is None:
                continue
            pair = (frozenset((w.unit, other.unit)), w.phase if other.cube == w.cube else -1)
            if pair in pairs:
                continue
            seen.add((w.cube, w.phase))
            pairs.add(pair)
            total += 1
            if len(races) < limit:
                races.append(Race(array, index, (w.unit, other.unit), (w.line, other.line),
                                  w.phase, (w.kind, other.kind), (w.phase, other.phase),
                                  (w.cube, other.cube), space))
    races.sort(key=lambda r: (r.phase, r.array, r.index))
    return races, total


def find_uninitialised(accesses: Iterable[Access]) -> list[Access]:
    """Plain shared-memory reads of elements nobody wrote before (see the module docstring)."""
    writes: dict[tuple[str, str, int, int], list[Access]] = {}
    reads: list[Access] = []
    for a in accesses:
        if a.space != "shared":
            continue
        if a.kind == "read":
            reads.append(a)
        else:
            writes.setdefault(_key(a), []).append(a)
    out = []
    for r in reads:
        ws = writes.get(_key(r), ())
        if any(w.phase < r.phase or (w.phase == r.phase and (w.unit != r.unit or w.seq < r.seq))
               for w in ws):
            continue
        out.append(r)
    return out


def unit_scores(accesses: Iterable[Access], units: Iterable[tuple[int, int]] = ()) -> Scores:
    """Per-unit counts; `units` lists (unit, cube) pairs to include even if they touched nothing."""
    counts: dict[int, list[int]] = {}
    cubes: dict[int, int] = {}
    for u, c in units:
        counts.setdefault(u, [0] * 5)
        cubes[u] = c
    for a in accesses:
        row = counts.get(a.unit)
        if row is None:
            row = counts[a.unit] = [0] * 5
            cubes[a.unit] = a.cube
        g = a.space != "shared"
        if a.kind == "read":
            row[0 if g else 2] += 1
        else:
            row[1 if g else 3] += 1
            if a.kind == "atomic":
                row[4] += 1
    return Scores({u: UnitScore(u, cubes[u], *counts[u]) for u in sorted(counts)})


# -- the runtime's side: a columnar log the instrumented plan appends to ------------------------
@dataclass
class ArrayInfo:
    """What the access map needs to draw an array: its length (items) and, for a tensor, shape."""

    name: str
    space: str  # "global" | "shared"
    length: int
    shape: tuple[int, ...] = ()
    width: int = 1  # vector width of an item


@dataclass
class AccessLog:
    """Accesses recorded during one launch, kept as numpy columns until asked for as records.

    The instrumented plan calls `add` once per memory op with the lanes that executed it; the
    cost is a few array appends per op, never a Python loop over units.
    """

    cubes: frozenset[int] | None  # None = every cube
    limit: int = 1_000_000  # accesses kept (the count is always exact)
    arrays: dict[str, ArrayInfo] = field(default_factory=dict)
    oob: list[OobRecord] = field(default_factory=list)
    total: int = 0
    truncated: bool = False
    _chunks: list[tuple[Any, ...]] = field(default_factory=list)
    _kept: int = 0

    def add(self, array: str, space: str, kind: str, units: np.ndarray, cubes: np.ndarray,
            local: np.ndarray, index: np.ndarray, values: Any, line: int | None,
            phase: np.ndarray) -> None:
        n = len(units)
        if n == 0:
            return
        self.total += n
        room = self.limit - self._kept
        if room <= 0:
            self.truncated = True
            return
        if n > room:
            self.truncated = True
            units, cubes, local, index, phase = (a[:room] for a in (units, cubes, local, index,
                                                                     phase))
            if values is not None:
                values = values[:room]
            n = room
        self._chunks.append((array, space, kind, units, cubes, local, index, values, line, phase,
                             self._kept))
        self._kept += n

    def __len__(self) -> int:
        return self._kept

    def records(self) -> list[Access]:
        out: list[Access] = []
        for (array, space, kind, units, cubes, local, index, values, line, phase,
             seq0) in self._chunks:
            us, cs, ls, ix, ps = (a.tolist() for a in (units, cubes, local, index, phase))
            vs = values.tolist() if values is not None else [None] * len(us)
            for k in range(len(us)):
                out.append(Access(us[k], cs[k], ps[k], array, ix[k], kind, vs[k], line, space,
                                  ls[k], seq0 + k))
        return out


def records_of(accesses: Sequence[Access] | AccessLog) -> list[Access]:
    return accesses.records() if isinstance(accesses, AccessLog) else list(accesses)
