"""The bookkeeping every server shares, written once: KernelId cache, compile pipeline, failure
ledger, streams, dry-run skips, dynamic counts and graph capture.

A concrete server (`runtime/wgpu/server.py`, `runtime/cpu/`) supplies memory, a target and a
handful of hooks; this base class runs the second hop of a launch on the device thread, in the
seed's order:

1. **compile-or-reuse** by KernelId (miss: `define()` → passes → codegen → pipeline), publishing
   CompileStarted / CompileFinished or CacheHit. Compiling comes first because the write set is
   laid out from what the *compiled* kernel writes (`buffer_io.py`). A kernel that cannot be
   compiled has no IR to ask, so its failure lands on the *declared* write set
   (`buffers_written(None)`, via `ExecuteScope.failed_writing`);
2. **dry run**: a `LaunchMode.Skip` verdict returns here — after compiling and caching, before
   any buffer is claimed, aligned or dispatched;
3. **align** the launch's stream with every stream that last touched one of its buffers;
4. **ExecuteScope.launching**: skip if a read buffer (the dynamic count's included) carries a
   failure, else claim the write set, run the body (resolve a dynamic count, check the device's
   limits, `dispatch`), release or replace;
5. **register** the task on its stream (flushed at `max_tasks`, on a read/sync that depends on
   it, when another stream shares a buffer, or when the device thread goes idle).

Launches queued back to back (a Python loop; the runner gathers them) come as one `launch_run`:
repeats of a launch, and launches whose bindings were prepared before, skip steps 1-4 where
those could not change anything anyone sees, and encode only the dispatch and the task
(`launch_run` says when).

Memory (shared, `memory_pool.py`): every handle is a slice of a page of the device's pool. The
backend supplies the driver calls — `alloc_page(size)`, `free_page(storage)`, `place(handle,
slice, data, zero)` (write `data`, or zeroes when `zero`, into a slice just reserved) and
`forget_bindings(handle_id)` (drop caches keyed by a released handle) — and this class keeps the
books: `alloc`, `release` (when a handle dies or is freed), `memory_usage`, `memory_cleanup`.
A released slice is reused at once, except on a backend whose queued work only runs when its
stream is submitted (`defers_release`, wgpu): while work queued on the handle's stream is not
submitted yet, the slice waits (`MemoryReleaseDeferred`) and returns to the pool right after that
stream's flush. Without this wait, a `queue.write_buffer` of the slice's next owner would land
*before* the queued dispatch that still reads the old contents.

Backend hooks (keep them stable; `runtime/cpu/` implements the same set):
`read_bytes(handles)`, `sync()` (a barrier), `wait()`,
`dispatch(entry, count, bindings)` (on stream `self.stream`; `count` is always static here),
`build_pipeline(entry)`, and optionally `submit_stream(stream)` (send a stream's queued work;
default: nothing to send), `write_bytes(handle, data)`,
`resolve_dynamic_count(handle)` (default: drain and read the 12 bytes on the host; return None
to dispatch indirectly instead), `take_async_errors()` (errors the driver reported on the side).

Size: ~1 200 lines, over the project's ~700, on purpose: it is the seed's second hop written
once for every backend, and its steps share one lock-free device-thread state (cache, ledger,
streams, pool); split, each half would reach into the other's state. `launch_run` (runs of
launches: repeats and prepared launches, ~230 lines) is the ordinary launch's fast path over that
same state — its claims, tallies and failure bookkeeping, whose every condition it must mirror —
and is read next to it for that reason; every backend (wgpu, CUDA) uses it through two hooks.
"""

from __future__ import annotations

import struct
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

from cubelab.compiler.base import CompiledSource
from cubelab.compiler.options import CompilationOptions, options_key
from cubelab.compiler.pipeline import check_cube_dim, compile_definition, paused_gc
from cubelab.compiler.targets import shown_targets
from cubelab.errors import (
    CaptureError,
    CompileNoticeWarning,
    CubeError,
    DeviceFault,
    KernelSourceError,
    LoopGuardError,
    ResourceError,
    hinted,
)
from cubelab.ir.core import KernelDefinition
from cubelab.ir.passes import GUARD_BUDGET, GUARD_DRIVER, loop_guard_message
from cubelab.ir.printer import print_kernel_mapped
from cubelab.runtime import events as ev
from cubelab.runtime.buffer_io import BufferIO, buffer_io
from cubelab.runtime.capture import Capture, CaptureAllocation, Recorded
from cubelab.runtime.dry_run import LaunchMode
from cubelab.runtime.execute_scope import (
    UNTOUCHED,
    ExecuteScope,
    Failure,
    FailureLedger,
    LaunchInfo,
    fail_buffers,
)
from cubelab.runtime.handle import Handle, refuse_released
from cubelab.runtime.kernel_id import CubeKernel, KernelId
from cubelab.runtime.launch_args import Bindings, CubeCount
from cubelab.runtime.launch_checks import launch_refusal
from cubelab.runtime.memory_pool import MemoryConfiguration, MemoryPool, MemoryUsage, Slice
from cubelab.runtime.properties import allocation_refusal
from cubelab.runtime.store import (CompilationStore, class_identity, content_digest,
                                   store_key)
from cubelab.runtime.streams import StreamScheduler, Task


@dataclass
class PipelineEntry:
    kernel_id: KernelId
    entry: str
    compiled: CompiledSource
    definition: KernelDefinition
    pipeline: Any = None
    layout: Any = None
    extra_sources: dict[str, str] = field(default_factory=dict)
    io: tuple[BufferIO, ...] | None = None  # what the compiled IR reads/writes, per buffer
    # the same answer as binding indices, so a cache-hit launch does no fallback walk
    written_idx: tuple[int, ...] = ()
    read_idx: tuple[int, ...] = ()


@dataclass(slots=True)
class PreparedLaunch:
    """What the device thread derives from one launch's `Bindings` for one pipeline: the write
    set with binding names, the read set, every buffer it touches, and the backend's dispatch
    state (wgpu: the bind group, valid while `generation` is the backend's). Kept on the
    Bindings (`Bindings.prepared`), which the calling thread reuses for a launch whose arguments
    are the very same objects — so a loop of identical launches walks the fallback chain and
    builds the bind-group key once, not per launch.

    The lists are shared by every launch of those bindings: whoever keeps one (a queued
    `Task`, the loop guard's window) keeps it read-only, and so must everyone who reads it."""

    entry: PipelineEntry
    written: list[tuple[Handle, str]]
    reads: list[Handle]
    touched: list[Handle]
    backend: Any = None
    generation: int = -1
    # what a launch of these bindings must fail with (`runtime/launch_checks.py`), or None
    refusal: Exception | None = None


@dataclass
class _Compiled:
    entry: PipelineEntry
    ir: str  # the IR text after the passes
    expanded_ir: str
    passes: tuple[tuple[str, str, str], ...]
    expand_s: float
    passes_s: float
    codegen_s: float
    driver_s: float
    origin: str = "compiled"  # "compiled" | "loaded" | "rekeyed" (runtime/store.py)
    load_s: float = 0.0
    # what the store still has to write, after the first dispatch: (key, content digest,
    # whether the object is new)
    store: tuple[str, str, bool] | None = None
    texts: bool = True  # whether the IR texts were printed (someone listened)


