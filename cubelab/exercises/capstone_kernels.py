"""Capstone of part I (kernels and the compiler, chapters 1–4): a softmax layer, from the kernel
to what is compiled.

The project, in five graded steps (notebooks/capstone_kernels.ipynb): write a row softmax (one
unit per row, guarded, stable for large inputs), unroll it over a comptime row length so the
compiled IR holds no loop, predict how many compiles a program of launches makes, which KernelId
fields two launches differ in, and how many `exp` ops the unrolled kernel's IR holds. Every check
runs the real thing: the student's kernels on hidden shapes on both runtimes (and the access map
for out-of-bounds), the KernelIds the launches really issued, the IR the compile really produced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, register, variants
from cubelab.exercises.kinds import (CountExercise, KernelExercise, KernelIdDiffExercise,
                                     ValueExercise)
from cubelab.exercises.puzzle_kinds import ProgramPuzzle, Trial, buffers_match, no_op
from cubelab.prelude import (
    ABSOLUTE_POS, BufferArg, Comptime, CubeCount, CubeDim, Slice, SliceMut, cube, exp, f32, u32,
    unroll)


def softmax_rows_spec(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    a = x.reshape(rows, cols).astype(np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(-1).astype(np.float32)


def _matrix(rows: int, cols: int, seed: int) -> np.ndarray:
    """Logits with a few large rows (values near 90: exp overflows f32 unless the row's maximum
    is subtracted first)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, (rows, cols))
    x[::3] += 88.0
    return x.astype(np.float32).reshape(-1)


def _arg(h: Any, n: int) -> Any:
    return BufferArg.from_raw_parts(h, n)


# -- step 1: the kernel ---------------------------------------------------------------------------

@cube(launch=True)
def softmax_rows(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    """The template (a blank body)."""
    r = ABSOLUTE_POS


@cube(launch=True)
def softmax_rows_naive(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    """exp(x) / Σ exp(x): right on small logits, inf / inf on large ones."""
    r = ABSOLUTE_POS
    if r < rows:
        s = f32(0.0)
        for j in range(cols):
            s += exp(x[r * cols + j])
        for j in range(cols):
            out[r * cols + j] = exp(x[r * cols + j]) / s


@cube(launch=True)
def softmax_rows_unguarded(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    """Stable, but the units past the last row read and write past the end."""
    r = ABSOLUTE_POS
    m = x[r * cols]
    for j in range(1, cols):
        m = max(m, x[r * cols + j])
    s = f32(0.0)
    for j in range(cols):
        s += exp(x[r * cols + j] - m)
    for j in range(cols):
        out[r * cols + j] = exp(x[r * cols + j] - m) / s


_SHAPES = [(6, 10, 1, 8), (13, 7, 2, 8), (5, 16, 1, 8), (20, 3, 3, 8)]  # rows, cols, cubes, units


def _softmax_inputs(case: tuple[int, int, int, int]) -> dict[str, np.ndarray]:
    rows, cols, _, _ = case
    return {"x": _matrix(rows, cols, rows * 31 + cols), "out": np.full(rows * cols, -1.0,
                                                                       np.float32)}


def _softmax_launch(kernel: Any, client: Any, h: dict[str, Any],
                    case: tuple[int, int, int, int]) -> None:
    rows, cols, cubes, units = case
    kernel.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(units),
                  _arg(h["x"], rows * cols), _arg(h["out"], rows * cols), rows, cols)


@variants("capstone_kernels.softmax", [dict(yours=s) for s in _SHAPES[1:]])
def _softmax(v: Any) -> KernelExercise:
    rows, cols, cubes, units = v.yours
    return KernelExercise(
        "capstone_kernels.softmax", "Step 1 · A row softmax",
        "Write `softmax_rows`: `x` is a `rows × cols` matrix stored row by row, and `out[r, j] = "
        "exp(x[r, j] − m_r) / Σ_k exp(x[r, k] − m_r)` with `m_r` the row's maximum. One unit per "
        "row (`ABSOLUTE_POS` is the row); there are more units than rows. Some rows hold logits "
        "near 90: `exp(90)` overflows f32, which is why the maximum is subtracted. Checked on 6 × "
        f"10 in one cube of 8 and on yours: {rows} × {cols} in {cubes} cube(s) of {units}.",
        "Three passes over the row: its maximum, then the sum of `exp(x − max)`, then each "
        "item's share. Guard the row (`if r < rows`): the units past the last row must touch "
        "nothing.",
        (softmax_rows, softmax_rows_naive, softmax_rows_unguarded),
        nudge="Which items does the unit of row r read, and which units have no row at all?",
        worked="A row [1, 2, 3]: max 3; exp(-2) + exp(-1) + exp(0) = 1.503; out = [0.090, "
        "0.245, 0.665]. A row [100, 100]: exp(0) + exp(0) = 2, out = [0.5, 0.5] — where exp(100) "
        "alone would be inf.",
        inputs=_softmax_inputs,
        spec=lambda b, case: {"out": softmax_rows_spec(b["x"], case[0], case[1])},
        launch=_softmax_launch, cases=[_SHAPES[0], v.yours], rtol=1e-4, atol=1e-6)


# -- step 2: unrolled over a comptime row length --------------------------------------------------

_UNROLL_SHAPES = ((4, 5), (6, 8))


def _play_unrolled(answer: Any, client: Any, trial: Trial) -> None:
    for rows, cols in _UNROLL_SHAPES:
        x = client.create_from_slice(f32.as_bytes(_matrix(rows, cols, rows + cols)))
        out = client.create_from_slice(bytes(4 * rows * cols))
        answer.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),
                      _arg(x, rows * cols), _arg(out, rows * cols), rows, cols)
        trial.read(f"out ({rows} × {cols})", out)


