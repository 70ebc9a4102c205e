"""Every observable runtime fact is a typed event on one bus per client.

The debug log, widgets, the quiz checker and the tests are all subscribers; nothing reads runtime
internals. Events are published on the thread where the fact happens (the calling thread for
`LaunchIssued`, the device thread for everything the server does), so a subscriber must be quick
and thread-safe: record, don't render (views coalesce and redraw on their own thread).

A subscriber that raises is reported once through `warnings` and kept: a broken view must never
break a launch.

Events are plain slotted dataclasses, read-only by convention rather than `frozen=True`: a frozen
dataclass sets each field through `object.__setattr__`, which made a `CacheHit` cost 1.4 µs to
build against 0.6 µs now — and one is built per cache-hit launch whenever a view is attached
(benchmarks/widget_overhead.py). Equality is identity (two events are never "the same fact").
"""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from cubelab.runtime.kernel_id import KernelId


@dataclass(slots=True, eq=False)
class Event:
    t: float = field(default_factory=time.perf_counter, kw_only=True)
    thread: str = field(default_factory=lambda: threading.current_thread().name, kw_only=True)


@dataclass(slots=True, eq=False)
class LaunchIssued(Event):
    """Calling thread: `launch` registered its arguments and handed the kernel over."""

    kernel: str
    kernel_id: "KernelId"
    cube_count: tuple[int, int, int]
    launch_seq: int
    mode: str = "Execute"  # the LaunchMode decided on the calling thread
    stream: int = 0


@dataclass(slots=True, eq=False)
class LaunchGated(Event):
    """Calling thread: a gate ended the launch before it reached the device (why says which)."""

    kernel: str
    why: str
    launch_seq: int


@dataclass(slots=True, eq=False)
class CompileStarted(Event):
    kernel: str
    kernel_id: "KernelId"
    launch_seq: int


@dataclass(slots=True, eq=False)
class CompileFinished(Event):
    """A new KernelId became a pipeline. Durations in seconds; `driver_s` runs through the first
    dispatch, because lavapipe (and other drivers) compile lazily there."""

    kernel: str
    kernel_id: "KernelId"
    entry: str
    target: str
    source: str
    ir: str
    expanded_ir: str
    passes: tuple[tuple[str, str, str], ...]  # (pass name, IR before, IR after)
    expand_s: float
    passes_s: float
    codegen_s: float
    driver_s: float
    launch_seq: int
    extra_sources: dict[str, str] = field(default_factory=dict)
    # the other half of the pipeline cache's key (`compiler/options.py` options_key): the
    # CheckedIo rule, the loop budget and every extra pass this pipeline was compiled with
    options_key: str = ""
    # `ir`'s line map (printed line -> the kernel location of its op): the line correspondence
    ir_lines: dict[int, Any] = field(default_factory=dict)
    # where the code came from (runtime/store.py): "compiled" (expand, passes and codegen ran),
    # "loaded" (from the persistent store: `load_s` to read it, nothing expanded) or "rekeyed"
    # (compiled, and the same code was already stored under another key)
    origin: str = "compiled"
    load_s: float = 0.0


@dataclass(slots=True, eq=False)
class CompileNotice(Event):
    """The target that runs a kernel left something of it out (WGSL drops `debug_print`: it has
    no printf). Published once per compile — so once per kernel, until the cache is cleared —
    just before its `CompileFinished`, and said as a `CompileNoticeWarning` too."""

    kernel: str
    kernel_id: "KernelId"
    target: str
    message: str
    launch_seq: int


@dataclass(slots=True, eq=False)
class CompileFailed(Event):
    kernel: str
    kernel_id: "KernelId"
    error: BaseException
    launch_seq: int


@dataclass(slots=True, eq=False)
class CacheHit(Event):
    kernel: str
    kernel_id: "KernelId"
    entry: str
    launch_seq: int


@dataclass(slots=True, eq=False)
class CacheHits(Event):
    """`count` cache hits of one KernelId since the last tally (launches `first_seq` ..
    `last_seq`, the last at `last_t`). The device thread counts hits while someone subscribes to
    this and publishes the tally before it does anything else — before a compile, a call from a
    client (sync, read, check ...), or going idle — so a view that only counts (CacheMonitor)
    pays a dict update per launch instead of an event. `CacheHit` still comes once per launch
    for those who subscribe to it (LaunchTimeline, the quiz checker)."""

    kernel: str
    kernel_id: "KernelId"
    entry: str
    count: int
    first_seq: int
    last_seq: int
    last_t: float


@dataclass(slots=True, eq=False)
class LaunchDispatched(Event):
    kernel: str
    kernel_id: "KernelId"
    entry: str
    cube_count: tuple[int, int, int]
    launch_seq: int


@dataclass(slots=True, eq=False)
class LaunchFailed(Event):
    """The launch could not run; its write set now carries `error` (read it to see)."""

    kernel: str
    kernel_id: "KernelId"
    error: BaseException
    buffers: tuple[int, ...]
    launch_seq: int


