"""The loops students write form runs (issue #30): arguments built in the call, as the README,
the seeds and every chapter write them, and the three other shapes of the course's loops — a
ping-pong of two buffers, two kernels alternating, a scalar that changes every launch, views of
a large handle.

Every launch of such a loop is new objects (`CubeCount.Static(1)`, `BufferArg.from_raw_parts`),
so the frontend's launch memo (`frontend/launch_memo.py`) recognises them by value, and the
device thread encodes them as repeats or from what it prepared before (`Server.launch_run`).
These tests count that, with the runner's and the backend's own calls (counters, never time),
and pin that nothing observable changes: results, the events a subscriber gets, failures and
whom they name, loop-guard verdicts, `max_tasks`, dry runs, and a handle dropped, freed,
failed or written by the host between two launches — on both runtimes (only wgpu encodes
repeats and prepared launches; the CPU runtime takes every launch the ordinary way).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim, ReleasedHandleError
from cubelab.errors import LoopGuardError
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from tests.fixtures.kernels import saxpy
from tests.fixtures.launch_run_kernels import add_one, serial_sum
from tests.fixtures.run_spies import (  # noqa: F401 - fixtures
    floats,
    held,
    prepared,
    read,
    repeats,
    runs,
)
from tests.fixtures.seed001_kernels import bad_widths, inc, scale, scale_slow

raw = BufferArg.from_raw_parts


def on_wgpu(client) -> bool:  # type: ignore[no-untyped-def]
    return client.name().startswith("wgpu")


def readme_loop(client, x, y, n: int, a: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    """The README's loop: count, dim and arguments built in the call, every launch."""
    for _ in range(n):
        saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, a,
                          BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))


def ping_pong(client, a, b, n: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(n):
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(a, 8), raw(b, 8), 2.0)
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(b, 8), raw(a, 8), 0.5)


@pytest.fixture
def xy(client):  # type: ignore[no-untyped-def]
    """x = 0..15 and y = 1, compiled for the README's saxpy (one launch, then y reset)."""
    x, y = floats(client, np.arange(16)), floats(client, np.ones(16))
    readme_loop(client, x, y, 1)
    client.write(y, f32.as_bytes(np.ones(16, dtype=np.float32)))
    return x, y


# -- each shape forms runs, with the ordinary path's results --------------------------------------


def test_the_readme_loop_is_one_run_of_repeats(client, xy, runs, repeats, prepared):
    x, y = xy
    with held(client):
        readme_loop(client, x, y, 40)
    np.testing.assert_array_equal(read(client, y), 1 + 80 * np.arange(16))
    ((seqs, _),) = runs
    assert len(seqs) == 40 and seqs == sorted(seqs)
    if on_wgpu(client):  # one launch encoded from its prepared bindings, the rest repeats of it
        assert len(prepared) == 1 and sum(repeats) == 39


def test_a_ping_pong_of_two_buffers_is_one_run_of_prepared_launches(client, runs, repeats,
                                                                     prepared):
    a, b = floats(client, np.arange(8)), floats(client, np.zeros(8))
    ping_pong(client, a, b, 1)  # compiles, and dispatches both bindings once
    client.sync()
    runs.clear()
    with held(client):
        ping_pong(client, a, b, 20)
    np.testing.assert_array_equal(read(client, a), np.arange(8))
    np.testing.assert_array_equal(read(client, b), 2 * np.arange(8))
    ((seqs, _),) = runs
    assert len(seqs) == 40
    if on_wgpu(client):  # no launch is the one before it: each sets its bind group
        assert sum(repeats) == 0 and len(prepared) == 40


def test_two_kernels_alternating_are_one_run_in_order(client, runs, prepared):
    a, b = floats(client, np.ones(8)), floats(client, np.zeros(8))

    def loop(n: int) -> None:
        for _ in range(n):
            scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(a, 8), raw(b, 8),
                         3.0)
            inc.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(b, 8))
            scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(b, 8), raw(a, 8),
                         1.0)

    loop(1)  # a = 4
    client.sync()
    runs.clear()
    with held(client):
        loop(3)  # a = 13, 40, 121
    np.testing.assert_array_equal(read(client, a), np.full(8, 121.0))
    ((seqs, _),) = runs
    assert len(seqs) == 9
    if on_wgpu(client):
        assert len(prepared) == 9


