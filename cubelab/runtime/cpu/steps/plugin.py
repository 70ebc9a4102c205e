"""The CPU runtime's step of a plug-in op (`ir/plugins.py`): the op's numpy function, given by the
person who added the op through `cpu_step`, applied to the operands' rows of a chunk of lanes.

    cpu_step("student.softplus", lambda x: np.log(np.float32(1) + np.exp(x)))

Contract: the function receives each operand as a numpy array — one row per lane (one row for a
value every lane shares, which broadcasts), a vector's components along the last axis — and
returns the result's rows; the step casts them to the op's type (f32 stays f32, ints wrap) and
broadcasts them to the lanes. It runs once per chunk of lanes, not once per unit: `math.exp`,
which takes one number, fails here where `np.exp` works.

Trap: the plan finds this builder only for ops `BUILDERS` does not have — an op of the package
is never stepped through a plug-in — and an op without a step fails where the plan is built,
naming the call that adds one (so a launch fails on its written buffers with that message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from cubelab.ir.core import Op
from cubelab.ir.plugins import plugin_op, set_cpu_step
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.lanes import Ctx, KernelRuntimeError
from cubelab.runtime.cpu.steps.registry import Step, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan

__all__ = ["cpu_step", "plugin_builder"]


def cpu_step(op: str, fn: Callable[..., Any]) -> None:
    """Give plug-in op `op` its CPU semantics: `fn(*operand_rows) -> result_rows` (numpy)."""
    set_cpu_step(op, fn)


def plugin_builder(plan: Plan, op: Op, depth: int) -> Step:
    """The step of plug-in op `op`, or the error saying how to give it one."""
    plugin = plugin_op(op.name)
    if plugin is None:
        raise KernelRuntimeError(
            f"the CPU runtime does not implement op {op.name!r} (kernel "
            f"`{plan.definition.name}`)")
    fn = plugin.cpu
    if fn is None:
        raise KernelRuntimeError(
            f"the CPU runtime has no step for plug-in op {op.name!r} (kernel "
            f"`{plan.definition.name}`): give it one with cubelab.runtime.cpu.cpu_step("
            f"{op.name!r}, fn), fn a numpy function of the operands' rows")
    ids = [v.id for v in op.operands]
    r = op.result.id
    dt = sem.dtype_of(ty_of(op.result))

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        args = [env[a] for a in ids]
        out = np.asarray(fn(*args))
        if out.dtype != dt:
            out = out.astype(dt)
        shape = np.broadcast_shapes(*(a.shape for a in args))
        env[r] = out if out.shape == shape else np.broadcast_to(out, shape)

    return step
