"""Memory that is given back (issue #16): reference-counted handles, the pooled allocator, and
what they must never do — reuse a slice that queued work still reads, or let a released handle
reach another buffer's bytes. Every test runs on both runtimes."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, ReleasedHandleError, cube
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, f32, u32
from cubelab.runtime import events as ev

MiB = 1 << 20


@cube(launch=True)
def fill(out: SliceMut[f32], v: f32):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = v


@cube(launch=True)
def copy(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@cube(launch=True)
def grid_fill(out: SliceMut[u32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = u32(7)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _arr(client, h) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.frombuffer(client.read_one(h), dtype=np.float32)


# RSS may grow by at most this much over 10 000 cycles of 1 MiB (10 000 MiB if nothing were
# given back; 37 -> 1237 MiB over three rounds of 400 was the measurement that opened #16).
RSS_BOUND = 64 * MiB


def test_ten_thousand_allocate_launch_drop_cycles_keep_memory_bounded(client):  # type: ignore[no-untyped-def]
    n = MiB // 4
    launch = fill.launch
    count, dim = CubeCount.Static(1, 1, 1), CubeDim.new_1d(64)

    def cycle(i: int) -> None:
        h = client.empty(MiB)
        launch(client, count, dim, BufferArg.from_raw_parts(h, n), float(i))

    for i in range(200):  # warm up: compile, fill the pool, settle the allocator
        cycle(i)
    # Garbage from earlier tests (a handle held in a reference cycle, such as a traceback that
    # pytest.raises kept) must go now, not be collected mid-loop and change the count.
    gc.collect()
    client.sync()
    before_usage = client.memory_usage()
    before_rss = _rss()
    t0 = time.perf_counter()
    for i in range(10_000):
        cycle(i)
    client.sync()
    elapsed = time.perf_counter() - t0
    after = client.memory_usage()
    grown = _rss() - before_rss
    # Every cycle's buffer was released: what stays in use is what other tests hold.
    assert after.handles == before_usage.handles
    assert after.bytes_in_use == before_usage.bytes_in_use
    # The pool did not grow: the same pages served all 10 000 buffers (at most the queue of
    # launches in flight — max_tasks of them — is ever waiting to be given back).
    assert after.bytes_reserved <= before_usage.bytes_reserved + 80 * MiB, str(after)
    assert after.reuses - before_usage.reuses >= 10_000 - 100
    assert grown < RSS_BOUND, f"RSS grew by {grown / MiB:.0f} MiB in {elapsed:.1f} s"
    # and the last cycle's launch really ran on pooled memory
    h = client.empty(MiB)
    launch(client, count, dim, BufferArg.from_raw_parts(h, n), 3.5)
    assert _arr(client, h)[:64].tolist() == [3.5] * 64


def _exclusive_size(client) -> int:  # type: ignore[no-untyped-def]
    # above the sliced pool's max_slice: an exclusive page, reused only by a request it fits
    return client.memory_usage().max_slice + 64 * 1024


def _drop_while_queued_then_allocate(client, size: int, old: np.ndarray, new: np.ndarray):  # type: ignore[no-untyped-def]
    """Queue `copy(x -> out)`, drop `x` so that its release reaches the device thread while the
    copy is still unsubmitted, then allocate a buffer of x's size holding `new` — with no idle
    moment (hence no flush) in between. Returns (out, y, x's id)."""
    n = size // 4
    runner = client.device.runner
    w, v = client.zeros(256 * 4), client.zeros(256 * 4)  # compile first: a first dispatch
    copy.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(256),  # is submitted at once
                BufferArg.from_raw_parts(w, 256), BufferArg.from_raw_parts(v, 256))
    client.sync()
    x = client.create_from_slice(old)
    out = client.empty(size)
    hold, entered, go = threading.Event(), threading.Event(), threading.Event()
    got: list = []

    def second_gate() -> None:
        entered.set()
        go.wait(30)

    runner.submit(hold.wait, 30)  # hold the device thread while the launch queues up
    copy.launch(client, CubeCount.Static((n + 255) // 256, 1, 1), CubeDim.new_1d(256),
                BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, n))
    runner.submit(second_gate)
    xid = x.id
    del x  # the queued launch holds the last reference: its release is posted once it ran
    hold.set()
    assert entered.wait(30)  # the copy is encoded (unsubmitted), x's release is queued
    worker = threading.Thread(target=lambda: got.append(client.create_from_slice(new)))
    worker.start()
    deadline = time.monotonic() + 10
    while runner._q.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.005)  # queued: release(x), then the new allocation
    go.set()
    worker.join(30)
    return out, got[0], xid


