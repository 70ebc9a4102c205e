"""Ledgers: plain-data models of what the runtime did, built only from events.

    stats = CacheStats(client.events)      # compiles / hits per KernelId, "why?" diffs
    boards = BufferStates(client.events)   # per-buffer state and history (seed 001)
    log = LaunchLog(client.events)         # the two hops of each launch

Each ledger subscribes to the bus with a bare `deque.append`: on the device thread an event
costs a C call, no lock and no Python frame. `snapshot()` folds the queued events into plain
state under a lock and copies it out, on the caller's thread — a view's UI thread, a test, the
terminal. Nothing is rendered here.

The contract with the runtime is the event vocabulary in `cubelab.runtime.events` and nothing
else: no ledger reads a server, a handle table or a cache.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

from cubelab.inspect.instances import defined_at, diff
from cubelab.runtime import events as ev
from cubelab.runtime.kernel_id import KernelId

__all__ = ["plural", "clock", "distinguishing_fields", "Ledger", "CacheStats", "KernelIdStats", "CacheSnapshot", "BufferStates",
           "BufferState", "BufferHistory", "BuffersSnapshot", "LaunchLog", "LaunchRecord",
           "BUFFER_STATES"]


# Generated file names → what a reader calls them ("Cell In[7]"). `%%cube` registers each cell
# it runs, so an error that happens later, on the device thread, still names the cell.
SOURCE_LABELS: dict[str, str] = {}


def relabel(text: str) -> str:
    for name, label in SOURCE_LABELS.items():
        if name in text:
            text = text.replace(f"{name}:", f"{label}, line ").replace(name, label)
    return text


def _error_text(exc: BaseException | None) -> str:
    if exc is None:
        return ""
    text = str(exc).strip() or type(exc).__name__
    return relabel(f"{type(exc).__name__}: {text}")


def on(*kinds: type) -> Callable[[Any], Any]:
    """Mark a ledger method as the handler of these event types: the ledger's type → handler
    table (`Ledger._handlers`) is built from the marks, and its subscription from the table."""

    def mark(fn: Any) -> Any:
        fn._ledger_kinds = kinds
        return fn

    return mark


class Ledger:
    """Base: subscribe to some event kinds, queue them, fold them into state when looked at.

    The subscriber is `deque.append` itself — a C call, no Python frame, thread-safe — so the
    device thread pays ~0.1 µs per event and never takes a lock. The queued events are folded
    into the ledger's state (`_record`) under a lock by whoever looks next: `snapshot()` from a
    view's UI thread (≤ 10 times a second), a test, or the terminal. A ledger nobody looks at
    keeps its events queued; views look at theirs ten times a second.
    """

    kinds: tuple[type, ...] = ()
    # event type -> handler: built from the methods marked `@on(EventType, ...)`, for subclasses
    # and their bases together; a subclass that lists no `kinds` subscribes to exactly these
    _handlers: dict[type, Callable[[Any, Any], None]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        table = dict(cls._handlers)
        for fn in vars(cls).values():
            for kind in getattr(fn, "_ledger_kinds", ()):
                table[kind] = fn
        cls._handlers = table
        if table and "kinds" not in vars(cls):
            cls.kinds = tuple(table)

    def __init__(self, bus: ev.EventBus | None = None) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ev.Event] = deque()
        self._unsub: Callable[[], None] | None = None
        self.version = 0  # bumped for every event folded in (and on reset)
        if bus is not None:
            self.attach(bus)

    def attach(self, bus: ev.EventBus) -> "Ledger":
        self.close()
        self._unsub = bus.subscribe(self._queue.append, *self.kinds)
        return self

    def close(self) -> None:
        if self._unsub is not None:
            self._unsub()
            self._unsub = None

    @property
    def pending(self) -> bool:
        """Events arrived that are not folded in yet (a view is out of date)."""
        return bool(self._queue)

    def _drain(self) -> None:
        """Fold queued events into the state; the caller holds the lock."""
        q = self._queue
        while q:
            self._record(q.popleft())
            self.version += 1

    def _record(self, event: ev.Event) -> None:
        """Fold one event in: its type's handler (`@on`), if the ledger has one."""
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(self, event)

    def reset(self) -> None:
        with self._lock:
            self._drain()
            self._reset()
            self.version += 1

    def _reset(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- cache: compiles and hits per KernelId -----------------------------------------------------


@dataclass
class KernelIdStats:
    kernel_id: KernelId
    kernel: str
    entry: str = ""
    compiles: int = 0
    hits: int = 0
    failures: int = 0
    last_launch_seq: int = 0
    last_launched: float = 0.0  # perf_counter time of the last compile or hit
    compile_s: float = 0.0  # expand + passes + codegen + driver, summed over compiles
    # where each compile's code came from (CompileFinished.origin): "compiled" | "loaded" (the
    # persistent store) | "rekeyed" (compiled; the same code was stored under another key)
    origins: dict[str, int] = field(default_factory=dict)
    origin: str = ""  # the last compile's
    order: int = 0  # first-seen order (the "earlier" of "nearest earlier id")
    why: tuple[str, ...] = ()  # diff against the nearest earlier id; filled in by snapshot()
    nearest: KernelId | None = None

    @property
    def short(self) -> str:
        return self.kernel_id.short()


def _find(rows: Iterable[Any], key: str, value: Any) -> Any:
    """The row whose `key` field is `value` (a snapshot's lookup); KeyError if none is."""
    for row in rows:
        if getattr(row, key) == value:
            return row
    raise KeyError(value)


@dataclass(frozen=True)
class CacheSnapshot:
    rows: tuple[KernelIdStats, ...]
    total_compiles: int
    total_hits: int
    total_failures: int
    cleared: tuple[str, ...]
    total_loaded: int = 0  # compiles the persistent store served
    total_rekeyed: int = 0

    def row(self, kernel_id: KernelId) -> KernelIdStats:
        return _find(self.rows, "kernel_id", kernel_id)


def nearest_earlier(kid: KernelId, earlier: list[KernelId]) -> tuple[KernelId | None, list[str]]:
    """The earlier id of the same kernel that differs in the fewest fields, and the diff."""
    base = kid.type.split("<", 1)[0]
    best: tuple[int, int, KernelId, list[str]] | None = None
    for i, other in enumerate(earlier):
        if other.type.split("<", 1)[0] != base:
            continue
        d = diff(other, kid)
        key = (len(d), -i)
        if best is None or key < best[:2]:
            best = (len(d), -i, other, d)
    if best is None:
        return None, ["first compile of this kernel"]
    return best[2], best[3]


class CacheStats(Ledger):
    """The pipeline cache as a student sees it: per KernelId, how often compiled and reused."""

    # CacheHits, not CacheHit: the device thread tallies hits and tells them in bursts, so a
    # monitor costs a launch a dict update rather than an event (benchmarks/widget_overhead.py).

    def __init__(self, bus: ev.EventBus | None = None) -> None:
        self._rows: dict[KernelId, KernelIdStats] = {}
        self._by_obj: dict[int, KernelIdStats] = {}
        self._cleared: list[str] = []
        self._order = 0
        self._why: dict[KernelId, tuple[KernelId | None, tuple[str, ...]]] = {}
        super().__init__(bus)

    def _row(self, kid: KernelId, kernel: str) -> KernelIdStats:
        # A launcher reuses one KernelId object per compile-time signature, so identity finds the
        # row without hashing the whole id (its hash walks every field: ~1 µs per event). The row
        # holds the id, so the object — and its id() — stays alive as long as the entry.
        row = self._by_obj.get(id(kid))
        if row is not None and row.kernel_id is kid:
            return row
        row = self._rows.get(kid)
        if row is None:
            self._order += 1
            row = self._rows[kid] = KernelIdStats(kid, kernel, order=self._order)
        self._by_obj[id(kid)] = row
        return row

    @on(ev.CacheHits)
    def _hits(self, e: ev.CacheHits) -> None:
        row = self._row(e.kernel_id, e.kernel)
        row.hits += e.count
        row.entry = row.entry or e.entry
        if e.last_seq >= row.last_launch_seq:
            row.last_launch_seq, row.last_launched = e.last_seq, e.last_t

    @on(ev.CompileFinished)
    def _compiled(self, e: ev.CompileFinished) -> None:
        row = self._row(e.kernel_id, e.kernel)
        row.compiles += 1
        row.entry = e.entry
        row.compile_s += e.expand_s + e.passes_s + e.codegen_s + e.driver_s + e.load_s
        row.origins[e.origin] = row.origins.get(e.origin, 0) + 1
        row.origin = e.origin
        row.last_launch_seq, row.last_launched = e.launch_seq, e.t

    @on(ev.CompileFailed)
    def _failed(self, e: ev.CompileFailed) -> None:
        row = self._row(e.kernel_id, e.kernel)
        row.failures += 1
        row.last_launch_seq, row.last_launched = e.launch_seq, e.t

    @on(ev.CacheCleared)
    def _cleared_by(self, e: ev.CacheCleared) -> None:
        self._cleared.append(e.reason)

    def _reset(self) -> None:
        self._rows.clear()
        self._by_obj.clear()
        self._cleared.clear()
        self._why.clear()
        self._order = 0

    def snapshot(self) -> CacheSnapshot:
        with self._lock:
            self._drain()
            rows = sorted((replace(r, origins=dict(r.origins)) for r in self._rows.values()),
                          key=lambda r: r.order)
            cleared = tuple(self._cleared)
        earlier: list[KernelId] = []
        for r in rows:  # diffs are computed here, off the device thread, once per id
            cached = self._why.get(r.kernel_id)
            if cached is None:
                nearest, why = nearest_earlier(r.kernel_id, earlier)
                cached = self._why[r.kernel_id] = (nearest, tuple(why))
            r.nearest, r.why = cached
            earlier.append(r.kernel_id)
        return CacheSnapshot(tuple(rows), sum(r.compiles for r in rows),
                             sum(r.hits for r in rows), sum(r.failures for r in rows), cleared,
                             sum(r.origins.get("loaded", 0) for r in rows),
                             sum(r.origins.get("rekeyed", 0) for r in rows))


# -- buffers: seed 001's failure-as-state ------------------------------------------------------

# state -> what it means (the board's legend)
BUFFER_STATES: dict[str, str] = {
    "clean": "holds valid data",
    "claimed": "a launch that writes it is in flight (provisional failure)",
    "failed": "the launch that should have written it failed; reading raises the error",
    "skipped": "a launch writing it was skipped because an input carried a failure (root cause)",
    "repaired": "a later successful launch rewrote it: valid again",
}


@dataclass(slots=True)
class BufferHistory:
    t: float
    state: str
    kernel: str
    launch_seq: int
    detail: str = ""
    count: int = 1  # repeated successful launches of one kernel fold into one entry


@dataclass
class BufferState:
    handle_id: int
    size: int | None = None
    state: str = "clean"
    kernel: str = ""  # the launch that last changed the state
    root_kernel: str = ""  # for failed/skipped: the launch that really failed
    error: str = ""
    oob: int = 0  # out-of-bounds reports against launches that wrote it
    history: list[BufferHistory] = field(default_factory=list)


# An out-of-bounds row is the event itself (its fields are the row's): one home for the fields.
OobRow = ev.OobReported


@dataclass(frozen=True)
class BuffersSnapshot:
    buffers: tuple[BufferState, ...]
    oob: tuple[OobRow, ...]

    def get(self, handle_id: int) -> BufferState:
        return _find(self.buffers, "handle_id", handle_id)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in BUFFER_STATES}
        for b in self.buffers:
            out[b.state] = out.get(b.state, 0) + 1
        return out


