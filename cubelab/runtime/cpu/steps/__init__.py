"""The CPU semantics of every IR op: one module of step builders per IR dialect.

    arith.py    arith.*, math.*, vector.*          info.py     builtin.*, info.*, buffer.*, tensor.*
    memory.py   var/shared.declare, memory.*       sync.py     sync.*
    atomic.py   atomic.*                           plane.py    plane.*
    control.py  scf.*                              debug.py    debug.*

Adding an op's CPU semantics is adding one `@builder("dialect.op")` function to its dialect's
module (`steps/registry.py` says what a builder and a step are); `tests/test_cpu_ops.py` fails
until every op of `ir.core.OPS` has one. Importing this package registers them all.
"""

from cubelab.runtime.cpu.steps import arith, atomic, control, debug, info, memory, plane, sync
from cubelab.runtime.cpu.steps.registry import BUILDERS, Builder, Step, builder

__all__ = ["BUILDERS", "Builder", "Step", "arith", "atomic", "builder", "control", "debug", "info",
           "memory", "plane", "sync"]
