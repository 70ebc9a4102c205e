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
from pathlib import Path
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
    first_try: Any = None  # a straightforward first attempt: its access map is the figure
    shows: str = ""  # what that map shows, in words (`figure_caption` reads it from the map)

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
        """The question as markdown: the statement, then the figure of a first attempt's access
        map (committed as figures/puzzles/<name>.svg)."""
        name = self.key.split(".", 1)[1]
        return (f"{self.statement()}\n\n"
                f"![The access map of a first attempt at {self.title}](figures/puzzles/{name}.svg)"
                f"\n\n*A straightforward first attempt, drawn by `AccessMap.to_svg()`: "
                f"{self.shows}*")

    def statement(self) -> str:
        """Story, spec, geometry and limits as markdown (the question without its figure)."""
        inputs = ", ".join(f"`{k}` ({v.size} items)" for k, v in self.arrays.items())
        scalars = "".join(f", `{k} = {v}`" for k, v in self.scalars.items())
        limits = ", ".join(f"{name} ≤ {n}" for name, n in self.limits.items() if n is not None)
        return (f"### {self.title}\n\n{self.story}\n\n```python\n{self.spec_source}```\n\n"
                f"Inputs: {inputs}{scalars}; output `out` ({self.out_size} items, zeros before "
                f"the launch). Launched with `{self.geometry()}`; parameters "
                f"`({', '.join(self.args)})`.\n\nPer unit: {limits}.")

    def first_try_map(self) -> Any:
        """The access map of the puzzle's straightforward first attempt (the figure)."""
        return self.access_map(self.first_try)

    def figure_caption(self) -> str:
        """What the first attempt's map shows, in words (read from the map)."""
        m = self.first_try_map()
        over, _ = self.judge(m)
        said = []
        if m.oob:
            units = sorted({o.unit for o in m.oob})
            said.append(f"units {', '.join(map(str, units))} step past the end of a buffer")
        if m.races:
            r = m.races[0]
            said.append(f"units {r.units[0]} and {r.units[1]} both touch {r.array}[{r.index}] "
                        "(a race)")
        for fld, unit, n, limit in over:
            said.append(f"unit {unit} makes {n} {fld} where {limit} are allowed")
        if not said:
            return "each unit reads its own item and writes its own; this one is right."
        return "; ".join(said) + " — the check rejects it."

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
        result = super()._check(answer, client)  # values, out of bounds, races (kinds.py)
        if not result.correct:
            return result
        m = self.access_map(answer)
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
    """The kernel a template (or a first attempt) defines, as the student first runs it: each
    puzzle's wrong answer (its check must reject the blank template). Registered in linecache
    like a notebook cell, so `@cube` can read its source."""
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


@dataclass(frozen=True)
class Attempt:
    """A puzzle's hints, in tiers (`nudge`, the `concept`, a `worked` step on another example —
    never the puzzle's own solution), and a straightforward first attempt at it: the kernel whose
    access map is drawn beside the puzzle (`figure_svg`) — the trap the puzzle is about, not its
    answer (for the first two puzzles the obvious kernel is right, and the story says as much)."""

    nudge: str
    concept: str
    worked: str
    first_try: str  # the kernel, as source, with the template's signature
    right: bool = False  # the first try is right (then it is not one of the wrong answers)
    shows: str = ""  # what its access map shows (the figure's caption; a test re-reads the map)


