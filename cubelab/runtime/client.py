"""`Client`: the calling thread's side of a device — the first of a launch's two hand-offs.

`launch` runs the calling-thread gates in the seed's order, hands the kernel to the device
thread and returns: nothing is compiled and no IR is built here. The hand-off is irreversible,
so whatever only this thread knows is decided before it:

1. a static count with a zero dimension returns at once — nothing compiled, claimed or
   dispatched (some drivers reject empty dispatches, and the device thread has no channel to
   report it);
2. a handle owned by another device is refused at once, the dynamic count's included (its memory
   coordinates mean nothing here: reading them there is not an error but garbage); so is a
   released one. The answer is kept on the `Bindings` (`Bindings.checked`) with the count of
   handles freed so far (`handle.frees`): a loop that hands the same bindings over again (the
   frontend's repeat memo) re-checks nothing until some handle is freed;
3. the `LaunchMode` (Execute or Skip) is decided from the process-wide dry-run depth and this
   thread's RealRun depth (`dry_run.py`), and the stream from this thread (`streams.py`);
4. profiling (the debug log, `client.profile()`) makes the submit blocking and times it;
5. a large launch (the views it binds hold `LARGE_LAUNCH_BYTES` or more) on a GPU backend
   (`hands_off_large`: wgpu, CUDA) waits until the device thread has submitted it. The trap it
   exists for: `SimpleQueue.put` keeps the GIL, so a loop of launches ran on the calling thread
   for up to a switch interval while the device thread could not encode, and the GPU sat idle until the loop stopped or synced — on an
   H200, 20 saxpy launches on 64 M floats took 4.8 ms instead of raw wgpu-py's 4.3. A launch that
   large keeps the GPU busy far longer than the round trip takes, so the wait costs nothing.

Device limits (units per cube, cubes per dimension) are *not* gates: like every failure the
device thread finds, they land on the launch's written buffers and surface at `read`, `check`
or `sync_buffers`. `sync()` reports device faults only.
"""

from __future__ import annotations

import functools
import gc
import itertools
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from cubelab.errors import LaunchError, ResourceError, api_boundary, hinted
from cubelab.ir import plugins
from cubelab.runtime import dry_run as _dry_run
from cubelab.runtime import events as ev
from cubelab.runtime import handle as _handle
from cubelab.runtime.capture import Graph
from cubelab.runtime.dry_run import LaunchMode, launch_mode
from cubelab.runtime.handle import ELEM_BYTES, Handle, refuse_released
from cubelab.runtime.kernel_id import CubeKernel
from cubelab.runtime.launch_args import Bindings, CubeCount
from cubelab.runtime.properties import allocation_refusal
from cubelab.runtime.streams import current_stream

if TYPE_CHECKING:
    from cubelab.compiler.options import CompilationOptions
    from cubelab.runtime.device import Device
    from cubelab.runtime.memory_pool import MemoryUsage
    from cubelab.runtime.properties import DeviceProperties

_launch_seq = itertools.count(1)
_EXECUTE = LaunchMode.Execute

# A launch whose views hold at least this many bytes is submitted before `launch` returns (gate 5
# in the module's docstring). Measured on an H200 (bandwidth.py, benchmarks/README.md 17:20): the
# round trip plus a submit per launch cost more than the kernel below this — a saxpy binding 32 /
# 128 MiB read 35–65 % / 53–70 % of raw wgpu-py at 16 MiB, 202–232 % / 99–100 % at 256 MiB — while
# at 512 MiB and 2 GiB (the GIL trap's sizes) both read 98–100 %.
LARGE_LAUNCH_BYTES = 256 << 20
_ITEM_BYTES_MAX = 4 * ELEM_BYTES  # a binding's item is a scalar or a vector of up to 4


# numpy's kind letter -> the cubelab type whose `as_bytes` converts an array of that kind
_AS_BYTES_FOR_KIND = {"f": ("f32", "float32"), "i": ("i32", "int32"), "u": ("u32", "uint32"),
                      "b": ("bool_", "uint32")}


