"""What an access costs: coalescing into 32-byte sectors, and shared-memory bank conflicts.

The rules a teacher uses to say why a kernel is slow, as pure functions over the access records
of one recorded launch (`access.AccessTable`; `cubelab.inspect.access_map` is the user's door):

- **Coalescing** (`transactions`): a plane — `plane_width` consecutive units of one cube, in
  UNIT_POS order (x fastest, then y, then z) — executes a global load, store or atomic as one
  instruction; the memory system serves it in 32-byte *sectors*. For every such instruction of
  every plane: `bytes` requested (active units × item bytes), `sectors` (distinct 32-byte
  sectors those bytes fall in) and `ideal` (the fewest sectors the distinct bytes could need:
  ⌈distinct bytes / 32⌉). Efficiency = ideal / sectors: 1.0 for a coalesced f32 copy (32 units ×
  4 bytes = 4 sectors), 0.5 at stride 2, 0.125 at stride 8 or more, and 1.0 for a broadcast (32
  units, one word: 1 sector, ideal 1).
- **Bank conflicts** (`bank_conflicts`): shared memory is 32 banks of 4-byte words (word w lives
  in bank w mod 32). A plane's shared access needs as many passes as the most *distinct* words
  any one bank must deliver: `ways` (1 = no conflict; many units reading one word is a
  broadcast, 1-way). `ideal` is the fewest passes its distinct words could need
  (⌈words / 32⌉: a vec4 access of 32 units touches 128 words, so 4 passes is no conflict).

One instruction of a plane = one lockstep *step* of the CPU runtime (one execution of one access
op by the active units of a chunk of cubes; `Access.step`), split by cube and plane. Units a
guard turned off made no access, so a masked plane requests fewer bytes. Indices out of bounds
are left out (they are `AccessMap.oob`: no memory is read there). Addresses are `index × item
bytes` from the start of the buffer, which the model assumes 32-byte aligned (cubelab's pools
align every slice to at least 32 bytes on lavapipe and 256 on most GPUs).

The trap: these are a model's counts, not a measurement. A real GPU's L1 and L2 caches can hide
a stride that a later instruction reuses, atomics to one address serialise whatever the sector
count says, and an instruction's latency may hide behind other planes' work. `docs/cost.md`
says where real GPUs differ; `benchmarks/cost_model.py` checks the model against one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from cubelab.errors import hinted
from cubelab.runtime.cpu.access import KINDS, AccessTable, ArrayInfo

SECTOR_BYTES = 32  # what the memory system moves per request (NVIDIA's sector since Volta)
BANKS = 32  # shared-memory banks
BANK_BYTES = 4  # bytes one bank delivers per pass
DEFAULT_PLANE_WIDTH = 32  # where a device does not say (NVIDIA's warp, Apple's SIMD-group)
# Floating-point operations per component of a float op, as a roofline counts them: fma is a
# multiply and an add; a math function (sqrt, exp, ...) counts as one, though a GPU computes
# most of them in several instructions; negation, casts, comparisons and selects count none.
FLOPS = {"arith.add": 1, "arith.sub": 1, "arith.mul": 1, "arith.div": 1, "arith.rem": 1,
         "arith.min": 1, "arith.max": 1, "math.fma": 2, "math.unary": 1, "math.binary": 1}


@dataclass(frozen=True, slots=True)
class Transaction:
    """One global-memory access instruction executed by one plane."""

    cube: int
    plane: int  # UNIT_POS // plane_width
    phase: int
    line: int | None
    array: str
    kind: str  # "read" | "write" | "atomic"
    units: int  # active units that made the access
    bytes: int  # requested: units × item bytes
    sectors: int  # distinct 32-byte sectors touched
    ideal: int  # ⌈distinct bytes / 32⌉
    step: int = -1

    @property
    def efficiency(self) -> float:
        return self.ideal / self.sectors if self.sectors else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "efficiency": self.efficiency}


@dataclass(frozen=True, slots=True)
class BankConflict:
    """One shared-memory access instruction executed by one plane."""

    cube: int
    plane: int
    phase: int
    line: int | None
    array: str
    kind: str
    units: int
    ways: int  # the most distinct 4-byte words one bank must deliver (1 = no conflict)
    ideal: int  # ⌈distinct words / 32⌉: the passes a conflict-free layout would need
    step: int = -1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LineCoalescing:
    """The global accesses of one source line to one array, summed over planes."""

    line: int | None
    array: str
    kind: str
    instructions: int  # plane-instructions
    bytes: int
    sectors: int
    ideal: int

    @property
    def efficiency(self) -> float:
        return self.ideal / self.sectors if self.sectors else 1.0

    @property
    def sectors_per_instruction(self) -> float:
        return self.sectors / self.instructions if self.instructions else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "efficiency": self.efficiency}


@dataclass(frozen=True, slots=True)
class LineConflicts:
    """The shared accesses of one source line to one array, over planes: worst and mean ways."""

    line: int | None
    array: str
    kind: str
    instructions: int
    worst: int
    mean: float
    ideal: int  # the largest `ideal` of its instructions

    @property
    def excess(self) -> float:
        """Mean ways over the ideal: 1.0 = conflict-free."""
        return self.mean / self.ideal if self.ideal else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "excess": self.excess}


# -- grouping rows into plane-instructions -----------------------------------------------------
def _steps(t: AccessTable, rows: np.ndarray) -> np.ndarray:
    """The step of each of `rows`; a hand-made record (step -1) gets "the unit's n-th access of
    this line, array and kind" as its step (a negative id, apart from recorded steps)."""
    step = t.steps()[rows]
    unknown = step < 0
    if not unknown.any():
        return step
    r = rows[unknown]
    order = np.lexsort((t.seq[r], t.kind[r], t.array[r], t.line[r], t.unit[r]))
    keys = np.stack([t.unit[r], t.line[r], t.array[r], t.kind[r]])[:, order]
    change = np.ones(len(order), dtype=bool)
    change[1:] = (keys[:, 1:] != keys[:, :-1]).any(0)
    starts = np.nonzero(change)[0]
    rank_sorted = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    rank = np.empty(len(order), np.int64)
    rank[order] = rank_sorted
    _, inv = np.unique(np.stack([t.line[r], t.array[r], t.kind[r], rank]), axis=1,
                       return_inverse=True)
    step = step.copy()
    step[unknown] = -2 - inv.reshape(-1)
    return step


