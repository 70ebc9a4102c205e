"""The one extension point of the CPU runtime: a table from IR op name to its step builder.

A *builder* runs once, when a plan is built: it reads the op (operand ids, attributes, types) and
the plan's analyses, and returns a *step* — a closure `step(ctx, mask)` that runs the op for
every active lane of a chunk. Register one with

    @builder("arith.add", "arith.sub")
    def _b_bin(plan: Plan, op: Op, depth: int) -> Step: ...

in the module of the op's dialect (`steps/arith.py`, `steps/memory.py`, ...). The trap: a step
must do no per-op lookups it could have done in its builder — it runs once per chunk, per op, per
loop iteration; resolve names to ids and functions outside `step`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from cubelab.ir.core import Op, Value
from cubelab.ir.types import Atomic, Ty

if TYPE_CHECKING:
    from cubelab.runtime.cpu.lanes import Ctx
    from cubelab.runtime.cpu.plan import Plan

Step = Callable[["Ctx", Any], None]
Builder = Callable[["Plan", Op, int], Step]
BUILDERS: dict[str, Builder] = {}


def builder(*names: str) -> Callable[[Builder], Builder]:
    """Register the decorated function as the step builder of the ops `names`."""
    def reg(fn: Builder) -> Builder:
        for n in names:
            BUILDERS[n] = fn
        return fn

    return reg


def ty_of(v: Value) -> Ty:
    """The value type of `v` (an atomic's item type for atomics)."""
    t = v.type
    if isinstance(t, Atomic):
        return t.value_ty
    assert isinstance(t, Ty), t
    return t
