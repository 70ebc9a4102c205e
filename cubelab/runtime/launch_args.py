"""What one launch passes at run time: the cube count and the bound buffers and scalars.

None of this is part of the KernelId (`kernel_id.py`): launching the same kernel on another grid
or other data reuses the pipeline. `Bindings` also walks the seed's write-set fallback chain
(what the compiled IR writes → the declared IO → every buffer).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from cubelab.errors import hinted
from cubelab.runtime.handle import Handle

__all__ = ["Bindings", "BufferBinding", "CubeCount", "SharedPrepared"]


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
    x: int
    y: int
    z: int
    handle: Handle | None

    def __init__(self, x: int, y: int, z: int, handle: Handle | None = None) -> None:
        _set(self, "x", x)
        _set(self, "y", y)
        _set(self, "z", z)
        _set(self, "handle", handle)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(hinted("CubeCount is immutable (a launch argument is a value)",
                                    f"make a new one instead of setting `{name}`"))

    __delattr__ = __setattr__  # type: ignore[assignment]

    @staticmethod
    def Static(x: int, y: int = 1, z: int = 1) -> "CubeCount":  # noqa: N802 - the seed's name
        # Often built in the launch call, every launch: plain ints need one test (`type(v) is
        # int` excludes bool), and a count is an immutable value, so the same grid gets the same
        # object (the device thread then finds a loop's identical launches by identity).
        if type(x) is int and type(y) is int and type(z) is int and x >= 0 and y >= 0 and z >= 0:
            key = (x, y, z)
            count = _STATIC.get(key)
            if count is None:
                count = CubeCount(x, y, z)
                if len(_STATIC) < 1024:
                    _STATIC[key] = count
            return count
        for v in (x, y, z):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(hinted(f"CubeCount.Static needs three non-negative ints, got "
                                        f"{(x, y, z)}", "e.g. CubeCount.Static(4) or "
                                        "CubeCount.Static(4, 2, 1)"))
        return CubeCount(x, y, z)

    @staticmethod
    def Dynamic(handle: Handle) -> "CubeCount":  # noqa: N802 - the seed's name
        if not isinstance(handle, Handle):
            raise TypeError(hinted(f"CubeCount.Dynamic needs a Handle holding three u32, got "
                                   f"{type(handle).__name__}",
                                   "pass a buffer an earlier kernel wrote x, y, z into"))
        if handle.size < 12:
            raise ValueError(hinted(f"CubeCount.Dynamic: {handle!r} holds {handle.size} bytes",
                                    "a count is three u32 (x, y, z) = 12 bytes: allocate at "
                                    "least 12"))
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


_set = object.__setattr__
_STATIC: dict[tuple[int, int, int], CubeCount] = {}  # CubeCount.Static's values, by grid


@dataclass(slots=True)
class BufferBinding:
    """One buffer argument as the server sees it: which memory, how many items, declared IO.

    `writable` is the signature's declaration (`Slice` False, `SliceMut` True); None means the
    launcher declared nothing, and the fallback chain then names the buffer as read and written.
    """

    handle: Handle
    items: int
    writable: bool | None
    name: str = ""
    # Tensor arguments only: shape and strides in items (packed into the info block's
    # dynamic_meta, see compiler/info.py). None for plain slices.
    shape: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None


class SharedPrepared:
    """The device thread's `PreparedLaunch` of one buffers list, for every `Bindings` built on
    that list (`Bindings.family`). A cell, because the calling thread builds the bindings of a
    loop long before the device thread prepares the first of them. Only Bindings hold it (never
    a memo), so it keeps no handle alive that they do not."""

    __slots__ = ("prepared",)

    def __init__(self) -> None:
        self.prepared: Any = None


class _IO(Protocol):
    @property
    def readable(self) -> bool: ...

    @property
    def writable(self) -> bool: ...


@dataclass(slots=True, weakref_slot=True)
class Bindings:
    """A launch's runtime arguments: buffers in binding order, scalars grouped by type.

    `buffers_written(io)` / `buffers_read(io)` walk the seed's fallback chain: `io` is what the
    compiled IR does per buffer (`runtime/buffer_io.py`), None when unknown (the kernel did not
    compile); then the declared IO; then every buffer. See `buffer_io.py` for why it over-names.
    """

    buffers: list[BufferBinding]  # never mutated once built: launches may share the list
    scalars: dict[str, list[Any]]
    # The device thread's memo of what it derived from these bindings' *buffers* for one
    # pipeline (write and read sets, the backend's state: `server.PreparedLaunch`), so bindings
    # that share their `buffers` list may share it — a backend whose state also holds the
    # scalars says whose (the CUDA server's parameters keep the `scalars` object they packed).
    # Written and read on the device thread only. The calling thread hands the *same* Bindings
    # to every launch with equal arguments, and bindings sharing the buffers list (and these
    # memos) to one whose scalars changed (`frontend/launch_memo.py`), so a loop derives it
    # once. Never compared: two launches' bindings are never "the same" by value.
    prepared: Any = field(default=None, compare=False, repr=False)
    # The calling thread's memo, its counterpart: (client, handle.frees, large) once a client's
    # gates passed these bindings' handles (`Client.launch`), so a loop re-checks nothing until
    # a handle is freed.
    checked: Any = field(default=None, compare=False, repr=False)
    # The device thread's packed info block (scalars, lengths, tensor metadata) for one
    # pipeline: (entry, bytes) — what depends on the scalars (`runtime/wgpu/server.py`).
    packed: Any = field(default=None, compare=False, repr=False)
    # Bindings that share their buffers list (a loop whose scalars change) share this cell:
    # the first of them the device thread prepares leaves its `prepared` here for the others,
    # which the calling thread built before any was prepared (`SharedPrepared`).
    family: "SharedPrepared | None" = field(default=None, compare=False, repr=False)

    def scalar_key(self) -> tuple[Any, ...]:
        """The scalars as a cache key (the wgpu bind groups', the CPU runtime's uniform values):
        f32 values by their bits, because 0.0 == -0.0 (and they hash alike) while the kernel sees
        the sign, and NaN != NaN would never find its own entry."""
        return tuple([(k, *v) if k != "f32" else (k, struct.pack(f"<{len(v)}f", *v))
                      for k, v in self.scalars.items()])

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

    def buffers_written(self, io: "Sequence[_IO] | None" = None) -> list[Handle]:
        return [b.handle for b in self.written(io)]

    def buffers_read(self, io: "Sequence[_IO] | None" = None) -> list[Handle]:
        return [b.handle for b in self.read(io)]
