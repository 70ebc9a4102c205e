"""What a kernel's IR does to its buffers, and the walks and value-id facts every consumer shares.

Contract:
- `EFFECTS` declares, for every op of `ir.core.OPS`, what it does with a pointer operand into a
  global buffer: derive a pointer from it (`memory.index`), read through it, write through it,
  both (atomics), only read its metadata (lengths, shapes), or nothing at all (the op takes plain
  values). `effect_of(op)` answers from that table and raises `UnknownOpError` for an op that is
  not in it — an op added to the language without a declared effect fails loudly the first time
  a kernel uses it, instead of silently counting as "not written"; `tests/test_ir_analysis.py`
  fails even before that (it checks `EFFECTS` covers `OPS`).
- `buffer_io(kernel)` is the one answer to "which buffers does this compiled kernel read and
  which does it write", per binding: the runtime's write set (seed 001's failure model:
  `runtime/buffer_io.py`), MSL's `const` pointers and the CPU runtime's copy-or-view choices all
  read it.
- `PURE` / `is_pure(op)`: which ops only compute values (may be speculated or dropped) — the
  frontend's short-circuit rewrite and the CPU runtime's liveness both ask here;
- a plug-in op (`ir/plugins.py`) is written into `EFFECTS` and `PURE` by `add_op`, as an op of
  the package is written here by hand;
- `all_ops(kernel)` is every op in program order (nested ones too); `max_value_id(kernel)` is the
  largest SSA id in use, so passes and targets that mint names continue after it.

Why one home: the write set decides which buffers a launch claims and which carry its failure;
three drifted copies of it (a fixed op list here, "anything else is a write" there) meant a new op
could be missed by one of them. The trap that remains is semantic, not bookkeeping: a pointer
op's effect must be declared honestly here when it is added.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from cubelab.ir.core import OPS, KernelDefinition, Op, Value
from cubelab.ir.types import U32


class Effect(Enum):
    """What an op does with a global-buffer pointer among its operands."""

    NONE = "none"  # takes values only (a buffer pointer reaching it is treated as READ_WRITE)
    META = "meta"  # reads the buffer's metadata (length, rank, shape, stride), never its items
    DERIVE = "derive"  # its result points into the same buffer as its operand 0
    READ = "read"  # reads the item behind operand 0
    WRITE = "write"  # writes the item behind operand 0 (operands: [pointer, value])
    READ_WRITE = "read_write"  # reads and writes the item behind operand 0 (atomics)


EFFECTS: dict[str, Effect] = {
    **{name: Effect.NONE for name in OPS if name.split(".")[0] in (
        "arith", "math", "vector", "builtin", "info", "sync", "plane", "scf", "debug")},
    "buffer.len": Effect.META,
    "tensor.rank": Effect.META,
    "tensor.len": Effect.META,
    "tensor.shape": Effect.META,
    "tensor.stride": Effect.META,
    "memory.index": Effect.DERIVE,
    "memory.load": Effect.READ,
    "memory.store": Effect.WRITE,
    "var.declare": Effect.NONE,  # a fresh local: no buffer involved
    "shared.declare": Effect.NONE,  # a fresh cube-shared array
    "atomic.load": Effect.READ,
    "atomic.store": Effect.WRITE,
    "atomic.rmw": Effect.READ_WRITE,
    "atomic.cas": Effect.READ_WRITE,
}


# Ops that compute their results from their operands alone: no memory read or written, no
# barrier, no collective (plane) op, no region, no print. Such an op may be evaluated where the
# program would not (the frontend evaluates the right side of `a and b` when it is made only of
# these) and dropped where nothing uses its result (the CPU runtime's liveness). `memory.index`
# is one: it computes an address, and only a load or store through it touches memory — so
# `i < n and x[i] > 0` is still never speculated (its load is not pure).
# A set, not a frozenset: a plug-in op declared pure joins it (`ir/plugins.py` add_op).
PURE: set[str] = {
    name for name in OPS if name.split(".")[0] in ("arith", "math", "vector", "builtin", "info",
                                                   "tensor")} | {"buffer.len", "memory.index"}


def is_pure(op: Op) -> bool:
    """Whether `op` only computes its results (see `PURE`): the one purity rule."""
    return op.name in PURE


class UnknownOpError(Exception):
    """An op whose memory effect is not declared in `ir.analysis.EFFECTS`."""


def effect_of(op: Op) -> Effect:
    try:
        return EFFECTS[op.name]
    except KeyError:
        raise UnknownOpError(
            f"op `{op.name}` has no declared memory effect: add it to EFFECTS in "
            "cubelab/ir/analysis.py (and its meaning to OPS in cubelab/ir/core.py)") from None


class BufferIO(NamedTuple):
    """What the IR does to one buffer's items."""

    readable: bool
    writable: bool


