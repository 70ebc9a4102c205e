"""Kernel puzzles: a spec in numpy, a template kernel with a blank, fixed geometry, and a check
that runs the student's kernel for real.

Each `Puzzle` is data: the numpy function that says what the output must be, the inputs, the
launch geometry (the student does not choose it — finding the right index *for this geometry* is
the puzzle), the template, and per-unit limits on global and shared reads and writes. `check`
launches the student's kernel on the client, compares the output with the spec, then counts what
every unit touched (`cubelab.inspect.access_map`, which replays the launch on the CPU runtime) and
holds the busiest unit against the limits: a kernel that gets the numbers right by reading global
memory eight times where one read and a tile in shared memory would do is not accepted yet. The
same map finds races (a tile read with no `sync_cube()` after its write).

The trap the limits guard against is the one every GPU course meets: a correct kernel that is
correct for the wrong reason (an unguarded read that happens to give 0, a missing barrier that
the CPU runtime's lockstep execution forgives, a loop that re-reads global memory). The spec
check alone sees none of them; the out-of-bounds report, the races and the counts do.

Every buffer is f32, flat and row-major (2-D data is indexed `row * size + col`).
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from cubelab.exercises.base import Result
from cubelab.exercises import register
from cubelab.exercises.kinds import KernelExercise

__all__ = ["Limits", "Puzzle", "PUZZLES", "puzzle"]


@dataclass(frozen=True)
class Limits:
    """The most any one unit may do (None: no limit)."""

    global_reads: int | None = None
    global_writes: int | None = None
    shared_reads: int | None = None
    shared_writes: int | None = None

    def items(self) -> list[tuple[str, int | None]]:
        return [("global reads", self.global_reads), ("global writes", self.global_writes),
                ("shared reads", self.shared_reads), ("shared writes", self.shared_writes)]


@dataclass
class Puzzle(KernelExercise):
    """One puzzle: a `KernelExercise` (spec, fixed launch, out-of-bounds report) plus limits on
    what each unit may touch. Declared with `puzzle(...)` below."""

    story: str = ""  # markdown: what to compute, and the idea it teaches
    spec_fn: Callable[..., np.ndarray] = lambda **a: np.zeros(0)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    out_size: int = 0
    args: tuple[str, ...] = ()  # the kernel's parameters, in order: inputs, "out", scalars
    count: tuple[int, int, int] = (1, 1, 1)
    dim: tuple[int, int, int] = (1, 1, 1)
    limits: Limits = Limits()
    template: str = ""  # the answer cell: the kernel with a blank, then `answer = ...`
    scalars: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inputs = self._host
        self.spec = lambda host: {"out": self.expected()}
        self.launch = self._launch

    def _host(self) -> dict[str, np.ndarray]:
        host = {n: a.copy() for n, a in self.arrays.items()}
        host["out"] = np.zeros(self.out_size, np.float32)
        return host

    def _launch(self, kernel: Any, client: Any, handles: dict[str, Any]) -> None:
        kernel.launch(client, *self.launch_args(handles))

    def launch_args(self, handles: dict[str, Any]) -> list[Any]:
        """Count, dim and the kernel's arguments, in the order of `args`."""
        from cubelab.prelude import BufferArg, CubeCount, CubeDim

        host = self._host()
        out: list[Any] = [CubeCount.Static(*self.count), CubeDim.new_3d(*self.dim)]
        for name in self.args:
            if name in host:
                out.append(BufferArg.from_raw_parts(handles[name], host[name].size))
            else:
                out.append(self.scalars[name])
        return out

    @property
    def spec_source(self) -> str:
        return textwrap.dedent(inspect.getsource(self.spec_fn))

    def expected(self) -> np.ndarray:
        return np.asarray(self.spec_fn(**self.arrays), dtype=np.float32).reshape(-1)

    def geometry(self) -> str:
        def fmt(t: tuple[int, int, int]) -> str:
            n = 3
            while n > 1 and t[n - 1] == 1:
                n -= 1
            return ", ".join(str(v) for v in t[:n])
        return f"CubeCount.Static({fmt(self.count)}), CubeDim({fmt(self.dim)})"

    def describe(self) -> str:
        """The question as markdown: story, spec, geometry, limits."""
        inputs = ", ".join(f"`{k}` ({v.size} items)" for k, v in self.arrays.items())
        scalars = "".join(f", `{k} = {v}`" for k, v in self.scalars.items())
        limits = ", ".join(f"{name} ≤ {n}" for name, n in self.limits.items() if n is not None)
        return (f"### {self.title}\n\n{self.story}\n\n```python\n{self.spec_source}```\n\n"
                f"Inputs: {inputs}{scalars}; output `out` ({self.out_size} items, zeros before "
                f"the launch). Launched with `{self.geometry()}`; parameters "
                f"`({', '.join(self.args)})`.\n\nPer unit: {limits}.")

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.frontend.kernel import CubeFunction

        if isinstance(answer, CubeFunction) and answer.is_kernel:
            names = tuple(p.name for p in answer.params)
            if len(names) != len(self.args):
                return self._wrong(answer, f"`{answer.__name__}` takes {len(names)} "
                                   f"parameters; this puzzle launches it with "
                                   f"{len(self.args)}: ({', '.join(self.args)}).",
                                   "keep the template's signature: the geometry and the "
                                   "arguments are fixed, only the body is yours.")
        result = super()._check(answer, client)
        if not result.correct:
            return result
        m = self.access_map(answer)
        if m.races:
            r = m.races[0]
            verb = "reads" if r.kinds[1] == "read" else "writes"
            return self._wrong(
                answer, f"right values, but a race: unit {r.units[0]} writes {r.array}[{r.index}] "
                f"(line {r.lines[0]}) and unit {r.units[1]} {verb} it (line {r.lines[1]}) with no "
                "barrier between them.",
                "On a GPU the units of a cube do not run in lockstep: a unit may read a tile item "
                "before its owner has written it. Put `sync_cube()` between the writes and the "
                "reads (and between a step's reads and the next step's writes).",
                details=f"{len(m.races)} racing pair(s); the first: {r}")
        over, table = self.judge(m)
        if over:
            field, unit, n, limit = over[0]
            return self._wrong(
                answer, f"right values, but unit {unit} makes {n} {field} where the puzzle "
                f"allows {limit}.", self._LIMIT_HINTS[field], details=table)
        result.details = table
        return result

    _LIMIT_HINTS = {
        "global reads": "Every unit may read global memory only this often: load each item "
                        "once into shared memory, `sync_cube()`, and read it from there.",
        "global writes": "Write each item of `out` once, from one unit (keep partial results "
                         "in locals or shared memory).",
        "shared reads": "Read fewer items of the tile per unit: each needs only its own "
                        "neighbourhood (or, in a reduction, halve the active units each step).",
        "shared writes": "Write the tile fewer times per unit: accumulate in a local and store "
                         "once.",
    }

    def judge(self, m: Any) -> tuple[list[tuple[str, int, int, int]], str]:
        """Hold the busiest unit of each kind in an access map against the limits: (kind, unit,
        count, limit) for each kind over its limit, and a table of all four."""
        over, rows = [], ["per unit      busiest   limit"]
        for name, limit in self.limits.items():
            attr = name.replace(" ", "_")
            unit, n = max(((s.unit, getattr(s, attr)) for s in m.scores),
                          key=lambda t: t[1], default=(0, 0))
            shown = "-" if limit is None else str(limit)
            rows.append(f"{name:13} {n:>7}   {shown:>5}" + (f"   (unit {unit})" if n else ""))
            if limit is not None and n > limit:
                over.append((name, unit, n, limit))
        return over, "\n".join(rows)


