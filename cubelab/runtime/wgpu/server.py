"""The wgpu server: memory as storage buffers, pipelines by KernelId, batched submission.

Costs that shape this file (measured on lavapipe, see shared notes): `create_bind_group` ≈ 30 µs,
so bind groups are cached by (pipeline, buffers, info bytes); one submit per launch costs ≈ 60 µs
while a dispatch inside an open pass costs ≈ 16 µs, so dispatches queue in one open compute pass
and are submitted together when the device thread goes idle, when a read or sync needs them, or
when `max_tasks` are queued. WebGPU orders dispatches of one pass, so batching never reorders.

The trap: `queue.write_buffer` is ordered before *any* command buffer submitted after it, so a
host write must flush the queued dispatches first.
"""

from __future__ import annotations

import re
from typing import Any

from cubelab.compiler.wgsl import WgslTarget
from cubelab.errors import CompileError, DeviceError
from cubelab.runtime import events as ev
from cubelab.runtime.handle import Handle
from cubelab.runtime.kernel import Bindings, CubeCount
from cubelab.runtime.properties import DeviceProperties
from cubelab.runtime.server import PipelineEntry, Server

_CACHE_LIMIT = 4096


def _pad4(n: int) -> int:
    return max(4, (n + 3) & ~3)


def request_adapter() -> Any | None:
    """The best wgpu adapter, or None when the machine has none (no Vulkan driver, ...)."""
    try:
        import wgpu
    except ImportError:
        return None
    try:
        return wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception:  # noqa: BLE001 - "no adapter" comes in several shapes
        return None


class WgpuServer(Server):
    name = "wgpu<wgsl>"

    def __init__(self, bus: ev.EventBus, max_tasks: int = 64) -> None:
        super().__init__(bus)
        import wgpu

        self._wgpu = wgpu
        adapter = request_adapter()
        if adapter is None:
            raise DeviceError(
                "no wgpu adapter: install a Vulkan driver (on Debian/Ubuntu: "
                "apt-get install mesa-vulkan-drivers libvulkan1) or use Device.cpu()"
            )
        self.adapter = adapter
        limits = adapter.limits
        features = []
        for feat in ("subgroup", "shader-f16"):
            if feat in adapter.features:
                features.append(feat)
        self.device = adapter.request_device_sync(
            required_features=features,
            required_limits={
                "max-storage-buffers-per-shader-stage":
                    limits["max-storage-buffers-per-shader-stage"],
                "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
                "max-buffer-size": limits["max-buffer-size"],
            },
        )
        info = adapter.info
        self.properties = DeviceProperties(
            adapter=str(info.get("device", "?")),
            backend=str(info.get("backend_type", "?")),
            adapter_type=str(info.get("adapter_type", "?")),
            features=frozenset(features),
            max_storage_buffers=int(limits["max-storage-buffers-per-shader-stage"]),
        )
        self.queue = self.device.queue
        self.target = WgslTarget()
        self.max_tasks = max_tasks
        self._usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | \
            wgpu.BufferUsage.COPY_DST
        self.buffers: dict[int, Any] = {}
        self._info: dict[bytes, Any] = {}
        self._groups: dict[tuple[Any, ...], Any] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._queued = 0
        self._barrier = self.device.create_buffer(size=4, usage=self._usage)

    # -- memory -------------------------------------------------------------------------------
    def create(self, handle: Handle, data: bytes | None) -> None:
        size = _pad4(handle.size)
        if data is None:
            buf = self.device.create_buffer(size=size, usage=self._usage)
        else:
            padded = bytes(data) + b"\0" * (size - len(data))
            buf = self.device.create_buffer_with_data(data=padded, usage=self._usage)
        self.buffers[handle.id] = buf

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        self.flush("read")
        out = []
        for h in handles:
            data = self.queue.read_buffer(self.buffers[h.id], 0, _pad4(h.size))
            out.append(bytes(data[: h.size]))
        return out

    def sync(self) -> None:
        self.flush("sync")
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
            layout_entries.append({
                "binding": b.index,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.storage if b.writable else ro},
            })
        layout_entries.append({
            "binding": len(entry.definition.buffers),
            "visibility": wgpu.ShaderStage.COMPUTE,
            "buffer": {"type": ro},
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

    def _compile_error(self, entry: PipelineEntry, message: str) -> CompileError:
        lines = entry.compiled.source.splitlines()
        where = ""
        # parse errors say "┌─ wgsl:12:5", validation errors "┌─ :12:5"
        m = re.search(r"┌─ [^:\n]*:(\d+):(\d+)", message)
        if m:
            ln = int(m.group(1))
            text = lines[ln - 1] if 0 < ln <= len(lines) else ""
            where = f"\n  WGSL line {ln}: {text.strip()}"
            loc = entry.compiled.loc_of_line(ln)
            if loc is not None:
                src = entry.definition.source_lines
                idx = loc.line - entry.definition.first_line
                py = src[idx].strip() if 0 <= idx < len(src) else ""
                where += f"\n  from kernel line {loc}: {py}"
        short = message.strip().splitlines()
        detail = "\n    ".join(s for s in short if s.strip())
        return CompileError(
            f"wgpu refused the WGSL of kernel `{entry.definition.name}` ({entry.entry}):{where}"
            f"\n  naga says:\n    {detail}"
        )

    # -- dispatch -----------------------------------------------------------------------------
    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        info_bytes = entry.compiled.info.pack(bindings.scalars, bindings.lengths(),
                                              bindings.tensor_meta())
        info = self._info.get(info_bytes)
        if info is None:
            if len(self._info) >= _CACHE_LIMIT:
                self._info.clear()
                self._groups.clear()
            info = self.device.create_buffer_with_data(data=info_bytes, usage=self._usage)
            self._info[info_bytes] = info
        key = (entry.kernel_id, tuple(b.handle.id for b in bindings.buffers), info_bytes)
        group = self._groups.get(key)
        if group is None:
            resources = [
                {"binding": i, "resource": {"buffer": self.buffers[b.handle.id], "offset": 0,
                                            "size": _pad4(b.handle.size)}}
                for i, b in enumerate(bindings.buffers)
            ]
            resources.append({"binding": len(bindings.buffers),
                              "resource": {"buffer": info, "offset": 0, "size": len(info_bytes)}})
            group = self.device.create_bind_group(layout=entry.layout, entries=resources)
            self._groups[key] = group
        if self._pass is None:
            self._encoder = self.device.create_command_encoder()
            self._pass = self._encoder.begin_compute_pass()
        p = self._pass
        try:
            p.set_pipeline(entry.pipeline)
            p.set_bind_group(0, group)
            p.dispatch_workgroups(count.x, count.y, count.z)
        except Exception:
            # A refused command invalidates the whole encoder: drop it so later launches get a
            # fresh one. (Dispatches already queued in it are lost with it; the calling-thread
            # checks exist so that this does not happen.)
            self._pass = self._encoder = None
            self._queued = 0
            raise
        self._queued += 1
        if self._queued >= self.max_tasks:
            self.flush("max_tasks")

    def flush(self, why: str) -> None:
        if self._pass is None:
            return
        self._pass.end()
        self.queue.submit([self._encoder.finish()])
        n, self._queued = self._queued, 0
        self._pass = self._encoder = None
        if self.bus.active:
            self.bus.publish(ev.Flushed(n, why))
