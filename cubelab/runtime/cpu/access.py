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

`phase` is the number of barriers (`sync_cube`/`sync_storage`/`workgroup_uniform_load`) the unit
had passed when it made the access. `index` is the index *as the kernel computed it* — before
CheckedIo's clamp and before the runtime zeroes a read or drops a write — so an out-of-bounds
access is seen where it happened (`OobRecord.outcome` says what then happened to it).
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
    # which lockstep step of the interpreter made it: one execution of one access op by every
    # active unit of a chunk of cubes (what a plane executes as one instruction). -1: unknown
    # (a hand-made record; the cost rules then count a unit's n-th access of a line as step n)
    step: int = -1

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
        if self.cubes[0] != self.cubes[1]:
            where = f"from cubes {self.cubes[0]} and {self.cubes[1]} (no barrier orders cubes)"
        elif self.space == "shared":
            where = f"of cube {self.cubes[0]} in phase {self.phase}"
        else:
            where = f"in phase {self.phase}"
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


# -- columns: how the analyses see accesses (vectorised: 10 000 accesses judge in milliseconds) --
KIND_IDS = {"read": 0, "write": 1, "atomic": 2}


@dataclass
class AccessTable:
    """Accesses as numpy columns (one row per access, in execution order) — what the runtime
    records and what the analyses read. `records()` turns rows into `Access` records."""

    unit: np.ndarray
    cube: np.ndarray
    local: np.ndarray
    phase: np.ndarray
    array: np.ndarray  # id into `names`
    index: np.ndarray
    kind: np.ndarray  # KIND_IDS
    line: np.ndarray  # -1: unknown
    seq: np.ndarray
    names: list[str]
    spaces: list[str]  # per array id
    values: list[Any]  # per row, or chunks resolved by `records`
    step: np.ndarray | None = None  # Access.step per row (None: every row -1)

    def __len__(self) -> int:
        return len(self.unit)

    @property
    def shared(self) -> np.ndarray:
        sp = np.array([s == "shared" for s in self.spaces] + [False], dtype=bool)
        return sp[self.array] if len(self.array) else np.zeros(0, dtype=bool)

    @classmethod
    def from_records(cls, records: Iterable[Access]) -> "AccessTable":
        recs = list(records)
        names: list[str] = []
        spaces: list[str] = []
        ids: dict[tuple[str, str], int] = {}
        arr = []
        for a in recs:
            k = (a.array, a.space)
            i = ids.get(k)
            if i is None:
                i = ids[k] = len(names)
                names.append(a.array)
                spaces.append(a.space)
            arr.append(i)

        def col(f: Any) -> np.ndarray:
            return np.array([f(a) for a in recs], dtype=np.int64)

        return cls(col(lambda a: a.unit), col(lambda a: a.cube), col(lambda a: a.local),
                   col(lambda a: a.phase), np.array(arr, dtype=np.int64),
                   col(lambda a: a.index), col(lambda a: KIND_IDS[a.kind]),
                   col(lambda a: -1 if a.line is None else a.line), col(lambda a: a.seq),
                   names, spaces, [a.value for a in recs], col(lambda a: a.step))

    def select(self, rows: np.ndarray) -> "AccessTable":
        """The rows picked by a bool mask (values stay unconverted until read)."""
        idx = np.nonzero(rows)[0]
        return AccessTable(*(c[idx] for c in (self.unit, self.cube, self.local, self.phase,
                                               self.array, self.index, self.kind, self.line,
                                               self.seq)),
                           self.names, self.spaces, _Picked(self.values, idx.tolist()),
                           None if self.step is None else self.step[idx])

    def steps(self) -> np.ndarray:
        """`step` per row, never None (-1 where unknown)."""
        return self.step if self.step is not None else np.full(len(self), -1, np.int64)

    def row(self, i: int) -> Access:
        a = int(self.array[i])
        line = int(self.line[i])
        return Access(int(self.unit[i]), int(self.cube[i]), int(self.phase[i]), self.names[a],
                      int(self.index[i]), KINDS[int(self.kind[i])], self.values[i],
                      None if line < 0 else line, self.spaces[a], int(self.local[i]),
                      int(self.seq[i]), int(self.steps()[i]))

    def records(self) -> list[Access]:
        names, spaces = self.names, self.spaces
        cols = [c.tolist() for c in (self.unit, self.cube, self.phase, self.array, self.index,
                                     self.kind, self.line, self.local, self.seq, self.steps())]
        out = []
        for u, c, p, a, i, k, ln, lo, sq, st, v in zip(*cols, self.values):
            out.append(Access(u, c, p, names[a], i, KINDS[k], v, None if ln < 0 else ln,
                              spaces[a], lo, sq, st))
        return out


