"""Streams: which queue a launch joins, and the dependency inference that keeps them honest.

A launch's stream comes from the *calling thread*, not from an argument: `Client` has no "which
stream is this launch on" field; `current_stream()` answers from the thread (or from a pin set
with `client.set_stream(id)` or `with stream(id):`), on the calling thread, before the hand-off —
afterwards the device thread only knows its own thread. The direct consequence: two threads'
launches land on two streams by default.

On the device thread, one `StreamScheduler` (shared by every server) keeps a queue per stream and
the stream each buffer was last touched on. Registering a task does three things, as CubeCL's
scheduler does:

1. align: a binding last touched on another stream flushes that stream first (an event and the
   log line "Binding on X is shared on Y"); where streams run side by side on the device (CUDA),
   the backend's `join` then makes this stream wait for that one. Two kernels depend on each other only if they share
   a buffer, and the buffers of a launch are known here, so this one rule infers every
   dependency. Its price is the other face of the same rule: it over-synchronizes (any shared
   buffer drains the other stream, even for two reads) and never under-synchronizes;
2. queue the task on its stream;
3. flush the stream when its queue reaches `max_tasks`. So *when* a stream runs is not decided
   by `sync` alone: another thread's launch that merely names one of its buffers drains it.

A flush hands the queued tasks to the backend's `submit_stream` (on wgpu: one command buffer
holding every queued dispatch — where batching beats one submit per launch). A backend that
refuses the submission fails every task in it: the refusal lands on their written buffers.
"""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Iterable

from cubelab.errors import hinted
from cubelab.runtime import events as ev

if TYPE_CHECKING:
    from cubelab.runtime.handle import Handle

log = logging.getLogger("cubelab.streams")

StreamId = int

_next_stream = itertools.count(1)
_local = threading.local()


def thread_stream() -> StreamId:
    """This thread's own stream (numbered in order of first use: 1, 2, ...)."""
    sid = getattr(_local, "own", None)
    if sid is None:
        sid = _local.own = next(_next_stream)
        if not getattr(_local, "pinned", None):
            _local.current = sid
    return sid


def current_stream() -> StreamId:
    """The stream this thread's launches join: the innermost `with stream(id):`, else its own.
    (Kept in one thread-local value, `current`, by `stream` and `thread_stream`: every launch
    asks.)"""
    try:
        return _local.current  # type: ignore[no-any-return]
    except AttributeError:  # this thread's first question
        return thread_stream()


class stream:  # noqa: N801 - used as `with stream(3):`, like a function
    """`with stream(id):` — launches issued by this thread inside join stream `id`."""

    __slots__ = ("id",)

    def __init__(self, id: StreamId) -> None:  # noqa: A002
        if not isinstance(id, int) or isinstance(id, bool) or id < 1:
            raise ValueError(hinted(f"a StreamId is a positive int, got {id!r}",
                                    "use 1, 2, ..."))
        self.id = id

    def __enter__(self) -> StreamId:
        stack = getattr(_local, "pinned", None)
        if stack is None:
            stack = _local.pinned = []
        stack.append(self.id)
        _local.current = self.id
        return self.id

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        stack = _local.pinned
        stack.pop()
        if stack:
            _local.current = stack[-1]
        elif getattr(_local, "own", None) is not None:
            _local.current = _local.own
        else:  # never asked outside a `with`: its own stream is numbered when first asked
            del _local.current


@dataclass(slots=True)
class Task:
    """What a queued dispatch leaves behind for its flush: whom to blame if the submit fails.

    One task may stand for a run of identical launches encoded back to back (`seqs`: their
    launch numbers in order, `launch_seq` the first; see `Server.launch_run`): each of them
    still counts as one dispatch towards `max_tasks`, and a refused submission fails each."""

    kernel: str
    launch_seq: int
    written: list[tuple["Handle", str]]  # (handle, binding name)
    kernel_id: Any = None
    seqs: "list[int] | None" = None

    @property
    def launches(self) -> "list[int]":
        return self.seqs if self.seqs is not None else [self.launch_seq]


@dataclass
class _Queue:
    tasks: list[Task] = field(default_factory=list)
    dispatches: int = 0  # what the tasks stand for (a run's task stands for several)


