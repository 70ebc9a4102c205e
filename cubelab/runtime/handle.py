"""Handles to device memory, and their lifetime.

A `Handle` names memory owned by one device's server; it is a token on the calling thread (its
bytes live on the device thread, in a slice of one of the device's pages, `memory_pool.py`).
`BufferArg.from_raw_parts(handle, length)` is CubeCL's `unsafe` constructor — here it is
checked: the length must fit in the handle, and the handle must not be released.

Lifetime. A handle is reference-counted by Python itself: every `BufferArg`, `TensorArg`,
binding of a queued launch, recorded capture and pending read holds the `Handle` object, so the
object dies only when the last of them is gone. Its `__del__` then does exactly one thing: it
posts "release #id" on the device's queue (`queue.SimpleQueue.put`, documented as safe to call
from `__del__` and weakref callbacks). The device thread decides when the slice really returns
to the pool — after any queued work that still reads it has been submitted (`server.py`) — and
drops the handle's failure record with it.

The trap that shaped this: `__del__` runs on whatever thread drops the last reference, or on
whichever thread the cyclic garbage collector happens to run — the device thread included, in
the middle of its own bookkeeping. So it touches no server state; it only posts a message,
which the device thread handles in order like any other task.

Explicit release: `client.free(handle)`, or `with client.empty(n) as h:` (released at the end of
the block). The handle is marked released on the calling thread at once, so any later use of it
(a launch, a read, a write, `BufferArg.from_raw_parts`, a graph replay) raises
`ReleasedHandleError` naming it. Ids are never reused, so the device thread cannot mistake a
released handle for the buffer that now lives in its old slice either.
"""

from __future__ import annotations

import itertools
import numbers
import threading
from typing import Any, Callable, Sequence

from cubelab.errors import ReleasedHandleError, hinted

_ids = itertools.count(1)

# How many handles were released explicitly (`_free`) so far, process-wide. A launch whose
# handles were all checked when this was N cannot hold a released handle while it is still N
# (`Client.launch` keeps the count on the bindings it checked): a handle is marked released
# before the count moves, and only under the lock, so no two frees can leave it unchanged.
frees = 0
_frees_lock = threading.Lock()

# Every cubelab element type is 4 bytes wide (f32, i32, u32; bool buffers are refused).
ELEM_BYTES = 4


class Handle:
    """Device memory: `id` (never reused), `size` in bytes, the owning device's id; `offset`:
    where a view (`offset_start` / `offset_end`) starts in its buffer's memory (0 for a
    buffer itself)."""

    # weak-referenceable: the frontend's launch memo keeps handles weakly (never alive)
    __slots__ = ("id", "size", "device_id", "released", "_release", "offset", "__weakref__")

    def __init__(self, id: int, size: int, device_id: int) -> None:  # noqa: A002
        self.id = id
        self.size = size
        self.device_id = device_id
        self.released = False
        self.offset = 0
        # set by the client once the device holds memory for it: posts "release #id"
        self._release: Callable[..., Any] | None = None

    @staticmethod
    def new(size: int, device_id: int) -> "Handle":
        return Handle(next(_ids), size, device_id)

    def offset_start(self, nbytes: int) -> "HandleView":
        """A view of this memory that starts `nbytes` later (CubeCL's `Handle::offset_start`):
        the same buffer — the same id, failure state, stream and lifetime — seen from a later
        byte. `nbytes` is a multiple of 4 (every element type is 4 bytes)."""
        return HandleView(self, self.offset + _view_bytes(nbytes, self.size, "offset_start"),
                          self.size - nbytes)

    def offset_end(self, nbytes: int) -> "HandleView":
        """A view of this memory that ends `nbytes` earlier (CubeCL's `Handle::offset_end`)."""
        return HandleView(self, self.offset, self.size - _view_bytes(nbytes, self.size,
                                                                     "offset_end"))

    def _free(self) -> None:
        """Release now (client.free / the end of a `with` block); see the module docstring."""
        if self.released:
            raise ReleasedHandleError(hinted(f"{self!r} was already released",
                                             "free a handle once (or let `with` free it)"))
        global frees
        release, self._release = self._release, None
        self.released = True
        with _frees_lock:
            frees += 1
        if release is not None:
            release(self.id, "freed")

    def __enter__(self) -> "Handle":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.released:
            self._free()

    def __del__(self) -> None:
        release = self._release
        if release is not None:
            self._release = None
            try:
                release(self.id, "dropped")
            except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to tell
                pass

    def __repr__(self) -> str:
        gone = ", released" if self.released else ""
        return f"Handle(#{self.id}, {self.size} B, device {self.device_id}{gone})"


