"""Early exits and loops at expand time: `while`, `break`, `continue`, `return`, `unroll`.

The contract. The IR has no jump ops: a `break`, `continue` or `return` that happens under a
runtime condition becomes a store of `true` into a bool flag local, and every statement that
follows a statement able to exit is guarded by `if not (flags...)` (the rewriter wraps "the rest
of the block" in a closure handed to `guard`). Loops read the flags too: `scf.while` folds
`not brk and not ret` into its condition, a runtime `for` wraps its whole body in the same test,
and an unrolled loop wraps each later iteration. This is CubeCL's model (flags plus predication,
not jumps), and the generated WGSL stays structured: the only `break` a target writes is the
`scf.while` exit.

The why of tracking regions. An exit under a *comptime* condition needs no flag at all: Python
already knows it happened, so the rest of the block is simply not expanded (and an unrolled loop
stops unrolling). So the expansion keeps, per function being expanded (the kernel and each
inlined helper), a stack of regions — the function body, each runtime branch, each loop
iteration — and marks a region `exited` when an exit is certain in it. A flag is created only
when an exit crosses a runtime region (or leaves a runtime loop, which needs the flag to stop).

The trap. Flags are created lazily, in the middle of a loop body, but must be reset before the
loop starts (or the function begins, for `return`) — the loop may itself run many times. The
reset is inserted afterwards at a position remembered when the loop or function began (`_Mark`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from cubelab.errors import RangeWrapWarning
from cubelab.frontend import aggregates, sequences
from cubelab.frontend.calls import call
from cubelab.frontend.memory import length, load
from cubelab.frontend.operands import (
    Pos,
    as_bool,
    describe,
    error,
    is_pure,
    pair,
    read,
    ty_of,
    value,
)
from cubelab.frontend.types import GenericScalar, ScalarKind
from cubelab.frontend.values import RV, UNBOUND, ArrayRef, BufferRef, LocalVar, SliceView
from cubelab.frontend.variables import assign, snapshot
from cubelab.ir.core import Block, Op
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, I32, U32, Pointer, Ty


# An unrolled loop of more iterations than this is almost surely a mistake (and slow to compile).
MAX_UNROLL = 4096


@dataclass(eq=False)
class _Mark:
    """A position in a block, robust to prologue inserts: "after `after`" (None: block start).

    `index` is where `after` stood when the mark was made and `hoisted` the prologue's length
    then: hoisting (the only insert above a mark in the root block) shifts it by the prologue's
    growth, so the position is found without a scan; a scan is the fallback when other inserts
    moved it. (A scan per mark made an unrolled loop quadratic: 1 500 iterations spent most of
    their expansion walking the block.)"""

    block: Block
    after: Op | None
    is_root: bool
    index: int = -1
    hoisted: int = 0

    def insert(self, s: Scope, new_ops: list[Op]) -> None:
        ops = self.block.ops
        if self.after is None:
            index = s.prologue_end if self.is_root else 0
        else:
            guess = self.index + (s.prologue_end - self.hoisted if self.is_root else 0)
            if 0 <= guess < len(ops) and ops[guess] is self.after:
                index = guess + 1
            else:
                index = next(i for i, o in enumerate(ops) if o is self.after) + 1
        ops[index:index] = new_ops


def _mark(s: Scope) -> _Mark:
    block = s.block
    ops = block.ops
    if not ops:
        return _Mark(block, None, block is s.root)
    prologue_end = s.prologue_end
    if block is s.root and len(ops) <= prologue_end:
        # the last op is the prologue's (a prefix of the root block): mark the body's start
        return _Mark(block, None, True)
    return _Mark(block, ops[-1], block is s.root, len(ops) - 1, prologue_end)


@dataclass(eq=False)
class Region:
    runtime: bool  # an IR block of its own (runtime branch, runtime loop body, guard)
    exited: bool = False


@dataclass(eq=False)
class Loop:
    runtime: bool
    region_index: int  # index of the iteration region in the function's region stack
    start: _Mark  # where the loop begins (flag resets go here)
    brk: LocalVar | None = None
    cnt: LocalVar | None = None
    cnt_mark: _Mark | None = None  # start of the current iteration (for unrolled loops)
    stop: bool = False  # an unrolled loop left for sure


@dataclass(eq=False)
class Frame:
    """One function being expanded: the kernel, or a helper inlined at a call site."""

    name: str
    helper: bool
    start: _Mark
    regions: list[Region] = field(default_factory=lambda: [Region(False)])
    loops: list[Loop] = field(default_factory=list)
    ret: LocalVar | None = None
    rv: LocalVar | None = None
    value: Any = None
    returns: Any = None  # a helper's `-> f32` / `-> F`: returned values are cast to it


def _frames(s: Scope) -> list[Frame]:
    return s.flow  # type: ignore[no-any-return]


def _frame(s: Scope) -> Frame:
    frames = _frames(s)
    if not frames:  # ops called on a bare Scope (tests, notebooks): an implicit kernel frame
        frames.append(Frame(s.kernel_name, False, _mark(s)))
    return frames[-1]


def _new_flag(s: Scope, name: str, reset_at: _Mark) -> LocalVar:
    ptr = s.declare_var(BOOL, name)
    _reset(s, ptr, reset_at)
    return LocalVar(ptr, name)


def _reset(s: Scope, ptr: Any, at: _Mark) -> None:
    false = s.new_value(BOOL)
    loc = s.loc
    at.insert(s, [Op("arith.constant", [], [false], {"value": False}, [], loc),
                  Op("memory.store", [ptr, false], [], {}, [], loc)])


def _set(s: Scope, var: LocalVar) -> None:
    true = s.emit("arith.constant", [], BOOL, value=True)
    s.register("memory.store", [var.ptr, true])


def _any_flag(s: Scope, flags: Sequence[LocalVar]) -> Any:
    """An IR bool: `not (f1 or f2 ...)`."""
    acc = None
    for f in flags:
        v = s.emit("memory.load", [f.ptr], BOOL)
        acc = v if acc is None else s.emit("arith.or", [acc, v], BOOL)
    assert acc is not None
    return s.emit("arith.not", [acc], BOOL)


def _mark_exits(frame: Frame, down_to: int) -> bool:
    """Mark regions from the innermost down to `down_to` as exited, stopping after the first
    runtime one (outside it, the exit is only conditional). Returns whether one was crossed."""
    for i in range(len(frame.regions) - 1, down_to - 1, -1):
        r = frame.regions[i]
        r.exited = True
        if r.runtime and i > down_to:
            return True
    return False


# -- functions ---------------------------------------------------------------------------------
def fn_enter(s: Scope, name: str, helper: bool, at: Pos, returns: Any = None) -> None:
    s.at(*at)
    frame = Frame(name, helper, _mark(s))
    if isinstance(returns, (ScalarKind, GenericScalar)):
        frame.returns = returns
    _frames(s).append(frame)


def fn_exit(s: Scope) -> Any:
    frame = _frames(s).pop()
    if frame.rv is not None:
        return snapshot(s, frame.rv)
    return frame.value


def ret(s: Scope, x: Any, at: Pos) -> None:
    """`return` / `return x`."""
    s.at(*at)
    frame = _frame(s)
    x = snapshot(s, x) if x is not None else None
    if x is not None and frame.returns is not None:
        x = call(s, frame.returns, [x], at)
    crossed = _mark_exits(frame, 0)
    for loop in frame.loops:
        if not loop.runtime and frame.regions[loop.region_index].exited:
            loop.stop = True
    if not crossed:
        frame.value = x
        return
    if frame.ret is None:
        frame.ret = _new_flag(s, "returned", frame.start)
    if x is not None:
        if frame.rv is None:
            frame.rv = assign(s, UNBOUND, x, "return_value", True, at)
        elif aggregates.is_aggregate_value(frame.rv) or isinstance(frame.rv, tuple):
            # a struct is copied field-wise, a tuple item by item
            assign(s, frame.rv, x, "return_value", True, at)
        else:
            ptr_ty = frame.rv.ptr.type
            want = ptr_ty.pointee if isinstance(ptr_ty, Pointer) else None
            got = read(s, x)
            if isinstance(got, RV) and isinstance(want, Ty) and got.v.type != want \
                    and not (isinstance(got.v.type, Ty) and got.v.type.width == 1
                             and got.v.type.elem is want.elem):
                raise error(s, f"`{frame.name}` returns {want} on one path and "
                                f"{got.v.type} on this one",
                                f"return one type everywhere, e.g. {want.elem.value}(...); a "
                                "bare literal in the first return takes i32 / f32")
            assign(s, frame.rv, got, "return_value", True, at)
    elif frame.helper and frame.rv is not None:
        raise error(s, "this `return` has no value but another one has",
                        "return a value on every path")
    _set(s, frame.ret)


def brk(s: Scope, at: Pos) -> None:
    s.at(*at)
    frame = _frame(s)
    loop = frame.loops[-1]
    crossed = _mark_exits(frame, loop.region_index)
    if not loop.runtime and not crossed:
        loop.stop = True
        return
    if loop.brk is None:
        loop.brk = _new_flag(s, "broke", loop.start)
    _set(s, loop.brk)


def cont(s: Scope, at: Pos) -> None:
    s.at(*at)
    frame = _frame(s)
    loop = frame.loops[-1]
    crossed = _mark_exits(frame, loop.region_index)
    if not crossed:
        return  # the rest of this iteration is simply not expanded
    if loop.cnt is None:
        assert loop.cnt_mark is not None
        loop.cnt = _new_flag(s, "continued", loop.cnt_mark)
    _set(s, loop.cnt)


def _flags(frame: Frame, with_cnt: bool = True) -> list[LocalVar]:
    out: list[LocalVar] = []
    if frame.loops:
        loop = frame.loops[-1]
        out += [f for f in (loop.brk, loop.cnt if with_cnt else None) if f is not None]
    if frame.ret is not None:
        out.append(frame.ret)
    return out


def _runtime_region(s: Scope, frame: Frame, block: Block, fn: Callable[[], Any]) -> None:
    frame.regions.append(Region(True))
    try:
        with s.child(block):
            fn()
    finally:
        frame.regions.pop()


def guard(s: Scope, rest: Callable[[], None], at: Pos) -> None:
    """The statements after one that may exit: skipped if the exit is certain, guarded by the
    flags if it is conditional, expanded plainly if no exit happened."""
    s.at(*at)
    frame = _frame(s)
    if frame.regions[-1].exited:
        return
    flags = _flags(frame)
    if not flags:
        rest()
        return
    cond = _any_flag(s, flags)
    then = Block()
    op = s.register("scf.if", [cond])
    op.regions = [then, Block()]
    _runtime_region(s, frame, then, rest)


def runtime_branch(s: Scope, block: Block, fn: Callable[[], Any]) -> None:
    """Expand a runtime `if` branch (called by `if_`)."""
    frames = _frames(s)
    if not frames:
        with s.child(block):
            fn()
        return
    _runtime_region(s, frames[-1], block, fn)


# -- branches ----------------------------------------------------------------------------------
def if_(s: Scope, cond: Any, then: Callable[[], None], orelse: Callable[[], None] | None,
        at: Pos) -> None:
    """Runtime `if` → an `scf.if` op with two child blocks; a comptime condition picks one
    branch in Python and only that branch reaches the IR (CubeCL's `if_expand`)."""
    s.at(*at)
    cond = read(s, cond)
    if not isinstance(cond, RV):
        if cond is UNBOUND or not isinstance(cond, (bool, int, float, type(None), str, tuple,
                                                    list)):
            raise error(s, f"cannot branch on {describe(cond)}",
                        "branch on a bool: a comparison (x > 0.0), a bool value, or a comptime "
                        "Python value")
        if cond:
            then()
        elif orelse is not None:
            orelse()
        return
    c = as_bool(s, cond, "if")
    if ty_of(c).width != 1:
        raise error(s, "an `if` condition must be one bool, not a vector of bools",
                    "test one component (`(v > 0.0)[0]`), or pick per component with "
                    "select(cond, a, b)")
    then_block, else_block = Block(), Block()
    op = s.register("scf.if", [c])
    op.regions = [then_block, else_block]
    runtime_branch(s, then_block, then)
    if orelse is not None:
        runtime_branch(s, else_block, orelse)


def ifexp(s: Scope, cond: Any, a: Callable[[], Any], b: Callable[[], Any], at: Pos) -> Any:
    """`x if cond else y`. A comptime `cond` picks a side in Python. A runtime one expands both
    sides: when both are pure value computations it is `arith.select` (both computed, as
    `select`); otherwise (a load, an atomic, a call with effects) a branch stores the chosen
    side into a local, so only that side runs — CubeCL's semantics."""
    s.at(*at)
    cond = read(s, cond)
    if not isinstance(cond, RV):
        return a() if cond else b()
    c = as_bool(s, cond, "x if cond else y")
    if ty_of(c).width != 1:
        raise error(s, "`x if cond else y` needs one bool condition, got a bool vector",
                    "use select(cond, a, b), which picks per component")
    sides = (Block(), Block())
    got = []
    for block, thunk in zip(sides, (a, b)):
        with s.child(block):
            got.append(read(s, thunk()))
    s.at(*at)
    x, y = got
    if aggregates.is_aggregate_value(x):  # a struct or enum: each side stores its fields
        choice = aggregates.storage_like(s, x, "choice")
        for block, side in zip(sides, got):
            with s.child(block):
                aggregates.copy_into(s, choice, side, "choice")
        s.register("scf.if", [c]).regions = [sides[0], sides[1]]
        return choice
    if all(is_pure(block) for block in sides):
        for block in sides:
            s.block.ops.extend(block.ops)
        vx, vy = pair(s, x, y, "x if cond else y")
        return RV(s.emit("arith.select", [c, vx, vy], ty_of(vx)))
    like = ty_of(x.v) if isinstance(x, RV) else ty_of(y.v) if isinstance(y, RV) else None
    vals = []
    for block, side in zip(sides, got):
        with s.child(block):
            vals.append(value(s, side, like))
    if ty_of(vals[0]) != ty_of(vals[1]):
        raise error(s, f"`x if cond else y` with sides of types {ty_of(vals[0])} and "
                    f"{ty_of(vals[1])}", "cast one side so both have one type")
    result = s.declare_var(ty_of(vals[0]), "choice")
    for block, v in zip(sides, vals):
        with s.child(block):
            s.register("memory.store", [result, v])
    s.register("scf.if", [c]).regions = [sides[0], sides[1]]
    return RV(s.emit("memory.load", [result], ty_of(vals[0])))


# -- loops -------------------------------------------------------------------------------------
def _wrap_body(s: Scope, body: Block, flags: list[LocalVar]) -> None:
    """Predicate a whole loop body on `not (flags)` (after its expansion)."""
    inner = body.ops[:]
    body.ops[:] = []
    with s.child(body):
        cond = _any_flag(s, flags)
        op = s.register("scf.if", [cond])
        op.regions = [Block(inner), Block()]


def _loop_body(s: Scope, frame: Frame, loop: Loop, block: Block, fn: Callable[[], Any]) -> None:
    frame.loops.append(loop)
    frame.regions.append(Region(True))
    loop.region_index = len(frame.regions) - 1
    loop.cnt_mark = _Mark(block, None, False)
    try:
        with s.child(block):
            fn()
    finally:
        frame.regions.pop()
        frame.loops.pop()


def while_(s: Scope, cond: Callable[[], Any], body: Callable[[], None], at: Pos) -> None:
    """`while cond: body` → `scf.while` (region 0 computes the condition, region 1 the body)."""
    s.at(*at)
    frame = _frame(s)
    before, block = Block(), Block()
    op = s.register("scf.while", [])
    op.regions = [before, block]
    loop = Loop(True, 0, _before(s, op))  # flags are reset right before the loop
    _loop_body(s, frame, loop, block, body)
    flags = [f for f in (loop.brk, frame.ret) if f is not None]
    with s.child(before):
        s.at(*at)
        c = read(s, cond())
        s.at(*at)
        if not isinstance(c, RV):
            if not isinstance(c, (bool, int)):
                raise error(s, f"a while condition must be a bool, got {describe(c)}",
                            "write a comparison, e.g. `while i < n:`")
            if c and not flags:
                raise error(s, "`while True` with no break or return never ends",
                                "add a `break` under a condition, or loop over range(...)")
        cv = value(s, c, BOOL)
        if ty_of(cv) != BOOL:
            raise error(s, f"a while condition must be one bool, got {ty_of(cv)}",
                            "compare first, e.g. `while x != 0:`")
        if flags:
            cv = s.emit("arith.and", [cv, _any_flag(s, flags)], BOOL)
        s.register("scf.condition", [cv])


def _before(s: Scope, op: Op) -> _Mark:
    block = s.block
    i = next(i for i, o in enumerate(block.ops) if o is op)
    if i == 0 or (block is s.root and i <= s.prologue_end):
        return _Mark(block, None, block is s.root)
    return _Mark(block, block.ops[i - 1], block is s.root)


def for_range(s: Scope, args: Sequence[Any], body: Callable[[Any], None], exits: bool = False,
              *, at: Pos) -> None:
    """`for i in range(start, end, step)` → an `scf.for` loop (bounds may be runtime values).

    A loop whose body may `break` or `return` (the rewriter passes `exits`) becomes an
    `scf.while` over a counter local instead, so that it really stops early: the counter is
    advanced at the top of each iteration (a `continue` cannot skip it) and the condition
    folds in the exit flags."""
    s.at(*at)
    args = [read(s, a) for a in args]
    if not 1 <= len(args) <= 3:
        raise error(s, "range() takes 1 to 3 arguments",
                    "write range(end), range(start, end) or range(start, end, step)")
    if len(args) == 1:
        args = [0, args[0], 1]
    elif len(args) == 2:
        args = [args[0], args[1], 1]
    start, end, step = args
    runtime = [a for a in args if isinstance(a, RV)]
    if runtime:
        ty = ty_of(runtime[0].v)
    else:
        ty = U32 if all(isinstance(a, int) and a >= 0 for a in args) else I32
    if ty not in (U32, I32):
        raise error(s, f"range() bounds must be u32 or i32, got {ty}",
                    "cast the bound: range(u32(n))")
    if isinstance(step, int) and step <= 0:
        raise error(s, f"range() step must be positive, got {step}",
                        "count up and compute the index: `for k in range(n): i = n - 1 - k`")
    _warn_if_counter_wraps(s, ty, start, end, step)
    vals = [value(s, a, ty) for a in (start, end, step)]
    for v in vals:
        if ty_of(v) != ty:
            raise error(s, f"range() bounds mix {ty} and {ty_of(v)}",
                            "cast them to one type")
    if exits:
        _counted_while(s, ty, vals, body, at)
        return
    iv = s.new_value(ty, "i")
    block = Block(args=[iv])
    op = s.register("scf.for", vals)
    op.regions = [block]
    frame = _frame(s)
    loop = Loop(True, 0, _before(s, op))
    _loop_body(s, frame, loop, block, lambda: body(RV(iv)))
    flags = [f for f in (loop.brk, frame.ret) if f is not None]
    if flags:
        _wrap_body(s, block, flags)


def _warn_if_counter_wraps(s: Scope, ty: Ty, start: Any, end: Any, step: Any) -> None:
    """The loop counter is a 32-bit value that steps `i += step` while `i < end`: when the last
    iteration's `i + step` passes the type's largest value, it wraps to a small (or negative)
    number, still below `end`, and the loop runs on. Said at expansion when the bounds are
    comptime (a runtime bound cannot be checked here); the loop guard stops the launch."""
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in (start, end, step)):
        return
    if end <= start:
        return
    top = 2**32 - 1 if ty == U32 else 2**31 - 1
    last = start + (end - start - 1) // step * step
    if last + step <= top:
        return
    bounds = f"range({start}, {end}, {step})"
    message = str(error(
        s, f"{bounds} wraps its {ty} counter: after i = {last}, i + {step} passes {top} and "
           f"wraps to {last + step - 2**32}, still "
           f"below the end, so the loop would run on",
        "end the loop lower, or count iterations instead: "
        f"`for k in range({len(range(start, end, step))}): i = {start} + k * {step}`"))
    warnings.warn_explicit(message, RangeWrapWarning, s.file, s.loc.line if s.loc else 0)


