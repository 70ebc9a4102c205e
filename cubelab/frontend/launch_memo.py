"""The launch memo: a bound launcher's recent launches, kept by value, so that a loop which builds
its arguments in the call checks them once.

The README's loop, the seeds' and every chapter's build new argument objects on every launch:

    for _ in range(400):
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0,
                          BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))

Each launch is the same launch as the last one: the same handles, lengths, numbers. A `Memo`
keeps what one checked launch was made of — per argument a *key* — and the `KernelInstance` and
`Bindings` it produced. A comparison (`comparer` writes one per launcher signature) says whether
new arguments are that launch again (`SAME`), the same but for a runtime scalar's value
(`SCALARS`: the kernel instance and the buffers hold, the scalars are packed afresh, and the new
`Bindings` share the buffers list and what both threads derived from it), or another launch
(`OTHER`: the full check runs). Handing the very same `Bindings` over again is what lets the
device thread take a loop as a run of identical launches (`runtime/runner.py`) and reuse what it
derived from them (`server.PreparedLaunch`).

No kernel is ever launched with arguments other than its own: a memo's buffers are only handed
over again for launches whose handles *are* its handles (the same objects), and everything else
a launch is made of is compared as below.

What "the same" means, exactly (anything else is `OTHER`, never a guess):

- a `BufferArg`: the same `Handle` object and length; a `TensorArg`: the same handle, shape and
  strides (its length is the handle's). Handles are compared by identity, never by id or value;
- a number or string: the same type and value, a float's sign included (`-0.0` after `0.0` is a
  new scalar: they compare equal, the kernel sees the sign); NaN is never the same as a new NaN;
- anything else (numpy scalars, `ScalarArg`, comptime tuples): the very same object. Launch
  arguments are values (`runtime/handle.py`: immutable), so the same object checks the same.

The trap — lifetime. A memo outlives the argument objects (they die after every launch in the
loop above), yet it must never keep a buffer alive: a handle dropped by the student releases its
memory at once, memo or not. So a memo holds handles weakly (`weakref.ref`) and its `Bindings`
weakly too (they hold the handles): the `Bindings` stay alive exactly as long as a queued launch
still holds them, which is when a loop is ahead of the device thread — when runs form. When they
are gone, the next equal launch gets new `Bindings` built from the memo's `buffers` (no
signature check, no scalar conversion) and the client's gates check them as new. (Numbers and
strings are held: they keep nothing alive.)

Cost matters: the comparison runs on every launch of such a loop (a dozen bytecodes per argument,
no allocation; see benchmarks/README.md).
"""

from __future__ import annotations

import weakref
from math import copysign
from typing import Any, Callable

from cubelab.runtime.handle import BufferArg, TensorArg

# What a launcher's positional argument (after client, count, dim) is, for `comparer`.
VALUE = 0  # a vector size or a comptime value: part of the kernel instance
BUFFER = 1  # a Slice / SliceMut: a BufferArg
TENSOR = 2  # a Tensor: a TensorArg
SCALAR = 3  # a runtime scalar: packed into the launch's info block

# the comparison's answers
OTHER, SCALARS, SAME = 0, 1, 2

# memos kept per bound launcher: a ping-pong of two buffer sets needs two
MEMO_SIZE = 4


class Memo:
    """One checked launch of a bound launcher (see the module docstring).

    What may change is one tuple, `state` = (ids, keys, scalars, bindings), replaced whole —
    never field by field — so a thread that reads it sees one launch's keys with that launch's
    `Bindings` even while another thread launches the same kernel (two threads, two streams).

    Two ways to recognise the launch. `ids`: the argument objects' ids, while every one of those
    objects lives — a loop that hands over the very same objects (built before the loop) is
    found by one tuple comparison. The buffer arguments are held weakly, and the first one to
    die sets `ids` to None (its id may be reused by a new object); the values are held, so
    theirs cannot be. `keys`: what the comparison checks, for a loop that builds new arguments
    every launch. `scalars` are the packed scalars of `bindings`, a `weakref.ref`."""

    __slots__ = ("client", "cube_dim", "kernel", "buffers", "state", "refs", "values",
                 "__weakref__")

    def __init__(self, client: Any, cube_dim: Any, kinds: tuple[int, ...],
                 args: tuple[Any, ...], kernel: Any, bindings: Any,
                 positions: tuple[int, ...]) -> None:
        self.client, self.cube_dim, self.kernel = client, cube_dim, kernel
        me = weakref.ref(self)

        def dead(_: Any) -> None:
            memo = me()
            if memo is not None:
                memo.state = (None, *memo.state[1:])

        self.refs = [weakref.ref(a, dead) for a, kind in zip(args, kinds)
                     if kind == BUFFER or kind == TENSOR]
        self.values = [a for a, kind in zip(args, kinds) if kind != BUFFER and kind != TENSOR]
        self.state: tuple[Any, ...] = (tuple(map(id, args)), keys_of(kinds, args),
                                       bindings.scalars, weakref.ref(bindings))
        # per binding, in order: (argument position, items, writable, name, shape, strides) —
        # what a new `Bindings` is built from once the last one is gone
        self.buffers = tuple((pos, b.items, b.writable, b.name, b.shape, b.strides)
                             for pos, b in zip(positions, bindings.buffers))


