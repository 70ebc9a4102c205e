"""Steps of the value dialects: `arith.*`, `math.*`, `vector.*` — elementwise numpy on one row
per lane (or one row for a uniform value; broadcasting does the rest).

Integer wrap-around and float overflow are WGSL semantics, not accidents: the CPU server turns
numpy's warnings off on its device thread. What numpy does differently from WGSL (integer
division by zero, shift amounts, casts that saturate) goes through `runtime/cpu/semantics.py`,
the one home of those rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from cubelab.ir.core import Op
from cubelab.ir.types import Elem
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.lanes import Ctx, KernelRuntimeError, frozen
from cubelab.runtime.cpu.memory import CubeView
from cubelab.runtime.cpu.steps.registry import Step, builder, ty_of

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


_NP_BIN = {"arith.add": np.add, "arith.sub": np.subtract, "arith.mul": np.multiply,
           "arith.bitand": np.bitwise_and, "arith.bitor": np.bitwise_or,
           "arith.bitxor": np.bitwise_xor, "arith.and": np.logical_and,
           "arith.or": np.logical_or}


def _binary(op: Op, f: Callable[[Any, Any], Any], plan: Plan | None = None) -> Step:
    """The one step of an elementwise binary op: `result = f(lhs, rhs)` over the lanes. Given
    the plan, an operand may be a shared-memory load handed over as a view (`CubeView`)."""
    a, b = (o.id for o in op.operands)
    r = op.result.id
    views = set() if plan is None else plan.shared_view_loads | plan.view_results
    if a in views or b in views:
        keep = r in plan.view_results  # type: ignore[union-attr]

        def view_step(ctx: Ctx, mask: Any) -> None:
            env = ctx.env
            x, y = env[a], env[b]
            if type(x) is CubeView or type(y) is CubeView:
                env[r] = on_views(f, x, y, keep=keep)
            else:
                env[r] = f(x, y)

        return view_step

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], env[b])

    return step


def on_views(f: Callable[..., Any], x: Any, y: Any, out: np.ndarray | None = None,
             keep: bool = False) -> Any:
    """`f` on operands of which one or both are views of each cube's row: computed in the
    views' shape (the strided one's when both are views), flattened to one row per lane (into
    `out`, one row per lane, when given: `f` is then a ufunc), or handed on as a `CubeView` of
    the result (`keep`: `analysis.view_results`).

    Rows of a shared array seen through a slice (`tile[u + 1]`: (cubes, k) with the array's
    row stride) are computed as one 1-D run over their span, the items between rows included
    and then ignored: numpy's 2-D loop over such rows costs ~3× the 1-D one."""
    xv, yv = type(x) is CubeView, type(y) is CubeView
    a = x.a if xv else x
    b = y.a if yv else y
    rows = _rows(a, b)
    if rows is not None:
        shape, stride, span = rows
        fa = a if a.ndim == 1 else as_strided(a, (span,), (a.itemsize,))
        fb = b if b.ndim == 1 else as_strided(b, (span,), (b.itemsize,))
        if type(f) is np.ufunc and (xv and x.owned or yv and y.owned):
            # a partial result read only here: the next one goes into its buffer
            res = f(fa, fb, out=fa if xv and x.owned else fb)
        else:
            res = f(fa, fb)
        isz = res.itemsize
        view = np.ndarray(shape, res.dtype, res, 0, (stride * isz, isz))
        if out is not None:  # into lane order: a copy of 2-D rows is as fast as a 1-D one
            np.copyto(out.reshape(shape), view)
            return out
        return CubeView(view, owned=True) if keep else view.reshape(-1)
    if a.shape != b.shape:
        if xv and (not yv or a.ndim >= b.ndim):
            if b.shape != (1,):
                b = b.reshape(a.shape)
        elif a.shape != (1,):
            a = a.reshape(b.shape)
    if out is not None:
        f(a, b, out=out.reshape(a.shape if a.shape != (1,) else b.shape))
        return out
    res = f(a, b)
    return CubeView(res, owned=True) if keep else res.reshape(-1)


