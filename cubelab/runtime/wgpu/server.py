"""The wgpu server: memory as storage buffers, pipelines by KernelId, one command buffer per
stream flush.

Costs that shape this file (measured on lavapipe, see shared notes): `create_bind_group` ≈ 30 µs,
so bind groups are cached by (pipeline, buffers) — the info block is not in them: every launch's
block is a slot of one ring bound with a dynamic offset (`info_ring.py`), so a new scalar value
makes no group — and a loop finds its group on its `PreparedLaunch` without building that key;
one submit per launch costs ≈ 60 µs while a dispatch inside an open pass costs ≈ 16 µs, so each
stream keeps one open command encoder and compute pass, dispatches are encoded into it as they
arrive, and a flush of the stream (idle, read, sync, `max_tasks`, a shared buffer, a replay, a
full info ring) ends the pass and submits the whole thing as one command buffer. WebGPU orders
dispatches of one pass, so batching never reorders, and the shared queue orders the streams'
command buffers in the order the scheduler flushes them. The calls every launch makes into an
open pass (the dispatch, the bind with its offsets, the pipeline where it changes) go to
wgpu-native directly (`_NativePass`: why that is safe, and what it saves), and a run of launches
(`Server.launch_run`) encodes its repeats and its prepared launches as those calls alone
(`dispatch_repeats`, `dispatch_prepared`).

`CubeCount.Dynamic` dispatches indirectly (`dispatch_workgroups_indirect`, no read-back): every
buffer is created with INDIRECT usage besides STORAGE | COPY_SRC | COPY_DST, so any kernel's
output can be a count.

Errors: wgpu-py raises most validation errors from the call that caused them; what the driver
reports on the side is *logged* on the "wgpu" logger. A filter on that logger catches those
lines on the device thread and hands them to the shared bookkeeping (`take_async_errors`), which
turns them into failures of the launch or flush in progress, or device faults for `sync()` —
never a stray log line.

The trap: `queue.write_buffer` is ordered before *any* command buffer submitted after it, so a
host write flushes the streams whose queued work touches the buffer first (done by the base),
and a dropped handle's slice is not reused while work queued on its stream is unsubmitted
(`defers_release`: the next owner's `write_buffer` would overtake the queued read).

Memory: handles are slices of pooled pages (`runtime/memory_pool.py`), bound with offsets
(multiples of the adapter's `min_storage_buffer_offset_alignment`). WebGPU allows one buffer in
one dispatch either in read-only usages or as writable storage, never both — per *buffer*, not
per range — so two handles sliced from one page, one bound read-only and one writable, make
the dispatch invalid (measured: "conflicting usages ... STORAGE_READ_ONLY and
STORAGE_READ_WRITE"). cubelab does what CubeCL does on native wgpu: every buffer binding is
declared `read_write` (in the bind-group layout and, as naga requires the two to agree, in the
WGSL; `compiler/wgsl.py`), and writable bindings of disjoint or even equal ranges of one buffer
are allowed. The one read-only usage left is a dynamic count's INDIRECT: when the count's page is
also bound by the dispatch, its 12 bytes are first copied into a scratch buffer of their own.

Size: ~840 lines, over the project's ~700, on purpose: it is one backend over one wgpu device,
and its parts — the open pass per stream, the cached bind groups, the info blocks' offsets, the
loop guard's ring, the dynamic count's check — all read and reset the same per-stream encoding
state at each submit; the one part that stands alone, the info ring, is its own module
(`info_ring.py`).
"""

from __future__ import annotations

import logging
import os
import re
import struct
import threading
import time
from typing import Any

from cubelab.compiler.targets import TARGETS
from cubelab.errors import CompileError, DeviceError, hinted
from cubelab.runtime import events as ev
from cubelab.runtime.handle import Handle, binding_start
from cubelab.runtime.launch_args import Bindings, CubeCount
from cubelab.runtime.memory_pool import MemoryConfiguration, Slice
from cubelab.runtime.properties import DeviceProperties
from cubelab.runtime.server import (COUNT_OVER_LIMIT, PipelineEntry, PreparedLaunch, Server,
                                    generated_line_note)
from cubelab.runtime.store import driver_cache_env
from cubelab.runtime.wgpu.info_ring import InfoRing

_CACHE_LIMIT = 4096
# llvmpipe (lavapipe) counts every loop iteration of a unit, all loops together, against one
# 65 535-step limiter and silently ends every loop when it runs out (Mesa's gallivm,
# LP_MAX_TGSI_LOOP_ITERATIONS; measured: two loops of 60 000 ran 65 534 in all).
LLVMPIPE_LOOP_LIMIT = 65535
_GUARD_SLOTS = 1024  # guarded launches between two settles before one is forced
# a dynamic count's check, run on the GPU right before its indirect dispatch (`_check_count`)
_COUNT_CHECK = """
@group(0) @binding(0) var<storage, read_write> count: array<u32, 3>;
@group(0) @binding(1) var<storage, read_write> status: array<u32, 4>;
@compute @workgroup_size(1)
fn check_count() {{
    let x = count[0];
    let y = count[1];
    let z = count[2];
    if x > {limit}u || y > {limit}u || z > {limit}u {{
        status[0] = {code}u;
        status[1] = x;
        status[2] = y;
        status[3] = z;
    }}
}}
"""


