"""Seed 001: graph capture (DESIGN §4 rule 9). Warm up, record a window, replay it as one
submission; reads, syncs, profiling, host writes and allocations inside the window are refused
and reported by `stop_capture`.
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


@pytest.mark.parametrize("what", ["read", "sync", "sync_buffers", "profile", "host write"])
def test_refusals_inside_the_window_are_raised_and_reported_by_stop_capture(client, what):
    x, y = floats(client, np.arange(8)), floats(client, np.zeros(8))
    scale.launch(client, *ONE, arg(x), arg(y), 2.0)
    client.sync()
    client.start_capture()
    try:
        with pytest.raises(CaptureError, match="refused inside a graph capture window"):
            if what == "read":
                client.read_one(y)
            elif what == "sync":
                client.sync()
            elif what == "sync_buffers":
                client.sync_buffers([y])
            elif what == "profile":
                with client.profile():
                    scale.launch(client, *ONE, arg(x), arg(y), 2.0)
            else:
                client.write(y, f32.as_bytes(np.ones(8, np.float32)))
    finally:
        with pytest.raises(CaptureError, match=f"refused inside the window:\n  - {what}"):
            client.stop_capture()
    np.testing.assert_array_equal(read(client, y), 2.0 * np.arange(8))  # never a silent skip


def test_an_allocation_inside_the_window_fails_the_capture(client):
    x = floats(client, np.arange(8))
    client.start_capture()
    y = floats(client, np.zeros(8))  # allocating here: warm up first, as the seed says
    scale.launch(client, *ONE, arg(x), arg(y), 2.0)
    with pytest.raises(CaptureError, match="allocation of .*allocate before start_capture"):
        client.stop_capture()


def test_a_launch_skipped_inside_the_window_dooms_the_capture(client):
    a, b, bad = (floats(client, np.zeros(8)) for _ in range(3))
    bad_widths.launch(client, *ONE, arg(a, 8), arg(b, 8), arg(bad))
    y = floats(client, np.zeros(8))
    client.start_capture()
    scale.launch(client, *ONE, arg(bad), arg(y), 2.0)
    with pytest.raises(CaptureError, match="skipped: an input carries the failure of `BadWidths`"):
        client.stop_capture()


def test_a_second_start_capture_is_refused_and_leaves_the_open_one_as_it_was(client):
    x, y = floats(client, np.arange(8)), floats(client, np.zeros(8))
    scale.launch(client, *ONE, arg(x), arg(y), 2.0)
    client.sync()
    client.start_capture()
    scale.launch(client, *ONE, arg(x), arg(y), 5.0)
    with pytest.raises(CaptureError, match="already open"):
        client.start_capture()
    graph = client.stop_capture()
    assert len(graph) == 1
    graph.replay()
    np.testing.assert_array_equal(read(client, y), 5.0 * np.arange(8))