def _as_bytes(data: Any) -> bytes:
    """The raw bytes of `data`. The trap: numpy's defaults are float64/int64, whose 8-byte values
    a kernel would read as pairs of unrelated 4-byte ones — so an array whose elements are not
    4-byte numbers is refused with the conversion to use (every kernel type is a 4-byte number).
    A uint8 array is taken as what it is: raw bytes. Arrays of what no kernel type holds —
    complex, object, strings (a unicode character is 4 bytes too), datetimes, records — are
    refused whatever their width: their bytes mean nothing to a kernel."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    dtype = getattr(data, "dtype", None)
    if dtype is not None and not _kernel_bytes(dtype):
        raise TypeError(_refusal(dtype))  # hint: _refusal's
    tobytes = getattr(data, "tobytes", None)  # numpy arrays
    if tobytes is not None:
        return bytes(tobytes())
    raise TypeError(
        f"create_from_slice expects bytes (e.g. f32.as_bytes(array)), got "
        f"{type(data).__name__}\n  hint: build a numpy array and convert it with f32.as_bytes / "
        "i32.as_bytes / u32.as_bytes (from cubelab.prelude)"
    )


def _kernel_bytes(dtype: Any) -> bool:
    """Whether an array of `dtype` holds what a kernel reads: 4-byte numbers, or raw bytes."""
    kind, width = getattr(dtype, "kind", ""), getattr(dtype, "itemsize", 0)
    return (kind in "fiu" and width == 4) or (kind == "u" and width == 1)


def _refusal(dtype: Any) -> str:
    if dtype.kind in _AS_BYTES_FOR_KIND:
        kind, numpy_name = _AS_BYTES_FOR_KIND[dtype.kind]
        return (f"a {dtype.name} array holds {dtype.itemsize}-byte values, but every kernel "
                f"type is 4 bytes wide: its bytes would be read as garbage\n  hint: convert it "
                f"with `{kind}.as_bytes(array)` (from cubelab.prelude) or "
                f"`array.astype(np.{numpy_name})`")
    what = {"c": "complex numbers", "O": "Python objects (pointers)", "U": "unicode strings",
            "S": "byte strings", "M": "datetimes", "m": "time deltas",
            "V": "records"}.get(dtype.kind, "values no kernel type holds")
    hint = {"c": "put the real and imaginary parts in two f32 buffers "
                 "(`f32.as_bytes(z.real)`, `f32.as_bytes(z.imag)`)",
            "O": "make a numeric array first: `f32.as_bytes(np.asarray(values, np.float32))`",
            "M": "convert to seconds first: `f32.as_bytes((t - t[0]) / np.timedelta64(1, 's'))`",
            "m": "convert to seconds first: `f32.as_bytes(d / np.timedelta64(1, 's'))`"
            }.get(dtype.kind, "convert it to numbers with f32.as_bytes / i32.as_bytes / "
                              "u32.as_bytes, or `array.view(np.uint8)` if you really mean its "
                              "raw bytes")
    return (f"a {dtype} array holds {what}, which no kernel type holds: its bytes would be "
            f"read as garbage\n  hint: {hint}")


class Client:
    def __init__(self, device: "Device") -> None:
        self._device = device
        self._runner = device.runner
        self._server = device.server
        self.events: ev.EventBus = device.bus
        self._profile_depth = threading.local()
        # open `profile()` scopes on all threads (their depth per thread is `_profile_depth`)
        self._timed = 0
        self._timed_lock = threading.Lock()
        self._pin = threading.local()  # set_stream: per thread, since one Client serves all
        self._pins = False  # whether any thread ever pinned one (else `launch` skips the look)
        # what a handle's __del__ / free calls: post "release #id" on the device's queue
        self._post_release = functools.partial(self._runner.submit, self._server.release)
        # the one `launch` object the runner recognises when it gathers runs (runner.py)
        self._server_launch = self._runner.launch or self._server.launch
        self._put = self._runner.put
        # a plug-in op's new spelling changes what a KernelId compiles to: forget the pipelines
        # (held weakly: the subscription does not keep this client alive)
        plugins.subscribe(self._plugin_op_changed)
        # `watch_launches`: tools that see each executed launch before it is queued (empty, so
        # one falsy check per launch, unless `%cubelab oob on` or the like is watching)
        self._watchers: list[Callable[[Any, CubeCount, Bindings], None]] = []

    def _plugin_op_changed(self, reason: str) -> None:
        """A plug-in op (`ir/plugins.py`) was added, changed or removed: the pipelines compiled
        before were built from another definition of the IR, so none may be reused."""
        self._runner.call(self._server.clear_cache, reason)

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

    # -- streams ------------------------------------------------------------------------------
    def stream_id(self) -> int:
        """The stream this thread's launches join: `set_stream`'s pin, else `current_stream()`."""
        pinned = getattr(self._pin, "id", None)
        return pinned if pinned is not None else current_stream()

    def set_stream(self, stream_id: int | None) -> None:
        """Pin this thread's launches on this client to `stream_id` (None unpins)."""
        if stream_id is not None and (not isinstance(stream_id, int) or stream_id < 1):
            raise ValueError(hinted(f"a StreamId is a positive int, got {stream_id!r}",
                                    "pass 1, 2, ... (or None to unpin)"))
        self._pin.id = stream_id
        if stream_id is not None:
            self._pins = True  # from now on `launch` asks the pin (it never goes back)

    def set_max_tasks(self, n: int) -> None:
        """A stream's queue is flushed when it holds `n` tasks (default 64)."""
        self._runner.call(setattr, self._server, "max_tasks", n)

    @property
    def max_tasks(self) -> int:
        return int(self._server.max_tasks)

    # -- memory -------------------------------------------------------------------------------
    def _alloc(self, handle: Handle, raw: bytes | None, zero: bool = False) -> Handle:
        call, server, stream = self._runner.call, self._server, self.stream_id()
        too_big = allocation_refusal(handle.size, server.properties, server.name)
        if too_big is not None:  # no collection can change this one: say it at once
            raise ResourceError(too_big)  # hint: allocation_refusal's
        # Dropping the handle releases its memory from before the device allocates it: a
        # Ctrl-C while this thread waits for the device leaves the allocation to finish there,
        # and the release then queued behind it gives the memory back. (Releasing an id the
        # device never allocated, after a refusal, does nothing.)
        handle._release = self._post_release
        try:
            try:
                call(server.alloc, handle, raw, stream, zero)
            except ResourceError:
                # Handles caught in reference cycles die only when the collector runs (CubeCL's
                # handles die at the end of their scope): collect, let the releases that posts
                # reach the pool, give unused pages back, and try once more.
                gc.collect()
                call(server.memory_cleanup)
                call(server.alloc, handle, raw, stream, zero)
            if self.events.active:
                self.events.publish(ev.BufferCreated(handle.id, handle.size))
        except BaseException:
            # The caller never gets the handle; a traceback kept for `%debug` would hold it
            # (and its memory) until the next error: release it now, not when the frame goes.
            if not handle.released:
                handle._free()
            raw = None  # nor the data
            raise
        return handle

    @api_boundary
    def create_from_slice(self, data: Any) -> Handle:
        """A new buffer holding `data` (bytes, or anything with `.tobytes()`)."""
        raw = _as_bytes(data)
        try:
            return self._alloc(Handle.new(len(raw), self._device.id), raw)
        finally:
            del raw  # an interrupted call's traceback keeps this frame, not a copy of the data

    @api_boundary
    def empty(self, size: int) -> Handle:
        """A new buffer of `size` bytes whose contents are unspecified: memory reused from the
        pool keeps whatever its last owner wrote (CubeCL's `empty`). Use `zeros` for zeroes."""
        if not isinstance(size, int) or size < 0:
            raise ValueError(hinted(f"empty(size) needs a byte count >= 0, got {size!r}",
                                    "pass the size in bytes: 4 * items for f32/i32/u32"))
        return self._alloc(Handle.new(size, self._device.id), None)

    def zeros(self, size: int) -> Handle:
        """A new buffer of `size` bytes, all zero."""
        if not isinstance(size, int) or size < 0:
            raise ValueError(hinted(f"zeros(size) needs a byte count >= 0, got {size!r}",
                                    "pass the size in bytes: 4 * items for f32/i32/u32"))
        return self._alloc(Handle.new(size, self._device.id), None, zero=True)

    def free(self, handle: Handle) -> None:
        """Release `handle` now instead of when its last reference goes (`del` does that).
        Any later use of it raises `ReleasedHandleError`; work already queued with it still
        runs, and its memory returns to the pool only after that work is submitted.
        `with client.empty(n) as h:` frees `h` at the end of the block."""
        self._expect_local(handle, "free")
        handle._free()

    def memory_usage(self) -> "MemoryUsage":
        """What the device's memory pools hold: `bytes_in_use`, `bytes_reserved`, `pages` with
        their slices, counters (see `runtime/memory_pool.py`)."""
        return self._runner.call(self._server.memory_usage)  # type: ignore[no-any-return]

    def memory_cleanup(self) -> "MemoryUsage":
        """Give every page that holds no live buffer back to the driver / the OS; returns the
        usage afterwards."""
        return self._runner.call(self._server.memory_cleanup)  # type: ignore[no-any-return]

    @api_boundary
    def write(self, handle: Handle, data: Any) -> None:
        """Host write into an existing buffer (the data becomes valid: any failure is gone)."""
        self._expect_local(handle, "write")
        raw = _as_bytes(data)
        if len(raw) > handle.size:
            raise ValueError(hinted(f"write: {len(raw)} bytes do not fit in {handle!r}",
                                    "write at most the handle's size, or allocate a larger one"))
        self._runner.call(self._server.host_write, handle, raw, self.stream_id())

    @api_boundary
    def read_one(self, handle: Handle) -> bytes:
        """The bytes of `handle`; raises `BufferFailure` (root cause, kernel, skipped launches)
        if a failed launch should have written it."""
        return self.read([handle])[0]

    @api_boundary
    def read(self, handles: Iterable[Handle]) -> list[bytes]:
        hs = list(handles)
        for h in hs:
            self._expect_local(h, "read")
        return self._runner.call(  # type: ignore[no-any-return]
            self._server.read, hs, self.stream_id())

    @api_boundary
    def check(self, handles: Iterable[Handle]) -> None:
        """A read check without the read: raise the `BufferFailure` a buffer carries, if any.
        Sees every failure found when the launch reached the device thread (compile errors,
        skips, refusals); it does not wait for the GPU."""
        hs = list(handles)
        for h in hs:
            self._expect_local(h, "check")
        self._runner.call(self._server.check, hs)

    @api_boundary
    def sync_buffers(self, handles: Iterable[Handle]) -> None:
        """Barrier, then answer: wait for the work touching `handles`, then `check` them."""
        hs = list(handles)
        for h in hs:
            self._expect_local(h, "sync_buffers")
        self._runner.call(self._server.sync_buffers, hs, self.stream_id())

    def buffer_state(self, handle: Handle) -> str:
        """"clean", "claimed" or "failed" (for views; `check` says why)."""
        self._expect_local(handle, "buffer_state")
        return self._runner.call(self._server.buffer_state, [handle])[0]  # type: ignore[no-any-return]

    @api_boundary
    def sync(self) -> None:
        """Wait for all submitted work. Reports device faults only: a launch's failure lives on
        the buffers it did not write (`read`, `check`, `sync_buffers` report those)."""
        self._runner.call(self._server.device_sync, self.stream_id())

    @api_boundary
    def set_compilation_options(self, **options: Any) -> None:
        """Change compiler settings: `checked_io="fixed"` (the clamping rule, instead of the
        seed's default "cubecl-0.11.3"), `loop_budget=N` (or None) for the checked launches'
        loop guard, `extra_passes=[MyPass(), ...]` (passes run after the built-in ones,
        `cubelab.compiler.Pass`). Each is checked here, at once: an unknown name or a value
        outside an option's allowed set is a ValueError naming the allowed values, and nothing
        changes. Clears the pipeline cache when anything changed (`compiler/options.py`)."""
        new = self.compilation_options().replace(**options)
        self._runner.call(self._server.set_options, new)

    def compilation_options(self) -> "CompilationOptions":
        """The options this client's launches compile with (frozen: change them through
        `set_compilation_options`). Every inspect view of this client's launches uses them."""
        return self._server.options  # type: ignore[no-any-return]

    def clear_cache(self) -> None:
        """Forget every compiled pipeline (the next launch of each KernelId compiles again)."""
        self._runner.call(self._server.clear_cache, "client.clear_cache()")

    # -- graph capture ------------------------------------------------------------------------
    def start_capture(self) -> None:
        """Open a recording window on this thread's stream (see `runtime/capture.py`)."""
        self._runner.call(self._server.start_capture, self.stream_id())

    def stop_capture(self) -> Graph:
        """Seal the window into a `Graph` (with what the window rejected on the spot, and the
        buffers it allocated); raises `CaptureError` listing what doomed it (a host write, a
        launch that failed to compile or was skipped — see `runtime/capture.py`)."""
        sid = self.stream_id()
        cap = self._runner.call(self._server.stop_capture, sid)
        return Graph(self, cap.records, sid, tuple(cap.rejected), tuple(cap.allocations))

    def _replay(self, graph: Graph) -> None:
        for h in graph.handles:
            if h.released:
                refuse_released(h, f"replay of {graph!r}")
        if launch_mode().is_skipped:
            return
        seq0 = next(_launch_seq)
        for _ in range(len(graph.records) - 1):
            next(_launch_seq)
        self._runner.submit(self._server.replay, graph.records, graph.stream, seq0)

    # -- launch -------------------------------------------------------------------------------
    def _expect_local(self, handle: Handle, what: str) -> None:
        if not isinstance(handle, Handle):
            raise LaunchError(hinted(f"{what}: expected a Handle, got {type(handle).__name__}",
                                     "pass what client.create_from_slice / empty returned"))
        if handle.device_id != self._device.id:
            raise LaunchError(hinted(
                f"{what}: {handle!r} belongs to device {handle.device_id}, not to this client's "
                f"device {self._device.id} ({self.name()}). Memory coordinates from another "
                "device mean nothing here", "create the buffer with this client"))
        if handle.released:
            refuse_released(handle, what)

    @property
    def profiling(self) -> bool:
        """Whether this thread's launches are blocking and timed (`launch` inlines this)."""
        return self._device.debug_log is not None or getattr(self._profile_depth, "n", 0) > 0

    def launch(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings) -> None:
        # (Every line here runs on every launch: properties and helpers are inlined, and what
        # does not change between launches of the same `Bindings` is kept on them.)
        # Gate 1: zero-dimension static counts never leave this thread.
        if count.handle is None:
            if not (count.x and count.y and count.z):
                if self.events.active:
                    self.events.publish(ev.LaunchGated(kernel.name, "zero-dimension cube count",
                                                       0))
                return
        else:
            self._expect_local(count.handle, f"launch of `{kernel.name}` (dynamic cube count)")
        # Gate 2: foreign and released handles are refused here, where the caller can still be
        # told. A handle's device never changes, and none of these was released if no handle
        # was freed since this client checked them (`handle.frees`): then nothing is re-read.
        checked = bindings.checked
        if checked is not None and checked[0] is self and checked[1] == _handle.frees:
            large = checked[2]
        else:
            large = self._check_bindings(kernel, bindings)
        # Gate 3: only this thread knows whether this launch is a dry run or a measurement.
        mode = _EXECUTE if _dry_run._dry_depth == 0 else launch_mode()
        if self._watchers and mode is _EXECUTE:
            for watch in tuple(self._watchers):
                watch(kernel, count, bindings)
        if self._pins:  # some thread pinned a stream on this client: is it this one?
            stream = getattr(self._pin, "id", None) or current_stream()
        else:
            stream = current_stream()
        seq = next(_launch_seq)
        if self.events.active and self.events.wants(ev.LaunchIssued):
            self.events.publish(ev.LaunchIssued(kernel.name, kernel.id(), count.as_tuple(), seq,
                                                mode.value, stream))
        # Gate 4: profiling waits for the device thread and brings the timing back. (`_timed`
        # counts the open profile scopes of every thread: the common case reads one int.)
        if self._device.debug_log is not None or (
                self._timed and getattr(self._profile_depth, "n", 0) > 0):
            self._runner.call(self._refuse_profile, stream)
            self._runner.call(self._server.launch, kernel, count, bindings, seq, True, mode,
                              stream)
            return
        self._put((self._server_launch, (kernel, count, bindings, seq, False, mode, stream),
                   None))
        # Gate 5: a large launch is on the GPU before this thread queues the next one.
        if large:
            self._runner.call(self._server.scheduler.flush, stream, "large")

    def watch_launches(self, watch: Callable[[Any, CubeCount, Bindings], None]
                       ) -> Callable[[], None]:
        """Call `watch(kernel, count, bindings)` on the calling thread for every launch that
        will execute, after the gates and before it is queued — so the watcher sees the buffers
        as the launch will find them (`%cubelab oob on` re-runs each launch on the CPU runtime
        from copies). Returns the function that stops watching. A watcher's own launches on
        this client are watched too: it must guard against its own re-entry."""
        self._watchers.append(watch)

        def stop() -> None:
            if watch in self._watchers:
                self._watchers.remove(watch)

        return stop

    def _check_bindings(self, kernel: CubeKernel, bindings: Bindings) -> bool:
        """Gate 2 in full for bindings this client has not checked yet; keeps the answer on
        them (`Bindings.checked`). Returns whether the launch is large (gate 5)."""
        frees = _handle.frees  # read before the handles: a free after this read moves it
        dev = self._device.id
        size = 0
        for b in bindings.buffers:
            h = b.handle
            if not isinstance(h, Handle) or h.device_id != dev or h.released:  # message if needed
                self._expect_local(h, f"launch of `{kernel.name}`")
            # what the launch binds: a slice its declared items (each at most a vec4 of 4-byte
            # scalars), a tensor its whole handle — not the handle behind a small view of it
            size += h.size if b.shape is not None else min(h.size, b.items * _ITEM_BYTES_MAX)
        large = size >= LARGE_LAUNCH_BYTES and self._server.hands_off_large
        bindings.checked = (self, frees, large)
        return large

    def _refuse_profile(self, stream: int) -> None:
        cap = self._server.captures.get(stream)
        if cap is not None:  # the launch is handed back unrecorded; the capture goes on
            raise cap.reject("profile (client.profile or the debug log)")

    def profile(self) -> "_Profile":
        """`with client.profile(): ...` makes launches inside blocking and timed."""
        return _Profile(self)


class _Profile:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.samples: list[ev.ProfileSample] = []
        self._unsub: Any = None

    def __enter__(self) -> "_Profile":
        client = self.client
        local = client._profile_depth
        local.n = getattr(local, "n", 0) + 1
        with client._timed_lock:
            client._timed += 1
        self._unsub = client.events.subscribe(self.samples.append, ev.ProfileSample)
        return self

    def __exit__(self, *exc: object) -> None:
        client = self.client
        client._profile_depth.n -= 1
        with client._timed_lock:
            client._timed -= 1
        self._unsub()
