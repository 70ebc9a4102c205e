"""Lane state of a CPU launch: what one launch carries (`LaunchState`), one chunk of whole cubes
being run (`Ctx`), and the mask algebra every step shares.

A per-unit value is an array with one row per lane (`(n,)` or `(n, width)`); a value that is the
same for every lane is an array of one row, and numpy broadcasting does the rest. A mask is
`None` (every lane of the chunk), `DEAD` (no lane: the step is skipped), or a bool array with at
least one True — `m_and` keeps that invariant, so a step never runs on no lanes and never pays
for a mask when every lane is active.

The trap: a *compacted* context (`Ctx.sub`) has non-contiguous lanes; a step that takes a slice
fast path must check `ctx.contiguous` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cubelab.errors import CubeError
from cubelab.ir.core import KernelDefinition
from cubelab.runtime.cpu.memory import Mem, OobAccess
from cubelab.runtime.cpu.trace import Tracer

# Lanes per chunk, at most (`Plan._chunk_cubes`): 2^19 lanes make 2 MiB f32 arrays, which numpy
# still streams at L3 speed, while the interpreter's per-step cost (a few µs per op, per chunk)
# is paid an eighth as often as with 2^16 (measured on the tree reduction of 4 M floats: 2^16 ->
# 2^18 about 2x faster, 2^18 -> 2^19 another 0.74x the time; the stencil 0.94x).
CHUNK_LANES = 1 << 19
# One loop execution may run this many lockstep iterations on the CPU runtime (checked or not).
# An interpreted iteration costs a few microseconds, so 2^20 stops a runaway loop within seconds
# (10^7 kept a student's cell busy for half a minute) while a serial loop over 10^6 items runs.
MAX_LOOP_ITERATIONS = 1 << 20
REPORT_LIMIT = 1000
PRINT_LIMIT = 10_000


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
    recorder: Any = None  # an instrumented plan's `instruments.Recorder`
    scalar_key: tuple[Any, ...] = ()  # `Bindings.scalar_key()`: the scalars as a cache key
    # (first cube, end) runs of linear cube positions to run, in order; None: every cube. Only
    # a counting launch (a roofline's sample, on copies of the buffers) runs fewer.
    cube_runs: tuple[tuple[int, int], ...] | None = None


class Ctx:
    """One chunk of whole cubes being run: its lanes, its values, its shared memory.

    A *compacted* context (`Ctx.sub`) runs a branch that only a few lanes take on those lanes
    alone: `sel` picks them out of the parent's lanes, every per-lane array inside has one row
    per selected lane, and the builtins are the parent's, selected. Its lanes are not
    contiguous, so the slice fast paths are off inside it.
    """

    __slots__ = ("env", "launch", "cube0", "ncubes", "U", "start", "n", "_cache", "_static",
                 "parent", "sel", "contiguous", "nrows", "per_cube")

    def __init__(self, nvals: int, launch: LaunchState, cube0: int, ncubes: int,
                 static: dict[str, np.ndarray] | None = None) -> None:
        self.env: list[Any] = [None] * nvals
        self.launch = launch
        self.cube0 = cube0
        self.ncubes = ncubes
        dx, dy, dz = launch.cube_dim
        self.U = dx * dy * dz
        self.start = cube0 * self.U
        self.n = ncubes * self.U
        self._cache: dict[str, np.ndarray] = {}
        # arrays that depend only on the chunk's shape (ncubes, U), not on where it starts:
        # the plan hands every chunk of one shape the same dict (`Plan.run`), so a builtin like
        # UNIT_POS_X is computed once per launch, not once per chunk. They are read-only.
        self._static: dict[str, np.ndarray] = {} if static is None else static
        self.parent: Ctx | None = None
        self.sel: np.ndarray | None = None
        self.contiguous = True
        self.nrows = self.n  # rows of per-lane storage (local arrays) in this chunk
        # lanes per cube when every cube runs the same units in the same order (0: not so):
        # then a unit-only value is periodic — lane i holds what lane i % per_cube holds
        self.per_cube = self.U

    @staticmethod
    def sub(parent: "Ctx", sel: np.ndarray, static: dict[str, np.ndarray] | None = None,
            per_cube: int = 0) -> "Ctx":
        c = Ctx.__new__(Ctx)
        c.env = [None] * len(parent.env)
        c.launch, c.cube0, c.ncubes, c.U = parent.launch, parent.cube0, parent.ncubes, parent.U
        c.start = parent.start
        c.n = len(sel)
        c._cache = {}
        # a compacted context's shape-only arrays are selections of its parent's: shared when
        # the selection itself is (`compaction.branch` on a memoized mask), else its own
        c._static = {} if static is None else static
        c.parent, c.sel, c.contiguous, c.nrows = parent, sel, False, parent.nrows
        c.per_cube = per_cube  # the same units of every cube (a unit-only mask's selection)
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
        """ABSOLUTE_POS of every lane (u32): a slice of one shared read-only arange."""
        a = self._cache.get("lanes")
        if a is None:
            a = self._derived("lanes")
            if a is None:
                a = positions(self.start, self.start + self.n)
                self._cache["lanes"] = a
        return a

    def unit_index(self) -> np.ndarray:
        a = self._static.get("unit_index")
        if a is None:
            a = self._derived("unit_index")
            if a is not None:
                self._static["unit_index"] = a
            else:
                a = frozen(np.tile(np.arange(self.U, dtype=np.uint32), self.ncubes))
                self._static["unit_index"] = a
        return a

    def cube_local(self) -> np.ndarray:
        a = self._static.get("cube_local")
        if a is None:
            a = self._derived("cube_local")
            if a is not None:
                self._static["cube_local"] = a
            else:
                a = frozen(np.repeat(np.arange(self.ncubes, dtype=np.intp), self.U))
                self._static["cube_local"] = a
        return a

    def cube_linear(self) -> np.ndarray:
        a = self._cache.get("cube_linear")
        if a is None:
            if self.parent is None:
                a = np.repeat(np.arange(self.cube0, self.cube0 + self.ncubes, dtype=np.uint32),
                              self.U)
            else:
                a = self.cube_local().astype(np.uint32) + np.uint32(self.cube0)
            self._cache["cube_linear"] = a
        return a

    def local_rows(self) -> np.ndarray:
        a = self._static.get("local_rows")
        if a is None:
            a = self._derived("local_rows")
            if a is not None:
                self._static["local_rows"] = a
            else:
                a = frozen(np.arange(self.n, dtype=np.intp))
                self._static["local_rows"] = a
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


_POSITIONS = np.zeros(0, dtype=np.uint32)
POSITIONS_MAX = 1 << 24  # lanes the shared arange may cover (64 MiB)


def positions(start: int, stop: int) -> np.ndarray:
    """start..stop-1 as u32, read-only: a view of one arange every launch shares (grown to the
    largest launch, up to POSITIONS_MAX lanes), instead of a new arange per chunk."""
    global _POSITIONS
    if stop > len(_POSITIONS):
        if stop > POSITIONS_MAX:
            return np.arange(start, stop, dtype=np.uint32)
        grown = min(max(stop, 2 * len(_POSITIONS)), POSITIONS_MAX)
        _POSITIONS = frozen(np.arange(grown, dtype=np.uint32))
    return _POSITIONS[start:stop]


def frozen(a: np.ndarray) -> np.ndarray:
    """`a`, read-only: an array shared between steps (or chunks) must never be written in place."""
    a.setflags(write=False)
    return a


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


def row_mask(mask: np.ndarray, ndim: int) -> np.ndarray:
    return mask.reshape(mask.shape + (1,) * (ndim - 1)) if ndim > 1 else mask


def plane_size(ctx: Ctx) -> int:
    """Units per plane (subgroup): the device's width (`CpuServer.plane_size`, 32), whatever the
    cube's size — as a GPU reports its subgroup width (lavapipe 8, most NVIDIA 32). A cube
    smaller than a plane, or the tail of a cube whose size it does not divide, fills only part
    of one: the lanes past the cube's last unit do not exist, so they are inactive for every
    plane op, as on a GPU."""
    return ctx.launch.plane_size