def _rows(a: np.ndarray, b: np.ndarray) -> tuple[tuple[int, int], int, int] | None:
    """((rows, k), row stride in items, items spanned) when every operand of `a`, `b` that is
    not one uniform row is a 2-D (rows, k) view with unit inner stride, rows further apart than
    k items but by at most a quarter more (the span computes those items too: `sm[u + s]` of a
    tree reduction's late steps reads 1 item in 256), and the same shape, strides and dtype."""
    views = [v for v in (a, b) if v.shape != (1,)]
    if not views or any(v.ndim != 2 for v in views):
        return None
    v0 = views[0]
    shape, strides, isz = v0.shape, v0.strides, v0.itemsize
    if strides[1] != isz or strides[0] % isz or strides[0] <= shape[1] * isz or any(
            v.shape != shape or v.strides != strides or v.dtype != v0.dtype for v in views):
        return None
    stride = strides[0] // isz
    if 4 * stride > 5 * shape[1]:
        return None
    return shape, stride, (shape[0] - 1) * stride + shape[1]


@builder(*_NP_BIN)
def _b_bin(plan: Plan, op: Op, depth: int) -> Step:
    f = _NP_BIN[op.name]
    return _binary(op, f, plan)


@builder("arith.min", "arith.max")
def _b_minmax(plan: Plan, op: Op, depth: int) -> Step:
    fl = ty_of(op.result).elem is Elem.F32
    f = {("arith.min", True): np.fmin, ("arith.max", True): np.fmax,
         ("arith.min", False): np.minimum, ("arith.max", False): np.maximum}[(op.name, fl)]
    return _binary(op, f, plan)


@builder("arith.div", "arith.rem")
def _b_divrem(plan: Plan, op: Op, depth: int) -> Step:
    elem = ty_of(op.result).elem
    if elem is Elem.F32:
        f: Callable[[Any, Any], Any] = np.divide if op.name == "arith.div" else np.fmod
    else:
        g = sem.int_div if op.name == "arith.div" else sem.int_rem

        def f(x: Any, y: Any) -> Any:
            return g(x, y, elem)

    return _binary(op, f, plan)


@builder("arith.shl", "arith.shr")
def _b_shift(plan: Plan, op: Op, depth: int) -> Step:
    f = np.left_shift if op.name == "arith.shl" else np.right_shift
    dt = sem.dtype_of(ty_of(op.result))
    a, b = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = f(env[a], sem.shift_amount(env[b]).astype(dt))

    return step


_PRED = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
         "eq": np.equal, "ne": np.not_equal}


_UNIFORM_BOOL = {v: frozen(np.array([v])) for v in (False, True)}


@builder("arith.cmp")
def _b_cmp(plan: Plan, op: Op, depth: int) -> Step:
    pred = op.attrs["pred"]
    f = _PRED[pred]
    a, b = (o.id for o in op.operands)
    if plan.needed is None or (a in plan.lane_ids) == (b in plan.lane_ids):
        return _binary(op, f)
    # ABSOLUTE_POS against a uniform bound (`i < n`): the chunk's lanes are start..start+n-1,
    # so the bound usually decides every lane at once — one row, and the branch needs no mask
    lane_left = a in plan.lane_ids
    bound_id = b if lane_left else a
    r = op.result.id
    ordered = pred not in ("eq", "ne")

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        bound = env[bound_id]
        if ctx.contiguous and bound.shape[0] == 1:
            lo, hi, k = ctx.start, ctx.start + ctx.n - 1, int(bound[0])
            if ordered or not lo <= k <= hi:
                first = bool(f(lo, k) if lane_left else f(k, lo))
                if first == bool(f(hi, k) if lane_left else f(k, hi)):
                    env[r] = _UNIFORM_BOOL[first]
                    return
        env[r] = f(env[a], env[b])

    return step


_NP_UN = {"arith.not": np.logical_not, "arith.neg": np.negative, "arith.bitnot": np.invert}


@builder(*_NP_UN)
def _b_un(plan: Plan, op: Op, depth: int) -> Step:
    f = _NP_UN[op.name]
    (a,) = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = f(ctx.env[a])

    return step


@builder("arith.constant")
def _b_const(plan: Plan, op: Op, depth: int) -> Step:
    value = sem.constant(op.attrs["value"], ty_of(op.result))
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = value

    return step


@builder("arith.cast")
def _b_cast(plan: Plan, op: Op, depth: int) -> Step:
    src, dst = ty_of(op.operands[0]), ty_of(op.result)
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = sem.cast(ctx.env[a], src, dst)

    return step


