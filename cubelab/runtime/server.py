"""The bookkeeping every server shares, written once: KernelId cache, compile pipeline, failures.

A concrete server (`runtime/wgpu/server.py`, ...) supplies memory, a target and `dispatch`; this
base class does the rest on the device thread, in the seed's order:

1. compile-or-reuse by KernelId (miss: `define()` → passes → codegen → pipeline), publishing
   CompileStarted / CompileFinished or CacheHit;
2. a kernel that cannot be compiled (expansion error, codegen error, the driver's refusal) puts
   its error on every buffer the launch would write — failure is buffer state, not a return
   value: `launch` returned long ago, so the error waits on the buffers and `read` raises it;
3. a dispatch that succeeds makes its outputs clean again (a relaunch repairs a failed buffer).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from cubelab.compiler.base import CompiledSource
from cubelab.errors import BufferFailure, CubeError, KernelSourceError
from cubelab.ir.core import KernelDefinition
from cubelab.ir.passes import CheckedIo, CheckedIoRule, PassManager
from cubelab.ir.printer import print_kernel
from cubelab.runtime import events as ev
from cubelab.runtime.handle import Handle
from cubelab.runtime.kernel import Bindings, CubeCount, CubeKernel, ExecutionMode, KernelId


@dataclass
class CompilationOptions:
    """Compiler settings of a server (not part of the KernelId: changing them clears the cache).

    `checked_io`: "fixed" clamps checked indices to len-1 (the documented intent);
    "cubecl-0.11.3" reproduces the seed's finding that the pass never fires on global buffers.
    """

    checked_io: CheckedIoRule = "fixed"


@dataclass
class PipelineEntry:
    kernel_id: KernelId
    entry: str
    compiled: CompiledSource
    definition: KernelDefinition
    pipeline: Any = None
    layout: Any = None
    extra_sources: dict[str, str] = field(default_factory=dict)


@dataclass
class _Compiled:
    entry: PipelineEntry
    expanded_ir: str
    passes: tuple[tuple[str, str, str], ...]
    expand_s: float
    passes_s: float
    codegen_s: float
    driver_s: float


class ExpansionPanicked(CubeError):
    """`define()` raised something other than a KernelSourceError (a bug in a kernel helper, a
    Python error inside expansion): the seed's `CompilationError::ExpansionPanicked`."""


class Server:
    name = "server"
    target: Any = None

    def __init__(self, bus: ev.EventBus) -> None:
        self.bus = bus
        self.options = CompilationOptions()
        self.pipelines: dict[KernelId, PipelineEntry] = {}
        self.failures: dict[int, tuple[str, BaseException]] = {}

    # -- memory (per backend) -----------------------------------------------------------------
    def create(self, handle: Handle, data: bytes | None) -> None:
        raise NotImplementedError

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def flush(self, why: str) -> None:
        """Submit queued work (backends that batch override this)."""

    # -- compile (shared) ---------------------------------------------------------------------
    def set_options(self, **changes: Any) -> None:
        for k, v in changes.items():
            if not hasattr(self.options, k):
                raise ValueError(f"unknown compilation option {k!r}")
            setattr(self.options, k, v)
        self.clear_cache(f"compilation options changed: {changes}")

    def clear_cache(self, reason: str) -> None:
        self.pipelines.clear()
        self.bus.publish(ev.CacheCleared(reason))

    def passes(self, kernel_id: KernelId) -> PassManager:
        pm = PassManager()
        if kernel_id.mode is ExecutionMode.Checked:
            pm.passes.append(CheckedIo(self.options.checked_io))
        return pm

    def build_pipeline(self, entry: PipelineEntry) -> None:
        """Turn generated source into something dispatchable (per backend)."""

    def extra_targets(self, definition: KernelDefinition) -> dict[str, str]:
        """Other targets' source for the same definition (e.g. MSL, shown but not run)."""
        return {}

    def compile(self, kernel: CubeKernel, kernel_id: KernelId, seq: int) -> "_Compiled":
        self.bus.publish(ev.CompileStarted(kernel.name, kernel_id, seq))
        t0 = time.perf_counter()
        try:
            definition = kernel.define()
        except KernelSourceError:
            raise
        except CubeError:
            raise
        except Exception as exc:
            tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            raise ExpansionPanicked(f"expansion of kernel `{kernel.name}` panicked: {tb}") from exc
        t1 = time.perf_counter()
        expanded_ir = print_kernel(definition)
        records = self.passes(kernel_id).run(definition, record=True)
        t2 = time.perf_counter()
        compiled = self.target.compile(definition)
        t3 = time.perf_counter()
        entry = PipelineEntry(kernel_id, definition.entry, compiled, definition)
        entry.extra_sources = self.extra_targets(definition)
        self.build_pipeline(entry)
        t4 = time.perf_counter()
        passes = tuple((r.name, r.before, r.after) for r in records)
        return _Compiled(entry, expanded_ir, passes, t1 - t0, t2 - t1, t3 - t2, t4 - t3)

    # -- launch (shared) ----------------------------------------------------------------------
    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        raise NotImplementedError

    def wait(self) -> None:
        """Block until the device has finished everything submitted."""
        self.sync()

    def launch(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings, seq: int,
               profile: bool = False) -> None:
        kernel_id = kernel.id()
        entry = self.pipelines.get(kernel_id)
        fresh = entry is None
        compiled: _Compiled | None = None
        if entry is None:
            try:
                compiled = self.compile(kernel, kernel_id, seq)
            except BaseException as exc:  # noqa: BLE001 - becomes buffer state
                self.bus.publish(ev.CompileFailed(kernel.name, kernel_id, exc, seq))
                self._fail(kernel.name, kernel_id, bindings.buffers_written(), exc, seq)
                return
            entry = compiled.entry
            self.pipelines[kernel_id] = entry
        else:
            self.bus.publish(ev.CacheHit(kernel.name, kernel_id, entry.entry, seq))

        t0 = time.perf_counter()
        try:
            self.dispatch(entry, count, bindings)
            if fresh or profile:
                self.flush("profile" if profile else "first-dispatch")
                self.wait()
        except BaseException as exc:  # noqa: BLE001
            self._fail(kernel.name, kernel_id, bindings.buffers_written(), exc, seq)
            return
        elapsed = time.perf_counter() - t0
        for h in bindings.buffers_written():
            self.failures.pop(h.id, None)
        self.bus.publish(
            ev.LaunchDispatched(kernel.name, kernel_id, entry.entry, count.as_tuple(), seq)
        )
        if compiled is not None:
            c = compiled
            self.bus.publish(
                ev.CompileFinished(
                    kernel.name, kernel_id, entry.entry, entry.compiled.target,
                    entry.compiled.source, print_kernel(entry.definition), c.expanded_ir,
                    c.passes, c.expand_s, c.passes_s, c.codegen_s, c.driver_s + elapsed, seq,
                    extra_sources=dict(entry.extra_sources),
                )
            )
        if profile:
            self.bus.publish(
                ev.ProfileSample(kernel.name, kernel_id, kernel.profile_tag, elapsed, seq)
            )

    def _fail(self, name: str, kernel_id: KernelId, written: list[Handle], exc: BaseException,
              seq: int) -> None:
        for h in written:
            self.failures[h.id] = (name, exc)
        self.bus.publish(
            ev.LaunchFailed(name, kernel_id, exc, tuple(h.id for h in written), seq)
        )

    def read(self, handles: list[Handle]) -> list[bytes]:
        for h in handles:
            failure = self.failures.get(h.id)
            if failure is not None:
                raise BufferFailure(h.id, failure[0], failure[1])
        return self.read_bytes(handles)
