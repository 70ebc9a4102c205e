"""Steps of the `plane.*` (subgroup) dialect: reduce, scan, vote, ballot, broadcast, shuffle,
elect.

A plane is `plane_size` (32) consecutive units of one cube; a cube smaller than that, or its
last plane, fills only part of one. Only the *active* units of a plane take part, as on a GPU
under divergence or in a partial plane. Not emulated: the GPU's float
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


def _lane_in_plane(ctx: Ctx) -> np.ndarray:
    return (ctx.unit_index() % np.uint32(plane_size(ctx))).astype(np.int64)


@builder("plane.scan")
def _b_pscan(plan: Plan, op: Op, depth: int) -> Step:
    """Prefix sums/products plane by plane, in lane order, over the active units only."""
    prod = op.attrs["kind"] == "prod"
    inclusive = bool(op.attrs["inclusive"])
    a, r = op.operands[0].id, op.result.id
    dt = sem.dtype_of(ty_of(op.result))
    ident = np.dtype(dt).type(1 if prod else 0)
    scan = np.cumprod if prod else np.cumsum

    def step(ctx: Ctx, mask: Any) -> None:
        ids, _ = _plane_ids(ctx)
        x = np.array(full(ctx.env[a], ctx.n), dtype=dt)
        act = lane_mask(mask, ctx.n)
        x[~act] = ident
        out = np.empty_like(x)
        order = np.lexsort((_lane_in_plane(ctx), ids))
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        for lo, hi in zip(starts, [*starts[1:], len(order)]):
            rows = order[lo:hi]
            inc = scan(x[rows], axis=0, dtype=dt)
            if inclusive:
                out[rows] = inc
            else:
                out[rows[0]] = ident
                out[rows[1:]] = inc[:-1]
        ctx.env[r] = out

    return step


@builder("plane.ballot")
def _b_pballot(plan: Plan, op: Op, depth: int) -> Step:
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ids, nplanes = _plane_ids(ctx)
        x = full(ctx.env[a], ctx.n).astype(bool) & lane_mask(mask, ctx.n)
        lane = _lane_in_plane(ctx)
        words = np.zeros((nplanes, 4), np.uint32)
        for w in range(2):  # planes have at most 64 lanes here
            sel = x & (lane // 32 == w)
            np.bitwise_or.at(words[:, w], ids[sel],
                             (np.uint32(1) << (lane[sel] % 32).astype(np.uint32)))
        ctx.env[r] = words[ids]

    return step


@builder("plane.shuffle")
def _b_pshuffle(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, n, r = op.operands[0].id, op.operands[1].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        p = plane_size(ctx)
        x = full(ctx.env[a], ctx.n)
        lanes = ctx.lanes().astype(np.int64)
        own = _lane_in_plane(ctx)
        k = full(ctx.env[n], ctx.n).astype(np.int64)
        want = own ^ k if kind == "xor" else own - k if kind == "up" else own + k
        src = lanes - own + want
        pos = np.clip(np.searchsorted(lanes, src), 0, ctx.n - 1)
        # outside the plane, or a unit not running here: undefined in WGSL; its own value here
        ok = (want >= 0) & (want < p) & (lanes[pos] == src)
        if mask is not None:
            ok &= lane_mask(mask, ctx.n)[pos]
        ctx.env[r] = x[np.where(ok, pos, np.arange(ctx.n))]

    return step
