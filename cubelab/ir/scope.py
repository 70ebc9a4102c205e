"""The `Scope`: where expansion registers ops.

Like CubeCL's `Scope`, it holds the context (a value counter and the kernel's parameters), the
insertion point (a stack of blocks: `if` and `for` push their child blocks) and the type table
that maps a kernel's generic names (`F`, `N`) to the concrete element type and vector width of
the KernelId being compiled — so one `expand` function serves every element type.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from cubelab.ir.core import Block, Loc, Op, Value
from cubelab.ir.types import Pointer, Type


class Scope:
    def __init__(self, types: dict[str, Any] | None = None, file: str = "<kernel>",
                 kernel_name: str = "<kernel>") -> None:
        self.kernel_name = kernel_name
        self._next_id = 0
        self.root = Block()
        self._blocks: list[Block] = [self.root]
        self.types: dict[str, Any] = dict(types or {})
        self.file = file
        self.loc: Loc | None = None
        self._locs: dict[tuple[str, int, int], Loc] = {}
        # Values computed once per kernel at the top of the body (derived builtins, ...).
        self._prologue_end = 0
        self.cache: dict[Any, Value] = {}
        # The compiling device's properties (`device_properties()` in a kernel); set by the
        # frontend's define, None until then
        self.device_properties: Any = None
        # Helper functions being expanded right now (recursion is an error, not a hang).
        self.call_stack: list[str] = []
        # The frontend's control-flow frames (frontend/flow.py): exits, flags, loops.
        self.flow: list[Any] = []
        # Adapter features the kernel needs ("subgroup" for plane ops); ends up in the
        # KernelDefinition's `required_features`.
        self.features: set[str] = set()
        # `t[i, j, ...]` on a tensor argument: its value id -> {number of indices: where first};
        # ends up in the KernelDefinition's `tensor_indexing` (checked against each launch's
        # TensorArg rank)
        self.tensor_indexing: dict[int, dict[int, Loc | None]] = {}

    # -- values and ops ----------------------------------------------------------------------
    def new_value(self, ty: Type, hint: str = "") -> Value:
        v = Value(self._next_id, ty, hint)
        self._next_id += 1
        return v

    def at(self, line: int, col: int) -> None:
        # Called for nearly every operator of a kernel: reuse one Loc per position (a frozen
        # dataclass costs ~1 µs to build, a tenth of an op's whole expansion).
        key = (self.file, line, col)
        loc = self._locs.get(key)
        if loc is None:
            loc = self._locs[key] = Loc(self.file, line, col)
        self.loc = loc

    @property
    def block(self) -> Block:
        return self._blocks[-1]

    def register(self, op_name: str, operands: list[Value], result_type: Type | None = None,
                 **attrs: Any) -> Op:
        results = [self.new_value(result_type)] if result_type is not None else []
        op = Op(op_name, list(operands), results, attrs, [], self.loc)
        self.block.ops.append(op)
        return op

    def emit(self, op_name: str, operands: list[Value], result_type: Type, **attrs: Any) -> Value:
        return self.register(op_name, operands, result_type, **attrs).result

    @property
    def prologue_end(self) -> int:
        """Where the prologue ends in the root block: ops before this index are hoisted ones."""
        return self._prologue_end

    def hoist(self, op: Op) -> None:
        """Append `op` to the prologue (the top of the body, before any op of the kernel's own),
        so every branch and loop can use what it declares or computes."""
        self.root.ops.insert(self._prologue_end, op)
        self._prologue_end += 1

    def emit_prologue(self, key: Any, op_name: str, operands: list[Value], result_type: Type,
                      **attrs: Any) -> Value:
        """Emit (once per kernel) an op at the top of the body; later calls reuse its value."""
        if key in self.cache:
            return self.cache[key]
        op = Op(op_name, list(operands), [self.new_value(result_type)], attrs, [], None)
        self.hoist(op)
        self.cache[key] = op.result
        return op.result

    def declare_var(self, ty: Type, hint: str = "") -> Value:
        """A mutable local, declared at the top of the kernel so every branch can reach it."""
        op = Op("var.declare", [], [self.new_value(Pointer(ty, "function"), hint)], {}, [],
                self.loc)
        self.hoist(op)
        return op.result

    @contextmanager
    def child(self, block: Block) -> Iterator[Block]:
        self._blocks.append(block)
        try:
            yield block
        finally:
            self._blocks.pop()

    # -- type table ---------------------------------------------------------------------------
    def register_type(self, name: str, value: Any) -> None:
        self.types[name] = value

    def resolve(self, name: str) -> Any:
        try:
            return self.types[name]
        except KeyError:
            raise KeyError(f"generic {name!r} has no value in this scope's type table") from None
