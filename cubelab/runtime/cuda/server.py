"""The CUDA server: the CUDA C++ target compiled by NVRTC and launched on an NVIDIA GPU.

It is a `Server` like the wgpu and CPU ones: the KernelId cache and its events, seed 001's
device-thread order, dry runs, failure as buffer state, stream dependency inference, runs of
identical launches, the loop guard's late verdicts and the memory pool are the shared ones
(`runtime/server.py`). What it supplies, mapped one to one on CUDA's own concepts:

- **compile** = NVRTC (CUDA C++ → cubin for this GPU's `sm_XY`) + `cuModuleLoadData` +
  `cuModuleGetFunction`, timed together as the compile's `driver_s` (the log and the
  `CacheMonitor` show it); NVRTC's refusal is a `CompileError` with the CUDA line and the kernel
  line it came from;
- **memory**: pool pages are `cuMemAlloc` allocations (zeroed on creation, as WebGPU's are); a
  handle is a slice, passed to the kernel as page address + offset;
- **streams**: each cubelab stream is a CUDA stream, and a launch is enqueued on it at once
  (`cuLaunchKernel` returns before the GPU runs it), so a flush has nothing left to send. The
  seed's dependency inference — a buffer last touched on another stream — becomes an event:
  `cuEventRecord` on that stream and `cuStreamWaitEvent` on this one (`join_stream`);
- **host transfers** (`create_from_slice`, `write`, `read`, a dynamic count) are the driver's
  synchronous copies on the legacy default stream, and cubelab's streams are created *blocking*
  (`CU_STREAM_DEFAULT`), so CUDA orders every copy after all work queued on any stream and
  before any work queued after it. It over-synchronises (a read waits for every stream), never
  under-synchronises, and a released slice may be reused at once (`defers_release` stays False);
- **kernel parameters**, the contract with the CUDA C++ target: one device pointer per buffer in
  binding order, then `const info_st*` (the info block, `compiler/info.py`'s bytes in device
  memory, one upload per distinct block), then `uint32_t*` for the loop guard's status word when
  the kernel is guarded. The pointers are packed once per `Bindings` (`PreparedLaunch.backend`,
  which bindings sharing their buffers share: the parameters say whose scalars they hold), so a
  cache-hit launch is one `cuLaunchKernel` with a ready `void**`;
- **dynamic counts** are read back on the host (CUDA has no indirect launch): the base's path,
  which is CubeCL's CUDA server's too — read the 12 bytes, a zero count dispatches nothing;
- **profiling** is timed by CUDA events around the kernel (`dispatch_seconds`), not by the host;
- **device faults**: CUDA reports a kernel's illegal access at the next synchronising call, and
  the context is then lost for good (a "sticky" error): `sync()` raises it as a `DeviceFault`
  naming the error, and every later call fails with it.

The trap: every driver call must run on the thread whose context is current — the device
thread, where every server method runs (`runner.py`).
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from cubelab.compiler.targets import TARGETS
from cubelab.errors import CompileError, DeviceError, hinted
from cubelab.runtime import events as ev
from cubelab.runtime.cuda.driver import CudaError, bindings, error_name, nvrtc_compile, ok
from cubelab.runtime.handle import Handle, binding_start
from cubelab.runtime.launch_args import Bindings, CubeCount
from cubelab.runtime.memory_pool import MemoryConfiguration, Slice
from cubelab.runtime.properties import DeviceProperties
from cubelab.runtime.server import PipelineEntry, PreparedLaunch, Server, generated_line_note

_INFO_LIMIT = 4096  # distinct info blocks kept in device memory before the cache is emptied
_GUARD_SLOTS = 1024  # guarded launches between two settles before one is forced
_GUARD_STRIDE = 4
# A run of identical launches is sent as CUDA graphs of GRAPH_MAX, ..., GRAPH_MIN launches
# (powers of two) once the same parameters ran a second run: one cuGraphLaunch instead of n
# cuLaunchKernel calls of ~5 µs each (benchmarks/cuda_launch_cost.py). Capturing one costs
# about n launches, so a one-off run is not worth it.
GRAPH_MIN, GRAPH_MAX = 8, 64
_GRAPHS_PER_LAUNCH = 16


class _Params:
    """One launch's kernel parameters as the driver wants them: the values side by side in one
    host block (`block`; each at a 16-byte aligned offset) and `address`, the `void**`
    pointing at each. The driver copies the values at `cuLaunchKernel`, so changing one
    afterwards (a guarded launch's status slot, `guard`) touches no launch already enqueued.
    `graphs`: CUDA graphs of n back-to-back launches of these parameters, by (n, grid), for runs
    of identical launches (`dispatch_repeats`); they go to the server's bin when these
    parameters die, to be destroyed on the device thread."""

    __slots__ = ("block", "pointers", "address", "guard", "graphs", "runs", "scalars",
                 "__weakref__")

    def __init__(self, values: list[bytes], guarded: bool) -> None:
        offsets, at = [], 0
        for v in values:
            offsets.append(at)
            at += (len(v) + 15) & ~15
        self.block = ctypes.create_string_buffer(b"".join(
            v.ljust((len(v) + 15) & ~15, b"\0") for v in values), max(at, 16))
        base = ctypes.addressof(self.block)
        self.pointers = (ctypes.c_void_p * len(values))(*[base + o for o in offsets])
        self.address = ctypes.addressof(self.pointers)
        self.guard = (ctypes.c_uint64.from_buffer(self.block, offsets[-1]) if guarded
                      else None)
        self.graphs: dict[tuple[int, int, int, int], Any] = {}
        self.runs = 0  # runs of repeats seen: graphs are built from the second one on
        # the `Bindings.scalars` packed into the info block: bindings that share their buffers
        # share a PreparedLaunch (`launch_args.Bindings.prepared`), not their scalars
        self.scalars: Any = None


def _pointer_param(source: str, entry: str, index: int) -> bool:
    """Whether parameter `index` of `entry`'s signature in `source` is a pointer (a `*` in its
    declaration), as opposed to a value. The cubin says only how wide a parameter is, and an
    8-byte info block by value is as wide as a pointer."""
    at = source.find(entry + "(")
    if at < 0:
        return True
    depth, params, cur = 0, [], ""
    for ch in source[at + len(entry) + 1:]:
        if ch == ")" and depth == 0:
            break
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur)
            cur = ""
        else:
            cur += ch
    params.append(cur)
    return index >= len(params) or "*" in params[index]


def _bin_graphs(bin_: list[Any], graphs: dict[Any, Any]) -> None:
    bin_.extend(g for g in graphs.values() if g is not None)  # any thread: one list op


class _Module:
    """A loaded module, its kernel function, and the byte size of each of the function's
    parameters as the cubin declares them (`cuFuncGetParamInfo`; None where the driver cannot
    say: then every parameter is taken to be a pointer)."""

    __slots__ = ("module", "function", "param_sizes")

    def __init__(self, module: Any, function: Any, param_sizes: list[int] | None) -> None:
        self.module, self.function, self.param_sizes = module, function, param_sizes


class CudaServer(Server):
    name = "cuda<cpp>"
    joins_streams = True  # CUDA streams run side by side: a shared buffer is an event wait
    hands_off_large = True  # gate 5: the GPU starts a large launch before the loop goes on

    def __init__(self, bus: ev.EventBus, max_tasks: int = 64) -> None:
        super().__init__(bus, max_tasks)
        target = TARGETS.get("cuda")
        if target is None:
            raise DeviceError(hinted("this cubelab has no CUDA C++ target (compiler/targets."
                                     "TARGETS lacks \"cuda\"), so nothing could run on "
                                     "Device.cuda()", "install a cubelab with its CUDA target, "
                                     "or use Device.wgpu() / Device.cpu()"))
        driver, nvrtc = bindings()
        self._d, self._nvrtc = driver, nvrtc
        self._ok_code = driver.CUresult.CUDA_SUCCESS
        dev = ok(driver.cuDeviceGet(0), "cuDeviceGet")
        self._ctx = ok(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        ok(driver.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
        raw_name = ok(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = raw_name.split(b"\0")[0].decode()
        attr = driver.CUdevice_attribute
        major = ok(driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = ok(driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        self.arch = f"sm_{major}{minor}"
        version = ok(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        self.driver_version = f"{version // 1000}.{version % 1000 // 10}"
        total = ok(driver.cuDeviceTotalMem(dev), "cuDeviceTotalMem")
        # WebGPU's default limits on cubes and units (`properties.py`), as the wgpu runtime
        # reports them: a kernel that launches on one runtime launches on the other. Memory is
        # the device's: a buffer may take all of it, and a launch binds up to 4 GiB - 4 of one
        # (a kernel takes a pointer, but a length in the info block is a u32). Planes are
        # CUDA's warps.
        self.properties = DeviceProperties(
            adapter=name, backend=f"CUDA {self.driver_version}", adapter_type="DiscreteGPU",
            features=frozenset({"subgroup"}), memory_alignment=256,
            max_buffer_size=int(total), max_binding_size=min(int(total), 2**32 - 4))
        self.target = target
        self._streams: dict[int, Any] = {}
        self._info: dict[bytes, int] = {}
        self._generation = 0  # bumped when cached info blocks are freed (a _Params holds one)
        self._guard_ring = self._alloc(_GUARD_SLOTS * _GUARD_STRIDE)
        self._guard_next = 0
        self._async_errors: list[BaseException] = []
        self._lost: str | None = None  # a sticky error: the context is unusable from now on
        self._timed: tuple[Any, Any] | None = None
        self._events = (ok(driver.cuEventCreate(0), "cuEventCreate"),
                        ok(driver.cuEventCreate(0), "cuEventCreate"))
        self._cu_launch = driver.cuLaunchKernel
        self._graph_launch = driver.cuGraphLaunch
        self._capture_stream: Any = None
        self._graph_bin: list[Any] = []  # graphs whose parameters died (`_Params`)
        self.init_memory(MemoryConfiguration(alignment=256))

    # -- memory -------------------------------------------------------------------------------
    def _alloc(self, size: int) -> int:
        d = self._d
        ptr = int(ok(d.cuMemAlloc(max(size, 1)), f"cuMemAlloc({size} bytes)"))
        ok(d.cuMemsetD8(ptr, 0, max(size, 1)), "cuMemsetD8")
        return ptr

    def alloc_page(self, size: int) -> Any:
        return self._alloc(size)  # zeroed, as WebGPU's new buffers are

    def free_page(self, storage: Any) -> None:
        ok(self._d.cuMemFree(storage), "cuMemFree")

    def place(self, handle: Handle, s: Slice, data: bytes | None, zero: bool) -> None:
        ptr = s.page.storage + s.offset + handle.offset  # (a view writes where it starts)
        if data is not None:
            if data:
                host = np.frombuffer(data, np.uint8)
                ok(self._d.cuMemcpyHtoD(ptr, host.ctypes.data, len(data)), "cuMemcpyHtoD")
        elif zero and handle.size:
            ok(self._d.cuMemsetD8(ptr, 0, handle.size), "cuMemsetD8")

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        out = []
        for h in handles:
            s = self.slice_of(h, "read")
            host = np.empty(h.size, np.uint8)
            if h.size:
                ok(self._d.cuMemcpyDtoH(host.ctypes.data, s.page.storage + s.offset + h.offset,
                                        h.size), "cuMemcpyDtoH")
            out.append(host.tobytes())
        return out

    # -- streams and waiting ------------------------------------------------------------------
    def _stream(self, sid: int) -> Any:
        st = self._streams.get(sid)
        if st is None:
            # blocking (not CU_STREAM_NON_BLOCKING): ordered with the legacy stream's copies
            st = self._streams[sid] = ok(self._d.cuStreamCreate(0), "cuStreamCreate")
        return st

    def join_stream(self, stream: int, other: int) -> None:
        """`stream`'s later work waits for everything enqueued on `other` so far."""
        d = self._d
        event = ok(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        try:
            ok(d.cuEventRecord(event, self._stream(other)), "cuEventRecord")
            ok(d.cuStreamWaitEvent(self._stream(stream), event, 0), "cuStreamWaitEvent")
        finally:
            d.cuEventDestroy(event)

    def sync(self) -> None:
        self.wait()

    def wait(self) -> None:
        if self._lost is not None:
            self._async_errors.append(DeviceError(self._lost))
            return
        (err,) = self._d.cuCtxSynchronize()
        if err != self._ok_code:
            self._lose(err, "a kernel failed on the GPU")

    def _lose(self, err: Any, what: str) -> None:
        self._lost = hinted(f"{what} ({error_name(self._d, err)}); CUDA keeps this error for "
                            "the rest of the process, so nothing more can run on Device.cuda()",
                            "restart the Python kernel")
        self._async_errors.append(DeviceError(self._lost))

    def take_async_errors(self) -> list[BaseException]:
        if not self._async_errors:
            return []
        errs, self._async_errors = self._async_errors, []
        return errs

    # -- pipelines ----------------------------------------------------------------------------
    def build_pipeline(self, entry: PipelineEntry) -> None:
        d = self._d
        try:
            cubin, _log = nvrtc_compile(self._nvrtc, entry.compiled.source, entry.entry,
                                        self.arch)
        except CudaError as exc:
            raise self._compile_error(entry, str(exc), getattr(exc, "line", None)) from None
        module = ok(d.cuModuleLoadData(cubin), f"cuModuleLoadData of `{entry.entry}`")
        function = ok(d.cuModuleGetFunction(module, entry.entry.encode()),
                      f"cuModuleGetFunction `{entry.entry}`")
        entry.pipeline = function
        entry.layout = _Module(module, function, self._param_sizes(function))

    def _param_sizes(self, function: Any) -> list[int] | None:
        get = getattr(self._d, "cuFuncGetParamInfo", None)  # CUDA 12.4 and later
        if get is None:
            return None
        sizes = []
        while len(sizes) < 1024:
            res = get(function, len(sizes))
            if res[0] != self._ok_code:
                break
            sizes.append(int(res[2]))
        return sizes

    def _compile_error(self, entry: PipelineEntry, log: str, line: int | None) -> CompileError:
        where = generated_line_note(entry, line, "CUDA") if line is not None else ""
        detail = "\n    ".join(s for s in log.strip().splitlines() if s.strip())
        return CompileError(hinted(f"NVRTC refused the CUDA C++ of kernel "
                                   f"`{entry.definition.name}` ({entry.entry}):{where}\n  "
                                   f"NVRTC says:\n    {detail}",
                                   "a kernel cubelab accepted should compile: report it with "
                                   "the source (`cubelab cuda FILE::KERNEL` prints it)"))

    def forget_pipeline(self, entry: PipelineEntry) -> None:
        """An evicted kernel's module is unloaded (each held its cubin in device memory: a
        semester of edited re-runs grew the process by ~2.7 MiB per 1 000 on the H200). A
        queued launch may still run it, so the device is drained first — eviction is rare (the
        cache holds `pipeline_cache_size` kernels)."""
        layout = entry.layout
        if isinstance(layout, _Module):
            self.wait()
            self._d.cuModuleUnload(layout.module)
            entry.layout = None
            self._generation += 1  # a prepared launch's parameters and graphs name its function

    # -- dispatch -----------------------------------------------------------------------------
    def _info_ptr(self, info: bytes) -> int:
        ptr = self._info.get(info)
        if ptr is None:
            if len(self._info) >= _INFO_LIMIT:
                self.wait()  # queued launches may still read the blocks about to be freed
                for p in self._info.values():
                    self._d.cuMemFree(p)
                self._info.clear()
                self._generation += 1
            ptr = self._alloc(len(info))
            host = np.frombuffer(info, np.uint8)
            ok(self._d.cuMemcpyHtoD(ptr, host.ctypes.data, len(info)), "cuMemcpyHtoD (info)")
            self._info[info] = ptr
        return ptr

    def _params(self, entry: PipelineEntry, bindings: Bindings) -> _Params:
        """The parameters of the target's contract: a pointer per buffer, the info block, the
        loop guard's word if guarded. The info block goes by value where the kernel declares
        it so (a parameter wider than a pointer: the bytes are copied into it, no memory read
        in the kernel), else as a pointer to a copy in device memory."""
        slices = self.pool.slices
        name = entry.definition.name
        values = []
        align = self.properties.memory_alignment
        for b in bindings.buffers:
            s = slices.get(b.handle.id) or self.slice_of(b.handle, f"launch of `{name}`")
            # a view is passed from its offset rounded down to the binding alignment, as on
            # every runtime (handle.py `binding_start`)
            start = binding_start(b.handle, align) if b.handle.offset else 0
            values.append((s.page.storage + s.offset + start).to_bytes(8, "little"))
        info = entry.compiled.info.pack(bindings.scalars, bindings.lengths(),
                                        bindings.tensor_meta())
        guarded = entry.definition.loop_budget is not None
        sizes = entry.layout.param_sizes if isinstance(entry.layout, _Module) else None
        want = len(values) + 1 + guarded
        if sizes is not None and len(sizes) != want:
            raise CompileError(hinted(
                f"the CUDA C++ of kernel `{name}` ({entry.entry}) takes {len(sizes)} "
                f"parameters; the CUDA runtime passes {want} (one pointer per buffer, the "
                f"info block{', the loop guard word' if guarded else ''})",
                "this is cubelab's mistake, not your kernel's: report it with the source "
                "(`cubelab cuda FILE::KERNEL` prints it)"))
        info_size = sizes[len(values)] if sizes is not None else 8
        if sizes is not None and not _pointer_param(entry.compiled.source, entry.entry,
                                                    len(values)):
            if len(info) > info_size:
                raise CompileError(hinted(
                    f"kernel `{name}`: its info block is {len(info)} bytes at this launch, "
                    f"but the CUDA C++ takes {info_size} by value (tensor metadata does not "
                    "fit a by-value block; the target must pass it by pointer)",
                    "this is cubelab's mistake, not your kernel's: report it with the source "
                    "(`cubelab cuda FILE::KERNEL` prints it)"))
            values.append(info.ljust(info_size, b"\0"))
        else:
            values.append(self._info_ptr(info).to_bytes(8, "little"))
        if guarded:
            values.append(self._guard_ring.to_bytes(8, "little"))
        params = _Params(values, guarded)
        params.scalars = bindings.scalars
        return params

    def _prepared_params(self, entry: PipelineEntry, bindings: Bindings) -> _Params:
        rec = bindings.prepared
        if (rec is not None and rec.entry is entry and rec.generation == self._generation
                and rec.backend.scalars is bindings.scalars):
            return rec.backend  # type: ignore[no-any-return]
        params = self._params(entry, bindings)
        weakref.finalize(params, _bin_graphs, self._graph_bin, params.graphs)
        if rec is not None and rec.entry is entry:
            rec.backend, rec.generation = params, self._generation
        return params

    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        self.guard_slot = None
        if self._lost is not None:
            raise DeviceError(self._lost)  # hint: _lost's
        guarded = entry.definition.loop_budget is not None
        if guarded and self._guard_next >= _GUARD_SLOTS:
            self.settle_guards()
        params = self._prepared_params(entry, bindings)
        if guarded:
            slot = self._guard_next
            params.guard.value = self._guard_ring + slot * _GUARD_STRIDE  # type: ignore[union-attr]
        stream = self._stream(self.stream)
        bx, by, bz = entry.kernel_id.cube_dim.as_tuple()
        timing = self.timing_dispatch
        if timing:
            ok(self._d.cuEventRecord(self._events[0], stream), "cuEventRecord")
        (err,) = self._cu_launch(entry.pipeline, count.x, count.y, count.z, bx, by, bz, 0, stream,
                              params.address, 0)
        if err != self._ok_code:
            raise CudaError(f"cuLaunchKernel of `{entry.definition.name}` with {count.as_tuple()} "
                            f"cubes of {(bx, by, bz)} units failed: {error_name(self._d, err)}")
        if timing:
            ok(self._d.cuEventRecord(self._events[1], stream), "cuEventRecord")
            self._timed = self._events
        if guarded:
            self._guard_next = slot + 1
            self.guard_slot = slot

    def dispatch_seconds(self) -> float | None:
        """The GPU time of the last timed dispatch, between its two CUDA events."""
        timed, self._timed = self._timed, None
        if timed is None:
            return None
        d = self._d
        ok(d.cuEventSynchronize(timed[1]), "cuEventSynchronize")
        ms = ok(d.cuEventElapsedTime(timed[0], timed[1]), "cuEventElapsedTime")
        return float(ms) / 1e3

    repeats_dispatches = True

    def dispatch_repeats(self, rec: PreparedLaunch, bindings: Bindings, count: CubeCount,
                         stream: int, k: int, binds: list[Bindings] | None = None) -> int:
        # The launch's parameters are ready on its PreparedLaunch: a repeat is one
        # cuLaunchKernel (a guarded one's with the next status slot). A launch the driver
        # refuses ends the batch: it and the rest take the ordinary path, which reports it.
        # Launches that differ in their scalars (`binds`) each need their own parameters: they
        # take the ordinary path.
        self.guard_slot = None
        params = rec.backend
        if (binds is not None or rec.generation != self._generation
                or not isinstance(params, _Params) or params.scalars is not bindings.scalars
                or self._lost is not None):
            return 0
        entry = rec.entry
        guarded = params.guard is not None
        slot = self._guard_next
        if guarded:
            k = min(k, _GUARD_SLOTS - slot)
            if k <= 0:
                return 0
        launch, fn, addr, okc = self._cu_launch, entry.pipeline, params.address, self._ok_code
        st = self._stream(stream)
        x, y, z = count.x, count.y, count.z
        bx, by, bz = entry.kernel_id.cube_dim.as_tuple()
        done = 0
        if guarded:
            word, ring = params.guard, self._guard_ring
            for s in range(slot, slot + k):
                word.value = ring + s * _GUARD_STRIDE
                if launch(fn, x, y, z, bx, by, bz, 0, st, addr, 0)[0] != okc:
                    break
                done += 1
            self._guard_next = slot + done
            self.guard_slot = slot if done else None
            return done
        params.runs += 1
        if params.runs > 1 and k >= GRAPH_MIN:
            glaunch = self._graph_launch
            while k - done >= GRAPH_MIN:
                n = min(GRAPH_MAX, 1 << ((k - done).bit_length() - 1))
                graph = params.graphs.get((n, x, y, z), False)
                if graph is False:
                    graph = self._capture_run(params, entry, count, n)
                if graph is None or glaunch(graph, st)[0] != okc:
                    break
                done += n
        for _ in range(k - done):
            if launch(fn, x, y, z, bx, by, bz, 0, st, addr, 0)[0] != okc:
                break
            done += 1
        return done

    def _capture_run(self, params: _Params, entry: PipelineEntry, count: CubeCount,
                     n: int) -> Any:
        """A CUDA graph of `n` launches of `params` one after the other (None if the driver
        would not make one: the launches then go out one by one). Captured on a stream of its
        own that does not wait for the legacy stream, so nothing else can join the capture."""
        d = self._d
        key = (n, count.x, count.y, count.z)
        graph = None
        if len(params.graphs) < _GRAPHS_PER_LAUNCH:
            try:
                if self._capture_stream is None:
                    self._capture_stream = ok(d.cuStreamCreate(
                        d.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")
                cs = self._capture_stream
                bx, by, bz = entry.kernel_id.cube_dim.as_tuple()
                ok(d.cuStreamBeginCapture(
                    cs, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
                    "cuStreamBeginCapture")
                try:
                    for _ in range(n):
                        ok(self._cu_launch(entry.pipeline, count.x, count.y, count.z, bx, by,
                                           bz, 0, cs, params.address, 0), "capture")
                finally:
                    g = ok(d.cuStreamEndCapture(cs), "cuStreamEndCapture")
                graph = ok(d.cuGraphInstantiate(g, 0), "cuGraphInstantiate")
                d.cuGraphDestroy(g)
            except CudaError:
                graph = None
        params.graphs[key] = graph
        bin_ = self._graph_bin
        while bin_:
            d.cuGraphExecDestroy(bin_.pop())
        return graph

    # -- the loop guard -----------------------------------------------------------------------
    def read_guard_codes(self, slots: list[int]) -> dict[int, tuple[int, ...]]:
        if not slots:
            return {}
        lo, hi = min(slots), max(slots)
        n = (hi - lo + 1) * _GUARD_STRIDE
        host = np.empty(n, np.uint8)
        at = self._guard_ring + lo * _GUARD_STRIDE
        ok(self._d.cuMemcpyDtoH(host.ctypes.data, at, n), "cuMemcpyDtoH (loop guard)")
        ok(self._d.cuMemsetD8(at, 0, n), "cuMemsetD8 (loop guard)")
        self._guard_next = 0
        words = host.view(np.uint32)
        # one status word per slot: the guard's code (the CUDA C++ guard writes nothing else;
        # a dynamic count is read on the host, so no count-over-limit words follow)
        return {s: (int(words[s - lo]),) for s in slots}

