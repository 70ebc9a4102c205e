"""The KernelId — the pipeline cache key — and everything it is made of.

Names are the seed's: `KernelId`, `KernelSettings`, `ExecutionMode`, `AddressType`, `CubeDim`,
and the compile-time part each argument contributes (`BufferCompilationArg { inplace: None }`
for a buffer, `()` for a scalar). `CubeKernel` is what the runtime needs of a kernel object:
the frontend's generated kernel type implements it, and the runtime never imports the frontend
(it receives objects that can give their `id()` cheaply, on any thread, and `define()` their
IR, on the device thread, on a cache miss). What one launch passes at run time (the cube count,
buffers, scalars) is in `launch_args.py`: none of it is part of the id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from cubelab.compiler.pipeline import ExecutionMode

if TYPE_CHECKING:
    from cubelab.ir.core import KernelDefinition

__all__ = ["AddressType", "BUFFER_COMPILATION_ARG", "CubeDim", "CubeKernel", "DebugStruct",
           "ExecutionMode", "KernelId", "KernelSettings", "SCALAR_COMPILATION_ARG"]


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
        # Often built in the launch call, every launch: a CubeDim is an immutable value, so the
        # same one is handed out for the same x (the launch memo then finds it by identity).
        dim = _DIMS_1D.get(x)
        if dim is None:
            dim = CubeDim(int(x), 1, 1)
            if len(_DIMS_1D) < 1024:
                _DIMS_1D[x] = dim
        return dim

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


_DIMS_1D: dict[Any, CubeDim] = {}  # CubeDim.new_1d's values, by the x it was given


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
    # The alignment of the launch's buffer views when some view starts off the device's binding
    # alignment (0: every buffer is bound where it starts — the usual case): seed 001's cache
    # key is `(kernel_id, alignment)`, and such a kernel skips to each view's start itself
    # (frontend/launch.py). Printed by the debug log beside the KernelId, as the seed's pair.
    alignment: int = 0
    _hash8: str = field(default="", compare=False, repr=False)
    _hash: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        aligned = f"alignment: {self.alignment}" if self.alignment else ""
        digest = hashlib.sha256((self.debug() + self.origin + aligned).encode()).hexdigest()[:8]
        object.__setattr__(self, "_hash8", digest)
        object.__setattr__(self, "_hash", hash((self.type, self.address_type, self.cube_dim,
                                                 self.mode, self.info, self.origin,
                                                 self.alignment)))

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
        if self.alignment:
            out["alignment"] = f"{self.alignment} bytes"
        return out

    def short(self) -> str:
        aligned = f"@{self.alignment}" if self.alignment else ""
        return f"{self.type.rsplit('::', 1)[-1]}#{self.hash8}{aligned}"


class CubeKernel(Protocol):
    """What the runtime needs of a kernel (the frontend's generated kernel type implements it)."""

    def id(self) -> KernelId: ...

    def define(self, properties: Any = None) -> "KernelDefinition": ...
    # `properties`: the compiling device's `DeviceProperties` (what `device_properties()` reads
    # in a kernel); None outside a device (the inspector's preview: the defaults)

    @property
    def name(self) -> str: ...  # "Saxpy": the profile line's kernel column

    @property
    def profile_tag(self) -> str: ...  # "f32_daf77f4d": the profile line's last column