ATTEMPTS: dict[str, Attempt] = {
    "map": Attempt(
        "Which item belongs to unit i, and what goes into out[i]?",
        "Each unit reads its own item `a[UNIT_POS]` once and writes `out[UNIT_POS]`; a typed "
        "constant is `f32(10.0)`.",
        "A worked step on another kernel: `negate` writes `out[i] = -a[i]` with `i = UNIT_POS`, "
        "one read and one write per unit.",
        "@cube(launch=True)\ndef add_ten(a: Slice[f32], out: SliceMut[f32]):\n    i = UNIT_POS\n"
        "    out[i] = a[i] + f32(10.0)\n", right=True,
        shows='each unit reads its own item and writes its own; this one is right.'),
    "zip": Attempt(
        "Two inputs, one index: which items does unit i need?",
        "Unit `i` reads `a[i]` and `b[i]` and writes `out[i]`.",
        "A worked step on another kernel: a difference writes `out[i] = a[i] - b[i]`, two reads "
        "and one write per unit.",
        "@cube(launch=True)\ndef pair_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
        "    i = UNIT_POS\n    out[i] = a[i] + b[i]\n", right=True,
        shows='each unit reads its own item and writes its own; this one is right.'),
    "guard": Attempt(
        "There are 8 units and 5 items: what should units 5, 6 and 7 do?",
        "A unit past the end must not touch memory at all: wrap the body in a guard on the "
        "length, so the units without an item skip it.",
        "A worked step on another kernel: `square` on 3 items with 4 units compares its index "
        "with the buffer's length before `out[i] = a[i] * a[i]`; unit 3 fails the comparison "
        "and reads and writes nothing.",
        "@cube(launch=True)\ndef add_ten_guarded(a: Slice[f32], out: SliceMut[f32]):\n"
        "    i = UNIT_POS\n    out[i] = a[i] + f32(10.0)\n",
        shows='units 5, 6, 7 step past the end of a buffer — the check rejects it.'),
    "map_2d": Attempt(
        "The cube is 4×4 and the matrix 3×3: which units have no item?",
        "Guard both coordinates against `size`, and index the flat buffer `row * size + col`.",
        "A worked step on another launch: a 2×2 matrix in a 3×3 cube — unit (x = 1, y = 1) "
        "handles a[1 * 2 + 1] = a[3]; units with x = 2 or y = 2 skip.",
        "@cube(launch=True)\ndef add_ten_2d(a: Slice[f32], out: SliceMut[f32], size: u32):\n"
        "    col = UNIT_POS_X\n    row = UNIT_POS_Y\n"
        "    out[row * size + col] = a[row * size + col] + f32(10.0)\n",
        shows='units 11, 12, 13, 14, 15 step past the end of a buffer; units 3 and 4 both touch out[3] (a race) — the check rejects it.'),
    "broadcast": Attempt(
        "Which input goes with the row, and which with the column?",
        "`out[row, col]` reads `a[row]` and `b[col]`; guard both coordinates against `size`.",
        "A worked step on another kernel: an outer *product* of [1, 2] and [3, 4] gives "
        "out[1][0] = a[1] * b[0] = 6.",
        "@cube(launch=True)\ndef outer_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], "
        "size: u32):\n    col = UNIT_POS_X\n    row = UNIT_POS_Y\n"
        "    out[row * size + col] = a[row] + b[col]\n",
        shows='units 3, 7, 11, 12, 13, 14, 15 step past the end of a buffer; units 3 and 4 both touch out[3] (a race) — the check rejects it.'),
    "blocks": Attempt(
        "With 3 cubes, which items can UNIT_POS alone reach?",
        "A unit's item is its cube's offset plus its place in the cube (`ABSOLUTE_POS`); 3 cubes "
        "× 4 units are 12 units for 9 items, so guard it.",
        "A worked step on another launch: 2 cubes of 5 units — unit 3 of cube 1 owns item "
        "1 * 5 + 3 = 8.",
        "@cube(launch=True)\ndef add_ten_blocks(a: Slice[f32], out: SliceMut[f32]):\n"
        "    i = UNIT_POS\n    if i < a.len():\n        out[i] = a[i] + f32(10.0)\n",
        shows='units 0 and 4 both touch out[0] (a race) — the check rejects it.'),
    "blocks_2d": Attempt(
        "Build the column from the X parts and the row from the Y parts.",
        "Each coordinate is the cube's offset on that axis plus the unit's place on it; the grid "
        "overhangs the 5×5 matrix, so guard both.",
        "A worked step on another launch: cubes of 2×2, cube (1, 0), unit (1, 1): column "
        "1 * 2 + 1 = 3, row 0 * 2 + 1 = 1.",
        "@cube(launch=True)\ndef add_ten_blocks_2d(a: Slice[f32], out: SliceMut[f32], size: u32):\n"
        "    col = UNIT_POS_X\n    row = UNIT_POS_Y\n    if row < size and col < size:\n"
        "        out[row * size + col] = a[row * size + col] + f32(10.0)\n",
        shows='units 0 and 9 both touch out[0] (a race) — the check rejects it.'),
    "shared": Attempt(
        "A unit may read global memory once: where else could it find its neighbour's item?",
        "Stage each unit's item in the cube's shared tile, wait for every unit with "
        "`sync_cube()`, then read the neighbour from the tile (wrapping at the cube's end).",
        "A worked step on another kernel: a *left* neighbour stages `tile[u] = a[i]`, and after "
        "`sync_cube()` reads `tile[(u + 3) % 4]`.",
        "@cube(launch=True)\ndef rotate_add(a: Slice[f32], out: SliceMut[f32]):\n"
        "    tile = SharedMemory[f32](4)\n    u = UNIT_POS\n"
        "    out[ABSOLUTE_POS] = a[ABSOLUTE_POS] + a[CUBE_POS * 4 + (u + 1) % 4]\n",
        shows='unit 0 makes 2 global reads where 1 are allowed — the check rejects it.'),
    "pooling": Attempt(
        "Which items does each unit need, and how many other units read the same ones?",
        "One global read per unit, into a tile; `sync_cube()`; then add the tile's left "
        "neighbours — only those that exist (indices are u32: `0 - 1` wraps to 4294967295).",
        "A worked step on another window: out[i] = a[i - 1] + a[i] — unit 0 adds only tile[0], "
        "unit 3 adds tile[2] + tile[3].",
        "@cube(launch=True)\ndef window3(a: Slice[f32], out: SliceMut[f32]):\n"
        "    tile = SharedMemory[f32](8)\n    i = UNIT_POS\n    acc = a[i]\n"
        "    if i >= 1:\n        acc += a[i - 1]\n    if i >= 2:\n        acc += a[i - 2]\n"
        "    out[i] = acc\n",
        shows='unit 2 makes 3 global reads where 1 are allowed — the check rejects it.'),
    "dot": Attempt(
        "Each unit can make one product; who adds the eight up, and from where?",
        "Each unit stores its product in a shared tile; `sync_cube()`; one unit sums the tile "
        "and writes `out[0]`.",
        "A worked step on another kernel: a 4-item *sum* stores a[i] into t[i]; after "
        "`sync_cube()` unit 0 adds t[0] … t[3].",
        "@cube(launch=True)\ndef dot(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
        "    products = SharedMemory[f32](8)\n    i = UNIT_POS\n    if i == 0:\n"
        "        acc = f32(0.0)\n        for k in range(8):\n            acc += a[k] * b[k]\n"
        "        out[0] = acc\n",
        shows='unit 0 makes 16 global reads where 2 are allowed — the check rejects it.'),
    "conv1d": Attempt(
        "Which items of `a` does a cube of 8 need? Count past its last unit.",
        "A cube needs its 8 items and the 3 after them (the halo), and the 4 taps: stage them in "
        "shared memory (0 past the end of `a`), `sync_cube()`, then each unit sums its window "
        "against the taps.",
        "A worked step on another convolution: 2 taps on cubes of 4 — a cube needs 4 + 1 items; "
        "unit 3 uses window[3] and window[4], the halo item.",
        "@cube(launch=True)\ndef conv1d(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
        "    window = SharedMemory[f32](8 + 3)\n    taps = SharedMemory[f32](4)\n"
        "    u = UNIT_POS\n    i = ABSOLUTE_POS\n    if i < out.len():\n        acc = f32(0.0)\n"
        "        for j in range(4):\n            if i + j < a.len():\n"
        "                acc += a[i + j] * b[j]\n        out[i] = acc\n",
        shows='unit 0 makes 8 global reads where 3 are allowed — the check rejects it.'),
    "prefix_sum": Attempt(
        "At each step, how far to the left does a unit look — and who may be writing that item "
        "at the same time?",
        "log₂(8) = 3 steps, the distance doubling (1, 2, 4); in each, read the value first, "
        "`sync_cube()`, then add and write, and `sync_cube()` again before the next step.",
        "A worked step on another input: [1, 2, 3, 4] — step 1 (each adds its left neighbour) "
        "gives [1, 3, 5, 7]; step 2 (two to the left) gives [1, 3, 6, 10].",
        "@cube(launch=True)\ndef running_total(a: Slice[f32], out: SliceMut[f32]):\n"
        "    buf = SharedMemory[f32](8)\n    u = UNIT_POS\n    acc = f32(0.0)\n"
        "    for k in range(8):\n        if k <= u:\n            acc += a[k]\n    out[u] = acc\n",
        shows='unit 7 makes 8 global reads where 1 are allowed — the check rejects it.'),
    "axis_sum": Attempt(
        "One cube per row: how can 8 units add 6 numbers in a few steps?",
        "Halve the active units each step (4, 2, 1): the units below `half` add the item `half` "
        "places to their right, with `sync_cube()` between steps; pad with 0 where `u >= cols`.",
        "A worked step on other values: [1, 2, 3, 4] — half 2 gives [4, 6, ., .], half 1 gives "
        "[10, ., ., .].",
        "@cube(launch=True)\ndef row_sums(a: Slice[f32], out: SliceMut[f32], cols: u32):\n"
        "    buf = SharedMemory[f32](8)\n    u = UNIT_POS\n    row = CUBE_POS_Y\n    if u == 0:\n"
        "        acc = f32(0.0)\n        for c in range(cols):\n"
        "            acc += a[row * cols + c]\n        out[row] = acc\n",
        shows='unit 0 makes 6 global reads where 1 are allowed — the check rejects it.'),
    "matmul": Attempt(
        "How often does the straightforward loop read each item of `a` and `b` from global "
        "memory, and by how many units?",
        "Walk k one 4×4 tile at a time: each unit loads one item of a's tile and one of b's into "
        "shared memory, the cube synchronises, every unit uses the tiles, and the cube "
        "synchronises again before the next tile overwrites them.",
        "A worked step on another size: a 4×4 product with 2×2 tiles, first tile (k = 0, 1): "
        "unit (x, y) loads a[y][x] and b[y][x]; after `sync_cube()` it adds a_tile[y][0] * "
        "b_tile[0][x] + a_tile[y][1] * b_tile[1][x].",
        "@cube(launch=True)\ndef matmul(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], "
        "size: u32):\n    row = ABSOLUTE_POS_Y\n    col = ABSOLUTE_POS_X\n    acc = f32(0.0)\n"
        "    for k in range(size):\n        acc += a[row * size + k] * b[k * size + col]\n"
        "    out[row * size + col] = acc\n",
        shows='unit 0 makes 16 global reads where 4 are allowed — the check rejects it.'),
}

