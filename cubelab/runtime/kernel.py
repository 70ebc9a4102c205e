"""The launch vocabulary shared by the frontend and every server.

Names are the seed's: `KernelId` (the pipeline cache key), `KernelSettings`, `ExecutionMode`,
`AddressType`, `CubeDim`, `CubeCount`, `BufferArg`, `ScalarArg`, `Bindings`. The runtime never
imports the frontend: it receives kernel objects that satisfy `CubeKernel` (they can give their
`id()` cheaply, on any thread, and `define()` their IR, on the device thread, on a cache miss).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from cubelab.compiler.pipeline import ExecutionMode

if TYPE_CHECKING:
    from cubelab.ir.core import KernelDefinition
    from cubelab.runtime.handle import Handle


class AddressType(Enum):
    U32 = "U32"


@dataclass(frozen=True, slots=True)
class CubeDim:
    """Units per cube (workgroup size). Part of the KernelId: it is compiled into the kernel."""

    x: int
    y: int = 1
    z: int = 1

    @staticmethod
    def new_1d(x: int) -> "CubeDim":
        return CubeDim(int(x), 1, 1)

    @staticmethod
    def new_2d(x: int, y: int) -> "CubeDim":
        return CubeDim(int(x), int(y), 1)

    @staticmethod
    def new_3d(x: int, y: int, z: int) -> "CubeDim":
        return CubeDim(int(x), int(y), int(z))

    @property
    def num_units(self) -> int:
        return self.x * self.y * self.z

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)


class CubeCount:
    """How many cubes a launch dispatches. Not part of the KernelId: one pipeline, any grid.

    `CubeCount.Static(x, y, z)` is known on the calling thread; `CubeCount.Dynamic(handle)` is
    three u32 in device memory (x, y, z; 12 bytes), written by an earlier kernel. The dynamic
    count is the one launch-shape axis still alive at run time: wgpu dispatches it indirectly
    (no read-back); the CPU runtime drains the stream and reads the 12 bytes. Its handle is not
    one of the kernel's bindings, yet the dispatch *reads* it, so the server adds it to the read
    set: a count buffer carrying a failure skips the launch instead of dispatching garbage.
    """

    __slots__ = ("x", "y", "z", "handle")

    def __init__(self, x: int, y: int, z: int, handle: "Handle | None" = None) -> None:
        self.x, self.y, self.z, self.handle = x, y, z, handle

    @staticmethod
    def Static(x: int, y: int = 1, z: int = 1) -> "CubeCount":  # noqa: N802 - the seed's name
        for v in (x, y, z):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"CubeCount.Static needs three non-negative ints, got {(x, y, z)}")
        return CubeCount(x, y, z)

    @staticmethod
    def Dynamic(handle: "Handle") -> "CubeCount":  # noqa: N802 - the seed's name
        from cubelab.runtime.handle import Handle

        if not isinstance(handle, Handle):
            raise TypeError(f"CubeCount.Dynamic needs a Handle holding three u32, got "
                            f"{type(handle).__name__}")
        if handle.size < 12:
            raise ValueError(f"CubeCount.Dynamic: {handle!r} holds {handle.size} bytes; a count "
                             "is three u32 (x, y, z) = 12 bytes")
        return CubeCount(0, 0, 0, handle)

    @property
    def is_static(self) -> bool:
        return self.handle is None

    @property
    def is_dynamic(self) -> bool:
        return self.handle is not None

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)

    def __repr__(self) -> str:
        if self.handle is not None:
            return f"CubeCount.Dynamic({self.handle!r})"
        return f"CubeCount.Static({self.x}, {self.y}, {self.z})"


@dataclass(frozen=True, slots=True)
class KernelSettings:
    cube_dim: CubeDim
    mode: ExecutionMode
    address_type: AddressType = AddressType.U32


def _debug(value: Any, indent: int) -> str:
    """Rust's `{:#?}` layout for the values a KernelId holds."""
    pad = "    " * indent
    if isinstance(value, DebugStruct):
        if not value.fields:
            return value.name
        lines = [f"{value.name} {{"]
        for k, v in value.fields:
            lines.append(f"{pad}    {k}: {_debug(v, indent + 1)},")
        lines.append(f"{pad}}}")
        return "\n".join(lines)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, str):
        return value
    if isinstance(value, tuple) and not value:
        return "()"
    return repr(value)


@dataclass(frozen=True, slots=True)
class DebugStruct:
    """A named record printed like Rust's derived Debug (`SaxpyInfo { n: 4, a: (), .. }`)."""

    name: str
    fields: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str) -> Any:
        for k, v in self.fields:
            if k == key:
                return v
        raise KeyError(key)


# What a buffer argument contributes to the KernelId (`BufferCompilationArg { inplace: None }`).
BUFFER_COMPILATION_ARG = DebugStruct("BufferCompilationArg", (("inplace", None),))
# What a scalar argument contributes: nothing (`a: ()`), so a new value never recompiles.
SCALAR_COMPILATION_ARG: tuple[()] = ()