def test_a_handle_dropped_while_a_queued_launch_reads_it_is_not_reused_until_that_launch_ran(
        client):  # type: ignore[no-untyped-def]
    """The adversarial case: `copy(x -> out)` is queued (on wgpu: encoded, not submitted), `x`
    is dropped, and a new buffer of x's size is created from other data before the device
    thread goes idle. Reusing x's memory at once would let the new bytes overwrite x before the
    queued copy reads it (`queue.write_buffer` overtakes unsubmitted work): `out` would hold
    the new data (the next test shows it does, with the deferral switched off)."""
    size = _exclusive_size(client)
    n = size // 4
    client.memory_cleanup()  # no free exclusive page left: the only candidate is x's
    old = np.arange(n, dtype=np.float32)
    new = np.full(n, -1.0, dtype=np.float32)
    with client.events.record(ev.MemoryAllocated, ev.MemoryReleased,
                              ev.MemoryReleaseDeferred) as rec:
        out, y, xid = _drop_while_queued_then_allocate(client, size, old, new)
        assert _arr(client, out).tolist() == old.tolist()
        assert _arr(client, y).tolist() == new.tolist()
        client.sync()
    released = [e for e in rec.of(ev.MemoryReleased) if e.handle_id == xid]
    assert len(released) == 1
    if client.device.server.defers_release:
        # wgpu: x's release waited for the stream holding the copy to be submitted ...
        assert [e.handle_id for e in rec.of(ev.MemoryReleaseDeferred)] == [xid]
        assert released[0].deferred
        # ... so y could not take x's page: it got a new one
        (alloc_y,) = [e for e in rec.of(ev.MemoryAllocated) if e.handle_id == y.id]
        assert not alloc_y.reused and alloc_y.page != released[0].page
    else:
        # CPU: the copy ran when the device thread reached it; y may take x's page at once
        assert not released[0].deferred


def test_without_the_deferral_wgpu_would_hand_queued_work_the_next_owners_bytes(
        wgpu_client):  # type: ignore[no-untyped-def]
    """The deferral is what the adversarial test above exercises: switched off, the same steps
    give the wrong answer (so that test can fail)."""
    client = wgpu_client
    server = client.device.server
    size = _exclusive_size(client)
    n = size // 4
    client.memory_cleanup()
    server.defers_release = False
    try:
        out, y, _ = _drop_while_queued_then_allocate(
            client, size, np.arange(n, dtype=np.float32), np.full(n, -1.0, dtype=np.float32))
        assert _arr(client, out)[:4].tolist() == [-1.0] * 4  # early reuse: a wrong result
    finally:
        server.defers_release = True
        client.sync()


def test_the_second_allocation_of_a_size_after_a_drop_comes_from_the_pool(client):  # type: ignore[no-untyped-def]
    size = _exclusive_size(client)
    with client.events.record(ev.MemoryAllocated, ev.MemoryReleased) as rec:
        a = client.empty(size)
        aid = a.id
        del a
        b = client.empty(size)
    first, second = rec.of(ev.MemoryAllocated)
    (released,) = rec.of(ev.MemoryReleased)
    assert released.handle_id == aid and released.why == "dropped"
    assert second.handle_id == b.id and second.reused
    assert (second.page, second.offset) == (first.page, first.offset)
    usage = client.memory_usage()
    assert usage.reuses >= 1 and usage.bytes_in_use >= size