PUZZLES: dict[str, Puzzle] = {}


def puzzle(key: str, title: str, story: str, spec: Callable[..., np.ndarray],
           inputs: dict[str, np.ndarray], out_size: int, args: tuple[str, ...],
           count: tuple[int, int, int], dim: tuple[int, int, int], limits: Limits,
           template: str, attempt: Attempt, scalars: dict[str, int] | None = None) -> Puzzle:
    """Declare and register one puzzle."""
    first = _template_kernel(f"{key} first attempt", attempt.first_try)
    wrong = (_template_kernel(key, template),) + (() if attempt.right else (first,))
    p = Puzzle(key, title, "", attempt.concept, wrong, nudge=attempt.nudge,
               worked=attempt.worked, story=story, spec_fn=spec, arrays=inputs,
               out_size=out_size, args=args, count=count, dim=dim, limits=limits,
               template=template, scalars=scalars or {}, first_try=first,
               shows=attempt.shows)
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
    ATTEMPTS['map'],
)

puzzle(
    "puzzles.zip", "2 · Zip",
    "Two inputs, one output: `out[i] = a[i] + b[i]`.",
    pair_sum_spec, {"a": _f(range(4)), "b": _f([10, 20, 30, 40])}, 4, ("a", "b", "out"), _1D,
    (4, 1, 1), Limits(2, 1, 0, 0),
    _template("def pair_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
              "    i = UNIT_POS", 1),
    ATTEMPTS['zip'],
)

