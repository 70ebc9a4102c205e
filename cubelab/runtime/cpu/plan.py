"""The CPU runtime's "compiled kernel": an executable plan that runs IR ops on numpy arrays.

Building a plan is the CPU runtime's codegen: every op of the IR becomes one Python closure
(`step(ctx, mask)`), and a block becomes a list of steps. Running a plan executes every op
*once for all units of a chunk of cubes at once* — lockstep, like a GPU's SIMD lanes, only
millions wide:

- a per-unit value is an array with one row per lane (`(n,)` or `(n, width)`); a value that is
  the same for every lane (constants, scalar arguments, lengths) is an array of one row, and
  numpy broadcasting does the rest;
- divergence is a lane mask: `scf.if` runs its branches with `mask & cond` / `mask & ~cond`
  (a branch no lane takes is skipped, one every lane takes runs unmasked), loops keep running
  while any lane is still active; stores, atomics and prints only touch active lanes.
  break/continue/return are bool locals in the IR (the frontend lowers them), so they are
  masks too;
- `sync.cube` is satisfied by construction — each op finishes for every lane before the next
  starts — *provided every unit of the cube reaches it*; a barrier reached by only some units of
  a cube raises `DivergentBarrier` (undefined behaviour on a GPU, a clear error here);
- shared memory is one row per cube of the chunk; atomics use numpy's unbuffered `ufunc.at`
  (old values, when the kernel uses them, come from a segmented scan in lane order: one valid
  serialisation of the atomics).

Cubes are independent, so a dispatch runs in chunks of whole cubes (`CHUNK_LANES` lanes at a
time) — which bounds memory and keeps arrays cache-sized. What keeps it fast: an index equal to
ABSOLUTE_POS (found by a small symbolic analysis; also CheckedIo's `min(ABSOLUTE_POS, len-1)`)
loads and stores a slice of the buffer instead of gathering; values that are the same for every
unit are computed once per launch signature; and a branch (or per-unit loop body) that few
units of a large chunk take runs *compacted*, on those units alone (`run_compacted`).

What is deliberately *not* emulated: a data race's outcome (lockstep picks one legal outcome),
and the GPU's float summation order in `plane.reduce` (tests compare floats with a tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from cubelab.errors import CubeError
from cubelab.ir.core import Block, KernelDefinition, Op, Value
from cubelab.ir.types import Array, Atomic, Elem, Pointer, Ty
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.memory import LocalSlot, Mem, OobAccess, Ptr
from cubelab.runtime.cpu.trace import Tracer

CHUNK_LANES = 1 << 16
MAX_LOOP_ITERATIONS = 10_000_000
REPORT_LIMIT = 1000
PRINT_LIMIT = 10_000

Step = Callable[["Ctx", Any], None]


class DivergentBarrier(CubeError):
    """A `sync_cube()` reached by only some units of a cube (UB on a GPU)."""


class KernelRuntimeError(CubeError):
    """The CPU runtime stopped a kernel (a runaway loop, an op it cannot run)."""


# -- per-launch and per-chunk state --------------------------------------------------------------
@dataclass(slots=True)
class LaunchState:
    kernel: str
    count: tuple[int, int, int]
    cube_dim: tuple[int, int, int]
    mems: list[Mem]
    scalars: dict[str, list[Any]]
    oob: str = "zero"
    plane_size: int = 32
    launch_seq: int = 0
    reports: list[OobAccess] = field(default_factory=list)
    reports_total: int = 0
    prints: list[str] = field(default_factory=list)
    prints_total: int = 0
    tracer: Tracer | None = None
    definition: KernelDefinition | None = None
    max_iterations: int = MAX_LOOP_ITERATIONS  # per loop execution, then KernelRuntimeError


class Ctx:
    """One chunk of whole cubes being run: its lanes, its values, its shared memory.

    A *compacted* context (`Ctx.sub`) runs a branch that only a few lanes take on those lanes
    alone: `sel` picks them out of the parent's lanes, every per-lane array inside has one row
    per selected lane, and the builtins are the parent's, selected. Its lanes are not
    contiguous, so the slice fast paths are off inside it.
    """

    __slots__ = ("env", "launch", "cube0", "ncubes", "U", "start", "n", "_cache", "parent",
                 "sel", "contiguous", "nrows")

    def __init__(self, nvals: int, launch: LaunchState, cube0: int, ncubes: int) -> None:
        self.env: list[Any] = [None] * nvals
        self.launch = launch
        self.cube0 = cube0
        self.ncubes = ncubes
        dx, dy, dz = launch.cube_dim
        self.U = dx * dy * dz
        self.start = cube0 * self.U
        self.n = ncubes * self.U
        self._cache: dict[str, np.ndarray] = {}
        self.parent: Ctx | None = None
        self.sel: np.ndarray | None = None
        self.contiguous = True
        self.nrows = self.n  # rows of per-lane storage (local arrays) in this chunk

    @staticmethod
    def sub(parent: "Ctx", sel: np.ndarray) -> "Ctx":
        c = Ctx.__new__(Ctx)
        c.env = [None] * len(parent.env)
        c.launch, c.cube0, c.ncubes, c.U = parent.launch, parent.cube0, parent.ncubes, parent.U
        c.start = parent.start
        c.n = len(sel)
        c._cache = {}
        c.parent, c.sel, c.contiguous, c.nrows = parent, sel, False, parent.nrows
        return c

    def _derived(self, key: str) -> np.ndarray | None:
        if self.parent is None:
            return None
        a = self._cache.get(key)
        if a is None:
            a = getattr(self.parent, key)()[self.sel]
            self._cache[key] = a
        return a

    def lanes(self) -> np.ndarray:
        """ABSOLUTE_POS of every lane (u32)."""
        a = self._cache.get("lanes")
        if a is None:
            a = self._derived("lanes")
            if a is None:
                a = np.arange(self.start, self.start + self.n, dtype=np.uint32)
                self._cache["lanes"] = a
        return a

    def unit_index(self) -> np.ndarray:
        a = self._cache.get("unit_index")
        if a is None:
            a = self._derived("unit_index")
            if a is None:
                a = np.tile(np.arange(self.U, dtype=np.uint32), self.ncubes)
                self._cache["unit_index"] = a
        return a

    def cube_local(self) -> np.ndarray:
        a = self._cache.get("cube_local")
        if a is None:
            a = self._derived("cube_local")
            if a is None:
                a = np.repeat(np.arange(self.ncubes, dtype=np.intp), self.U)
                self._cache["cube_local"] = a
        return a

    def cube_linear(self) -> np.ndarray:
        return self.cube_local().astype(np.uint32) + np.uint32(self.cube0)

    def local_rows(self) -> np.ndarray:
        a = self._cache.get("local_rows")
        if a is None:
            a = self._derived("local_rows")
            if a is None:
                a = np.arange(self.n, dtype=np.intp)
                self._cache["local_rows"] = a
        return a

    def abs_lane(self, li: int) -> int:
        """The linear position in the dispatch of local lane `li`."""
        return self.start + li if self.parent is None else int(self.lanes()[li])

    def find_lane(self, unit: int) -> int | None:
        """The local lane of linear position `unit`, if it runs in this context."""
        if self.parent is None:
            li = unit - self.start
            return li if 0 <= li < self.n else None
        lanes = self.lanes()
        i = int(np.searchsorted(lanes, unit))
        return i if i < len(lanes) and int(lanes[i]) == unit else None

    def coords(self, li: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(cube xyz, unit xyz) of local lane `li`."""
        if self.parent is not None:
            return self.parent.coords(int(self.sel[li]))  # type: ignore[index]
        cx, cy, _ = self.launch.count
        dx, dy, _ = self.launch.cube_dim
        c = self.cube0 + li // self.U
        u = li % self.U
        return (c % cx, (c // cx) % cy, c // (cx * cy)), (u % dx, (u // dx) % dy, u // (dx * dy))


# -- mask algebra: None = every lane of the chunk, else a bool array with at least one True ------
class _Dead:
    def __repr__(self) -> str:
        return "DEAD"


DEAD: Any = _Dead()


def m_and(mask: Any, cond: np.ndarray) -> Any:
    if cond.shape[0] == 1:
        return mask if bool(cond[0]) else DEAD
    if mask is None:
        if cond.all():
            return None
        if not cond.any():
            return DEAD
        return cond
    m = mask & cond
    if not m.any():
        return DEAD
    return m


def lane_mask(mask: Any, n: int) -> np.ndarray:
    return np.ones(n, dtype=bool) if mask is None else mask


def full(x: np.ndarray, n: int) -> np.ndarray:
    """`x` with one row per lane (a broadcast view for uniform values)."""
    if x.shape[0] == n:
        return x
    return np.broadcast_to(x, (n,) + x.shape[1:])


def _row_mask(mask: np.ndarray, ndim: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (ndim - 1)) if ndim > 1 else mask


# -- symbolic "is this ABSOLUTE_POS?" analysis --------------------------------------------------
Poly = dict[tuple[str, ...], int]


def _padd(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}


def _pmul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            k = tuple(sorted(ka + kb))
            out[k] = out.get(k, 0) + va * vb
    return {k: v for k, v in out.items() if v}


_SYM = {"workgroup_id_x": "W0", "workgroup_id_y": "W1", "workgroup_id_z": "W2",
        "num_workgroups_x": "N0", "num_workgroups_y": "N1", "num_workgroups_z": "N2",
        "local_invocation_index": "U"}


def lane_mins(definition: KernelDefinition, lanes: set[int]) -> dict[int, int]:
    """`min(ABSOLUTE_POS, bound)` values (what CheckedIo makes of `x[ABSOLUTE_POS]`): id -> the
    bound's id. Where the bound covers the chunk, the index is the lane number again."""
    out: dict[int, int] = {}
    for op in definition.walk():
        if op.name == "arith.min" and op.results[0].type == Ty(Elem.U32):
            a, b = op.operands
            if a.id in lanes:
                out[op.result.id] = b.id
            elif b.id in lanes:
                out[op.result.id] = a.id
    return out


def lane_values(definition: KernelDefinition) -> set[int]:
    """Ids of u32 values provably equal to the lane's linear position (ABSOLUTE_POS): lanes are
    laid out cube-major, so ((W2*N1 + W1)*N0 + W0)*D + U is exactly the lane number."""
    d = definition.cube_dim[0] * definition.cube_dim[1] * definition.cube_dim[2]
    w: dict[str, Poly] = {k: {(k,): 1} for k in ("W0", "W1", "W2", "N0", "N1", "U")}
    cube = _padd(_pmul(_padd(_pmul(w["W2"], w["N1"]), w["W1"]), w["N0"]), w["W0"])
    lane = _padd(_pmul(cube, {(): d}), w["U"])
    polys: dict[int, Poly] = {}
    found: set[int] = set()
    for op in definition.walk():
        if not op.results or op.results[0].type != Ty(Elem.U32):
            continue
        r = op.results[0].id
        p: Poly | None = None
        if op.name == "builtin.read" and op.attrs.get("name") in _SYM:
            p = {(_SYM[op.attrs["name"]],): 1}
        elif op.name == "arith.constant":
            p = {(): int(op.attrs["value"])} if int(op.attrs["value"]) else {}
        elif op.name in ("arith.add", "arith.mul"):
            a, b = (polys.get(o.id) for o in op.operands)
            if a is not None and b is not None:
                p = _padd(a, b) if op.name == "arith.add" else _pmul(a, b)
        if p is not None:
            polys[r] = p
            if p == lane:
                found.add(r)
    return found


# -- the plan builder --------------------------------------------------------------------------
_PURE_PREFIX = ("arith.", "math.", "vector.", "builtin.", "info.", "buffer.", "tensor.")
_EFFECTS = {"memory.store", "sync.cube", "sync.storage", "atomic.store", "atomic.rmw",
            "atomic.cas", "scf.if", "scf.for", "scf.while", "scf.condition", "debug.print",
            "var.declare", "shared.declare", "memory.load", "atomic.load", "plane.broadcast",
            "plane.reduce", "plane.vote", "plane.elect"}


class _Ref:
    """A value id standing in for an operand (liveness only)."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id


def _is_pure(op: Op) -> bool:
    return op.name not in _EFFECTS and op.name.startswith(_PURE_PREFIX) or op.name == \
        "memory.index"


class Plan:
    """An executable form of one KernelDefinition (one KernelId)."""

    def __init__(self, definition: KernelDefinition, traced: bool = False) -> None:
        self.definition = definition
        self.traced = traced
        top = 0
        for b in definition.buffers:
            top = max(top, b.value.id)
        for op in definition.walk():
            for v in op.results:
                top = max(top, v.id)
            for reg in op.regions:
                for a in reg.args:
                    top = max(top, a.id)
        self.nvals = top + 1
        self._buffer_ids = {b.value.id for b in definition.buffers}
        self._buffer_list = [b.value.id for b in definition.buffers]
        self.uniform_ids: set[int] = set()
        self.lane_ids = lane_values(definition)
        self.lane_min = lane_mins(definition, self.lane_ids)
        self.unit_ids = {op.results[0].id for op in definition.walk()
                         if op.name == "builtin.read"
                         and op.attrs.get("name") == "local_invocation_index"}
        self.needed = self._liveness() if not traced else None
        self.used_results = {o.id for op in definition.walk() for o in op.operands}
        self.written = self._written_buffers()
        self.view_loads = self._view_loads()
        self.shared_bytes = 0
        # Values that are the same for every unit of a launch and depend only on its scalars,
        # lengths and grid (constants, `x.len() - 1`, `Vector.new(a)`, ...) are computed once per
        # distinct launch signature and reused, instead of once per chunk: on a small launch
        # they are half of the steps. (The traced plan keeps them as steps, to show them.)
        self.uniform_ops = self._uniform_ops() if not traced else []
        self.uniform_ids = {op.results[0].id for op in self.uniform_ops}
        self._uniform_steps = tuple(self._op(op, 0) for op in self.uniform_ops)
        self._uniform_cache: dict[Any, list[tuple[int, Any]]] = {}
        self.body = self._block(definition.body, 0)
        from cubelab.runtime.properties import DeviceProperties

        limit = DeviceProperties().max_shared_memory
        if self.shared_bytes > limit:
            raise CubeError(
                f"kernel `{definition.name}` declares {self.shared_bytes} bytes of shared memory; "
                f"the device allows {limit} (16 KiB, WebGPU's default)")

    # -- analyses ------------------------------------------------------------------------------
    def _liveness(self) -> set[int]:
        needed: set[int] = set()
        ops = list(self.definition.walk())
        changed = True
        while changed:
            changed = False
            for op in ops:
                live = not _is_pure(op) or any(r.id in needed for r in op.results)
                if not live:
                    continue
                if op.results and op.results[0].id in self.lane_ids:
                    continue  # computed from the lane number directly, operands not needed
                operands: list[Value | _Ref] = list(op.operands)
                if op.name == "memory.index" and operands[1].id in self.lane_min:
                    # the index step clamps the lane number itself when it must
                    operands[1] = _Ref(self.lane_min[operands[1].id])
                for o in operands:
                    if o.id not in needed:
                        needed.add(o.id)
                        changed = True
        return needed

    def _uniform_ops(self) -> list[Op]:
        uniform: set[int] = set()
        out: list[Op] = []
        for op in self.definition.walk():
            if len(op.results) != 1 or op.regions or not isinstance(op.results[0].type, Ty):
                continue
            r = op.results[0].id
            if self.needed is not None and r not in self.needed:
                continue
            name = op.name
            if name in ("arith.constant", "info.scalar", "buffer.len", "tensor.rank") or (
                    name == "builtin.read" and (op.attrs.get("name", "").startswith(
                        "num_workgroups_") or op.attrs.get("name") == "subgroup_size")):
                ok = all(o.id in uniform or o.id in self._buffer_ids for o in op.operands)
            elif name.startswith(("arith.", "math.", "vector.")) and r not in self.lane_ids:
                ok = bool(op.operands) and all(o.id in uniform for o in op.operands)
            else:
                ok = False
            if ok:
                uniform.add(r)
                out.append(op)
        return out

    def _uniform_values(self, launch: LaunchState) -> list[tuple[int, Any]]:
        key = (launch.count, launch.plane_size, tuple(m.length for m in launch.mems),
               tuple((k, tuple(v)) for k, v in launch.scalars.items()),
               tuple((m.shape, m.strides) for m in launch.mems if m.shape))
        found = self._uniform_cache.get(key)
        if found is not None:
            return found
        ctx = Ctx(self.nvals, launch, 0, 1)
        for b, mem in zip(self.definition.buffers, launch.mems):
            ctx.env[b.value.id] = mem
        for step in self._uniform_steps:
            step(ctx, None)
        values = [(op.results[0].id, ctx.env[op.results[0].id]) for op in self.uniform_ops]
        if len(self._uniform_cache) > 1024:
            self._uniform_cache.clear()
        self._uniform_cache[key] = values
        return values

    def _written_buffers(self) -> set[int]:
        """Binding indices of buffers this kernel stores to (or updates atomically)."""
        origin: dict[int, int] = {b.value.id: b.index for b in self.definition.buffers}
        written: set[int] = set()
        for op in self.definition.walk():
            if op.name == "memory.index" and op.operands[0].id in origin:
                origin[op.result.id] = origin[op.operands[0].id]
            if op.name in ("memory.store", "atomic.store", "atomic.rmw", "atomic.cas"):
                b = origin.get(op.operands[0].id)
                if b is not None:
                    written.add(b)
        return written

    def _view_loads(self) -> set[int]:
        """Loads of a *written* buffer that may still return a view of its memory (by id(op)):
        every use of the value (and of views of it) comes before the first op of the same
        block that writes that buffer, and the value never lands in a local variable. saxpy's
        `y[i]` is one: read, added, and only then stored. Saves a copy per load."""
        origin: dict[int, int] = {b.value.id: b.index for b in self.definition.buffers}
        producer: dict[int, Op] = {}
        where: dict[int, tuple[Block, int]] = {}  # id(op) -> (its block, its index there)
        parent: dict[int, Op] = {}  # id(op) -> the op whose region holds it

        def index_block(block: Block, owner: Op | None) -> None:
            for i, op in enumerate(block.ops):
                where[id(op)] = (block, i)
                if owner is not None:
                    parent[id(op)] = owner
                for r in op.results:
                    producer[r.id] = op
                for reg in op.regions:
                    index_block(reg, op)

        index_block(self.definition.body, None)
        ops = list(self.definition.walk())
        for op in ops:
            if op.name == "memory.index" and op.operands[0].id in origin:
                origin[op.result.id] = origin[op.operands[0].id]

        def writes(op: Op, b: int) -> bool:
            return any(o.name in ("memory.store", "atomic.store", "atomic.rmw", "atomic.cas")
                       and origin.get(o.operands[0].id) == b for o in op.walk())

        def position_in(op: Op, block: Block) -> int | None:
            cur: Op | None = op
            while cur is not None:
                blk, i = where[id(cur)]
                if blk is block:
                    return i
                cur = parent.get(id(cur))
            return None

        safe: set[int] = set()
        for load in ops:
            if load.name != "memory.load":
                continue
            b = origin.get(load.operands[0].id)
            if b is None or b not in self.written:
                continue
            block, i = where[id(load)]
            alias = {load.result.id}
            uses: list[Op] = []
            ok = True
            for op in ops:
                if not any(o.id in alias for o in op.operands):
                    continue
                uses.append(op)
                if op.name in ("vector.extract", "vector.splat", "arith.cast") and op.results:
                    alias.add(op.result.id)
                if op.name == "memory.store" and op.operands[1].id in alias:
                    ptr = producer.get(op.operands[0].id)
                    if ptr is None or ptr.name != "memory.index":
                        ok = False  # into a local variable: it would outlive the buffer's data
            if not ok:
                continue
            first_write = next((k for k in range(i + 1, len(block.ops))
                                if writes(block.ops[k], b)), len(block.ops))
            last_use = max((position_in(u, block) or len(block.ops) for u in uses), default=i)
            if last_use < first_write:
                safe.add(id(load))
        return safe

    # -- blocks ----------------------------------------------------------------------------------
    def _block(self, block: Block, depth: int) -> Callable[["Ctx", Any], None]:
        steps: list[Step] = []
        for op in block.ops:
            if self.needed is not None and _is_pure(op) and op.results and \
                    op.results[0].id not in self.needed:
                continue
            if op.results and op.results[0].id in self.uniform_ids:
                continue
            step = self._op(op, depth)
            if self.traced and op.name not in ("scf.if", "scf.for", "scf.while",
                                                "scf.condition"):
                role = "ABSOLUTE_POS" if op.results and op.results[0].id in self.lane_ids \
                    else ""
                step = _traced(step, op, depth, role)
            steps.append(step)
        steps_t = tuple(steps)

        def run(ctx: Ctx, mask: Any) -> None:
            for s in steps_t:
                s(ctx, mask)

        return run

    def _op(self, op: Op, depth: int) -> Step:
        if op.results and op.results[0].id in self.lane_ids:
            r = op.results[0].id

            def lane_step(ctx: Ctx, mask: Any) -> None:
                ctx.env[r] = ctx.lanes()

            return lane_step
        builder = BUILDERS.get(op.name)
        if builder is None:
            raise KernelRuntimeError(
                f"the CPU runtime does not implement op {op.name!r} (kernel "
                f"`{self.definition.name}`)")
        return builder(self, op, depth)

    # -- running -------------------------------------------------------------------------------
    def run(self, launch: LaunchState) -> None:
        cx, cy, cz = launch.count
        total = cx * cy * cz
        dx, dy, dz = launch.cube_dim
        units = dx * dy * dz
        per_chunk = max(1, CHUNK_LANES // units)
        if launch.tracer is not None:
            launch.tracer.bind(self.definition)
        # Wrap-around and float overflow are WGSL semantics, not accidents: the CPU server turns
        # numpy's warnings off once on its device thread (errstate here would cost ~2 µs a run).
        bound = list(zip(self._buffer_list, launch.mems))
        bound += self._uniform_values(launch) if self.uniform_ops else []
        for c0 in range(0, total, per_chunk):
            ctx = Ctx(self.nvals, launch, c0, min(per_chunk, total - c0))
            env = ctx.env
            for vid, val in bound:
                env[vid] = val
            self.body(ctx, None)


def _traced(step: Step, op: Op, depth: int, role: str = "") -> Step:
    is_store = op.name in ("memory.store", "atomic.store")

    def run(ctx: Ctx, mask: Any) -> None:
        step(ctx, mask)
        tracer = ctx.launch.tracer
        if tracer is not None:
            if is_store:
                tracer.record(op, depth, ctx, mask, ctx.env[op.operands[1].id], True)
            else:
                tracer.record(op, depth, ctx, mask, note=role)

    return run


# -- op builders -------------------------------------------------------------------------------
Builder = Callable[[Plan, Op, int], Step]
BUILDERS: dict[str, Builder] = {}


def builder(*names: str) -> Callable[[Builder], Builder]:
    def reg(fn: Builder) -> Builder:
        for n in names:
            BUILDERS[n] = fn
        return fn

    return reg


def _ty(v: Value) -> Ty:
    t = v.type
    if isinstance(t, Atomic):
        return t.value_ty
    assert isinstance(t, Ty), t
    return t


_NP_BIN = {"arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply,
           "arith.bitand": np.bitwise_and, "arith.bitor": np.bitwise_or,
           "arith.bitxor": np.bitwise_xor, "arith.and": np.logical_and,
           "arith.or": np.logical_or}


@builder(*_NP_BIN)
def _b_bin(plan: Plan, op: Op, depth: int) -> Step:
    f = _NP_BIN[op.name]
    a, b = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], env[b])

    return step


@builder("arith.min", "arith.max")
def _b_minmax(plan: Plan, op: Op, depth: int) -> Step:
    fl = _ty(op.result).elem is Elem.F32
    f = {("arith.min", True): np.fmin, ("arith.max", True): np.fmax,
         ("arith.min", False): np.minimum, ("arith.max", False): np.maximum}[(op.name, fl)]
    a, b = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], env[b])

    return step


@builder("arith.div", "arith.rem")
def _b_divrem(plan: Plan, op: Op, depth: int) -> Step:
    elem = _ty(op.result).elem
    a, b = (o.id for o in op.operands)
    r = op.result.id
    if elem is Elem.F32:
        f: Callable[[Any, Any], Any] = np.divide if op.name == "arith.div" else np.fmod
    else:
        g = sem.int_div if op.name == "arith.div" else sem.int_rem

        def f(x: Any, y: Any) -> Any:
            return g(x, y, elem)

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], env[b])

    return step


@builder("arith.shl", "arith.shr")
def _b_shift(plan: Plan, op: Op, depth: int) -> Step:
    f = np.left_shift if op.name == "arith.shl" else np.right_shift
    dt = sem.dtype_of(_ty(op.result))
    a, b = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], sem.shift_amount(env[b]).astype(dt))

    return step


_PRED = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
         "eq": np.equal, "ne": np.not_equal}


@builder("arith.cmp")
def _b_cmp(plan: Plan, op: Op, depth: int) -> Step:
    f = _PRED[op.attrs["pred"]]
    a, b = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], env[b])

    return step


_NP_UN = {"arith.not": np.logical_not, "arith.neg": np.negative, "arith.bitnot": np.invert}


@builder(*_NP_UN)
def _b_un(plan: Plan, op: Op, depth: int) -> Step:
    f = _NP_UN[op.name]
    (a,) = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = f(ctx.env[a])

    return step


@builder("arith.constant")
def _b_const(plan: Plan, op: Op, depth: int) -> Step:
    value = sem.constant(op.attrs["value"], _ty(op.result))
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = value

    return step


@builder("arith.cast")
def _b_cast(plan: Plan, op: Op, depth: int) -> Step:
    src, dst = _ty(op.operands[0]), _ty(op.result)
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = sem.cast(ctx.env[a], src, dst)

    return step


@builder("arith.select")
def _b_select(plan: Plan, op: Op, depth: int) -> Step:
    c, a, b = (o.id for o in op.operands)
    widen = _ty(op.operands[0]).width == 1 and _ty(op.result).width > 1
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        cond = env[c]
        if widen:
            cond = cond[:, None]
        env[r] = np.where(cond, env[a], env[b])

    return step


@builder("math.unary")
def _b_math1(plan: Plan, op: Op, depth: int) -> Step:
    fn = op.attrs["fn"]
    f = sem.MATH.get(fn)
    if f is None:
        raise KernelRuntimeError(f"math function {fn!r} has no CPU implementation")
    a, r = op.operands[0].id, op.result.id
    dt = sem.dtype_of(_ty(op.result))

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.asarray(f(ctx.env[a])).astype(dt, copy=False)

    return step


@builder("math.binary")
def _b_math2(plan: Plan, op: Op, depth: int) -> Step:
    fn = op.attrs["fn"]
    a, b = (o.id for o in op.operands)
    r = op.result.id
    f: Any
    if fn == "pow":
        def f(x: Any, y: Any) -> Any:
            return np.where(x < 0, np.float32(np.nan), np.power(x, y))
    elif fn == "atan2":
        f = np.arctan2
    elif fn in ("min", "max"):
        f = np.fmin if fn == "min" else np.fmax
    else:
        raise KernelRuntimeError(f"math function {fn!r} has no CPU implementation")
    dt = sem.dtype_of(_ty(op.result))

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = np.asarray(f(env[a], env[b])).astype(dt, copy=False)

    return step


@builder("math.fma")
def _b_fma(plan: Plan, op: Op, depth: int) -> Step:
    a, b, c = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = env[a] * env[b] + env[c]

    return step


@builder("vector.splat")
def _b_splat(plan: Plan, op: Op, depth: int) -> Step:
    w = _ty(op.result).width
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        x = ctx.env[a]
        ctx.env[r] = np.broadcast_to(x[:, None], (x.shape[0], w))

    return step


@builder("vector.extract")
def _b_extract(plan: Plan, op: Op, depth: int) -> Step:
    i = int(op.attrs["index"])
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = ctx.env[a][:, i]

    return step


@builder("builtin.read")
def _b_builtin(plan: Plan, op: Op, depth: int) -> Step:
    name = op.attrs["name"]
    r = op.result.id
    dx, dy, _ = plan.definition.cube_dim

    def compute(ctx: Ctx) -> np.ndarray:
        cx, cy, cz = ctx.launch.count
        u32 = np.uint32
        if name == "local_invocation_index":
            return ctx.unit_index()
        if name.startswith("num_workgroups_"):
            return np.array([{"x": cx, "y": cy, "z": cz}[name[-1]]], dtype=u32)
        if name.startswith("workgroup_id_"):
            c = ctx.cube_linear()
            axis = name[-1]
            if axis == "x":
                return c % u32(cx)
            if axis == "y":
                return (c // u32(cx)) % u32(cy)
            return c // u32(cx * cy)
        if name.startswith("local_invocation_id_"):
            u = ctx.unit_index()
            axis = name[-1]
            if axis == "x":
                return u % u32(dx)
            if axis == "y":
                return (u // u32(dx)) % u32(dy)
            return u // u32(dx * dy)
        if name == "subgroup_size":
            return np.array([_plane_size(ctx)], dtype=u32)
        if name == "subgroup_invocation_id":
            return ctx.unit_index() % u32(_plane_size(ctx))
        raise KernelRuntimeError(f"unknown builtin {name!r}")

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = compute(ctx)

    return step


@builder("info.scalar")
def _b_scalar(plan: Plan, op: Op, depth: int) -> Step:
    elem, idx = op.attrs["elem"], int(op.attrs["index"])
    ty = _ty(op.result)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = sem.constant(ctx.launch.scalars[elem][idx], ty)

    return step


@builder("buffer.len")
def _b_len(plan: Plan, op: Op, depth: int) -> Step:
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.array([ctx.env[a].length], dtype=np.uint32)

    return step


@builder("tensor.rank", "tensor.shape", "tensor.stride")
def _b_tensor(plan: Plan, op: Op, depth: int) -> Step:
    t = op.operands[0].id
    axis = op.operands[1].id if len(op.operands) > 1 else None
    r = op.result.id
    which = op.name

    def step(ctx: Ctx, mask: Any) -> None:
        mem: Mem = ctx.env[t]
        if which == "tensor.rank":
            ctx.env[r] = np.array([len(mem.shape)], dtype=np.uint32)
            return
        dims = mem.shape if which == "tensor.shape" else mem.strides
        table = np.array(list(dims) + [0], dtype=np.uint32)
        ax = ctx.env[axis]  # type: ignore[index]
        ctx.env[r] = table[np.minimum(ax, len(dims))]

    return step


# -- memory ------------------------------------------------------------------------------------
@builder("var.declare")
def _b_var(plan: Plan, op: Op, depth: int) -> Step:
    ptr = op.result.type
    assert isinstance(ptr, Pointer)
    pointee = ptr.pointee
    r = op.result.id
    name = op.result.hint or op.result.name
    if isinstance(pointee, Array):
        item = pointee.item
        ity = item.value_ty if isinstance(item, Atomic) else item
        shape = (pointee.length,) + ((ity.width,) if ity.width > 1 else ())
        dt = sem.dtype_of(ity)
        length = pointee.length

        def step_arr(ctx: Ctx, mask: Any) -> None:
            ctx.env[r] = Mem(name, np.zeros((ctx.nrows,) + shape, dtype=dt), length, "local")

        return step_arr
    assert isinstance(pointee, Ty)
    zero = sem.constant(0, pointee)

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = LocalSlot(name, zero)

    return step


@builder("shared.declare")
def _b_shared(plan: Plan, op: Op, depth: int) -> Step:
    ptr = op.result.type
    assert isinstance(ptr, Pointer) and isinstance(ptr.pointee, Array)
    arr = ptr.pointee
    item = arr.item
    ity = item.value_ty if isinstance(item, Atomic) else item
    shape = (arr.length,) + ((ity.width,) if ity.width > 1 else ())
    plan.shared_bytes += arr.length * ity.size
    dt = sem.dtype_of(ity)
    r = op.result.id
    name = str(op.attrs.get("name") or op.result.hint or op.result.name)
    length = arr.length

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = Mem(name, np.zeros((ctx.ncubes,) + shape, dtype=dt), length, "shared")

    return step


def _rows(ctx: Ctx, mem: Mem) -> np.ndarray | None:
    """For shared/local memory: the flat offset of each lane's row (row * length)."""
    if mem.kind == "global":
        return None
    key = f"{mem.kind}:{mem.length}"
    a = ctx._cache.get(key)
    if a is None:
        rows = ctx.cube_local() if mem.kind == "shared" else ctx.local_rows()
        a = rows * mem.length
        ctx._cache[key] = a
    return a


def _flat(mem: Mem) -> np.ndarray:
    return mem.store.reshape((-1,) + mem.item_shape)


def _unit_view(ctx: Ctx, mem: Mem) -> np.ndarray:
    """Shared memory seen as one slot per lane (row = the lane's cube, item = its UNIT_POS)."""
    return mem.store[:, : ctx.U]


@builder("memory.index")
def _b_index(plan: Plan, op: Op, depth: int) -> Step:
    base, idx = (o.id for o in op.operands)
    lane_index = idx in plan.lane_ids
    unit_index = idx in plan.unit_ids
    bound = plan.lane_min.get(idx)
    # the min step itself is dropped from the plain plan when only indices use it
    min_computed = plan.needed is None or idx in plan.needed
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        mem = env[base]
        if not isinstance(mem, Mem):
            raise KernelRuntimeError("memory.index on something that is not an array")
        length = mem.length
        if lane_index and mem.kind == "global" and ctx.contiguous:
            s = ctx.start
            if s + ctx.n <= length:
                env[r] = Ptr(mem, None, None, start=s, stop=s + ctx.n)
                return
            index = ctx.lanes()
        elif unit_index and mem.kind == "shared" and ctx.U <= length and ctx.contiguous:
            env[r] = Ptr(mem, None, env[idx], unit=True)
            return
        elif bound is not None:
            s = ctx.start
            b = env[bound]
            if mem.kind == "global" and ctx.contiguous and b.shape[0] == 1 and \
                    s + ctx.n - 1 <= int(b[0]) and s + ctx.n <= length:
                env[r] = Ptr(mem, None, None, start=s, stop=s + ctx.n)
                return
            index = env[idx] if min_computed else np.minimum(ctx.lanes(), b)
        else:
            index = env[idx]
        if index.dtype.kind == "i":
            bad = (index < 0) | (index >= length)
        else:
            bad = index >= length
        if not bad.any():
            env[r] = Ptr(mem, index, index)
            return
        safe = np.where(bad, 0, index).astype(np.intp)
        active = full(bad, ctx.n) if mask is None else full(bad, ctx.n) & mask
        if not active.any():
            env[r] = Ptr(mem, safe, index)
            return
        mode = ctx.launch.oob
        if mode == "clamp" and length > 0:
            env[r] = Ptr(mem, np.where(active, length - 1, full(safe, ctx.n)), index)
            return
        env[r] = Ptr(mem, safe, index, bad=bad, report=active if mode == "report" else None)

    return step


def _report(ctx: Ctx, op: Op, p: Ptr, write: bool) -> None:
    launch = ctx.launch
    lanes = np.nonzero(p.report)[0]
    launch.reports_total += len(lanes)
    room = REPORT_LIMIT - len(launch.reports)
    if room <= 0:
        return
    orig = full(p.orig, ctx.n)
    loc = op.loc
    source = ""
    plan_def = launch.definition
    if loc is not None and plan_def is not None:
        i = loc.line - plan_def.first_line
        if 0 <= i < len(plan_def.source_lines):
            source = plan_def.source_lines[i].strip()
    for li in lanes[:room]:
        li = int(li)
        cube, unit = ctx.coords(li)
        launch.reports.append(OobAccess(
            launch.kernel, p.mem.name, int(orig[li]), p.mem.length, unit, cube,
            ctx.abs_lane(li), write, str(loc) if loc else "?", loc.line if loc else 0, source))


def gather(ctx: Ctx, p: Ptr) -> np.ndarray:
    mem = p.mem
    if p.start is not None:
        v = mem.store[p.start:p.stop]
        return v if mem.view_ok else v.copy()
    if p.unit:
        return _unit_view(ctx, mem).copy().reshape((ctx.n,) + mem.item_shape)
    rows = _rows(ctx, mem)
    if rows is None:
        v = mem.store[p.index]
    else:
        v = np.take(_flat(mem), rows + full(p.index, ctx.n), axis=0)
    if p.bad is not None:
        bad = p.bad
        if bad.shape[0] != v.shape[0]:
            bad = full(bad, v.shape[0])
        v[bad] = 0
    return v


def scatter(ctx: Ctx, p: Ptr, value: np.ndarray, mask: Any) -> None:
    mem = p.mem
    if p.start is not None and mask is None:
        mem.store[p.start:p.stop] = value
        return
    n = ctx.n
    if p.unit:
        view = _unit_view(ctx, mem)
        val = full(value, n).reshape(view.shape)
        if mask is None:
            view[...] = val
        else:
            np.copyto(view, val, where=mask.reshape(view.shape[:2] + (1,) * (val.ndim - 2)))
        return
    index = ctx.lanes() if p.start is not None else p.index
    sel = mask
    if p.bad is not None:
        ok = ~full(p.bad, n)
        sel = ok if sel is None else sel & ok
    idx = full(index, n)
    val = full(value, n)
    rows = _rows(ctx, mem)
    if rows is not None:
        store = _flat(mem)
        idx = rows + idx
    else:
        store = mem.store
    if sel is None:
        store[idx] = val
    else:
        store[idx[sel]] = val[sel]


@builder("memory.load")
def _b_load(plan: Plan, op: Op, depth: int) -> Step:
    a, r = op.operands[0].id, op.result.id
    view = id(op) in plan.view_loads

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        if isinstance(p, LocalSlot):
            ctx.env[r] = p.arr
            return
        if p.report is not None:
            _report(ctx, op, p, False)
        if view and p.start is not None and not p.mem.aliased:
            ctx.env[r] = p.mem.store[p.start:p.stop]
            return
        ctx.env[r] = gather(ctx, p)

    return step


@builder("memory.store")
def _b_store(plan: Plan, op: Op, depth: int) -> Step:
    a, b = (o.id for o in op.operands)

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        value = ctx.env[b]
        if isinstance(p, LocalSlot):
            if mask is None:
                p.arr = value
            else:
                old, n = p.arr, ctx.n
                p.arr = np.where(_row_mask(mask, max(value.ndim, old.ndim)), full(value, n),
                                 full(old, n))
            return
        if p.report is not None:
            _report(ctx, op, p, True)
        scatter(ctx, p, value, mask)

    return step


# -- synchronisation ---------------------------------------------------------------------------
@builder("sync.cube", "sync.storage")
def _b_sync(plan: Plan, op: Op, depth: int) -> Step:
    kernel = plan.definition
    what = "sync_cube()" if op.name == "sync.cube" else "sync_storage()"

    def step(ctx: Ctx, mask: Any) -> None:
        if mask is None and ctx.contiguous:
            return
        cubes = ctx.cube_local() if mask is None else ctx.cube_local()[mask]
        per_cube = np.bincount(cubes, minlength=ctx.ncubes)
        partial = np.nonzero((per_cube > 0) & (per_cube < ctx.U))[0]
        if len(partial) == 0:
            return
        c = int(partial[0])
        units = ctx.unit_index() if mask is None else ctx.unit_index()[mask]
        reached = sorted(int(u) for u in units[cubes == c])
        missing = sorted(set(range(ctx.U)) - set(reached))
        li = int(np.nonzero(ctx.cube_local() == c)[0][0])
        cube, _ = ctx.coords(li)
        where = f" at line {op.loc.line}" if op.loc else ""
        line = ""
        if op.loc is not None:
            i = op.loc.line - kernel.first_line
            if 0 <= i < len(kernel.source_lines):
                line = f"\n    {kernel.source_lines[i].strip()}"

        def short(xs: list[int]) -> str:
            return ", ".join(map(str, xs[:8])) + (", ..." if len(xs) > 8 else "")

        raise DivergentBarrier(
            f"kernel `{kernel.name}`: {what}{where} was reached by only some units of cube "
            f"{cube}: units {short(reached)} reached it, units {short(missing)} did not "
            f"(they took another branch or left the loop earlier).{line}\n"
            "A barrier must be reached by every unit of the cube (uniform control flow); on a "
            "GPU this is undefined behaviour (a hang or garbage), so the CPU runtime stops "
            "here. Move the barrier out of the `if`/loop, and guard only the work around it.")

    return step


# -- atomics -----------------------------------------------------------------------------------
def _flat_addr(ctx: Ctx, p: Ptr) -> tuple[np.ndarray, np.ndarray]:
    """(flattened store, address per lane) of an atomic pointer."""
    mem = p.mem
    flat = mem.store.reshape(-1)
    if p.start is not None:
        idx = ctx.lanes().astype(np.intp)
    elif p.unit:
        idx = ctx.unit_index().astype(np.intp)
    else:
        idx = full(p.index, ctx.n)
    rows = _rows(ctx, mem)
    if rows is not None:
        idx = rows + idx
    return flat, idx.astype(np.intp)


def _active(ctx: Ctx, p: Ptr, mask: Any) -> np.ndarray | None:
    sel = mask
    if p.bad is not None:
        ok = ~full(p.bad, ctx.n)
        sel = ok if sel is None else sel & ok
    return sel


_AT = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
       "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _seg_scan(x: np.ndarray, seg: np.ndarray, f: Callable[[Any, Any], Any]) -> np.ndarray:
    """Inclusive scan of `x` with `f`, restarting where `seg` changes (Hillis-Steele)."""
    x = x.copy()
    d = 1
    n = len(x)
    while d < n:
        same = seg[d:] == seg[:-d]
        if not same.any():
            break
        upd = x[d:].copy()
        upd[same] = f(x[:-d][same], x[d:][same])
        x[d:] = upd
        d *= 2
    return x


def atomic_rmw(flat: np.ndarray, addr: np.ndarray, vals: np.ndarray, kind: str,
               want_old: bool) -> np.ndarray | None:
    """Apply one atomic op per lane (in lane order per address); return the old values."""
    if not want_old:
        if kind == "swap":
            flat[addr] = vals
        else:
            _AT[kind].at(flat, addr, vals)
        return None
    order = np.argsort(addr, kind="stable")
    a_s, v_s = addr[order], vals[order]
    f = (lambda x, y: y) if kind == "swap" else _AT[kind]
    if kind == "sub":
        f = np.add  # a running total of what was subtracted
    inc = _seg_scan(v_s, a_s, f)
    first = np.ones(len(a_s), dtype=bool)
    first[1:] = a_s[1:] != a_s[:-1]
    mem0 = flat[a_s]
    prev = np.empty_like(inc)
    prev[1:] = inc[:-1]
    apply = np.subtract if kind == "sub" else f
    old_s = np.where(first, mem0, apply(mem0, prev) if len(prev) else prev)
    last = np.ones(len(a_s), dtype=bool)
    last[:-1] = a_s[1:] != a_s[:-1]
    flat[a_s[last]] = apply(mem0[last], inc[last])
    old = np.empty_like(old_s)
    old[order] = old_s
    return old


@builder("atomic.load")
def _b_aload(plan: Plan, op: Op, depth: int) -> Step:
    return _b_load(plan, op, depth)


@builder("atomic.store")
def _b_astore(plan: Plan, op: Op, depth: int) -> Step:
    return _b_store(plan, op, depth)


@builder("atomic.rmw")
def _b_rmw(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, b = (o.id for o in op.operands)
    r = op.result.id if op.results else None
    want = r is not None and r in plan.used_results
    dt = sem.dtype_of(_ty(op.operands[1]))

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        if p.report is not None:
            _report(ctx, op, p, True)
        flat, addr = _flat_addr(ctx, p)
        vals = full(ctx.env[b], ctx.n).astype(dt, copy=False)
        sel = _active(ctx, p, mask)
        if sel is not None:
            old_sel = atomic_rmw(flat, addr[sel], vals[sel], kind, want)
            if r is not None:
                old = np.zeros(ctx.n, dtype=dt)
                if old_sel is not None:
                    old[sel] = old_sel
                ctx.env[r] = old
            return
        old_all = atomic_rmw(flat, addr, vals, kind, want)
        if r is not None:
            ctx.env[r] = old_all if old_all is not None else np.zeros(ctx.n, dtype=dt)

    return step


@builder("atomic.cas")
def _b_cas(plan: Plan, op: Op, depth: int) -> Step:
    a, e, nv = (o.id for o in op.operands)
    r = op.result.id
    dt = sem.dtype_of(_ty(op.operands[1]))

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        if p.report is not None:
            _report(ctx, op, p, True)
        flat, addr = _flat_addr(ctx, p)
        exp = full(ctx.env[e], ctx.n).astype(dt, copy=False)
        new = full(ctx.env[nv], ctx.n).astype(dt, copy=False)
        sel = _active(ctx, p, mask)
        lanes = np.arange(ctx.n) if sel is None else np.nonzero(sel)[0]
        old = np.zeros(ctx.n, dtype=dt)
        # lanes on one address run one after another, in lane order: round k serves the k-th
        # lane of every address (a serialisation a GPU may also pick)
        order = lanes[np.argsort(addr[lanes], kind="stable")]
        a_s = addr[order]
        first = np.ones(len(a_s), dtype=bool)
        first[1:] = a_s[1:] != a_s[:-1]
        start_of = np.maximum.accumulate(np.where(first, np.arange(len(a_s)), 0))
        rank = np.arange(len(a_s)) - start_of
        for k in range(int(rank.max()) + 1 if len(rank) else 0):
            ls = order[rank == k]
            ad = addr[ls]
            cur = flat[ad]
            old[ls] = cur
            hit = cur == exp[ls]
            flat[ad[hit]] = new[ls][hit]
        ctx.env[r] = old

    return step


# -- plane (subgroup) ops ----------------------------------------------------------------------
def _plane_size(ctx: Ctx) -> int:
    return min(ctx.launch.plane_size, ctx.U)


def _plane_ids(ctx: Ctx) -> tuple[np.ndarray, int]:
    p = _plane_size(ctx)
    per_cube = -(-ctx.U // p)
    ids = ctx.cube_local() * per_cube + (ctx.unit_index() // p).astype(np.intp)
    return ids, ctx.ncubes * per_cube


@builder("plane.reduce")
def _b_preduce(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, r = op.operands[0].id, op.result.id
    ty = _ty(op.result)
    dt = sem.dtype_of(ty)
    f = {"sum": np.add, "min": np.minimum, "max": np.maximum, "prod": np.multiply}[kind]
    if kind == "sum":
        ident: Any = 0
    elif kind == "prod":
        ident = 1
    elif ty.elem is Elem.F32:
        ident = np.inf if kind == "min" else -np.inf
    else:
        info = np.iinfo(dt)
        ident = info.max if kind == "min" else info.min

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        x = full(ctx.env[a], ctx.n)
        acc = np.full((nplanes,) + x.shape[1:], ident, dtype=dt)
        if mask is None:
            f.at(acc, ids, x)
        else:
            f.at(acc, ids[mask], x[mask])
        ctx.env[r] = acc[ids]

    return step


@builder("plane.vote")
def _b_pvote(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        x = full(ctx.env[a], ctx.n).astype(bool)
        act = lane_mask(mask, ctx.n)
        votes = np.bincount(ids[act & x], minlength=nplanes)
        members = np.bincount(ids[act], minlength=nplanes)
        res = votes == members if kind == "all" else votes > 0
        ctx.env[r] = res[ids]

    return step


@builder("plane.broadcast")
def _b_pbcast(plan: Plan, op: Op, depth: int) -> Step:
    a, lane, r = op.operands[0].id, op.operands[1].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        p = _plane_size(ctx)
        x = full(ctx.env[a], ctx.n)
        lanes = ctx.lanes().astype(np.int64)
        base = lanes - (ctx.unit_index() % np.uint32(p)).astype(np.int64)
        src = base + full(ctx.env[lane], ctx.n).astype(np.int64) % p
        pos = np.clip(np.searchsorted(lanes, src), 0, ctx.n - 1)
        # a source unit that is not running here is undefined in WGSL: it reads its own value
        pos = np.where(lanes[pos] == src, pos, np.arange(ctx.n))
        ctx.env[r] = x[pos]

    return step


@builder("plane.elect")
def _b_pelect(plan: Plan, op: Op, depth: int) -> Step:
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        act = lane_mask(mask, ctx.n)
        first = np.full(nplanes, ctx.n, dtype=np.intp)
        np.minimum.at(first, ids[act], ctx.local_rows()[act])
        ctx.env[r] = first[ids] == ctx.local_rows()

    return step


# -- control flow ------------------------------------------------------------------------------
def _free_ids(blocks: list[Block]) -> list[int]:
    """Ids used inside `blocks` but defined outside them (what a compacted branch must see)."""
    used: list[int] = []
    defined: set[int] = set()
    for block in blocks:
        defined.update(a.id for a in block.args)
        for op in block.walk():
            for reg in op.regions:
                defined.update(a.id for a in reg.args)
            defined.update(r.id for r in op.results)
            used.extend(o.id for o in op.operands)
    seen: set[int] = set()
    out = []
    for i in used:
        if i not in defined and i not in seen:
            seen.add(i)
            out.append(i)
    return out


# A branch taken by at most 1/COMPACT_RATIO of a chunk's lanes runs on those lanes alone.
COMPACT_RATIO = 4
COMPACT_MIN_LANES = 2048


def _compact(a: Any, sel: np.ndarray, n: int) -> Any:
    if isinstance(a, np.ndarray):
        return a[sel] if a.ndim and a.shape[0] == n and n > 1 else a
    return a


def run_compacted(ctx: Ctx, m: np.ndarray, free: list[int],
                  body: Callable[[Ctx, Any], None]) -> None:
    """Run `body` on the lanes of `m` only: compact what it reads, run, merge what it wrote to
    the locals back (everything else it writes goes to memory, which is shared)."""
    sel = np.nonzero(m)[0]
    n = ctx.n
    sub = Ctx.sub(ctx, sel)
    env = ctx.env
    # uniform values (hoisted out of the branch) stay as they are; per-lane ones are compacted
    senv = sub.env = list(env)
    slots: list[tuple[LocalSlot, LocalSlot, Any]] = []
    for i in free:
        v = env[i]
        if isinstance(v, np.ndarray):
            v = _compact(v, sel, n)
        elif isinstance(v, LocalSlot):
            proxy = LocalSlot(v.name, _compact(v.arr, sel, n))
            slots.append((v, proxy, proxy.arr))
            v = proxy
        elif isinstance(v, Ptr):
            if v.start is not None:
                idx = (ctx.lanes()[sel]).astype(np.intp)
                v = Ptr(v.mem, idx, idx)
            elif v.unit:
                idx = ctx.unit_index()[sel]
                v = Ptr(v.mem, idx, idx)
            else:
                v = Ptr(v.mem, _compact(v.index, sel, n), _compact(v.orig, sel, n),
                        None if v.bad is None else _compact(v.bad, sel, n),
                        None if v.report is None else _compact(v.report, sel, n))
        senv[i] = v
    body(sub, None)
    for slot, proxy, before in slots:
        if proxy.arr is not before:
            merged = np.array(full(slot.arr, n))
            merged[sel] = full(proxy.arr, len(sel))
            slot.arr = merged


def branch(ctx: Ctx, m: Any, body: Callable[[Ctx, Any], None], free: list[int]) -> None:
    """Run `body` under mask `m`, compacted to the active lanes when they are few."""
    if m is not None and ctx.n >= COMPACT_MIN_LANES:
        k = int(np.count_nonzero(m))
        if k * COMPACT_RATIO <= ctx.n:
            run_compacted(ctx, m, free, body)
            return
    body(ctx, m)


@builder("scf.if")
def _b_if(plan: Plan, op: Op, depth: int) -> Step:
    c = op.operands[0].id
    then = plan._block(op.regions[0], depth + 1)
    has_else = len(op.regions) > 1 and bool(op.regions[1].ops)
    orelse = plan._block(op.regions[1], depth + 1) if has_else else None
    free_then = _free_ids([op.regions[0]])
    free_else = _free_ids([op.regions[1]]) if has_else else []
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        cond = ctx.env[c]
        if traced and ctx.launch.tracer is not None:
            ctx.launch.tracer.record(op, depth, ctx, mask, cond, True)
        m = m_and(mask, cond)
        if m is not DEAD:
            branch(ctx, m, then, free_then)
        if orelse is not None:
            m = m_and(mask, np.logical_not(cond))
            if m is not DEAD:
                branch(ctx, m, orelse, free_else)

    return step


def _runaway(plan: Plan, op: Op, limit: int) -> KernelRuntimeError:
    where = f" (line {op.loc.line})" if op.loc else ""
    return KernelRuntimeError(
        f"kernel `{plan.definition.name}`: a loop{where} ran more than {limit} "
        "iterations; it looks infinite (on a GPU it would hang the device). Check its bounds "
        "and that its condition can become false.")


@builder("scf.for")
def _b_for(plan: Plan, op: Op, depth: int) -> Step:
    s, e, st = (o.id for o in op.operands)
    (body_block,) = op.regions
    (iv,) = body_block.args
    ivid = iv.id
    dt = sem.dtype_of(_ty(iv))
    body = plan._block(body_block, depth + 1)
    free = _free_ids([body_block]) + [ivid]  # the counter is set outside the body
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        start, end, stp = env[s], env[e], env[st]
        tracer = ctx.launch.tracer if traced else None
        if start.shape[0] == 1 and end.shape[0] == 1 and stp.shape[0] == 1:
            a, b, k = int(start[0]), int(end[0]), int(stp[0])
            if k <= 0 and a < b:
                raise _runaway(plan, op, ctx.launch.max_iterations)
            if (b - a) // max(k, 1) > ctx.launch.max_iterations:
                raise _runaway(plan, op, ctx.launch.max_iterations)
            for i in range(a, b, max(k, 1)):
                env[ivid] = np.array([i], dtype=dt)
                if tracer is not None:
                    tracer.record(op, depth, ctx, mask, env[ivid], True, f"iteration i = {i}")
                body(ctx, mask)
            return
        iv = full(start, ctx.n).copy()
        n = 0
        m = mask
        while True:
            # a unit that has left the loop stays out, even if its counter wraps around
            m = m_and(m, iv < end)
            if m is DEAD:
                return
            n += 1
            if n > ctx.launch.max_iterations:
                raise _runaway(plan, op, ctx.launch.max_iterations)
            env[ivid] = iv
            if tracer is not None:
                tracer.record(op, depth, ctx, m, iv, True, "iteration")
            branch(ctx, m, body, free)
            iv = iv + stp

    return step


@builder("scf.while")
def _b_while(plan: Plan, op: Op, depth: int) -> Step:
    before_block, after_block = op.regions
    cond_ops = [o for o in before_block.ops if o.name == "scf.condition"]
    if not cond_ops:
        raise KernelRuntimeError("scf.while without scf.condition in its first region")
    c = cond_ops[-1].operands[0].id
    before = plan._block(before_block, depth + 1)
    after = plan._block(after_block, depth + 1)
    # region 1 may run compacted; region 0 never is (its condition is read here, full width)
    free_after = _free_ids([after_block])
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        m = mask
        n = 0
        tracer = ctx.launch.tracer if traced else None
        while True:
            before(ctx, m)
            cond = ctx.env[c]
            if tracer is not None:
                tracer.record(op, depth, ctx, m, cond, True, "loop condition")
            m = m_and(m, cond)
            if m is DEAD:
                return
            n += 1
            if n > ctx.launch.max_iterations:
                raise _runaway(plan, op, ctx.launch.max_iterations)
            branch(ctx, m, after, free_after)

    return step


@builder("scf.condition")
def _b_condition(plan: Plan, op: Op, depth: int) -> Step:
    def step(ctx: Ctx, mask: Any) -> None:
        return None

    return step


# -- debug printing ----------------------------------------------------------------------------
@builder("debug.print")
def _b_print(plan: Plan, op: Op, depth: int) -> Step:
    fmt = str(op.attrs["format"])
    template = tuple(op.attrs.get("args", ()))
    ids = [o.id for o in op.operands]

    def step(ctx: Ctx, mask: Any) -> None:
        launch = ctx.launch
        lanes = np.arange(ctx.n) if mask is None else np.nonzero(mask)[0]
        launch.prints_total += len(lanes)
        room = PRINT_LIMIT - len(launch.prints)
        if room <= 0:
            return
        vals = [ctx.env[i] for i in ids]
        from cubelab.runtime.cpu.trace import value_at

        for li in lanes[:room]:
            li = int(li)
            it = iter(vals)
            args = [value_at(next(it), li) if t is None else t for t in template]
            args = [_fmt(x) for x in args]
            cube, unit = ctx.coords(li)
            try:
                text = fmt.format(*args)
            except (IndexError, KeyError, ValueError) as exc:
                text = f"{fmt!r} (format error: {exc})"
            launch.prints.append(f"[cube {cube} unit {unit} | pos {ctx.abs_lane(li)}] {text}")

    return step


class _Shown(float):
    """A float32 printed with the shortest digits that round-trip *as f32* (0.1, not
    0.10000000149011612)."""

    def __repr__(self) -> str:
        return str(np.float32(self))

    __str__ = __repr__


def _fmt(x: Any) -> Any:
    if isinstance(x, float):
        return _Shown(x)
    if isinstance(x, list):
        return "[" + ", ".join(str(_fmt(v)) for v in x) + "]"
    return x