@dataclass(slots=True, eq=False)
class ProfileSample(Event):
    kernel: str
    kernel_id: "KernelId"
    tag: str
    duration_s: float
    launch_seq: int


@dataclass(slots=True, eq=False)
class BufferCreated(Event):
    handle_id: int
    size: int


@dataclass(slots=True, eq=False)
class MemoryAllocated(Event):
    """Device thread: `handle_id` got `size` bytes (`reserved` after alignment) at `offset` of
    page `page` in the `pool` ("sliced" | "exclusive"). `reused`: the bytes came from the pool,
    no new page was asked of the driver."""

    handle_id: int
    size: int
    reserved: int
    pool: str
    page: int
    offset: int
    reused: bool


@dataclass(slots=True, eq=False)
class MemoryReleased(Event):
    """Device thread: the slice of `handle_id` is back in its pool. `why`: "dropped" (the last
    Python reference died) or "freed" (`client.free` / the end of a `with` block); `deferred`:
    it waited for queued work that still used it to be submitted first."""

    handle_id: int
    size: int
    pool: str
    page: int
    offset: int
    why: str
    deferred: bool = False


@dataclass(slots=True, eq=False)
class MemoryReleaseDeferred(Event):
    """Device thread: `handle_id` was dropped while work queued on `stream` still uses it; its
    slice returns to the pool when that stream is submitted (then `MemoryReleased`)."""

    handle_id: int
    stream: int
    why: str


@dataclass(slots=True, eq=False)
class PageAllocated(Event):
    """A new page was asked of the driver / the OS."""

    page: int
    pool: str
    size: int


@dataclass(slots=True, eq=False)
class MemoryCleanedUp(Event):
    """`client.memory_cleanup()`: `pages` unused pages (`bytes` in all) given back."""

    pages: tuple[int, ...]
    bytes: int


@dataclass(slots=True, eq=False)
class Flushed(Event):
    """Queued dispatches were encoded into one command buffer and submitted (why says what
    triggered it: idle, read, sync, max_tasks, profile, host-write, large — a launch whose
    views hold 256 MiB or more is submitted at once —, info-ring — a batch whose info blocks
    would not fit in wgpu's ring —, ...)."""

    dispatches: int
    why: str
    stream: int = 0


@dataclass(slots=True, eq=False)
class CaptureStopped(Event):
    """Device thread: `stop_capture` sealed a window on `stream` into a graph of `dispatches`
    launches; `allocations` made inside it (and how many `grew` the pool); what it `rejected`
    on the spot (reads, syncs, profiling: never recorded, the recording sound)."""

    stream: int
    dispatches: int
    allocations: int
    grew: int
    rejected: tuple[str, ...]


@dataclass(slots=True, eq=False)
class CacheCleared(Event):
    reason: str


@dataclass(slots=True, eq=False)
class CacheEvicted(Event):
    """The pipeline cache was full (`Server.pipeline_cache_size`): the kernel compiled longest
    ago was dropped; its next launch compiles it again."""

    kernel: str
    kernel_id: Any
    kept: int  # compiled kernels the cache holds after the eviction


Subscriber = Callable[[Event], Any]


class EventBus:
    def __init__(self) -> None:
        self._subs: tuple[tuple[Subscriber, tuple[type, ...] | None], ...] = ()
        self._lock = threading.Lock()
        self._warned: set[int] = set()
        self._wanted: dict[type, bool] = {}
        # Whether anyone subscribes at all: a plain attribute, not a property, because every
        # launch reads it several times on both threads.
        self.active = False

    def wants(self, kind: type) -> bool:
        """Whether any subscriber takes events of `kind`. Publishers of per-launch events check
        this before building one: an event costs ~2 µs to build, and a view that wants only
        cache hits should not make every launch pay for LaunchIssued and LaunchDispatched."""
        # Take the cache before reading the subscribers: `subscribe` swaps in a new `_subs` and
        # then a fresh cache, so an answer computed from old subscribers can only land in the
        # old, discarded cache — never stick as a stale "no" for a kind just subscribed.
        cache = self._wanted
        wanted = cache.get(kind)
        if wanted is None:
            wanted = any(kinds is None or issubclass(kind, kinds) for _, kinds in self._subs)
            cache[kind] = wanted
        return wanted

    def subscribe(self, fn: Subscriber, *kinds: type) -> Callable[[], None]:
        """Call `fn(event)` for every event (or only those of `kinds`); returns unsubscribe."""
        entry = (fn, kinds or None)
        with self._lock:
            self._subs = self._subs + (entry,)
            self._wanted = {}
            self.active = True

        def unsubscribe() -> None:
            with self._lock:
                self._warned.discard(id(fn))  # the id may name another subscriber later
                self._subs = tuple(s for s in self._subs if s is not entry)
                self._wanted = {}
                self.active = bool(self._subs)

        return unsubscribe

    def publish(self, event: Event) -> None:
        for fn, kinds in self._subs:
            if kinds is not None and not isinstance(event, kinds):
                continue
            try:
                fn(event)
            except BaseException as exc:  # a view must never break a launch
                # A Ctrl-C on the calling thread stops the caller (every place that publishes
                # there is safe to stop at). Anywhere else nobody can press one: a subscriber
                # raised it itself, and the device thread's bookkeeping must go on — a
                # KeyboardInterrupt from a BufferClaimed view left its buffer "claimed".
                if not isinstance(exc, Exception) and \
                        threading.current_thread() is threading.main_thread():
                    raise
                if id(fn) not in self._warned:
                    self._warned.add(id(fn))
                    warnings.warn(
                        f"cubelab event subscriber {fn!r} raised {exc!r}; it stays subscribed",
                        RuntimeWarning,
                        stacklevel=2,
                    )

    def record(self, *kinds: type) -> "Recorder":
        """Subscribe a list that collects events (tests and the quiz checker use it)."""
        return Recorder(self, kinds)


