"""Chapter 13 · Performance II: memory access — coalescing, bank conflicts, tiles, autotune.

Every check reads an instrument, never a clock: sectors per plane-instruction and coalescing
efficiency (`AccessMap.transactions` / `coalescing()`), bank-conflict ways (`bank_conflicts` /
`conflicts()`), per-unit global reads (`AccessMap.scores`), the bytes a launch requests
(`inspect.work`), compiles counted from events, and the autotuner's own scoring function on a
table of samples. Counts that depend on how units are grouped into planes are made with 32-unit
planes (`perf_kernels.PLANE`), as an NVIDIA GPU groups them, so they are the same on every
machine; the kernel exercises' access maps are recorded on the CPU runtime, whose plane is 32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import CountExercise, KernelExercise, ValueExercise
from cubelab.exercises.launching import scale
from cubelab.exercises.perf_kernels import (PLANE, arg, coalesced, conflict_free, matmul_tiled,
                                            shared_strided, strided_read, upload)
from cubelab.prelude import *  # noqa: F403

# -- 13.1 sectors of a strided read -----------------------------------------------------------------


def _read_sectors(client: Any, stride: int) -> int:
    from cubelab.inspect import access_map

    x, out = upload(client, np.arange(PLANE * stride)), upload(client, np.zeros(PLANE))
    m = access_map(strided_read.launch, client, CubeCount.Static(1),  # noqa: F405
                   CubeDim.new_1d(PLANE), arg(x, PLANE * stride), arg(out, PLANE), stride,  # noqa
                   plane_width=PLANE)
    (row,) = [r for r in m.coalescing() if r.array == "x"]
    return row.sectors // row.instructions


@variants("ch13.sectors_of_a_stride", [dict(stride=2), dict(stride=3), dict(stride=6)])
def _sectors_of_a_stride(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch13.sectors_of_a_stride", "How many sectors does a strided read touch?",
        f"`strided_read` with `stride = {v.stride}`: unit i reads `x[i * {v.stride}]` (f32). One "
        "cube of 32 units is one plane, so the read is one plane-instruction. How many distinct "
        "32-byte sectors does it touch (`AccessMap.transactions[...].sectors`, with 32 units a "
        "plane)?",
        "The memory system serves a plane's access in 32-byte sectors, each 8 f32s. Address = "
        "index × 4 bytes; count the distinct 32-byte blocks the 32 addresses fall in. At stride 1 "
        "the plane's 128 bytes fill 4 sectors exactly; a stride spreads the same 128 bytes over "
        "more sectors, each only partly used.",
        nudge="Write down the byte addresses of units 0, 1, 2 … and see how many units share one "
        "32-byte block.",
        worked="A worked step on another stride: stride 4 puts unit i at byte 16·i, so two units "
        "share each 32-byte sector: 32 units touch 16 sectors (efficiency 4 / 16 = 25%).",
        misconceptions=[
            Misconception("the plane's bytes fill the fewest sectors", 4,
                          "4 sectors is the ideal — 128 bytes packed together, as at stride 1. "
                          "At a stride the addresses are spread out."),
            Misconception("every unit needs a sector of its own", PLANE,
                          "Not yet at this stride: neighbouring units still land in the same "
                          "32-byte sector. Only from stride 8 on is every unit alone in one."),
            Misconception("count bytes, not sectors", 128,
                          "The plane requests 128 bytes; the question is how many 32-byte "
                          "sectors must move to serve them."),
        ],
        code="@cube(launch=True)\n"
        "def strided_read(x: Slice[f32], out: SliceMut[f32], stride: u32):\n"
        "    i = ABSOLUTE_POS\n"
        "    if i < out.len():\n"
        "        out[i] = x[i * stride]\n\n"
        f"m = inspect.access_map(strided_read.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d(32), x, out, {v.stride}, plane_width=32)",
        value=lambda c: _read_sectors(c, v.stride),
        explanation="4 × stride sectors up to stride 8, then 32: from there on every unit has "
        "a sector to itself, and 7/8 of each is wasted.",
    )


# -- 13.2 make it coalesced ----------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def scale_rows_template(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):  # noqa: F405
    """Right values, but x (the fastest unit axis) walks down a column: stride `cols`."""
    r = ABSOLUTE_POS_X  # noqa: F405
    c = ABSOLUTE_POS_Y  # noqa: F405
    if r < rows and c < cols:
        out[r * cols + c] = x[r * cols + c] * f32(2.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_rows_transposed_out(x: Slice[f32], out: SliceMut[f32], rows: u32,  # noqa: F405
                              cols: u32):  # noqa: F405
    """Coalesced, but it writes the transpose: the values are wrong."""
    r = ABSOLUTE_POS_Y  # noqa: F405
    c = ABSOLUTE_POS_X  # noqa: F405
    if r < rows and c < cols:
        out[c * rows + r] = x[r * cols + c] * f32(2.0)  # noqa: F405


def _matrix(case: Any) -> dict[str, np.ndarray]:
    rows, cols = case
    return {"x": np.arange(rows * cols, dtype=np.float32) * 0.25,
            "out": np.full(rows * cols, -1.0, np.float32)}


def _launch_rows(kernel: Any, client: Any, h: dict[str, Any], case: Any) -> None:
    rows, cols = case
    n = rows * cols
    kernel.launch(client, CubeCount.Static(-(-cols // 16), -(-rows // 16)),  # noqa: F405
                  CubeDim.new_2d(16, 16), arg(h["x"], n), arg(h["out"], n), rows, cols)  # noqa


@variants("ch13.coalesce_it", [dict(yours=(48, 48)), dict(yours=(40, 40)), dict(yours=(64, 64))])
def _coalesce_it(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch13.coalesce_it", "Make this kernel coalesced",
        "`scale_rows` doubles every item of a row-major `rows × cols` matrix. Its values are "
        "right, but the access map shows its reads and writes using a fraction of the sectors "
        "they touch. Make every global access 100% efficient (32 units a plane) without "
        "changing the launch: 16 × 16 cubes, `CubeCount.Static(⌈cols / 16⌉, ⌈rows / 16⌉)`. "
        f"Checked on 32 × 32 and on yours ({v.yours[0]} × {v.yours[1]}): the values, then each "
        "line's efficiency from the access map.",
        "A plane is 32 consecutive units of a cube in UNIT_POS order — x fastest: in a 16 × 16 "
        "cube, two rows of 16 units that differ in x. For their addresses to be neighbours, "
        "the unit index that changes fastest (x) must pick the item that is next in memory: "
        "in a row-major matrix, the column.",
        (scale_rows_template, scale_rows_transposed_out),
        nudge="Which matrix index does ABSOLUTE_POS_X pick in the template, and how far apart "
        "in memory are the items of two neighbouring units?",
        worked="A worked step on another kernel: in a kernel over an `h × w` image stored "
        "row-major, `pixel[y * w + x]` with `x = ABSOLUTE_POS_X` puts units 0…15 of a plane on "
        "16 neighbouring floats (two 32-byte sectors).",
        cases=((32, 32), v.yours),
        inputs=_matrix, spec=lambda b, case: {"out": b["x"] * 2}, launch=_launch_rows,
        checks=(coalesced,),
    )


# -- 13.3 bank-conflict ways ------------------------------------------------------------------------

def _read_ways(client: Any, stride: int) -> int:
    from cubelab.inspect import access_map

    out = upload(client, np.zeros(PLANE))
    m = access_map(shared_strided.launch, client, CubeCount.Static(1),  # noqa: F405
                   CubeDim.new_1d(PLANE), arg(out, PLANE), stride, plane_width=PLANE)  # noqa
    return max(r.worst for r in m.conflicts() if r.kind == "read")


@variants("ch13.ways_of_a_stride", [dict(stride=6), dict(stride=12), dict(stride=24)])
def _ways_of_a_stride(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch13.ways_of_a_stride", "How many ways does the bank conflict have?",
        f"`shared_strided` with `stride = {v.stride}`: one cube of 32 units (one plane) fills "
        "`sm[UNIT_POS]`, syncs, then reads `sm[(UNIT_POS * stride) % 1024]`. How many ways does "
        "the read's bank conflict have — the most distinct 4-byte words one of the 32 banks "
        "must deliver (`AccessMap.conflicts()`'s worst ways)?",
        "Word w of shared memory lives in bank w mod 32, and a bank delivers one word per "
        "pass. The plane's read takes as many passes as the busiest bank has distinct words: "
        "1 is no conflict (and many units reading one word is a broadcast, also 1).",
        nudge="List the banks (UNIT_POS × stride) mod 32 for the 32 units: how many distinct "
        "banks are there, and how many units share each?",
        worked="A worked step on another stride: stride 10 puts unit u in bank 10u mod 32, "
        "which takes the 16 even banks, two units each: a 2-way conflict (10 and 32 share a "
        "factor of 2).",
        misconceptions=[
            Misconception("the stride is the conflict", lambda v: v.stride,
                          "The ways are not the stride: count how many units land in one bank."),
            Misconception("every unit in one bank", PLANE,
                          "That needs a stride that is a multiple of 32 (a column of a 32-wide "
                          "tile)."),
            Misconception("only a power-of-two stride conflicts", 1,
                          "Any stride that shares a factor with 32 folds several units onto "
                          "one bank."),
        ],
        code="@cube(launch=True)\n"
        "def shared_strided(out: SliceMut[f32], stride: u32):\n"
        "    sm = SharedMemory[f32](1024)\n"
        "    sm[UNIT_POS] = f32.cast_from(UNIT_POS)\n"
        "    sync_cube()\n"
        "    out[ABSOLUTE_POS] = sm[(UNIT_POS * stride) % 1024]\n\n"
        f"m = inspect.access_map(shared_strided.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d(32), out, {v.stride}, plane_width=32)",
        value=lambda c: _read_ways(c, v.stride),
        explanation="gcd(stride, 32) ways: the units land in 32 / gcd banks, gcd units each. "
        "An odd stride — 33 for a padded 32-wide tile — is conflict-free.",
    )


# -- 13.4 remove the bank conflict ---------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def transpose_template(x: Slice[f32], out: SliceMut[f32], n: u32):  # noqa: F405
    """Coalesced both ways through a 32 × 32 tile, but the tile's column read is 32-way."""
    tile = SharedMemory[f32](32 * 32)  # noqa: F405
    bx = CUBE_POS_X * 32  # noqa: F405
    by = CUBE_POS_Y * 32  # noqa: F405
    for j in unroll(range(4)):  # noqa: F405
        row = UNIT_POS_Y + j * 8  # noqa: F405
        tile[row * 32 + UNIT_POS_X] = x[(by + row) * n + bx + UNIT_POS_X]  # noqa: F405
    sync_cube()  # noqa: F405
    for j in unroll(range(4)):  # noqa: F405
        row = UNIT_POS_Y + j * 8  # noqa: F405
        out[(bx + row) * n + by + UNIT_POS_X] = tile[UNIT_POS_X * 32 + row]  # noqa: F405


