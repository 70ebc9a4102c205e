"""Seed 001: graph capture (DESIGN §4 rule 9), with CubeCL's wgpu graph tests' rules. Warm up,
record a window, replay it as one submission. Reads, syncs and profiling inside the window are
rejected on the spot and listed by `stop_capture`, whose graph stays sound; a host write, a
launch that fails to compile or one skipped for a tainted input dooms the capture; allocations
inside the window are allowed and recorded (`runtime/capture.py` says why each).
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CaptureError, CubeCount, CubeDim
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from tests.fixtures.seed001_kernels import bad_widths, inc, scale


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def read(client, h):
    return f32.from_bytes(client.read_one(h))


def arg(h, n=8):
    return BufferArg.from_raw_parts(h, n)


ONE = (CubeCount.Static(1), CubeDim.new_1d(8))


def work(client, x, t, y):
    scale.launch(client, *ONE, arg(x), arg(t), 2.0)   # t = 2x
    inc.launch(client, *ONE, arg(t))                  # t += 1
    scale.launch(client, *ONE, arg(t), arg(y), 3.0)   # y = 3t
    inc.launch(client, *ONE, arg(y))                  # y += 1


def warm_window(client):
    """y = 2x run once (compiled, allocated), then a capture window opened on this thread."""
    x, y = floats(client, np.arange(8)), floats(client, np.zeros(8))
    scale.launch(client, *ONE, arg(x), arg(y), 2.0)
    client.sync()
    client.start_capture()
    return x, y


def test_a_replay_gives_the_same_results_as_the_launches_it_recorded(client):
    x = floats(client, np.arange(8))
    t, y = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    work(client, x, t, y)  # warm-up: compile and allocate outside the window
    expected = read(client, y)
    client.write(y, f32.as_bytes(np.zeros(8, np.float32)))
    client.write(t, f32.as_bytes(np.zeros(8, np.float32)))

    client.start_capture()
    with client.events.record(ev.LaunchDispatched) as rec:
        work(client, x, t, y)
        graph = client.stop_capture()
    assert not rec.of(ev.LaunchDispatched)  # recorded, not run
    np.testing.assert_array_equal(read(client, y), np.zeros(8))
    assert graph.kernels == ["Scale", "Inc", "Scale", "Inc"]

    with client.events.record(ev.LaunchDispatched, ev.Flushed) as rec:
        graph.replay()
        np.testing.assert_array_equal(read(client, y), expected)
    assert len(rec.of(ev.LaunchDispatched)) == 4
    assert [(e.why, e.dispatches) for e in rec.of(ev.Flushed)] == [("replay", 4)]

    # fresh inputs are written between replays
    client.write(x, f32.as_bytes(np.ones(8, np.float32)))
    graph.replay()
    np.testing.assert_array_equal(read(client, y), np.full(8, 3.0 * 3.0 + 1.0))


@pytest.mark.parametrize("what", ["read", "sync", "sync_buffers", "profile"])
def test_a_read_sync_or_profile_is_rejected_on_the_spot_and_the_capture_goes_on(client, what):
    # CubeCL's wgpu_graph_read_rejected_while_recording: the refusal raises at once, nothing of
    # it is recorded, and stop_capture hands back the sound recording, listing the rejection
    x, y = warm_window(client)
    scale.launch(client, *ONE, arg(x), arg(y), 3.0)
    with pytest.raises(CaptureError, match="refused inside a graph capture window.*the capture "
                                           "goes on"):
        if what == "read":
            client.read_one(y)
        elif what == "sync":
            client.sync()
        elif what == "sync_buffers":
            client.sync_buffers([y])
        else:
            with client.profile():  # the profiled launch is handed back, not recorded
                scale.launch(client, *ONE, arg(x), arg(y), 5.0)
    with client.events.record(ev.CaptureStopped) as rec:
        graph = client.stop_capture()
    assert graph.kernels == ["Scale"] and graph.refused[0].startswith(what)
    assert what in repr(graph)
    (stopped,) = rec.of(ev.CaptureStopped)
    assert stopped.dispatches == 1 and stopped.rejected[0].startswith(what)
    np.testing.assert_array_equal(read(client, y), 2.0 * np.arange(8))  # nothing ran yet
    graph.replay()
    np.testing.assert_array_equal(read(client, y), 3.0 * np.arange(8))


@pytest.mark.parametrize("what, listed", [("write", "host write"),
                                           ("create_from_slice", "create_from_slice")])
def test_a_host_write_inside_the_window_dooms_the_capture(client, what, listed):
    # CubeCL's wgpu_graph_write_rejected_while_recording: the launches after it were recorded
    # to read data a graph cannot carry, so stop_capture fails instead of a graph without it
    x, y = warm_window(client)
    scale.launch(client, *ONE, arg(x), arg(y), 3.0)
    with pytest.raises(CaptureError, match="the capture is doomed"):
        if what == "write":
            client.write(x, f32.as_bytes(np.ones(8, np.float32)))
        else:
            floats(client, np.ones(8))
    with pytest.raises(CaptureError, match=f"would lack what the window did:\n  - {listed}"):
        client.stop_capture()
    np.testing.assert_array_equal(read(client, y), 2.0 * np.arange(8))  # never a silent skip
    scale.launch(client, *ONE, arg(x), arg(y), 3.0)  # the stream still works
    np.testing.assert_array_equal(read(client, y), 3.0 * np.arange(8))


@pytest.mark.parametrize("size", [32, 3_145_733])
def test_an_allocation_inside_the_window_is_allowed_and_recorded(client, size):
    # CubeCL's wgpu_graph_mid_capture_allocation_is_allowed (3 145 733 bytes: no page of the
    # warm-up holds it, so the pool grows inside the window) and the pool-served case
    client.memory_cleanup()  # no free page left by an earlier test may serve the large request
    x = floats(client, np.arange(8))
    warm = client.empty(32)
    scale.launch(client, *ONE, arg(x), arg(warm), 2.0)  # warm-up: compile, fill the pool
    client.sync()
    del warm  # its slice goes back to the pool: a 32-byte request is served from it
    client.start_capture()
    t = client.empty(size)
    y = client.zeros(32)
    scale.launch(client, *ONE, arg(x), arg(t), 2.0)   # t = 2x
    scale.launch(client, *ONE, arg(t), arg(y), 3.0)   # y = 6x
    graph = client.stop_capture()
    assert [a.size for a in graph.allocations] == [size, 32]
    assert graph.allocations[0].grew == (size > 32) and not graph.allocations[1].grew
    del t  # the graph keeps the intermediate alive: replay writes into it, never elsewhere
    graph.replay()
    np.testing.assert_array_equal(read(client, y), 6.0 * np.arange(8))


def test_a_launch_skipped_inside_the_window_dooms_the_capture(client):
    a, b, bad = (floats(client, np.zeros(8)) for _ in range(3))
    bad_widths.launch(client, *ONE, arg(a, 8), arg(b, 8), arg(bad))
    y = floats(client, np.zeros(8))
    client.start_capture()
    scale.launch(client, *ONE, arg(bad), arg(y), 2.0)
    with pytest.raises(CaptureError, match="skipped: an input carries the failure of `BadWidths`"):
        client.stop_capture()


def test_a_second_start_capture_is_refused_and_leaves_the_open_one_as_it_was(client):
    x, y = warm_window(client)
    scale.launch(client, *ONE, arg(x), arg(y), 5.0)
    with pytest.raises(CaptureError, match="already open"):
        client.start_capture()
    graph = client.stop_capture()
    assert len(graph) == 1
    graph.replay()
    np.testing.assert_array_equal(read(client, y), 5.0 * np.arange(8))