@builder("arith.bitcast")
def _b_bitcast(plan: Plan, op: Op, depth: int) -> Step:
    dtype = np.dtype(ty_of(op.result).elem.numpy_dtype)
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.ascontiguousarray(ctx.env[a]).view(dtype)

    return step


@builder("arith.select")
def _b_select(plan: Plan, op: Op, depth: int) -> Step:
    c, a, b = (o.id for o in op.operands)
    widen = ty_of(op.operands[0]).width == 1 and ty_of(op.result).width > 1
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        cond = env[c]
        if widen:
            cond = cond[:, None]
        env[r] = np.where(cond, env[a], env[b])

    return step


@builder("math.unary")
def _b_math1(plan: Plan, op: Op, depth: int) -> Step:
    fn = op.attrs["fn"]
    f = sem.MATH.get(fn)
    if f is None:
        raise KernelRuntimeError(f"math function {fn!r} has no CPU implementation")
    a, r = op.operands[0].id, op.result.id
    dt = sem.dtype_of(ty_of(op.result))

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = np.asarray(f(ctx.env[a])).astype(dt, copy=False)

    return step


@builder("math.binary")
def _b_math2(plan: Plan, op: Op, depth: int) -> Step:
    fn = op.attrs["fn"]
    a, b = (o.id for o in op.operands)
    r = op.result.id
    f: Any
    if fn == "pow":
        def f(x: Any, y: Any) -> Any:
            return np.where(x < 0, np.float32(np.nan), np.power(x, y))
    elif fn == "atan2":
        f = np.arctan2
    elif fn in ("min", "max"):
        f = np.fmin if fn == "min" else np.fmax
    else:
        raise KernelRuntimeError(f"math function {fn!r} has no CPU implementation")
    dt = sem.dtype_of(ty_of(op.result))

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = np.asarray(f(env[a], env[b])).astype(dt, copy=False)

    return step


@builder("math.fma")
def _b_fma(plan: Plan, op: Op, depth: int) -> Step:
    a, b, c = (o.id for o in op.operands)
    r = op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        env = ctx.env
        env[r] = env[a] * env[b] + env[c]

    return step


@builder("vector.splat")
def _b_splat(plan: Plan, op: Op, depth: int) -> Step:
    w = ty_of(op.result).width
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        x = ctx.env[a]
        ctx.env[r] = np.broadcast_to(x[:, None], (x.shape[0], w))

    return step


@builder("vector.insert")
def _b_insert(plan: Plan, op: Op, depth: int) -> Step:
    i = int(op.attrs["index"])
    a, x, r = op.operands[0].id, op.operands[1].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        v, c = ctx.env[a], ctx.env[x]
        out = np.array(np.broadcast_to(v, (max(v.shape[0], c.shape[0]),) + v.shape[1:]))
        out[:, i] = c
        ctx.env[r] = out

    return step


@builder("vector.insert_at")
def _b_insert_at(plan: Plan, op: Op, depth: int) -> Step:
    w = ty_of(op.result).width
    a, i, x, r = op.operands[0].id, op.operands[1].id, op.operands[2].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        v, k, c = ctx.env[a], ctx.env[i], ctx.env[x]
        n = max(v.shape[0], np.shape(k)[0] if np.ndim(k) else 1, c.shape[0])
        hit = np.broadcast_to(k, (n,))[:, None] == np.arange(w)[None, :]
        ctx.env[r] = np.where(hit, np.broadcast_to(c, (n,))[:, None], np.broadcast_to(v, (n, w)))

    return step


@builder("vector.extract_at")
def _b_extract_at(plan: Plan, op: Op, depth: int) -> Step:
    last = ty_of(op.operands[0]).width - 1
    a, i, r = op.operands[0].id, op.operands[1].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        v = ctx.env[a]
        k = np.minimum(np.broadcast_to(ctx.env[i], (v.shape[0],)), last).astype(np.intp)
        ctx.env[r] = v[np.arange(v.shape[0]), k]

    return step


@builder("vector.extract")
def _b_extract(plan: Plan, op: Op, depth: int) -> Step:
    i = int(op.attrs["index"])
    a, r = op.operands[0].id, op.result.id

    def step(ctx: Ctx, mask: Any) -> None:
        ctx.env[r] = ctx.env[a][:, i]

    return step