def keys_of(kinds: tuple[int, ...], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What the comparison checks new arguments against, flat: a value itself; a buffer's handle
    (weakly) and length; a tensor's handle (weakly), shape and strides."""
    keys: list[Any] = []
    for kind, a in zip(kinds, args):
        if kind == BUFFER:
            keys += (weakref.ref(a.handle), a.length)
        elif kind == TENSOR:
            keys += (weakref.ref(a.handle), a.shape, a.strides)
        else:
            keys.append(a)
    return tuple(keys)


def same_value(a: Any, k: Any) -> bool:
    """Whether value `a` checks as `k` did (not the same object: see the module docstring)."""
    t = type(a)
    if t is not type(k):
        return False
    if t is float:
        return a == k and (a != 0.0 or copysign(1.0, a) == copysign(1.0, k))
    return (t is int or t is str) and a == k


_COMPARES: dict[tuple[int, ...], Callable[[tuple[Any, ...], tuple[Any, ...]], int]] = {}


def comparer(kinds: tuple[int, ...]) -> Callable[[tuple[Any, ...], tuple[Any, ...]], int]:
    """`compare(args, keys)` for a launcher whose arguments are `kinds`: `SAME`, `SCALARS` or
    `OTHER` (see the module docstring). It runs on every launch of a loop, so it is written out
    for these kinds, one line per argument (a loop over the arguments costs twice as many
    bytecodes); the source is in `compare.source`."""
    found = _COMPARES.get(kinds)
    if found is not None:
        return found
    n = len(kinds)
    keys: list[str] = []
    checks: list[str] = []
    for i, kind in enumerate(kinds):
        a = f"a{i}"
        if kind == BUFFER:
            keys += [f"h{i}", f"n{i}"]
            checks.append(f"if type({a}) is not BufferArg or {a}.handle is not h{i}() "
                          f"or {a}.length != n{i}: return {OTHER}")
        elif kind == TENSOR:
            keys += [f"h{i}", f"s{i}", f"t{i}"]
            checks.append(f"if type({a}) is not TensorArg or {a}.handle is not h{i}() "
                          f"or {a}.shape != s{i} or {a}.strides != t{i}: return {OTHER}")
        else:
            keys.append(f"k{i}")
            miss = f"return {OTHER}" if kind != SCALAR else f"answer = {SCALARS}"
            checks.append(f"if {a} is not k{i} and not same_value({a}, k{i}): {miss}")
    lines = ["def compare(args, keys):", f"    if len(args) != {n}: return {OTHER}"]
    if n:
        lines.append(f"    {', '.join(f'a{i}' for i in range(n))}, = args")
        lines.append(f"    {', '.join(keys)}, = keys")
    lines.append(f"    answer = {SAME}")
    lines += [f"    {c}" for c in checks]
    lines.append("    return answer")
    source = "\n".join(lines) + "\n"
    namespace = {"BufferArg": BufferArg, "TensorArg": TensorArg, "same_value": same_value}
    exec(compile(source, f"<cubelab launch memo {kinds}>", "exec"), namespace)  # noqa: S102
    fn = namespace["compare"]
    fn.source = source  # type: ignore[attr-defined]
    _COMPARES[kinds] = fn  # type: ignore[assignment]
    return fn  # type: ignore[no-any-return]
