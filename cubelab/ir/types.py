"""Types of IR values.

The IR knows six shapes of value: scalars (`f32`, `i32`, `u32`, `bool`), vectors of 2 or 4
scalars (a vector of width 1 *is* the scalar, as in CubeCL), atomics (`atomic<u32>`, only ever
behind a pointer), fixed-length arrays, runtime-sized arrays, and pointers into one of the
address spaces. A global buffer argument is a
`Pointer(RuntimeArray(item), "global")` — not a `RuntimeArray` — which is exactly the detail that
made CubeCL 0.11.3's CheckedIo pass miss every global buffer (see `ir/passes.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Elem(Enum):
    F32 = "f32"
    I32 = "i32"
    U32 = "u32"
    BOOL = "bool"

    @property
    def is_float(self) -> bool:
        return self is Elem.F32

    @property
    def is_int(self) -> bool:
        return self in (Elem.I32, Elem.U32)

    @property
    def size(self) -> int:
        return 4

    @property
    def numpy_dtype(self) -> str:
        return {"f32": "float32", "i32": "int32", "u32": "uint32", "bool": "bool"}[self.value]


@dataclass(frozen=True, slots=True)
class Ty:
    """A scalar (`width == 1`) or a vector of `width` scalars of `elem`."""

    elem: Elem
    width: int = 1

    def __str__(self) -> str:
        return self.elem.value if self.width == 1 else f"vec{self.width}<{self.elem.value}>"

    @property
    def is_vector(self) -> bool:
        return self.width > 1

    def with_elem(self, elem: Elem) -> "Ty":
        return Ty(elem, self.width)

    def with_width(self, width: int) -> "Ty":
        return Ty(self.elem, width)

    @property
    def size(self) -> int:
        return self.elem.size * self.width


@dataclass(frozen=True, slots=True)
class Atomic:
    """An atomic integer (`Atomic[u32]` / `Atomic[i32]`): only the atomic.* ops may touch it."""

    elem: Elem

    def __str__(self) -> str:
        return f"atomic<{self.elem.value}>"

    @property
    def value_ty(self) -> Ty:
        return Ty(self.elem)

    @property
    def size(self) -> int:
        return 4


@dataclass(frozen=True, slots=True)
class Array:
    """A fixed-length array (a local `Array[T](n)` or `SharedMemory[T](n)`)."""

    item: "Ty | Atomic"
    length: int

    def __str__(self) -> str:
        return f"array<{self.item}, {self.length}>"


@dataclass(frozen=True, slots=True)
class RuntimeArray:
    """An array whose length is known only at launch (the storage behind a global buffer)."""

    item: "Ty | Atomic"

    def __str__(self) -> str:
        return f"array<{self.item}>"


@dataclass(frozen=True, slots=True)
class Pointer:
    """A pointer to `pointee` in `space`: "global" (storage), "function" (locals), "shared"."""

    pointee: "Type"
    space: str
    writable: bool = True

    def __str__(self) -> str:
        access = "rw" if self.writable else "r"
        return f"ptr<{self.space}, {self.pointee}, {access}>"


Type = Ty | Atomic | Array | RuntimeArray | Pointer

F32 = Ty(Elem.F32)
I32 = Ty(Elem.I32)
U32 = Ty(Elem.U32)
BOOL = Ty(Elem.BOOL)
