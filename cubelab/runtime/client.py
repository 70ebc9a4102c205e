"""`Client`: the calling thread's side of a device.

`launch` runs the calling-thread gates in the seed's order and hands the kernel to the device
thread, then returns: nothing is compiled, no IR is built here. The gates exist because after
the hand-off the device thread has no channel back to the caller:

1. a static count with a zero dimension returns at once (some drivers reject empty dispatches,
   and the device thread could not report it);
2. a handle owned by another device is refused at once (its memory coordinates mean nothing
   here: reading them there is not an error but garbage);
3. a launch over a device limit (units per cube, cubes per dimension) is refused the same way on
   every runtime;
4. profiling (the debug log, `client.profile`) makes the submit blocking and times it.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, Iterable

from cubelab.errors import LaunchError
from cubelab.runtime import events as ev
from cubelab.runtime.handle import Handle
from cubelab.runtime.kernel import Bindings, CubeCount, CubeKernel

if TYPE_CHECKING:
    from cubelab.runtime.device import Device
    from cubelab.runtime.properties import DeviceProperties

_launch_seq = itertools.count(1)


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    tobytes = getattr(data, "tobytes", None)  # numpy arrays
    if tobytes is not None:
        return bytes(tobytes())
    raise TypeError(
        f"create_from_slice expects bytes (e.g. f32.as_bytes(array)), got {type(data).__name__}"
    )


class Client:
    def __init__(self, device: "Device") -> None:
        self._device = device
        self._runner = device.runner
        self._server = device.server
        self.events: ev.EventBus = device.bus
        self._profile_depth = threading.local()

    # -- identity -----------------------------------------------------------------------------
    def name(self) -> str:
        return self._server.name

    def properties(self) -> "DeviceProperties":
        return self._server.properties

    @property
    def device(self) -> "Device":
        return self._device

    def __repr__(self) -> str:
        return f"Client({self.name()!r}, adapter={self.properties().adapter!r})"

    # -- memory -------------------------------------------------------------------------------
    def create_from_slice(self, data: Any) -> Handle:
        raw = _as_bytes(data)
        handle = Handle.new(len(raw), self._device.id)
        self._runner.call(self._server.create, handle, raw)
        if self.events.active:
            self.events.publish(ev.BufferCreated(handle.id, handle.size))
        return handle

    def empty(self, size: int) -> Handle:
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"empty(size) needs a byte count >= 0, got {size!r}")
        handle = Handle.new(size, self._device.id)
        self._runner.call(self._server.create, handle, None)
        if self.events.active:
            self.events.publish(ev.BufferCreated(handle.id, handle.size))
        return handle

    def read_one(self, handle: Handle) -> bytes:
        return self.read([handle])[0]

    def read(self, handles: Iterable[Handle]) -> list[bytes]:
        hs = list(handles)
        for h in hs:
            self._expect_local(h, "read")
        return self._runner.call(self._server.read, hs)  # type: ignore[no-any-return]

    def sync(self) -> None:
        self._runner.call(self._server.sync)

    def set_compilation_options(self, **options: Any) -> None:
        """Change compiler settings (e.g. `checked_io="cubecl-0.11.3"`); clears the cache."""
        self._runner.call(lambda: self._server.set_options(**options))

    def clear_cache(self) -> None:
        """Forget every compiled pipeline (the next launch of each KernelId compiles again)."""
        self._runner.call(self._server.clear_cache, "client.clear_cache()")

    # -- launch -------------------------------------------------------------------------------
    def _expect_local(self, handle: Handle, what: str) -> None:
        if not isinstance(handle, Handle):
            raise LaunchError(f"{what}: expected a Handle, got {type(handle).__name__}")
        if handle.device_id != self._device.id:
            raise LaunchError(
                f"{what}: {handle!r} belongs to device {handle.device_id}, not to this client's "
                f"device {self._device.id} ({self.name()}). Memory coordinates from another "
                "device mean nothing here; create the buffer with this client."
            )

    @property
    def profiling(self) -> bool:
        return self._device.debug_log is not None or getattr(self._profile_depth, "n", 0) > 0

    def launch(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings) -> None:
        if count.is_static and (count.x == 0 or count.y == 0 or count.z == 0):
            if self.events.active:
                self.events.publish(ev.LaunchGated(kernel.name, "zero-dimension cube count", 0))
            return
        for b in bindings.buffers:
            self._expect_local(b.handle, f"launch of `{kernel.name}`")
        props = self._server.properties
        if count.is_static:
            for axis, n in zip("xyz", count.as_tuple()):
                if n > props.max_cubes_per_dim:
                    raise LaunchError(
                        f"launch of `{kernel.name}`: cube count {axis}={n} exceeds the device "
                        f"limit of {props.max_cubes_per_dim} cubes per dimension; spread the "
                        "work over more dimensions or loop inside the kernel"
                    )
        seq = next(_launch_seq)
        kernel_id = kernel.id()
        if self.events.active:
            self.events.publish(ev.LaunchIssued(kernel.name, kernel_id, count.as_tuple(), seq))
        if self.profiling:
            self._runner.call(self._server.launch, kernel, count, bindings, seq, True)
        else:
            self._runner.submit(self._server.launch, kernel, count, bindings, seq, False)

    def profile(self) -> "_Profile":
        """`with client.profile(): ...` makes launches inside blocking and timed."""
        return _Profile(self)


class _Profile:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.samples: list[ev.ProfileSample] = []
        self._unsub: Any = None

    def __enter__(self) -> "_Profile":
        local = self.client._profile_depth
        local.n = getattr(local, "n", 0) + 1
        self._unsub = self.client.events.subscribe(self.samples.append, ev.ProfileSample)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client._profile_depth.n -= 1
        self._unsub()