def _view_bytes(nbytes: Any, size: int, what: str) -> int:
    if not isinstance(nbytes, numbers.Integral) or isinstance(nbytes, bool) or nbytes < 0 \
            or nbytes % ELEM_BYTES or nbytes > size:
        raise ValueError(hinted(f"{what}({nbytes!r}) is not a byte offset into the handle",
                                f"pass a byte count that is a multiple of {ELEM_BYTES} and at "
                                f"most the handle's {size} bytes"))
    return int(nbytes)


class HandleView(Handle):
    """A view of another handle's memory (`offset_start` / `offset_end`): it names the same
    buffer — everything the runtime keeps per buffer (failure state, the stream that last
    touched it, its lifetime) is the buffer's — and differs only in where it starts (`offset`,
    bytes into the buffer's memory) and its `size`. It keeps the buffer alive; it cannot be
    freed itself, and it is released when the buffer is.

    A launch binds a view where its memory is, so a view whose offset is not a multiple of the
    device's binding alignment (`properties().memory_alignment`) compiles a kernel of its own:
    the alignment is part of the KernelId (seed 001's `(kernel_id, alignment)` cache key; see
    `frontend/launch.py`)."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: Handle, offset: int, size: int) -> None:  # noqa: D107
        root = buffer._buffer if isinstance(buffer, HandleView) else buffer
        object.__setattr__(self, "_buffer", root)
        Handle.id.__set__(self, root.id)  # type: ignore[attr-defined]
        Handle.size.__set__(self, size)  # type: ignore[attr-defined]
        Handle.device_id.__set__(self, root.device_id)  # type: ignore[attr-defined]
        Handle.offset.__set__(self, offset)  # type: ignore[attr-defined]
        Handle._release.__set__(self, None)  # type: ignore[attr-defined]

    @property  # type: ignore[override]
    def released(self) -> bool:
        return self._buffer.released

    def _free(self) -> None:
        raise ReleasedHandleError(hinted(
            f"{self!r} is a view of {self._buffer!r}", "free the buffer itself (client.free of "
            "the handle the view was made from)"))

    def __repr__(self) -> str:
        gone = ", released" if self.released else ""
        return (f"Handle(#{self.id} [{self.offset}:{self.offset + self.size}], {self.size} B, "
                f"device {self.device_id}{gone})")


def binding_start(handle: Handle, alignment: int) -> int:
    """Where a launch binds `handle` in its buffer's memory: its offset rounded down to the
    device's binding alignment (wgpu binds a storage buffer only at such offsets). A launch
    compiled for views of lower alignment skips the `handle.offset - binding_start` bytes in
    the kernel (`frontend/launch.py`); for every other launch the two are equal."""
    return handle.offset - handle.offset % alignment


def refuse_released(handle: Handle, what: str) -> None:
    """Raise the error every released-handle use gets (one wording, one place)."""
    raise ReleasedHandleError(hinted(
        f"{what}: {handle!r} was released (client.free or the end of its `with` block); its "
        "memory may already belong to another buffer, so nothing was read, written or "
        "launched", "keep the handle alive until you are done with it, or allocate a new one"))


class _Frozen:
    """Launch arguments are values: set once, in the constructor. A launch whose arguments are
    the very same objects as the previous one reuses that launch's checked bindings
    (`frontend/launch.py`), which is only sound if an argument cannot change under it.
    Weak-referenceable, so that reuse never keeps an argument (and its handle) alive."""

    __slots__ = ("__weakref__",)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(hinted(f"{type(self).__name__} is immutable (a launch argument "
                                    "is a value)", f"make a new one instead of setting `{name}`"))

    __delattr__ = __setattr__  # type: ignore[assignment]


_set = object.__setattr__
_new = object.__new__


class BufferArg(_Frozen):
    """A buffer launch argument: a handle and how many scalars of it the kernel may see."""

    __slots__ = ("handle", "length")
    handle: Handle
    length: int

    def __init__(self, handle: Handle, length: int) -> None:
        _set(self, "handle", handle)
        _set(self, "length", length)

    @staticmethod
    def from_raw_parts(handle: Handle, length: int) -> "BufferArg":
        # Often called in the launch call itself, every launch: the common case in one test,
        # and the object built without an `__init__` frame; `_checked_raw_parts` explains a no.
        if (type(handle) is Handle and type(length) is int and 0 <= length
                and length * ELEM_BYTES <= handle.size and not handle.released):
            arg = _new(BufferArg)
            _set(arg, "handle", handle)
            _set(arg, "length", length)
            return arg
        return BufferArg._checked_raw_parts(handle, length)

    @staticmethod
    def _checked_raw_parts(handle: Handle, length: int) -> "BufferArg":
        if not isinstance(handle, Handle):
            raise TypeError(hinted(
                f"BufferArg.from_raw_parts expects a Handle, got {type(handle).__name__}",
                "make one with client.create_from_slice(...) or client.empty(n)"))
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise ValueError(hinted(f"BufferArg length must be a non-negative int, got "
                                    f"{length!r}", "pass the number of items the kernel sees"))
        if handle.released:
            refuse_released(handle, "BufferArg.from_raw_parts")
        if length * ELEM_BYTES > handle.size:
            raise ValueError(hinted(
                f"BufferArg.from_raw_parts: length {length} needs {length * ELEM_BYTES} bytes but "
                f"{handle!r} holds {handle.size} bytes ({handle.size // ELEM_BYTES} elements)",
                "pass the number of scalars the buffer really holds"))
        return BufferArg(handle, length)

    def __repr__(self) -> str:
        return f"BufferArg({self.handle!r}, len={self.length})"


class ScalarArg(_Frozen):
    """A scalar launch argument (plain Python numbers are accepted too)."""

    __slots__ = ("value",)
    value: int | float | bool

    def __init__(self, value: int | float | bool) -> None:
        _set(self, "value", value)

    def __repr__(self) -> str:
        return f"ScalarArg({self.value!r})"


class TensorArg(_Frozen):
    """A tensor launch argument: a handle, its shape and its strides, in items of the kernel's
    declared item type (CubeCL's `TensorArg::from_raw_parts(handle, strides, shape,
    vectorization)` — cubelab takes shape first, as numpy does). The kernel sees `t.shape(d)`,
    `t.stride(d)`, `t.rank()`, `t.len()` (the shape's product, CubeCL's logical length) and
    `t.buffer_len()` (the items the handle holds); indexing is linear, so a transposed view is
    the same bytes with swapped strides.

    What is accepted is what CubeCL accepts: any rank (0 included: `len()` is 1), zero-size
    dimensions, stride 0 (a broadcast), strides in any order, and a shape whose extent — the
    last item it reaches, `sum((d - 1) * stride)` — lies past the end of the handle. Only what
    can be checked is: the ranks match, every entry is a non-negative integer that fits a u32
    (the info block's words), the handle is alive. The extent is checked at launch, where the
    vector width is known: a checked `launch` refuses a tensor that reaches past its buffer with
    a `LaunchError`; `launch_unchecked` takes it (CubeCL's `unsafe` contract), and a read past
    the end is then what the runtime does with any out-of-bounds access (`docs/cpu_runtime.md`,
    out-of-bounds modes: 0 on wgpu). Bounds clamps always use the handle's length, never the
    shape, so no metadata can move a clamp past the buffer."""

    __slots__ = ("handle", "shape", "strides", "length", "extent")
    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    length: int
    extent: int

    def __init__(self, handle: Handle, shape: tuple[int, ...], strides: tuple[int, ...],
                 length: int) -> None:
        _set(self, "handle", handle)
        _set(self, "shape", shape)
        _set(self, "strides", strides)
        _set(self, "length", length)
        # items (of the declared item type) the shape reaches: 0 when a dimension is empty
        _set(self, "extent", 0 if not all(shape) else
             1 + sum((d - 1) * st for d, st in zip(shape, strides)))

    @staticmethod
    def from_raw_parts(handle: Handle, shape: "Sequence[int]",
                       strides: "Sequence[int]") -> "TensorArg":
        if not isinstance(handle, Handle):
            raise TypeError(hinted(
                f"TensorArg.from_raw_parts expects a Handle, got {type(handle).__name__}",
                "make one with client.create_from_slice(...) or client.empty(n)"))
        if handle.released:
            refuse_released(handle, "TensorArg.from_raw_parts")
        shape_t, strides_t = _dims("shape", shape), _dims("strides", strides)
        if len(shape_t) != len(strides_t):
            raise ValueError(hinted(f"TensorArg.from_raw_parts: shape {shape_t} has rank "
                                    f"{len(shape_t)} but strides {strides_t} has rank "
                                    f"{len(strides_t)}", "give one stride per dimension"))
        return TensorArg(handle, shape_t, strides_t, handle.size // ELEM_BYTES)

    def __repr__(self) -> str:
        return f"TensorArg({self.handle!r}, shape={self.shape}, strides={self.strides})"


def _dims(what: str, dims: "Sequence[int]") -> tuple[int, ...]:
    """A shape or strides as a tuple of ints, each a non-negative integer below 2**32."""
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise TypeError(hinted(f"TensorArg.from_raw_parts: {what} must be a sequence of ints, "
                               f"got {dims!r}", "pass a tuple, e.g. (4, 4)"))
    out = tuple(dims)
    for d in out:
        if not isinstance(d, numbers.Integral) or isinstance(d, bool):
            raise TypeError(hinted(f"TensorArg.from_raw_parts: {what} {out} holds {d!r}, which "
                                   "is not an int", "give whole numbers of items"))
        if not 0 <= d < 2**32:
            raise ValueError(hinted(f"TensorArg.from_raw_parts: {what} {out} holds {d}",
                                    "entries are u32 in the kernel (0 .. 4294967295)"))
    return tuple(int(d) for d in out)
