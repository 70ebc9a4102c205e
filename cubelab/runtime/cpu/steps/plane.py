"""Steps of the `plane.*` (subgroup) dialect: reduce, vote, broadcast, elect.

A plane is `plane_size` consecutive units of one cube (never more than a cube has); only the
*active* units of a plane take part, as on a GPU under divergence. Not emulated: the GPU's float
summation order in `plane.reduce` (tests compare floats with a tolerance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.ir.core import Op
from cubelab.ir.types import Elem
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.lanes import Ctx, full, lane_mask, plane_size
from cubelab.runtime.cpu.steps.registry import Step, builder, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


def _plane_ids(ctx: Ctx) -> tuple[np.ndarray, int]:
    p = plane_size(ctx)
    per_cube = -(-ctx.U // p)
    ids = ctx.cube_local() * per_cube + (ctx.unit_index() // p).astype(np.intp)
    return ids, ctx.ncubes * per_cube


@builder("plane.reduce")
def _b_preduce(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, r = op.operands[0].id, op.result.id
    ty = ty_of(op.result)
    dt = sem.dtype_of(ty)
    f = {"sum": np.add, "min": np.minimum, "max": np.maximum, "prod": np.multiply}[kind]
    if kind == "sum":
        ident: Any = 0
    elif kind == "prod":
        ident = 1
    elif ty.elem is Elem.F32:
        ident = np.inf if kind == "min" else -np.inf
    else:
        info = np.iinfo(dt)
        ident = info.max if kind == "min" else info.min

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        x = full(ctx.env[a], ctx.n)
        acc = np.full((nplanes,) + x.shape[1:], ident, dtype=dt)
        if mask is None:
            f.at(acc, ids, x)
        else:
            f.at(acc, ids[mask], x[mask])
        ctx.env[r] = acc[ids]

    return step


@builder("plane.vote")
def _b_pvote(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        x = full(ctx.env[a], ctx.n).astype(bool)
        act = lane_mask(mask, ctx.n)
        votes = np.bincount(ids[act & x], minlength=nplanes)
        members = np.bincount(ids[act], minlength=nplanes)
        res = votes == members if kind == "all" else votes > 0
        ctx.env[r] = res[ids]

    return step


@builder("plane.broadcast")
def _b_pbcast(plan: Plan, op: Op, depth: int) -> Step:
    a, lane, r = op.operands[0].id, op.operands[1].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        p = plane_size(ctx)
        x = full(ctx.env[a], ctx.n)
        lanes = ctx.lanes().astype(np.int64)
        base = lanes - (ctx.unit_index() % np.uint32(p)).astype(np.int64)
        src = base + full(ctx.env[lane], ctx.n).astype(np.int64) % p
        pos = np.clip(np.searchsorted(lanes, src), 0, ctx.n - 1)
        # a source unit that is not running here is undefined in WGSL: it reads its own value
        pos = np.where(lanes[pos] == src, pos, np.arange(ctx.n))
        ctx.env[r] = x[pos]

    return step


@builder("plane.elect")
def _b_pelect(plan: Plan, op: Op, depth: int) -> Step:
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        act = lane_mask(mask, ctx.n)
        first = np.full(nplanes, ctx.n, dtype=np.intp)
        np.minimum.at(first, ids[act], ctx.local_rows()[act])
        ctx.env[r] = first[ids] == ctx.local_rows()

    return step