def test_a_scalar_that_changes_every_launch_reaches_every_launch(client, xy, runs, repeats,
                                                                  prepared):
    x, y = xy
    with held(client):
        for i in range(30):
            saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4,
                              float(i), raw(x, 16), raw(y, 16))
    # y = 1 + (0 + 1 + ... + 29) x: every launch used its own a, not the last one's
    np.testing.assert_array_equal(read(client, y), 1 + sum(range(30)) * np.arange(16))
    ((seqs, _),) = runs
    assert len(seqs) == 30
    if on_wgpu(client):  # new bindings each launch sharing their buffers: the first encoded
        # from what was prepared for them, the rest repeats of it with an info block each
        assert len(prepared) == 1 and sum(repeats) == 29


def test_minus_zero_after_zero_in_a_loop_that_builds_its_arguments(client):
    x, out = floats(client, np.ones(8)), floats(client, np.full(8, 7.0))
    for a in (0.0, 0.0, -0.0):  # three float objects; the last compares equal to the others
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(x, 8), raw(out, 8),
                     float(a))
    assert client.read_one(out) == struct.pack("<8f", *[-0.0] * 8)


def test_views_of_a_large_handle_are_one_run(client, runs, repeats):
    big_x, big_y = client.zeros(8 << 20), client.zeros(8 << 20)
    client.write(big_x, f32.as_bytes(np.arange(16, dtype=np.float32)))
    readme_loop(client, big_x, big_y, 1)
    with held(client):
        readme_loop(client, big_x, big_y, 20, a=1.0)
    got = f32.from_bytes(client.read_one(big_y))
    np.testing.assert_array_equal(got[:16], 22 * np.arange(16))
    assert not got[16:].any()  # a view binds only its items: nothing past them is touched
    ((seqs, _),) = runs
    assert len(seqs) == 20
    if on_wgpu(client):
        assert sum(repeats) == 19


def test_a_view_of_another_length_is_another_launch(client):
    y = floats(client, np.zeros(8))
    for n in (8, 4, 8, 4):
        add_one.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(y, n))
    np.testing.assert_array_equal(read(client, y), [4, 4, 4, 4, 2, 2, 2, 2])


# -- what the ordinary path keeps, kept ---------------------------------------------------------


def test_a_subscriber_still_gets_every_launch_of_a_loop_as_an_event(client, xy, runs):
    x, y = xy
    a, b = floats(client, np.arange(8)), floats(client, np.zeros(8))
    ping_pong(client, a, b, 1)
    client.sync()
    with client.events.record(ev.LaunchIssued, ev.CacheHit, ev.LaunchDispatched) as rec:
        with held(client):
            readme_loop(client, x, y, 5)
            ping_pong(client, a, b, 3)
        client.sync()
    issued = [e.launch_seq for e in rec.of(ev.LaunchIssued)]
    assert len(issued) == 11
    assert [e.launch_seq for e in rec.of(ev.CacheHit)] == issued
    assert [e.launch_seq for e in rec.of(ev.LaunchDispatched)] == issued
    np.testing.assert_array_equal(read(client, y), 1 + 10 * np.arange(16))
    np.testing.assert_array_equal(read(client, b), 2 * np.arange(8))


def test_a_loop_longer_than_max_tasks_is_submitted_every_max_tasks_dispatches(client, xy):
    x, y = xy
    a, b = floats(client, np.arange(8)), floats(client, np.zeros(8))
    ping_pong(client, a, b, 1)
    client.sync()
    old = client.max_tasks
    client.set_max_tasks(8)
    try:
        with client.events.record(ev.Flushed) as rec:
            with held(client):
                readme_loop(client, x, y, 12)
                ping_pong(client, a, b, 9)  # 12 + 18 = 30 launches on one stream
            # (queued behind the launches: the device thread has not gone idle in between)
            pending = client.device.runner.call(client.device.server.scheduler.pending,
                                                client.stream_id())
            flushed = [(e.why, e.dispatches) for e in rec.of(ev.Flushed)]
    finally:
        client.set_max_tasks(old)
    # (the device thread goes idle after the call, and submits the rest: "idle")
    assert [f for f in flushed if f[0] != "idle"] == [("max_tasks", 8)] * 3 and pending == 6
    np.testing.assert_array_equal(read(client, y), 1 + 24 * np.arange(16))


