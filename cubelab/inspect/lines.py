"""Line correspondence: kernel source line ↔ IR lines ↔ generated WGSL/MSL lines.

Every IR op remembers the Python line it was registered from (`op.loc`); the IR printer returns
its text with a line map (`ir.printer.print_kernel_mapped`: printed line → `Loc`), and each target
returns one too (generated line → `Loc`). This module turns those maps into one table keyed by
the kernel's source line, which the inspector uses to highlight "everything line 13 became" and
to put "from kernel line 13" on hover. (It never re-reads the printed `// line N` comments: the
printer's map is the one answer.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import Mapping

from cubelab.compiler.base import CompiledSource
from cubelab.ir.core import Loc

__all__ = ["Correspondence", "correspondence"]

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


def correspondence(ir_lines: Mapping[int, Loc],
                   compiled: Mapping[str, CompiledSource | None] | None = None,
                   file: str | None = None) -> Correspondence:
    """Build the table from the IR's line map (`print_kernel_mapped`) and the targets' line
    maps (only lines from `file` if given)."""
    c = Correspondence()
    c.ir_to_source = {ln: loc.line for ln, loc in ir_lines.items()
                      if file is None or loc.file == file}
    c.ir = _invert(c.ir_to_source)
    for name, cs in (compiled or {}).items():
        if cs is None:
            continue
        fwd = {ln: loc.line for ln, loc in cs.line_map.items()
               if file is None or loc.file == file}
        c.target_to_source[name] = fwd
        c.targets[name] = _invert(fwd)
    return c