@cube(launch=True)  # noqa: F405
def transpose_column_writes(x: Slice[f32], out: SliceMut[f32], n: u32):  # noqa: F405
    """No bank conflict: the tile is read along its rows — so `out` is written down columns."""
    tile = SharedMemory[f32](32 * 32)  # noqa: F405
    bx = CUBE_POS_X * 32  # noqa: F405
    by = CUBE_POS_Y * 32  # noqa: F405
    for j in unroll(range(4)):  # noqa: F405
        row = UNIT_POS_Y + j * 8  # noqa: F405
        tile[row * 32 + UNIT_POS_X] = x[(by + row) * n + bx + UNIT_POS_X]  # noqa: F405
    sync_cube()  # noqa: F405
    for j in unroll(range(4)):  # noqa: F405
        row = UNIT_POS_Y + j * 8  # noqa: F405
        out[(bx + UNIT_POS_X) * n + by + row] = tile[row * 32 + UNIT_POS_X]  # noqa: F405


@cube(launch=True)  # noqa: F405
def transpose_naive(x: Slice[f32], out: SliceMut[f32], n: u32):  # noqa: F405
    """No shared memory at all: reads along rows, writes down columns."""
    col = CUBE_POS_X * 32 + UNIT_POS_X  # noqa: F405
    for j in unroll(range(4)):  # noqa: F405
        row = CUBE_POS_Y * 32 + UNIT_POS_Y + j * 8  # noqa: F405
        out[col * n + row] = x[row * n + col]


