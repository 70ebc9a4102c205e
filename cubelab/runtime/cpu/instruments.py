"""Instruments of an instrumented CPU plan: access recording and the non-finite report.

Zero cost when off, by construction: the ordinary plan of a kernel contains none of this code.
When a launch asks for an instrument (`cubelab.inspect.access_map`, a `race_report` or
`nonfinite_report` block, `set_reports`), the server builds a second plan for that KernelId whose
memory, barrier and float steps are wrapped here, and keeps it beside the plain one. Like the
traced plan it keeps every value (no liveness pruning, no per-signature uniform values), so the
wrappers can read the index each unit computed — in particular the index *before* CheckedIo's
`min(index, len - 1)`, found through the `clamped` mark the pass leaves on the index op.

- Accesses: after a load, store or atomic on a global buffer or shared array, every active unit
  of a recorded cube appends (unit, cube, UNIT_POS, phase, index as computed, value) to the
  launch's `AccessLog` — a handful of array operations per op, never a loop over units. An index
  outside the array also becomes an `OobRecord` with what then happened to the access.
- Phases: after a `sync_cube()`/`sync_storage()`, the phase of every unit that passed it
  increases by one (kept per ABSOLUTE_POS, so compacted branches count right);
  `workgroup_uniform_load` is a barrier too, and its read is the first of the new phase.
- Non-finite: after a float arithmetic or math op, a unit whose result is inf or NaN while its
  operands are finite is reported (unit, op, operands, line).
- Counts (`cubelab.inspect.roofline`): every global access adds its active units × item bytes
  to `Counts.bytes`, every float op its active units × components × the op's flops
  (`cost.FLOPS`) to `Counts.flops` — over every cube the launch runs, recorded or not. A
  counting launch may run only some cubes (`LaunchState.cube_runs`): a roofline of a large
  launch counts a sample of them and scales.

The trap: a recording must not change what the kernel does — the wrappers only read `ctx.env`
after the wrapped step ran, and never touch memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cubelab.ir.core import KernelDefinition, Op
from cubelab.ir.types import Atomic, Elem, Ty
from cubelab.runtime.cpu.access import AccessLog, ArrayInfo, NonFinite, OobRecord
from cubelab.runtime.cpu.cost import FLOPS
from cubelab.runtime.cpu.lanes import Ctx, full
from cubelab.runtime.cpu.memory import LocalSlot, Mem, Ptr

NONFINITE_LIMIT = 1000
OOB_LIMIT = 1000

_LOADS = ("memory.load", "atomic.load", "sync.uniform_load")
_STORES = ("memory.store", "atomic.store")
_ATOMICS = ("atomic.rmw", "atomic.cas")
_FLOAT_OPS = ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.neg",
              "math.unary", "math.binary", "math.fma", "arith.cast")
_SHARED_NAME = re.compile(r"^\s*(\w+)\s*(?::[^=]*)?=\s*SharedMemory\b")


@dataclass(frozen=True)
class Instruments:
    """Which instruments a plan carries (part of the instrumented plan's cache key)."""

    accesses: bool = False
    nonfinite: bool = False
    counts: bool = False

    def __bool__(self) -> bool:
        return self.accesses or self.nonfinite or self.counts


@dataclass
class Counts:
    """What a launch moved and computed, over the cubes it ran (`Instruments.counts`)."""

    read_bytes: int = 0  # global loads
    written_bytes: int = 0  # global stores
    atomic_bytes: int = 0  # global atomics (an item each, whatever the operation)
    flops: int = 0
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)  # global: (items, item bytes)
    read_arrays: set[str] = field(default_factory=set)
    written_arrays: set[str] = field(default_factory=set)

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.written_bytes + self.atomic_bytes


@dataclass
class Recorder:
    """One launch's instrument state (set on `LaunchState.recorder`)."""

    definition: KernelDefinition
    total_units: int
    units_per_cube: int
    log: AccessLog | None = None
    nonfinite: list[NonFinite] | None = None
    nonfinite_total: int = 0
    oob_mode: str = "zero"
    phase: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    chosen: np.ndarray | None = None  # bool per cube: recorded?
    names: dict[str, str] = field(default_factory=dict)  # shared IR name -> variable name
    cubes_checked: int = 0
    counts: Counts | None = None
    cube_runs: tuple[tuple[int, int], ...] | None = None  # a counting launch's sample of cubes

    def __post_init__(self) -> None:
        self.phase = np.zeros(self.total_units, dtype=np.int64)
        ncubes = self.total_units // max(1, self.units_per_cube)
        if self.log is not None and self.log.cubes is not None:
            self.chosen = np.zeros(ncubes, dtype=bool)
            ids = [c for c in self.log.cubes if 0 <= c < ncubes]
            self.chosen[ids] = True
        self.names = shared_names(self.definition)

    def source(self, op: Op) -> tuple[int | None, str]:
        if op.loc is None:
            return None, ""
        d = self.definition
        i = op.loc.line - d.first_line
        return op.loc.line, d.source_lines[i].strip() if 0 <= i < len(d.source_lines) else ""