def test_a_run_inside_a_dry_run_dispatches_nothing(client, xy, runs):
    x, y = xy
    with cubelab.dry_run(), held(client):
        readme_loop(client, x, y, 6)
    np.testing.assert_array_equal(read(client, y), np.ones(16))
    assert [len(seqs) for seqs, _ in runs] == [6]


def test_guarded_launches_alternating_take_a_status_slot_each(client, runs, prepared):
    # scale_slow has a loop, so a checked launch carries the loop guard: on wgpu each launch
    # binds its own status slot (the verdict is read at the next read), prepared or not
    a, b = floats(client, np.arange(8)), floats(client, np.zeros(8))

    def loop(n: int, rounds: int) -> None:
        for _ in range(n):
            scale_slow.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(a, 8),
                              raw(b, 8), 2.0, rounds)
            scale_slow.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(b, 8),
                              raw(a, 8), 0.5, rounds)

    loop(1, 70)
    client.sync()
    runs.clear()
    with held(client):
        loop(4, 70)
    np.testing.assert_array_equal(read(client, a), np.arange(8))
    assert [len(seqs) for seqs, _ in runs] == [8]
    if on_wgpu(client):
        assert len(prepared) == 8


def test_launches_past_the_loop_budget_fail_each_and_name_the_last(client, runs):
    client.set_compilation_options(loop_budget=1000)
    try:
        x1, x2 = floats(client, np.ones(2000)), floats(client, np.full(2000, 2.0))
        out = client.empty(4)

        def loop(n: int, count: int) -> None:
            for _ in range(n):
                for x in (x1, x2):
                    serial_sum.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                                      raw(x, 2000), raw(out, 1), count)

        loop(1, 10)
        client.sync()
        runs.clear()
        with held(client):
            loop(3, 2000)
        with pytest.raises(BufferFailure) as info:
            client.read_one(out)
        assert isinstance(info.value.cause, LoopGuardError)
        ((seqs, _),) = runs
        server = client.device.server
        assert client.device.runner.call(server.ledger.get, out).launch_seq == seqs[-1]
        with held(client):
            loop(2, 900)  # under the budget: the same loop repairs the buffer
        assert read(client, out)[0] == 1800.0
    finally:
        from cubelab.ir.passes import DEFAULT_LOOP_BUDGET

        client.set_compilation_options(loop_budget=DEFAULT_LOOP_BUDGET)


# -- between two launches of a loop: drop, free, failure, host write ------------------------------


def test_a_handle_dropped_between_two_launches_is_released_and_never_kept(client, runs):
    x, y = floats(client, np.arange(16)), floats(client, np.ones(16))
    x2 = floats(client, np.full(16, 10.0))
    readme_loop(client, x, y, 1)
    client.sync()
    xid = x.id
    with client.events.record(ev.MemoryReleased) as rec:
        with held(client):
            readme_loop(client, x, y, 3)
            del x  # the queued launches hold it; the memo does not
            readme_loop(client, x2, y, 3)
        # x dies when the run that holds the last launch using it ends: its release is queued
        # behind the first sync (as it would be behind the last launch's task, without runs)
        client.sync()
        client.sync()
        released = [e.handle_id for e in rec.of(ev.MemoryReleased)]
    assert xid in released  # (other tests' handles may be collected in the same window)
    np.testing.assert_array_equal(read(client, y), 1 + 8 * np.arange(16) + 60)
    assert [len(seqs) for seqs, _ in runs] == [6]


def test_a_handle_freed_between_two_launches_ends_the_run_and_is_refused(client, xy, runs):
    x, y = xy
    other = floats(client, np.zeros(16))
    xa = raw(x, 16)  # built before the free: the launch itself must refuse it
    with held(client):
        readme_loop(client, x, y, 3)
        client.free(x)  # its release is queued between the launches
        with pytest.raises(ReleasedHandleError):
            readme_loop(client, x, y, 1)  # BufferArg.from_raw_parts refuses it
        with pytest.raises(ReleasedHandleError):
            saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, xa,
                              raw(y, 16))
        readme_loop(client, other, y, 2)
    np.testing.assert_array_equal(read(client, y), 1 + 6 * np.arange(16))
    assert [len(seqs) for seqs, _ in runs] == [3, 2]


