"""Steps of the memory dialects: `var.declare`, `shared.declare`, `memory.index`, `memory.load`,
`memory.store` (and `atomic.load`/`atomic.store`, which are plain loads and stores of an atomic
item in lockstep).

A `memory.index` step makes a `Ptr`: a slice when the index is ABSOLUTE_POS (or CheckedIo's
clamp of it) and the chunk's lanes are contiguous, one slot per unit for shared memory indexed
by UNIT_POS, else an index per lane. Out-of-bounds indices are decided there once, by the
launch's OOB mode (zero / clamp / report); loads and stores then only honour the pointer.
Shared memory is one row per cube of the chunk, a local array one row per lane (`rows_of`).

The trap: a load may return a *view* of a buffer only where `analysis.view_loads` proved no
write to that buffer comes before its last use; anything else must copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from cubelab.ir.core import Op
from cubelab.ir.types import Array, Atomic, Pointer, Ty
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.indices import AffineIndex
from cubelab.runtime.cpu.lanes import (
    REPORT_LIMIT,
    Ctx,
    KernelRuntimeError,
    frozen,
    full,
    row_mask,
)
from cubelab.runtime.cpu.memory import CubeView, LocalSlot, Mem, OobAccess, Ptr
from cubelab.runtime.cpu.steps.arith import on_views
from cubelab.runtime.cpu.steps.registry import Step, builder

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


shared_views = 0  # shared-memory loads handed to their use as views, ever (read by tests)
affine_views = 0  # global pointers made a strided view through an affine index, ever (tests)


@builder("var.declare")
def _b_var(plan: Plan, op: Op, depth: int) -> Step:
    ptr = op.result.type
    assert isinstance(ptr, Pointer)
    pointee = ptr.pointee
    r = op.result.id
    name = op.result.hint or op.result.name
    if isinstance(pointee, Array):
        item = pointee.item
        ity = item.value_ty if isinstance(item, Atomic) else item
        shape = (pointee.length,) + ((ity.width,) if ity.width > 1 else ())
        dt = sem.dtype_of(ity)
        length = pointee.length

        def step_arr(ctx: Ctx, mask: Any) -> None:
            ctx.env[r] = Mem(name, np.zeros((ctx.nrows,) + shape, dtype=dt), length, "local")

        return step_arr
    assert isinstance(pointee, Ty)
    zero = sem.constant(0, pointee)

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = LocalSlot(name, zero)

    return step


@builder("shared.declare")
def _b_shared(plan: Plan, op: Op, depth: int) -> Step:
    ptr = op.result.type
    assert isinstance(ptr, Pointer) and isinstance(ptr.pointee, Array)
    arr = ptr.pointee
    item = arr.item
    ity = item.value_ty if isinstance(item, Atomic) else item
    shape = (arr.length,) + ((ity.width,) if ity.width > 1 else ())
    dt = sem.dtype_of(ity)
    r = op.result.id
    name = str(op.attrs.get("name") or op.result.hint or op.result.name)
    length = arr.length

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = Mem(name, np.zeros((ctx.ncubes,) + shape, dtype=dt), length, "shared")

    return step


def rows_of(ctx: Ctx, mem: Mem) -> np.ndarray | None:
    """For shared/local memory: the flat offset of each lane's row (row * length)."""
    if mem.kind == "global":
        return None
    key = f"{mem.kind}:{mem.length}"
    a = ctx._static.get(key)
    if a is None:
        rows = ctx.cube_local() if mem.kind == "shared" else ctx.local_rows()
        a = frozen(rows * mem.length)
        ctx._static[key] = a
    return a


def _flat(mem: Mem) -> np.ndarray:
    return mem.store.reshape((-1,) + mem.item_shape)


def _unit_view(ctx: Ctx, mem: Mem) -> np.ndarray:
    """Shared memory seen as one slot per lane (row = the lane's cube, item = its UNIT_POS)."""
    return mem.store[:, : ctx.U]