class BufferStates(Ledger):
    """Every live buffer the bus has mentioned, with its state and history (seed 001); a
    buffer whose memory was released (`MemoryReleased`) leaves the board.

    `claims=True` also follows every claim and release — the "claimed" state of a launch in
    flight and a "written by N launches" history line. It is off by default because it is the
    one part that costs every successful launch two more events (BufferClaimed/Released are only
    built when someone subscribes to them); failures, skips, repairs and OOB reports cost
    nothing until they happen.
    """

    _FAILURE_KINDS = (ev.BufferCreated, ev.BufferFailed, ev.BufferRepaired, ev.LaunchFailed,
                      ev.LaunchSkipped, ev.OobReported, ev.MemoryReleased)

    def __init__(self, bus: ev.EventBus | None = None, claims: bool = False,
                 max_history: int = 50, max_oob: int = 200) -> None:
        self.kinds = self._FAILURE_KINDS + ((ev.BufferClaimed, ev.BufferReleased) if claims else ())
        self.claims = claims
        self._buffers: dict[int, BufferState] = {}
        self._skips: dict[int, ev.LaunchSkipped] = {}
        self._oob: list[OobRow] = []
        self.max_history, self.max_oob = max_history, max_oob
        super().__init__(bus)

    def _buf(self, hid: int) -> BufferState:
        b = self._buffers.get(hid)
        if b is None:
            b = self._buffers[hid] = BufferState(hid)
        return b

    def _set(self, hid: int, state: str, e: ev.Event, kernel: str, seq: int, detail: str = "",
             root: str = "", error: str = "") -> None:
        b = self._buf(hid)
        if state in ("failed", "skipped") and b.state == state and b.history \
                and b.history[-1].launch_seq == seq and seq:
            return  # LaunchFailed and BufferFailed report the same fact
        b.state, b.kernel = state, kernel
        b.root_kernel, b.error = (root, error) if state in ("failed", "skipped") else ("", "")
        b.history.append(BufferHistory(e.t, state, kernel, seq, detail))
        if len(b.history) > self.max_history:
            del b.history[0]

    @on(ev.BufferCreated)
    def _created(self, e: ev.BufferCreated) -> None:
        b = self._buf(e.handle_id)
        b.size = e.size
        self._set(e.handle_id, "clean", e, "", 0, f"created, {e.size} B")

    @on(ev.BufferClaimed)
    def _claimed(self, e: ev.BufferClaimed) -> None:
        # The hot path (every launch, on the device thread): a claim is transient, so it
        # changes the state but adds no history entry of its own.
        bufs = self._buffers
        for h in e.handle_ids:
            b = bufs.get(h) or self._buf(h)
            b.state, b.kernel = "claimed", e.kernel

    @on(ev.BufferReleased)
    def _released(self, e: ev.BufferReleased) -> None:
        bufs = self._buffers
        for h in e.handle_ids:
            b = bufs.get(h) or self._buf(h)
            if b.error:  # it carried a failure: this success repaired it
                self._set(h, "repaired", e, e.kernel, e.launch_seq, "rewritten successfully")
                continue
            b.state, b.kernel = "clean", e.kernel
            last = b.history[-1] if b.history else None
            if last is not None and last.state == "clean" and last.kernel == e.kernel:
                last.count += 1
                last.t, last.launch_seq = e.t, e.launch_seq
                last.detail = f"written by {last.count} successful launches"
            else:
                self._set(h, "clean", e, e.kernel, e.launch_seq, "written by a successful launch")

    @on(ev.BufferRepaired)
    def _repaired(self, e: ev.BufferRepaired) -> None:
        for h in e.handle_ids:
            b = self._buf(h)
            if b.state == "repaired" and b.history and b.history[-1].launch_seq == e.launch_seq:
                continue  # BufferReleased of the same launch already said so
            self._set(h, "repaired", e, e.kernel, e.launch_seq, "rewritten successfully")

    @on(ev.LaunchSkipped)
    def _skipped(self, e: ev.LaunchSkipped) -> None:
        if e.why != "dry-run":
            self._skips[e.launch_seq] = e
            if len(self._skips) > 1000:
                self._skips.pop(next(iter(self._skips)))

    @on(ev.BufferFailed)
    def _buffer_failed(self, e: ev.BufferFailed) -> None:
        skip = self._skips.get(e.launch_seq)
        root = e.root_kernel or (skip.root_kernel if skip else "") or e.kernel
        state = "skipped" if (skip is not None or root != e.kernel) else "failed"
        detail = (f"skipped: input carried the failure of `{root}`" if state == "skipped"
                  else "launch failed")
        for h in e.handle_ids:
            self._set(h, state, e, e.kernel, e.launch_seq, detail, root, _error_text(e.error))

    @on(ev.LaunchFailed)
    def _launch_failed(self, e: ev.LaunchFailed) -> None:
        for h in e.buffers:
            self._set(h, "failed", e, e.kernel, e.launch_seq, "launch failed", e.kernel,
                      _error_text(e.error))

    @on(ev.MemoryReleased)
    def _gone(self, e: ev.MemoryReleased) -> None:
        # the buffer is gone (its failure record went with it): so is its row
        self._buffers.pop(e.handle_id, None)

    @on(ev.OobReported)
    def _oob_reported(self, e: ev.OobReported) -> None:
        if len(self._oob) < self.max_oob:
            self._oob.append(e)

    def _reset(self) -> None:
        self._buffers.clear()
        self._skips.clear()
        self._oob.clear()

    def snapshot(self) -> BuffersSnapshot:
        with self._lock:
            self._drain()
            bufs = tuple(replace(b, history=[replace(h) for h in b.history])
                         for _, b in sorted(self._buffers.items()))
            return BuffersSnapshot(bufs, tuple(self._oob))


