"""Compaction: a branch (or per-unit loop body) that few lanes of a large chunk take runs on
those lanes alone, in a compacted context (`Ctx.sub`), instead of masked over all of them.

`branch` decides (at least `COMPACT_MIN_LANES` lanes, at most 1/`COMPACT_RATIO` of them active);
`run_compacted` selects what the body reads from outside (`analysis.free_ids`), runs it, and
merges what it wrote to locals back. Everything else a body writes goes to memory, which the
compacted context shares. `compacted_runs` counts the runs that took this path, so a test can
tell that it covered what it means to cover (the decision depends on lane counts).

The trap: results must be identical with compaction on every branch — tests force it
(`tests/test_cpu_compaction.py`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from cubelab.runtime.cpu.lanes import Ctx, full
from cubelab.runtime.cpu.memory import LocalSlot, Ptr

# A branch taken by at most 1/COMPACT_RATIO of a chunk's lanes runs on those lanes alone.
COMPACT_RATIO = 4
COMPACT_MIN_LANES = 2048
# A unit-only mask's selection is computed once per chunk shape and most of what its body reads
# is already compacted there, so half of a chunk's lanes is enough.
UNIT_COMPACT_RATIO = 2
compacted_runs = 0  # how many branch bodies ran compacted, ever (read by tests)


def _compact(a: Any, sel: np.ndarray, n: int) -> Any:
    if isinstance(a, np.ndarray):
        return a[sel] if a.ndim and a.shape[0] == n and n > 1 else a
    return a


def run_compacted(ctx: Ctx, m: np.ndarray, free: list[int],
                  body: Callable[[Ctx, Any], None], sel: np.ndarray | None = None,
                  static: dict[Any, Any] | None = None, per_cube: int = 0,
                  private: frozenset[int] = frozenset()) -> None:
    """Run `body` on the lanes of `m` only: compact what it reads, run, merge what it wrote to
    the locals back (everything else it writes goes to memory, which is shared).

    `sel`/`static`/`per_cube`: the selection of a memoized (unit-only) mask, the arrays its
    compacted contexts share across chunks (a memoized value read by the body is compacted once
    there) and how many units of each cube it keeps (the same ones in every cube). `private`:
    locals nothing reads after the body (`analysis.branch_private_vars`), not merged back."""
    global compacted_runs
    compacted_runs += 1
    if sel is None:
        sel = np.nonzero(m)[0]
    n = ctx.n
    sub = Ctx.sub(ctx, sel, static, per_cube)
    env = ctx.env
    parent_memo = ctx._static.get("memo_ids", ()) if static is not None else ()
    sub_memo = static.setdefault("memo_ids", set()) if static is not None else set()
    # uniform values (hoisted out of the branch) stay as they are; per-lane ones are compacted
    senv = sub.env = list(env)
    slots: list[tuple[LocalSlot, LocalSlot, Any]] = []
    for i in free:
        v = env[i]
        if isinstance(v, np.ndarray):
            if id(v) in parent_memo and static is not None:
                key = ("sel", id(v))
                found = static.get(key)
                if found is None:
                    found = static[key] = _compact(v, sel, n)
                    found.setflags(write=False)
                    sub_memo.add(id(found))
                v = found
            else:
                v = _compact(v, sel, n)
        elif isinstance(v, LocalSlot):
            proxy = LocalSlot(v.name, _compact(v.arr, sel, n))
            if i not in private:
                slots.append((v, proxy, proxy.arr))
            v = proxy
        elif isinstance(v, Ptr):
            if v.start is not None:
                idx = (ctx.lanes()[sel]).astype(np.intp)
                v = Ptr(v.mem, idx, idx)
            elif v.unit:
                idx = ctx.unit_index()[sel]
                v = Ptr(v.mem, idx, idx)
            else:
                v = Ptr(v.mem, _compact(v.index, sel, n), _compact(v.orig, sel, n),
                        None if v.bad is None else _compact(v.bad, sel, n),
                        None if v.report is None else _compact(v.report, sel, n))
        senv[i] = v
    body(sub, None)
    for slot, proxy, before in slots:
        if proxy.arr is not before:
            merged = np.array(full(slot.arr, n))
            merged[sel] = full(proxy.arr, len(sel))
            slot.arr = merged


def branch(ctx: Ctx, m: Any, body: Callable[[Ctx, Any], None], free: list[int],
           private: frozenset[int] = frozenset()) -> None:
    """Run `body` under mask `m`, compacted to the active lanes when they are few (`private`:
    see `run_compacted`)."""
    if m is not None and ctx.n >= COMPACT_MIN_LANES:
        static = ctx._static
        if ctx.per_cube and id(m) in static.get("memo_ids", ()):
            # a unit-only mask (`UNIT_POS < s`): the same selection in every chunk of this
            # shape and the same units in every cube, so it and the compacted context's arrays
            # are computed once, and shared memory is reached through per-cube patterns there
            key = ("branch", id(m))
            found = static.get(key)
            if found is None:
                sel = np.nonzero(m)[0]
                found = static[key] = (len(sel), sel, {})
            k, sel, sub_static = found
            if k * min(COMPACT_RATIO, UNIT_COMPACT_RATIO) <= ctx.n:
                run_compacted(ctx, m, free, body, sel, sub_static, k // ctx.ncubes, private)
                return
            body(ctx, m)
            return
        k = int(np.count_nonzero(m))
        if k * COMPACT_RATIO <= ctx.n:
            run_compacted(ctx, m, free, body, private=private)
            return
    body(ctx, m)
