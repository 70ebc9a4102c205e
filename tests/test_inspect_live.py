"""Ledgers: compiles/hits per KernelId, buffer states and the two hops — built only from events."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab import inspect as I
from cubelab.prelude import f32
from tests.fixtures.failing_kernels import broken, copy, fill
from tests.test_seed000_quiz import run_add


def quiz(client):
    client.clear_cache()
    for checked, relu in [(True, False), (False, False), (True, True), (True, False)]:
        run_add(client, checked, relu)


def test_after_the_quiz_the_cache_ledger_holds_three_compiles_and_one_hit(client):
    with I.CacheStats(client.events) as stats:
        quiz(client)
        snap = stats.snapshot()
    assert (snap.total_compiles, snap.total_hits) == (3, 1)
    assert [(r.compiles, r.hits) for r in snap.rows] == [(1, 1), (1, 0), (1, 0)]
    assert "client.clear_cache()" in snap.cleared


def test_the_why_column_diffs_each_new_id_against_the_nearest_earlier_one(client):
    with I.CacheStats(client.events) as stats:
        quiz(client)
        why = [r.why for r in stats.snapshot().rows]
    assert why == [("first compile of this kernel",),
                   ("execution mode changed: Checked → Unchecked (launch vs launch_unchecked)",),
                   ("`relu` changed: false → true",)]


def test_resetting_a_ledger_forgets_the_counts(client):
    with I.CacheStats(client.events) as stats:
        quiz(client)
        stats.reset()
        assert stats.snapshot().total_compiles == 0


def _buf(client, n=4):
    return client.create_from_slice(f32.as_bytes(np.zeros(n, dtype=np.float32)))


def test_a_successful_launch_leaves_its_output_clean(client):
    with I.BufferStates(client.events) as states:
        out = _buf(client)
        fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 4),
                    2.0)
        client.read_one(out)
        b = states.snapshot().get(out.id)
    assert b.state == "clean" and b.size == 16
    assert b.history[0].state == "clean"


def test_a_failed_launch_marks_its_output_failed_with_the_error(client):
    with I.BufferStates(client.events) as states:
        out = _buf(client)
        broken.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                      BufferArg.from_raw_parts(out, 4))
        with pytest.raises(BufferFailure):
            client.read_one(out)
        b = states.snapshot().get(out.id)
    assert b.state == "failed" and b.root_kernel == "Broken"
    assert "boom during expansion" in b.error


def test_a_skipped_launchs_output_points_at_the_root_cause(client):
    with I.BufferStates(client.events) as states:
        x, out = _buf(client), _buf(client)
        broken.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 4))
        copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 4),
                    BufferArg.from_raw_parts(out, 4))
        with pytest.raises(BufferFailure):
            client.read_one(out)
        b = states.snapshot().get(out.id)
    assert b.state == "skipped"
    assert b.kernel == "Copy" and b.root_kernel == "Broken"
    assert "boom during expansion" in b.error


def test_relaunching_into_a_failed_buffer_repairs_it(client):
    with I.BufferStates(client.events) as states:
        out = _buf(client)
        broken.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                      BufferArg.from_raw_parts(out, 4))
        client.sync()
        fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 4),
                    1.0)
        client.read_one(out)
        b = states.snapshot().get(out.id)
    assert b.state == "repaired"
    assert [h.state for h in b.history][-2:] != ["failed", "failed"]


def test_the_launch_log_records_both_hops(client):
    with I.LaunchLog(client.events) as log:
        quiz(client)
        recs = log.snapshot()
    assert [r.cache for r in recs] == ["compile", "compile", "compile", "hit"]
    assert all(r.calling_thread == threading.current_thread().name for r in recs)
    assert all(r.device_thread and r.device_thread != r.calling_thread for r in recs)
    assert all(r.status == "dispatched" for r in recs)


def test_a_gated_launch_ends_on_the_calling_thread(client):
    with I.LaunchLog(client.events) as log:
        out = _buf(client)
        fill.launch(client, CubeCount.Static(0, 1, 1), CubeDim.new_1d(4),
                    BufferArg.from_raw_parts(out, 4), 1.0)
        recs = log.snapshot()
    assert len(recs) == 1 and recs[0].status == "gated" and "zero" in recs[0].gated
    assert recs[0].device_thread == ""


def test_ledgers_render_their_snapshots_for_notebook_and_terminal(client):
    with I.CacheStats(client.events) as stats, I.BufferStates(client.events) as states, \
            I.LaunchLog(client.events) as log:
        quiz(client)
        for ledger in (stats, states, log):
            v = I.view(ledger)
            assert v.text() and "cubelab-code" in v.html()
        assert "3 compiles, 1 hit ──" in I.view(stats).text()  # "1 hit", not "1 hits"


def test_the_views_ledgers_make_no_launch_build_events_they_do_not_show():
    from cubelab.runtime import events as ev

    bus = ev.EventBus()
    with I.CacheStats(bus), I.BufferStates(bus):
        # hits arrive tallied (CacheHits), so a cache-hit launch builds no event for them
        assert bus.wants(ev.CacheHits) and bus.wants(ev.BufferFailed)
        assert not bus.wants(ev.CacheHit)
        assert not bus.wants(ev.LaunchIssued) and not bus.wants(ev.LaunchDispatched)
        assert not bus.wants(ev.BufferClaimed) and not bus.wants(ev.BufferReleased)
    with I.BufferStates(bus, claims=True):
        assert bus.wants(ev.BufferClaimed) and bus.wants(ev.BufferReleased)


def test_with_claims_repeated_successful_writes_fold_into_one_history_line(client):
    with I.BufferStates(client.events, claims=True) as states:
        out = _buf(client)
        for v in (1.0, 2.0, 3.0):
            fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                        BufferArg.from_raw_parts(out, 4), v)
        client.read_one(out)
        b = states.snapshot().get(out.id)
    assert b.state == "clean" and b.kernel == "Fill"
    assert [(h.state, h.count) for h in b.history] == [("clean", 1), ("clean", 3)]
    assert b.history[-1].detail == "written by 3 successful launches"


def test_a_ledger_records_on_the_device_thread_without_python_code():
    from cubelab.runtime import events as ev

    bus = ev.EventBus()
    stats = I.CacheStats(bus)
    (fn, _kinds), = bus._subs
    assert fn == stats._queue.append  # a C method: no lock, no frame on the device thread
    stats.close()


def test_a_kind_is_wanted_as_soon_as_someone_subscribes_and_not_after():
    from cubelab.runtime import events as ev

    bus = ev.EventBus()
    assert not bus.wants(ev.CacheHit)  # cached "no"
    unsub = bus.subscribe(lambda e: None, ev.CacheHit)
    assert bus.wants(ev.CacheHit) and not bus.wants(ev.LaunchIssued)
    unsub()
    assert not bus.wants(ev.CacheHit)
    bus.subscribe(lambda e: None)  # no kinds: everything
    assert bus.wants(ev.LaunchIssued)


def test_cache_hits_are_tallied_and_told_before_a_sync_returns_and_before_the_next_compile(client):
    from cubelab.runtime import events as ev

    out = _buf(client)
    arg = BufferArg.from_raw_parts(out, 4)
    client.clear_cache()  # so the first launch below compiles
    with client.events.record(ev.CacheHits, ev.CompileStarted, ev.LaunchIssued) as rec:
        for v in (1.0, 2.0, 3.0):
            fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), arg, v)
        # another cube dim is another KernelId: a compile
        fill.launch(client, CubeCount.Static(2), CubeDim.new_1d(2), arg, 4.0)
        fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), arg, 5.0)
        client.sync()
        kinds = [type(e).__name__ for e in rec.events if not isinstance(e, ev.LaunchIssued)]
        seqs = [e.launch_seq for e in rec.of(ev.LaunchIssued)]
    # a compile, 2 hits told before the second compile, then the last hit told at sync
    assert kinds == ["CompileStarted", "CacheHits", "CompileStarted", "CacheHits"]
    first, last = rec.of(ev.CacheHits)
    assert (first.count, first.first_seq, first.last_seq) == (2, seqs[1], seqs[2])
    assert (last.count, last.first_seq, last.last_seq) == (1, seqs[4], seqs[4])
    assert first.kernel_id == last.kernel_id and first.kernel == "Fill"
    assert client.read_one(out) == f32.as_bytes(np.full(4, 5.0, np.float32))


def test_cache_hits_are_told_when_the_device_goes_idle_without_any_sync(client):
    # a live view must not wait for the user's next sync: the idle device thread tells the tally
    import time

    from cubelab.runtime import events as ev

    out = _buf(client)
    arg = BufferArg.from_raw_parts(out, 4)
    fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), arg, 1.0)
    client.sync()
    with client.events.record(ev.CacheHits) as rec:
        fill.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), arg, 2.0)
        deadline = time.monotonic() + 5.0
        while not rec.events and time.monotonic() < deadline:
            time.sleep(0.01)  # no client call here: only the device thread can publish
        assert [e.count for e in rec.events] == [1]
    client.sync()