@dataclass(frozen=True)
class KernelId:
    """The cache key: kernel type, address type, cube_dim, execution mode and Info.

    `CubeCount` and runtime data are deliberately absent: launching the same kernel on another
    grid or other data reuses the pipeline.
    """

    type: str
    address_type: AddressType
    cube_dim: CubeDim
    mode: ExecutionMode
    info: DebugStruct
    # Digest of the kernel's source (and its helpers'): Python can redefine a function under the
    # same name (a re-run notebook cell), which Rust's type ids never do. Not printed.
    origin: str = field(default="", repr=False)
    _hash8: str = field(default="", compare=False, repr=False)
    _hash: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256((self.debug() + self.origin).encode()).hexdigest()[:8]
        object.__setattr__(self, "_hash8", digest)
        object.__setattr__(self, "_hash", hash((self.type, self.address_type, self.cube_dim,
                                                 self.mode, self.info, self.origin)))

    def __hash__(self) -> int:
        # Looked up on every launch (pipeline and bind-group caches): hashing the nested Info
        # each time cost ~7 µs per launch on lavapipe's machine.
        return self._hash

    @property
    def hash8(self) -> str:
        return self._hash8

    def debug(self) -> str:
        """The KernelId as the seed's debug log prints it."""
        dim = DebugStruct(
            "Dim3", (("x", self.cube_dim.x), ("y", self.cube_dim.y), ("z", self.cube_dim.z))
        )
        return _debug(
            DebugStruct(
                "KernelId",
                (
                    ("type", self.type),
                    ("address_type", self.address_type),
                    ("cube_dim", dim),
                    ("mode", self.mode),
                    ("info", self.info),
                ),
            ),
            0,
        )

    def fields(self) -> dict[str, Any]:
        """Field by field, for the inspector and `diff`."""
        out: dict[str, Any] = {
            "type": self.type,
            "address_type": self.address_type.value,
            "cube_dim": self.cube_dim.as_tuple(),
            "mode": self.mode.value,
        }
        for k, v in self.info.fields:
            out[f"info.{k}"] = _debug(v, 0)
        return out

    def short(self) -> str:
        return f"{self.type.rsplit('::', 1)[-1]}#{self.hash8}"


class CubeKernel(Protocol):
    """What the runtime needs of a kernel (the frontend's generated kernel type implements it)."""

    def id(self) -> KernelId: ...

    def define(self) -> "KernelDefinition": ...

    @property
    def name(self) -> str: ...  # "Saxpy": the profile line's kernel column

    @property
    def profile_tag(self) -> str: ...  # "f32_daf77f4d": the profile line's last column


@dataclass(slots=True)
class BufferBinding:
    """One buffer argument as the server sees it: which memory, how many items, declared IO.

    `writable` is the signature's declaration (`Slice` False, `SliceMut` True); None means the
    launcher declared nothing, and the fallback chain then names the buffer as read and written.
    """

    handle: "Handle"
    items: int
    writable: bool | None
    name: str = ""
    # Tensor arguments only: shape and strides in items (packed into the info block's
    # dynamic_meta, see compiler/info.py). None for plain slices.
    shape: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None


class _IO(Protocol):
    @property
    def readable(self) -> bool: ...

    @property
    def writable(self) -> bool: ...


@dataclass(slots=True)
class Bindings:
    """A launch's runtime arguments: buffers in binding order, scalars grouped by type.

    `buffers_written(io)` / `buffers_read(io)` walk the seed's fallback chain: `io` is what the
    compiled IR does per buffer (`runtime/buffer_io.py`), None when unknown (the kernel did not
    compile); then the declared IO; then every buffer. See `buffer_io.py` for why it over-names.
    """

    buffers: list[BufferBinding]
    scalars: dict[str, list[Any]]

    def lengths(self) -> list[int]:
        return [b.items for b in self.buffers]

    def tensor_meta(self) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
        """Per buffer in binding order: (shape, strides) for tensors, None for slices — the
        third argument of `InfoLayout.pack` (every server must pass it)."""
        return [(b.shape, b.strides) if b.shape is not None and b.strides is not None else None
                for b in self.buffers]

    def written(self, io: "Sequence[_IO] | None" = None) -> list[BufferBinding]:
        out = []
        for i, b in enumerate(self.buffers):
            if io is not None and i < len(io):
                w = io[i].writable
            elif b.writable is not None:
                w = b.writable
            else:
                w = True
            if w:
                out.append(b)
        return out

    def read(self, io: "Sequence[_IO] | None" = None) -> list[BufferBinding]:
        out = []
        for i, b in enumerate(self.buffers):
            # a declared SliceMut is read-write: only the IR can tell a pure output apart
            r = io[i].readable if io is not None and i < len(io) else True
            if r:
                out.append(b)
        return out

    def buffers_written(self, io: "Sequence[_IO] | None" = None) -> list["Handle"]:
        return [b.handle for b in self.written(io)]

    def buffers_read(self, io: "Sequence[_IO] | None" = None) -> list["Handle"]:
        return [b.handle for b in self.read(io)]
