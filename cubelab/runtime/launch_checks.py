"""What a launch's bindings must satisfy for its compiled kernel, checked once per `Bindings`.

Contract: `launch_refusal(definition, bindings, properties)` returns the error a launch of these
bindings must fail with — or None — and the server (`runtime/server.py`) keeps the answer on the
launch's `PreparedLaunch`, so a loop of identical launches checks once, and returns it from the
ExecuteScope's body: the launch fails on its written buffers like any device-thread refusal (seed
001), on every runtime the same way.

Why here and not on the calling thread: both checks need the compiled kernel (what it indexes,
the size of its items), which only the device thread holds on a cache hit. Why at all: each was a
place where the runtimes disagreed or a kernel read the wrong item silently —

- a buffer argument binding more bytes than the device binds per buffer: wgpu refused it (lavapipe
  binds at most 128 MiB), the CPU runtime ran it;
- `t[i, j]` on a rank-1 tensor read `t[i]` (the stride of a missing axis reads as 0), `t[i, 1, 0]`
  on a rank-2 tensor read `t[i, 1]`, on both runtimes, without a word.
"""

from __future__ import annotations

from typing import Any

from cubelab.errors import KernelSourceError, ResourceError
from cubelab.ir.core import KernelDefinition
from cubelab.runtime.launch_args import Bindings


def launch_refusal(definition: KernelDefinition, bindings: Bindings,
                   properties: Any) -> Exception | None:
    limit = getattr(properties, "max_binding_size", None)
    params = definition.buffers
    for param, b in zip(params, bindings.buffers):
        if b.shape is not None and param.value.id in definition.tensor_indexing:
            rank = len(b.shape)
            for n, loc in definition.tensor_indexing[param.value.id].items():
                if n >= 2 and n != rank:
                    return _rank_refusal(definition, param.name, n, rank, loc)
        if limit is not None:
            size = b.handle.size if b.shape is not None else b.items * param.item.size
            if size > limit:
                return ResourceError(
                    f"launch of `{definition.name}`: argument `{param.name}` binds {size} bytes;"
                    f" this device binds at most {limit} bytes per buffer argument "
                    f"(max_binding_size, {limit >> 20} MiB)\n  hint: give the kernel a view "
                    f"of at most {limit // param.item.size} items "
                    "(BufferArg.from_raw_parts(handle, items)) and launch it once per chunk, "
                    "or split the data over several buffers")
    return None


def _rank_refusal(definition: KernelDefinition, name: str, n: int, rank: int,
                  loc: Any) -> KernelSourceError:
    what = f"`{name}[{', '.join('ijkl'[k] if k < 4 else '_' for k in range(n))}]` indexes the " \
           f"tensor `{name}` with {n} indices, but this launch's TensorArg has rank {rank}: " \
           "the flat index would silently read another item"
    hint = (f"pass a TensorArg of rank {n} (a shape and strides of {n} entries), or index "
            f"`{name}` with {rank} indices" + (" or one linear index" if rank != 1 else
                                               f" (a linear index: `{name}[i]`)"))
    if loc is None:
        return KernelSourceError(definition.name, definition.source_file, 0, 0, what, hint)
    i = loc.line - definition.first_line
    text = definition.source_lines[i] if 0 <= i < len(definition.source_lines) else None
    return KernelSourceError(definition.name, loc.file, loc.line, loc.col, what, hint, text)
