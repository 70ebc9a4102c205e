"""SSA values, operations, blocks and the kernel definition.

An `Op` has a name (`arith.add`, `memory.index`, `scf.if`, ...), operand values, result values,
attributes and, for structured control flow, regions (each a `Block`). Every op remembers the
Python source location it was registered from, so errors, generated-source line maps and the
CPU runtime's step-through can all point back at the kernel line a student wrote.

The op vocabulary is listed in `OPS` below; targets (`compiler/wgsl.py`, the CPU runtime, ...)
implement it op by op, and a pass rewrites blocks in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from cubelab.ir.types import Type

# name -> one line of meaning; the printer and the docs use it, targets must cover it.
OPS: dict[str, str] = {
    "arith.constant": "a literal of the result type (attr value)",
    "arith.add": "lhs + rhs",
    "arith.sub": "lhs - rhs",
    "arith.mul": "lhs * rhs",
    "arith.div": "lhs / rhs (floats), truncating for integers",
    "arith.rem": "remainder, sign of the dividend",
    "arith.min": "min(lhs, rhs)",
    "arith.max": "max(lhs, rhs)",
    "arith.cmp": "comparison (attr pred: lt le gt ge eq ne), bool result",
    "arith.and": "logical and of bools",
    "arith.or": "logical or of bools",
    "arith.not": "logical not of a bool",
    "arith.neg": "-x",
    "arith.cast": "numeric conversion to the result type",
    "math.unary": "elementwise math function (attr fn: abs sqrt exp log ...)",
    "vector.splat": "a vector whose every component is the scalar operand",
    "builtin.read": "a primitive builtin (attr name: workgroup_id_x ... local_invocation_index)",
    "info.scalar": "a scalar argument read from the info block (attr elem, index)",
    "buffer.len": "the length in items of a global buffer argument (static metadata)",
    "memory.index": "a pointer to item `index` of the array behind `base` (attr checked)",
    "memory.load": "the value behind a pointer",
    "memory.store": "store a value behind a pointer",
    "var.declare": "a mutable local; result is a function-space pointer",
    "scf.if": "if cond then region 0 else region 1",
    "scf.for": "for i in range(start, end, step): region 0 (block argument i)",
}


@dataclass(eq=False, slots=True)
class Value:
    """An SSA value: defined once, by one op or as a block/kernel argument."""

    id: int
    type: Type
    hint: str = ""

    @property
    def name(self) -> str:
        return f"v{self.id}"

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclass(frozen=True, slots=True)
class Loc:
    """Where in the kernel's Python source an op came from (1-based line, 0-based column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


@dataclass(eq=False, slots=True)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list["Block"] = field(default_factory=list)
    loc: Loc | None = None

    @property
    def result(self) -> Value:
        (r,) = self.results
        return r

    def walk(self) -> Iterator["Op"]:
        yield self
        for region in self.regions:
            yield from region.walk()


@dataclass(eq=False, slots=True)
class Block:
    ops: list[Op] = field(default_factory=list)
    args: list[Value] = field(default_factory=list)

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield from op.walk()


@dataclass(slots=True)
class BufferParam:
    """A global buffer argument: binding `index`, items of type `item`, declared IO."""

    name: str
    index: int
    item: Type
    writable: bool
    value: Value


@dataclass(slots=True)
class ScalarParam:
    """A scalar argument; lives at `info.scalars_<elem>[index]`."""

    name: str
    elem: str
    index: int


@dataclass(slots=True)
class KernelDefinition:
    """What `Kernel.define()` returns: the IR of one KernelId, ready for passes and codegen."""

    name: str  # the Python function's name ("saxpy")
    entry: str  # the target entry point ("saxpy_f_f32_n_4_daf77f4d")
    cube_dim: tuple[int, int, int]
    buffers: list[BufferParam]
    scalars: list[ScalarParam]
    body: Block
    source_file: str = "<unknown>"
    source_lines: list[str] = field(default_factory=list)
    first_line: int = 1

    def scalar_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.scalars:
            counts[s.elem] = counts.get(s.elem, 0) + 1
        return counts

    def walk(self) -> Iterator[Op]:
        return self.body.walk()
