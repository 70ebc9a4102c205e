"""Steps of the launch-information dialects: `builtin.*` (unit and cube positions), `info.*`
(scalar arguments), `buffer.len` (the items the handle holds), `tensor.*` (rank, logical length,
shape and strides).

Most of these are uniform over a launch and the plan computes them once per launch signature
(`analysis.uniform_ops`); the per-unit builtins are derived from the chunk's lane numbers
(`Ctx.unit_index`, `Ctx.cube_linear`): the unit ones once per chunk shape, the cube ones once
per chunk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.compiler.info import logical_length
from cubelab.ir.core import Op
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.lanes import Ctx, KernelRuntimeError, plane_size
from cubelab.runtime.cpu.memory import Mem
from cubelab.runtime.cpu.steps.registry import Step, builder, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


@builder("builtin.read")
def _b_builtin(plan: Plan, op: Op, depth: int) -> Step:
    name = op.attrs["name"]
    r = op.result.id
    dx, dy, _ = plan.definition.cube_dim

    def compute(ctx: Ctx) -> np.ndarray:
        cx, cy, cz = ctx.launch.count
        u32 = np.uint32
        if name == "local_invocation_index":
            return ctx.unit_index()
        if name.startswith("num_workgroups_"):
            return np.array([{"x": cx, "y": cy, "z": cz}[name[-1]]], dtype=u32)
        if name.startswith("workgroup_id_"):
            axis = name[-1]
            # an axis the grid does not use is 0 for every unit: one row, broadcast
            if (axis == "y" and cy == 1) or (axis == "z" and cz == 1):
                return np.zeros(1, dtype=u32)
            if axis == "x" and cy * cz == 1:
                return ctx.cube_linear()
            if ctx.parent is None:  # per cube, then one row per unit: one pass over the lanes
                c = np.arange(ctx.cube0, ctx.cube0 + ctx.ncubes, dtype=u32)
            else:
                c = ctx.cube_linear()
            if axis == "x":
                c = c % u32(cx)
            elif axis == "y":
                c = (c // u32(cx)) % u32(cy)
            else:
                c = c // u32(cx * cy)
            return np.repeat(c, ctx.U) if ctx.parent is None else c
        if name.startswith("local_invocation_id_"):
            u = ctx.unit_index()
            axis = name[-1]
            if axis == "x":
                return u % u32(dx)
            if axis == "y":
                return (u // u32(dx)) % u32(dy)
            return u // u32(dx * dy)
        if name == "subgroup_size":
            return np.array([plane_size(ctx)], dtype=u32)
        if name == "subgroup_invocation_id":
            return ctx.unit_index() % u32(plane_size(ctx))
        raise KernelRuntimeError(f"unknown builtin {name!r}")

    # UNIT_POS_X and friends depend only on the chunk's shape: computed once per shape
    # (`Ctx._static`, shared by the chunks of a launch); CUBE_POS_* once per chunk.
    cache_of = "_static" if name.startswith("local_invocation_") else "_cache"

    def step(ctx: Ctx, mask: Any) -> None:
        cache = getattr(ctx, cache_of)
        a = cache.get(name)
        if a is None:
            a = compute(ctx)
            if cache_of == "_static":
                if a.base is None:
                    a.setflags(write=False)
                cache.setdefault("memo_ids", set()).add(id(a))  # see `plan._unit_memo`
            cache[name] = a
        ctx.env[r] = a

    return step


@builder("info.scalar")
def _b_scalar(plan: Plan, op: Op, depth: int) -> Step:
    elem, idx = op.attrs["elem"], int(op.attrs["index"])
    ty = ty_of(op.result)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = sem.constant(ctx.launch.scalars[elem][idx], ty)

    return step


@builder("buffer.len")
def _b_len(plan: Plan, op: Op, depth: int) -> Step:
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.array([ctx.env[a].length], dtype=np.uint32)

    return step


@builder("tensor.len")
def _b_tensor_len(plan: Plan, op: Op, depth: int) -> Step:
    t, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.array([logical_length(ctx.env[t].shape)], dtype=np.uint32)

    return step


@builder("tensor.rank", "tensor.shape", "tensor.stride")
def _b_tensor(plan: Plan, op: Op, depth: int) -> Step:
    t = op.operands[0].id
    axis = op.operands[1].id if len(op.operands) > 1 else None
    r = op.result.id
    which = op.name

    def step(ctx: Ctx, mask: Any) -> None:
        mem: Mem = ctx.env[t]
        if which == "tensor.rank":
            ctx.env[r] = np.array([len(mem.shape)], dtype=np.uint32)
            return
        dims = mem.shape if which == "tensor.shape" else mem.strides
        table = np.array(list(dims) + [0], dtype=np.uint32)
        ax = ctx.env[axis]  # type: ignore[index]
        ctx.env[r] = table[np.minimum(ax, len(dims))]

    return step
