"""An unrolled dot product out of shared memory as one step: `acc += a_tile[ty * T + j] *
b_tile[j * T + tx]` for every j of a comptime-unrolled loop (`analysis.accumulations` finds the
runs of such terms), the tiled matmul's inner loop.

Run op by op, each term is eight interpreter steps, and its product broadcasts two views of every
cube's row against each other — `a_tile[ty * T + j]` is one item for the T units of a row of the
cube, `b_tile[j * T + tx]` one for those of a column — so numpy's innermost loop is T items long
(T = 16: ~40 µs per 64 K lanes, most of it re-entering that loop), 256 times per 256×256 launch.

This step computes the run **cube-minor**: every array is (dz, dy, dx, cubes) — one row per unit
of the cube, one column per cube of the chunk — so the innermost loop runs over the cubes (a
few hundred items, contiguous) whatever the pattern. Each shared array the run reads is
transposed to (items, cubes) once per run; a term is then a product of two strided views of
those into a scratch array and an in-place add into the accumulator. The accumulator stays
cube-minor in its `LocalSlot` after the run, so the next run (the next iteration of the matmul's
k loop) starts from it; anything else that reads the local gets it back in lane order then.

Per lane this is the same f32 product and the same f32 sum, in the same order (`acc + p` or
`p + acc`, as the kernel wrote it), as the ops one by one: no result bit changes, −0.0, NaN and
inf included. It only runs where the ops one by one would take their fast paths anyway: every
lane active, a context whose cubes all run every unit, at least `CUBE_MINOR_MIN` cubes, and each
index in bounds with a slice or strided cube pattern (`memory.cube_pattern`). Anything else — a
mask, a compacted branch, an index that needs a gather or reports an out-of-bounds access —
runs the ops one by one, so OOB reports, traces and access records never see this step (traced
and instrumented plans do not fuse at all).

The trap: the pointers' patterns are cached per chunk shape and launch signature only when
every index is a hoisted (unit-static) value; an index that depends on a loop counter runs the
index steps every time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.runtime.cpu.analysis import Accumulation
from cubelab.runtime.cpu.lanes import Ctx, full
from cubelab.runtime.cpu.memory import LocalSlot
from cubelab.runtime.cpu.steps.memory import judge_unit_index
from cubelab.runtime.cpu.steps.registry import Step

# Fewer cubes per chunk than this run op by op: the cube-minor loops would be too short to pay
# for the transposes (a launch of a handful of cubes is cheap either way).
CUBE_MINOR_MIN = 64
fused_runs = 0  # how many times a run of terms ran as one step, ever (read by tests)


def accumulate(run: Accumulation, prelude: tuple[Step, ...], one_by_one: Step,
               cacheable: bool) -> Step:
    """The step of `run`. `prelude` computes its pointers (index arithmetic, `memory.index`);
    `one_by_one` is the run's ops as separate steps; `cacheable`: every index is unit-static,
    so the pointers' patterns depend only on the chunk's shape and the launch signature."""
    var = run.var
    key = ("accumulate", id(run))
    bases = tuple(dict.fromkeys(b for pair in run.bases for b in pair))

    def step(ctx: Ctx, mask: Any) -> None:
        c = ctx.ncubes
        if mask is not None or not ctx.contiguous or ctx.per_cube != ctx.U or \
                c < CUBE_MINOR_MIN:
            one_by_one(ctx, mask)
            return
        env = ctx.env
        slot = env[var]
        if type(slot) is not LocalSlot:
            one_by_one(ctx, mask)
            return
        static = ctx._static
        signature = static.get("signature")
        found = static.get(key)
        if found is None or found[0] is not signature:
            found = _operands(run, prelude, ctx, bases, cacheable)
            if found is None:
                one_by_one(ctx, mask)
                return
            found = (signature,) + found
            if cacheable:
                static[key] = found
        _, transposed, operands, product = found
        global fused_runs
        fused_runs += 1
        for b, t in zip(bases, transposed):
            np.copyto(t, env[b].store.T)
        shape = product.shape
        acc = slot.cube_minor(shape)
        if acc is None:
            acc = slot.arr
            acc = acc.reshape((c,) + shape[:3]).transpose(1, 2, 3, 0) if acc.shape[0] != 1 \
                else acc.reshape((1,) * 4)
        out = np.empty(shape, dtype=np.float32)
        for x, y, acc_first in operands:
            np.multiply(x, y, out=product)
            if acc_first:
                np.add(acc, product, out=out)
            else:
                np.add(product, acc, out=out)
            acc = out
        slot.set_cube_minor(out)

    return step


def _operands(run: Accumulation, prelude: tuple[Step, ...], ctx: Ctx, bases: tuple[int, ...],
              unit_only: bool) -> tuple[list[np.ndarray],
                                        list[tuple[np.ndarray, np.ndarray, bool]],
                                        np.ndarray] | None:
    """(one (items, cubes) scratch array per shared array, each term's two operands as views
    of those, a product scratch array), or None when some pointer is not a slice or strided
    cube pattern (or reports an out-of-bounds access). `unit_only`: every index is unit-static,
    so one the index step left unjudged (a chunk too small to memoize it) is judged here."""
    for s in prelude:
        s(ctx, None)
    env = ctx.env
    c = ctx.ncubes
    dx, dy, dz = ctx.launch.cube_dim
    shape = (dz, dy, dx, c)
    transposed = [np.empty((env[b].length, c), dtype=np.float32) for b in bases]
    where = dict(zip(bases, transposed))
    row = c * 4  # bytes per item of a transposed array
    operands = []
    for (x, y, acc_first), pair in zip(run.terms, run.bases):
        views = []
        for p, b in zip((env[x], env[y]), pair):
            pattern = p.pattern
            if p.unit:
                pattern = ("slice", 0, ctx.U)
            elif pattern is None and unit_only and p.bad is None and p.report is None:
                found = judge_unit_index(ctx, p.mem, full(p.index, ctx.n))
                pattern = found if isinstance(found, tuple) else None
            if p.report is not None or pattern is None or pattern[0] == "take":
                return None
            t = where[b]
            if pattern[0] == "slice":
                views.append(t[pattern[1]:pattern[2]].reshape(shape))
            else:
                _, a, _, steps, _ = pattern
                views.append(np.ndarray(shape, np.float32, t, a * row,
                                        tuple(s * row for s in steps) + (4,)))
        operands.append((views[0], views[1], acc_first))
    return transposed, operands, np.empty(shape, dtype=np.float32)
