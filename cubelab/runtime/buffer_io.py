"""Which buffers a compiled kernel really reads and writes: the first link of the fallback chain.

The write set decides which buffers a launch claims (and which carry its failure); the read set
decides which failures make it skip. Each is answered by a chain, most precise first:

1. what the compiled IR does (`buffer_io(definition)`, below): a buffer is *written* when a
   pointer derived from it reaches a `memory.store` or any read-modify-write op (atomics), and
   *read* when one reaches a `memory.load` or a read-modify-write op;
2. the IO the signature declares (`Slice` read-only; `SliceMut` read-write);
3. every buffer.

The chain over-names on purpose. Failing to name a buffer the kernel writes would hand the
caller last run's bytes as if they were fresh — silent and wrong; naming a buffer it only reads
makes a legal read fail loudly — noise. Where the answer is unknown, pick the error you can
afford. The read set walks the same chain, but a *pure output* (stored, never loaded) is not a
read: that is why relaunching into a tainted output is how it gets repaired, while a kernel that
reads-modifies-writes a tainted buffer (saxpy's `y`) is still skipped.

An op this analysis does not know that touches a buffer pointer counts as read *and* written
(the conservative answer), so new ops added to the language stay safe before anyone updates
this file.
"""

from __future__ import annotations

from typing import NamedTuple

from cubelab.ir.core import KernelDefinition
from cubelab.ir.types import Pointer


class BufferIO(NamedTuple):
    readable: bool
    writable: bool


# metadata only: neither reads nor writes the items
_NEUTRAL = {"buffer.len", "tensor.rank", "tensor.shape", "tensor.stride", "tensor.len"}
_LOADS = {"memory.load", "atomic.load"}
_STORES = {"memory.store", "atomic.store"}


def buffer_io(definition: KernelDefinition | None) -> tuple[BufferIO, ...] | None:
    """Per buffer (binding order), whether the IR reads and writes it; None when unknown."""
    if definition is None:
        return None
    origin: dict[int, int] = {}  # value id -> buffer index it points into
    for b in definition.buffers:
        origin[b.value.id] = b.index
    reads = [False] * len(definition.buffers)
    writes = [False] * len(definition.buffers)
    for op in definition.walk():
        touched = [origin[v.id] for v in op.operands if v.id in origin]
        if not touched:
            continue
        name = op.name
        if name == "memory.index" or (name not in _NEUTRAL and op.results and all(
                isinstance(r.type, Pointer) for r in op.results) and name not in _LOADS):
            # a derived pointer: whatever happens to it happens to the buffer
            for r in op.results:
                origin[r.id] = touched[0]
            continue
        if name in _NEUTRAL:
            continue
        if name in _LOADS:
            for i in touched:
                reads[i] = True
        elif name in _STORES:
            # operands: [pointer, value]; a buffer pointer stored *as a value* cannot happen
            ptr = op.operands[0]
            if ptr.id in origin:
                writes[origin[ptr.id]] = True
        else:  # atomics and anything unknown: read-modify-write
            for i in touched:
                reads[i] = True
                writes[i] = True
    return tuple(BufferIO(r, w) for r, w in zip(reads, writes))
