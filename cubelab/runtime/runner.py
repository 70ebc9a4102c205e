"""The device thread: one runner per device owns the server; clients on any thread submit to it.

Why a thread: the driver is not guaranteed thread-safe and the bookkeeping (pipeline cache,
failure ledger, queued dispatches) wants a single owner, as CubeCL's runner does. The price is
that the hand-off is irreversible: whatever only the calling thread knows (dry run, stream,
profiling) must be decided before `submit`.

A dropped handle's `__del__` posts its release here too (`SimpleQueue.put` is safe to call from
`__del__`, on any thread), so it is handled after every task that was queued while the handle
was alive — the launches that still use it included.

Runs of launches: a Python loop of launches queues launch tasks back to back (the server's
`launch`, each with its kernel, `Bindings`, count, launch number, mode and stream). When the
runner takes a launch it also takes every launch queued right behind it (up to `RUN_LIMIT`) and
hands them to the server's `launch_run` as one run, which encodes them in a tight loop — a
loop of one launch as bare repeats, a loop that alternates kernels or buffers through what the
device thread kept of each (`Server.launch_run` says when, and why nobody can tell the
difference). Only *adjacent* items are merged, so the order of everything on the queue is the
order it was submitted in: a release, a host write, a sync or a profiled launch between two
launches ends the run. The calling thread is not involved: it submits each launch as before,
so nothing it does needs a lock.

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

# The most launches gathered into one run before it is encoded: gathering costs ~0.1 µs a
# launch, and the device should not wait for a loop that keeps launching to stop.
RUN_LIMIT = 256


class Runner:
    def __init__(self, name: str, on_idle: Callable[[], None] | None = None,
                 before_call: Callable[[], None] | None = None) -> None:
        self._q: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Future[Any] | None]]
        self._q = queue.SimpleQueue()
        # `put((fn, args, None))` is `submit(fn, *args)` without its Python frame: for the one
        # caller that runs on every launch (`Client.launch`)
        self.put = self._q.put
        self._on_idle = on_idle
        self._before_call = before_call  # runs on the device thread before each `call`
        # the server's `launch` (the very object clients submit) and `launch_run`: see above
        self.launch: Callable[..., Any] | None = None
        self._launch_run: Callable[..., Any] | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def gather_runs(self, launch: Callable[..., Any], launch_run: Callable[..., Any]) -> None:
        """Gather back-to-back `launch` tasks into `launch_run(items)` calls (see above), each
        item a launch's arguments. `launch` is the object clients must submit (`runner.launch`),
        compared by identity."""
        self._launch_run = launch_run
        self.launch = launch

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
        get, get_nowait, empty = q.get, q.get_nowait, queue.Empty
        held: Any = None  # an item taken while gathering a run, that ended it: it runs next
        while True:
            if held is None:
                fn, args, fut = get()
            else:
                (fn, args, fut), held = held, None
            if fut is None:
                run = None
                # a launch (kernel, count, bindings, seq, profile, mode, stream), not profiled,
                # with another launch right behind it: gather the run
                if fn is self.launch and not args[4]:
                    try:
                        held = get_nowait()
                    except empty:
                        pass
                    else:
                        if held[0] is fn and not held[1][4]:
                            run, held = _gather(args, held, get_nowait)
                try:
                    if run is None:
                        fn(*args)
                    else:
                        self._launch_run(run)  # type: ignore[misc]
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
            fn = args = fut = run = None  # type: ignore[assignment]
            if self._on_idle is not None and held is None and q.empty():
                try:
                    self._on_idle()
                except BaseException:  # noqa: BLE001
                    pass


def _gather(first: tuple[Any, ...], nxt: Any, get_nowait: Callable[[], Any]
            ) -> tuple[list[list[Any]], Any]:
    """The run that starts with launch `first` (its arguments) and goes on while the queued
    items (`nxt`, then what `get_nowait` takes) are unprofiled launches, as groups of launches
    that differ at most in their scalars: [the first one's arguments, the launch numbers of all
    of them, None — or each one's `Bindings` where they are not all the very same object]. A
    group: the same kernel and mode objects, stream and grid, and the same `Bindings` object or
    bindings that share their buffers list (the frontend builds those for a launch whose
    scalars changed: `frontend/launch.py`). Also returns the item that ended the run: None if
    the queue ran dry, the next item at `RUN_LIMIT`. `nxt` is such a launch. (Runs once per
    queued launch of a loop: locals only, one unpacking per item.)"""
    fn = nxt[0]
    kernel, count, bindings, seq, _, mode, stream = first
    seqs = [seq]
    binds: list[Any] | None = None
    group: list[Any] = [first, seqs, None]
    groups = [group]
    for _ in range(RUN_LIMIT - 1):
        item = nxt[1]
        k, c, b, s, profiled, m, st = item
        if profiled:  # it runs alone
            return groups, nxt
        same = (k is kernel and m is mode and st == stream
                and (c is count or (c.handle is None and count.handle is None
                                    and c.x == count.x and c.y == count.y and c.z == count.z)))
        if same and b is bindings:
            seqs.append(s)
            if binds is not None:
                binds.append(b)
        elif same and b.buffers is bindings.buffers:  # only the scalars differ
            if binds is None:
                binds = group[2] = [bindings] * len(seqs)
            seqs.append(s)
            binds.append(b)
        else:
            kernel, count, bindings, mode, stream = k, c, b, m, st
            seqs, binds = [s], None
            group = [item, seqs, None]
            groups.append(group)
        try:
            nxt = get_nowait()
        except queue.Empty:
            return groups, None
        if nxt[0] is not fn:  # not a launch
            return groups, nxt
    return groups, nxt