def table_of(accesses: "Iterable[Access] | AccessTable") -> AccessTable:
    return accesses if isinstance(accesses, AccessTable) else AccessTable.from_records(accesses)


def _grouped(keys: tuple[np.ndarray, ...], inner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row order, start of each group in that order): rows grouped by `keys` (the first most
    significant), sorted by `inner` within a group."""
    order = np.lexsort((inner,) + keys[::-1])
    change = np.zeros(len(order), dtype=bool)
    change[:1] = True
    for k in keys:
        ks = k[order]
        change[1:] |= ks[1:] != ks[:-1]
    return order, np.nonzero(change)[0]


def _distinct(order: np.ndarray, starts: np.ndarray, col: np.ndarray) -> np.ndarray:
    """How many distinct values of `col` each group holds (`col` sorted within groups)."""
    new = np.zeros(len(order), dtype=bool)
    new[starts] = True
    cs = col[order]
    new[1:] |= cs[1:] != cs[:-1]
    return np.add.reduceat(new.astype(np.int64), starts)


# -- the analyses ------------------------------------------------------------------------------
def find_races(accesses: "Iterable[Access] | AccessTable",
               limit: int = RACE_LIMIT) -> tuple[list[Race], int]:
    """Races and how many there are. Within a cube: one per element and phase where two units
    meet with a plain write. Across cubes (global buffers): one per element written by one cube
    and touched by another. Each names the first plain write and the first access of another
    unit (another cube) in execution order."""
    t = table_of(accesses)
    if len(t) == 0:
        return [], 0
    shared = t.shared
    write = t.kind == KIND_IDS["write"]
    found: list[tuple[int, int]] = []  # (writer row, other row)
    total = 0
    # within one cube: group by (array, cube, index, phase), units sorted inside each group
    order, starts = _grouped((t.array, t.cube, t.index, t.phase), t.unit)
    w = np.add.reduceat(write[order].astype(np.int64), starts)
    nunits = _distinct(order, starts, t.unit)
    racing = np.nonzero((w > 0) & (nunits >= 2))[0]
    total += len(racing)
    bounds = np.append(starts, len(order))
    for g in racing[:limit]:
        rows = order[bounds[g]:bounds[g + 1]]
        rows = rows[np.argsort(t.seq[rows], kind="stable")]
        wr = rows[write[rows]][0]
        other = rows[t.unit[rows] != t.unit[wr]][0]
        found.append((int(wr), int(other)))
    # across cubes, on global buffers: group by (array, index), cubes counted inside
    glob = np.nonzero(~shared)[0]
    if len(glob):
        o3, st = _grouped((t.array[glob], t.index[glob]), t.cube[glob])
        o3 = glob[o3]
        ncubes = _distinct(o3, st, t.cube)
        wg = np.add.reduceat(write[o3].astype(np.int64), st)
        cross = np.nonzero((wg > 0) & (ncubes >= 2))[0]
        total += len(cross)
        b3 = np.append(st, len(o3))
        for g in cross[: max(0, limit - len(found))]:
            rows = o3[b3[g]:b3[g + 1]]
            rows = rows[np.argsort(t.seq[rows], kind="stable")]
            wr = rows[write[rows]][0]
            other = rows[t.cube[rows] != t.cube[wr]][0]
            found.append((int(wr), int(other)))
    races = []
    for wr, ot in found:
        a, b = t.row(wr), t.row(ot)
        races.append(Race(a.array, a.index, (a.unit, b.unit), (a.line, b.line), a.phase,
                          (a.kind, b.kind), (a.phase, b.phase), (a.cube, b.cube), a.space))
    races.sort(key=lambda r: (r.phase, r.array, r.index, r.cubes))
    return races, total


def find_uninitialised(accesses: "Iterable[Access] | AccessTable") -> list[Access]:
    """Plain shared-memory reads of elements nobody wrote before (see the module docstring)."""
    t = table_of(accesses)
    if len(t) == 0:
        return []
    shared = t.shared
    reads = np.nonzero(shared & (t.kind == KIND_IDS["read"]))[0]
    writes = np.nonzero(shared & (t.kind != KIND_IDS["read"]))[0]
    if len(reads) == 0:
        return []
    # the earliest phase each element was written in (no write: a phase never reached)
    wkey = list(zip(t.array[writes].tolist(), t.cube[writes].tolist(), t.index[writes].tolist()))
    first: dict[tuple[int, int, int], int] = {}
    for k, p in zip(wkey, t.phase[writes].tolist()):
        if first.get(k, p + 1) > p:
            first[k] = p
    rkey = list(zip(t.array[reads].tolist(), t.cube[reads].tolist(), t.index[reads].tolist()))
    rphase = t.phase[reads].tolist()
    open_ = [i for i, (k, p) in enumerate(zip(rkey, rphase)) if first.get(k, p) >= p]
    if not open_:
        return []
    # the rest: written in this phase by another unit (a race), or by the reader before?
    same: dict[tuple[int, int, int, int], list[tuple[int, int]]] = {}
    for k, p, u, sq in zip(wkey, t.phase[writes].tolist(), t.unit[writes].tolist(),
                           t.seq[writes].tolist()):
        same.setdefault(k + (p,), []).append((u, sq))
    out = []
    runit, rseq = t.unit[reads].tolist(), t.seq[reads].tolist()
    for i in open_:
        ws = same.get(rkey[i] + (rphase[i],), ())
        if any(u != runit[i] or sq < rseq[i] for u, sq in ws):
            continue
        out.append(t.row(int(reads[i])))
    return out


def unit_scores(accesses: "Iterable[Access] | AccessTable",
                units: Iterable[tuple[int, int]] = ()) -> Scores:
    """Per-unit counts; `units` lists (unit, cube) pairs to include even if they touched nothing."""
    t = table_of(accesses)
    cubes: dict[int, int] = dict(units)
    uu, first = np.unique(t.unit, return_index=True)
    for u, i in zip(uu.tolist(), first.tolist()):
        cubes.setdefault(u, int(t.cube[i]))
    if not cubes:
        return Scores({})
    ids = np.array(sorted(cubes), dtype=np.int64)
    pos = np.searchsorted(ids, t.unit)
    shared = t.shared
    read = t.kind == KIND_IDS["read"]
    cols = [~shared & read, ~shared & ~read, shared & read, shared & ~read,
            t.kind == KIND_IDS["atomic"]]
    counts = [np.bincount(pos[c], minlength=len(ids)).tolist() for c in cols]
    return Scores({u: UnitScore(u, cubes[u], *(c[k] for c in counts))
                   for k, u in enumerate(ids.tolist())})


# -- the runtime's side: a columnar log the instrumented plan appends to ------------------------
@dataclass
class ArrayInfo:
    """What the access map needs to draw an array: its length (items) and, for a tensor, shape."""

    name: str
    space: str  # "global" | "shared"
    length: int
    shape: tuple[int, ...] = ()
    width: int = 1  # vector width of an item
    item_bytes: int = 4  # bytes of one item (element bytes × width): what one access moves


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

    def table(self) -> AccessTable:
        names: list[str] = []
        spaces: list[str] = []
        ids: dict[tuple[str, str], int] = {}
        cols: list[list[np.ndarray]] = [[] for _ in range(10)]
        values: list[Any] = []
        for step, (array, space, kind, units, cubes, local, index, vals, line, phase,
                   seq0) in enumerate(self._chunks):
            n = len(units)
            k = (array, space)
            a = ids.get(k)
            if a is None:
                a = ids[k] = len(names)
                names.append(array)
                spaces.append(space)
            for c, v in zip(cols, (units, cubes, local, phase, np.full(n, a), index,
                                   np.full(n, KIND_IDS[kind]),
                                   np.full(n, -1 if line is None else line),
                                   np.arange(seq0, seq0 + n), np.full(n, step))):
                c.append(np.asarray(v, dtype=np.int64))
            values.append(vals)
        cat = [np.concatenate(c) if c else np.zeros(0, np.int64) for c in cols]
        return AccessTable(*cat[:9], names, spaces,
                           _LazyValues(values, [len(c[3]) for c in self._chunks]), cat[9])

    def records(self) -> list[Access]:
        return self.table().records()


class _LazyValues:
    """The recorded values, per row, converted to Python numbers only when read."""

    def __init__(self, chunks: list[Any], sizes: list[int]) -> None:
        self._chunks = chunks
        self._sizes = sizes
        self._flat: list[Any] | None = None

    def _all(self) -> list[Any]:
        if self._flat is None:
            out: list[Any] = []
            for v, n in zip(self._chunks, self._sizes):
                out += v.tolist() if v is not None else [None] * n
            self._flat = out
        return self._flat

    def __getitem__(self, i: int) -> Any:
        return self._all()[i]

    def __iter__(self) -> Any:
        return iter(self._all())

    def __len__(self) -> int:
        return sum(self._sizes)


class _Picked:
    """Some rows of another value column, read through."""

    def __init__(self, values: Any, rows: list[int]) -> None:
        self._values = values
        self._rows = rows

    def __getitem__(self, i: int) -> Any:
        return self._values[self._rows[i]]

    def __iter__(self) -> Any:
        vals = self._values
        return (vals[i] for i in self._rows)

    def __len__(self) -> int:
        return len(self._rows)
