"""Runs of identical launches (issue #17, the launch rate).

A Python loop that launches one kernel on the same arguments queues the same task on the device
thread over and over. The runner takes the identical launches queued back to back as one run
(`runtime/runner.py`), and the server encodes a run's repeats as bare dispatches where nobody
could tell the difference (`Server.launch_run`). These tests pin that nobody can: the results,
the order against other work, the failures and whom they name, the events, `max_tasks`, dry
runs — on both runtimes. Each holds the device thread while it launches, so the launches are
queued back to back for sure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab.errors import LoopGuardError
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from tests.fixtures.launch_run_kernels import add_one, double, serial_sum
from tests.fixtures.seed001_kernels import scale_slow

from tests.fixtures.run_spies import (  # noqa: F401 - fixtures
    ONE,
    SERIAL,
    floats,
    held,
    prepared,
    read,
    repeats,
    runs,
    warm,
)


def test_identical_launches_queued_back_to_back_run_as_one_run_with_the_same_result(
        client, runs, repeats):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    with held(client):
        for _ in range(20):
            add_one.launch(client, *ONE, ya)
    np.testing.assert_array_equal(read(client, y), np.full(8, 20.0))
    assert len(runs) == 1
    seqs = runs[0][0]
    assert len(seqs) == 20 and seqs == sorted(seqs)
    if client.name().startswith("wgpu"):  # the first is dispatched in full, the rest repeated
        assert sum(repeats) == 19


def test_a_loop_that_alternates_kernels_is_one_run_in_order(client, runs, repeats, prepared):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    warm(client, double.launch, ya)
    with held(client):
        for _ in range(3):
            add_one.launch(client, *ONE, ya)  # 3
        double.launch(client, *ONE, ya)  # 6
        for _ in range(2):
            add_one.launch(client, *ONE, ya)  # 8
        for _ in range(2):
            double.launch(client, *ONE, ya)  # 32
    np.testing.assert_array_equal(read(client, y), np.full(8, 32.0))
    ((seqs, _),) = runs
    assert len(seqs) == 8 and seqs == sorted(seqs)
    if client.name().startswith("wgpu"):
        # each kernel's first launch is dispatched in full (its bindings are new); a launch
        # identical to the one before is a bare repeat; the rest set pipeline and bind group
        assert sum(repeats) == 4 and len(prepared) == 2


def test_a_release_ends_a_run_and_a_launch_on_another_stream_runs_on_its_stream(
        client, runs):
    y, spare = floats(client, np.zeros(8)), client.zeros(32)
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    with client.events.record(ev.StreamShared) as rec:
        with held(client):
            for _ in range(2):
                add_one.launch(client, *ONE, ya)
            client.free(spare)  # its release is queued between the launches
            for _ in range(2):
                add_one.launch(client, *ONE, ya)
            with cubelab.stream(77):
                for _ in range(2):
                    add_one.launch(client, *ONE, ya)
        client.sync()
    np.testing.assert_array_equal(read(client, y), np.full(8, 6.0))
    assert [len(seqs) for seqs, _ in runs] == [2, 4]
    streams = runs[1][1]
    assert streams[2:] == [77, 77] and streams[0] == streams[1] != 77
    # the launch on stream 77 found `y` last touched on the other stream: aligned once
    assert [e.stream for e in rec.of(ev.StreamShared)] == [77]


def test_a_run_longer_than_max_tasks_is_submitted_every_max_tasks_dispatches(
        client, runs, repeats):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    server = client.device.server
    warm(client, add_one.launch, ya)
    old = client.max_tasks
    client.set_max_tasks(8)
    try:
        with held(client):
            for _ in range(30):
                add_one.launch(client, *ONE, ya)
        stream = client.stream_id()
        # 24 were submitted by three max_tasks flushes; 6 wait for the next flush
        assert client.device.runner.call(server.scheduler.pending, stream) == 6
    finally:
        client.set_max_tasks(old)
    np.testing.assert_array_equal(read(client, y), np.full(8, 30.0))
    assert [len(seqs) for seqs, _ in runs] == [30]
    if client.name().startswith("wgpu"):  # the repeats go on across the flushes
        assert sum(repeats) == 29


def test_every_launch_of_a_run_is_still_an_event(client, runs):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    with client.events.record(ev.LaunchIssued, ev.CacheHit, ev.LaunchDispatched,
                              ev.Flushed) as rec:
        with held(client):
            for _ in range(10):
                add_one.launch(client, *ONE, ya)
        client.sync()
    issued = [e.launch_seq for e in rec.of(ev.LaunchIssued)]
    assert len(issued) == 10
    assert [e.launch_seq for e in rec.of(ev.CacheHit)] == issued
    assert [e.launch_seq for e in rec.of(ev.LaunchDispatched)] == issued
    assert sum(e.dispatches for e in rec.of(ev.Flushed)) == 10
    assert runs[-1][0] == issued
    np.testing.assert_array_equal(read(client, y), np.full(8, 10.0))


def test_a_view_that_only_counts_cache_hits_still_sees_every_launch_of_a_run(
        client, runs, repeats):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    with client.events.record(ev.CacheHits) as rec:
        with held(client):
            for _ in range(10):
                add_one.launch(client, *ONE, ya)
        client.sync()
    (seqs, _), = runs
    tallies = [e for e in rec.of(ev.CacheHits) if e.kernel == "AddOne"]
    assert sum(e.count for e in tallies) == 10
    assert tallies[0].first_seq == seqs[0] and tallies[-1].last_seq == seqs[-1]
    if client.name().startswith("wgpu"):  # a tally is counted per batch: the repeats stay bare
        assert sum(repeats) == 9


def test_a_failed_buffer_elsewhere_does_not_change_a_run(client, runs, repeats):
    from tests.fixtures.seed001_kernels import bad_widths

    broken = client.empty(16)
    bad_widths.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                      BufferArg.from_raw_parts(client.empty(32), 4),
                      BufferArg.from_raw_parts(client.empty(64), 4),
                      BufferArg.from_raw_parts(broken, 4))
    assert client.buffer_state(broken) == "failed"
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    with held(client):
        for _ in range(10):
            add_one.launch(client, *ONE, ya)
    np.testing.assert_array_equal(read(client, y), np.full(8, 10.0))
    assert client.buffer_state(broken) == "failed"
    if client.name().startswith("wgpu"):
        assert sum(repeats) == 9


def test_a_run_of_guarded_launches_gives_the_same_result(client, runs, repeats):
    # a kernel with a loop carries the loop guard: each launch binds a status slot of its own
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    xa, oa = BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8)
    warm(client, scale_slow.launch, xa, oa, 3.0, 70)
    with held(client):
        for _ in range(5):
            scale_slow.launch(client, *ONE, xa, oa, 3.0, 70)
    np.testing.assert_array_equal(read(client, out), 3.0 * np.arange(8))
    assert [len(seqs) for seqs, _ in runs] == [5]
    if client.name().startswith("wgpu"):
        assert sum(repeats) == 4


def test_a_run_of_launches_past_the_loop_budget_fails_each_and_names_the_last(
        client, runs, repeats):
    client.set_compilation_options(loop_budget=1000)
    try:
        x, out = floats(client, np.ones(2000)), client.empty(4)
        xa, oa = BufferArg.from_raw_parts(x, 2000), BufferArg.from_raw_parts(out, 1)
        warm(client, serial_sum.launch, xa, oa, 2000, grid=SERIAL)
        with held(client):
            for _ in range(4):
                serial_sum.launch(client, *SERIAL, xa, oa, 2000)
        with pytest.raises(BufferFailure) as info:
            client.read_one(out)
        assert isinstance(info.value.cause, LoopGuardError)
        assert "ran more than 1000 iterations" in str(info.value)
        ((seqs, _),) = runs
        server = client.device.server
        assert client.device.runner.call(server.ledger.get, out).launch_seq == seqs[-1]
        if client.name().startswith("wgpu"):
            assert sum(repeats) == 3
        # under the budget, the same run repairs the buffer
        with held(client):
            for _ in range(3):
                serial_sum.launch(client, *SERIAL, xa, oa, 900)
        assert read(client, out)[0] == 900.0
    finally:
        from cubelab.ir.passes import DEFAULT_LOOP_BUDGET

        client.set_compilation_options(loop_budget=DEFAULT_LOOP_BUDGET)


def test_a_run_inside_a_dry_run_compiles_and_dispatches_nothing(client, runs):
    y = floats(client, np.full(8, 5.0))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, double.launch, ya)
    with cubelab.dry_run(), held(client):
        for _ in range(4):
            double.launch(client, *ONE, ya)
    np.testing.assert_array_equal(read(client, y), np.full(8, 5.0))
    assert [len(seqs) for seqs, _ in runs] == [4]


class _RefusingSecondSubmit:
    """The device's queue, refusing its second submission (a driver that gives up once)."""

    def __init__(self, queue: Any) -> None:
        self._queue, self.submits = queue, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    def submit(self, buffers: Any) -> None:
        self.submits += 1
        if self.submits == 2:
            import wgpu

            raise wgpu.GPUValidationError("Validation Error: the submission was refused")
        self._queue.submit(buffers)