_UNOPENED: Any = object()  # a server's store before its first compile opens it


# The compiled kernels a server keeps (`Server.pipeline_cache_size`, per server). Every edit of a
# kernel in a notebook is a new KernelId, and each entry holds its IR, its sources and the
# backend's pipeline — measured ≈ 160 KB per kernel on lavapipe, ≈ 43 KB on the CPU runtime — so
# an unbounded cache grew by that for every edit, for the life of the kernel process (a semester
# of 1 000 edited re-runs: +160 / +43 MiB). Beyond the cap the kernel compiled longest ago is
# dropped (first in, first out: a cache hit does no bookkeeping) and compiles again when next
# launched.
PIPELINE_CACHE_SIZE = 256

# The status code a dynamic count's check writes when a dimension is over the device's limit
# (after it: the count's x, y, z). Above the loop guard's codes (`ir/passes.py`), which a
# kernel that never ran cannot have written.
COUNT_OVER_LIMIT = 4 << 24


def cube_count_refusal(kernel: str, count: tuple[int, ...], limit: int, dynamic: bool) -> str:
    """What a launch over the device's cubes-per-dimension limit fails with, on every runtime
    (a static count is refused on the device thread; a dynamic one where it is read: on the
    host by the CPU runtime, on the GPU by wgpu's check, settled later)."""
    what = "the dynamic cube count" if dynamic else "cube count"
    return (f"launch of `{kernel}`: {what} {tuple(count)} exceeds the device limit of {limit} "
            "cubes per dimension, so nothing was run\n  hint: spread the cubes over more "
            "dimensions (x, y, z each up to the limit) or loop inside the kernel")


class ExpansionPanicked(CubeError):
    """`define()` raised something other than a KernelSourceError (a bug in a kernel helper, a
    Python error inside expansion): the seed's `CompilationError::ExpansionPanicked`."""


def generated_line_note(entry: PipelineEntry, line: int, language: str) -> str:
    """"\n  WGSL line 12: <text>\n  from kernel line <loc>: <python>": where a driver's
    complaint about generated line `line` points, in the generated text and in the kernel's
    own source (for every server's compile errors)."""
    lines = entry.compiled.source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    where = f"\n  {language} line {line}: {text.strip()}"
    loc = entry.compiled.loc_of_line(line)
    if loc is not None:
        src = entry.definition.source_lines
        idx = loc.line - entry.definition.first_line
        py = src[idx].strip() if 0 <= idx < len(src) else ""
        where += f"\n  from kernel line {loc}: {py}"
    return where


def _written_pairs(bindings: Bindings, io: tuple[BufferIO, ...] | None) -> list[tuple[Handle, str]]:
    return [(b.handle, b.name) for b in bindings.written(io)]


