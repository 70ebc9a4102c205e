"""The performance capstone: a row-wise softmax taken from one unit per row to a cube per row
whose accesses are coalesced and whose shared-memory reductions are free of bank conflicts, and
placed on the roofline.

Five graded steps: write the one-unit-per-row softmax (values on two shapes, out-of-bounds and
races from the access map); count the model's traffic and the flops of that kernel
(`inspect.work`: `sector_bytes`, `flops`); make the cube-per-row kernel coalesced
(`AccessMap.coalescing()`, races); then free its reductions of bank conflicts
(`AccessMap.conflicts()`). Every check is an instrument; the roofline the notebook draws is for
the student to read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import KernelExercise, ValueExercise
from cubelab.exercises.perf_kernels import PLANE, arg, coalesced, conflict_free, upload
from cubelab.prelude import *  # noqa: F403

LOWEST = -3.0e38  # below every f32 the inputs hold: the start of a running max


def softmax_reference(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _inputs(case: Any) -> dict[str, np.ndarray]:
    rows, cols = case
    rng = np.random.default_rng(rows * 1000 + cols)
    # up to ±100: exp(100) overflows f32, so a softmax that does not subtract the max fails
    return {"x": (rng.random(rows * cols, dtype=np.float32) * 200 - 100).astype(np.float32),
            "out": np.full(rows * cols, -1.0, np.float32)}


def _spec(b: dict[str, np.ndarray], case: Any) -> dict[str, np.ndarray]:
    rows, cols = case
    return {"out": softmax_reference(b["x"].reshape(rows, cols)).reshape(-1).astype(np.float32)}


# -- 1. one unit per row -------------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def softmax_naive_template(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):  # noqa
    ...


@cube(launch=True)  # noqa: F405
def softmax_without_max(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):  # noqa: F405
    """exp(x) / sum exp(x): the same in exact arithmetic, inf / inf = NaN in f32 at x = 100."""
    row = ABSOLUTE_POS  # noqa: F405
    if row < rows:
        total = f32(0.0)  # noqa: F405
        for c in range(cols):
            total += f32.exp(x[row * cols + c])  # noqa: F405
        for c in range(cols):
            out[row * cols + c] = f32.exp(x[row * cols + c]) / total  # noqa: F405


@cube(launch=True)  # noqa: F405
def softmax_unguarded(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):  # noqa: F405
    """Right where every unit has a row; the units past the last row read and write past x."""
    row = ABSOLUTE_POS  # noqa: F405
    m = f32(LOWEST)  # noqa: F405
    for c in range(cols):
        m = f32.max(m, x[row * cols + c])  # noqa: F405
    total = f32(0.0)  # noqa: F405
    for c in range(cols):
        total += f32.exp(x[row * cols + c] - m)  # noqa: F405
    for c in range(cols):
        out[row * cols + c] = f32.exp(x[row * cols + c] - m) / total  # noqa: F405


def _launch_naive(kernel: Any, client: Any, h: dict[str, Any], case: Any) -> None:
    rows, cols = case
    kernel.launch(client, CubeCount.Static(-(-rows // PLANE)), CubeDim.new_1d(PLANE),  # noqa
                  arg(h["x"], rows * cols), arg(h["out"], rows * cols), rows, cols)


@variants("capstone_performance.softmax_naive",
          [dict(yours=(40, 24)), dict(yours=(20, 100)), dict(yours=(33, 16))])
def _softmax_naive(v: Any) -> KernelExercise:
    return KernelExercise(
        "capstone_performance.softmax_naive", "Step 1 · softmax, one unit per row",
        "Write `softmax_naive(x, out, rows, cols)`: for each row r of the row-major "
        "`rows × cols` matrix `x`, `out[r, c] = exp(x[r, c] - max_r) / Σ_c exp(x[r, c] - max_r)`. "
        "One unit per row, launched as `CubeCount.Static(⌈rows / 32⌉)` cubes of 32 units. "
        f"Checked on 8 × 64 and on yours ({v.yours[0]} × {v.yours[1]}); `x` holds values up to "
        "±100.",
        "Three passes over the unit's row: the largest value, then the sum of exp(x − max), then "
        "each exp(x − max) divided by the sum. Subtracting the max keeps every exp at most 1 — "
        "exp(100) does not fit in an f32. A launch comes in whole cubes: guard the units that "
        "have no row. Start the running max at a very negative f32 (`f32(-3.0e38)`); "
        "`f32.max` and `f32.exp` are the library calls.",
        (softmax_naive_template, softmax_without_max, softmax_unguarded),
        nudge="Which row does a unit own, what must it know about that row before it can write "
        "any item, and what do the units past the last row do?",
        worked="A worked step on another row-wise kernel: `normalise` (each item over the row's "
        "sum) makes one pass for the sum into a local `total`, then a second pass writing "
        "`x[r * cols + c] / total`, all inside `if row < rows:`.",
        cases=((8, 64), v.yours),
        inputs=_inputs, spec=_spec, launch=_launch_naive, rtol=1e-4, atol=1e-6,
    )


# -- 2, 3. what the naive kernel asks of the memory system, and its flops ------------------------

@cube(launch=True)  # noqa: F405
def softmax_listing(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):  # noqa: F405
    """The one-unit-per-row softmax the value steps ask about."""
    row = ABSOLUTE_POS  # noqa: F405
    if row < rows:
        m = f32(LOWEST)  # noqa: F405
        for c in range(cols):
            m = f32.max(m, x[row * cols + c])  # noqa: F405
        total = f32(0.0)  # noqa: F405
        for c in range(cols):
            total += f32.exp(x[row * cols + c] - m)  # noqa: F405
        for c in range(cols):
            out[row * cols + c] = f32.exp(x[row * cols + c] - m) / total  # noqa: F405


LISTING = '''@cube(launch=True)
def softmax_naive(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    row = ABSOLUTE_POS
    if row < rows:
        m = f32(-3.0e38)
        for c in range(cols):
            m = f32.max(m, x[row * cols + c])
        total = f32(0.0)
        for c in range(cols):
            total += f32.exp(x[row * cols + c] - m)
        for c in range(cols):
            out[row * cols + c] = f32.exp(x[row * cols + c] - m) / total
'''


def _listing_work(client: Any, rows: int, cols: int) -> Any:
    from cubelab.inspect import work

    h = {k: upload(client, a) for k, a in _inputs((rows, cols)).items()}
    return work(softmax_listing.launch, client, CubeCount.Static(-(-rows // PLANE)),  # noqa
                CubeDim.new_1d(PLANE), arg(h["x"], rows * cols),  # noqa: F405
                arg(h["out"], rows * cols), rows, cols)


SHAPES = [dict(rows=32, cols=64), dict(rows=16, cols=48), dict(rows=24, cols=40)]


@variants("capstone_performance.naive_sectors", SHAPES)
def _naive_sectors(v: Any) -> ValueExercise:
    return ValueExercise(
        "capstone_performance.naive_sectors", "Step 2 · what the naive softmax costs the memory "
        "system",
        f"The one-unit-per-row softmax below, on a {v.rows} × {v.cols} matrix, one cube of 32 "
        "units (each a row). It *requests* 16 bytes an item (three reads and a write). How many "
        "bytes does the sector model say the memory system moves — `inspect.work(...)"
        ".sector_bytes`, 32-byte sectors per plane-instruction, 32 units a plane?",
        "At step c of a loop, the plane's units read `x[row * cols + c]` for 32 different rows: "
        "addresses `cols × 4` bytes apart. Once that is 32 bytes or more, every unit's 4 bytes "
        "sit in a sector of their own — 32 bytes moved for 4 used.",
        nudge="How far apart in memory are the items two neighbouring units read at the same "
        "step, and how many sectors does one plane-instruction then touch?",
        worked="A worked step on another kernel: a one-unit-per-row *sum* of an 8 × 100 "
        "matrix reads each item once, 100 floats apart between units: every read is a sector "
        "of its own, 8 × 100 × 32 = 25 600 bytes for 3 200 requested.",
        misconceptions=[
            Misconception("the requested bytes", lambda v: 16 * v.rows * v.cols,
                          "That is what the kernel asks for; the question is what the sectors "
                          "that serve it hold."),
            Misconception("every matrix moves once", lambda v: 8 * v.rows * v.cols,
                          "That is the compulsory traffic (x read once, out written once)."),
            Misconception("a sector per plane-instruction", lambda v: 4 * v.cols * 32,
                          "The plane's 32 units read 32 different rows: their addresses are far "
                          "apart, so one instruction touches up to 32 sectors."),
        ],
        code=LISTING + f"\nw = inspect.work(softmax_naive.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d(32), x, out, {v.rows}, {v.cols})\nw.sector_bytes",
        value=lambda c: _listing_work(c, v.rows, v.cols).sector_bytes,
        explanation="Four accesses an item, each its own 32-byte sector: 128 bytes moved for 16 "
        "requested — 8× the traffic, before any cache helps.",
    )


@variants("capstone_performance.naive_flops", SHAPES)
def _naive_flops(v: Any) -> ValueExercise:
    return ValueExercise(
        "capstone_performance.naive_flops", "Step 3 · the naive softmax's flops",
        f"The same kernel on the same {v.rows} × {v.cols} matrix. How many floating-point "
        "operations does it execute (`inspect.work(...).flops`: an add, a subtract, a multiply, "
        "a divide, a min or max is one, a math function such as `exp` one)?",
        "Count per item of the row, pass by pass: the max pass, the sum pass, the write pass. "
        "Integer index arithmetic and the loop counters are not floating-point operations.",
        nudge="Go through the three loops: which float operations does one iteration of each "
        "execute?",
        worked="A worked step on another kernel: `out = exp(x) * 2 + 1` on 10 items is one "
        "exp, one multiply and one add an item: 30 flops.",
        misconceptions=[
            Misconception("exp is not a flop", lambda v: 5 * v.rows * v.cols,
                          "A roofline counts a math function as one operation (a GPU needs "
                          "several instructions for it, so this is a lower bound)."),
            Misconception("max is not arithmetic", lambda v: 6 * v.rows * v.cols,
                          "`max` is a floating-point operation: it compares and picks on the "
                          "float unit."),
        ],
        code=LISTING + f"\nw = inspect.work(softmax_naive.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d(32), x, out, {v.rows}, {v.cols})\nw.flops",
        value=lambda c: _listing_work(c, v.rows, v.cols).flops,
        explanation="1 (max) + 3 (subtract, exp, add) + 3 (subtract, exp, divide) = 7 an item: "
        "7 / 16 flops per requested byte, far left of any GPU's ridge — memory-bound, so the "
        "bytes are what to fix.",
    )


# -- 4, 5. a cube per row: coalesced, then conflict-free ---------------------------------------

@cube(launch=True)  # noqa: F405
def softmax_cube_template(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    """A cube of 256 units per row, each unit a contiguous chunk of `cols / 256` items (strided
    across the plane), reduced in shared memory with interleaved addressing (bank conflicts)."""
    sm = SharedMemory[f32](256)  # noqa: F405
    row = CUBE_POS  # noqa: F405
    per = cols // 256
    m = f32(LOWEST)  # noqa: F405
    for k in range(per):
        m = f32.max(m, x[row * cols + UNIT_POS * per + k])  # noqa: F405
    sm[UNIT_POS] = m  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(1) << u32(k)  # noqa: F405
        i = u32(2) * s * UNIT_POS  # noqa: F405
        if i < 256:
            sm[i] = f32.max(sm[i], sm[i + s])  # noqa: F405
        sync_cube()  # noqa: F405
    m = sm[0]
    sync_cube()  # noqa: F405
    total = f32(0.0)  # noqa: F405
    for k in range(per):
        total += f32.exp(x[row * cols + UNIT_POS * per + k] - m)  # noqa: F405
    sm[UNIT_POS] = total  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(1) << u32(k)  # noqa: F405
        i = u32(2) * s * UNIT_POS  # noqa: F405
        if i < 256:
            sm[i] = sm[i] + sm[i + s]
        sync_cube()  # noqa: F405
    total = sm[0]
    for k in range(per):
        c = row * cols + UNIT_POS * per + k  # noqa: F405
        out[c] = f32.exp(x[c] - m) / total  # noqa: F405


@cube(launch=True)  # noqa: F405
def softmax_cube_coalesced(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    """Coalesced (item k·256 + UNIT_POS), but the reductions still use interleaved addressing."""
    sm = SharedMemory[f32](256)  # noqa: F405
    row = CUBE_POS  # noqa: F405
    per = cols // 256
    m = f32(LOWEST)  # noqa: F405
    for k in range(per):
        m = f32.max(m, x[row * cols + k * 256 + UNIT_POS])  # noqa: F405
    sm[UNIT_POS] = m  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(1) << u32(k)  # noqa: F405
        i = u32(2) * s * UNIT_POS  # noqa: F405
        if i < 256:
            sm[i] = f32.max(sm[i], sm[i + s])  # noqa: F405
        sync_cube()  # noqa: F405
    m = sm[0]
    sync_cube()  # noqa: F405
    total = f32(0.0)  # noqa: F405
    for k in range(per):
        total += f32.exp(x[row * cols + k * 256 + UNIT_POS] - m)  # noqa: F405
    sm[UNIT_POS] = total  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(1) << u32(k)  # noqa: F405
        i = u32(2) * s * UNIT_POS  # noqa: F405
        if i < 256:
            sm[i] = sm[i] + sm[i + s]
        sync_cube()  # noqa: F405
    total = sm[0]
    for k in range(per):
        c = row * cols + k * 256 + UNIT_POS  # noqa: F405
        out[c] = f32.exp(x[c] - m) / total  # noqa: F405


@cube(launch=True)  # noqa: F405
def softmax_cube_racy(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    """Coalesced, but the sum's first store to sm[0] races with the other units' read of the
    max from sm[0] (the barrier between them is missing)."""
    sm = SharedMemory[f32](256)  # noqa: F405
    row = CUBE_POS  # noqa: F405
    per = cols // 256
    m = f32(LOWEST)  # noqa: F405
    for k in range(per):
        m = f32.max(m, x[row * cols + k * 256 + UNIT_POS])  # noqa: F405
    sm[UNIT_POS] = m  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(128) >> u32(k)  # noqa: F405
        if UNIT_POS < s:  # noqa: F405
            sm[UNIT_POS] = f32.max(sm[UNIT_POS], sm[UNIT_POS + s])  # noqa: F405
        sync_cube()  # noqa: F405
    m = sm[0]
    total = f32(0.0)  # noqa: F405
    for k in range(per):
        total += f32.exp(x[row * cols + k * 256 + UNIT_POS] - m)  # noqa: F405
    sm[UNIT_POS] = total  # noqa: F405
    sync_cube()  # noqa: F405
    for k in unroll(range(8)):  # noqa: F405
        s = u32(128) >> u32(k)  # noqa: F405
        if UNIT_POS < s:  # noqa: F405
            sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]  # noqa: F405
        sync_cube()  # noqa: F405
    total = sm[0]
    for k in range(per):
        c = row * cols + k * 256 + UNIT_POS  # noqa: F405
        out[c] = f32.exp(x[c] - m) / total  # noqa: F405


def _launch_cube(kernel: Any, client: Any, h: dict[str, Any], case: Any) -> None:
    rows, cols = case
    kernel.launch(client, CubeCount.Static(rows), CubeDim.new_1d(256),  # noqa: F405
                  arg(h["x"], rows * cols), arg(h["out"], rows * cols), cols)


CUBE_SHAPES = [dict(yours=(3, 768)), dict(yours=(2, 1024)), dict(yours=(5, 512))]


@variants("capstone_performance.softmax_coalesced", CUBE_SHAPES)
def _softmax_coalesced(v: Any) -> KernelExercise:
    return KernelExercise(
        "capstone_performance.softmax_coalesced", "Step 4 · a cube per row, coalesced",
        "`softmax_cube` gives each row a cube of 256 units (`CubeCount.Static(rows)`, "
        "`CubeDim.new_1d(256)`; `cols` a multiple of 256): each unit handles `cols / 256` items, "
        "the max and the sum are reduced in shared memory. Its values are right, but each unit "
        "walks its own contiguous chunk of the row. Make every global access 100% efficient "
        f"(32 units a plane). Checked on 4 × 512 and on yours ({v.yours[0]} × {v.yours[1]}): the "
        "values, races, and each global line's efficiency.",
        "For a plane's 32 accesses to be neighbours, the item a unit takes at step k must be "
        "next to its neighbour's at the same step: item `k * 256 + UNIT_POS` of the row, not "
        "`UNIT_POS * per + k`. Every unit still handles `cols / 256` items.",
        (softmax_cube_template, softmax_cube_racy),
        nudge="At step k of a loop, which items do units 0, 1, 2 … of a plane read, and how far "
        "apart are they?",
        worked="A worked step on another kernel: a cube of 64 units summing 640 items reads "
        "`x[k * 64 + UNIT_POS]` at step k — units 0…31 read 32 neighbours — rather than "
        "`x[UNIT_POS * 10 + k]`, which puts neighbours 40 bytes apart.",
        cases=((4, 512), v.yours),
        inputs=_inputs, spec=_spec, launch=_launch_cube, rtol=1e-4, atol=1e-6,
        checks=(coalesced,),
    )


@variants("capstone_performance.softmax_conflict_free", CUBE_SHAPES)
def _softmax_conflict_free(v: Any) -> KernelExercise:
    return KernelExercise(
        "capstone_performance.softmax_conflict_free", "Step 5 · reductions without bank "
        "conflicts",
        "Start from your coalesced `softmax_cube`. Its reductions halve the live values with "
        "*interleaved addressing* — at step s, unit u combines `sm[2·s·u]` and `sm[2·s·u + s]` "
        "— and the access map shows bank conflicts up to 8-way there. Make every shared access "
        "conflict-free, keeping the global accesses coalesced. Checked on 4 × 512 and on yours "
        f"({v.yours[0]} × {v.yours[1]}): the values, races, every global line's efficiency and "
        "every shared line's ways.",
        "Units 2·s apart in shared memory are 2·s banks apart: a plane's units fold onto 32 / 2s "
        "banks. *Sequential addressing* keeps the live values at the front: at each step, with "
        "s the half of what is left (128, 64, … 1), unit u < s combines `sm[u]` and `sm[u + s]`. "
        "Neighbouring units, neighbouring words — and the same result.",
        (softmax_cube_template, softmax_cube_coalesced, softmax_cube_racy),
        nudge="Which banks do the units of one plane touch at the reduction's first step, when "
        "unit u reads `sm[2 * u]`?",
        worked="A worked step on another reduction: summing 64 values with 32 units, sequential "
        "addressing makes step one `sm[u] += sm[u + 32]` for u < 32 (32 neighbouring words, one "
        "pass), then `sm[u] += sm[u + 16]` for u < 16, and so on down to `sm[0] += sm[1]`.",
        cases=((4, 512), v.yours),
        inputs=_inputs, spec=_spec, launch=_launch_cube, rtol=1e-4, atol=1e-6,
        checks=(coalesced, conflict_free),
    )