# -- the specs ----------------------------------------------------------------------------------
# Each spec is the whole truth about its puzzle, written as a student would in numpy.

def add_ten_spec(a):
    return a + 10


def pair_sum_spec(a, b):
    return a + b


def outer_sum_spec(a, b):
    return a[:, None] + b[None, :]


def rotate_add_spec(a):
    tiles = a.reshape(-1, 4)                    # one row per cube of 4 units
    return tiles + np.roll(tiles, -1, axis=1)   # each item plus its right neighbour, wrapping


def window3_spec(a):
    padded = np.concatenate([np.zeros(2, a.dtype), a])
    return padded[2:] + padded[1:-1] + padded[:-2]


def dot_spec(a, b):
    return np.array([np.dot(a, b)])


def conv1d_spec(a, b):
    padded = np.concatenate([a, np.zeros(len(b) - 1, a.dtype)])
    return np.array([np.dot(padded[i:i + len(b)], b) for i in range(len(a))])


def running_total_spec(a):
    return np.cumsum(a)


def row_sums_spec(a):
    return a.reshape(4, 6).sum(axis=1)


def matmul_spec(a, b):
    return a.reshape(8, 8) @ b.reshape(8, 8)


def _f(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def _template_kernel(key: str, template: str) -> Any:
    """The kernel a template defines, as the student first runs it: each puzzle's wrong answer
    (its check must reject the blank template). Registered in linecache like a notebook cell, so
    `@cube` can read its source."""
    import linecache

    source = "from cubelab.prelude import *\n" + template
    filename = f"<puzzle template {key}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - our own template text
    (kernel,) = [v for v in ns.values() if getattr(v, "is_kernel", False)]
    return kernel


def _template(header: str, lines: int) -> str:
    return (f"@cube(launch=True)\n{header}\n    # FILL ME IN (about {lines} "
            f"line{'s' if lines > 1 else ''})\n    pass\n\nanswer = ...\n")


_1D = (1, 1, 1)

PUZZLES: dict[str, Puzzle] = {}


def puzzle(key: str, title: str, story: str, spec: Callable[..., np.ndarray],
           inputs: dict[str, np.ndarray], out_size: int, args: tuple[str, ...],
           count: tuple[int, int, int], dim: tuple[int, int, int], limits: Limits,
           template: str, hint: str, scalars: dict[str, int] | None = None) -> Puzzle:
    """Declare and register one puzzle."""
    p = Puzzle(key, title, "", hint, (_template_kernel(key, template),), story=story,
               spec_fn=spec, arrays=inputs,
               out_size=out_size, args=args, count=count, dim=dim, limits=limits,
               template=template, scalars=scalars or {})
    p.question = p.describe()
    PUZZLES[key] = p
    register(p)
    return p


puzzle(
    "puzzles.map", "1 · Map",
    "Every unit handles one item: `out[i] = a[i] + 10`. One cube holds exactly as many units as "
    "there are items, so `UNIT_POS` is the index.",
    add_ten_spec, {"a": _f(range(4))}, 4, ("a", "out"), _1D, (4, 1, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten(a: Slice[f32], out: SliceMut[f32]):\n    i = UNIT_POS", 1),
    "each unit reads its own item `a[UNIT_POS]` and writes `out[UNIT_POS]`; a typed constant "
    "is `f32(10.0)`.",
)

puzzle(
    "puzzles.zip", "2 · Zip",
    "Two inputs, one output: `out[i] = a[i] + b[i]`.",
    pair_sum_spec, {"a": _f(range(4)), "b": _f([10, 20, 30, 40])}, 4, ("a", "b", "out"), _1D,
    (4, 1, 1), Limits(2, 1, 0, 0),
    _template("def pair_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
              "    i = UNIT_POS", 1),
    "unit `i` reads `a[i]` and `b[i]` and writes `out[i]`.",
)

puzzle(
    "puzzles.guard", "3 · Guards",
    "Now the cube has **more units than items** (8 units, 5 items). A unit past the end must not "
    "touch memory: reads there return 0 on this runtime and writes are dropped, so a kernel "
    "without a guard can even *look* right — the check counts what units 5–7 touched.",
    add_ten_spec, {"a": _f(range(5))}, 5, ("a", "out"), _1D, (8, 1, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_guarded(a: Slice[f32], out: SliceMut[f32]):\n    i = UNIT_POS", 2),
    "units 5, 6 and 7 have no item: guard the body with `if i < a.len():`.",
)

puzzle(
    "puzzles.map_2d", "4 · Map in two dimensions",
    "`a` is a 3×3 matrix stored row by row; the cube is 4×4 units. Unit `(UNIT_POS_X, "
    "UNIT_POS_Y)` handles column x of row y: `out[row * size + col] = a[row * size + col] + 10`.",
    add_ten_spec, {"a": _f(range(9))}, 9, ("a", "out", "size"), _1D, (4, 4, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_2d(a: Slice[f32], out: SliceMut[f32], size: u32):\n"
              "    col = UNIT_POS_X\n    row = UNIT_POS_Y", 2),
    "the matrix is 3×3 but the cube is 4×4: guard both coordinates (`row < size and col < "
    "size`) and index `row * size + col`.",
    scalars={"size": 3},
)

puzzle(
    "puzzles.broadcast", "5 · Broadcast",
    "`a` is a column of 3, `b` a row of 3; `out` is their 3×3 outer *sum*: `out[row, col] = "
    "a[row] + b[col]`. Each unit reads one item of each input.",
    outer_sum_spec, {"a": _f([0, 10, 20]), "b": _f([0, 1, 2])}, 9, ("a", "b", "out", "size"),
    _1D, (4, 4, 1), Limits(2, 1, 0, 0),
    _template("def outer_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], size: u32):\n"
              "    col = UNIT_POS_X\n    row = UNIT_POS_Y", 2),
    "`a` is indexed by the row, `b` by the column; guard both against `size`.",
    scalars={"size": 3},
)

puzzle(
    "puzzles.blocks", "6 · Blocks",
    "9 items, but a cube has only 4 units, so the launch has **3 cubes**. A unit's item is its "
    "cube's offset plus its place in the cube: `CUBE_POS * CUBE_DIM + UNIT_POS` (that is what "
    "`ABSOLUTE_POS` computes).",
    add_ten_spec, {"a": _f(range(9))}, 9, ("a", "out"), (3, 1, 1), (4, 1, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_blocks(a: Slice[f32], out: SliceMut[f32]):", 3),
    "`UNIT_POS` alone only reaches items 0–3; add the cube's offset `CUBE_POS * CUBE_DIM`, and "
    "guard: 3 cubes × 4 units = 12 units for 9 items.",
)

puzzle(
    "puzzles.blocks_2d", "7 · Blocks in two dimensions",
    "A 5×5 matrix, cubes of 3×3 units, 2×2 cubes. Build the row and column from the cube's and "
    "the unit's coordinates.",
    add_ten_spec, {"a": _f(range(25))}, 25, ("a", "out", "size"), (2, 2, 1), (3, 3, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_blocks_2d(a: Slice[f32], out: SliceMut[f32], size: u32):", 4),
    "`col = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X` (and the same in Y); 2 × 3 = 6 > 5, so "
    "guard both.",
    scalars={"size": 5},
)

puzzle(
    "puzzles.shared", "8 · Shared memory",
    "Each cube of 4 units owns 4 items; every unit adds its item and its **right neighbour in "
    "the same cube** (the last unit wraps to the first). A unit may read global memory only "
    "once, so it cannot fetch its neighbour itself: stage the cube's items in "
    "`SharedMemory[f32](4)`, wait with `sync_cube()`, then read the neighbour from the tile.",
    rotate_add_spec, {"a": _f(range(8))}, 8, ("a", "out"), (2, 1, 1), (4, 1, 1),
    Limits(1, 1, 2, 1),
    _template("def rotate_add(a: Slice[f32], out: SliceMut[f32]):\n"
              "    tile = SharedMemory[f32](4)\n    u = UNIT_POS", 4),
    "write `tile[u] = a[ABSOLUTE_POS]`, then `sync_cube()` so every unit's item is there, "
    "then `out[ABSOLUTE_POS] = tile[u] + tile[(u + 1) % 4]`.",
)

puzzle(
    "puzzles.pooling", "9 · Pooling",
    "A sliding window of three: `out[i] = a[i - 2] + a[i - 1] + a[i]`, where an index before 0 "
    "counts as 0. One global read per unit again: share the loads through a tile.",
    window3_spec, {"a": _f(range(8))}, 8, ("a", "out"), _1D, (8, 1, 1),
    Limits(1, 1, 3, 1),
    _template("def window3(a: Slice[f32], out: SliceMut[f32]):\n"
              "    tile = SharedMemory[f32](8)\n    i = UNIT_POS", 7),
    "load `tile[i] = a[i]`, `sync_cube()`, then add `tile[i - 1]` only if `i >= 1` and "
    "`tile[i - 2]` only if `i >= 2` (indices are u32: `0 - 1` is 4294967295, not -1).",
)

puzzle(
    "puzzles.dot", "10 · Dot product",
    "`out[0] = sum(a * b)` over 8 items with one cube of 8 units. Every unit reads its two "
    "items once; a single unit writes the result.",
    dot_spec, {"a": _f(range(8)), "b": _f([1, 2, 1, 2, 1, 2, 1, 2])}, 1, ("a", "b", "out"),
    _1D, (8, 1, 1), Limits(2, 1, 8, 4),
    _template("def dot(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
              "    products = SharedMemory[f32](8)\n    i = UNIT_POS", 7),
    "store `a[i] * b[i]` in the tile, `sync_cube()`, then let unit 0 add the 8 products "
    "(`for k in range(8)`) and write `out[0]`.",
)

puzzle(
    "puzzles.conv1d", "11 · 1-D convolution",
    "`out[i] = a[i]·b[0] + a[i+1]·b[1] + a[i+2]·b[2] + a[i+3]·b[3]`, with `a` read as 0 past its "
    "end; 15 items, 2 cubes of 8. A cube needs its 8 items **and the 3 after them** (the halo): "
    "stage both, and the 4 taps, in shared memory.",
    conv1d_spec, {"a": _f(range(15)), "b": _f([1, 0, -1, 2])}, 15, ("a", "b", "out"),
    (2, 1, 1), (8, 1, 1), Limits(3, 1, 8, 3),
    _template("def conv1d(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
              "    window = SharedMemory[f32](8 + 3)\n    taps = SharedMemory[f32](4)\n"
              "    u = UNIT_POS\n    i = ABSOLUTE_POS", 18),
    "each unit loads `window[u]` (0 past the end); units 0–2 also load the halo "
    "`window[u + 8] = a[i + 8]`; units 0–3 load `taps[u] = b[u]`; `sync_cube()`; then sum "
    "`window[u + j] * taps[j]` for j in 0..3 and guard the write with `i < out.len()`.",
)

puzzle(
    "puzzles.prefix_sum", "12 · Prefix sum",
    "`out[i] = a[0] + … + a[i]` over 8 items, one cube of 8. The classic way is log₂(8) = 3 "
    "steps in shared memory: at step k every unit adds the value 2ᵏ places to its left. Read "
    "everything a step needs before anyone writes it (a barrier between the read and the "
    "write).",
    running_total_spec, {"a": _f([3, 1, 4, 1, 5, 9, 2, 6])}, 8, ("a", "out"), _1D, (8, 1, 1),
    Limits(1, 1, 8, 4),
    _template("def running_total(a: Slice[f32], out: SliceMut[f32]):\n"
              "    buf = SharedMemory[f32](8)\n    u = UNIT_POS", 12),
    "load `buf[u]`, `sync_cube()`; for each step (1, 2, 4): read `t = buf[u - step]` if "
    "`u >= step`, `sync_cube()`, `buf[u] += t`, `sync_cube()`; finally `out[u] = buf[u]`.",
)

puzzle(
    "puzzles.axis_sum", "13 · Axis sum",
    "`a` is 4 rows × 6 columns; `out[r]` is the sum of row r. One cube of 8 units per row "
    "(`CubeCount.Static(1, 4)`: the row is `CUBE_POS_Y`). Reduce the row in shared memory "
    "by halving: 8 → 4 → 2 → 1.",
    row_sums_spec, {"a": _f(range(24))}, 4, ("a", "out", "cols"), (1, 4, 1), (8, 1, 1),
    Limits(1, 1, 7, 4),
    _template("def row_sums(a: Slice[f32], out: SliceMut[f32], cols: u32):\n"
              "    buf = SharedMemory[f32](8)\n    u = UNIT_POS\n    row = CUBE_POS_Y", 12),
    "load `a[row * cols + u]` (0 for `u >= cols`), `sync_cube()`; for half in 4, 2, 1: units "
    "below `half` add `buf[u + half]`, then `sync_cube()`; unit 0 writes `out[row]`.",
    scalars={"cols": 6},
)

puzzle(
    "puzzles.matmul", "14 · Matrix multiply",
    "`out = a @ b` for 8×8 matrices, cubes of 4×4 units, 2×2 cubes: each unit computes one item "
    "of `out`. The naive dot product reads 16 items per unit from global memory; the limit is "
    "4. Walk along k one 4×4 tile at a time: every unit loads one item of `a`'s tile and one of "
    "`b`'s into shared memory, the cube synchronises, and each unit reads its row and column "
    "of the tiles.",
    matmul_spec, {"a": _f(np.arange(64) % 7), "b": _f(np.arange(64) % 5 - 2)}, 64,
    ("a", "b", "out", "size"), (2, 2, 1), (4, 4, 1), Limits(4, 1, 16, 4),
    _template("def matmul(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], size: u32):\n"
              "    a_tile = SharedMemory[f32](16)\n    b_tile = SharedMemory[f32](16)\n"
              "    tx = UNIT_POS_X\n    ty = UNIT_POS_Y\n    row = ABSOLUTE_POS_Y\n"
              "    col = ABSOLUTE_POS_X\n    acc = f32(0.0)", 9),
    "for t0 in range(0, size, 4): load `a_tile[ty * 4 + tx] = a[row * size + t0 + tx]` and "
    "`b_tile[ty * 4 + tx] = b[(t0 + ty) * size + col]`, `sync_cube()`, accumulate "
    "`a_tile[ty * 4 + k] * b_tile[k * 4 + tx]` for k in 0..3, `sync_cube()` again before the "
    "next tile; write `out[row * size + col] = acc`.",
    scalars={"size": 8},
)