def _counted_while(s: Scope, ty: Ty, vals: list[Any], body: Callable[[Any], None],
                   at: Pos) -> None:
    start, end, step = vals
    counter = s.declare_var(ty, "i")
    s.register("memory.store", [counter, start])

    def cond() -> Any:
        cur = s.emit("memory.load", [counter], ty)
        return RV(s.emit("arith.cmp", [cur, end], BOOL, pred="lt"))

    def iteration() -> None:
        cur = s.emit("memory.load", [counter], ty)
        s.register("memory.store", [counter, s.emit("arith.add", [cur, step], ty)])
        body(RV(cur))

    while_(s, cond, iteration, at)


def for_unroll(s: Scope, args: Sequence[Any], body: Callable[[Any], None], at: Pos) -> None:
    """`for i in unroll(range(a, b, step))`: the body is expanded once per iteration with `i`
    a Python int (a constant in the IR). The bounds must be known at expansion."""
    s.at(*at)
    args = [read(s, a) for a in args]
    bad = [a for a in args if not isinstance(a, int) or isinstance(a, bool)]
    if bad:
        raise error(s, f"unroll(range(...)) needs comptime bounds, got {describe(bad[0])}",
                        "use Python ints or Comptime[int] arguments, or drop unroll(...) for a "
                        "runtime loop")
    try:
        rng = range(*args)
    except (TypeError, ValueError) as exc:
        raise error(s, f"unroll(range(...)): {exc}",
                    "unroll needs comptime bounds (Python ints or Comptime arguments)") from None
    if len(rng) > MAX_UNROLL:
        raise error(s, f"unroll(range(...)) of {len(rng)} iterations (limit {MAX_UNROLL})",
                        "drop unroll(...) for a runtime loop")
    _unroll(s, rng, body)