class _NativePass:
    """wgpu-native's own entry points for the calls made on every launch: the dispatch,
    `set_bind_group` with its dynamic offsets (the info block's, a guarded launch's status
    slot), and `set_pipeline` (a run that alternates kernels, `Server.launch_run`).

    They go around wgpu-py's per-call wrapper, which pushes and pops an error slot around every
    call (and, for `set_bind_group`, builds a list and a C array of the offsets): ~0.6 µs of
    Python per dispatch and ~2 µs per bind with offsets on lavapipe's VM, a large share of the device
    thread's cost of a cache-hit launch (benchmarks/README.md). The trap this accepts, checked
    in wgpu-core: a compute pass only *records* these commands and validates them when the pass
    ends (`p.end()` in `submit_stream`, still through wgpu-py, which raises), so the bare calls
    have nothing to report but a pass already ended — which cubelab never encodes into.
    Anything they did report would still arrive through wgpu-py's error callback as a logged
    error, which `_WgpuLogCatcher` turns into the launch's failure. wgpu-native copies the
    offsets at the call, so one C word serves every call. Tied to wgpu-py's internals
    (`_ffi`, `._internal`; wgpu is pinned to 0.32 in pyproject.toml): where they are absent,
    `native_pass()` is None and the public methods are used."""

    __slots__ = ("dispatch", "set_bind_group", "set_pipeline", "offsets")

    def __init__(self, ffi: Any, lib: Any) -> None:
        self.dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self.set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self.set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self.offsets = ffi.new("uint32_t[2]")  # the info block's, then the loop guard's


def native_pass() -> _NativePass | None:
    try:
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        return _NativePass(ffi, lib)
    except (ImportError, AttributeError):
        return None


def _pad4(n: int) -> int:
    return max(4, (n + 3) & ~3)


def ensure_runtime_dir() -> None:
    """Give the Vulkan loader a valid `XDG_RUNTIME_DIR` before it is first touched.

    Mesa's drivers link libwayland, which prints "error: XDG_RUNTIME_DIR is invalid or not set
    in the environment." (twice, on stderr, from C — no Python logger can catch it) when the
    variable is unset or not an absolute path; that is the case in a JupyterLab started by a
    service, a container or `sudo`, and it reached students as the first line of their first
    cell. A compute-only client never talks to a display server, so a private, empty, 0700
    directory (`mkdtemp`) is a correct value; an existing valid one is left alone."""
    import os
    import tempfile

    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if not (os.path.isabs(current) and os.path.isdir(current)):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubelab-xdg-")


# The driver's warm-up kernel (`WgpuServer.warm_up`): one unit adds one to a word.
_WARM_UP_WGSL = """
@group(0) @binding(0) var<storage, read_write> word: array<u32>;
@compute @workgroup_size(1) fn main() { word[0] = word[0] + 1u; }
"""

# Seconds each start-up step took in this process (`benchmarks/startup.py` reads them): importing
# wgpu, requesting the adapter (the driver is loaded then), creating the device.
STARTUP: dict[str, float] = {}
# What wgpu said the last time it found no adapter (the driver's own reason, for the DeviceError).
ADAPTER_ERROR: dict[str, str] = {}


def request_adapter() -> Any | None:
    """The best wgpu adapter, or None when the machine has none (no Vulkan driver, ...).

    Before the driver loads, its shader disk cache is pointed into the compilation store's
    folder (`runtime/store.py` `driver_cache_env`, for the variables the user has not set): the
    store keeps cubelab's part between processes, the driver's cache the pipelines."""
    ensure_runtime_dir()
    for name, value in driver_cache_env().items():
        os.environ.setdefault(name, value)
    t0 = time.perf_counter()
    try:
        import wgpu
    except ImportError:
        return None
    t1 = time.perf_counter()
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:  # noqa: BLE001 - "no adapter" comes in several shapes
        # kept for the DeviceError: "no adapter" alone hides a driver that failed to load
        ADAPTER_ERROR["said"] = f"{type(exc).__name__}: {exc}".strip()
        return None
    STARTUP.setdefault("import wgpu", t1 - t0)
    STARTUP.setdefault("adapter", time.perf_counter() - t1)
    return adapter


class _WgpuLogCatcher(logging.Filter):
    """Turns wgpu's logged (asynchronous) errors on a server's device thread into failures."""

    def __init__(self) -> None:
        super().__init__("cubelab-wgpu")
        self.servers: dict[int, "WgpuServer"] = {}  # device thread ident -> server

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        server = self.servers.get(threading.get_ident())
        if server is None:
            return True
        server._async_errors.append(record.getMessage())
        return False  # caught: it becomes buffer state or a device fault, not a log line