_UNROLLED_FIRST = '''@cube(launch=True)
def softmax_fixed(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: Comptime[int]):
    # FILL ME IN: your softmax, with the loops unrolled over the comptime row length
    r = ABSOLUTE_POS
'''


def _unrolled_first() -> Any:
    import linecache

    text = "from cubelab.prelude import *\n" + _UNROLLED_FIRST
    name = "<capstone_kernels unrolled template>"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    ns: dict[str, Any] = {}
    exec(compile(text, name, "exec"), ns)  # noqa: S102 - our own template text
    return ns["softmax_fixed"]


@cube(launch=True)
def softmax_looped(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: Comptime[int]):
    """Comptime bounds, runtime loops: right values, loops in the IR."""
    r = ABSOLUTE_POS
    if r < rows:
        m = x[r * cols]
        for j in range(1, cols):
            m = max(m, x[r * cols + j])
        s = f32(0.0)
        for j in range(cols):
            s += exp(x[r * cols + j] - m)
        for j in range(cols):
            out[r * cols + j] = exp(x[r * cols + j] - m) / s


register(ProgramPuzzle(
    "capstone_kernels.unrolled", "Step 2 · Unrolled over a comptime row length",
    "",
    "`unroll(range(cols))` with a comptime `cols` expands the body once per iteration while "
    "the kernel is built: the IR holds straight-line code, and `x[r * cols + j]` has a "
    "constant `j`. `range(cols)` alone is a runtime loop even when `cols` is a Python int.",
    (_unrolled_first(), softmax_looped),
    nudge="What does `inspect.ir` show for your kernel: is there an `scf.for`?",
    worked="`for j in unroll(range(3)): s += x[j]` becomes three adds of x[0], x[1], x[2] — "
    "no loop op.",
    story="Make `cols` a compile-time value and unroll every loop over it: `softmax_fixed(x, "
    "out, rows: u32, cols: Comptime[int])`. The check launches it on 4 × 5 and 6 × 8 (one cube "
    "of 8 units), compares with numpy and reads the IR of each compile: it may hold no loop.",
    template=_UNROLLED_FIRST + "\nanswer = ...\n", play=_play_unrolled, expects="kernel",
    rules=(buffers_match(lambda t: {f"out ({r} × {c})": softmax_rows_spec(
        _matrix(r, c, r + c), r, c) for r, c in _UNROLL_SHAPES}, rtol=1e-4, atol=1e-6),
           no_op(r"scf\.(for|while|loop)", "loop")),
    program="for rows, cols in ((4, 5), (6, 8)):\n"
    "    answer.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), x, out, rows, cols)",
))


