"""What names hold while `expand` runs.

A kernel's Python variables hold either plain Python values (comptime: folded during expansion,
never reaching the IR) or one of these expand-time values, which stand for IR values:

- `RV`        a scalar or vector SSA value (`splat` marks `Vector.new(x)`: widen on use; `w`
              how its type was written, generic or concrete: operands.py, "written types");
- `BufferRef` a global buffer argument (`x.len()`, `x[i]`, `y[i] = v`);
- `LocalVar`  a mutable local: every read is a `memory.load`, every assignment a `memory.store`;
- `Builtin`   ABSOLUTE_POS & co., computed once at the top of the kernel when first used;
- `ArrayRef`  a local `Array[T](n)` or a `SharedMemory[T](n)` (a pointer to a fixed array);
- `SliceView` a sub-slice `x[a:b]` of a buffer or array: indices are shifted by `start`, and
  `len()` is `end - start`;
- `AtomicRef` an element of an atomic array (`hist[b]`), used through its methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubelab.errors import hinted
from cubelab.ir.core import Value


class _Unbound:
    def __repr__(self) -> str:
        return "UNBOUND"


UNBOUND = _Unbound()


@dataclass(eq=False, slots=True)
class RV:
    v: Value
    splat: bool = False
    w: tuple[bool, str] | None = None  # (generic?, name): (True, "F"), (False, "f32"), unknown

    def __repr__(self) -> str:
        return f"RV(%{self.v.name}: {self.v.type})"

    def __bool__(self) -> bool:
        raise TypeError(hinted(
            "a runtime value has no Python truth value; this happens when Python evaluates a "
            "condition itself (e.g. inside comptime(...) or a plain Python helper)",
            "branch on it in the kernel (an `if` the kernel writes), or make the helper @cube"))


@dataclass(eq=False, slots=True)
class BufferRef:
    v: Value
    name: str
    writable: bool
    tensor: bool = False
    w: tuple[bool, str] | None = None  # how the element type was written (Slice[F] / Slice[f32])

    def __repr__(self) -> str:
        return f"BufferRef({self.name}: {self.v.type})"


@dataclass(eq=False, slots=True)
class LocalVar:
    ptr: Value
    name: str
    # (line, col) of `name = 0` when a bare Python literal fixed the local's type (i32, f32,
    # bool): a type clash later is reported there, where the fix goes
    typed_by_literal: tuple[int, int] | None = None
    # (line, col) of `name = Vector.new(x)`: a width-1 local made by a splat, which CubeCL would
    # widen from a later use; a component write past it is reported there, with the width
    from_splat: tuple[int, int] | None = None
    w: tuple[bool, str] | None = None  # how its type was written, from what it was assigned

    def __repr__(self) -> str:
        return f"LocalVar({self.name}: {self.ptr.type})"


@dataclass(frozen=True, slots=True)
class Builtin:
    """A builtin position or size. In the IR it becomes arithmetic over the primitive ones."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False, slots=True)
class ArrayRef:
    ptr: Value  # Pointer(Array(item, length), "function" | "shared")
    name: str
    length: int
    shape: tuple[int, ...] = ()  # comptime axes of `SharedMemory[f32]((3, 3))`, row-major
    w: tuple[bool, str] | None = None  # how the item type was written (Array[F] / Array[f32])

    @property
    def writable(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"ArrayRef({self.name}: {self.ptr.type})"


@dataclass(eq=False, slots=True)
class SliceView:
    base: "BufferRef | ArrayRef"
    start: Value  # u32
    length: Value  # u32
    writable: bool
    name: str

    def __repr__(self) -> str:
        return f"SliceView({self.name})"


@dataclass(eq=False, slots=True)
class AtomicRef:
    ptr: Value  # Pointer(Atomic(elem), space)
    name: str

    def __repr__(self) -> str:
        return f"AtomicRef({self.name}: {self.ptr.type})"
