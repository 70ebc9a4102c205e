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
