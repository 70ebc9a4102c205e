"""Steps of the `atomic.*` dialect: `atomic.rmw` and `atomic.cas` (`atomic.load`/`atomic.store`
are a lockstep load and store: `steps/memory.py` registers them).

Atomics use numpy's unbuffered `ufunc.at`; old values, when the kernel uses them, come from a
segmented scan in lane order — one valid serialisation of the atomics (a GPU may pick another,
so a test may only rely on what every serialisation shares, e.g. distinct old values).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from cubelab.ir.core import Op
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.lanes import Ctx, full
from cubelab.runtime.cpu.memory import Ptr
from cubelab.runtime.cpu.steps.memory import report_oob, rows_of
from cubelab.runtime.cpu.steps.registry import Step, builder, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


def _target(ctx: Ctx, op: Op, p: Ptr) -> tuple[np.ndarray, np.ndarray]:
    """An atomic's target: its out-of-bounds lanes reported (report mode), then `_flat_addr`."""
    if p.report is not None:
        report_oob(ctx, op, p, True)
    return _flat_addr(ctx, p)


def _flat_addr(ctx: Ctx, p: Ptr) -> tuple[np.ndarray, np.ndarray]:
    """(flattened store, address per lane) of an atomic pointer."""
    mem = p.mem
    flat = mem.store.reshape(-1)
    if p.start is not None:
        idx = ctx.lanes().astype(np.intp)
    elif p.unit:
        idx = ctx.unit_index().astype(np.intp)
    else:
        idx = full(p.index, ctx.n)
    rows = rows_of(ctx, mem)
    if rows is not None:
        idx = rows + idx
    return flat, idx.astype(np.intp)


def _active(ctx: Ctx, p: Ptr, mask: Any) -> np.ndarray | None:
    sel = mask
    if p.bad is not None:
        ok = ~full(p.bad, ctx.n)
        sel = ok if sel is None else sel & ok
    return sel


_AT = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
       "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _seg_scan(x: np.ndarray, seg: np.ndarray, f: Callable[[Any, Any], Any]) -> np.ndarray:
    """Inclusive scan of `x` with `f`, restarting where `seg` changes (Hillis-Steele)."""
    x = x.copy()
    d = 1
    n = len(x)
    while d < n:
        same = seg[d:] == seg[:-d]
        if not same.any():
            break
        upd = x[d:].copy()
        upd[same] = f(x[:-d][same], x[d:][same])
        x[d:] = upd
        d *= 2
    return x


def atomic_rmw(flat: np.ndarray, addr: np.ndarray, vals: np.ndarray, kind: str,
               want_old: bool) -> np.ndarray | None:
    """Apply one atomic op per lane (in lane order per address); return the old values."""
    if not want_old:
        if kind == "swap":
            flat[addr] = vals
        else:
            _AT[kind].at(flat, addr, vals)
        return None
    order = np.argsort(addr, kind="stable")
    a_s, v_s = addr[order], vals[order]
    f = (lambda x, y: y) if kind == "swap" else _AT[kind]
    if kind == "sub":
        f = np.add  # a running total of what was subtracted
    inc = _seg_scan(v_s, a_s, f)
    first = np.ones(len(a_s), dtype=bool)
    first[1:] = a_s[1:] != a_s[:-1]
    mem0 = flat[a_s]
    prev = np.empty_like(inc)
    prev[1:] = inc[:-1]
    apply = np.subtract if kind == "sub" else f
    old_s = np.where(first, mem0, apply(mem0, prev) if len(prev) else prev)
    last = np.ones(len(a_s), dtype=bool)
    last[:-1] = a_s[1:] != a_s[:-1]
    flat[a_s[last]] = apply(mem0[last], inc[last])
    old = np.empty_like(old_s)
    old[order] = old_s
    return old


@builder("atomic.rmw")
def _b_rmw(plan: Plan, op: Op, depth: int) -> Step:
    kind = op.attrs["kind"]
    a, b = (o.id for o in op.operands)
    r = op.result.id if op.results else None
    want = r is not None and r in plan.used_results
    dt = sem.dtype_of(ty_of(op.operands[1]))

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        flat, addr = _target(ctx, op, p)
        vals = full(ctx.env[b], ctx.n).astype(dt, copy=False)
        sel = _active(ctx, p, mask)
        if sel is not None:
            old_sel = atomic_rmw(flat, addr[sel], vals[sel], kind, want)
            if r is not None:
                old = np.zeros(ctx.n, dtype=dt)
                if old_sel is not None:
                    old[sel] = old_sel
                ctx.env[r] = old
            return
        old_all = atomic_rmw(flat, addr, vals, kind, want)
        if r is not None:
            ctx.env[r] = old_all if old_all is not None else np.zeros(ctx.n, dtype=dt)

    return step


@builder("atomic.cas")
def _b_cas(plan: Plan, op: Op, depth: int) -> Step:
    a, e, nv = (o.id for o in op.operands)
    r = op.result.id
    dt = sem.dtype_of(ty_of(op.operands[1]))

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        flat, addr = _target(ctx, op, p)
        exp = full(ctx.env[e], ctx.n).astype(dt, copy=False)
        new = full(ctx.env[nv], ctx.n).astype(dt, copy=False)
        sel = _active(ctx, p, mask)
        lanes = np.arange(ctx.n) if sel is None else np.nonzero(sel)[0]
        old = np.zeros(ctx.n, dtype=dt)
        # lanes on one address run one after another, in lane order: round k serves the k-th
        # lane of every address (a serialisation a GPU may also pick)
        order = lanes[np.argsort(addr[lanes], kind="stable")]
        a_s = addr[order]
        first = np.ones(len(a_s), dtype=bool)
        first[1:] = a_s[1:] != a_s[:-1]
        start_of = np.maximum.accumulate(np.where(first, np.arange(len(a_s)), 0))
        rank = np.arange(len(a_s)) - start_of
        for k in range(int(rank.max()) + 1 if len(rank) else 0):
            ls = order[rank == k]
            ad = addr[ls]
            cur = flat[ad]
            old[ls] = cur
            hit = cur == exp[ls]
            flat[ad[hit]] = new[ls][hit]
        ctx.env[r] = old

    return step
