"""Steps of the `sync.*` dialect: `sync.cube`, `sync.storage` and `sync.uniform_load` (the
barrier's check, then `memory.load`'s step).

In lockstep every op finishes for every lane before the next starts, so a barrier is satisfied by
construction — *provided every unit of the cube reaches it*. A barrier reached by only some units
of a cube is undefined behaviour on a GPU (a hang or garbage); here it raises `DivergentBarrier`
naming the units that reached it and those that did not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.ir.core import Op
from cubelab.runtime.cpu.lanes import Ctx, DivergentBarrier
from cubelab.runtime.cpu.steps import memory as memory_steps
from cubelab.runtime.cpu.steps.registry import Step, builder

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


_WHAT = {"sync.cube": "sync_cube()", "sync.storage": "sync_storage()",
         "sync.uniform_load": "workgroup_uniform_load()"}


@builder("sync.uniform_load")
def _b_uniform_load(plan: Plan, op: Op, depth: int) -> Step:
    barrier, load = _b_sync(plan, op, depth), memory_steps.load_step(plan, op, depth)

    def step(ctx: Ctx, mask: Any) -> None:
        barrier(ctx, mask)
        load(ctx, mask)

    return step


@builder("sync.cube", "sync.storage")
def _b_sync(plan: Plan, op: Op, depth: int) -> Step:
    kernel = plan.definition
    what = _WHAT[op.name]

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
            "here.\n  hint: move the barrier out of the `if`/loop, and guard only the work "
            "around it")

    return step