class Server:
    name = "server"
    target: Any = None
    properties: Any = None

    def __init__(self, bus: ev.EventBus, max_tasks: int = 64) -> None:
        self.bus = bus
        self.options = CompilationOptions()
        self.pipelines: dict[KernelId, PipelineEntry] = {}
        self.pipeline_cache_size = PIPELINE_CACHE_SIZE
        self.ledger = FailureLedger()
        self.scheduler = StreamScheduler(bus, self.submit_stream, self._submit_failed, max_tasks,
                                         after_flush=self._release_deferred,
                                         join=self.join_stream if self.joins_streams else None)
        self.pool: MemoryPool = None  # type: ignore[assignment] - set by init_memory
        self._deferred: dict[int, list[tuple[int, str]]] = {}  # stream -> (handle id, why)
        self.captures: dict[int, Capture] = {}
        self.faults: list[BaseException] = []  # device faults: sync() reports them
        self.stream = 0  # the stream of the dispatch being encoded (read by `dispatch`)
        # KernelId -> [kernel, entry, count, first_seq, last_seq, last_t]: cache hits not yet
        # published as a CacheHits event (only counted while someone subscribes to those).
        self._hit_tallies: dict[KernelId, list[Any]] = {}
        # The loop guard on a device that runs ahead (wgpu): a guarded dispatch's status word is
        # only known once the GPU has run it, so from the first pending guarded launch on, every
        # launch is noted (who it read, who it wrote) until the next read, check, sync or host
        # write settles them (`settle_guards`). `guard_slot` is set by `dispatch` for a guarded
        # launch: the slot of its status word.
        self.guard_slot: int | None = None
        self._guard_window: list[tuple[Any, ...]] | None = None
        # what the launch being executed did (set by `_dispatch_body`, read by `_execute`)
        self._dispatched = self._zero_count = False
        # cubes per dimension the device takes, read from `_max_cubes_of` (the properties;
        # unlimited where they do not say)
        self._max_cubes: float = float("inf")
        self._max_cubes_of: Any = None

    # -- memory (per backend) -----------------------------------------------------------------
    defers_release = False  # True where queued work runs only when its stream is submitted
    # True where the device runs beside the calling thread (a GPU): a large launch is handed
    # to the device before `launch` returns (gate 5, `runtime/client.py`)
    hands_off_large = False

    def init_memory(self, config: MemoryConfiguration) -> None:
        self.pool = MemoryPool(config, self.alloc_page, self.free_page)

    def alloc_page(self, size: int) -> Any:
        """Ask the driver / the OS for `size` bytes (zeroed)."""
        raise NotImplementedError

    def free_page(self, storage: Any) -> None:
        """Give a page back (nothing of it is in use)."""

    def place(self, handle: Handle, s: Slice, data: bytes | None, zero: bool) -> None:
        """Make `s` the memory of `handle`: write `data` (zero-padded), or zeroes if `zero`."""
        raise NotImplementedError

    def forget_bindings(self, handle_id: int) -> None:
        """Drop whatever the backend cached for a released handle (bind groups, views)."""

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        raise NotImplementedError

    def write_bytes(self, handle: Handle, data: bytes) -> None:
        """Host write into existing memory."""
        self.place(handle, self.slice_of(handle, "write"), data, False)

    def slice_of(self, handle: Handle, what: str = "use") -> Slice:
        """The live slice of `handle`, or `ReleasedHandleError` (never another buffer's bytes:
        handle ids are never reused)."""
        s = self.pool.slices.get(handle.id)
        if s is None or handle.id in self.pool.pending:
            refuse_released(handle, what)
        return s  # type: ignore[return-value]

    def sync(self) -> None:
        """Backend barrier: block until the device finished everything submitted."""
        self.wait()

    def wait(self) -> None:
        """Block until the device has finished everything submitted."""

    def submit_stream(self, stream: int) -> None:
        """Send the work queued on `stream` to the device (batching backends override it)."""

    def take_async_errors(self) -> list[BaseException]:
        """Errors the driver reported on the side since the last call (wgpu's logged errors)."""
        return []

    joins_streams = False  # True where streams run side by side and `join_stream` orders them

    def join_stream(self, stream: int, other: int) -> None:
        """Make `stream`'s later work wait for the work submitted on `other` (the scheduler's
        dependency inference found a buffer they share)."""

    # set by `launch` around a profiled dispatch: a backend with device timers times it
    timing_dispatch = False

    def dispatch_seconds(self) -> float | None:
        """The device's own time of the last dispatch made with `timing_dispatch` set (after
        the wait), or None where the device has no timer: the host's time is used then."""
        return None

    @property
    def max_tasks(self) -> int:
        return self.scheduler.max_tasks

    @max_tasks.setter
    def max_tasks(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(hinted(f"max_tasks must be a positive int, got {n!r}",
                                    "e.g. client.set_max_tasks(64), the default"))
        self.scheduler.max_tasks = n

    def flush(self, why: str) -> None:
        """Submit every stream's queued work (the runner calls `flush("idle")`)."""
        self.publish_hit_tallies()
        self.scheduler.flush_all(why)

    def publish_hit_tallies(self) -> None:
        """Publish the cache hits counted since the last tally, one CacheHits per KernelId."""
        tallies = self._hit_tallies
        if not tallies:
            return
        self._hit_tallies = {}
        for kid, (kernel, entry, count, first, last, t) in tallies.items():
            self.bus.publish(ev.CacheHits(kernel, kid, entry, count, first, last, t))

    def _tally_hits(self, kernel: str, kernel_id: KernelId, entry: PipelineEntry, first: int,
                    last: int, n: int) -> None:
        """Count `n` cache hits (launches `first`..`last`) towards the next CacheHits."""
        tally = self._hit_tallies.get(kernel_id)
        if tally is None:
            self._hit_tallies[kernel_id] = [kernel, entry.entry, n, first, last,
                                            time.perf_counter()]
        else:
            tally[2] += n
            tally[4] = last
            tally[5] = time.perf_counter()

    def _submit_failed(self, tasks: list[Task], exc: BaseException) -> None:
        # The driver refused a whole submission: every task in it carries the refusal.
        for t in tasks:
            if t.written:
                for seq in t.launches:  # a run's task: each of its launches, in order
                    info = LaunchInfo(t.kernel, t.kernel_id or _NO_ID, seq)
                    fail_buffers(self.ledger, self.bus, info, t.written, exc)

    # -- calls from the client (device thread) ------------------------------------------------
    def alloc(self, handle: Handle, data: bytes | None, stream: int, zero: bool = False) -> None:
        cap = self.captures.get(stream) if self.captures else None
        if cap is not None and data is not None:
            # a buffer made with host data: the window's launches would read data a graph
            # cannot carry (capture.py)
            raise cap.refuse(f"create_from_slice of {handle.size} bytes (a host copy: make it "
                             "before start_capture, or create it empty inside)"
                             )  # hint: Capture.refuse's
        too_big = allocation_refusal(handle.size, self.properties, self.name)
        if too_big is not None:
            raise ResourceError(too_big)  # hint: allocation_refusal's
        pool = self.pool
        pages = pool.pages_created
        try:
            s, reused = pool.reserve(handle.id, handle.size)
            # a new page is zeroed already; a reused slice holds its last owner's bytes
            self.place(handle, s, data, zero and reused)
        except Exception as exc:  # noqa: BLE001 - OOM, over the device's buffer limit, ...
            pool.release(handle.id)
            self.take_async_errors()
            raise ResourceError(hinted(f"cannot allocate {handle.size} bytes on {self.name}: "
                                       f"{type(exc).__name__}: {str(exc).strip()}",
                                       "free buffers you no longer need (del, client.free), "
                                       "then client.memory_cleanup(); or allocate less"
                                       )) from None
        if cap is not None:  # allowed inside the window (a software graph), and recorded
            cap.allocations.append(CaptureAllocation(handle.id, handle.size,
                                                     pool.pages_created != pages))
        bus = self.bus
        if bus.active:
            if pool.pages_created != pages and bus.wants(ev.PageAllocated):
                page = s.page
                bus.publish(ev.PageAllocated(page.id, page.pool, page.size))
            if bus.wants(ev.MemoryAllocated):
                bus.publish(ev.MemoryAllocated(handle.id, handle.size, s.size, s.page.pool,
                                               s.page.id, s.offset, reused))

    def release(self, handle_id: int, why: str = "dropped") -> None:
        """A handle died (`why` "dropped") or was freed: its failure record, stream record and
        cached bindings go now; its slice goes back to the pool now, or — where queued work
        still uses it — right after that work's stream is submitted."""
        pool = self.pool
        if handle_id not in pool.slices or handle_id in pool.pending:
            return
        self.ledger.forget_id(handle_id)
        stream = self.scheduler.last_stream.pop(handle_id, None)
        self.forget_bindings(handle_id)
        if self.defers_release and stream is not None and self.scheduler.pending(stream):
            pool.pending.add(handle_id)
            self._deferred.setdefault(stream, []).append((handle_id, why))
            if self.bus.wants(ev.MemoryReleaseDeferred):
                self.bus.publish(ev.MemoryReleaseDeferred(handle_id, stream, why))
            return
        self._give_back(handle_id, why, False)

    def _give_back(self, handle_id: int, why: str, deferred: bool) -> None:
        s = self.pool.slices.get(handle_id)
        if s is None:
            return
        page, offset, size = s.page, s.offset, s.requested
        self.pool.release(handle_id)
        if self.bus.wants(ev.MemoryReleased):
            self.bus.publish(ev.MemoryReleased(handle_id, size, page.pool, page.id, offset, why,
                                               deferred))

    def _release_deferred(self, stream: int) -> None:
        """The scheduler handed `stream`'s queued work over: its deferred slices are free."""
        if self._deferred:
            for handle_id, why in self._deferred.pop(stream, ()):
                self._give_back(handle_id, why, True)

    def memory_usage(self) -> MemoryUsage:
        return self.pool.usage()

    def memory_cleanup(self) -> MemoryUsage:
        """Give every page without a live slice back to the driver / the OS. Submits and waits
        first: a page may be freed only when no submitted work can still touch it."""
        self.flush("cleanup")
        self.sync()
        freed = self.pool.cleanup()
        if self.bus.wants(ev.MemoryCleanedUp):
            self.bus.publish(ev.MemoryCleanedUp(tuple(p.id for p in freed),
                                                sum(p.size for p in freed)))
        return self.pool.usage()

    # -- the loop guard's late verdicts ---------------------------------------------------------
    def read_guard_codes(self, slots: list[int]) -> dict[int, tuple[int, ...]]:
        """The status words of these slots (after the GPU ran them; the code first, then what
        the code carries), cleared for reuse."""
        return {}

    def settle_guards(self) -> None:
        """Turn the status words of pending guarded launches into buffer state: a tripped
        launch's write set fails with a `LoopGuardError` naming its loop, and a launch that
        later read one of those buffers fails with the same root cause, as seed 001's skip
        would have done had the verdict been known at launch time (the launch did run, on
        garbage). A clean write in between repairs the buffer, as always."""
        window = self._guard_window
        if window is None:
            return
        self._guard_window = None
        self.flush("loop-guard")
        codes = self.read_guard_codes([w[3] for w in window if w[3] is not None])
        failed: dict[int, Failure] = {}
        for info, reads, written, slot, definition in window:
            words = codes.get(slot, (0,)) if slot is not None else (0,)
            code = words[0]
            if code:
                err: CubeError
                if code == COUNT_OVER_LIMIT:
                    err = ResourceError(cube_count_refusal(
                        info.kernel, tuple(words[1:4]),
                        getattr(self.properties, "max_cubes_per_dim", 0), True))
                else:
                    driver = code < GUARD_BUDGET
                    guard = code - (GUARD_DRIVER if driver else GUARD_BUDGET)
                    device = getattr(self.properties, "adapter", "")
                    err = LoopGuardError(loop_guard_message(definition, guard, driver,
                                                            definition.loop_budget, device))
                fail_buffers(self.ledger, self.bus, info, written, err)
                for h, _ in written:
                    failed[h.id] = self.ledger.get(h)  # type: ignore[assignment]
                continue
            root = next((failed[h.id] for h in reads if h.id in failed), None)
            if root is None:
                for h, _ in written:
                    failed.pop(h.id, None)
                continue
            propagated = root.skipping(info.kernel)
            self.ledger.put(written, propagated)
            if self.bus.active and written:
                self.bus.publish(ev.BufferFailed(info.kernel, tuple(h.id for h, _ in written),
                                                 root.error, root.kernel, info.launch_seq))
            for h, _ in written:
                failed[h.id] = propagated

    def _note_guard(self, info: LaunchInfo, entry: PipelineEntry, reads: list[Handle],
                    written: list[tuple[Handle, str]], slot: int | None) -> None:
        if self._guard_window is None:
            self._guard_window = []
        # (the lists are a PreparedLaunch's, read-only: kept as they are)
        self._guard_window.append((info, reads, written, slot, entry.definition))

    def read(self, handles: list[Handle], stream: int = 0) -> list[bytes]:
        self._reject_in_capture(stream, "read")
        # Flush first: a submission the driver refuses fails its buffers *now*, and the read
        # must see that rather than return the bytes the refused work never wrote.
        self.scheduler.flush_for(handles, "read")
        self.settle_guards()
        self._collect_async()
        for h in handles:
            err = self.ledger.error_for(h)
            if err is not None:
                raise err
        return self.read_bytes(handles)

    def check(self, handles: list[Handle]) -> None:
        """A read check without the read: raise the failure a buffer carries, if any."""
        self.settle_guards()
        for h in handles:
            err = self.ledger.error_for(h)
            if err is not None:
                raise err

    def sync_buffers(self, handles: list[Handle], stream: int = 0) -> None:
        """Barrier, then answer: wait for the work touching `handles`, then `check` them."""
        self._reject_in_capture(stream, "sync_buffers")
        self.scheduler.flush_for(handles, "sync")
        self.sync()
        self._collect_async()
        self.check(handles)  # settles the loop guard's pending verdicts first

    def device_sync(self, stream: int = 0) -> None:
        """`client.sync()`: wait for everything; report device faults only (launch failures
        live on the buffers they did not write)."""
        self._reject_in_capture(stream, "sync")
        self.flush("sync")
        self.sync()
        self.settle_guards()
        self._collect_async()
        if self.faults:
            faults, self.faults = self.faults, []
            raise DeviceFault(hinted("the device reported a fault:\n" + "\n".join(
                f"  {type(f).__name__}: {f}" for f in faults), "the faults are the driver's; "
                "buffers that launches failed to write say so when read (check(handles))"))

    def host_write(self, handle: Handle, data: bytes, stream: int = 0) -> None:
        self._refuse_in_capture(stream, "host write")
        # queued work touching this buffer must run first (on wgpu, queue.write_buffer is
        # ordered before any command buffer submitted after it)
        self.scheduler.flush_for([handle], "host-write")
        self.settle_guards()  # a verdict that arrives later must not taint the fresh data
        self.write_bytes(handle, data)
        self.scheduler.last_stream[handle.id] = stream
        self.ledger.forget(handle)  # fresh host data is valid data

    def buffer_state(self, handles: list[Handle]) -> list[str]:
        return [self.ledger.state(h) for h in handles]

    def _refuse_in_capture(self, stream: int, what: str) -> None:
        """Raise for `what` inside an open window on `stream`, dooming the capture."""
        cap = self.captures.get(stream)
        if cap is not None:
            raise cap.refuse(what)  # hint: Capture.refuse's

    def _reject_in_capture(self, stream: int, what: str) -> None:
        """Raise for `what` inside an open window on `stream`; the capture goes on."""
        cap = self.captures.get(stream)
        if cap is not None:
            raise cap.reject(what)

    def _collect_async(self) -> None:
        self.faults.extend(self.take_async_errors())

    # -- compile (shared) ---------------------------------------------------------------------
    def set_options(self, options: CompilationOptions) -> None:
        """Compile with `options` from now on (already checked: `CompilationOptions.replace`).
        The pipeline cache's key is (KernelId, `options_key(options)`): the key's second half
        is one value for the cache's whole life, so changing it empties the cache."""
        changed = options.changes_from(self.options)
        self.options = options
        if changed:
            self.clear_cache("compilation options changed: " + "; ".join(changed))

    def clear_cache(self, reason: str) -> None:
        self.publish_hit_tallies()
        self.pipelines.clear()
        self.bus.publish(ev.CacheCleared(reason))

    def build_pipeline(self, entry: PipelineEntry) -> None:
        """Turn generated source into something dispatchable (per backend)."""

    def forget_pipeline(self, entry: PipelineEntry) -> None:
        """Drop whatever the backend cached for a pipeline the cache evicted (its bind groups,
        plans and views), so nothing of it outlives the entry."""

    def _evict_oldest(self) -> None:
        """Make room in the pipeline cache: drop the kernels compiled longest ago."""
        pipelines = self.pipelines
        while pipelines and len(pipelines) >= self.pipeline_cache_size:
            kid = next(iter(pipelines))
            entry = pipelines.pop(kid)
            self._hit_tallies.pop(kid, None)
            self.forget_pipeline(entry)
            if self.bus.wants(ev.CacheEvicted):
                self.bus.publish(ev.CacheEvicted(entry.definition.name, kid, len(pipelines)))

    # -- the persistent compilation store (runtime/store.py) -------------------------------------
    _store: Any = _UNOPENED

    def compilation_store(self) -> CompilationStore | None:
        """The store this server reads and writes (opened at its first compile), None if off."""
        if self._store is _UNOPENED:
            self._store = CompilationStore.open()
        return self._store  # type: ignore[no-any-return]

    def device_fingerprint(self) -> str:
        """What makes code compiled on this device differ from another's: its properties (the
        wgpu server adds the adapter's driver) — in a stable order (a frozenset's repr is not:
        it follows the process's string hashing)."""
        import dataclasses

        props = self.properties
        fields = [(f.name, sorted(v) if isinstance(v := getattr(props, f.name), frozenset)
                   else v) for f in dataclasses.fields(props)] if props is not None else []
        return f"{self.name}|{fields!r}"

    def _store_key(self, kernel: CubeKernel, kernel_id: KernelId) -> str | None:
        fingerprint = getattr(kernel, "fingerprint", None)
        if fingerprint is None:
            return None  # a kernel object that cannot say what its code reads: never stored
        targets = ";".join(f"{t.name}={class_identity(type(t))}"
                           for t in (self.target, *shown_targets(self.target.name)))
        return store_key(self.name, targets, self.device_fingerprint(),
                         options_key(self.options), kernel_id.debug(), kernel_id.origin,
                         str(kernel_id.alignment), fingerprint())

    def _load(self, stored: dict[str, Any], kernel_id: KernelId, t0: float) -> "_Compiled":
        """A compile served by the store: its entry rebuilt, the pipeline built from its
        source (the driver's own cache serves that part, where it has one)."""
        entry = PipelineEntry(kernel_id, stored["entry"], stored["compiled"],
                              stored["definition"])
        entry.extra_sources = stored["extra_sources"]
        entry.io = stored["io"]
        entry.written_idx, entry.read_idx = stored["written_idx"], stored["read_idx"]
        t1 = time.perf_counter()
        self.build_pipeline(entry)
        t2 = time.perf_counter()
        texts = stored["passes"] is not None
        return _Compiled(entry, stored["ir"] or "", stored["expanded_ir"] or "",
                         stored["passes"] or (), 0.0, 0.0, 0.0, t2 - t1, "loaded", t1 - t0,
                         None, texts)

    def _store_after_dispatch(self, c: "_Compiled") -> None:
        """Write what a compile made to the store (after its first dispatch, off the way to
        the first result)."""
        store = self._store
        if c.store is None or store is None or store is _UNOPENED:
            return
        key, digest, new = c.store
        c.store = None
        entry = c.entry
        payload = None
        if new:
            payload = {"kernel_id": entry.kernel_id.debug(), "entry": entry.entry,
                       "compiled": entry.compiled, "definition": entry.definition,
                       "extra_sources": dict(entry.extra_sources), "io": entry.io,
                       "written_idx": entry.written_idx, "read_idx": entry.read_idx,
                       "ir": c.ir if c.texts else None,
                       "expanded_ir": c.expanded_ir if c.texts else None,
                       "passes": c.passes if c.texts else None}
        store.save(key, digest, payload)

    def compile(self, kernel: CubeKernel, kernel_id: KernelId, seq: int) -> "_Compiled":
        self.publish_hit_tallies()  # hits before this compile are told before it
        self.bus.publish(ev.CompileStarted(kernel.name, kernel_id, seq))
        t0 = time.perf_counter()
        check_cube_dim(kernel_id.cube_dim.as_tuple(), self.properties)
        texts = self.bus.wants(ev.CompileFinished)
        store = self.compilation_store()
        key = self._store_key(kernel, kernel_id) if store is not None else None
        rewrite = False
        if key is not None:
            stored = store.load(key)  # type: ignore[union-attr]
            if stored is not None and stored.get("kernel_id") == kernel_id.debug() \
                    and getattr(stored.get("compiled"), "target", None) == self.target.name:
                if stored.get("passes") is not None or not texts:
                    return self._load(stored, kernel_id, t0)
                # stored without the IR texts someone now listens for: compile, store anew
                rewrite = True
        with paused_gc():
            try:
                definition = kernel.define(self.properties)
            except KernelSourceError:
                raise
            except CubeError:
                raise
            except Exception as exc:
                tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                raise ExpansionPanicked(hinted(
                    f"expansion of kernel `{kernel.name}` panicked: {tb}",
                    "a helper or a Python expression in the kernel raised while it was "
                    "expanded: the traceback's last frame is the line")) from exc
            t1 = time.perf_counter()
            # the one pipeline (compiler/pipeline.py): the inspector's previews run the same.
            # The IR texts (as expanded, per pass) are printed only for someone listening
            run = self.target
            c = compile_definition(definition, kernel_id.mode, self.options, run=run,
                                   show=shown_targets(run.name), limits=self.properties,
                                   device=self.name, check=True, record=texts)
        definition = c.definition  # an extra pass may hand on a new definition
        compiled = c.sources[run.name]
        expanded_ir, records = c.expanded_ir, c.passes
        t3 = time.perf_counter()
        t2 = t3 - c.codegen_s  # device checks + printing + passes | codegen of every target
        entry = PipelineEntry(kernel_id, definition.entry, compiled, definition)
        entry.extra_sources = c.shown_sources(run.name)
        entry.io = io = buffer_io(definition)
        if io is not None:
            entry.written_idx = tuple(i for i, b in enumerate(io) if b.writable)
            entry.read_idx = tuple(i for i, b in enumerate(io) if b.readable)
        self.build_pipeline(entry)
        t4 = time.perf_counter()
        passes = tuple((r.name, r.before, r.after) for r in records)
        out = _Compiled(entry, c.ir, expanded_ir, passes, t1 - t0, t2 - t1, t3 - t2, t4 - t3,
                        texts=texts)
        if key is not None:
            digest = content_digest({run.name: compiled.source, **entry.extra_sources},
                                    runs=run.name)
            stored_already = not rewrite and store.has_content(digest)  # type: ignore[union-attr]
            if stored_already:
                out.origin = "rekeyed"  # the same code is stored under another key
            out.store = (key, digest, not stored_already)
        return out

    def _compile_finished(self, kernel: CubeKernel, c: _Compiled, seq: int,
                          first_dispatch_s: float) -> None:
        entry = c.entry
        for notice in entry.compiled.notices:  # once per compile: the cache keeps the pipeline
            self.bus.publish(ev.CompileNotice(kernel.name, entry.kernel_id,
                                              entry.compiled.target, notice, seq))
            warnings.warn(CompileNoticeWarning(notice), stacklevel=2)
        # the IR's line map, for the line correspondence: printed only for someone listening
        ir_lines = print_kernel_mapped(entry.definition)[1] \
            if self.bus.wants(ev.CompileFinished) else {}
        self.bus.publish(ev.CompileFinished(
            kernel.name, entry.kernel_id, entry.entry, entry.compiled.target,
            entry.compiled.source, c.ir, c.expanded_ir,
            c.passes, c.expand_s, c.passes_s, c.codegen_s, c.driver_s + first_dispatch_s, seq,
            extra_sources=dict(entry.extra_sources), options_key=options_key(self.options),
            ir_lines=ir_lines, origin=c.origin, load_s=c.load_s,
        ))
        self._store_after_dispatch(c)

    # -- launch (shared) ----------------------------------------------------------------------
    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        raise NotImplementedError

    def resolve_dynamic_count(self, handle: Handle) -> tuple[int, int, int] | None:
        """Host path (the CPU runtime's): drain what may write the count, read its 12 bytes.
        A backend that can dispatch indirectly returns None and reads nothing."""
        self.scheduler.flush_for([handle], "dynamic-count")
        self.sync()
        (raw,) = self.read_bytes([handle])
        x, y, z = struct.unpack_from("<3I", raw, 0)
        return (x, y, z)

    def launch(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings, seq: int,
               profile: bool = False, mode: LaunchMode = LaunchMode.Execute,
               stream: int = 0) -> PreparedLaunch | None:
        """The second hop (device thread). Never loses an error: the runner drops what a
        fire-and-forget task raises, so anything unforeseen lands on the declared write set.
        Returns the launch's `PreparedLaunch` when it was dispatched (`launch_run` reads it),
        else None."""
        try:
            return self._launch(kernel, count, bindings, seq, profile, mode, stream)
        except Exception as exc:  # noqa: BLE001 - a bug here must still be visible at read
            try:
                kid = kernel.id()
            except Exception:  # noqa: BLE001
                kid = _NO_ID
            info = LaunchInfo(kernel.name, kid, seq, stream)
            ExecuteScope.failed_writing(self.ledger, self.bus, info,
                                        _written_pairs(bindings, None), exc)
            raise

    def _launch(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings, seq: int,
                profile: bool, mode: LaunchMode, stream: int) -> PreparedLaunch | None:
        kernel_id = kernel.id()
        info = LaunchInfo(kernel.name, kernel_id, seq, stream)
        entry = self.pipelines.get(kernel_id)
        compiled: _Compiled | None = None
        if entry is None:
            try:
                compiled = self.compile(kernel, kernel_id, seq)
            except BaseException as exc:  # noqa: BLE001 - becomes buffer state
                self.take_async_errors()  # wgpu also logs what it just raised: not a fault
                self.bus.publish(ev.CompileFailed(kernel.name, kernel_id, exc, seq))
                cap = self.captures.get(stream)
                if cap is not None:
                    cap.refuse(f"launch of `{kernel.name}` failed to compile: {exc}")
                # No IR, so no answer from it: the declared IO names the write set.
                ExecuteScope.failed_writing(self.ledger, self.bus, info,
                                            _written_pairs(bindings, None), exc)
                return None
            entry = compiled.entry
            if len(self.pipelines) >= self.pipeline_cache_size:
                self._evict_oldest()
            self.pipelines[kernel_id] = entry
        elif self.bus.active:  # a view is attached: tell it about the hit
            bus = self.bus
            if bus.wants(ev.CacheHit):
                bus.publish(ev.CacheHit(kernel.name, kernel_id, entry.entry, seq))
            if bus.wants(ev.CacheHits):
                self._tally_hits(kernel.name, kernel_id, entry, seq, seq, 1)

        if mode is LaunchMode.Skip:
            # Everything a first launch does short of dispatching is done; nothing is claimed.
            if compiled is not None:
                self._compile_finished(kernel, compiled, seq, 0.0)
            if self.bus.active:
                self.bus.publish(ev.LaunchSkipped(kernel.name, kernel_id, "dry-run", seq))
            return None

        if self.captures:
            cap = self.captures.get(stream)
            if cap is not None:
                self._record(cap, info, kernel, entry, count, bindings)
                if compiled is not None:
                    self._compile_finished(kernel, compiled, seq, 0.0)
                return None

        if compiled is None and not profile:  # the common case: a cache hit, not timed
            return self._execute(info, entry, count, bindings)
        t0 = time.perf_counter()
        self.timing_dispatch = profile
        try:
            ran = self._execute(info, entry, count, bindings, flush=True,
                                why="profile" if profile else "first-dispatch")
        finally:
            self.timing_dispatch = False
        elapsed = time.perf_counter() - t0
        if compiled is not None:
            self._compile_finished(kernel, compiled, seq, elapsed)
        if ran and profile:
            timed = self.dispatch_seconds()
            self.bus.publish(ev.ProfileSample(kernel.name, kernel_id, kernel.profile_tag,
                                              elapsed if timed is None else timed, seq))
        return ran

    def _prepare(self, entry: PipelineEntry, bindings: Bindings) -> PreparedLaunch:
        """`bindings`' PreparedLaunch on `entry`, kept on them: their family's (bindings on the
        same buffers list, `Bindings.family`), else the write/read-set fallback chain walked
        now (see PreparedLaunch)."""
        family = bindings.family
        if family is not None:
            rec = family.prepared
            if rec is not None and rec.entry is entry:
                bindings.prepared = rec
                return rec  # type: ignore[no-any-return]
        rec = bindings.prepared = self._walk(entry, bindings)
        if family is not None:
            family.prepared = rec
        return rec

    def _walk(self, entry: PipelineEntry, bindings: Bindings) -> PreparedLaunch:
        """Walk the write/read-set fallback chain for `bindings` on `entry`."""
        io = entry.io
        bufs = bindings.buffers
        touched = [b.handle for b in bufs]
        if io is not None and len(io) == len(bufs):
            written = [(touched[i], bufs[i].name) for i in entry.written_idx]
            reads = [touched[i] for i in entry.read_idx]
        else:
            written = _written_pairs(bindings, io)
            reads = bindings.buffers_read(io)
        return PreparedLaunch(entry, written, reads, touched,
                              refusal=launch_refusal(entry.definition, bindings, self.properties))

    def _execute(self, info: LaunchInfo, entry: PipelineEntry, count: CubeCount,
                 bindings: Bindings, flush: bool = False, why: str = "",
                 batch: bool = False) -> PreparedLaunch | None:
        """Align, open the scope, dispatch, queue. The launch's `PreparedLaunch` when a
        dispatch was encoded, else None."""
        stream = info.stream
        rec = bindings.prepared
        if rec is None or rec.entry is not entry:
            rec = self._prepare(entry, bindings)
        written, reads, touched = rec.written, rec.reads, rec.touched
        if count.handle is not None:
            # The count travels outside the bindings, yet the dispatch reads it as its grid.
            reads = reads + [count.handle]
            touched = touched + [count.handle]
        self.scheduler.align(stream, touched)
        scope = ExecuteScope.launching(self.ledger, self.bus, info, reads, written)
        if scope.skipped:
            return None
        self._dispatched = self._zero_count = False
        scope.execute(self._dispatch_body, info, entry, count, bindings, reads, written, flush,
                      why, batch)
        if self._zero_count and self.bus.active:
            self.bus.publish(ev.LaunchSkipped(info.kernel, info.kernel_id, "zero-count",
                                              info.launch_seq))
        if not self._dispatched:
            return None
        if self.bus.active and self.bus.wants(ev.LaunchDispatched):
            self.bus.publish(ev.LaunchDispatched(info.kernel, info.kernel_id, entry.entry,
                                                 count.as_tuple(), info.launch_seq))
        return rec

    def _dispatch_body(self, info: LaunchInfo, entry: PipelineEntry, count: CubeCount,
                       bindings: Bindings, reads: list[Handle],
                       written: list[tuple[Handle, str]], flush: bool, why: str,
                       batch: bool) -> object:
        """The scope's body (`_execute`): resolve the count, check the device's limits,
        dispatch, queue the task. Sets `_dispatched` once the dispatch is encoded, and
        `_zero_count` when a dynamic count turned out to be zero."""
        refusal = bindings.prepared.refusal  # checked once per Bindings (`_prepare`)
        if refusal is not None:
            return refusal
        c = count
        if count.handle is not None:
            resolved = self.resolve_dynamic_count(count.handle)
            if resolved is not None:
                if 0 in resolved:
                    self._zero_count = True
                    return UNTOUCHED  # a zero grid dispatches nothing, writes nothing
                c = CubeCount(*resolved)
        props = self.properties
        if props is not self._max_cubes_of:  # read once per properties object
            limit = props.max_cubes_per_dim if props is not None else None
            self._max_cubes = float("inf") if limit is None else limit
            self._max_cubes_of = props
        limit = self._max_cubes
        if c.handle is None and (c.x > limit or c.y > limit or c.z > limit):
            return ResourceError(cube_count_refusal(info.kernel, c.as_tuple(), limit,
                                                    count.handle is not None))
        stream = self.stream = info.stream
        self.dispatch(entry, c, bindings)
        self._dispatched = True
        if self.guard_slot is not None or self._guard_window is not None:
            self._note_guard(info, entry, reads, written, self.guard_slot)
        # `batch`: a replay submits once at its end, so no max_tasks flush in the middle
        self.scheduler.register(stream, Task(info.kernel, info.launch_seq, written,
                                             info.kernel_id), not batch)
        if flush:
            self.scheduler.flush(stream, why)
            self.wait()
        errs = self.take_async_errors()
        if errs:
            return errs[0]
        return None

    # -- runs of launches ---------------------------------------------------------------------
    def launch_run(self, run: list[tuple[tuple[Any, ...], list[int]]]) -> None:
        """Launches that reached the device thread back to back — a Python loop of launches —
        gathered by the runner (`runner.py`) into one run, in submission order, none profiled:
        groups of launches that differ at most in their scalars (the same kernel object, count,
        mode and stream, and the same `Bindings` object or bindings on one buffers list), each
        as [its first launch's arguments — kernel, count, bindings, seq, profile, mode,
        stream —, the launch numbers of all of them, each one's bindings or None when they are
        all the first's].

        Each is still its own launch: its own number, its own task towards `max_tasks`, its own
        failure. But where one launch's `Bindings` were dispatched before on this pipeline, what
        the ordinary path would derive again — read and write sets, the bind group, a claim
        released at once — is already known, and nobody could tell the difference if only the
        dispatch and its task were encoded: none of its buffers carries a failure (no skip to
        propagate, no failure to repair), nobody subscribes to an event published per launch
        (CacheHit, LaunchDispatched, BufferClaimed, BufferReleased; a CacheHits tally is
        counted), no capture window, a static count within the device's limits, an Execute
        verdict, and a backend that can (`dispatch_prepared`, `dispatch_repeats`). Then:

        - launches identical to the one before them (a loop of one launch) are encoded as bare
          repeats (`_repeat`), as many as fit before the next `max_tasks` flush; so are those
          that differ from it only in their scalars (a loop whose scalar changes: bindings
          sharing their buffers list), each with its own info block;
        - any other launch whose `Bindings` the device thread prepared before (a loop that
          alternates kernels or buffers, each launch's bindings kept by the frontend's memo) is
          encoded with its pipeline and bind group set where they changed (`_encode_prepared`),
          after aligning its stream.

        Otherwise a launch takes the ordinary path (`launch`). A guarded launch takes a
        loop-guard slot of its own and is noted for the settle, as ordinary ones are. (A
        `max_tasks` flush in the middle of a run ends the backend's pass; the backend begins
        the next one as the ordinary path would, and the run goes on.)

        The trap this avoids: "the same launch" is decided by identity, never by value, so a
        repeat cannot be a different launch that merely looks alike; and the conditions are
        read again for every launch (and every batch of repeats), because the launch before it
        may have changed them (a compile, a failure, a flush, a release)."""
        launch = self.launch
        fast = self.repeats_dispatches
        for (kernel, count, first, _, _, mode, stream), seqs, binds in run:
            n = len(seqs)
            i = 0
            while i < n:
                seq = seqs[i]
                bindings = first if binds is None else binds[i]
                i += 1
                rec = None
                if fast:
                    try:
                        rec = self._encode_prepared(kernel, count, bindings, seq, mode, stream)
                    except Exception as exc:  # noqa: BLE001 - a bug here must still show at read
                        self._fail_run(kernel, bindings, [seq], stream, exc)
                        continue
                if rec is None:
                    try:
                        rec = launch(kernel, count, bindings, seq, False, mode, stream)
                    except BaseException:  # noqa: BLE001 - on its buffers already (`launch`)
                        rec = None
                while rec is not None and fast and i < n:  # batches of repeats
                    try:
                        k = self._repeat(rec, bindings, kernel.name, count, seqs, i, stream,
                                         binds)
                    except Exception as exc:  # noqa: BLE001 - a bug here must still show at read
                        self._fail_run(kernel, bindings, seqs[i:], stream, exc)
                        i = n
                        break
                    if k == 0:
                        break  # the next one takes the ordinary path (and tries again after)
                    i += k

    def _fail_run(self, kernel: CubeKernel, bindings: Bindings, seqs: list[int], stream: int,
                  exc: BaseException) -> None:
        """Launches `seqs` of a run failed in the run's own code (a bug): each carries it."""
        rec = bindings.prepared
        written = rec.written if rec is not None else _written_pairs(bindings, None)
        for seq in seqs:
            info = LaunchInfo(kernel.name, kernel.id(), seq, stream)
            fail_buffers(self.ledger, self.bus, info, written, exc)

    def _per_launch_events(self) -> bool:
        """Whether anyone subscribes to an event published per launch (then every launch takes
        the ordinary path, which publishes them)."""
        bus = self.bus
        return bus.active and (bus.wants(ev.CacheHit) or bus.wants(ev.LaunchDispatched)
                               or bus.wants(ev.BufferClaimed) or bus.wants(ev.BufferReleased))

    def _encode_prepared(self, kernel: CubeKernel, count: CubeCount, bindings: Bindings,
                         seq: int, mode: LaunchMode, stream: int) -> PreparedLaunch | None:
        """Encode one launch of a run whose `Bindings` were dispatched on this pipeline before,
        if `launch_run`'s conditions hold; its `PreparedLaunch`, or None (take the ordinary
        path, nothing done)."""
        entry = self.pipelines.get(kernel.id())
        if entry is None or mode is not _EXECUTE or count.handle is not None or self.captures:
            return None
        if self.bus.active and self._per_launch_events():
            return None
        rec = bindings.prepared
        if rec is None or rec.entry is not entry:  # new bindings: walking the chain is pure
            rec = self._prepare(entry, bindings)
        touched = rec.touched
        entries = self.ledger._entries
        if entries:  # a failure on one of its buffers: the ordinary path skips, repairs, ...
            for h in touched:
                if h.id in entries:
                    return None
        limit = self._max_cubes
        if self.properties is not self._max_cubes_of or (
                count.x > limit or count.y > limit or count.z > limit):
            return None  # the ordinary path reads the limit, and refuses what exceeds it
        scheduler = self.scheduler
        scheduler.align(stream, touched)
        if not self.dispatch_prepared(rec, bindings, count, stream):
            return None
        kernel_id, name = entry.kernel_id, kernel.name
        slot = self.guard_slot
        if slot is not None or self._guard_window is not None:
            self._note_guard(LaunchInfo(name, kernel_id, seq, stream), entry, rec.reads,
                             rec.written, slot)
        bus = self.bus
        if bus.active and bus.wants(ev.CacheHits):
            self._tally_hits(name, kernel_id, entry, seq, seq, 1)
        scheduler.register(stream, Task(name, seq, rec.written, kernel_id))
        errs = self.take_async_errors()
        if errs:  # the driver spoke up on the side: the launch carries it
            fail_buffers(self.ledger, bus, LaunchInfo(name, kernel_id, seq, stream),
                         rec.written, errs[0])
        return rec

    def _repeat(self, rec: PreparedLaunch, bindings: Bindings, kernel: str, count: CubeCount,
                seqs: list[int], i: int, stream: int, binds: list[Bindings] | None = None
                ) -> int:
        """Encode launches `seqs[i:]` of a run again, as far as `launch_run`'s conditions
        allow; returns how many were encoded (0: the caller takes the ordinary path). `binds`:
        each launch's `Bindings` where they differ in their scalars (they share `rec`, made from
        their one buffers list), else None (all are `bindings`)."""
        if count.handle is not None or self.captures:
            return 0
        bus = self.bus
        if bus.active and self._per_launch_events():
            return 0  # someone listens for each launch: each takes the ordinary path
        entries = self.ledger._entries
        if entries:  # a failure on one of its buffers: the ordinary path skips, repairs, ...
            for h in rec.touched:
                if h.id in entries:
                    return 0
        scheduler = self.scheduler
        k = min(len(seqs) - i, scheduler.max_tasks - scheduler.pending(stream))
        if k <= 0:
            return 0
        k = self.dispatch_repeats(rec, bindings, count, stream, k,
                                  None if binds is None else binds[i:i + k])
        if k <= 0:
            return 0
        run = seqs[i:i + k]
        entry = rec.entry
        kernel_id = entry.kernel_id
        slot = self.guard_slot  # guarded: the first of k consecutive status slots
        if slot is not None or self._guard_window is not None:
            note, reads, written = self._note_guard, rec.reads, rec.written
            for j, seq in enumerate(run):
                note(LaunchInfo(kernel, kernel_id, seq, stream), entry, reads, written,
                     None if slot is None else slot + j)
        if bus.active and bus.wants(ev.CacheHits):
            self._tally_hits(kernel, kernel_id, entry, run[0], run[-1], k)
        scheduler.register(stream, Task(kernel, run[0], rec.written, kernel_id, run), True, k)
        errs = self.take_async_errors()
        if errs:  # the driver spoke up on the side: each launch of the batch carries it
            for seq in run:
                fail_buffers(self.ledger, self.bus, LaunchInfo(kernel, kernel_id, seq, stream),
                             rec.written, errs[0])
        return k

    repeats_dispatches = False  # True where `dispatch_repeats` / `dispatch_prepared` can encode

    def dispatch_prepared(self, rec: PreparedLaunch, bindings: Bindings, count: CubeCount,
                          stream: int) -> bool:
        """Backend hook: encode one dispatch of `rec` (static `count`; `bindings` for their
        scalars) on `stream` from what `rec` holds (its pipeline, its bind group while valid),
        setting pipeline and bind group where the stream's open pass has others. Return False when it cannot (then the launch
        takes the ordinary path; nothing was encoded). A guarded launch takes the next
        loop-guard slot: `guard_slot` is then set, else None."""
        self.guard_slot = None
        return False

    def dispatch_repeats(self, rec: PreparedLaunch, bindings: Bindings, count: CubeCount,
                         stream: int, k: int, binds: list[Bindings] | None = None) -> int:
        """Backend hook: encode `k` more dispatches of `rec` (static `count`, `bindings` — or,
        where they differ in their scalars, `binds`, one per dispatch) on `stream`,
        right behind the dispatch of `rec` that was encoded last there (or, if a flush came
        in between, first in the stream's next batch). Return how many were
        encoded — 0 when the backend cannot (then each launch takes the ordinary path). A
        guarded launch's repeats take consecutive loop-guard slots: `guard_slot` is then the
        first, else None."""
        self.guard_slot = None
        return 0

    # -- graph capture ------------------------------------------------------------------------
    def start_capture(self, stream: int) -> None:
        if stream in self.captures:
            raise CaptureError(hinted(f"a capture is already open on stream {stream}; the open "
                                      "one is left as it was",
                                      "call client.stop_capture() first"))
        # Work queued before the window is not part of the recording.
        self.scheduler.flush(stream, "capture")
        self.captures[stream] = Capture(stream)

    def stop_capture(self, stream: int) -> Capture:
        """Close the window on `stream`: the capture, sealed (its `records`), or the
        `CaptureError` that lists what doomed it."""
        cap = self.captures.pop(stream, None)
        if cap is None:
            raise CaptureError(hinted(f"no capture is open on stream {stream}",
                                      "call client.start_capture() first, on the same thread"))
        cap.records = cap.seal()
        if self.bus.active:
            self.bus.publish(ev.CaptureStopped(stream, len(cap.records), len(cap.allocations),
                                               sum(a.grew for a in cap.allocations),
                                               tuple(cap.rejected)))
        return cap

    def _record(self, cap: Capture, info: LaunchInfo, kernel: CubeKernel, entry: PipelineEntry,
                count: CubeCount, bindings: Bindings) -> None:
        reads = bindings.buffers_read(entry.io)
        if count.handle is not None:
            reads.append(count.handle)
        found = self.ledger.read_failure(reads)
        if found is not None:
            cap.refuse(f"launch of `{kernel.name}` was skipped: an input carries the failure of "
                       f"`{found[1].kernel}`")
            ExecuteScope.launching(self.ledger, self.bus, info, reads,
                                   _written_pairs(bindings, entry.io))
            return
        cap.records.append(Recorded(kernel, entry, count, bindings))

    def replay(self, records: list[Recorded], stream: int, seq0: int) -> None:
        """Re-encode every recorded dispatch on `stream`, then submit them as one."""
        for i, r in enumerate(records):
            info = LaunchInfo(r.kernel.name, r.entry.kernel_id, seq0 + i, stream)
            self._execute(info, r.entry, r.count, r.bindings, batch=True)
        self.scheduler.flush(stream, "replay")


class _NoId:
    """Stand-in KernelId for failures attributed after the fact (a refused submission)."""

    def short(self) -> str:
        return "?"


_NO_ID: Any = _NoId()
_EXECUTE = LaunchMode.Execute