def test_sizes_are_rounded_to_the_devices_alignment_and_small_buffers_share_pages(client):  # type: ignore[no-untyped-def]
    align = client.properties().memory_alignment
    with client.events.record(ev.MemoryAllocated) as rec:
        hs = [client.empty(s) for s in (4, 100, align + 1)]
    es = rec.of(ev.MemoryAllocated)
    assert [e.reserved for e in es] == [align, align * ((100 + align - 1) // align), 2 * align]
    assert all(e.pool == "sliced" and e.offset % align == 0 for e in es)
    assert len({e.page for e in es}) == 1  # sliced from one page
    big = client.empty(_exclusive_size(client))
    usage = client.memory_usage()
    page = next(p for p in usage.pages if any(s.handle_id == big.id for s in p.slices))
    assert page.pool == "exclusive" and len(page.slices) == 1
    del hs


def test_slices_of_one_page_bound_read_only_and_writable_in_one_dispatch(client):  # type: ignore[no-untyped-def]
    """WebGPU refuses one buffer bound read-only and writable in one dispatch; two small
    handles are two slices of one page, so every binding is read_write (docs/runtime.md)."""
    with client.events.record(ev.MemoryAllocated) as rec:
        x = client.create_from_slice(np.arange(64, dtype=np.float32))
        out = client.empty(64 * 4)
    ex, eo = rec.of(ev.MemoryAllocated)
    assert ex.page == eo.page
    copy.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(64),
                BufferArg.from_raw_parts(x, 64), BufferArg.from_raw_parts(out, 64))
    assert _arr(client, out).tolist() == list(range(64))


def test_a_dynamic_count_on_the_page_of_a_written_buffer(client):  # type: ignore[no-untyped-def]
    """INDIRECT is a read-only usage: a count sliced from the page the dispatch writes is
    copied to a buffer of its own first on wgpu (the CPU runtime reads it on the host)."""
    with client.events.record(ev.MemoryAllocated) as rec:
        cnt = client.create_from_slice(np.array([2, 1, 1], dtype=np.uint32))
        out = client.zeros(256 * 4)
    ec, eo = rec.of(ev.MemoryAllocated)
    assert ec.page == eo.page
    grid_fill.launch(client, CubeCount.Dynamic(cnt), CubeDim.new_1d(64),
                     BufferArg.from_raw_parts(out, 256))
    got = np.frombuffer(client.read_one(out), dtype=np.uint32)
    assert got[:128].tolist() == [7] * 128 and got[128:].tolist() == [0] * 128


def test_empty_reuses_without_zeroing_zeros_and_create_from_slice_write(client):  # type: ignore[no-untyped-def]
    size = _exclusive_size(client)
    n = size // 4
    client.memory_cleanup()
    a = client.create_from_slice(np.full(n, 5.0, dtype=np.float32))
    del a
    b = client.empty(size)  # CubeCL's contract: unspecified contents — here the last owner's
    assert _arr(client, b)[:4].tolist() == [5.0] * 4
    del b
    z = client.zeros(size)
    assert not _arr(client, z).any()
    del z
    c = client.create_from_slice(np.full(n // 2, 2.0, dtype=np.float32))
    assert _arr(client, c).tolist() == [2.0] * (n // 2)


def test_using_a_released_handle_raises_and_a_canary_is_untouched(client):  # type: ignore[no-untyped-def]
    canary_data = np.arange(256, dtype=np.float32) + 1000
    canary = client.create_from_slice(canary_data)
    h = client.create_from_slice(np.zeros(256, dtype=np.float32))
    arg = BufferArg.from_raw_parts(h, 256)
    client.free(h)
    assert h.released
    for use in (lambda: client.read_one(h), lambda: client.write(h, b"\0" * 16),
                lambda: client.check([h]), lambda: BufferArg.from_raw_parts(h, 4),
                lambda: fill.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(64),
                                    arg, 9.0),
                lambda: client.free(h)):
        with pytest.raises(ReleasedHandleError, match=rf"Handle\(#{h.id}, 1024 B.*released"):
            use()
    # the slice h had is someone else's now; writing the newcomer leaves the canary alone
    newcomer = client.create_from_slice(np.full(256, 7.0, dtype=np.float32))
    fill.launch(client, CubeCount.Static(4, 1, 1), CubeDim.new_1d(64),
                BufferArg.from_raw_parts(newcomer, 256), 8.0)
    assert _arr(client, newcomer).tolist() == [8.0] * 256
    assert _arr(client, canary).tolist() == canary_data.tolist()


def test_a_with_block_frees_its_handle(client):  # type: ignore[no-untyped-def]
    with client.events.record(ev.MemoryReleased) as rec:
        with client.zeros(64) as h:
            assert client.read_one(h) == b"\0" * 64
        client.sync()
    assert h.released
    # (other tests' dropped handles may be released inside the window too: look at this one)
    assert [(e.handle_id, e.why) for e in rec.of(ev.MemoryReleased)
            if e.handle_id == h.id] == [(h.id, "freed")]
    with pytest.raises(ReleasedHandleError):
        client.read_one(h)


def test_a_handle_dropped_on_another_thread_is_released(client):  # type: ignore[no-untyped-def]
    box = [client.empty(64)]
    hid = box[0].id
    with client.events.record(ev.MemoryReleased) as rec:
        t = threading.Thread(target=box.clear)
        t.start()
        t.join()
        client.sync()
    assert [e.handle_id for e in rec.of(ev.MemoryReleased) if e.handle_id == hid] == [hid]


def test_a_handle_in_a_reference_cycle_is_released_when_the_collector_runs(client):  # type: ignore[no-untyped-def]
    """Python's difference from CubeCL: a handle caught in a cycle dies at collection time."""
    class Holder:
        pass

    holder = Holder()
    holder.me = holder  # type: ignore[attr-defined]
    holder.h = client.empty(64)  # type: ignore[attr-defined]
    hid = holder.h.id  # type: ignore[attr-defined]
    with client.events.record(ev.MemoryReleased) as rec:
        gc.disable()
        try:
            del holder
            client.sync()
            assert hid not in [e.handle_id for e in rec.of(ev.MemoryReleased)]
            gc.collect()
        finally:
            gc.enable()
        client.sync()
    assert hid in [e.handle_id for e in rec.of(ev.MemoryReleased)]


def test_a_failed_buffers_failure_record_goes_with_it(client):  # type: ignore[no-untyped-def]
    from tests.fixtures.failing_kernels import broken  # expansion raises: the output carries the error

    ledger = client.device.server.ledger
    before = len(ledger)
    h = client.empty(64)
    broken.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4),
                  BufferArg.from_raw_parts(h, 16))
    client.sync()
    assert client.buffer_state(h) == "failed"
    assert len(ledger) == before + 1
    hid = h.id
    with client.events.record(ev.MemoryReleased) as rec:
        del h  # the stored failure must not keep the handle alive (its traceback's frames)
        client.sync()
    assert [e.handle_id for e in rec.of(ev.MemoryReleased) if e.handle_id == hid] == [hid]
    assert len(ledger) == before


def test_a_graph_keeps_its_handles_and_refuses_replay_after_free(client):  # type: ignore[no-untyped-def]
    out = client.zeros(64 * 4)
    client.start_capture()
    fill.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(64),
                BufferArg.from_raw_parts(out, 64), 4.0)
    graph = client.stop_capture()
    oid = out.id
    with client.events.record(ev.MemoryReleased) as rec:
        keep = out
        del out
        client.sync()
        assert rec.of(ev.MemoryReleased) == []  # the graph still holds it
        graph.replay()
        assert _arr(client, keep).tolist() == [4.0] * 64
        client.free(keep)
        with pytest.raises(ReleasedHandleError, match="replay"):
            graph.replay()
        client.sync()
    assert [e.handle_id for e in rec.of(ev.MemoryReleased)] == [oid]


def test_memory_cleanup_gives_unused_pages_back(client):  # type: ignore[no-untyped-def]
    size = _exclusive_size(client)
    h = client.empty(size)
    before = client.memory_usage()
    del h
    with client.events.record(ev.MemoryCleanedUp) as rec:
        after = client.memory_cleanup()
    (cleaned,) = rec.of(ev.MemoryCleanedUp)
    assert cleaned.bytes >= size
    assert after.bytes_reserved <= before.bytes_reserved - size
    assert after.bytes_in_use == before.bytes_in_use - size
    assert after.pages_freed >= before.pages_freed + 1