def for_each(s: Scope, seq: Any, body: Callable[[Any], None], exits: bool = False, *,
             at: Pos) -> None:
    """`for x in seq` over something that is not a range: a comptime tuple or list (`for v in
    (a, b, c)`, a `Comptime[tuple]`, a list built at expansion) is unrolled, one expansion per
    item; a buffer, array or slice (`for v in x[2:4]`) is a runtime loop over its items."""
    s.at(*at)
    seq = read(s, seq)
    if isinstance(seq, sequences.Sequence):  # a list of runtime values: each item read as its turn comes
        items = seq.items
        _unroll(s, items, lambda item: body(read(s, item)))
        return
    if isinstance(seq, (tuple, list)):
        if len(seq) > MAX_UNROLL:
            raise error(s, f"a loop over {len(seq)} comptime items (unroll limit {MAX_UNROLL})",
                        "loop over range(...) and index instead")
        _unroll(s, seq, body)
        return
    if isinstance(seq, (BufferRef, ArrayRef, SliceView)):
        n = length(s, seq)
        for_range(s, [n], lambda i: body(load(s, seq, i)), exits, at=at)
        return
    raise error(s, f"a kernel loop cannot iterate over {describe(seq)}",
                "iterate over range(...), a comptime tuple or list, or a buffer / slice")


