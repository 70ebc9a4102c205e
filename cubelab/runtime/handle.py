"""Handles to device memory.

A `Handle` names memory owned by one device's server; it is a plain token on the calling thread
(its bytes live on the device thread). `BufferArg.from_raw_parts(handle, length)` is CubeCL's
`unsafe` constructor — here it is checked: the length must fit in the handle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

_ids = itertools.count(1)

# Every cubelab element type is 4 bytes wide (f32, i32, u32; bool buffers are refused).
ELEM_BYTES = 4


@dataclass(frozen=True, eq=False, slots=True)
class Handle:
    id: int
    size: int  # bytes
    device_id: int

    @staticmethod
    def new(size: int, device_id: int) -> "Handle":
        return Handle(next(_ids), size, device_id)

    def __repr__(self) -> str:
        return f"Handle(#{self.id}, {self.size} B, device {self.device_id})"


class BufferArg:
    """A buffer launch argument: a handle and how many scalars of it the kernel may see."""

    __slots__ = ("handle", "length")

    def __init__(self, handle: Handle, length: int) -> None:
        self.handle = handle
        self.length = length

    @staticmethod
    def from_raw_parts(handle: Handle, length: int) -> "BufferArg":
        if not isinstance(handle, Handle):
            raise TypeError(
                f"BufferArg.from_raw_parts expects a Handle (from client.create_from_slice or "
                f"client.empty), got {type(handle).__name__}"
            )
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise ValueError(f"BufferArg length must be a non-negative int, got {length!r}")
        if length * ELEM_BYTES > handle.size:
            raise ValueError(
                f"BufferArg.from_raw_parts: length {length} needs {length * ELEM_BYTES} bytes but "
                f"{handle!r} holds {handle.size} bytes ({handle.size // ELEM_BYTES} elements). "
                "Pass the number of scalars the buffer really holds."
            )
        return BufferArg(handle, length)

    def __repr__(self) -> str:
        return f"BufferArg({self.handle!r}, len={self.length})"


class ScalarArg:
    """A scalar launch argument (plain Python numbers are accepted too)."""

    __slots__ = ("value",)

    def __init__(self, value: int | float | bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"ScalarArg({self.value!r})"


class TensorArg:
    """A tensor launch argument: a handle, its shape and its strides (in items, like CubeCL's
    `TensorArg::from_raw_parts(handle, strides, shape, vectorization)` — cubelab takes shape
    first, as numpy does). The kernel sees `t.shape(d)`, `t.stride(d)`, `t.rank()` and
    `t.len()` (the number of items the handle holds); indexing is linear, so a transposed view is
    the same bytes with swapped strides."""

    __slots__ = ("handle", "shape", "strides", "length")

    def __init__(self, handle: Handle, shape: tuple[int, ...], strides: tuple[int, ...],
                 length: int) -> None:
        self.handle, self.shape, self.strides, self.length = handle, shape, strides, length

    @staticmethod
    def from_raw_parts(handle: Handle, shape: "tuple[int, ...] | list[int]",
                       strides: "tuple[int, ...] | list[int]") -> "TensorArg":
        if not isinstance(handle, Handle):
            raise TypeError(
                f"TensorArg.from_raw_parts expects a Handle (from client.create_from_slice or "
                f"client.empty), got {type(handle).__name__}")
        shape_t = tuple(int(d) for d in shape)
        strides_t = tuple(int(d) for d in strides)
        if len(shape_t) != len(strides_t) or not shape_t:
            raise ValueError(f"TensorArg: shape {shape_t} and strides {strides_t} must have the "
                             "same, non-zero rank")
        if any(d < 0 for d in shape_t + strides_t):
            raise ValueError(f"TensorArg: negative shape or stride in {shape_t} / {strides_t}")
        length = handle.size // ELEM_BYTES
        if all(shape_t):
            span = 1 + sum((d - 1) * st for d, st in zip(shape_t, strides_t))
            if span > length:
                raise ValueError(
                    f"TensorArg: shape {shape_t} with strides {strides_t} reaches item "
                    f"{span - 1} but {handle!r} holds {length} items")
        return TensorArg(handle, shape_t, strides_t, length)

    def __repr__(self) -> str:
        return f"TensorArg({self.handle!r}, shape={self.shape}, strides={self.strides})"
