"""Kernel mistakes at definition: expand a kernel for every instance its cell could launch, and
report the error only when every one of them fails.

    err = definition_error(kernel)      # a KernelSourceError (place, caret, hint), or None

`%%cube` calls this when its cell ends, so `/` on integers, `len(x)`, `print`, `np.sqrt`, a list
indexed by a runtime value or `f32 + u32` fail the cell that wrote them, with the caret under
the mistake — instead of an empty inspector and a `BufferFailure` when an output is read.

Why "every instance": an expansion error may depend on the generics. A kernel generic over
`Int` may do bit operations that an `f32` instance would refuse; `Vector[F, N] + Vector[F, 4]`
expands for N = 4 only. So the candidates are the types each generic's family admits (Float:
f32; Int: i32, u32; Numeric: all three), vector widths 1, 2 and 4, both values of a
`Comptime[bool]`, and the default of any other Comptime argument; the kernel is refused only
when all of them fail — then no launch can succeed, and saying so at definition is exact. A
kernel whose candidates cannot be enumerated (a `Comptime[int]` without a default, or more than
`MAX_CANDIDATES` combinations) is not judged here; the inspector still shows its preview's
error, and a launch still reports it as seed 001 says (a failure on the buffers it would write).

Kernels defined in ordinary cells are not expanded at definition: a compile failure that
surfaces when an output is read is what seed 001 teaches (chapter 7 launches such a kernel on
purpose), and a module of kernels must import without compiling them.
"""

from __future__ import annotations

import inspect as _pyinspect
import itertools
from typing import Any, Iterator

from cubelab.errors import CubeError
from cubelab.frontend import aggregate_launch as _launch_args
from cubelab.frontend.kernel import CubeFunction, KernelInstance
from cubelab.frontend.types import GenericScalar, GenericSize, f32, i32, u32
from cubelab.inspect.instances import instance

__all__ = ["definition_error", "MAX_CANDIDATES"]

MAX_CANDIDATES = 16  # expansions tried per kernel (each costs about what a compile's first step does)

_FAMILY_TYPES = {"Float": (f32,), "Int": (i32, u32), "Numeric": (f32, i32, u32)}
_WIDTHS = (1, 2, 4)


def definition_error(kernel: CubeFunction) -> CubeError | None:
    """The error that expanding `kernel` raises for every instance its cell could launch (the
    first candidate's, as it reads), or None when one expands, or when the candidates cannot
    be enumerated."""
    if not kernel.is_kernel:
        return None
    candidates = _candidates(kernel)
    if candidates is None:
        return None
    first: CubeError | None = None
    for k in candidates:
        try:
            k.define()
        except CubeError as exc:
            first = first or exc
            continue
        except Exception:  # noqa: BLE001 - not a kernel mistake cubelab can name: no verdict
            return None
        return None
    return first


def _candidates(kernel: CubeFunction) -> list[KernelInstance] | None:
    types = [_FAMILY_TYPES.get(g.family, (f32,)) for g in kernel.generics
             if isinstance(g, GenericScalar)]
    sizes = [_WIDTHS for g in kernel.generics if isinstance(g, GenericSize)]
    comptime = _comptime_choices(kernel)
    if comptime is None:
        return None
    combos = itertools.product(itertools.product(*types), itertools.product(*sizes),
                               itertools.product(*comptime))
    out = list(itertools.islice(_instances(kernel, combos), MAX_CANDIDATES + 1))
    return None if len(out) > MAX_CANDIDATES else out


def _instances(kernel: CubeFunction, combos: Any) -> Iterator[KernelInstance]:
    for ts, ss, cs in combos:
        yield instance(kernel, *ts, sizes=ss, comptime=cs)


def _comptime_choices(kernel: CubeFunction) -> list[tuple[Any, ...]] | None:
    """Per Comptime / @cube_type argument, in signature order, the values to try."""
    sig = _pyinspect.signature(kernel.fn)
    out: list[tuple[Any, ...]] = []
    for p in kernel.params:
        if p.kind == "aggregate":
            out.append((_launch_args.default_key(p.spec, kernel.__name__, p.name),))
        elif p.kind == "comptime":
            default = sig.parameters[p.name].default
            if getattr(p.spec, "inner", None) is bool:
                out.append((False, True))
            elif default is not _pyinspect.Parameter.empty:
                out.append((default,))
            else:
                return None  # any int could be launched: no verdict from one of them
    return out