@builder("memory.index")
def _b_index(plan: Plan, op: Op, depth: int) -> Step:
    base, idx = (o.id for o in op.operands)
    lane_index = idx in plan.lane_ids
    unit_index = idx in plan.unit_ids
    bound = plan.lane_min.get(idx)
    # the min step itself is dropped from the plain plan when only indices use it
    min_computed = plan.needed is None or idx in plan.needed
    r = op.result.id
    # CheckedIo clamped this index: `report` mode still reports the index the kernel computed
    raw = plan.raw_index[r][0] if op.attrs.get("clamped") else None
    raw_is_lane = raw in plan.lane_ids
    affine = plan.affine.get(r)

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        mem = env[base]
        if not isinstance(mem, Mem):
            raise KernelRuntimeError("memory.index on something that is not an array")
        length = mem.length
        if affine is not None and ctx.contiguous and not mem.item_shape:
            view = affine_view(ctx, mem, affine)
            if view is not None:
                global affine_views
                affine_views += 1
                env[r] = Ptr(mem, None, None, view=view)
                return
        if raw is not None and ctx.launch.oob == "report":
            asked = ctx.lanes() if raw_is_lane or env[raw] is None else env[raw]
            over = (asked < 0) | (asked >= length) if asked.dtype.kind == "i" else \
                asked >= length
            if over.any():
                active = full(over, ctx.n) if mask is None else full(over, ctx.n) & mask
                if active.any():
                    index = env[idx] if min_computed or bound is None else \
                        np.minimum(ctx.lanes(), env[bound])
                    env[r] = Ptr(mem, index, asked, report=active)
                    return
        if lane_index and mem.kind == "global" and ctx.contiguous:
            s = ctx.start
            if s + ctx.n <= length:
                env[r] = Ptr(mem, None, None, start=s, stop=s + ctx.n)
                return
            index = ctx.lanes()
        elif unit_index and mem.kind == "shared" and ctx.U <= length and ctx.contiguous:
            env[r] = Ptr(mem, None, env[idx], unit=True)
            return
        elif bound is not None:
            s = ctx.start
            b = env[bound]
            if mem.kind == "global" and ctx.contiguous and b.shape[0] == 1 and \
                    s + ctx.n - 1 <= int(b[0]) and s + ctx.n <= length:
                env[r] = Ptr(mem, None, None, start=s, stop=s + ctx.n)
                return
            index = env[idx] if min_computed else np.minimum(ctx.lanes(), b)
        else:
            index = env[idx]
        static = ctx._static
        if index.shape == (1,) and mem.kind == "shared" and ctx.per_cube:
            # one item for every lane (`tile[0]`): each cube's lanes reach the same item
            key = ("uniform_index", int(index[0]), length)
            found = static.get(key)
            if found is None:
                found = static[key] = judge_unit_index(
                    ctx, mem, np.full(ctx.per_cube, index[0], dtype=index.dtype))
            if found is not False:
                env[r] = Ptr(mem, index, index, pattern=found)
                return
        if id(index) in static.get("memo_ids", ()):  # a unit-only index: judged once
            key = ("in_bounds", id(index), length, mem.kind)
            found = static.get(key)
            if found is None:
                found = static[key] = judge_unit_index(ctx, mem, index)
            if found is not False:
                env[r] = Ptr(mem, index, index, pattern=found)
                return
        bad = _out_of_bounds(index, length)
        if not bad.any():
            env[r] = Ptr(mem, index, index)
            return
        safe = np.where(bad, 0, index).astype(np.intp)
        active = full(bad, ctx.n) if mask is None else full(bad, ctx.n) & mask
        if not active.any():
            env[r] = Ptr(mem, safe, index)
            return
        mode = ctx.launch.oob
        if mode == "clamp" and length > 0:
            env[r] = Ptr(mem, np.where(active, length - 1, full(safe, ctx.n)), index)
            return
        env[r] = Ptr(mem, safe, index, bad=bad, report=active if mode == "report" else None)

    return step