puzzle(
    "puzzles.guard", "3 · Guards",
    "Now the cube has **more units than items** (8 units, 5 items). A unit past the end must not "
    "touch memory: reads there return 0 on this runtime and writes are dropped, so a kernel "
    "without a guard can even *look* right — the check counts what units 5–7 touched.",
    add_ten_spec, {"a": _f(range(5))}, 5, ("a", "out"), _1D, (8, 1, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_guarded(a: Slice[f32], out: SliceMut[f32]):\n    i = UNIT_POS", 2),
    ATTEMPTS['guard'],
)

puzzle(
    "puzzles.map_2d", "4 · Map in two dimensions",
    "`a` is a 3×3 matrix stored row by row; the cube is 4×4 units. Unit `(UNIT_POS_X, "
    "UNIT_POS_Y)` handles column x of row y: `out[row * size + col] = a[row * size + col] + 10`.",
    add_ten_spec, {"a": _f(range(9))}, 9, ("a", "out", "size"), _1D, (4, 4, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_2d(a: Slice[f32], out: SliceMut[f32], size: u32):\n"
              "    col = UNIT_POS_X\n    row = UNIT_POS_Y", 2),
    ATTEMPTS['map_2d'],
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
    ATTEMPTS['broadcast'],
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
    ATTEMPTS['blocks']
)

puzzle(
    "puzzles.blocks_2d", "7 · Blocks in two dimensions",
    "A 5×5 matrix, cubes of 3×3 units, 2×2 cubes. Build the row and column from the cube's and "
    "the unit's coordinates.",
    add_ten_spec, {"a": _f(range(25))}, 25, ("a", "out", "size"), (2, 2, 1), (3, 3, 1),
    Limits(1, 1, 0, 0),
    _template("def add_ten_blocks_2d(a: Slice[f32], out: SliceMut[f32], size: u32):", 4),
    ATTEMPTS['blocks_2d'],
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
    ATTEMPTS['shared'],
)

puzzle(
    "puzzles.pooling", "9 · Pooling",
    "A sliding window of three: `out[i] = a[i - 2] + a[i - 1] + a[i]`, where an index before 0 "
    "counts as 0. One global read per unit again: share the loads through a tile.",
    window3_spec, {"a": _f(range(8))}, 8, ("a", "out"), _1D, (8, 1, 1),
    Limits(1, 1, 3, 1),
    _template("def window3(a: Slice[f32], out: SliceMut[f32]):\n"
              "    tile = SharedMemory[f32](8)\n    i = UNIT_POS", 7),
    ATTEMPTS['pooling'],
)

puzzle(
    "puzzles.dot", "10 · Dot product",
    "`out[0] = sum(a * b)` over 8 items with one cube of 8 units. Every unit reads its two "
    "items once; a single unit writes the result.",
    dot_spec, {"a": _f(range(8)), "b": _f([1, 2, 1, 2, 1, 2, 1, 2])}, 1, ("a", "b", "out"),
    _1D, (8, 1, 1), Limits(2, 1, 8, 4),
    _template("def dot(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):\n"
              "    products = SharedMemory[f32](8)\n    i = UNIT_POS", 7),
    ATTEMPTS['dot'],
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
    ATTEMPTS['conv1d'],
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
    ATTEMPTS['prefix_sum'],
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
    ATTEMPTS['axis_sum'],
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
    ATTEMPTS['matmul'],
    scalars={"size": 8},
)


def write_figures(folder: str | Path) -> list[Path]:
    """Write each puzzle's figure — its first attempt's access map, `AccessMap.to_svg()` — into
    `folder` as <name>.svg (notebooks/figures/puzzles/; tests/test_puzzles.py checks the
    committed files are what this writes)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for key, p in PUZZLES.items():
        path = out / f"{key.split('.', 1)[1]}.svg"
        path.write_text(p.first_try_map().to_svg() + "\n", encoding="utf-8")
        written.append(path)
    return written