# -- the reference kernel the last three steps launch and read ------------------------------------

@cube(launch=True, launch_unchecked=True)
def softmax_fixed(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: Comptime[int]):
    """The reference: three unrolled passes, `exp` computed twice per item."""
    r = ABSOLUTE_POS
    if r < rows:
        m = x[r * cols]
        for j in unroll(range(1, cols)):
            m = max(m, x[r * cols + j])
        s = f32(0.0)
        for j in unroll(range(cols)):
            s += exp(x[r * cols + j] - m)
        for j in unroll(range(cols)):
            out[r * cols + j] = exp(x[r * cols + j] - m) / s


def run_softmax(client: Any, rows: int, cols: int, units: int = 8, checked: bool = True) -> Any:
    """One launch of the reference on a rows × cols matrix, enough cubes of `units`."""
    x = client.create_from_slice(f32.as_bytes(_matrix(rows, cols, 7)))
    out = client.create_from_slice(bytes(4 * rows * cols))
    launcher = softmax_fixed.launch if checked else softmax_fixed.launch_unchecked
    launcher(client, CubeCount.Static(-(-rows // units)), CubeDim.new_1d(units),
             _arg(x, rows * cols), _arg(out, rows * cols), rows, cols)
    return out


def _call(rows: int, cols: int, units: int = 8) -> str:
    return f"run_softmax(client, rows={rows}, cols={cols}, units={units})"


# -- step 3: how many compiles --------------------------------------------------------------------

_PROGRAMS = [((4, 4, 8), (6, 4, 8), (4, 8, 8), (4, 4, 16), (9, 4, 8)),
             ((4, 4, 8), (4, 6, 8), (4, 8, 8), (12, 8, 16), (6, 6, 8)),
             ((8, 4, 8), (8, 4, 16), (16, 4, 16), (8, 4, 8), (32, 4, 8))]


def _compiles_of(program: tuple[tuple[int, int, int], ...]) -> int:
    return len({(c, u) for _, c, u in program})


@variants("capstone_kernels.compiles", [dict(program=p) for p in _PROGRAMS])
def _compiles(v: Any) -> CountExercise:
    return CountExercise(
        "capstone_kernels.compiles", "Step 3 · How many compiles?",
        "On a cleared cache the program below launches the reference `softmax_fixed` five "
        "times (`run_softmax` makes one launch: enough cubes of `units` for the rows). How many "
        "compiles?",
        "A launch compiles when its KernelId is new: the kernel, the cube dim (`units`), the "
        "mode, and the Info — here the comptime `cols`. The number of rows is a runtime scalar, "
        "and the cube count grows with it: neither is in the key.",
        (), nudge="For each launch: is its (cols, units) pair new?",
        worked="Launches with (rows, cols, units) = (4, 5, 8), (40, 5, 8), (4, 5, 32): the second "
        "only changes rows (and the cube count) — a hit; the third changes the cube dim — 2 "
        "compiles.",
        misconceptions=[Misconception("every launch compiles", 5, "A KernelId seen before is a "
                                      "cache hit: rows and the cube count are not in it."),
                        Misconception("only cols is compiled in", lambda v: len(
                            {c for _, c, _ in v.program}), "The cube dim is compiled in too "
                            "(WGSL's `@workgroup_size`).")],
        code="client.clear_cache()\n" + "\n".join(_call(*p) for p in v.program),
        launches=[lambda c, p=p: run_softmax(c, *p) for p in v.program],
        explanation="One compile per distinct (cols, units).")


# -- step 4: which KernelId fields ----------------------------------------------------------------

_PAIRS = [(dict(rows=4, cols=4), dict(rows=4, cols=8)),
          (dict(rows=4, cols=4), dict(rows=4, cols=4, checked=False)),
          (dict(rows=4, cols=4), dict(rows=12, cols=4)),
          (dict(rows=4, cols=4, units=8), dict(rows=4, cols=6, units=16))]


def _describe_call(p: dict[str, Any]) -> str:
    launcher = "launch" if p.get("checked", True) else "launch_unchecked"
    return (f"softmax_fixed.{launcher}  rows={p['rows']}, cols={p['cols']}, "
            f"units={p.get('units', 8)}")


@variants("capstone_kernels.which_fields", [dict(pair=p) for p in _PAIRS])
def _which_fields(v: Any) -> KernelIdDiffExercise:
    first, second = v.pair
    return KernelIdDiffExercise(
        "capstone_kernels.which_fields", "Step 4 · Which KernelId fields differ?",
        "The two launches of the reference printed below: which KernelId fields differ? Answer "
        "with field names (`cube_dim`, `mode`, an Info field such as `cols`), or `none`.",
        "The KernelId is the kernel type, the address type, the cube dim, the execution mode "
        "(`launch`: Checked, `launch_unchecked`: Unchecked) and the Info: the comptime "
        "arguments (here `cols`). Runtime scalars (`rows`) and the cube count are not fields.",
        (), nudge="Go field by field: kernel, cube_dim, mode, and each comptime argument.",
        worked="`saxpy` at width 4 with 4 units vs width 2 with 8 units: `n` (the vector width) "
        "and `cube_dim` differ; the scalar `a` never does.",
        misconceptions=[Misconception("a scalar is in the key", lambda v: "rows" if
                                      v.pair[0]["rows"] != v.pair[1]["rows"] else "cube_count",
                                      "Runtime scalars and the cube count never enter a "
                                      "KernelId.")],
        code=f"first:  {_describe_call(first)}\nsecond: {_describe_call(second)}",
        first=lambda c: run_softmax(c, **first), second=lambda c: run_softmax(c, **second),
        explanation="Only what is compiled in differs.")


# -- step 5: reading the IR -----------------------------------------------------------------------

def exp_ops(client: Any, cols: int) -> int:
    """How many `exp` ops the IR of the reference holds for this `cols` (the IR the expansion
    builds: `inspect.ir`, no device needed)."""
    from cubelab.inspect import ir, instance

    k = instance(softmax_fixed, cube_dim=CubeDim.new_1d(8), comptime=(cols,))
    return ir(k).count("{fn = 'exp'}")


@variants("capstone_kernels.exp_ops", [dict(cols=c) for c in (3, 5, 6)])
def _exp_ops(v: Any) -> ValueExercise:
    return ValueExercise(
        "capstone_kernels.exp_ops", "Step 5 · How many `exp` in the IR?",
        f"Read the reference `softmax_fixed` (printed above). For `cols = {v.cols}`, how many "
        "`exp` ops (`math.unary {fn = 'exp'}`) does its IR hold (`inspect.ir`)?",
        "An unrolled loop is expanded once per iteration: every `exp` inside it appears once "
        "per iteration in the IR. The reference computes `exp(x − m)` in two loops — once for "
        "the sum, once for each item's share — and nothing merges them.",
        (), nudge="Count the `exp` calls in the source and how many times each loop is "
        "expanded.",
        worked="A kernel with `for j in unroll(range(4)): s += exp(x[j])` and one more "
        "`exp(m)` outside the loop holds 5 exp ops.",
        misconceptions=[Misconception("exp once per item", lambda v: v.cols, "Two loops each "
                                      "call `exp`: nothing shares the first loop's results with "
                                      "the second."),
                        Misconception("the loops stay loops", 2, "`unroll` expands each "
                                      "iteration while the kernel is built.")],
        code=f"k = inspect.instance(softmax_fixed, cube_dim=CubeDim.new_1d(8), "
        f"comptime=({v.cols},))\nprint(inspect.ir(k))",
        value=lambda c: exp_ops(c, v.cols),
        explanation="2 · cols: each item's exp is computed twice — a pass that shares them "
        "(common-subexpression elimination) would halve it.")
