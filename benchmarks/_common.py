"""Shared helpers for the benchmarks: a raw wgpu-py baseline and table printing.

Each benchmark measures cubelab and its baseline in the same run and prints the ratio; none of
them asserts a time (timed assertions do not belong in tests).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the suite's kernels: tests.fixtures, tests.zoo
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubelab-xdg-")


def best_of(fn: Callable[[], float], repeats: int = 5) -> float:
    """The minimum of `repeats` runs of `fn` (which returns seconds): the least noisy estimate."""
    return min(fn() for _ in range(repeats))


def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = [f"## {title}", "",
             "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in cols[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    return "\n".join(lines)


class RawWgpu:
    """The baseline: the same WGSL through wgpu-py directly, pipeline and bind group prebuilt."""

    def __init__(self) -> None:
        import wgpu

        self.wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        self.adapter = adapter
        self.device = adapter.request_device_sync(required_limits={
            "max-storage-buffer-binding-size": adapter.limits["max-storage-buffer-binding-size"],
            "max-buffer-size": adapter.limits["max-buffer-size"],
        })
        self.usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                      | wgpu.BufferUsage.COPY_DST)

    def buffer(self, data: bytes) -> Any:
        return self.device.create_buffer_with_data(data=data, usage=self.usage)

    def pipeline(self, wgsl: str, entry: str, buffers: list[tuple[Any, bool]]) -> tuple[Any, Any]:
        wgpu = self.wgpu
        module = self.device.create_shader_module(code=wgsl)
        # cubelab's WGSL declares every buffer argument read_write (pooled slices share pages;
        # docs/runtime.md, "Memory") and the info block, last, read-only; the layout must match
        ro = wgpu.BufferBindingType.read_only_storage
        entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": ro if i == len(buffers) - 1 else
                               wgpu.BufferBindingType.storage}}
                   for i in range(len(buffers))]
        bgl = self.device.create_bind_group_layout(entries=entries)
        pl = self.device.create_pipeline_layout(bind_group_layouts=[bgl])
        pipe = self.device.create_compute_pipeline(layout=pl, compute={"module": module,
                                                                        "entry_point": entry})
        group = self.device.create_bind_group(layout=bgl, entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, (b, _) in enumerate(buffers)])
        return pipe, group

    def launch(self, pipe: Any, group: Any, count: tuple[int, int, int]) -> None:
        enc = self.device.create_command_encoder()
        p = enc.begin_compute_pass()
        p.set_pipeline(pipe)
        p.set_bind_group(0, group)
        p.dispatch_workgroups(*count)
        p.end()
        self.device.queue.submit([enc.finish()])

    def sync(self, buf: Any) -> None:
        self.device.queue.read_buffer(buf, 0, 4)

    def per_launch(self, pipe: Any, group: Any, count: tuple[int, int, int], reps: int,
                   buf: Any) -> float:
        """Seconds per launch of `reps` one-submit launches, after one untimed launch (the GPU
        busy and clocked up when the timing starts), synced on `buf`."""
        self.launch(pipe, group, count)
        self.sync(buf)
        t0 = time.perf_counter()
        for _ in range(reps):
            self.launch(pipe, group, count)
        self.sync(buf)
        return (time.perf_counter() - t0) / reps


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