# -- launches: the two hops --------------------------------------------------------------------


@dataclass
class LaunchRecord:
    """One launch as the seed draws it: hop 1 on the calling thread, hop 2 on the device thread."""

    seq: int
    kernel: str
    kernel_id: KernelId | None = None
    cube_count: tuple[int, int, int] = (0, 0, 0)
    calling_thread: str = ""
    stream: str = ""  # the stream it was queued on (the calling thread's unless pinned)
    mode: str = ""  # LaunchMode: Execute, or Skip inside a dry run
    issued_t: float = 0.0
    gated: str = ""  # hop 1 ended here (zero count, ...)
    device_thread: str = ""
    cache: str = ""  # "compile" | "hit" | "compile-failed"
    compile_s: float = 0.0
    skipped: str = ""  # "dry-run" | "tainted-input: <root kernel>"
    claimed: tuple[int, ...] = ()
    dispatched_t: float = 0.0
    failed: str = ""
    profile_s: float | None = None

    @property
    def status(self) -> str:
        if self.gated:
            return "gated"
        if self.failed:
            return "failed"
        if self.skipped:
            return "skipped"
        if self.dispatched_t:
            return "dispatched"
        return "queued"

    @property
    def latency_s(self) -> float | None:
        """Issue → dispatched: queueing plus compile (not the GPU's execution time)."""
        return self.dispatched_t - self.issued_t if self.dispatched_t and self.issued_t else None