def shared_names(definition: KernelDefinition) -> dict[str, str]:
    """`shared_12` → `sm` when the kernel line says `sm = SharedMemory[f32](256)`: a teacher
    points at the name the student wrote, not the IR's."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for op in definition.walk():
        if op.name != "shared.declare" or op.loc is None:
            continue
        ir_name = str(op.attrs.get("name") or op.result.name)
        i = op.loc.line - definition.first_line
        if 0 <= i < len(definition.source_lines):
            m = _SHARED_NAME.match(definition.source_lines[i])
            if m and m.group(1) not in taken:
                out[ir_name] = m.group(1)
                taken.add(m.group(1))
    return out


def raw_indices(definition: KernelDefinition) -> dict[int, tuple[int, bool]]:
    """Pointer value id → (id of the index the kernel computed, whether CheckedIo clamped it)."""
    producer: dict[int, Op] = {}
    for op in definition.walk():
        for r in op.results:
            producer[r.id] = op
    out: dict[int, tuple[int, bool]] = {}
    for op in definition.walk():
        if op.name != "memory.index":
            continue
        idx = op.operands[1].id
        clamped = bool(op.attrs.get("clamped"))
        if clamped:
            m = producer.get(idx)
            if m is not None and m.name == "arith.min":
                idx = m.operands[0].id
        out[op.result.id] = (idx, clamped)
    return out


def wrap(plan: Any, op: Op, step: Any, inst: Instruments, raw: dict[int, tuple[int, bool]]) -> Any:
    """`step` with the instruments `op` needs (or `step` itself)."""
    name = op.name
    if name in ("sync.cube", "sync.storage"):
        return _phase(step)
    if name == "sync.uniform_load":  # a barrier, then a read that belongs to the new phase
        return _new_phase_then(_access(step, op, raw) if inst.accesses else step)
    if (inst.accesses or inst.counts) and (name in _LOADS or name in _STORES or
                                           name in _ATOMICS):
        return _access(step, op, raw)
    if not (op.results and _is_float(op.results[0].type)):
        return step
    if inst.nonfinite and name in _FLOAT_OPS:
        if not (name == "arith.cast" and not any(_is_float(o.type) for o in op.operands)):
            step = _nonfinite(step, op)  # (an integer → float cast never makes inf or NaN)
    if inst.counts and name in FLOPS:
        step = _flops(step, op)
    return step


def _is_float(t: Any) -> bool:
    t = t.value_ty if isinstance(t, Atomic) else t
    return isinstance(t, Ty) and t.elem in (Elem.F32, getattr(Elem, "F16", Elem.F32))


def _next_phase(ctx: Ctx, mask: Any) -> None:
    rec = ctx.launch.recorder
    if rec is not None:
        lanes = ctx.lanes()
        rec.phase[lanes if mask is None else lanes[mask]] += 1


def _phase(step: Any) -> Any:
    """A barrier's step, then the next phase for its lanes."""
    def run(ctx: Ctx, mask: Any) -> None:
        step(ctx, mask)
        _next_phase(ctx, mask)

    return run


def _new_phase_then(step: Any) -> Any:
    """The next phase, then `step`: `sync.uniform_load` is a barrier whose read belongs to the
    phase after it."""
    def run(ctx: Ctx, mask: Any) -> None:
        _next_phase(ctx, mask)
        step(ctx, mask)

    return run


def _access(step: Any, op: Op, raw: dict[int, tuple[int, bool]]) -> Any:
    ptr_id = op.operands[0].id
    kind = "read" if op.name == "memory.load" else "write" if op.name == "memory.store" else \
        "atomic"
    if op.name == "sync.uniform_load" and not isinstance(getattr(op.operands[0].type, "pointee",
                                                                 None), Atomic):
        kind = "read"
    is_write = op.name in _STORES or op.name in _ATOMICS
    value_id = op.operands[1].id if op.name in _STORES or op.name in _ATOMICS else \
        (op.results[0].id if op.results else None)
    index_id, clamped = raw.get(ptr_id, (None, False))

    def run(ctx: Ctx, mask: Any) -> None:
        step(ctx, mask)
        rec = ctx.launch.recorder
        if rec is None:
            return
        p = ctx.env[ptr_id]
        if not isinstance(p, Ptr) or p.mem.kind == "local":
            return
        if rec.counts is not None and p.mem.kind == "global":
            _count(rec.counts, ctx, p.mem, mask, kind)
        if rec.log is not None:
            _record(rec, ctx, op, p, mask, kind, is_write, value_id, index_id, clamped)

    return run


def _active(ctx: Ctx, mask: Any) -> int:
    return ctx.n if mask is None else int(np.count_nonzero(mask))


def _count(counts: Counts, ctx: Ctx, mem: Mem, mask: Any, kind: str) -> None:
    width = int(np.prod(mem.item_shape)) if mem.item_shape else 1
    item = mem.store.dtype.itemsize * width
    moved = _active(ctx, mask) * item
    if kind == "read":
        counts.read_bytes += moved
        counts.read_arrays.add(mem.name)
    elif kind == "write":
        counts.written_bytes += moved
        counts.written_arrays.add(mem.name)
    else:
        counts.atomic_bytes += moved
        counts.read_arrays.add(mem.name)
        counts.written_arrays.add(mem.name)
    counts.arrays[mem.name] = (mem.length, item)