def _square(case: Any) -> dict[str, np.ndarray]:
    n = case
    return {"x": np.arange(n * n, dtype=np.float32), "out": np.full(n * n, -1.0, np.float32)}


def _launch_transpose(kernel: Any, client: Any, h: dict[str, Any], case: Any) -> None:
    n = case
    kernel.launch(client, CubeCount.Static(n // 32, n // 32), CubeDim.new_2d(32, 8),  # noqa
                  arg(h["x"], n * n), arg(h["out"], n * n), n)


def _transposed(b: dict[str, np.ndarray], case: Any) -> dict[str, np.ndarray]:
    n = case
    return {"out": b["x"].reshape(n, n).T.reshape(-1).copy()}


@variants("ch13.no_bank_conflict", [dict(yours=32), dict(yours=96), dict(yours=128)])
def _no_bank_conflict(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch13.no_bank_conflict", "Remove this bank conflict",
        "`transpose` goes through a 32 × 32 tile in shared memory so that both its read of `x` "
        "and its write of `out` are coalesced — but it reads the tile down a column, and the "
        "access map shows a 32-way bank conflict there. Remove the conflict, keeping both "
        "global accesses 100% efficient. Launch: `CubeCount.Static(n // 32, n // 32)` cubes of "
        f"`CubeDim.new_2d(32, 8)`; checked on n = 64 and on yours (n = {v.yours}): the values, "
        "every shared line's ways and every global line's efficiency.",
        "The column read `tile[UNIT_POS_X * 32 + row]` puts the 32 units of a plane on words "
        "32 apart: all in one bank. Give each tile row one word more than it needs (a row "
        "stride of 33): a column then walks through all 32 banks, and a row is still "
        "contiguous. Write and read the tile with the same stride.",
        lambda v: (transpose_template, transpose_column_writes, transpose_naive),
        nudge="Which bank does `tile[UNIT_POS_X * 32 + row]` fall in for units 0, 1, 2 …? "
        "What could make consecutive units land in consecutive banks while the tile still "
        "holds the same values?",
        worked="A worked step on another tile: a 16 × 16 tile read down a column by 16 units "
        "hits words 0, 16, 32, … — banks 0 and 16 only; stored with a row stride of 17 the "
        "same column is words 0, 17, 34, …, 16 different banks.",
        cases=(64, v.yours),
        inputs=_square, spec=_transposed, launch=_launch_transpose,
        checks=(conflict_free, coalesced),
    )


# -- 13.5 the tiled matmul's bytes -----------------------------------------------------------------

def _matmul_args(client: Any, n: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(1)
    a, b = upload(client, rng.random(n * n)), upload(client, rng.random(n * n))
    c = upload(client, np.zeros(n * n))
    return arg(a, n * n), arg(b, n * n), arg(c, n * n), n


def _tiled_bytes(client: Any, n: int, t: int) -> int:
    from cubelab.inspect import work

    return work(matmul_tiled.launch, client, CubeCount.Static(n // t, n // t),  # noqa: F405
                CubeDim.new_2d(t, t), *_matmul_args(client, n), t).bytes  # noqa: F405


@variants("ch13.tiled_bytes", [dict(n=32, t=4), dict(n=32, t=8), dict(n=64, t=16)])
def _tiled_bytes_exercise(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch13.tiled_bytes", "How many bytes does the tiled matmul ask for?",
        f"`matmul_tiled` with `t = {v.t}` multiplies two {v.n} × {v.n} f32 matrices: "
        f"{v.n // v.t} × {v.n // v.t} cubes of {v.t} × {v.t} units, each unit computing one "
        "item of `c`. How many bytes of *global* memory does the launch request "
        "(`inspect.work(...).bytes`)?",
        "Per step of its loop, each unit loads one item of `a` and one of `b` into shared "
        "memory; the loop has n / t steps; then it stores one item of `c`. Shared-memory "
        "accesses are not global traffic. The naive kernel loads 2n items per unit; the tile "
        "divides that by t.",
        nudge="How many global loads does one unit make in the whole loop, and how many units "
        "are there?",
        worked="A worked step on other sizes: n = 16, t = 2: each of the 256 units makes "
        "16 / 2 = 8 steps of 2 loads and 1 store at the end: 256 × (16 + 1) × 4 = 17 408 bytes.",
        misconceptions=[
            Misconception("a tile does not change what is requested",
                          lambda v: 2 * v.n ** 3 * 4 + v.n ** 2 * 4,
                          "That is the naive kernel's traffic: 2n loads a unit. With tiles, each "
                          "global item is loaded once per cube and then read t times from "
                          "shared memory."),
            Misconception("each matrix moves once", lambda v: 3 * v.n ** 2 * 4,
                          "That is the compulsory traffic. Every cube loads its own copy of the "
                          "tiles it needs, so a and b are loaded n / t times over."),
            Misconception("shared-memory accesses are traffic too",
                          lambda v: 2 * v.n ** 3 * 4 // v.t + v.n ** 2 * 4 + 2 * v.n ** 3 * 4
                          + 2 * v.n ** 3 * 4 // v.t,
                          "Shared memory is on the chip: `inspect.work` counts global memory, "
                          "which is what the roof's bandwidth is about."),
        ],
        code="for s in range(n // t):\n"
        "    ta[ty * t + tx] = a[row * n + s * t + tx]      # one global load of a\n"
        "    tb[ty * t + tx] = b[(s * t + ty) * n + col]    # one global load of b\n"
        "    sync_cube()\n"
        "    for k in unroll(range(t)):\n"
        "        acc += ta[ty * t + k] * tb[k * t + tx]     # shared reads\n"
        "    sync_cube()\n"
        "c[row * n + col] = acc                              # one global store",
        value=lambda c: _tiled_bytes(c, v.n, v.t),
        explanation="n² units × (2n / t loads + 1 store) × 4 bytes: intensity 2n³ flops over "
        "that — about t / 4 flops per byte, so every doubling of the tile doubles it.",
    )


# -- 13.6 tile the matmul -------------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def matmul8_template(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], n: u32):  # noqa: F405
    """The tile loop with its loads and barriers left out."""
    ta = SharedMemory[f32](64)  # noqa: F405
    tb = SharedMemory[f32](64)  # noqa: F405
    tx = UNIT_POS_X  # noqa: F405
    ty = UNIT_POS_Y  # noqa: F405
    row = CUBE_POS_Y * 8 + ty  # noqa: F405
    col = CUBE_POS_X * 8 + tx  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for s in range(n // 8):
        for k in unroll(range(8)):  # noqa: F405
            acc += ta[ty * 8 + k] * tb[k * 8 + tx]
    c[row * n + col] = acc


@cube(launch=True)  # noqa: F405
def matmul8_one_barrier(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], n: u32):  # noqa: F405
    """Right on the CPU runtime, which runs units in lockstep — but the next step's loads
    overwrite the tiles while other units may still read them."""
    ta = SharedMemory[f32](64)  # noqa: F405
    tb = SharedMemory[f32](64)  # noqa: F405
    tx = UNIT_POS_X  # noqa: F405
    ty = UNIT_POS_Y  # noqa: F405
    row = CUBE_POS_Y * 8 + ty  # noqa: F405
    col = CUBE_POS_X * 8 + tx  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for s in range(n // 8):
        ta[ty * 8 + tx] = a[row * n + s * 8 + tx]
        tb[ty * 8 + tx] = b[(s * 8 + ty) * n + col]
        sync_cube()  # noqa: F405
        for k in unroll(range(8)):  # noqa: F405
            acc += ta[ty * 8 + k] * tb[k * 8 + tx]
    c[row * n + col] = acc


@cube(launch=True)  # noqa: F405
def matmul8_from_global(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], n: u32):  # noqa: F405
    """Right values, no tile: 2n global loads a unit."""
    row = ABSOLUTE_POS_Y  # noqa: F405
    col = ABSOLUTE_POS_X  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for k in range(n):
        acc += a[row * n + k] * b[k * n + col]
    c[row * n + col] = acc


def _tile_reads(m: Any, case: Any) -> str | None:
    """Each unit loads at most 2n / 8 items of global memory."""
    n = case
    limit = 2 * n // 8
    worst = max(m.scores, key=lambda s: s.global_reads)
    if worst.global_reads > limit:
        return (f"unit {worst.unit} makes {worst.global_reads} global reads; with 8 × 8 tiles "
                f"{limit} are enough (each loads one item of a and one of b per tile step)")
    return None


def _matmul_inputs(case: Any) -> dict[str, np.ndarray]:
    n = case
    rng = np.random.default_rng(n)
    return {"a": rng.random(n * n, dtype=np.float32), "b": rng.random(n * n, dtype=np.float32),
            "c": np.full(n * n, -1.0, np.float32)}


def _matmul_spec(b: dict[str, np.ndarray], case: Any) -> dict[str, np.ndarray]:
    n = case
    return {"c": (b["a"].reshape(n, n) @ b["b"].reshape(n, n)).reshape(-1)}


def _launch_matmul8(kernel: Any, client: Any, h: dict[str, Any], case: Any) -> None:
    n = case
    kernel.launch(client, CubeCount.Static(n // 8, n // 8), CubeDim.new_2d(8, 8),  # noqa: F405
                  arg(h["a"], n * n), arg(h["b"], n * n), arg(h["c"], n * n), n)


@variants("ch13.tile_the_matmul", [dict(yours=16), dict(yours=24), dict(yours=40)])
def _tile_the_matmul(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch13.tile_the_matmul", "Tile the matmul",
        "`matmul8` multiplies two `n × n` matrices with one unit per item of `c`, in "
        "`CubeCount.Static(n // 8, n // 8)` cubes of `CubeDim.new_2d(8, 8)`. Its tile loop is "
        "there, but the loads that fill the tiles `ta` and `tb` and the barriers are missing. "
        "Fill them in: each unit loads one item of `a` and one of `b` per step. Checked on "
        f"n = 32 and on yours (n = {v.yours}): the values, races, and each unit's global "
        "reads from the access map (at most 2n / 8).",
        "Step s covers columns s·8 … s·8 + 7 of a's rows and rows s·8 … s·8 + 7 of b's columns. "
        "Unit (tx, ty) loads `a[row, s·8 + tx]` into `ta[ty, tx]` and `b[s·8 + ty, col]` into "
        "`tb[ty, tx]`. A barrier after the loads (nobody reads a tile before it is full) and "
        "one after the products (nobody overwrites it while a neighbour still reads it).",
        (matmul8_template, matmul8_one_barrier, matmul8_from_global),
        nudge="Which items of a and b does the inner loop of step s read, and which unit could "
        "have loaded each into shared memory?",
        worked="A worked step on a 1-D kernel: a moving sum over tiles of 8 loads `tile[UNIT_POS]"
        " = x[s * 8 + UNIT_POS]`, calls `sync_cube()`, sums the tile, and calls `sync_cube()` "
        "again before the next step overwrites it.",
        cases=(32, v.yours),
        inputs=_matmul_inputs, spec=_matmul_spec, launch=_launch_matmul8,
        checks=(_tile_reads,), rtol=1e-4, atol=1e-4,
    )


# -- 13.7 autotune: keys are not KernelIds ----------------------------------------------------------

@cube(launch=True)  # noqa: F405
def scale_unrolled(x: Slice[f32], out: SliceMut[f32], a: f32, per_unit: Comptime[int]):  # noqa
    """Each unit scales `per_unit` consecutive items: a Comptime value, so every value is its own
    KernelId."""
    base = ABSOLUTE_POS * per_unit  # noqa: F405
    for k in unroll(range(per_unit)):  # noqa: F405
        if base + k < out.len():
            out[base + k] = x[base + k] * a


def _tuned_calls(client: Any, sizes: tuple[int, ...]) -> None:
    from cubelab.runtime.autotune import Tuner

    tuner = Tuner(client, "scale", key=lambda x, out, n: n, warmups=0, samples=1)

    @tuner.candidate
    def cubes_of_64(x: Any, out: Any, n: int) -> None:
        scale.launch(client, CubeCount.Static(-(-n // 64)), CubeDim.new_1d(64),  # noqa: F405
                     arg(x, n), arg(out, n), 2.0)

    @tuner.candidate
    def cubes_of_256(x: Any, out: Any, n: int) -> None:
        scale.launch(client, CubeCount.Static(-(-n // 256)), CubeDim.new_1d(256),  # noqa: F405
                     arg(x, n), arg(out, n), 2.0)

    @tuner.candidate
    def unrolled(x: Any, out: Any, n: int) -> None:  # 128 units, n // 128 items each
        scale_unrolled.launch(client, CubeCount.Static(2), CubeDim.new_1d(64),  # noqa: F405
                              arg(x, n), arg(out, n), 2.0, n // 128)

    biggest = max(sizes)
    x, out = upload(client, np.arange(biggest)), upload(client, np.zeros(biggest))
    for n in sizes:
        tuner(x, out, n)


@variants("ch13.autotune_compiles", [dict(sizes=(1024, 4096, 1024)),
                                     dict(sizes=(512, 1024, 2048, 512)),
                                     dict(sizes=(256, 256, 512, 1024, 2048))])
def _autotune_compiles(v: Any) -> CountExercise:
    calls = "\n".join(f"tuner(x, out, {n})" for n in v.sizes)
    return CountExercise(
        "ch13.autotune_compiles", "Tuner keys are not KernelIds: how many compiles?",
        "A `Tuner` keyed on the size `n` has three candidates: `scale` in cubes of 64 units, "
        "`scale` in cubes of 256, and `scale_unrolled`, whose `per_unit` is a Comptime value "
        "computed from `n` (`n // 128`). After `client.clear_cache()` it is called with the "
        f"sizes below. How many compiles (`CompileFinished`) happen?\n\n"
        "(`n` reaches `scale` as a buffer length — runtime data — and `per_unit` reaches "
        "`scale_unrolled` as a Comptime value.)",
        "A tuner searches once per *key* it has not seen: it precompiles every candidate under "
        "a dry run, measures them, and caches the winner for that key. Precompiling is a "
        "launch like any other: it compiles only a KernelId the pipeline cache has not seen. "
        "A new key whose candidates have the same KernelIds as before compiles nothing; a "
        "Comptime value that changes with the key is a new KernelId.",
        code="tuner = Tuner(client, \"scale\", key=lambda x, out, n: n)\n"
        "# candidates: cubes_of_64, cubes_of_256, unrolled (per_unit = n // 128)\n"
        f"{calls}",
        nudge="For each call: is the key new (a search), and if so, which of the three "
        "candidates' KernelIds has the cache not seen yet?",
        worked="A worked step on another tuner: two candidates, one with a Comptime `n`, called "
        "with sizes 100, 200, 100: the first search compiles both (2), the second only the "
        "Comptime one (1), the third call finds its key cached (0): 3 compiles.",
        misconceptions=[
            Misconception("every search compiles every candidate",
                          lambda v: 3 * len(set(v.sizes)),
                          "A search precompiles every candidate, but a KernelId the cache "
                          "already holds is a cache hit, not a compile."),
            Misconception("every call searches", lambda v: 3 * len(v.sizes),
                          "The winner is cached per key: a key seen before runs its winner "
                          "without a search."),
            Misconception("only the first search compiles", 3,
                          "`per_unit` is a Comptime value: a new value is a new KernelId."),
        ],
        launches=[lambda c: _tuned_calls(c, v.sizes)],
        count=lambda r: r.compiles, what="compiles",
        explanation="Three for the first search, then one per new key — only the Comptime "
        "candidate's KernelId changes with n. A repeated key searches no more.",
    )


# -- 13.8 autotune: which candidate wins the score? -------------------------------------------------

CANDIDATES = ("cube_64", "cube_128", "cube_256", "cube_512")
# µs per run of each candidate, one table per variant: the candidates with the lowest score, the
# fastest single run, the lowest mean and the lowest median are four different ones
SAMPLES = (
    ((110, 110, 110, 130, 300), (90, 110, 120, 150, 200), (80, 120, 120, 300, 300),
     (100, 100, 130, 130, 200)),
    ((80, 80, 150, 300, 300), (90, 100, 120, 200, 300), (120, 120, 130, 130, 200),
     (110, 130, 130, 150, 200)),
    ((90, 100, 110, 120, 300), (100, 110, 130, 130, 130), (90, 110, 130, 150, 150),
     (80, 130, 150, 200, 300)),
)


def _winner(table: Any, by: Any) -> str:
    scores = [by(list(s)) for s in table]
    return CANDIDATES[scores.index(min(scores))]


def _score_winner(table: Any) -> str:
    from cubelab.runtime.autotune import score

    return _winner(table, score)


@variants("ch13.autotune_winner", [dict(table=t) for t in SAMPLES])
def _autotune_winner(v: Any) -> ValueExercise:
    import statistics

    rows = "\n".join(f"{name:9} {list(s)}" for name, s in zip(CANDIDATES, v.table))
    return ValueExercise(
        "ch13.autotune_winner", "Which candidate does the tuner pick?",
        "A tuner measured four candidates five times each (µs per run, below). Which one does "
        "it cache as the winner? Answer with its name, e.g. `\"cube_64\"`. The check scores "
        "the samples with the tuner's own scoring function (`cubelab.runtime.autotune.score`).",
        "CubeCL scores a candidate optimistically but penalises spread: "
        "`(0.8·min + 0.2·median) × (1 + std / mean)`, lower wins. Mostly the fastest run — "
        "what the candidate can do — inflated by how much its runs scatter, since a noisy "
        "candidate's best run is partly luck.",
        nudge="Compute the score of each candidate — `cubelab.runtime.autotune.score([...])` "
        "does it for one list — and compare.",
        worked="A worked step on two other candidates: [100, 100, 100] scores 100 (no spread); "
        "[60, 100, 200] has min 60, median 100, mean 120 and std ≈ 59: "
        "(48 + 20) × 1.49 ≈ 101, so the steady one wins by a hair.",
        misconceptions=[
            Misconception("the fastest single run wins", lambda v: _winner(v.table, min),
                          "The fastest run alone is not the score: a candidate whose runs "
                          "scatter widely is penalised."),
            Misconception("the lowest mean wins",
                          lambda v: _winner(v.table, statistics.fmean),
                          "The score weights the fastest run most (0.8), not the average."),
            Misconception("the lowest median wins",
                          lambda v: _winner(v.table, statistics.median),
                          "The median is only a fifth of the score; the minimum carries 0.8."),
        ],
        code=f"{'candidate':9} µs per run\n{rows}",
        value=lambda c: _score_winner(v.table),
        explanation="The score balances the best run against the spread; the fastest single "
        "run, the mean and the median each pick another candidate here.",
    )