def affine_view(ctx: Ctx, mem: Mem, affine: AffineIndex) -> np.ndarray | None:
    """The items of `mem` the chunk's lanes reach through `affine`, as a strided view shaped
    (cubes z, y, x, units z, y, x) — lane order once copied — or None: a coefficient that is not
    one row here, a chunk that is not a box of the grid, or some lane out of bounds (the index
    step then computes per lane, reporting and clamping as ever). Exact integers: when every
    lane's index is in bounds, it is also what the kernel's wrapping u32 arithmetic gives."""
    env = ctx.env
    values: dict[str, int] = {}
    for sym in affine.symbols:
        v = env[sym]
        if not isinstance(v, np.ndarray) or v.shape != (1,):
            return None
        values[f"v{sym}"] = int(v[0])

    def value(poly: tuple[tuple[tuple[str, ...], int], ...]) -> int:
        total = 0
        for mono, c in poly:
            for x in mono:
                c *= values[x]
            total += c
        return total

    gx, gy, gz = ctx.launch.count
    dx, dy, dz = ctx.launch.cube_dim
    c0, nc = ctx.cube0, ctx.ncubes
    if gy == 1 and gz == 1:
        box, first_cube = (1, 1, nc), (0, 0, c0)
    elif gz == 1 and c0 % gx == 0 and nc % gx == 0:
        box, first_cube = (1, nc // gx, gx), (0, c0 // gx, 0)
    elif c0 % (gx * gy) == 0 and nc % (gx * gy) == 0:
        box, first_cube = (nc // (gx * gy), gy, gx), (c0 // (gx * gy), 0, 0)
    else:
        return None
    coefs = {s: value(p) for s, p in affine.coefs}
    steps = [coefs.get(s, 0) for s in ("W2", "W1", "W0", "U2", "U1", "U0")]
    shape = box + (dz, dy, dx)
    first = value(affine.offset) + sum(st * c for st, c in zip(steps, first_cube))
    lo = first + sum(min(0, st * (d - 1)) for st, d in zip(steps, shape))
    hi = first + sum(max(0, st * (d - 1)) for st, d in zip(steps, shape))
    if lo < 0 or hi >= mem.length:
        return None
    isz = mem.store.itemsize
    return as_strided(mem.store[first:], shape, tuple(st * isz for st in steps))


def judge_unit_index(ctx: Ctx, mem: Mem, index: np.ndarray) -> tuple[Any, ...] | None | bool:
    """A unit-only index, judged once per chunk shape: False if some lane is out of bounds,
    else, for shared memory in a context whose cubes all run the same units, how each cube's
    lanes reach its row (`cube_pattern`), else None (in bounds, gathered per lane)."""
    if _out_of_bounds(index, mem.length).any():
        return False
    k = ctx.per_cube
    if mem.kind != "shared" or not k or ctx.n != k * ctx.ncubes:
        return None
    return cube_pattern(index[:k].astype(np.intp), ctx.launch.cube_dim if k == ctx.U else None,
                        not mem.item_shape)


def cube_pattern(p: np.ndarray, dims: tuple[int, int, int] | None,
                 scalar: bool) -> tuple[Any, ...]:
    """How the k lanes of each cube reach that cube's row of shared memory through the
    in-bounds pattern `p` (item i of the row for lane i; a unit-only index is periodic, so
    one cube's pattern is every cube's):

    - `("slice", a, b)`: p is a..b-1 — the cube's lanes are the row's items a..b-1;
    - `("strided", offset, shape, steps, injective)`: p is affine in the unit's (z, y, x)
      (`dims`: the cube's shape, when the context holds every unit of a cube; items must be
      scalars) — a strided view of the row, steps in items (0: broadcast); `injective` when no
      two lanes share an item, so the view can be written through;
    - `("take", p)`: anything else, one `take` per row.
    """
    k = len(p)
    a = int(p[0])
    if (p == np.arange(a, a + k)).all():
        return ("slice", a, a + k)
    if dims is not None and scalar:
        dx, dy, dz = dims
        g = p.reshape(dz, dy, dx)
        steps = (int(g[1, 0, 0]) - a if dz > 1 else 0, int(g[0, 1, 0]) - a if dy > 1 else 0,
                 int(g[0, 0, 1]) - a if dx > 1 else 0)
        if min(steps) >= 0:
            z, y, x = np.indices((dz, dy, dx), dtype=np.intp)
            if (g == a + steps[0] * z + steps[1] * y + steps[2] * x).all():
                injective = len(np.unique(p)) == k
                return ("strided", a, (dz, dy, dx), steps, injective)
    return ("take", np.ascontiguousarray(p))


def _cube_view(mem: Mem, pattern: tuple[Any, ...]) -> np.ndarray:
    """Every cube's row of `mem` seen through a slice or strided pattern: (cubes, k[, w]) for a
    slice, (cubes, dz, dy, dx) for a strided one."""
    views = mem.views
    if views is None:
        views = mem.views = {}
    v = views.get(pattern)
    if v is not None:
        return v
    store = mem.store
    if pattern[0] == "slice":
        v = store[:, pattern[1]:pattern[2]]
    else:
        _, a, shape, steps, _ = pattern
        es = store.itemsize  # shared memory is one contiguous array (`shared.declare`)
        v = np.ndarray((store.shape[0],) + shape, store.dtype, store, a * es,
                       (store.strides[0],) + tuple(s * es for s in steps))
    views[pattern] = v
    return v


def _out_of_bounds(index: np.ndarray, length: int) -> np.ndarray:
    if index.dtype.kind == "i":
        return (index < 0) | (index >= length)
    return index >= length


def report_oob(ctx: Ctx, op: Op, p: Ptr, write: bool) -> None:
    launch = ctx.launch
    lanes = np.nonzero(p.report)[0]
    launch.reports_total += len(lanes)
    room = REPORT_LIMIT - len(launch.reports)
    if room <= 0:
        return
    orig = full(p.orig, ctx.n)
    loc = op.loc
    source = ""
    plan_def = launch.definition
    if loc is not None and plan_def is not None:
        i = loc.line - plan_def.first_line
        if 0 <= i < len(plan_def.source_lines):
            source = plan_def.source_lines[i].strip()
    # no `bad` lanes: CheckedIo clamped the index (the access went to item len - 1)
    outcome = "clamped" if p.bad is None else "failed" if write else "zero"
    for li in lanes[:room]:
        li = int(li)
        cube, unit = ctx.coords(li)
        launch.reports.append(OobAccess(
            launch.kernel, p.mem.name, int(orig[li]), p.mem.length, unit, cube,
            ctx.abs_lane(li), write, str(loc) if loc else "?", loc.line if loc else 0, source,
            outcome))


def gather(ctx: Ctx, p: Ptr) -> np.ndarray:
    mem = p.mem
    if p.view is not None:
        return np.array(p.view).reshape(-1)
    if p.start is not None:
        v = mem.store[p.start:p.stop]
        return v if mem.view_ok else v.copy()
    if p.unit:
        return _unit_view(ctx, mem).copy().reshape((ctx.n,) + mem.item_shape)
    pattern = p.pattern
    if pattern is not None:
        # a unit-only index is the same pattern in every cube: each cube's row is read through
        # it (a slice, a strided view, or one `take` per row) instead of flat offsets per lane
        if pattern[0] == "take":
            v = mem.store.take(pattern[1], axis=1)
        else:
            v = np.array(_cube_view(mem, pattern), order="C")
        return v.reshape((ctx.n,) + mem.item_shape)
    rows = rows_of(ctx, mem)
    if rows is None:
        v = np.take(mem.store, p.index, axis=0)  # faster than store[index] (u32 indices)
    else:
        v = np.take(_flat(mem), rows + full(p.index, ctx.n), axis=0)
    if p.bad is not None:
        bad = p.bad
        if bad.shape[0] != v.shape[0]:
            bad = full(bad, v.shape[0])
        v[bad] = 0
    return v


def scatter(ctx: Ctx, p: Ptr, value: np.ndarray, mask: Any) -> None:
    mem = p.mem
    if p.start is not None and mask is None:
        mem.store[p.start:p.stop] = value
        return
    n = ctx.n
    if p.unit:
        view = _unit_view(ctx, mem)
        val = full(value, n).reshape(view.shape)
        if mask is None:
            view[...] = val
        else:
            np.copyto(view, val, where=mask.reshape(view.shape[:2] + (1,) * (val.ndim - 2)))
        return
    pattern = p.pattern
    if pattern is not None and (pattern[0] == "slice" or mask is None and (
            pattern[0] == "take" or pattern[4])):
        # written through the cube pattern: a (masked) slice, an injective strided view, or
        # `store[:, p]` (several lanes on one item: the last lane wins, as below)
        take = pattern[0] == "take"
        view = None if take else _cube_view(mem, pattern)
        shape = (mem.store.shape[0], len(pattern[1])) + mem.item_shape if take else view.shape
        if value.shape[0] == 1:  # a uniform value broadcasts
            val = value.reshape((1,) * (len(shape) - len(mem.item_shape)) + mem.item_shape)
        else:
            val = value.reshape(shape)
        if view is None:
            mem.store[:, pattern[1]] = val
            return
        if mask is None:
            view[...] = val
        else:
            np.copyto(view, val, where=mask.reshape(view.shape[:2] + (1,) * (val.ndim - 2)))
        return
    index = ctx.lanes() if p.start is not None else p.index
    sel = mask
    if p.bad is not None:
        ok = ~full(p.bad, n)
        sel = ok if sel is None else sel & ok
    idx = full(index, n)
    val = full(value, n)
    rows = rows_of(ctx, mem)
    if rows is not None:
        store = _flat(mem)
        idx = rows + idx
    else:
        store = mem.store
    if sel is None:
        store[idx] = val
    else:
        store[idx[sel]] = val[sel]


_IN_PLACE = {"arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply,
             "arith.div": np.divide}


def in_place(op: Op, index_op: Op, value_step: Step, index_step: Step,
             store_step: Step) -> Step:
    """`out[i] = a / b` as one step (`analysis.stored_in_place`): the pointer first, then, when
    it is a slice of the buffer and every lane stores, the ufunc writes its result straight into
    that slice (numpy handles operands that overlap it) — one pass less than computing the value
    and copying it in. Anything else runs the three steps as they are."""
    ufunc = _IN_PLACE[op.name]
    a, b = (o.id for o in op.operands)
    p_id = index_op.results[0].id

    def step(ctx: Ctx, mask: Any) -> None:
        index_step(ctx, mask)
        env = ctx.env
        p = env[p_id]
        if mask is None and p.start is not None and p.report is None:
            dest = p.mem.store[p.start:p.stop]
            x, y = env[a], env[b]
            if type(x) is CubeView or type(y) is CubeView:
                on_views(ufunc, x, y, dest)
            else:
                ufunc(x, y, out=dest)
            return
        value_step(ctx, mask)
        store_step(ctx, mask)

    return step


@builder("memory.load", "atomic.load")
def load_step(plan: Plan, op: Op, depth: int) -> Step:
    """The load behind operand 0 (also `sync.uniform_load`'s, after its barrier)."""
    a, r = op.operands[0].id, op.result.id
    view = id(op) in plan.view_loads
    if r in plan.shared_view_loads:
        def view_step(ctx: Ctx, mask: Any) -> None:
            p = ctx.env[a]
            pattern = p.pattern
            if p.unit or pattern is not None and pattern[0] != "take":
                global shared_views
                shared_views += 1
                ctx.env[r] = CubeView(_unit_view(ctx, p.mem) if p.unit
                                      else _cube_view(p.mem, pattern))
                return
            if p.report is not None:
                report_oob(ctx, op, p, False)
            ctx.env[r] = gather(ctx, p)

        return view_step

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        if isinstance(p, LocalSlot):
            ctx.env[r] = p.arr
            return
        if p.report is not None:
            report_oob(ctx, op, p, False)
        if view and p.start is not None and not p.mem.aliased:
            ctx.env[r] = p.mem.store[p.start:p.stop]
            return
        ctx.env[r] = gather(ctx, p)

    return step


@builder("memory.store", "atomic.store")
def _b_store(plan: Plan, op: Op, depth: int) -> Step:
    a, b = (o.id for o in op.operands)

    def step(ctx: Ctx, mask: Any) -> None:
        p = ctx.env[a]
        value = ctx.env[b]
        if isinstance(p, LocalSlot):
            if mask is None:
                p.arr = value
            else:
                old, n = p.arr, ctx.n
                p.arr = np.where(row_mask(mask, max(value.ndim, old.ndim)), full(value, n),
                                 full(old, n))
            return
        if p.report is not None:
            report_oob(ctx, op, p, True)
        scatter(ctx, p, value, mask)

    return step