class StreamScheduler:
    """Per-stream queues and buffer→stream bookkeeping (device thread only, so no locks)."""

    def __init__(self, bus: ev.EventBus, submit: Callable[[StreamId], None],
                 on_submit_failed: Callable[[list[Task], BaseException], None],
                 max_tasks: int = 64,
                 after_flush: Callable[[StreamId], None] | None = None,
                 join: Callable[[StreamId, StreamId], None] | None = None) -> None:
        self.bus = bus
        self._submit = submit
        self._on_submit_failed = on_submit_failed
        # told after a stream's queued work was handed over (or lost): nothing queued on it is
        # left unsubmitted, so memory it used may be reused (the server's deferred releases)
        self._after_flush = after_flush
        # told after `align` flushed another stream: make this stream's later work wait for
        # what was submitted there (CUDA: an event). None where one queue orders every
        # submission (wgpu) or work runs as it is submitted (the CPU runtime).
        self._join = join
        self.max_tasks = max_tasks
        self.queues: dict[StreamId, _Queue] = {}
        self.last_stream: dict[int, StreamId] = {}  # handle id -> stream it was last touched on

    def pending(self, stream_id: StreamId) -> int:
        """How many dispatches are queued on `stream_id`, not yet submitted."""
        q = self.queues.get(stream_id)
        return q.dispatches if q else 0

    def align(self, stream_id: StreamId, handles: Iterable["Handle"]) -> None:
        """Flush every other stream that last touched one of `handles`; they now live here."""
        others: list[StreamId] = []
        last = self.last_stream
        for h in handles:
            hid = h.id
            other = last.get(hid)
            if other == stream_id:
                continue  # the common case: a loop on one stream
            if other is not None:
                # CubeCL's own wording (`Binding on {} is shared on {}`): the stream the buffer
                # was last touched on, then this launch's
                log.info("Binding on %d is shared on %d", other, stream_id)
                if self.bus.wants(ev.StreamShared):
                    self.bus.publish(ev.StreamShared(hid, stream_id, other))
                if other not in others:
                    others.append(other)
            last[hid] = stream_id
        for other in others:
            self.flush(other, "shared")
            if self._join is not None:
                self._join(stream_id, other)

    def register(self, stream_id: StreamId, task: Task, allow_flush: bool = True,
                 dispatches: int = 1) -> None:
        """Queue `task`, which stands for `dispatches` dispatches (a run's task: several)."""
        q = self.queues.get(stream_id)
        if q is None:
            q = self.queues[stream_id] = _Queue()
        q.tasks.append(task)
        q.dispatches += dispatches
        if allow_flush and q.dispatches >= self.max_tasks:
            self.flush(stream_id, "max_tasks")

    def flush(self, stream_id: StreamId, why: str) -> None:
        q = self.queues.get(stream_id)
        if q is None or not q.tasks:
            return
        tasks, q.tasks = q.tasks, []
        dispatches, q.dispatches = q.dispatches, 0
        try:
            self._submit(stream_id)
        except Exception as exc:  # noqa: BLE001 - the refusal becomes buffer state
            self._on_submit_failed(tasks, exc)
            if self._after_flush is not None:
                self._after_flush(stream_id)
            return
        if self._after_flush is not None:
            self._after_flush(stream_id)
        if self.bus.active and self.bus.wants(ev.Flushed):  # once per submission: often once per launch
            self.bus.publish(ev.Flushed(dispatches, why, stream=stream_id))

    def flush_all(self, why: str) -> None:
        for sid in [s for s, q in self.queues.items() if q.tasks]:
            self.flush(sid, why)

    def flush_for(self, handles: Iterable["Handle"], why: str) -> None:
        """Flush the streams whose queued work may touch `handles` (reads, host writes)."""
        seen: list[StreamId] = []
        for h in handles:
            sid = self.last_stream.get(h.id)
            if sid is not None and sid not in seen:
                seen.append(sid)
        for sid in seen:
            self.flush(sid, why)

    def drop(self, stream_id: StreamId) -> list[Task]:
        """The backend lost the stream's encoded work: hand back the tasks that were in it."""
        q = self.queues.get(stream_id)
        if q is None:
            return []
        tasks, q.tasks = q.tasks, []
        q.dispatches = 0
        if self._after_flush is not None:
            self._after_flush(stream_id)
        return tasks

    def forget(self, handle: "Handle") -> None:
        self.last_stream.pop(handle.id, None)