class LaunchLog(Ledger):
    """The last `keep` launches, each filled in hop by hop as its events arrive."""


    def __init__(self, bus: ev.EventBus | None = None, keep: int = 50) -> None:
        self.keep = keep
        self._records: OrderedDict[int, LaunchRecord] = OrderedDict()
        self._gated = 0
        super().__init__(bus)

    def _rec(self, seq: int, kernel: str) -> LaunchRecord:
        r = self._records.get(seq)
        if r is None:
            r = self._records[seq] = LaunchRecord(seq, kernel)
            while len(self._records) > self.keep:
                self._records.popitem(last=False)
        return r

    def _record(self, e: ev.Event) -> None:
        """The type's handler (`@on`), given the record of the event's launch: a gated launch
        never got a sequence number (it gets a negative one here), an event of no launch is
        left out."""
        handler = self._handlers.get(type(e))
        if handler is None:
            return
        if type(e) is ev.LaunchGated:
            self._gated += 1
            handler(self, e, self._rec(-self._gated, e.kernel))  # type: ignore[call-arg]
            return
        seq = getattr(e, "launch_seq", 0)
        if seq:
            handler(self, e, self._rec(seq, getattr(e, "kernel", "")))  # type: ignore[call-arg]

    @on(ev.LaunchGated)
    def _gated_by(self, e: ev.LaunchGated, r: LaunchRecord) -> None:
        r.gated, r.calling_thread, r.issued_t = e.why, e.thread, e.t

    @on(ev.LaunchIssued)
    def _issued(self, e: ev.LaunchIssued, r: LaunchRecord) -> None:
        r.kernel_id, r.cube_count = e.kernel_id, e.cube_count
        r.calling_thread, r.issued_t = e.thread, e.t
        stream, mode = getattr(e, "stream", None), getattr(e, "mode", None)
        r.stream = "" if stream is None else str(stream)
        r.mode = "" if mode is None else str(getattr(mode, "value", mode))

    @on(ev.CompileStarted)
    def _compiling(self, e: ev.CompileStarted, r: LaunchRecord) -> None:
        r.cache, r.device_thread = "compile", e.thread

    @on(ev.CompileFinished)
    def _compiled(self, e: ev.CompileFinished, r: LaunchRecord) -> None:
        r.cache = "compile"
        r.compile_s = e.expand_s + e.passes_s + e.codegen_s + e.driver_s

    @on(ev.CompileFailed)
    def _compile_failed(self, e: ev.CompileFailed, r: LaunchRecord) -> None:
        r.cache = "compile-failed"

    @on(ev.CacheHit)
    def _hit(self, e: ev.CacheHit, r: LaunchRecord) -> None:
        r.cache, r.device_thread = "hit", e.thread

    @on(ev.LaunchSkipped)
    def _skipped(self, e: ev.LaunchSkipped, r: LaunchRecord) -> None:
        r.skipped = e.why + (f": input failed in `{e.root_kernel}`" if e.root_kernel else "")

    @on(ev.BufferClaimed)
    def _claimed(self, e: ev.BufferClaimed, r: LaunchRecord) -> None:
        r.claimed = e.handle_ids

    @on(ev.LaunchDispatched)
    def _dispatched(self, e: ev.LaunchDispatched, r: LaunchRecord) -> None:
        r.dispatched_t, r.device_thread = e.t, e.thread

    @on(ev.LaunchFailed)
    def _launch_failed(self, e: ev.LaunchFailed, r: LaunchRecord) -> None:
        r.failed = _error_text(e.error)

    @on(ev.ProfileSample)
    def _profiled(self, e: ev.ProfileSample, r: LaunchRecord) -> None:
        r.profile_s = e.duration_s

    def _reset(self) -> None:
        self._records.clear()

    def snapshot(self) -> tuple[LaunchRecord, ...]:
        with self._lock:
            self._drain()
            return tuple(replace(r) for r in self._records.values())


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 compile', '3 compiles', '1 cache hit', '0 cache hits'."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def clock(t: float) -> str:
    """A perf_counter time as the wall-clock time it happened ('14:03:27'). Views show this
    rather than 'x s ago', which is only true at the moment it is drawn and a view is redrawn
    only when something changes."""
    if not t:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(time.time() - (time.perf_counter() - t)))