def _flops(step: Any, op: Op) -> Any:
    """`step`, then the active units × components × the op's flops added to the counts."""
    ty = op.results[0].type
    per = FLOPS[op.name] * (ty.width if isinstance(ty, Ty) else 1)

    def run(ctx: Ctx, mask: Any) -> None:
        step(ctx, mask)
        rec = ctx.launch.recorder
        if rec is not None and rec.counts is not None:
            rec.counts.flops += _active(ctx, mask) * per

    return run


def _record(rec: Recorder, ctx: Ctx, op: Op, p: Ptr, mask: Any, kind: str, is_write: bool,
            value_id: int | None, index_id: int | None, clamped: bool) -> None:
    log = rec.log
    assert log is not None
    n = ctx.n
    lanes = ctx.lanes()
    sel = np.ones(n, dtype=bool) if mask is None else mask.copy()
    U = rec.units_per_cube
    cubes = lanes // U
    if rec.chosen is not None:
        sel &= rec.chosen[cubes]
    if not sel.any():
        return
    mem: Mem = p.mem
    if index_id is not None and ctx.env[index_id] is not None:
        index = full(np.asarray(ctx.env[index_id]), n)
    elif p.start is not None:
        index = lanes
    elif p.unit:
        index = ctx.unit_index()
    else:
        index = full(p.orig, n)
    index = index.astype(np.int64)  # u32 stays non-negative (4294967295 is out of bounds)
    values = ctx.env[value_id] if value_id is not None else None
    vals = full(np.asarray(values), n)[sel] if values is not None else None
    where = np.nonzero(sel)[0]
    u = lanes[where].astype(np.int64)
    array = rec.names.get(mem.name, mem.name) if mem.kind == "shared" else mem.name
    space = "shared" if mem.kind == "shared" else "global"
    if array not in log.arrays:
        width = int(np.prod(mem.item_shape)) if mem.item_shape else 1
        log.arrays[array] = ArrayInfo(array, space, mem.length, tuple(mem.shape),
                                      int(mem.item_shape[0]) if mem.item_shape else 1,
                                      mem.store.dtype.itemsize * width)
    phase = rec.phase[u]
    ix = index[where]
    line = op.loc.line if op.loc is not None else None
    log.add(array, space, kind, u, u // U, u % U, ix, vals, line, phase)
    bad = (ix < 0) | (ix >= mem.length)
    if bad.any() and len(log.oob) < OOB_LIMIT:
        if clamped or rec.oob_mode == "clamp":
            outcome = "clamped"
        elif not is_write:
            outcome = "zero"
        else:
            outcome = "failed" if rec.oob_mode == "report" else "dropped"
        for k in np.nonzero(bad)[0][: OOB_LIMIT - len(log.oob)]:
            log.oob.append(OobRecord(array, int(ix[k]), mem.length, int(u[k]), line, outcome,
                                     kind, int(u[k] // U), int(phase[k])))


def _nonfinite(step: Any, op: Op) -> Any:
    operand_ids = [o.id for o in op.operands]
    r = op.results[0].id

    def run(ctx: Ctx, mask: Any) -> None:
        step(ctx, mask)
        rec = ctx.launch.recorder
        if rec is None or rec.nonfinite is None:
            return
        res = ctx.env[r]
        if not isinstance(res, np.ndarray) or res.dtype.kind != "f":
            return
        bad = ~np.isfinite(res)
        if not bad.any():
            return
        n = ctx.n
        bad = full(bad, n) if bad.ndim == 1 else full(bad.reshape(bad.shape[0], -1).any(1), n)
        ok = np.ones(n, dtype=bool)
        ops = []
        for o in operand_ids:
            v = ctx.env[o]
            if isinstance(v, LocalSlot):
                v = v.arr
            if not isinstance(v, np.ndarray):
                continue
            ops.append(v)
            if v.dtype.kind == "f":
                fin = np.isfinite(v)
                if fin.ndim > 1:
                    fin = fin.reshape(fin.shape[0], -1).all(1)
                ok &= full(fin, n)
        hit = bad & ok
        if mask is not None:
            hit &= mask
        lanes = np.nonzero(hit)[0]
        if len(lanes) == 0:
            return
        rec.nonfinite_total += len(lanes)
        room = NONFINITE_LIMIT - len(rec.nonfinite)
        line, source = rec.source(op)
        name = op.name if op.name not in ("math.unary", "math.binary") else \
            f"math.{op.attrs.get('fn', '?')}"
        absl = ctx.lanes()
        for li in lanes[: max(0, room)]:
            li = int(li)
            v = full(np.asarray(res), n)[li]
            val = v.reshape(-1)[~np.isfinite(v.reshape(-1))][0]
            what = "nan" if np.isnan(val) else ("inf" if val > 0 else "-inf")
            operands = tuple(_py(full(x, n)[li]) for x in ops)
            rec.nonfinite.append(NonFinite(rec.definition.name, int(absl[li]), name, what,
                                           operands, line, source))

    return run


def _py(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x