class Recorder:
    def __init__(self, bus: EventBus, kinds: tuple[type, ...]) -> None:
        self.events: list[Event] = []
        self._unsub = bus.subscribe(self.events.append, *kinds)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def close(self) -> None:
        self._unsub()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- seed 001: failure as buffer state, dry runs, streams (published by the ExecuteScope and the
#    stream scheduler; declared here so views can be written against them) ---------------------


@dataclass(slots=True, eq=False)
class BufferClaimed(Event):
    """An ExecuteScope claimed a launch's write set with a provisional failure."""

    kernel: str
    handle_ids: tuple[int, ...]
    launch_seq: int


@dataclass(slots=True, eq=False)
class BufferReleased(Event):
    """The launch succeeded: its write set is clean again."""

    kernel: str
    handle_ids: tuple[int, ...]
    launch_seq: int


@dataclass(slots=True, eq=False)
class BufferFailed(Event):
    """Buffers now carry `error`; `root_kernel` is the launch that really failed."""

    kernel: str
    handle_ids: tuple[int, ...]
    error: BaseException
    root_kernel: str
    launch_seq: int


@dataclass(slots=True, eq=False)
class BufferRepaired(Event):
    """A successful launch wrote buffers that carried a failure: they are valid again."""

    kernel: str
    handle_ids: tuple[int, ...]
    launch_seq: int


@dataclass(slots=True, eq=False)
class LaunchSkipped(Event):
    """The device thread dropped a launch: `why` is "dry-run" (compiled, not dispatched),
    "tainted-input" (a read buffer carries a failure; `root_kernel`/`root_error` name it) or
    "zero-count" (a dynamic count resolved on the host to a zero grid: nothing to dispatch)."""

    kernel: str
    kernel_id: "KernelId"
    why: str
    launch_seq: int
    root_kernel: str = ""
    root_error: BaseException | None = None


@dataclass(slots=True, eq=False)
class StreamShared(Event):
    """A task on `stream` touched a buffer last written on `other`: `other` was flushed first
    (the seed's log line "Binding on X is shared on Y")."""

    handle_id: int
    stream: int
    other: int


@dataclass(slots=True, eq=False)
class OobReported(Event):
    """CPU runtime, `report` mode: an out-of-bounds access, with who did it and where."""

    kernel: str
    buffer: str
    index: int
    length: int
    unit: tuple[int, int, int]
    cube: tuple[int, int, int]
    write: bool
    loc: str
    launch_seq: int


# -- autotune (runtime/autotune.py): a view draws progress and results from these ----------------


@dataclass(slots=True, eq=False)
class AutotuneStarted(Event):
    """A key missed the tuner's cache: `candidates` are about to be compiled and measured."""

    tuner: str
    key: Any
    candidates: tuple[str, ...]


@dataclass(slots=True, eq=False)
class AutotuneProgress(Event):
    """One step of the search: phase is "precompile", "warmup" or "sample"; `done` of `total`
    steps of the whole search (a progress bar's two numbers)."""

    tuner: str
    key: Any
    candidate: str
    phase: str
    done: int
    total: int


@dataclass(slots=True, eq=False)
class AutotuneCandidateFailed(Event):
    """A candidate failed (compile error, skipped launch, exception): disqualified."""

    tuner: str
    key: Any
    candidate: str
    error: BaseException


@dataclass(slots=True, eq=False)
class AutotuneCandidateMeasured(Event):
    """Seconds per run: min and median of the samples, and the score (lower wins)."""

    tuner: str
    key: Any
    candidate: str
    min_s: float
    median_s: float
    score: float
    samples: int


@dataclass(slots=True, eq=False)
class AutotuneFinished(Event):
    """The winner for `key` (cached from now on); `scores` by candidate, None if disqualified."""

    tuner: str
    key: Any
    winner: str
    scores: tuple[tuple[str, float | None], ...]
