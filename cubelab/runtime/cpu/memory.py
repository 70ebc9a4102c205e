"""Memory as the CPU runtime's interpreter sees it: buffers, shared arrays, locals, pointers.

A `Mem` is one addressable array: a global buffer argument (one numpy view over the server's
bytes), a cube's shared memory (one row per cube of the chunk being run) or a local `Array[T](n)`
(one row per lane). A `Ptr` is what `memory.index` produces for *all lanes at once*: the index
each lane asked for (`orig`, kept for reports and traces), a safe index that never leaves the
allocation (`index`), and which lanes' accesses are invalid (`bad`: reads give 0, writes are
dropped — what WebGPU drivers do). A scalar local (`var.declare` of a scalar or vector) is a
`LocalSlot`, whose array is *replaced* on every store instead of written into: SSA values that
were loaded from it earlier must not change under the reader's feet.

The trap this layout avoids: an SSA value loaded from a buffer by slicing is a *view*; if the
kernel later writes that buffer the "value" would change. Views are only handed out for buffers
the kernel never writes and that share no memory with a written buffer in this launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class Mem:
    __slots__ = ("name", "store", "length", "kind", "view_ok", "shape", "strides", "handle_id",
                 "item_shape", "aliased", "views")

    def __init__(self, name: str, store: np.ndarray, length: int, kind: str,
                 view_ok: bool = False, handle_id: int = -1) -> None:
        self.name = name
        self.store = store  # global: (rows[, w]); shared: (cubes, length[, w]); local: (lanes, ..)
        self.length = length
        self.kind = kind  # "global" | "shared" | "local"
        self.view_ok = view_ok
        self.shape: tuple[int, ...] = ()
        self.strides: tuple[int, ...] = ()
        self.handle_id = handle_id
        self.item_shape = store.shape[2:] if kind != "global" else store.shape[1:]
        self.aliased = False  # the same memory is bound to another argument of the launch
        self.views: dict[Any, np.ndarray] | None = None  # shared: views by cube pattern

    def __repr__(self) -> str:
        return f"Mem({self.kind} {self.name}, len={self.length})"


class Ptr:
    """Pointers of every lane of a chunk into one `Mem` (or a contiguous slice of a buffer)."""

    __slots__ = ("mem", "index", "orig", "bad", "report", "start", "stop", "unit", "pattern",
                 "view")

    def __init__(self, mem: Mem, index: Any, orig: Any, bad: Any = None, report: Any = None,
                 start: int | None = None, stop: int | None = None, unit: bool = False,
                 pattern: tuple[Any, ...] | None = None, view: Any = None) -> None:
        self.mem = mem
        self.index = index  # global: item index; shared/local: index within the lane's row
        self.orig = orig
        self.bad = bad
        self.report = report
        self.start = start  # global, `start`..`stop`: lane i reaches item start + i (a slice)
        self.stop = stop
        self.unit = unit  # shared, index == UNIT_POS: lane (cube c, unit u) reaches row c, item u
        # shared, a unit-only index in bounds: every cube's lanes reach its row through the same
        # pattern (`steps.memory.cube_pattern`); `index` is still the per-lane index
        self.pattern = pattern
        # global, an affine index in bounds: the items the chunk's lanes read, as a strided view
        # of the buffer shaped (cubes z, y, x, units z, y, x) (`indices.affine_indices`);
        # only loads in the pointer's own block read it
        self.view = view


class CubeView:
    """A shared-memory load handed to its one use, a binary op, as a view of every cube's row
    (`(cubes, k)` for a slice pattern, `(cubes, dz, dy, dx)` for a strided one) instead of a
    copy with one row per lane: only where nothing can write the memory in between
    (`analysis.view_shared_loads`). The op computes on the views and flattens its result —
    or hands it on as a view of its own buffer (`owned`: nothing else holds that buffer, so the
    one op that reads it may write its result there: `analysis.view_results`)."""

    __slots__ = ("a", "owned")

    def __init__(self, a: np.ndarray, owned: bool = False) -> None:
        self.a = a
        self.owned = owned


class LocalSlot:
    """A unit-private scalar or vector local: `arr` is per lane (n, ...) or uniform (1, ...).

    An unrolled dot product (`steps.accumulate`) keeps its accumulator *cube-minor* — one row
    per unit of the cube, one column per cube, shape (dz, dy, dx, cubes) — from one run of
    terms to the next (the tiled matmul's k loop), since turning it back into lane order costs a
    transpose. `arr` turns it back when anything else reads the local, and keeps both: the
    cube-minor array stays valid until the local is written.
    """

    __slots__ = ("name", "_arr", "_cube_minor")

    def __init__(self, name: str, arr: np.ndarray) -> None:
        self.name = name
        self._arr: np.ndarray | None = arr
        self._cube_minor: np.ndarray | None = None

    @property
    def arr(self) -> np.ndarray:
        a = self._arr
        if a is None:
            t = self._cube_minor
            assert t is not None
            a = self._arr = np.ascontiguousarray(np.moveaxis(t, -1, 0)).reshape(-1)
        return a

    @arr.setter
    def arr(self, value: np.ndarray) -> None:
        self._arr = value
        self._cube_minor = None

    def cube_minor(self, shape: tuple[int, ...]) -> np.ndarray | None:
        """The value cube-minor, if it is kept so in `shape`."""
        t = self._cube_minor
        return t if t is not None and t.shape == shape else None

    def set_cube_minor(self, t: np.ndarray) -> None:
        """The local's new value, cube-minor (`t` is the slot's own: nobody writes it after)."""
        self._arr = None
        self._cube_minor = t


@dataclass(frozen=True)
class OobAccess:
    """One out-of-bounds access recorded in `report` mode (plain data, for notebooks)."""

    kernel: str
    buffer: str
    index: int
    length: int
    unit: tuple[int, int, int]  # UNIT_POS_X/Y/Z
    cube: tuple[int, int, int]  # CUBE_POS_X/Y/Z
    absolute: int  # the unit's linear position in the dispatch (ABSOLUTE_POS on any grid)
    write: bool
    loc: str  # "file.py:12:5"
    line: int
    source: str  # the kernel line, stripped
    # what then happened: "clamped" (to len - 1, by CheckedIo or the `clamp` mode), "zero" (a
    # read gave 0), "failed" (`report` mode: the write was dropped and the buffer failed)
    outcome: str = "zero"

    def __str__(self) -> str:
        what = "write" if self.write else "read"
        then = {"clamped": f"clamped to {self.buffer}[{self.length - 1}]", "zero": "read as 0",
                "dropped": "dropped", "failed": "dropped"}.get(self.outcome, self.outcome)
        return (f"unit {self.absolute} (cube {self.cube}, unit {self.unit}) {what}s "
                f"{self.buffer}[{self.index}] but {self.buffer} has {self.length} items "
                f"({then}) — line {self.line}: {self.source}")


OOB_MODES = ("zero", "clamp", "report")
