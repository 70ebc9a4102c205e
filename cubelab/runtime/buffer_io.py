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

The IR's answer is computed in one place, `cubelab/ir/analysis.py`, from each op's declared
memory effect; an op with no declared effect fails the compile loudly there rather than counting
as "not written" here.
"""

from __future__ import annotations

from cubelab.ir import analysis
from cubelab.ir.analysis import BufferIO
from cubelab.ir.core import KernelDefinition

__all__ = ["BufferIO", "buffer_io"]


def buffer_io(definition: KernelDefinition | None) -> tuple[BufferIO, ...] | None:
    """Per buffer (binding order), whether the IR reads and writes it; None when unknown."""
    if definition is None:
        return None
    return analysis.buffer_io(definition)
