"""Seed 001: streams and dependency inference (DESIGN §4 rule 6).

A launch's stream comes from the calling thread unless pinned; a task whose binding was last
touched on another stream flushes that stream first ("Binding on X is shared on Y"); a queue
reaching `max_tasks` is flushed; reads flush what they depend on.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.streams import current_stream
from tests.fixtures.seed001_kernels import inc, scale


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def read(client, h):
    return f32.from_bytes(client.read_one(h))


def arg(h, n=8):
    return BufferArg.from_raw_parts(h, n)


ONE = (CubeCount.Static(1), CubeDim.new_1d(8))


def in_thread(fn):
    out: dict[str, object] = {}

    def run() -> None:
        out["stream"] = current_stream()
        fn()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out["stream"]


def test_two_threads_launch_on_two_streams_by_default(client):
    x, a, b = floats(client, np.arange(8)), floats(client, np.zeros(8)), floats(client, np.zeros(8))
    with client.events.record(ev.LaunchIssued) as rec:
        s1 = in_thread(lambda: scale.launch(client, *ONE, arg(x), arg(a), 1.0))
        s2 = in_thread(lambda: scale.launch(client, *ONE, arg(x), arg(b), 1.0))
    assert s1 != s2
    assert [e.stream for e in rec.of(ev.LaunchIssued)] == [s1, s2]


def test_a_buffer_shared_across_two_threads_streams_flushes_the_other_stream_first(client, caplog):
    x, shared = floats(client, np.arange(8)), floats(client, np.zeros(8))
    warm = floats(client, np.zeros(8))
    inc.launch(client, *ONE, arg(warm))  # compiled outside: a first dispatch flushes at once
    scale.launch(client, *ONE, arg(x), arg(warm), 2.0)
    client.sync()
    gate = threading.Event()
    with client.events.record(ev.StreamShared, ev.Flushed) as rec, \
            caplog.at_level(logging.INFO, logger="cubelab.streams"):
        # hold the device thread so both launches are queued before either is processed: the
        # writer's dispatch is still encoded-not-submitted when the reader's arrives
        client.device.runner.submit(gate.wait)
        writer = in_thread(lambda: scale.launch(client, *ONE, arg(x), arg(shared), 2.0))
        reader = in_thread(lambda: inc.launch(client, *ONE, arg(shared)))
        gate.set()
        result = read(client, shared)
    np.testing.assert_array_equal(result, 2.0 * np.arange(8) + 1.0)
    shares = [(e.handle_id, e.stream, e.other) for e in rec.of(ev.StreamShared)]
    assert (shared.id, reader, writer) in shares
    assert f"Binding on {writer} is shared on {reader}" in caplog.text
    flushes = [(e.why, e.stream, e.dispatches) for e in rec.of(ev.Flushed)]
    assert flushes[0] == ("shared", writer, 1)  # the writer's stream went first


def test_with_stream_and_set_stream_pin_the_stream(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    with client.events.record(ev.LaunchIssued) as rec:
        with cubelab.stream(41):
            scale.launch(client, *ONE, arg(x), arg(out), 1.0)
        client.set_stream(42)
        try:
            with cubelab.stream(41):  # the client's pin wins, as in CubeCL's `stream_id()`
                scale.launch(client, *ONE, arg(x), arg(out), 1.0)
        finally:
            client.set_stream(None)
        scale.launch(client, *ONE, arg(x), arg(out), 1.0)
    assert [e.stream for e in rec.of(ev.LaunchIssued)] == [41, 42, current_stream()]
    np.testing.assert_array_equal(read(client, out), np.arange(8))
    with pytest.raises(ValueError):
        cubelab.stream(0)


def test_a_queue_reaching_max_tasks_is_flushed_as_one_submission(client):
    y = floats(client, np.zeros(8))
    inc.launch(client, *ONE, arg(y))  # compiled outside the measurement
    client.sync()
    old = client.max_tasks
    client.set_max_tasks(4)
    gate = threading.Event()
    try:
        with client.events.record(ev.Flushed) as rec:
            # hold the device thread so that no idle flush can happen between the launches
            client.device.runner.submit(gate.wait)
            for _ in range(10):
                inc.launch(client, *ONE, arg(y))
            gate.set()
            result = read(client, y)
    finally:
        gate.set()
        client.set_max_tasks(old)
    np.testing.assert_array_equal(result, np.full(8, 11.0))
    flushes = [(e.why, e.dispatches) for e in rec.of(ev.Flushed)]
    assert flushes[:2] == [("max_tasks", 4), ("max_tasks", 4)]
    assert sum(n for _, n in flushes) == 10  # the last 2: flushed by the idle device or the read
    with pytest.raises(ValueError):
        client.set_max_tasks(0)


def test_a_large_launch_is_submitted_before_launch_returns(wgpu_client, monkeypatch):
    # The calling thread keeps the GIL while it queues launches, so a loop of large launches
    # left the GPU idle until the loop ended; a launch whose views hold `LARGE_LAUNCH_BYTES` or
    # more is submitted before `launch` returns, a small one is not.
    # (The threshold is lowered to 16 MiB here: the rule is the same, the buffers lighter.)
    import cubelab.runtime.client as client_module

    LARGE_LAUNCH_BYTES = 16 << 20
    monkeypatch.setattr(client_module, "LARGE_LAUNCH_BYTES", LARGE_LAUNCH_BYTES)

    client = wgpu_client
    big = client.empty(LARGE_LAUNCH_BYTES)
    small = floats(client, np.zeros(8))
    whole = LARGE_LAUNCH_BYTES // 4  # the view binds the whole handle
    inc.launch(client, *ONE, arg(big, whole))  # compiled outside the measurement
    client.sync()
    gate = threading.Event()
    opener = threading.Timer(0.2, gate.set)  # the large launch waits for the device thread
    try:
        with client.events.record(ev.Flushed) as rec:
            client.device.runner.submit(gate.wait)  # no idle flush before both are queued
            inc.launch(client, *ONE, arg(small))
            opener.start()
            inc.launch(client, *ONE, arg(big, whole))
            whys = [e.why for e in rec.of(ev.Flushed)]  # before any sync
    finally:
        gate.set()
        opener.cancel()
    assert whys == ["large"]  # one submission: the small launch went with the large one
    assert rec.of(ev.Flushed)[0].dispatches == 2
    assert read(client, small)[0] == 1.0 and read(client, big)[0] == 2.0


def test_a_small_view_of_a_large_handle_is_not_a_large_launch(wgpu_client, monkeypatch):
    # Gate 5 counts what a launch binds: a 1 K-item view into a 32 MiB handle goes out with the
    # next flush like any small launch (it used to make the calling thread wait for a round trip
    # per launch: 150 µs instead of 7 on the H200); the same handle's whole view is large.
    import cubelab.runtime.client as client_module

    LARGE_LAUNCH_BYTES = 16 << 20  # lowered from 256 MiB: the same rule, lighter buffers
    monkeypatch.setattr(client_module, "LARGE_LAUNCH_BYTES", LARGE_LAUNCH_BYTES)

    client = wgpu_client
    big = client.create_from_slice(bytes(2 * LARGE_LAUNCH_BYTES))
    inc.launch(client, *ONE, BufferArg.from_raw_parts(big, 1024))
    client.sync()
    with client.events.record(ev.Flushed) as rec:
        client.device.runner.call(lambda: None)  # nothing pending before the launches
        for _ in range(3):
            inc.launch(client, *ONE, BufferArg.from_raw_parts(big, 1024))
        small = [e.why for e in rec.of(ev.Flushed)]
        inc.launch(client, *ONE, BufferArg.from_raw_parts(big, 2 * LARGE_LAUNCH_BYTES // 4))
        whys = [e.why for e in rec.of(ev.Flushed)]
    assert "large" not in small
    assert whys[-1] == "large"
    assert read(client, big)[0] == 5.0


def test_a_refused_submission_fails_every_launch_in_it_the_one_that_filled_the_queue_included(
        client, monkeypatch):
    # The launch whose registration reaches max_tasks flushes the queue from inside its own
    # scope; when the driver refuses that submission, its buffers must carry the refusal like
    # the others' — its normal end used to release them, so `y` read as valid.
    from cubelab import BufferFailure, DeviceError

    ys = [floats(client, np.zeros(8)) for _ in range(3)]
    inc.launch(client, *ONE, arg(ys[0]))  # compiled (and its first dispatch submitted) before
    client.sync()
    scheduler = client.device.server.scheduler
    submit = scheduler._submit

    def refused(stream: int) -> None:  # the work goes out; the driver says no
        submit(stream)
        raise DeviceError("the driver refused this submission")

    old = client.max_tasks
    client.set_max_tasks(3)
    gate = threading.Event()
    monkeypatch.setattr(scheduler, "_submit", refused)
    try:
        client.device.runner.submit(gate.wait)  # the three launches queue up behind this
        for y in ys:
            inc.launch(client, *ONE, arg(y))
        gate.set()
        client.device.runner.call(lambda: None)  # they ran: the third one flushed
    finally:
        gate.set()
        monkeypatch.undo()
        client.set_max_tasks(old)
    for y in ys:
        with pytest.raises(BufferFailure, match="refused this submission"):
            client.read_one(y)


def test_a_read_flushes_the_stream_it_depends_on(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    gate = threading.Event()
    with client.events.record(ev.Flushed) as rec:
        client.device.runner.submit(gate.wait)
        with cubelab.stream(77):
            scale.launch(client, *ONE, arg(x), arg(out), 4.0)
        reader_done = threading.Event()
        got: list[np.ndarray] = []

        def reader() -> None:
            got.append(read(client, out))
            reader_done.set()

        t = threading.Thread(target=reader)
        t.start()
        gate.set()
        t.join()
    np.testing.assert_array_equal(got[0], 4.0 * np.arange(8))
    assert any(e.stream == 77 for e in rec.of(ev.Flushed))


class _CountingQueue:
    def __init__(self, queue):
        self._queue = queue
        self.submits: list[int] = []

    def __getattr__(self, name):
        return getattr(self._queue, name)

    def submit(self, buffers):
        self.submits.append(len(buffers))
        return self._queue.submit(buffers)


def test_on_wgpu_a_flush_is_one_command_buffer_in_one_submit(wgpu_client):
    client = wgpu_client
    y = floats(client, np.zeros(8))
    inc.launch(client, *ONE, arg(y))
    client.sync()
    server = client.device.server
    counting = _CountingQueue(server.queue)
    gate = threading.Event()
    client.device.runner.call(setattr, server, "queue", counting)
    try:
        with client.events.record(ev.Flushed) as rec:
            client.device.runner.submit(gate.wait)
            for _ in range(10):
                inc.launch(client, *ONE, arg(y))
            gate.set()
            result = read(client, y)
    finally:
        gate.set()
        client.device.runner.call(setattr, server, "queue", counting._queue)
    np.testing.assert_array_equal(result, np.full(8, 11.0))
    assert [e.dispatches for e in rec.of(ev.Flushed)] == [10]
    assert counting.submits == [1]  # ten dispatches, one command buffer, one submit


def test_nested_stream_blocks_give_the_stream_back_in_order_even_on_a_fresh_thread():
    def nest() -> list[int]:
        seen = []
        with cubelab.stream(90_031):  # the thread's first stream question is asked inside a pin
            seen.append(current_stream())
            with cubelab.stream(90_032):
                seen.append(current_stream())
            seen.append(current_stream())
        seen.append(current_stream())  # the thread's own stream, numbered only now
        return seen

    out: list[list[int]] = []
    t = threading.Thread(target=lambda: out.append(nest()))
    t.start()
    t.join()
    (seen,) = out
    assert seen[:3] == [90_031, 90_032, 90_031]
    assert seen[3] not in (90_031, 90_032) and seen[3] >= 1
