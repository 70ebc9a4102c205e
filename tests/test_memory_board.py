"""The memory view: MemoryMap (a ledger of memory events) and the MemoryBoard widget show the
pools as `client.memory_usage()` reports them — pages, slices, which handle lives where."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.inspect import MemoryMap, memory_map
from cubelab.widgets import MemoryBoard
from tests.test_memory import _exclusive_size, fill


def _live_slices(view):  # type: ignore[no-untyped-def]
    return {(p.id, s.offset, s.size, s.handle_id) for p in view.pages for s in p.slices
            if s.handle_id}


def test_the_memory_map_follows_the_pool_through_events(client):  # type: ignore[no-untyped-def]
    mm = MemoryMap(client)
    a = client.empty(1000)
    b = client.create_from_slice(np.arange(64, dtype=np.float32))
    big = client.empty(_exclusive_size(client))
    del a
    client.sync()
    seen = mm.snapshot()
    assert _live_slices(seen) == _live_slices(memory_map(client))
    assert b.id in seen.handles and big.id in seen.handles
    assert seen.counters["allocated"] == 3 and seen.counters["released"] == 1
    del big
    client.memory_cleanup()
    after = mm.snapshot()
    assert _live_slices(after) == _live_slices(memory_map(client))
    assert after.counters["cleanups"] == 1 and after.counters["pages_freed"] >= 1
    # every page's slices tile it exactly: live and free, no gap, no overlap
    for p in after.pages:
        assert sum(s.size for s in p.slices) == p.size
        assert all(s.offset + s.size == t.offset for s, t in zip(p.slices, p.slices[1:]))
    mm.close()


def test_the_memory_board_draws_pages_and_the_handles_in_them(client):  # type: ignore[no-untyped-def]
    board = MemoryBoard(client, live=False)
    h = client.zeros(4096)
    fill.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(64),
                BufferArg.from_raw_parts(h, 64), 1.0)
    client.sync()
    board.refresh()
    model = board.model()
    assert h.id in model["handles"]
    page, offset, size = model["handles"][h.id]
    assert size == max(4096, client.properties().memory_alignment)
    assert f'data-handle="{h.id}"' in board.board.value
    text = board.text()
    assert f"#{h.id}" in text and "sliced" in text and "[" in text
    hid = h.id
    del h
    client.sync()
    board.refresh()
    assert hid not in board.model()["handles"]
    assert board.model()["counters"]["released"] >= 1
    board.close()


def test_memory_map_renders_as_text_and_html(client):  # type: ignore[no-untyped-def]
    h = client.empty(512)
    view = memory_map(client)
    assert f"#{h.id}" in view.text()
    bundle = view._repr_mimebundle_()
    assert f'data-handle="{h.id}"' in bundle["text/html"]
    assert "reserved in" in bundle["text/plain"]