def test_a_refused_submission_in_the_middle_of_a_run_fails_the_launches_it_carried(
        wgpu_client, monkeypatch):
    client = wgpu_client
    server, runner = client.device.server, client.device.runner
    seen: list[list[int]] = []
    real = runner._launch_run
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    warm(client, add_one.launch, ya)
    old = client.max_tasks
    client.set_max_tasks(4)
    monkeypatch.setattr(runner, "_launch_run", lambda run: (
        seen.append([s for _, seqs, _ in run for s in seqs]), real(run)))
    runner.call(setattr, server, "queue", _RefusingSecondSubmit(server.queue))
    try:
        with held(client):
            for _ in range(10):
                add_one.launch(client, *ONE, ya)
        client.device.runner.call(lambda: None)
    finally:
        runner.call(setattr, server, "queue", server.queue._queue)
        client.set_max_tasks(old)
    (seqs,) = seen
    # launches 1-4 went in the first submission, 5-8 in the refused one; 9 and 10 read `y`,
    # which carried the refusal by then, so they were skipped and name its root cause
    failure = runner.call(server.ledger.get, y)
    assert failure.launch_seq == seqs[7]
    assert failure.skipped == ("AddOne", "AddOne")
    with pytest.raises(BufferFailure, match="the submission was refused") as info:
        client.read_one(y)
    assert info.value.kernel == "AddOne"
    client.write(y, f32.as_bytes(np.zeros(8, dtype=np.float32)))  # fresh data repairs it
    add_one.launch(client, *ONE, ya)
    np.testing.assert_array_equal(read(client, y), np.ones(8))
