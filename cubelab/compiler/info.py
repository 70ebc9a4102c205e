"""The layout of the info block every target shares, as in the seed's `info_st`.

    struct info_st {
        scalars_f32: array<f32, 1>,   // scalar arguments, grouped by type (f32, i32, u32, bool)
        static_meta: array<u32, 5>,   // the length of every buffer argument, in items, then
                                      // for each tensor argument: its rank, its offset in
                                      // dynamic_meta, its logical length (the shape's product)
        dynamic_meta: array<u32>,     // only when there are tensors: for each tensor, in
                                      // argument order, shape[0..rank) then strides[0..rank)
    }

So for tensor number t (0-based among the tensor arguments) of a kernel with B buffers:
rank = static_meta[B + 3t], off = static_meta[B + 3t + 1], len = static_meta[B + 3t + 2],
shape(d) = dynamic_meta[off + d], stride(d) = dynamic_meta[off + rank + d]. Rank is launch data,
not compile-time: one pipeline serves tensors of any rank, as in CubeCL, which is why offsets are
stored and not computed.

Two lengths, as CubeCL keeps them (its `buffer_lengths` and `logical_lengths`): a buffer's
length is the items its handle holds, and every bounds clamp reads it, because only it says
where memory ends; a tensor's logical length is the product of its shape (u32, wrapping as
CubeCL's `as u32`), which is what `t.len()` means. They differ for a broadcast (stride 0), a
padded or a strided view, or a tensor with a zero-size dimension.

The runtime packs a launch's scalars, lengths and tensor metadata into these bytes; the WGSL and
MSL generators read fields by name and the CPU runtime by offset (`InfoField.offset`, in words;
dynamic_meta's offset is where the tail starts). Booleans travel as u32 (0 or 1).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Sequence

from cubelab.errors import hinted
from cubelab.ir.core import KernelDefinition

SCALAR_ORDER = ("f32", "i32", "u32", "bool")
_PACK = {"f32": "f", "i32": "i", "u32": "I", "bool": "I"}
# static_meta words per tensor argument: rank, offset into dynamic_meta, logical length
TENSOR_WORDS = 3

# (shape, strides) of one tensor argument, in items
TensorMeta = tuple[Sequence[int], Sequence[int]]


@dataclass(frozen=True)
class InfoField:
    name: str  # "scalars_f32" | "static_meta" | "dynamic_meta"
    elem: str  # element type of the array
    count: int  # dynamic_meta: 0 (runtime-sized)
    offset: int  # in 4-byte words


@dataclass(frozen=True)
class InfoLayout:
    fields: tuple[InfoField, ...]
    words: int  # fixed part; dynamic_meta (if any) follows
    buffers: int = 0
    tensors: int = 0

    def field(self, name: str) -> InfoField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def has_dynamic_meta(self) -> bool:
        return self.tensors > 0

    def pack(self, scalars: dict[str, Sequence[Any]], lengths: Sequence[int],
             tensors: Sequence[TensorMeta | None] = ()) -> bytes:
        """Bytes of one launch's info block: scalars per type in order, buffer lengths, then the
        tensors' ranks/offsets and their shapes and strides.

        `tensors` has one entry per *buffer* argument in binding order (None for plain slices)
        or one per tensor argument; only the tensors' entries are used. Each tensor's logical
        length is computed here, from its shape (`logical_length`).
        """
        if not self.tensors:  # every launch with new scalars packs: the common case, precompiled
            fast = self.__dict__.get("_fast") or self._compile_fast()
            st, fields, meta = fast
            values: list[Any] = []
            for elem, count, is_bool in fields:
                got = scalars.get(elem, ())
                if is_bool:
                    got = [1 if v else 0 for v in got]
                values += got
                if len(got) < count:
                    values += [0] * (count - len(got))
            values += lengths
            if len(lengths) < meta:
                values += [0] * (meta - len(lengths))
            if not any(t is not None for t in tensors):
                return st.pack(*values)  # type: ignore[no-any-return]
        metas = [t for t in tensors if t is not None]
        if len(metas) != self.tensors:
            raise ValueError(hinted(f"this kernel has {self.tensors} tensor argument(s), the "
                                    f"launch gave metadata for {len(metas)}",
                                    "pass a TensorArg for each Tensor argument"))
        static = list(lengths)
        dynamic: list[int] = []
        for shape, strides in metas:
            if len(shape) != len(strides):
                raise ValueError(hinted(f"a tensor's shape {tuple(shape)} and strides "
                                        f"{tuple(strides)} differ in rank",
                                        "give one stride per dimension"))
            static += [len(shape), len(dynamic), logical_length(shape)]
            dynamic += [*shape, *strides]
        out = bytearray()
        for f in self.fields:
            if f.name == "dynamic_meta":
                values = dynamic or [0]
                out += struct.pack(f"<{len(values)}I", *values)
                continue
            values = static if f.name == "static_meta" else list(scalars.get(f.elem, ()))
            values += [0] * (f.count - len(values))
            code = _PACK[f.elem]
            if f.elem == "bool":
                values = [1 if v else 0 for v in values]
            out += struct.pack(f"<{f.count}{code}", *values)
        return bytes(out)

    def __getstate__(self) -> dict[str, Any]:
        # (pickled by the compilation store: the precompiled packer, a struct.Struct, does not
        # pickle, and is rebuilt at the first pack)
        return {k: v for k, v in self.__dict__.items() if k != "_fast"}

    def _compile_fast(self) -> tuple[struct.Struct, tuple[tuple[str, int, bool], ...], int]:
        """`pack`'s precompiled form for a layout without tensors: one `struct.Struct` for the
        whole block, the scalar fields in order, the static_meta words. Kept on the (frozen)
        layout, outside its fields."""
        fmt = "<" + "".join(f"{f.count}{_PACK[f.elem]}" for f in self.fields)
        fields = tuple((f.elem, f.count, f.elem == "bool") for f in self.fields
                       if f.name.startswith("scalars_"))
        meta = next(f.count for f in self.fields if f.name == "static_meta")
        fast = (struct.Struct(fmt), fields, meta)
        object.__setattr__(self, "_fast", fast)
        return fast


def info_layout(kernel: KernelDefinition) -> InfoLayout:
    counts = kernel.scalar_counts()
    fields: list[InfoField] = []
    offset = 0
    for elem in SCALAR_ORDER:
        n = counts.get(elem, 0)
        if n:
            fields.append(InfoField(f"scalars_{elem}", elem, n, offset))
            offset += n
    tensors = len(kernel.tensors())
    # WGSL structs need a member even with no buffers
    meta = max(1, len(kernel.buffers) + TENSOR_WORDS * tensors)
    fields.append(InfoField("static_meta", "u32", meta, offset))
    offset += meta
    if tensors:
        fields.append(InfoField("dynamic_meta", "u32", 0, offset))
    return InfoLayout(tuple(fields), offset, len(kernel.buffers), tensors)


def static_meta_index_of_rank(layout: InfoLayout, tensor_number: int) -> int:
    """Index in static_meta of tensor number `tensor_number`'s rank (its offset into
    dynamic_meta follows, then its logical length)."""
    return layout.buffers + TENSOR_WORDS * tensor_number


def logical_length(shape: Sequence[int]) -> int:
    """A tensor's `len()`: the product of its shape (1 for rank 0), as a u32 — CubeCL's
    logical length. The one home of that rule: the info block and the CPU runtime read it."""
    n = 1
    for d in shape:
        n *= int(d)
    return n & 0xFFFFFFFF
