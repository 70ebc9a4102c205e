"""The device thread: one runner per device owns the server; clients on any thread submit to it.

Why a thread: the driver is not guaranteed thread-safe and the bookkeeping (pipeline cache,
failure ledger, queued dispatches) wants a single owner, as CubeCL's runner does. The price is
that the hand-off is irreversible: whatever only the calling thread knows (dry run, stream,
profiling) must be decided before `submit`.

A dropped handle's `__del__` posts its release here too (`SimpleQueue.put` is safe to call from
`__del__`, on any thread), so it is handled after every task that was queued while the handle
was alive — the launches that still use it included.

When the queue runs dry the runner calls `on_idle` (the wgpu server submits its batched
dispatches there), so the GPU never waits for work that is already encoded. Before each
synchronous `call` it runs `before_call` (the server publishes its tallied cache hits there, so a
caller that syncs and then looks at a view sees every hit).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable


class Runner:
    def __init__(self, name: str, on_idle: Callable[[], None] | None = None,
                 before_call: Callable[[], None] | None = None) -> None:
        self._q: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Future[Any] | None]]
        self._q = queue.SimpleQueue()
        self._on_idle = on_idle
        self._before_call = before_call  # runs on the device thread before each `call`
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Fire and forget: `fn(*args)` runs on the device thread, in submission order."""
        self._q.put((fn, args, None))

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the device thread and wait for its result (or exception)."""
        if threading.current_thread() is self._thread:
            return fn(*args)
        fut: Future[Any] = Future()
        self._q.put((fn, args, fut))
        exc = fut.exception()
        if exc is not None:
            # Re-raised here, on the calling thread, without the device thread's frames.
            raise exc.with_traceback(None)
        return fut.result()

    def _loop(self) -> None:
        q = self._q
        while True:
            fn, args, fut = q.get()
            if fut is None:
                try:
                    fn(*args)
                except BaseException:  # noqa: BLE001 - the server records failures itself
                    pass
            else:
                if self._before_call is not None:
                    try:
                        self._before_call()
                    except BaseException:  # noqa: BLE001
                        pass
                try:
                    fut.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001
                    fut.set_exception(exc)
            # Let go of the task now, not when the next one arrives: its arguments may hold the
            # last reference to a handle, whose release must be queued behind this task — not
            # behind whatever call comes next (`memory_usage()` would miss it).
            fn = args = fut = None  # type: ignore[assignment]
            if self._on_idle is not None and q.empty():
                try:
                    self._on_idle()
                except BaseException:  # noqa: BLE001
                    pass
