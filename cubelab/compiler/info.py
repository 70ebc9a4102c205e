"""The layout of the info block every target shares, as in the seed's `info_st`.

    struct info_st {
        scalars_f32: array<f32, 1>,   // scalar arguments, grouped by type (f32, i32, u32, bool)
        static_meta: array<u32, 2>,   // then the length of every buffer argument, in items
    }

The runtime packs a launch's scalars and lengths into these bytes; the WGSL and MSL generators
read fields by name and the CPU runtime by offset. Booleans travel as u32 (0 or 1).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Sequence

from cubelab.ir.core import KernelDefinition

SCALAR_ORDER = ("f32", "i32", "u32", "bool")
_PACK = {"f32": "f", "i32": "i", "u32": "I", "bool": "I"}


@dataclass(frozen=True)
class InfoField:
    name: str  # "scalars_f32" | "static_meta"
    elem: str  # element type of the array
    count: int
    offset: int  # in 4-byte words


@dataclass(frozen=True)
class InfoLayout:
    fields: tuple[InfoField, ...]
    words: int

    def field(self, name: str) -> InfoField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def pack(self, scalars: dict[str, Sequence[Any]], lengths: Sequence[int]) -> bytes:
        """Bytes of one launch's info block: scalars per type in order, then buffer lengths."""
        out = bytearray()
        for f in self.fields:
            values = list(lengths) if f.name == "static_meta" else list(scalars.get(f.elem, ()))
            values += [0] * (f.count - len(values))
            code = _PACK[f.elem]
            if f.elem == "bool":
                values = [1 if v else 0 for v in values]
            out += struct.pack(f"<{f.count}{code}", *values)
        return bytes(out)


def info_layout(kernel: KernelDefinition) -> InfoLayout:
    counts = kernel.scalar_counts()
    fields: list[InfoField] = []
    offset = 0
    for elem in SCALAR_ORDER:
        n = counts.get(elem, 0)
        if n:
            fields.append(InfoField(f"scalars_{elem}", elem, n, offset))
            offset += n
    meta = max(1, len(kernel.buffers))  # WGSL structs need a member even with no buffers
    fields.append(InfoField("static_meta", "u32", meta, offset))
    offset += meta
    return InfoLayout(tuple(fields), offset)
