"""What a traced CPU launch records: for each chosen unit, every op it executed, in order.

Tracing is opt-in: the server builds a second, instrumented plan only when a trace is asked for
(`cubelab.inspect.trace`), so an ordinary launch runs the plain plan and pays nothing. A step is
recorded for a unit only if the unit was *active* when the op ran (a unit that skipped an `if`
has no steps for its body; a loop body appears once per iteration the unit ran).

`TraceStep` is plain data (numbers, strings, lists) so views, widgets and JSON can use it as is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cubelab.ir.core import KernelDefinition, Op
from cubelab.ir.printer import format_op_line
from cubelab.runtime.cpu.memory import LocalSlot, Mem, Ptr


@dataclass(frozen=True)
class TraceStep:
    """One op executed by one unit.

    `value` is the op's result for this unit (a number, a bool, a list for a vector, a string
    like "y[5]" for a pointer, None for ops without a result); for a store it is the value
    stored; for `scf.if` the condition; for `scf.for` the loop index of the iteration starting.
    `operands` pairs each operand's name with its value for this unit.
    """

    index: int
    unit: int  # the unit's linear position in the dispatch (ABSOLUTE_POS)
    op: str  # "arith.add"
    ir: str  # the op's line of IR text
    result: str | None  # "v12"
    value: Any
    operands: tuple[tuple[str, Any], ...]
    line: int | None  # kernel source line (1-based) or None for prologue ops
    source: str  # that line's text, stripped
    depth: int  # nesting level (0 = kernel body)
    note: str = ""  # e.g. "iteration 3", "store y[5]", "out of bounds"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _py(row: Any) -> Any:
    if isinstance(row, np.ndarray):
        return row.tolist()
    if isinstance(row, np.generic):
        return row.item()
    return row


def value_at(val: Any, li: int) -> Any:
    """`val` (an interpreter value of all lanes of a chunk) as seen by local lane `li`."""
    if isinstance(val, np.ndarray):
        if val.ndim == 0:
            return _py(val)
        return _py(val[0] if val.shape[0] == 1 else val[li])
    if isinstance(val, Ptr):
        if val.start is not None:
            idx = val.start + li
        else:
            o = val.orig
            idx = int(o[0] if o.shape[0] == 1 else o[li])
        return f"{val.mem.name}[{idx}]"
    if isinstance(val, LocalSlot):
        return f"&{val.name}"
    if isinstance(val, Mem):
        return val.name
    return val


@dataclass
class Tracer:
    """Collects steps for the chosen units while a traced plan runs."""

    units: tuple[int, ...]
    limit: int = 100_000
    steps: dict[int, list[TraceStep]] = field(default_factory=dict)
    truncated: bool = False
    _text: dict[int, str] = field(default_factory=dict)
    _lines: list[str] = field(default_factory=list)
    _first: int = 1

    def bind(self, definition: KernelDefinition) -> None:
        self._lines = definition.source_lines
        self._first = definition.first_line
        for u in self.units:
            self.steps.setdefault(u, [])

    def _source(self, op: Op) -> tuple[int | None, str]:
        if op.loc is None:
            return None, ""
        i = op.loc.line - self._first
        text = self._lines[i].strip() if 0 <= i < len(self._lines) else ""
        return op.loc.line, text

    def record(self, op: Op, depth: int, ctx: Any, mask: Any, value: Any = None,
               has_value: bool = False, note: str = "") -> None:
        env = ctx.env
        for u in self.units:
            li = ctx.find_lane(u)
            if li is None:
                continue
            if mask is not None and not mask[li]:
                continue
            out = self.steps[u]
            if len(out) >= self.limit:
                self.truncated = True
                continue
            text = self._text.get(id(op))
            if text is None:
                text = format_op_line(op)
                self._text[id(op)] = text
            if has_value:
                v = value_at(value, li)
            elif op.results:
                v = value_at(env[op.results[0].id], li)
            else:
                v = None
            operands = tuple((f"v{o.id}", value_at(env[o.id], li)) for o in op.operands)
            line, source = self._source(op)
            nt = note
            if op.name in ("memory.store", "atomic.store") and op.operands:
                nt = nt or f"store {value_at(env[op.operands[0].id], li)}"
            out.append(TraceStep(len(out), u, op.name, text,
                                 op.results[0].name if op.results else None, v, operands,
                                 line, source, depth, nt))
