"""Steps of the `scf.*` dialect: `scf.if`, `scf.switch`, `scf.for`, `scf.while`, `scf.condition`.

Divergence is a lane mask: `scf.if` runs its branches with `mask & cond` / `mask & ~cond` (a
branch no lane takes is skipped, one every lane takes runs unmasked), loops keep running while
any lane is still active. break/continue/return are bool locals in the IR (the frontend lowers
them), so they are masks too. A loop whose bounds are uniform runs as a Python loop over its
counter; a per-unit loop narrows its mask each iteration. A loop running longer than the
launch's `max_iterations` stops with a clear error (on a GPU it would hang the device).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.errors import LoopGuardError
from cubelab.ir.core import Op
from cubelab.ir.passes import loop_guard_message
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.analysis import free_ids
from cubelab.runtime.cpu.compaction import branch
from cubelab.runtime.cpu.lanes import DEAD, Ctx, KernelRuntimeError, full, m_and
from cubelab.runtime.cpu.steps.registry import Step, builder, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


@builder("scf.if")
def _b_if(plan: Plan, op: Op, depth: int) -> Step:
    c = op.operands[0].id
    then = plan.block(op.regions[0], depth + 1)
    has_else = len(op.regions) > 1 and bool(op.regions[1].ops)
    orelse = plan.block(op.regions[1], depth + 1) if has_else else None
    free_then = free_ids([op.regions[0]], plan.hoisted_ids)
    free_else = free_ids([op.regions[1]], plan.hoisted_ids) if has_else else []
    private_then = plan.private_vars.get(id(op.regions[0]), frozenset())
    private_else = plan.private_vars.get(id(op.regions[1]), frozenset()) if has_else \
        else frozenset()
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        cond = ctx.env[c]
        if traced and ctx.launch.tracer is not None:
            ctx.launch.tracer.record(op, depth, ctx, mask, cond, True)
        static = ctx._static
        if mask is None and id(cond) in static.get("memo_ids", ()):
            # a unit-only condition (`u == 0`): whether no, some or every lane takes the branch
            # is the same in every chunk of this shape (two passes over the chunk saved)
            key = ("taken", id(cond))
            m = static.get(key, static)  # (the dict itself: not decided yet; None is "every")
            if m is static:
                m = static[key] = m_and(None, cond)
        else:
            m = m_and(mask, cond)
        if m is not DEAD:
            branch(ctx, m, then, free_then, private_then)
        if orelse is not None:
            m = m_and(mask, np.logical_not(cond))
            if m is not DEAD:
                branch(ctx, m, orelse, free_else, private_else)

    return step


@builder("scf.switch")
def _b_switch(plan: Plan, op: Op, depth: int) -> Step:
    c = op.operands[0].id
    dt = sem.dtype_of(ty_of(op.operands[0]))
    cases = [np.array(values, dtype=dt) for values in op.attrs["cases"]]
    bodies = [plan.block(r, depth + 1) if r.ops else None for r in op.regions]
    frees = [free_ids([r], plan.hoisted_ids) for r in op.regions]
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        sel = ctx.env[c]
        if traced and ctx.launch.tracer is not None:
            ctx.launch.tracer.record(op, depth, ctx, mask, sel, True)
        taken = np.zeros(sel.shape, dtype=bool)
        for k, body in enumerate(bodies):
            hit = np.isin(sel, cases[k]) if k < len(cases) else np.logical_not(taken)
            taken |= hit
            if body is not None:
                m = m_and(mask, hit)
                if m is not DEAD:
                    branch(ctx, m, body, frees[k])

    return step


def _limit(plan: Plan, ctx: Ctx) -> int:
    """Iterations one execution of a loop may run here: the checked launch's loop budget, or
    the CPU runtime's own cap when lower (an interpreted iteration costs microseconds, so a
    runaway loop must stop long before a GPU's budget would)."""
    budget = plan.definition.loop_budget
    cap = ctx.launch.max_iterations
    return cap if budget is None else min(budget, cap)


def _runaway(plan: Plan, op: Op, limit: int) -> Exception:
    guard = op.attrs.get("guard")
    if guard is not None:
        text = loop_guard_message(plan.definition, int(guard), False, limit)
        budget = plan.definition.loop_budget
        if budget is not None and limit < budget:
            text += (f"\n  (the CPU runtime stops one loop after {limit} iterations, below the "
                     f"budget of {budget}: an interpreted iteration costs microseconds)")
        return LoopGuardError(text)
    where = f" (line {op.loc.line})" if op.loc else ""
    return KernelRuntimeError(
        f"kernel `{plan.definition.name}`: a loop{where} ran more than {limit} "
        "iterations; it looks infinite (on a GPU it would hang the device)\n  hint: check its "
        "bounds and that its condition can become false")


@builder("scf.for")
def _b_for(plan: Plan, op: Op, depth: int) -> Step:
    s, e, st = (o.id for o in op.operands)
    (body_block,) = op.regions
    (iv,) = body_block.args
    ivid = iv.id
    dt = sem.dtype_of(ty_of(iv))
    body = plan.block(body_block, depth + 1)
    free = free_ids([body_block], plan.hoisted_ids) + [ivid]  # the counter is set outside the body
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        start, end, stp = env[s], env[e], env[st]
        tracer = ctx.launch.tracer if traced else None
        if start.shape[0] == 1 and end.shape[0] == 1 and stp.shape[0] == 1:
            a, b, k = int(start[0]), int(end[0]), int(stp[0])
            if k <= 0 and a < b:
                raise _runaway(plan, op, _limit(plan, ctx))
            if (b - a) // max(k, 1) > (lim := _limit(plan, ctx)):
                raise _runaway(plan, op, lim)
            for i in range(a, b, max(k, 1)):
                env[ivid] = np.array([i], dtype=dt)
                if tracer is not None:
                    tracer.record(op, depth, ctx, mask, env[ivid], True, f"iteration i = {i}")
                body(ctx, mask)
            return
        iv = full(start, ctx.n).copy()
        n = 0
        lim = _limit(plan, ctx)
        m = mask
        while True:
            # a unit that has left the loop stays out, even if its counter wraps around
            m = m_and(m, iv < end)
            if m is DEAD:
                return
            n += 1
            if n > lim:
                raise _runaway(plan, op, lim)
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
    before = plan.block(before_block, depth + 1)
    after = plan.block(after_block, depth + 1)
    # region 1 may run compacted; region 0 never is (its condition is read here, full width)
    free_after = free_ids([after_block], plan.hoisted_ids)
    traced = plan.traced

    def step(ctx: Ctx, mask: Any) -> None:
        m = mask
        n = 0
        lim = _limit(plan, ctx)
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
            if n > lim:
                raise _runaway(plan, op, lim)
            branch(ctx, m, after, free_after)

    return step


@builder("scf.condition")
def _b_condition(plan: Plan, op: Op, depth: int) -> Step:
    def step(ctx: Ctx, mask: Any) -> None:
        return None

    return step