def test_a_buffer_failed_between_two_launches_is_skipped_with_its_root_cause(client, runs,
                                                                             repeats):
    y, v2, v4 = floats(client, np.zeros(8)), client.empty(32), client.empty(64)

    def loop(n: int) -> None:
        for _ in range(n):
            add_one.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), raw(y, 8))

    loop(1)
    with held(client):
        loop(3)
        bad_widths.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), raw(v2, 4),
                          raw(v4, 4), raw(y, 4))  # does not compile: fails its output, y
        loop(3)  # reads y, which carries the compile failure by then: skipped, each
    with pytest.raises(BufferFailure) as info:
        client.read_one(y)
    assert info.value.kernel == "BadWidths"
    assert info.value.skipped == ("AddOne", "AddOne", "AddOne")
    if on_wgpu(client):
        assert sum(repeats) == 2  # the three before the failure; none after it
    client.write(y, f32.as_bytes(np.zeros(8, dtype=np.float32)))  # fresh data repairs it
    loop(2)
    np.testing.assert_array_equal(read(client, y), np.full(8, 2.0))


def test_a_host_write_between_two_launches_ends_the_run_and_is_seen(client, xy, runs):
    x, y = xy
    with held(client):
        readme_loop(client, x, y, 3)
    client.write(y, f32.as_bytes(np.full(16, 5.0, dtype=np.float32)))  # queued behind them
    readme_loop(client, x, y, 2)
    np.testing.assert_array_equal(read(client, y), 5 + 4 * np.arange(16))
    assert [len(seqs) for seqs, _ in runs][0] == 3


# -- the info ring (wgpu): every launch's scalars, however many ------------------------------------


def test_more_launches_with_new_scalars_than_the_info_ring_holds(wgpu_client, monkeypatch):
    # A batch with more info blocks than the ring holds is submitted first; a smaller ring
    # makes that happen with few launches.
    import cubelab.runtime.wgpu.info_ring as ring

    client = wgpu_client
    monkeypatch.setattr(ring, "RING_BYTES", 2 * ring.CHUNK_BYTES)
    x, y = floats(client, np.arange(16)), floats(client, np.zeros(16))
    slots = 2 * ring.CHUNK_BYTES // client.device.server._ring.stride
    old = client.max_tasks
    client.set_max_tasks(10 * slots)
    try:
        with client.events.record(ev.Flushed) as rec:
            with held(client):
                for i in range(3 * slots):
                    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4,
                                      float(i), raw(x, 16), raw(y, 16))
            client.sync()
    finally:
        client.set_max_tasks(old)
    assert [e.why for e in rec.of(ev.Flushed)].count("info-ring") >= 1
    np.testing.assert_array_equal(read(client, y), sum(range(3 * slots)) * np.arange(16))


def test_two_streams_whose_batches_share_a_chunk_of_the_info_ring(wgpu_client, monkeypatch):
    # Stream 5's batch stays open while stream 6's wraps around the ring onto its chunk: each
    # batch writes its blocks right before itself on the queue, so both read their own.
    import cubelab.runtime.wgpu.info_ring as ring

    client = wgpu_client
    monkeypatch.setattr(ring, "RING_BYTES", 2 * ring.CHUNK_BYTES)
    slots = ring.CHUNK_BYTES // client.device.server._ring.stride
    xa, ya = floats(client, np.arange(16)), floats(client, np.zeros(16))
    xb, yb = floats(client, np.arange(16)), floats(client, np.zeros(16))

    def launch(x, y, a):  # type: ignore[no-untyped-def]
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, a, raw(x, 16),
                          raw(y, 16))

    old = client.max_tasks
    client.set_max_tasks(4 * slots)
    try:
        with held(client):
            with cubelab.stream(5):
                launch(xa, ya, 3.0)
            with cubelab.stream(6):
                for i in range(2 * slots):
                    launch(xb, yb, float(i))
    finally:
        client.set_max_tasks(old)
    np.testing.assert_array_equal(read(client, ya), 3 * np.arange(16))
    np.testing.assert_array_equal(read(client, yb), sum(range(2 * slots)) * np.arange(16))
