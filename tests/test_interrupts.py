"""Ctrl-C anywhere leaves no leaked memory and no buffer stuck "claimed" (#28 N5), on both runtimes.

A real Ctrl-C is SIGINT delivered to the main thread: `ctrl_c_while` sends one from the device
thread while it runs a server call the calling thread waits for (an allocation, a read, a
profiled launch), so the calling thread's wait is interrupted exactly as a student's would be.
A `KeyboardInterrupt` raised by an event subscriber is tried on every event of a launch (on the
device thread) and on the events the calling thread publishes itself. After each: the memory in
use is back where it was, every buffer is "clean", and the client goes on working."""

from __future__ import annotations

import gc
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, f32
from cubelab.runtime import events as ev

MIB = 1 << 20


@cube(launch=True)
def twice(x: Slice[f32], y: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        y[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(2.0)


@contextmanager
def ctrl_c_while(client, method: str) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """SIGINT to the main thread from inside the server's `method` (on the device thread), which
    then goes on as it would: the caller is interrupted while it waits."""
    server = client.device.server
    real = getattr(server, method)
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread() is threading.main_thread()

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.05)  # the caller takes its KeyboardInterrupt while this one still works
        return real(*args, **kwargs)

    setattr(server, method, interrupted)
    try:
        yield
    finally:
        delattr(server, method)


def in_use(client) -> int:  # type: ignore[no-untyped-def]
    """Bytes live handles hold, once every handle dropped so far has been released."""
    gc.collect()
    client.sync()
    return int(client.memory_usage().bytes_in_use)


def works(client) -> None:  # type: ignore[no-untyped-def]
    x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
    y = client.empty(32)
    twice.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), BufferArg.from_raw_parts(x, 8),
                 BufferArg.from_raw_parts(y, 8))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)), 2 * np.arange(8))
    assert client.buffer_state(y) == "clean"


@pytest.mark.parametrize("how", ["create_from_slice", "zeros", "empty"])
def test_ctrl_c_during_an_allocation_leaks_no_memory(client, how):  # type: ignore[no-untyped-def]
    before = in_use(client)
    with ctrl_c_while(client, "alloc"), pytest.raises(KeyboardInterrupt):
        if how == "create_from_slice":
            client.create_from_slice(bytes(64 * MIB))
        else:
            getattr(client, how)(64 * MIB)
    assert in_use(client) == before
    works(client)


def test_ctrl_c_during_a_read_leaves_the_buffer_clean_and_readable(client):  # type: ignore[no-untyped-def]
    before = in_use(client)
    h = client.create_from_slice(f32.as_bytes(np.ones(4, np.float32)))
    with ctrl_c_while(client, "read"), pytest.raises(KeyboardInterrupt):
        client.read_one(h)
    assert client.buffer_state(h) == "clean"
    assert f32.from_bytes(client.read_one(h)).tolist() == [1, 1, 1, 1]
    del h
    assert in_use(client) == before


def test_ctrl_c_during_a_profiled_launch_leaves_no_buffer_claimed(client):  # type: ignore[no-untyped-def]
    before = in_use(client)
    x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
    y = client.empty(32)
    with client.profile(), ctrl_c_while(client, "launch"), pytest.raises(KeyboardInterrupt):
        twice.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),
                     BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8))
    client.sync()
    assert client.buffer_state(y) == "clean"  # the launch ran to its end on the device thread
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)), 2 * np.arange(8))
    del x, y
    assert in_use(client) == before


DEVICE_EVENTS = [ev.CompileStarted, ev.CompileFinished, ev.CacheHit, ev.LaunchDispatched,
                 ev.BufferClaimed, ev.BufferReleased, ev.MemoryAllocated, ev.MemoryReleased]


@pytest.mark.parametrize("kind", DEVICE_EVENTS, ids=[k.__name__ for k in DEVICE_EVENTS])
def test_a_subscriber_raising_keyboardinterrupt_on_the_device_thread_breaks_nothing(client, kind):  # type: ignore[no-untyped-def]
    before = in_use(client)

    def view(event):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    client.clear_cache()  # so the launch compiles (CompileStarted/Finished), then hits
    unsubscribe = client.events.subscribe(view, kind)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            for _ in range(2):
                x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
                y = client.empty(32)
                twice.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),
                             BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8))
                client.sync()
                assert client.buffer_state(y) == "clean"
                np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)), 2 * np.arange(8))
                del x, y
            gc.collect()
            client.sync()
    finally:
        unsubscribe()
    assert any("KeyboardInterrupt" in str(w.message) for w in said)  # said, once, not lost
    assert in_use(client) == before
    works(client)


@pytest.mark.parametrize("kind", [ev.BufferCreated, ev.LaunchIssued])
def test_a_ctrl_c_in_a_subscriber_on_the_calling_thread_stops_the_caller_and_leaks_nothing(
        client, kind):  # type: ignore[no-untyped-def]
    before = in_use(client)
    x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
    y = client.empty(32)

    def view(event):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    unsubscribe = client.events.subscribe(view, kind)
    try:
        with pytest.raises(KeyboardInterrupt):
            if kind is ev.BufferCreated:
                client.create_from_slice(bytes(8 * MIB))
            else:
                twice.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),
                             BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8))
    finally:
        unsubscribe()
    client.sync()
    assert client.buffer_state(y) == "clean"
    del x, y
    assert in_use(client) == before
    works(client)