def all_ops(kernel: KernelDefinition) -> list[Op]:
    """Every op, nested ones included, in program order (an op before the ops of its regions,
    region 0 before region 1)."""
    out: list[Op] = []
    stack = [iter(kernel.body.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        out.append(op)
        for region in reversed(op.regions):
            stack.append(iter(region.ops))
    return out


def max_value_id(kernel: KernelDefinition, ops: list[Op] | None = None) -> int:
    """The largest SSA value id the kernel uses (buffer arguments, op results, block arguments);
    -1 for a kernel with none. Pass `ops` when you already hold `all_ops(kernel)`."""
    top = -1
    for b in kernel.buffers:
        top = max(top, b.value.id)
    for op in all_ops(kernel) if ops is None else ops:
        for v in op.results:
            top = max(top, v.id)
        for r in op.regions:
            for a in r.args:
                top = max(top, a.id)
    return top


def buffer_io(kernel: KernelDefinition, ops: list[Op] | None = None) -> tuple[BufferIO, ...]:
    """Per buffer (binding order), whether the IR reads and whether it writes its items.

    A pointer derived from a buffer (by a DERIVE op, transitively) stands for the buffer. A
    buffer pointer reaching an op declared NONE cannot happen in IR the frontend builds; should
    it, the answer is the conservative one (read and written)."""
    origin: dict[int, int] = {b.value.id: b.index for b in kernel.buffers}
    reads = [False] * len(kernel.buffers)
    writes = [False] * len(kernel.buffers)
    for op in all_ops(kernel) if ops is None else ops:
        effect = effect_of(op)
        if effect is Effect.META:
            continue
        touched = [origin[v.id] for v in op.operands if v.id in origin]
        if not touched:
            continue
        if effect is Effect.DERIVE:
            for r in op.results:
                origin[r.id] = touched[0]
        elif effect is Effect.READ or effect is Effect.WRITE:
            ptr = op.operands[0]
            if ptr.id in origin:
                (reads if effect is Effect.READ else writes)[origin[ptr.id]] = True
        else:  # READ_WRITE, or a buffer pointer where only values belong
            for i in touched:
                reads[i] = True
                writes[i] = True
    return tuple(BufferIO(r, w) for r, w in zip(reads, writes))


def written_buffers(kernel: KernelDefinition, ops: list[Op] | None = None) -> set[int]:
    """Binding indices of the buffers the IR writes (stores or atomic updates)."""
    return {i for i, io in enumerate(buffer_io(kernel, ops)) if io.writable}


class BoundsTest(NamedTuple):
    """An index a target must test before it touches memory through the pointer (OPS'
    `memory.index` rule: out of range, a load gives zero and a store or atomic is dropped).
    `length` is a local or shared array's item count, or None for a global buffer, whose
    length is its `buffer.len` (the info block's word for the binding)."""

    index: Value
    length: int | None


def bounds_tests(kernel: KernelDefinition, ops: list[Op] | None = None) -> dict[int, BoundsTest]:
    """For every `memory.index` whose index may be out of range, keyed by its result id, the
    test a target spells before each access through that pointer.

    Contract: the answer is the one home of "which accesses need a bounds test" for every
    target that cannot lean on its driver (WGSL: lavapipe computes a byte offset in 32 bits,
    so an index >= 2^30 wraps back into the buffer, and naga clamps fixed-size arrays; CUDA C++
    has no robust access at all). The CPU runtime tests every index itself. No test is needed
    where the index is provably in range: CheckedIo clamped it (`clamped`), it is a constant
    below a fixed array's length, or the access sits inside `if i < x.len():` (or `i < n` for
    an array of n items) on the same index value and array — the guard a kernel is taught to
    write, so the common kernel pays nothing.
    """
    defs: dict[int, Op] = {}
    for op in all_ops(kernel) if ops is None else ops:
        for r in op.results:
            defs[r.id] = op
    out: dict[int, BoundsTest] = {}
    # A fact `(bound, index id)`: the u32 value `index` is below `bound` here — a buffer's
    # length (bound = the buffer value's id, as a str) or an int.
    Fact = tuple[int | str, int]

    def facts_of(cond: Value, facts: set[Fact]) -> None:
        op = defs.get(cond.id)
        if op is None:
            return
        if op.name == "arith.and":
            for c in op.operands:
                facts_of(c, facts)
            return
        if op.name != "arith.cmp" or op.attrs.get("pred") not in ("lt", "gt"):
            return
        small, big = op.operands if op.attrs["pred"] == "lt" else op.operands[::-1]
        if small.type != U32:
            return
        bound = defs.get(big.id)
        if bound is not None and bound.name == "buffer.len":
            facts.add((str(bound.operands[0].id), small.id))
        elif bound is not None and bound.name == "arith.constant":
            facts.add((int(bound.attrs["value"]), small.id))

    def in_range(base: Value, index: Value, facts: frozenset[Fact]) -> bool:
        length = getattr(getattr(base.type, "pointee", None), "length", None)
        if length is None:  # a global buffer: in range under `if i < x.len():`
            return (str(base.id), index.id) in facts
        const = defs.get(index.id)
        if const is not None and const.name == "arith.constant":
            return 0 <= int(const.attrs["value"]) < length
        return any(isinstance(b, int) and b <= length and i == index.id for b, i in facts)

    def walk(block_ops: list[Op], facts: frozenset[Fact]) -> None:
        for op in block_ops:
            if op.name == "memory.index" and not op.attrs.get("clamped"):
                base, index = op.operands
                if not in_range(base, index, facts):
                    length = getattr(getattr(base.type, "pointee", None), "length", None)
                    out[op.result.id] = BoundsTest(index, length)
            if op.name == "scf.if":
                inner: set[Fact] = set()
                facts_of(op.operands[0], inner)
                walk(op.regions[0].ops, facts | inner)
                for region in op.regions[1:]:
                    walk(region.ops, facts)
            else:
                for region in op.regions:
                    walk(region.ops, facts)

    walk(kernel.body.ops, frozenset())
    return out
