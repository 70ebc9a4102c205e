"""What every target generator produces, and the protocol it implements.

A target (`wgsl.py`, `msl.py`, ...) turns a `KernelDefinition` that has been through the passes
into source text. Besides the text it returns a line map — generated line → the Python source
location of the op that produced it — which error messages and the inspector's line
correspondence both read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from cubelab.compiler.info import InfoLayout
from cubelab.ir.core import OPS, KernelDefinition, Loc, Op


@dataclass
class CompiledSource:
    target: str
    entry: str
    source: str
    info: InfoLayout
    # 1-based generated line -> kernel source location (only lines that came from an op)
    line_map: dict[int, Loc] = field(default_factory=dict)

    def loc_of_line(self, line: int) -> Loc | None:
        """The nearest mapped location at or above `line`."""
        for ln in range(line, 0, -1):
            if ln in self.line_map:
                return self.line_map[ln]
        return None


class Target(Protocol):
    """A code generator. `shown_only`: its source is rendered beside every compile for reading
    (MSL) but never run here; a target that fails to render is then a comment, not an error."""

    name: str
    shown_only: bool

    def compile(self, kernel: KernelDefinition) -> CompiledSource: ...


def failure_comment(target: str, entry: str, exc: BaseException) -> str:
    """What a shown-only target's text is when it cannot express a kernel: a comment saying
    why, so the launch of the target that runs goes on."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"// {target.upper()} code generation failed for `{entry}`: "
            f"{type(exc).__name__}: {first}\n")


class CodegenError(Exception):
    """The IR holds something this target cannot express."""


def lowerings(emitter: type) -> dict[str, Callable[[Any, Op], None]]:
    """IR op name -> the emitter's `op_<dialect>_<name>` method (`arith.add` -> `op_arith_add`),
    for every op of `OPS` it has one for. Each target dispatches through its table, and its
    "every IR op lowers" test compares the table with `OPS`."""
    table = {}
    for name in OPS:
        method = getattr(emitter, "op_" + name.replace(".", "_"), None)
        if method is not None:
            table[name] = method
    return table
