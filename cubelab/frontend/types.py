"""The kernel language's types, as seen from Python.

`f32`, `i32`, `u32` are `ScalarKind` objects that work on both sides of the hand-off:

- host side: `f32.as_bytes(array)` / `f32.from_bytes(data)` (numpy in, numpy out);
- in a kernel: `f32(1.5)` is a typed constant, `f32(x)` a cast, `f32.max(a, b)`, `F.new(0.0)`,
  `F.cast_from(a)` mirror CubeCL's `F::max`, `F::new`, `F::cast_from`.

Generic element types and vector widths are placeholders (`Float.generic("F")`,
`Size.generic("N")`) resolved through the scope's type table when a KernelId is defined, so one
expansion serves every element type — CubeCL's `DynamicScalar` / `DynamicSize`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.errors import api_boundary, hinted, type_refusal
from cubelab.ir.types import Atomic as AtomicTy
from cubelab.ir.types import Elem, Ty

if TYPE_CHECKING:
    from cubelab.ir.scope import Scope


class ScalarKind:
    """A concrete scalar type: `f32`, `i32`, `u32` (and `bool` as `bool_`)."""

    def __init__(self, elem: Elem, family: str) -> None:
        self.elem = elem
        self.family = family  # "Float" | "Int" | "Bool"
        self.__name__ = elem.value

    def __repr__(self) -> str:
        return self.elem.value

    @property
    def ty(self) -> Ty:
        return Ty(self.elem)

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(self.elem.numpy_dtype)

    # -- host side ----------------------------------------------------------------------------
    def as_bytes(self, data: Any) -> bytes:
        """Bytes of `data` as this type (like CubeCL's `f32::as_bytes`)."""
        arr = np.ascontiguousarray(np.asarray(data), dtype=self.dtype if self.elem is not
                                   Elem.BOOL else np.uint32)
        return arr.tobytes()

    def from_bytes(self, data: bytes) -> np.ndarray[Any, Any]:
        """A numpy array viewing `data` as this type (a copy: safe to keep)."""
        dt = self.dtype if self.elem is not Elem.BOOL else np.dtype(np.uint32)
        return np.frombuffer(bytes(data), dtype=dt).copy()

    # -- kernel side (called by the expanded code through cubelab.frontend.ops) ----------------
    def resolve(self, scope: "Scope") -> "ScalarKind":
        return self

    def __call__(self, *args: Any) -> Any:
        raise TypeError(hinted(
            f"{self.elem.value}(...) builds a typed value inside a kernel",
            f"on the host use numpy (np.{self.elem.numpy_dtype}) or "
            f"{self.elem.value}.as_bytes(...)"))


class GenericScalar:
    """A generic element type (`F = Float.generic("F")`), bound per launch (`launch[f32]`)."""

    def __init__(self, name: str, family: str) -> None:
        self.name = name
        self.family = family
        self.__name__ = name

    def __repr__(self) -> str:
        return f"{self.family}.generic({self.name!r})"

    def resolve(self, scope: "Scope") -> ScalarKind:
        value = scope.resolve(self.name)
        assert isinstance(value, ScalarKind)
        return value

    def accepts(self, kind: ScalarKind) -> bool:
        if self.family == "Numeric":  # CubeCL's `Numeric`: any number type, not bool
            return kind.family in ("Float", "Int")
        return self.family == kind.family


class GenericSize:
    """A generic vector width (`N = Size.generic("N")`), given as a launch argument."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__name__ = name

    def __repr__(self) -> str:
        return f"Size.generic({self.name!r})"

    def resolve(self, scope: "Scope") -> int:
        value = scope.resolve(self.name)
        assert isinstance(value, int)
        return value


class _Family:
    def __init__(self, name: str) -> None:
        self.name = name

    def generic(self, name: str) -> GenericScalar:
        return GenericScalar(name, self.name)

    def __repr__(self) -> str:
        return self.name


class _SizeFamily:
    def generic(self, name: str) -> GenericSize:
        return GenericSize(name)

    def __repr__(self) -> str:
        return "Size"


f32 = ScalarKind(Elem.F32, "Float")
i32 = ScalarKind(Elem.I32, "Int")
u32 = ScalarKind(Elem.U32, "Int")
bool_ = ScalarKind(Elem.BOOL, "Bool")
Float = _Family("Float")
Int = _Family("Int")
Numeric = _Family("Numeric")
Size = _SizeFamily()

SCALARS = {"f32": f32, "i32": i32, "u32": u32, "bool": bool_}

ElemSpec = ScalarKind | GenericScalar
WidthSpec = int | GenericSize


def from_type_param(x: Any) -> Any:
    """PEP 695 (`def k[F: Float, N: Size](...)`, Python >= 3.12): a TypeVar bounded by `Float`,
    `Int` or `Size` stands for the generic of that name; anything else is returned unchanged."""
    bound = getattr(x, "__bound__", None)
    if bound is None or not hasattr(x, "__name__"):
        return x
    if isinstance(bound, _Family):
        return GenericScalar(x.__name__, bound.name)
    if isinstance(bound, _SizeFamily):
        return GenericSize(x.__name__)
    return x


class VectorSpec:
    """`Vector[F, N]`: N scalars of F handled as one value (N in 1, 2, 4)."""

    def __init__(self, elem: ElemSpec, width: WidthSpec) -> None:
        self.elem = elem
        self.width = width

    def __repr__(self) -> str:
        return f"Vector[{self.elem!r}, {self.width!r}]"

    def resolve(self, scope: "Scope") -> Ty:
        kind = self.elem.resolve(scope)
        width = self.width if isinstance(self.width, int) else self.width.resolve(scope)
        return Ty(kind.elem, width)


class _VectorNamespace:
    """`Vector[F, N]` in annotations; `Vector.new(x)` in kernels (the width comes from where the
    value is used: a scalar meets a vector → it is splatted, as CubeCL's
    `normalize_same_vectorization` does)."""

    @api_boundary
    def __getitem__(self, params: tuple[Any, Any]) -> VectorSpec:
        if not isinstance(params, tuple) or len(params) != 2:
            raise type_refusal("Vector takes two parameters", "write Vector[F, N]")
        elem, width = (from_type_param(p) for p in params)
        if not isinstance(elem, (ScalarKind, GenericScalar)):
            raise type_refusal(f"Vector[...]'s first parameter must be a scalar type, got "
                               f"{elem!r}", "write Vector[f32, 4] or Vector[F, N]")
        if isinstance(width, int) and width not in (1, 2, 4):
            raise type_refusal(f"vector widths are 1, 2 or 4; got {width}",
                               "use a width of 1, 2 or 4 (or a Size generic)")
        if not isinstance(width, (int, GenericSize)):
            raise type_refusal(f"Vector[...]'s width must be 1, 2, 4 or a Size generic, got "
                               f"{width!r}", "write Vector[F, 4] or Vector[F, N]")
        return VectorSpec(elem, width)

    def __repr__(self) -> str:
        return "Vector"


Vector = _VectorNamespace()


class AtomicSpec:
    """`Atomic[u32]` / `Atomic[i32]`: an item only the atomic methods may touch. `Atomic[I]`
    with `I = Int.generic("I")` is bound per launch (`k.launch[u32]`), as `Slice[F]` is."""

    def __init__(self, kind: ScalarKind | GenericScalar) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"Atomic[{self.kind!r}]"

    def resolve(self, scope: "Scope") -> AtomicTy:
        return AtomicTy(self.kind.resolve(scope).elem)


class _AtomicNamespace:
    @api_boundary
    def __getitem__(self, kind: Any) -> AtomicSpec:
        kind = from_type_param(kind)
        generic_int = isinstance(kind, GenericScalar) and kind.family == "Int"
        if kind is not u32 and kind is not i32 and not generic_int:
            raise type_refusal(f"Atomic[...] holds u32 or i32 (WGSL has no other atomics), got "
                               f"{kind!r}", "count in Atomic[u32] or Atomic[i32] (or Atomic[I] "
                               "with I = Int.generic('I')); for float sums reduce in shared "
                               "memory, or scale to integers")
        return AtomicSpec(kind)

    def __repr__(self) -> str:
        return "Atomic"


Atomic = _AtomicNamespace()

ItemSpec = ElemSpec | VectorSpec | AtomicSpec


class BufferSpec:
    """`Slice[T]` (read-only, `&[T]`), `SliceMut[T]` (read-write, `&mut [T]`), or with
    `tensor=True` `Tensor[T]` / `TensorMut[T]` (the same buffer plus shape and strides)."""

    def __init__(self, item: ItemSpec, writable: bool, tensor: bool = False) -> None:
        if isinstance(item, ScalarKind) and item.elem is Elem.BOOL:
            raise type_refusal("buffers of bool are not allowed (WGSL storage has no bool)",
                               "store flags as u32 (0 or 1) and compare: `flags[i] != u32(0)`")
        if not isinstance(item, (ScalarKind, GenericScalar, VectorSpec, AtomicSpec)):
            raise type_refusal(f"a Slice holds scalars, vectors or atomics, got {item!r}",
                               "e.g. Slice[f32], Slice[Vector[F, N]], SliceMut[Atomic[u32]]")
        if isinstance(item, AtomicSpec) and not writable:
            raise type_refusal("atomics are for writing", f"declare SliceMut[{item!r}]")
        self.item = item
        self.writable = writable
        self.tensor = tensor

    def __repr__(self) -> str:
        kind = ("TensorMut" if self.writable else "Tensor") if self.tensor else \
            ("SliceMut" if self.writable else "Slice")
        return f"{kind}[{self.item!r}]"

    def item_ty(self, scope: "Scope") -> "Ty | AtomicTy":
        if isinstance(self.item, (VectorSpec, AtomicSpec)):
            return self.item.resolve(scope)
        return Ty(self.item.resolve(scope).elem)

    @property
    def elem_spec(self) -> ElemSpec:
        if isinstance(self.item, AtomicSpec):
            return self.item.kind
        return self.item.elem if isinstance(self.item, VectorSpec) else self.item

    @property
    def width_spec(self) -> WidthSpec:
        return self.item.width if isinstance(self.item, VectorSpec) else 1


class _SliceNamespace:
    def __init__(self, writable: bool, tensor: bool = False) -> None:
        self.writable = writable
        self.tensor = tensor

    @api_boundary
    def __getitem__(self, item: Any) -> BufferSpec:
        return BufferSpec(item, self.writable, self.tensor)

    def __repr__(self) -> str:
        if self.tensor:
            return "TensorMut" if self.writable else "Tensor"
        return "SliceMut" if self.writable else "Slice"


Slice = _SliceNamespace(False)
SliceMut = _SliceNamespace(True)
Tensor = _SliceNamespace(False, tensor=True)
TensorMut = _SliceNamespace(True, tensor=True)


class ArrayKind:
    """`Array[T]` (a unit's local array) or `SharedMemory[T]` (one array per cube). Called in a
    kernel with a comptime length: `tile = SharedMemory[f32](256)`."""

    def __init__(self, item: ItemSpec, shared: bool) -> None:
        if isinstance(item, ScalarKind) and item.elem is Elem.BOOL:
            raise TypeError(hinted("arrays of bool are not allowed", "use u32 (0 / 1)"))
        if not isinstance(item, (ScalarKind, GenericScalar, VectorSpec, AtomicSpec)):
            raise TypeError(hinted(f"an array holds scalars, vectors or atomics, got {item!r}",
                                   "e.g. Array[f32](n), SharedMemory[Vector[f32, 4]](n)"))
        if isinstance(item, AtomicSpec) and not shared:
            raise TypeError(hinted("a local Array cannot hold atomics (only one unit sees it)",
                                   "use SharedMemory[Atomic[...]] or a SliceMut[Atomic[...]]"))
        self.item = item
        self.shared = shared
        self.__name__ = repr(self)

    def __repr__(self) -> str:
        return f"{'SharedMemory' if self.shared else 'Array'}[{self.item!r}]"

    def item_ty(self, scope: "Scope") -> "Ty | AtomicTy":
        if isinstance(self.item, (VectorSpec, AtomicSpec)):
            return self.item.resolve(scope)
        return Ty(self.item.resolve(scope).elem)

    def __call__(self, *args: Any) -> Any:
        raise TypeError(hinted(f"{self!r}(n) creates memory inside a @cube kernel only",
                               "on the host allocate with client.empty / create_from_slice"))


class _ArrayNamespace:
    def __init__(self, shared: bool) -> None:
        self.shared = shared

    def __getitem__(self, item: Any) -> ArrayKind:
        return ArrayKind(item, self.shared)

    def __repr__(self) -> str:
        return "SharedMemory" if self.shared else "Array"


Array = _ArrayNamespace(False)
SharedMemory = _ArrayNamespace(True)


class ComptimeSpec:
    """`Comptime[T]`: a plain Python value during expansion, and part of the KernelId."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"Comptime[{getattr(self.inner, '__name__', self.inner)!r}]"


class _ComptimeNamespace:
    def __getitem__(self, inner: Any) -> ComptimeSpec:
        return ComptimeSpec(inner)

    def __repr__(self) -> str:
        return "Comptime"


Comptime = _ComptimeNamespace()


class DefineSpec:
    """`Define[T]`: a launch argument whose *value* — `f32`, `i32`, `u32`, or a numpy dtype —
    binds the generic element type `T` for that launch (CubeCL's `#[define(T)] dtype:
    ElemType`, which burn's custom kernels use to pick the type from a tensor's dtype at run
    time). One `expand` serves every type, as for `launch[f32]`; the choice is part of the
    KernelId (the type's `<f32>` and the argument's field). In the body the argument is the
    chosen type, a comptime value (`dtype.new(0)`, `if dtype == f32:`)."""

    def __init__(self, generic: "GenericScalar") -> None:
        self.generic = generic

    def __repr__(self) -> str:
        return f"Define[{self.generic.name}]"


class _DefineNamespace:
    @api_boundary
    def __getitem__(self, generic: Any) -> DefineSpec:
        generic = from_type_param(generic)
        if not isinstance(generic, GenericScalar):
            raise type_refusal(f"Define[...] names a generic element type, got {generic!r}",
                               "write T = Numeric.generic('T') and `dtype: Define[T]`")
        return DefineSpec(generic)

    def __repr__(self) -> str:
        return "Define"


Define = _DefineNamespace()


def scalar_kind_of(value: Any) -> ScalarKind | None:
    """`f32`, `np.float32`, `np.dtype("int32")`, `"u32"` -> the ScalarKind; None if none."""
    if isinstance(value, ScalarKind):
        return value
    if isinstance(value, str):
        return _BY_NAME.get(value)
    try:
        dt = np.dtype(value)
    except TypeError:
        return None
    return _BY_DTYPE.get(dt)


_BY_NAME = {"f32": f32, "i32": i32, "u32": u32}
_BY_DTYPE = {np.dtype(np.float32): f32, np.dtype(np.int32): i32, np.dtype(np.uint32): u32}