def _unroll(s: Scope, items: Sequence[Any], body: Callable[[Any], None]) -> None:
    frame = _frame(s)
    loop = Loop(False, 0, _mark(s))
    frame.loops.append(loop)
    try:
        for i in items:
            flags = [f for f in (loop.brk, frame.ret) if f is not None]
            if flags:
                then = Block()
                op = s.register("scf.if", [_any_flag(s, flags)])
                op.regions = [then, Block()]
                with s.child(then):
                    _unrolled_iteration(s, frame, loop, body, i)
            else:
                _unrolled_iteration(s, frame, loop, body, i)
            if loop.stop or frame.regions[-1].exited:
                break
    finally:
        frame.loops.pop()


def _unrolled_iteration(s: Scope, frame: Frame, loop: Loop, body: Callable[[Any], None],
                        i: int) -> None:
    # Not a runtime region even when wrapped in a flag guard: given that this iteration runs, a
    # `break` straight in it certainly ends the loop, so no flag is needed for it.
    frame.regions.append(Region(False))
    loop.region_index = len(frame.regions) - 1
    loop.cnt_mark = _mark(s)
    if loop.cnt is not None:
        _reset(s, loop.cnt.ptr, loop.cnt_mark)
        loop.cnt_mark = _mark(s)
    try:
        body(i)
    finally:
        frame.regions.pop()


def unroll(r: Any) -> Any:
    """Marks a `for` loop to be unrolled at expansion: `for i in unroll(range(4)):`. Outside a
    kernel it returns its argument."""
    return r


__all__ = ["brk", "cont", "fn_enter", "fn_exit", "for_range", "for_unroll", "guard", "if_",
           "ifexp", "ret", "runtime_branch", "unroll", "while_"]