_catcher = _WgpuLogCatcher()


def _install_log_filter(server: "WgpuServer") -> None:
    logger = logging.getLogger("wgpu")
    if _catcher not in logger.filters:
        logger.addFilter(_catcher)
    _catcher.servers[threading.get_ident()] = server


class WgpuServer(Server):
    name = "wgpu<wgsl>"
    defers_release = True  # queued dispatches run when their stream is submitted
    hands_off_large = True  # gate 5: the GPU starts a large launch before the loop goes on

    def __init__(self, bus: ev.EventBus, max_tasks: int = 64) -> None:
        super().__init__(bus, max_tasks)
        import wgpu

        self._wgpu = wgpu
        adapter = request_adapter()
        if adapter is None:
            said = f" (wgpu said: {ADAPTER_ERROR['said']})" if ADAPTER_ERROR else ""
            raise DeviceError(hinted(
                f"no wgpu adapter{said}", "install a Vulkan driver (on Debian/Ubuntu: apt-get "
                "install mesa-vulkan-drivers libvulkan1) or use Device.cpu()"))
        self.adapter = adapter
        limits = adapter.limits
        features = []
        for feat in ("subgroup", "shader-f16"):
            if feat in adapter.features:
                features.append(feat)
        t0 = time.perf_counter()
        self.device = adapter.request_device_sync(
            required_features=features,
            required_limits={
                "max-storage-buffers-per-shader-stage":
                    limits["max-storage-buffers-per-shader-stage"],
                "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
                "max-buffer-size": limits["max-buffer-size"],
            },
        )
        STARTUP.setdefault("device", time.perf_counter() - t0)
        info = adapter.info
        self.properties = DeviceProperties(
            adapter=str(info.get("device", "?")),
            backend=str(info.get("backend_type", "?")),
            adapter_type=str(info.get("adapter_type", "?")),
            features=frozenset(features),
            max_storage_buffers=int(limits["max-storage-buffers-per-shader-stage"]),
            memory_alignment=int(limits["min-storage-buffer-offset-alignment"]),
            # (wgpu-py 0.32 spells wgpu-native's subgroup_min/max_size "stackgroup_...")
            plane_size_min=int(info.get("subgroup_min_size", info.get("stackgroup_min_size",
                                                                        32)) or 32),
            plane_size_max=int(info.get("subgroup_max_size", info.get("stackgroup_max_size",
                                                                        32)) or 32),
            max_buffer_size=int(limits["max-buffer-size"]),
            max_binding_size=int(limits["max-storage-buffer-binding-size"]),
            driver_loop_limit=LLVMPIPE_LOOP_LIMIT if "llvmpipe" in str(info.get("device", ""))
            else None,
        )
        self.queue = self.device.queue
        self.target = TARGETS["wgsl"]
        U = wgpu.BufferUsage
        self._usage = U.STORAGE | U.COPY_SRC | U.COPY_DST | U.INDIRECT
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._groups_of: dict[int, list[tuple[Any, ...]]] = {}  # handle id -> its groups' keys
        # bumped whenever a cached group is dropped: a PreparedLaunch's group is valid while its
        # generation is this one (server.PreparedLaunch)
        self._generation = 0
        # stream -> [encoder, open compute pass, pipeline set last, bind group set last (None
        #            after a guarded launch's), the pass's native handle (for `_native`), the
        #            info offset bound with the group set last, the batch's number]
        self._open: dict[int, list[Any]] = {}
        self._barrier = self.device.create_buffer(size=4, usage=self._usage)
        self._empty_view = self.device.create_buffer(size=16, usage=self._usage)
        # a dynamic count whose page the dispatch also binds is copied here first (see above)
        self._indirect = self.device.create_buffer(size=16, usage=U.INDIRECT | U.COPY_DST)
        self._bind_alignment = max(4, self.properties.memory_alignment)
        self.init_memory(MemoryConfiguration(alignment=self._bind_alignment))
        # The loop guard's status words: one slot per guarded launch since the last settle,
        # bound with a dynamic offset so the cached bind group serves every launch.
        self._guard_stride = max(256, self.properties.memory_alignment)
        self._guard_ring = self.device.create_buffer(size=_GUARD_SLOTS * self._guard_stride,
                                                     usage=self._usage)
        self._guard_next = 0
        # Every launch's info block (scalars, lengths, tensor metadata) lives in one ring,
        # bound with a dynamic offset (`info_ring.py`)
        self._ring = InfoRing(self.device, self._usage, self.properties.memory_alignment)
        self._batches = 0  # passes begun so far: a batch's number
        # the dynamic count's check (`_check_count`): its pipeline, and a group per page
        self._count_check: tuple[Any, Any] | None = None
        self._count_groups: dict[int, Any] = {}
        self._async_errors: list[str] = []
        self._native = native_pass()
        _install_log_filter(self)

    def warm_up(self) -> None:
        """Make the driver ready to compile before the first kernel asks (the device thread
        runs this right after the device is created, while the caller goes on). A driver pays
        a start-up cost at the first pipeline of a process whatever its cache holds — lavapipe
        initialises LLVM at its first dispatch, ~150 ms of CPU on this machine
        (`benchmarks/startup.py`) — and that cost then falls in the time between making the
        client and the first launch (a notebook's next cells) instead of on the first launch.
        A tiny kernel of its own: no event, nothing cached, any error ignored."""
        t0 = time.perf_counter()
        try:
            module = self.device.create_shader_module(code=_WARM_UP_WGSL)
            pipeline = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"})
            group = self.device.create_bind_group(
                layout=pipeline.get_bind_group_layout(0),
                entries=[{"binding": 0, "resource": {"buffer": self._barrier, "offset": 0,
                                                     "size": 4}}])
            encoder = self.device.create_command_encoder()
            p = encoder.begin_compute_pass()
            p.set_pipeline(pipeline)
            p.set_bind_group(0, group)
            p.dispatch_workgroups(1)
            p.end()
            self.queue.submit([encoder.finish()])
            self.queue.read_buffer(self._barrier, 0, 4)
        except Exception:  # noqa: BLE001 - a warm-up never fails anything
            self.take_async_errors()
        STARTUP.setdefault("warm-up", time.perf_counter() - t0)

    def device_fingerprint(self) -> str:
        """The properties plus the adapter's driver: a driver update may compile the same WGSL
        differently, and naga (wgpu-py's version) validates it."""
        info = self.adapter.info
        return (f"{super().device_fingerprint()}|{info.get('vendor')}|{info.get('device_id')}|"
                f"{info.get('description')}|wgpu {self._wgpu.__version__}")

    # -- memory -------------------------------------------------------------------------------
    def alloc_page(self, size: int) -> Any:
        return self.device.create_buffer(size=size, usage=self._usage)  # zeroed by WebGPU

    def free_page(self, storage: Any) -> None:
        self._count_groups.pop(id(storage), None)
        storage.destroy()

    def place(self, handle: Handle, s: Slice, data: bytes | None, zero: bool) -> None:
        if data is not None:
            raw = bytes(data)
            if len(raw) % 4:
                raw += b"\0" * (4 - len(raw) % 4)
        elif zero:
            raw = bytes(_pad4(handle.size))
        else:
            return
        if raw:  # (a view writes where it starts)
            self.queue.write_buffer(s.page.storage, s.offset + handle.offset, raw)

    def clear_cache(self, reason: str) -> None:
        # Bind groups are keyed by KernelId and made for one pipeline's layout; a KernelId
        # compiled again after the options changed may bind differently (the loop guard's
        # status word comes and goes with `loop_budget`), so its old groups go with the cache.
        super().clear_cache(reason)
        self._groups.clear()
        self._groups_of.clear()
        self._generation += 1

    def forget_bindings(self, handle_id: int) -> None:
        keys = self._groups_of.pop(handle_id, None)
        if keys:
            for key in keys:
                self._groups.pop(key, None)
            self._generation += 1  # a prepared launch may hold one of those groups

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        out = []
        for h in handles:
            s = self.slice_of(h, "read")
            data = self.queue.read_buffer(s.page.storage, s.offset + h.offset, _pad4(h.size))
            out.append(bytes(data[: h.size]))
        return out

    def sync(self) -> None:
        self.wait()

    def wait(self) -> None:
        # `on_submitted_work_done_sync` raises in wgpu 0.32; a 4-byte read is the barrier.
        self.queue.read_buffer(self._barrier, 0, 4)

    # -- pipelines ----------------------------------------------------------------------------
    def build_pipeline(self, entry: PipelineEntry) -> None:
        wgpu = self._wgpu
        src = entry.compiled.source
        try:
            module = self.device.create_shader_module(code=src, label=entry.entry)
        except Exception as exc:  # noqa: BLE001 - naga's refusal, reworded with both lines
            raise self._compile_error(entry, str(exc)) from None
        layout_entries = []
        ro = wgpu.BufferBindingType.read_only_storage
        for b in entry.definition.buffers:
            layout_entries.append({  # every buffer read-write: slices share pages (docstring)
                "binding": b.index,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.storage},
            })
        layout_entries.append({  # the info block: a slot of the ring (`info_ring.py`)
            "binding": len(entry.definition.buffers),
            "visibility": wgpu.ShaderStage.COMPUTE,
            "buffer": {"type": ro, "has_dynamic_offset": True},
        })
        if entry.definition.loop_budget is not None:
            layout_entries.append({
                "binding": len(entry.definition.buffers) + 1,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.storage, "has_dynamic_offset": True},
            })
        bgl = self.device.create_bind_group_layout(entries=layout_entries)
        pl = self.device.create_pipeline_layout(bind_group_layouts=[bgl])
        try:
            entry.pipeline = self.device.create_compute_pipeline(
                layout=pl, compute={"module": module, "entry_point": entry.entry}
            )
        except Exception as exc:  # noqa: BLE001
            raise self._compile_error(entry, str(exc)) from None
        entry.layout = bgl

    def forget_pipeline(self, entry: PipelineEntry) -> None:
        kid = entry.kernel_id
        stale = [k for k in self._groups if k[0] == kid]
        for k in stale:
            del self._groups[k]
        if stale:
            self._generation += 1  # a prepared launch may hold one of those groups
        for open_ in self._open.values():  # an open pass may still name it as the one set last
            if open_[2] is entry.pipeline:
                open_[2] = open_[3] = None

    def _compile_error(self, entry: PipelineEntry, message: str) -> CompileError:
        # parse errors say "┌─ wgsl:12:5", validation errors "┌─ :12:5"
        m = re.search(r"┌─ [^:\n]*:(\d+):(\d+)", message)
        where = generated_line_note(entry, int(m.group(1)), "WGSL") if m else ""
        short = message.strip().splitlines()
        detail = "\n    ".join(s for s in short if s.strip())
        return CompileError(hinted(
            f"wgpu refused the WGSL of kernel `{entry.definition.name}` ({entry.entry}):{where}"
            f"\n  naga says:\n    {detail}",
            "if naga names a rule of your kernel (a barrier under a branch that differs between "
            "units, a value's type), fix that line; otherwise it is cubelab's mistake: report "
            "it with the WGSL (`cubelab wgsl FILE::KERNEL` prints it)"))

    # -- dispatch -----------------------------------------------------------------------------
    def _group(self, entry: PipelineEntry, bindings: Bindings) -> Any:
        # The launch's prepared record remembers its group while no cached group was dropped
        # since (a release, the cache limit): then not even the key below is built.
        rec = bindings.prepared
        if rec is not None and rec.generation == self._generation and rec.entry is entry:
            return rec.backend
        group = self._group_by_key(entry, bindings)
        if rec is not None and rec.entry is entry:
            rec.backend, rec.generation = group, self._generation
        return group

    def _group_key(self, entry: PipelineEntry, bindings: Bindings) -> tuple[Any, ...]:
        # What is bound: the buffers' views and the info block's size (its content is the
        # launch's, at a dynamic offset), so launches that differ only in their scalars share
        # one group.
        return (entry.kernel_id, tuple([(b.handle.id, b.handle.offset,
                                         b.items if b.shape is None else -1)
                                        for b in bindings.buffers]),
                len(self._info_bytes(entry, bindings)))

    def _group_by_key(self, entry: PipelineEntry, bindings: Bindings) -> Any:
        key = self._group_key(entry, bindings)
        group = self._groups.get(key)
        if group is not None:
            return group
        buffers = bindings.buffers
        size = key[2]
        if len(self._groups) >= _CACHE_LIMIT:
            self._groups.clear()
            self._groups_of.clear()
            self._generation += 1
        resources = []
        params = entry.definition.buffers
        for i, b in enumerate(buffers):
            s = self.slice_of(b.handle, f"launch of `{entry.definition.name}`")
            # A slice binds only the items it declares: past them (still inside the handle) is
            # the student's other data, which an unguarded index must not reach — wgpu then
            # reads 0 and drops the write there, as past a handle's end. A tensor binds its
            # handle (its strides may reach anywhere in it). An empty view binds a scratch word.
            # A view binds from its offset rounded down to the binding alignment (handle.py
            # `binding_start`); a kernel compiled for a lower alignment skips the difference.
            start = binding_start(b.handle, self._bind_alignment)
            view = _pad4(b.handle.offset - start + b.handle.size)
            if b.shape is None:
                view = min(view, b.items * params[i].item.size)
            resource = ({"buffer": s.page.storage, "offset": s.offset + start, "size": view}
                        if view else {"buffer": self._empty_view, "offset": 0, "size": 16})
            resources.append({"binding": i, "resource": resource})
        resources.append({"binding": len(buffers),
                          "resource": {"buffer": self._ring.buffer, "offset": 0, "size": size}})
        if entry.definition.loop_budget is not None:
            resources.append({"binding": len(buffers) + 1,
                              "resource": {"buffer": self._guard_ring, "offset": 0, "size": 4}})
        group = self.device.create_bind_group(layout=entry.layout, entries=resources)
        self._groups[key] = group
        for b in buffers:
            self._groups_of.setdefault(b.handle.id, []).append(key)
        return group

    @staticmethod
    def _packed(entry: PipelineEntry, bindings: Bindings) -> list[Any]:
        """The launch's info block for `entry`, packed once per `Bindings`: their `packed`,
        [entry, bytes, the batch its slot is in, the slot's offset]."""
        packed = bindings.packed
        if packed is not None and packed[0] is entry:
            return packed  # type: ignore[no-any-return]
        layout = entry.compiled.info
        data = layout.pack(bindings.scalars, [b.items for b in bindings.buffers],
                           bindings.tensor_meta() if layout.tensors else ())
        packed = bindings.packed = [entry, data, -1, 0]
        return packed

    def _info_bytes(self, entry: PipelineEntry, bindings: Bindings) -> bytes:
        return self._packed(entry, bindings)[1]  # type: ignore[no-any-return]

    def _info_slot(self, stream: int, open_: list[Any], entry: PipelineEntry,
                   bindings: Bindings) -> int | None:
        """Where `bindings`' info block is in the ring for this batch (`InfoRing.offset`), kept
        on them for the rest of the batch (a loop that alternates two launches finds each
        one's slot again). None: the batch has taken the whole ring."""
        packed = bindings.packed
        if packed is None or packed[0] is not entry:
            packed = self._packed(entry, bindings)
        if packed[2] == open_[6]:
            return packed[3]  # type: ignore[no-any-return]
        off = self._ring.offset(stream, packed[1])
        if off is not None:
            packed[2], packed[3] = open_[6], off
        return off

    def _bind(self, open_: list[Any], group: Any, info: int, guard: int | None) -> None:
        """Bind `group` with its dynamic offsets (the info block's; a guarded launch's status
        slot), unless the pass has exactly that bound (a guarded launch always binds)."""
        native = self._native if open_[4] is not None else None
        if guard is None:
            if open_[3] is group and open_[5] == info:
                return
            if native is not None:
                offsets = native.offsets
                offsets[0] = info
                native.set_bind_group(open_[4], 0, group._internal, 1, offsets)
            else:
                open_[1].set_bind_group(0, group, [info])
            open_[3], open_[5] = group, info
            return
        if native is not None:
            offsets = native.offsets
            offsets[0], offsets[1] = info, guard
            native.set_bind_group(open_[4], 0, group._internal, 2, offsets)
        else:
            open_[1].set_bind_group(0, group, [info, guard])
        open_[3] = None  # the next launch sets its own status slot

    def read_guard_codes(self, slots: list[int]) -> dict[int, tuple[int, ...]]:
        if not slots:
            return {}
        stride = self._guard_stride
        lo, hi = min(slots), max(slots)
        size = (hi - lo + 1) * stride
        data = bytes(self.queue.read_buffer(self._guard_ring, lo * stride, size))
        self.queue.write_buffer(self._guard_ring, lo * stride, bytes(size))
        self._guard_next = 0
        return {s: struct.unpack_from("<4I", data, (s - lo) * stride) for s in slots}

    def _begin_pass(self, stream: int) -> list[Any]:
        """A new command encoder and compute pass for `stream` (none is open there)."""
        encoder = self.device.create_command_encoder()
        p = encoder.begin_compute_pass()
        self._batches += 1
        open_ = self._open[stream] = [encoder, p, None, None, getattr(p, "_internal", None),
                                      -1, self._batches]
        return open_

    def _open_pass(self, stream: int, entry: PipelineEntry,
                   bindings: Bindings) -> tuple[list[Any], int]:
        """The stream's open pass (begun if none is) and the launch's info block's offset in
        it; a batch that has taken the whole info ring is submitted first (`info_ring.py`)."""
        open_ = self._open.get(stream) or self._begin_pass(stream)
        off = self._info_slot(stream, open_, entry, bindings)
        if off is None:
            self.scheduler.flush(stream, "info-ring")
            open_ = self._open.get(stream) or self._begin_pass(stream)
            off = self._info_slot(stream, open_, entry, bindings)
            assert off is not None  # an empty batch takes any block
        return open_, off

    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        self.guard_slot = None
        guarded = entry.definition.loop_budget is not None
        if (guarded or count.handle is not None) and self._guard_next >= _GUARD_SLOTS:
            self.settle_guards()  # every slot holds a verdict nobody has read: read them now
        group = self._group(entry, bindings)  # may raise: nothing is encoded yet
        indirect: Any = None
        if count.handle is not None:
            cs = self.slice_of(count.handle, f"launch of `{entry.definition.name}` (cube count)")
            slices = self.pool.slices
            if any(slices[b.handle.id].page is cs.page for b in bindings.buffers):
                indirect = cs  # INDIRECT next to STORAGE_READ_WRITE of one page: copy first
            else:
                indirect = (cs.page.storage, cs.offset)
        stream = self.stream
        open_, info = self._open_pass(stream, entry, bindings)
        p = open_[1]
        try:
            if isinstance(indirect, Slice):
                p.end()
                open_[0].copy_buffer_to_buffer(indirect.page.storage, indirect.offset,
                                               self._indirect, 0, 12)
                p = open_[1] = open_[0].begin_compute_pass()
                open_[2] = open_[3] = None
                open_[4] = getattr(p, "_internal", None)
                indirect = (self._indirect, 0)
            if indirect is not None:
                # wgpu dispatches nothing for a count over the limit, and says nothing: check
                # it on the GPU first, into this launch's status slot (`_check_count`).
                self.guard_slot = self._guard_next
                self._guard_next += 1
                self._check_count(open_, cs, self.guard_slot)
            # Each wgpu-py call costs several µs of Python: a run of launches of one kernel on
            # the same buffers re-encodes only the dispatch.
            if open_[2] is not entry.pipeline:
                p.set_pipeline(entry.pipeline)
                open_[2] = entry.pipeline
            if guarded:
                slot = self._guard_next if self.guard_slot is None else self.guard_slot
                self._bind(open_, group, info, slot * self._guard_stride)
                self._guard_next = max(self._guard_next, slot + 1)
                self.guard_slot = slot
            else:
                self._bind(open_, group, info, None)
            if indirect is not None:
                p.dispatch_workgroups_indirect(*indirect)
            elif open_[4] is not None and self._native is not None:
                self._native.dispatch(open_[4], count.x, count.y, count.z)
            else:
                p.dispatch_workgroups(count.x, count.y, count.z)
        except Exception as exc:
            # A refused command invalidates the whole encoder: drop it (and the info blocks
            # staged for it), and the dispatches already encoded in it fail with this error
            # (their buffers say so).
            del self._open[stream]
            self._ring.drop(stream)
            lost = self.scheduler.drop(stream)
            self._submit_failed(lost, exc)
            raise

    def _check_count(self, open_: list[Any], cs: Slice, slot: int) -> None:
        """Encode, before an indirect dispatch, a one-unit kernel that reads the count where
        the dispatch will (`cs`) and, if a dimension is over the device's limit, writes
        COUNT_OVER_LIMIT and the count into the launch's status slot: the settle
        (`Server.settle_guards`) turns it into the same `ResourceError` the CPU runtime raises
        when it reads the count on the host. wgpu itself dispatches nothing then, silently."""
        wgpu = self._wgpu
        if self._count_check is None:
            limit = self.properties.max_cubes_per_dim
            module = self.device.create_shader_module(code=_COUNT_CHECK.format(
                limit=limit, code=COUNT_OVER_LIMIT), label="cubelab_count_check")
            storage = {"type": wgpu.BufferBindingType.storage, "has_dynamic_offset": True}
            bgl = self.device.create_bind_group_layout(entries=[
                {"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": storage}
                for i in (0, 1)])
            pipe = self.device.create_compute_pipeline(
                layout=self.device.create_pipeline_layout(bind_group_layouts=[bgl]),
                compute={"module": module, "entry_point": "check_count"})
            self._count_check = (pipe, bgl)
        pipe, bgl = self._count_check
        page = cs.page.storage
        group = self._count_groups.get(id(page))
        if group is None:
            group = self._count_groups[id(page)] = self.device.create_bind_group(
                layout=bgl, entries=[
                    {"binding": 0, "resource": {"buffer": page, "offset": 0, "size": 12}},
                    {"binding": 1, "resource": {"buffer": self._guard_ring, "offset": 0,
                                                "size": 16}}])
        p = open_[1]
        p.set_pipeline(pipe)
        p.set_bind_group(0, group, [cs.offset, slot * self._guard_stride])
        p.dispatch_workgroups(1)
        open_[2] = open_[3] = None  # the launch sets its own pipeline and group again

    repeats_dispatches = True

    def dispatch_prepared(self, rec: PreparedLaunch, bindings: Bindings, count: CubeCount,
                          stream: int) -> bool:
        # What `dispatch` encodes, from the prepared launch's pipeline and bind group, through
        # wgpu-native's own calls only (`_NativePass`: they record, and cannot raise).
        self.guard_slot = None
        native, group, entry = self._native, rec.backend, rec.entry
        if native is None:
            return False
        if group is None or rec.generation != self._generation:
            # new bindings (a scalar changed), or a group was dropped since: a group already
            # made for these buffers serves (making one is the ordinary path's: it may raise)
            group = self._groups.get(self._group_key(entry, bindings))
            if group is None:
                return False
            rec.backend, rec.generation = group, self._generation
        guarded = entry.definition.loop_budget is not None
        if guarded and self._guard_next >= _GUARD_SLOTS:
            return False  # a full ring: the ordinary path settles it
        open_ = self._open.get(stream) or self._begin_pass(stream)
        if open_[4] is None:
            return False
        info = self._info_slot(stream, open_, entry, bindings)
        if info is None:
            return False
        p = open_[4]
        pipeline = entry.pipeline
        if open_[2] is not pipeline:
            native.set_pipeline(p, pipeline._internal)
            open_[2] = pipeline
        if guarded:
            slot = self._guard_next
            self._bind(open_, group, info, slot * self._guard_stride)
            self._guard_next = slot + 1
            self.guard_slot = slot
        elif open_[3] is not group or open_[5] != info:  # `_bind`, inline: every launch
            offsets = native.offsets
            offsets[0] = info
            native.set_bind_group(p, 0, group._internal, 1, offsets)
            open_[3], open_[5] = group, info
        native.dispatch(p, count.x, count.y, count.z)
        return True

    def dispatch_repeats(self, rec: PreparedLaunch, bindings: Bindings, count: CubeCount,
                         stream: int, k: int, binds: list[Bindings] | None = None) -> int:
        # Only right behind the same launch in the same open pass: its pipeline, bind group and
        # info block are still set, so a repeat is the dispatch alone — or, for a guarded
        # launch, its own guard slot's bind (the group with another offset) and the dispatch.
        # Only through wgpu-native's own calls (`_NativePass`), which record and cannot raise:
        # wgpu-py's methods can, and a raise mid-batch is the ordinary path's to handle.
        self.guard_slot = None
        native = self._native
        if rec.generation != self._generation or native is None:
            return 0
        pipeline, guarded = rec.entry.pipeline, rec.entry.definition.loop_budget is not None
        open_ = self._open.get(stream)
        if open_ is None:
            # The run's own max_tasks flush submitted the pass its last dispatch went into: the
            # next pass starts as the ordinary path would start it.
            open_ = self._begin_pass(stream)
            if open_[4] is None:
                return 0
            open_[1].set_pipeline(pipeline)
            open_[2] = pipeline
        elif open_[2] is not pipeline or open_[4] is None:
            return 0
        if binds is not None:  # each with its own scalars: its own info block
            return self._repeat_each(rec, binds, count, stream, open_, k)
        info = self._info_slot(stream, open_, rec.entry, bindings)
        if info is None:
            return 0
        x, y, z = count.x, count.y, count.z
        dispatch, p = native.dispatch, open_[4]
        if guarded:
            slot = self._guard_next
            k = min(k, _GUARD_SLOTS - slot)  # a full ring is settled by the ordinary path
            if k <= 0:
                return 0
            bind, group, offsets, stride = (native.set_bind_group, rec.backend._internal,
                                            native.offsets, self._guard_stride)
            offsets[0] = info
            for s in range(slot, slot + k):
                offsets[1] = s * stride
                bind(p, 0, group, 2, offsets)
                dispatch(p, x, y, z)
            open_[3] = None
            self._guard_next = slot + k
            self.guard_slot = slot  # the first of the k consecutive slots
            return k
        self._bind(open_, rec.backend, info, None)
        for _ in range(k):
            dispatch(p, x, y, z)
        return k

    def _repeat_each(self, rec: PreparedLaunch, binds: list[Bindings], count: CubeCount,
                     stream: int, open_: list[Any], k: int) -> int:
        """`dispatch_repeats` of launches that differ in their scalars: each binds the group at
        its own info block's offset (and, guarded, its own status slot), then dispatches."""
        native, entry, group = self._native, rec.entry, rec.backend
        guarded = entry.definition.loop_budget is not None
        slot = self._guard_next
        if guarded:
            k = min(k, _GUARD_SLOTS - slot)  # a full ring is settled by the ordinary path
        bind, dispatch, offsets, p = (native.set_bind_group, native.dispatch, native.offsets,
                                      open_[4])
        internal, stride = group._internal, self._guard_stride
        info_slot, x, y, z = self._info_slot, count.x, count.y, count.z
        done = 0
        for b in binds[:k]:
            info = info_slot(stream, open_, entry, b)
            if info is None:
                break  # the batch took the whole ring: the ordinary path submits it
            offsets[0] = info
            if guarded:
                offsets[1] = (slot + done) * stride
                bind(p, 0, internal, 2, offsets)
            elif open_[3] is not group or open_[5] != info:
                bind(p, 0, internal, 1, offsets)
                open_[3], open_[5] = group, info
            dispatch(p, x, y, z)
            done += 1
        if guarded and done:
            open_[3] = None
            self._guard_next = slot + done
            self.guard_slot = slot  # the first of the `done` consecutive slots
        return done

    def resolve_dynamic_count(self, handle: Handle) -> tuple[int, int, int] | None:
        return None  # indirect dispatch: the GPU reads the count itself

    def submit_stream(self, stream: int) -> None:
        open_ = self._open.pop(stream, None)
        if open_ is None:
            return
        encoder, p = open_[0], open_[1]
        p.end()
        self._ring.write(self.queue, stream)  # its info blocks, right before it on the queue
        self.queue.submit([encoder.finish()])
        errs = self.take_async_errors()
        if errs:
            raise errs[0]

    def take_async_errors(self) -> list[BaseException]:
        if not self._async_errors:
            return []
        errs, self._async_errors = self._async_errors, []
        return [DeviceError(f"wgpu reported: {m}") for m in errs]
