"""cubelab's SSA IR: types, values, ops, blocks, the `Scope`, the printer and the passes.

This layer imports nothing else from cubelab.
"""

from cubelab.ir.core import (
    OPS,
    Block,
    BufferParam,
    KernelDefinition,
    Loc,
    Op,
    ScalarParam,
    Value,
)
from cubelab.ir.passes import CheckedIo, PassManager, PassRecord
from cubelab.ir.printer import format_op_line, print_block, print_kernel
from cubelab.ir.scope import Scope
from cubelab.ir.types import BOOL, F32, I32, U32, Array, Elem, Pointer, RuntimeArray, Ty, Type

__all__ = [
    "OPS", "Block", "BufferParam", "KernelDefinition", "Loc", "Op", "ScalarParam", "Value",
    "CheckedIo", "PassManager", "PassRecord", "format_op_line", "print_block", "print_kernel",
    "Scope", "BOOL", "F32", "I32", "U32", "Array", "Elem", "Pointer", "RuntimeArray", "Ty",
    "Type",
]