def distinguishing_fields(ids: Sequence[KernelId]) -> dict[KernelId, str]:
    """For each KernelId, the fields that tell it apart from the other ids of the same kernel
    ('Unchecked · relu: true'), so rows named `Add<f32>#…` can be told apart at a glance.
    An id alone of its kind gets its mode and cube dim."""
    by_type: dict[str, list[KernelId]] = {}
    for k in ids:
        by_type.setdefault(k.type, []).append(k)
    out: dict[KernelId, str] = {}
    for group in by_type.values():
        fields = [k.fields() for k in group]
        names = [n for n in fields[0] if n != "type"
                 and len({repr(f.get(n)) for f in fields}) > 1] if len(group) > 1 \
            else ["mode", "cube_dim"]
        for k, f in zip(group, fields):
            parts = []
            for n in names:
                v = f.get(n)
                if n == "mode":
                    parts.append(str(v))
                elif n == "cube_dim":
                    parts.append("cube_dim " + "×".join(str(d) for d in v))
                else:
                    parts.append(f"{n.removeprefix('info.')}: {v}")
            if len({o.origin for o in group}) > 1:  # the same kernel defined in several places
                where = defined_at(k.origin)
                parts.append(f"defined at {where}" if where else "another definition")
            out[k] = " · ".join(parts)
    return out


def ago(t: float, now: float | None = None) -> str:
    """'3.2 s ago' for a perf_counter time (views show relative times)."""
    if not t:
        return ""
    dt = (time.perf_counter() if now is None else now) - t
    return f"{dt:.1f} s ago" if dt < 120 else f"{dt / 60:.0f} min ago"

