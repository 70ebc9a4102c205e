"""Seed 001, the first hop: the four calling-thread gates and LaunchMode (dry run / real run).

Each test is one rule of DESIGN §4 (rules 1, 2 and 8), on every runtime the `client` fixture
gives.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, CubeCount, CubeDim, Device, DeviceError, Handle, LaunchError
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.dry_run import LaunchMode, dry_run_depth, launch_mode, real_run_depth
from tests.fixtures.seed001_kernels import inc, scale


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def read(client, h):
    return f32.from_bytes(client.read_one(h))


def launch_scale(client, x, out, n, a=2.0, count=None):
    scale.launch(client, count or CubeCount.Static(1), CubeDim.new_1d(n),
                 BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, n), a)


# -- gate 1 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [(0, 1, 1), (1, 0, 1), (4, 4, 0)])
def test_a_zero_dimension_count_returns_before_compiling_claiming_or_dispatching(client, dims):
    x, out = floats(client, np.arange(8)), floats(client, np.full(8, 7.0))
    client.clear_cache()
    with client.events.record() as rec:
        launch_scale(client, x, out, 8, count=CubeCount.Static(*dims))
        client.sync()
    kinds = {type(e) for e in rec.events}
    assert ev.LaunchGated in kinds
    assert not kinds & {ev.LaunchIssued, ev.CompileStarted, ev.BufferClaimed,
                        ev.LaunchDispatched, ev.CacheHit}
    np.testing.assert_array_equal(read(client, out), np.full(8, 7.0))


# -- gate 2 -------------------------------------------------------------------------------------
def _foreign_handle(client) -> Handle:
    """A handle really owned by the other runtime when it exists here, else by a device id this
    client does not own (the calling thread can only tell them apart by owner)."""
    other = Device.cpu if client.name().startswith("wgpu") else Device.wgpu
    try:
        return other().client().create_from_slice(f32.as_bytes(np.zeros(8, np.float32)))
    except DeviceError:
        return Handle.new(32, device_id=client.device.id + 1000)


def test_a_foreign_handle_is_refused_on_the_calling_thread_and_nothing_is_submitted(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    foreign = _foreign_handle(client)
    with client.events.record() as rec:
        with pytest.raises(LaunchError, match="belongs to device .* Memory coordinates from "
                                              "another device mean nothing here"):
            launch_scale(client, x, foreign, 8)
        with pytest.raises(LaunchError, match="dynamic cube count"):
            launch_scale(client, x, out, 8, count=CubeCount.Dynamic(foreign))
        client.sync()
    assert not rec.of(ev.LaunchIssued) and not rec.of(ev.CompileStarted)


# -- gate 3: LaunchMode ---------------------------------------------------------------------------
def test_a_dry_run_compiles_but_claims_nothing_and_dispatches_nothing(client):
    x, out = floats(client, np.arange(8)), floats(client, np.full(8, 7.0))
    client.clear_cache()
    with client.events.record() as rec:
        with cubelab.dry_run():
            assert launch_mode() is LaunchMode.Skip
            launch_scale(client, x, out, 8)
            client.sync()
    assert [e.mode for e in rec.of(ev.LaunchIssued)] == ["Skip"]
    assert len(rec.of(ev.CompileFinished)) == 1
    assert [e.why for e in rec.of(ev.LaunchSkipped)] == ["dry-run"]
    assert not rec.of(ev.BufferClaimed) and not rec.of(ev.LaunchDispatched)
    assert not rec.of(ev.Flushed)
    np.testing.assert_array_equal(read(client, out), np.full(8, 7.0))  # left as it was
    # ... and the pipeline it cached is what the real launch reuses
    with client.events.record(ev.CompileStarted, ev.CacheHit) as rec:
        launch_scale(client, x, out, 8)
        np.testing.assert_array_equal(read(client, out), 2.0 * np.arange(8))
    assert not rec.of(ev.CompileStarted) and len(rec.of(ev.CacheHit)) == 1


def test_real_run_inside_dry_run_executes_autotunes_measurements(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    with cubelab.dry_run():
        with cubelab.real_run():
            assert launch_mode() is LaunchMode.Execute
            launch_scale(client, x, out, 8, a=3.0)
        launch_scale(client, x, out, 8, a=100.0)  # the guard ended: dropped again
        client.sync()
    np.testing.assert_array_equal(read(client, out), 3.0 * np.arange(8))


def test_guards_nest_by_depth_not_by_a_boolean(client):
    assert (dry_run_depth(), real_run_depth()) == (0, 0)
    with cubelab.dry_run():
        with cubelab.dry_run():
            assert dry_run_depth() == 2
        assert launch_mode() is LaunchMode.Skip  # the inner guard did not end the outer one
        with cubelab.real_run(), cubelab.real_run():
            assert real_run_depth() == 2
        assert launch_mode() is LaunchMode.Skip
    assert launch_mode() is LaunchMode.Execute


def test_two_threads_guards_compose(client):
    """A's dry run ends while B's is alive: B's launches stay dropped, and once B's ends too the
    process is out of the dry run (swap-and-restore would strand it in one)."""
    x = floats(client, np.arange(8))
    out_a, out_b = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    a_in, b_in, a_out, b_done = (threading.Event() for _ in range(4))
    seen: dict[str, LaunchMode] = {}

    def thread_a() -> None:
        with cubelab.dry_run():
            a_in.set()
            b_in.wait()
            with cubelab.real_run():  # a measurement on A executes...
                launch_scale(client, x, out_a, 8, a=5.0)
                seen["a-real"] = launch_mode()
        a_out.set()

    def thread_b() -> None:
        a_in.wait()
        with cubelab.dry_run():
            b_in.set()
            seen["b-during-a-real"] = launch_mode()  # ...but not B's launches
            a_out.wait()
            seen["b-after-a"] = launch_mode()
            launch_scale(client, x, out_b, 8, a=9.0)  # dropped: B's own guard is alive
        b_done.set()

    ta, tb = threading.Thread(target=thread_a), threading.Thread(target=thread_b)
    ta.start(); tb.start(); ta.join(); tb.join()
    assert seen == {"a-real": LaunchMode.Execute, "b-during-a-real": LaunchMode.Skip,
                    "b-after-a": LaunchMode.Skip}
    assert dry_run_depth() == 0 and launch_mode() is LaunchMode.Execute
    np.testing.assert_array_equal(read(client, out_a), 5.0 * np.arange(8))
    np.testing.assert_array_equal(read(client, out_b), np.zeros(8))


def test_real_run_on_another_thread_does_not_execute_this_threads_launches(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    entered, release = threading.Event(), threading.Event()

    def holder() -> None:
        with cubelab.real_run():
            entered.set()
            release.wait()

    t = threading.Thread(target=holder)
    with cubelab.dry_run():
        t.start()
        entered.wait()
        launch_scale(client, x, out, 8)  # this thread holds no RealRun guard: dropped
        release.set()
        t.join()
    np.testing.assert_array_equal(read(client, out), np.zeros(8))


# -- gate 4: profiling -----------------------------------------------------------------------------
def test_profiling_makes_the_launch_blocking_and_times_it(client):
    y = floats(client, np.zeros(8))
    with client.profile() as prof:
        for _ in range(3):
            inc.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),
                       BufferArg.from_raw_parts(y, 8))
            # blocking: the sample of this launch exists before launch returned
            assert len(prof.samples) == _ + 1
    assert all(s.duration_s > 0 and s.kernel == "Inc" for s in prof.samples)
    np.testing.assert_array_equal(read(client, y), np.full(8, 3.0))
