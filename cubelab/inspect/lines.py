"""Line correspondence: kernel source line ↔ IR lines ↔ generated WGSL/MSL lines.

Every IR op remembers the Python line it was registered from (`op.loc`); the IR printer writes it
as a trailing `// line N` comment and each target returns a line map (generated line → `Loc`).
This module turns those into one table keyed by the kernel's source line, which the inspector
uses to highlight "everything line 13 became" and to put "from kernel line 13" on hover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cubelab.compiler.base import CompiledSource

__all__ = ["Correspondence", "ir_line_map", "correspondence"]

_IR_LOC = re.compile(r"//\s*line\s+(\d+)")


def ir_line_map(ir_text: str) -> dict[int, int]:
    """IR text line (1-based) → kernel source line, from the printer's `// line N` comments."""
    out: dict[int, int] = {}
    for i, line in enumerate(ir_text.splitlines(), 1):
        m = _IR_LOC.search(line)
        if m:
            out[i] = int(m.group(1))
    return out


@dataclass
class Correspondence:
    """For each kernel source line (absolute, as in the file), the lines it became."""

    ir: dict[int, list[int]] = field(default_factory=dict)  # source line -> IR lines
    targets: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # "wgsl" -> ...
    # the reverse maps, generated line -> source line (for hover titles)
    ir_to_source: dict[int, int] = field(default_factory=dict)
    target_to_source: dict[str, dict[int, int]] = field(default_factory=dict)

    def source_lines(self) -> list[int]:
        lines = set(self.ir)
        for m in self.targets.values():
            lines |= set(m)
        return sorted(lines)


def _invert(m: dict[int, int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for gen, src in sorted(m.items()):
        out.setdefault(src, []).append(gen)
    return out


def correspondence(ir_text: str, compiled: dict[str, CompiledSource | None] | None = None,
                   file: str | None = None) -> Correspondence:
    """Build the table from IR text and targets' line maps (only lines from `file` if given)."""
    c = Correspondence()
    c.ir_to_source = ir_line_map(ir_text)
    c.ir = _invert(c.ir_to_source)
    for name, cs in (compiled or {}).items():
        if cs is None:
            continue
        fwd = {ln: loc.line for ln, loc in cs.line_map.items()
               if file is None or loc.file == file}
        c.target_to_source[name] = fwd
        c.targets[name] = _invert(fwd)
    return c