def _groups(t: AccessTable, rows: np.ndarray, width: int,
            inner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`rows` grouped into plane-instructions, sorted by `inner` within each: (order into
    rows, group starts, step, plane)."""
    step = _steps(t, rows)
    plane = t.local[rows] // width
    cube = t.cube[rows]
    order = np.lexsort((inner, plane, cube, step))
    change = np.zeros(len(order), dtype=bool)
    change[:1] = True
    for k in (step, cube, plane):
        ks = k[order]
        change[1:] |= ks[1:] != ks[:-1]
    return order, np.nonzero(change)[0], step, plane


def _inside(t: AccessTable, arrays: dict[str, ArrayInfo], shared: bool) -> np.ndarray:
    """Rows of one memory space whose index is inside its array."""
    lengths = np.array([arrays[n].length if n in arrays else 2**62 for n in t.names] + [0],
                       dtype=np.int64)
    space = np.array([s == "shared" for s in t.spaces] + [False], dtype=bool)
    ok = (space[t.array] == shared) & (t.index >= 0) & (t.index < lengths[t.array])
    return np.nonzero(ok)[0]


def _item_bytes(t: AccessTable, arrays: dict[str, ArrayInfo]) -> np.ndarray:
    return np.array([arrays[n].item_bytes if n in arrays else 4 for n in t.names] + [4],
                    dtype=np.int64)


def _heads(t: AccessTable, rows: np.ndarray, order: np.ndarray,
           starts: np.ndarray) -> list[tuple[int, int, int | None, str, str]]:
    """(cube, phase, line, array, kind) of each group's first row."""
    first = rows[order[starts]]
    out = []
    for c, p, ln, a, k in zip(t.cube[first].tolist(), t.phase[first].tolist(),
                              t.line[first].tolist(), t.array[first].tolist(),
                              t.kind[first].tolist()):
        out.append((c, p, None if ln < 0 else ln, t.names[a], KINDS[k]))
    return out


# -- the rules ---------------------------------------------------------------------------------
def transactions(t: AccessTable, arrays: dict[str, ArrayInfo],
                 plane_width: int = DEFAULT_PLANE_WIDTH) -> list[Transaction]:
    """One record per global access instruction per plane (see the module docstring)."""
    check_width(plane_width)
    rows = _inside(t, arrays, shared=False)
    if len(rows) == 0:
        return []
    index = t.index[rows]
    order, starts, step, plane = _groups(t, rows, plane_width, index)
    nb = _item_bytes(t, arrays)[t.array[rows]]
    lo = index * nb
    hi = lo + nb - 1
    units = np.diff(np.append(starts, len(order)))
    req = np.add.reduceat(nb[order], starts)
    # distinct indices per group (sorted by index within it), hence distinct bytes
    ix = index[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = ix[1:] != ix[:-1]
    new[starts] = True
    distinct = np.add.reduceat(new.astype(np.int64), starts)
    ideal = -(-(distinct * nb[order][starts]) // SECTOR_BYTES)
    slo, shi = lo // SECTOR_BYTES, hi // SECTOR_BYTES
    if (slo == shi).all():  # every item within one sector: sorted by index, sectors ascend
        s = slo[order]
        news = np.ones(len(order), dtype=bool)
        news[1:] = s[1:] != s[:-1]
        news[starts] = True
        sectors = np.add.reduceat(news.astype(np.int64), starts)
    else:  # an item that straddles two sectors counts both
        gid = np.repeat(np.arange(len(starts)), units)
        pairs = np.unique(np.stack([np.concatenate([gid, gid]),
                                    np.concatenate([slo[order], shi[order]])]), axis=1)
        sectors = np.bincount(pairs[0], minlength=len(starts))
    heads = _heads(t, rows, order, starts)
    st = step[order[starts]].tolist()
    pl = plane[order[starts]].tolist()
    return [Transaction(c, p_, ph, ln, a, k, u, b, s, i, s_)
            for (c, ph, ln, a, k), p_, u, b, s, i, s_ in zip(
                heads, pl, units.tolist(), req.tolist(), sectors.tolist(), ideal.tolist(), st)]


def bank_conflicts(t: AccessTable, arrays: dict[str, ArrayInfo],
                   plane_width: int = DEFAULT_PLANE_WIDTH) -> list[BankConflict]:
    """One record per shared-memory access instruction per plane (see the module docstring)."""
    check_width(plane_width)
    rows = _inside(t, arrays, shared=True)
    if len(rows) == 0:
        return []
    index = t.index[rows]
    order, starts, step, plane = _groups(t, rows, plane_width, index)
    ngroups = len(starts)
    units = np.diff(np.append(starts, len(order)))
    gid = np.repeat(np.arange(ngroups), units)
    nb = _item_bytes(t, arrays)[t.array[rows]][order]
    first_word = index[order] * nb // BANK_BYTES
    per = np.maximum(1, nb // BANK_BYTES)  # words one item covers (a vec4 of f32: 4)
    if (per == 1).all():
        g, w = gid, first_word
    else:
        g = np.repeat(gid, per)
        offs = np.arange(len(g)) - np.repeat(np.cumsum(per) - per, per)
        w = np.repeat(first_word, per) + offs
    bank = w % BANKS
    o = np.lexsort((w, bank, g))
    g, bank, w = g[o], bank[o], w[o]
    new_gb = np.ones(len(g), dtype=bool)
    new_gb[1:] = (g[1:] != g[:-1]) | (bank[1:] != bank[:-1])
    new_w = new_gb.copy()
    new_w[1:] |= w[1:] != w[:-1]
    gb_starts = np.nonzero(new_gb)[0]
    words_in_bank = np.add.reduceat(new_w.astype(np.int64), gb_starts)
    gb_group = g[gb_starts]
    ways = np.zeros(ngroups, dtype=np.int64)
    np.maximum.at(ways, gb_group, words_in_bank)
    distinct_words = np.bincount(gb_group, weights=words_in_bank, minlength=ngroups)
    ideal = np.maximum(1, -(-distinct_words.astype(np.int64) // BANKS))
    heads = _heads(t, rows, order, starts)
    st = step[order[starts]].tolist()
    pl = plane[order[starts]].tolist()
    return [BankConflict(c, p_, ph, ln, a, k, u, wy, i, s_)
            for (c, ph, ln, a, k), p_, u, wy, i, s_ in zip(
                heads, pl, units.tolist(), ways.tolist(), ideal.tolist(), st)]


def check_width(width: int) -> None:
    if not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError(hinted(f"plane_width must be a positive number of units, got "
                                f"{width!r}", "e.g. 32 (None: the device's plane size)"))


# -- per source line ---------------------------------------------------------------------------
def coalescing_by_line(records: list[Transaction]) -> list[LineCoalescing]:
    """`transactions` summed per (line, array, kind), in line order."""
    acc: dict[tuple[int, str, str], list[int]] = {}
    for r in records:
        a = acc.setdefault((-1 if r.line is None else r.line, r.array, r.kind), [0, 0, 0, 0])
        a[0] += 1
        a[1] += r.bytes
        a[2] += r.sectors
        a[3] += r.ideal
    return [LineCoalescing(None if ln < 0 else ln, arr, k, *v)
            for (ln, arr, k), v in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                       KINDS.index(kv[0][2])))]


def conflicts_by_line(records: list[BankConflict]) -> list[LineConflicts]:
    """`bank_conflicts` per (line, array, kind): worst and mean ways, in line order."""
    acc: dict[tuple[int, str, str], list[int]] = {}
    for r in records:
        a = acc.setdefault((-1 if r.line is None else r.line, r.array, r.kind), [0, 0, 0, 0])
        a[0] += 1
        a[1] = max(a[1], r.ways)
        a[2] += r.ways
        a[3] = max(a[3], r.ideal)
    return [LineConflicts(None if ln < 0 else ln, arr, k, n, worst, total / n, ideal)
            for (ln, arr, k), (n, worst, total, ideal) in
            sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1], KINDS.index(kv[0][2])))]


def cost_lines(kernel: str, coalescing: list[LineCoalescing],
               conflicts: list[LineConflicts], source: Any = None) -> list[str]:
    """The per-line summary as printed by `%cubelab cost on` and `cubelab cost`: one line per
    access of a source line. `source(line)` gives the line's text."""
    out = [f"cubelab: memory cost of `{kernel}` (model: 32-byte sectors, 32 banks × 4 bytes)"]
    for c in coalescing:
        text = source(c.line) if source is not None else ""
        out.append(f"  line {c.line}: {c.array} {c.kind:<6} {c.sectors} sectors for "
                   f"{c.ideal} ideal — {c.efficiency:.0%} coalesced "
                   f"({c.sectors_per_instruction:.1f} per plane){'   ' + text if text else ''}")
    for b in conflicts:
        text = source(b.line) if source is not None else ""
        what = "no bank conflict" if b.worst <= b.ideal else f"{b.worst}-way bank conflict"
        out.append(f"  line {b.line}: {b.array} {b.kind:<6} (shared) worst {b.worst}-way, mean "
                   f"{b.mean:.1f} — {what}{'   ' + text if text else ''}")
    if not coalescing and not conflicts:
        out.append("  no global or shared access recorded")
    return out
