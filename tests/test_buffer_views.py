"""Buffer views and the alignment in the cache key (seed 001: the CPU server's cache key is
`(kernel_id, alignment)`, the lowest set bit of every view's `offset_start` folded). A view
(`handle.offset_start(n)` / `offset_end(n)`, CubeCL's names) is the same buffer seen from
another byte; a launch binds it where its memory is. A view that starts off the device's
binding alignment compiles a kernel of its own — the alignment is in the KernelId — which skips
to the view's start; views of other alignments compile differently; on both runtimes."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, LaunchError
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

N = Size.generic("N")


@cube(launch=True)
def double(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i] * 2.0


@cube(launch=True)
def double_vec(x: Slice[Vector[f32, N]], out: SliceMut[Vector[f32, N]]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i] * 2.0


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, np.float32)))


def run(client, x_view, n, out=None):
    out = out or floats(client, np.zeros(n))
    double.launch(client, CubeCount.Static(1), CubeDim.new_1d(64), BufferArg.from_raw_parts(
        x_view, n), BufferArg.from_raw_parts(out, n))
    return f32.from_bytes(client.read_one(out))


def test_a_view_reads_writes_and_launches_on_its_own_bytes(client):
    x = floats(client, np.arange(100))
    view = x.offset_start(4 * 10).offset_end(4 * 80)  # items 10..19
    assert view.size == 40 and view.id == x.id
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(view)), np.arange(10, 20))
    client.write(view, f32.as_bytes(np.full(10, -1, np.float32)))
    got = f32.from_bytes(client.read_one(x))
    assert (got[10:20] == -1).all() and got[9] == 9 and got[20] == 20
    np.testing.assert_array_equal(run(client, view, 10), np.full(10, -2.0))


def test_views_whose_alignment_differs_compile_differently_and_the_key_says_so(client):
    align = client.properties().memory_alignment
    x = floats(client, np.arange(3 * align))
    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        a = run(client, x.offset_start(align), 8)        # bound where it starts: the usual kernel
        b = run(client, x, 8)                            # the same KernelId: no compile
        c = run(client, x.offset_start(4), 8)            # 4-byte aligned: a kernel of its own
        d = run(client, x.offset_start(8), 8)            # 8-byte aligned: another one
        e = run(client, x.offset_start(align + 12), 8)   # 4 again: reused
    np.testing.assert_array_equal(a, 2.0 * np.arange(align // 4, align // 4 + 8))
    np.testing.assert_array_equal(b, 2.0 * np.arange(8))
    np.testing.assert_array_equal(c, 2.0 * np.arange(1, 9))
    np.testing.assert_array_equal(d, 2.0 * np.arange(2, 10))
    np.testing.assert_array_equal(e, 2.0 * np.arange(align // 4 + 3, align // 4 + 11))
    kids = [r.kernel_id for r in rec.of(ev.CompileFinished)]
    assert [k.alignment for k in kids] == [0, 4, 8]
    assert len({k.hash8 for k in kids}) == 3 and kids[1].short().endswith("@4")
    from cubelab.inspect import diff

    assert any("alignment changed: aligned → 4 bytes" in w for w in diff(kids[0], kids[1]))


def test_an_unaligned_view_of_vectors_must_start_at_a_whole_item(client):
    x = floats(client, np.arange(64))
    out = floats(client, np.zeros(8))
    args = (BufferArg.from_raw_parts(x.offset_start(8), 8), BufferArg.from_raw_parts(out, 8))
    with pytest.raises(LaunchError, match=r"not a whole number of its 16-byte items"):
        double_vec.launch(client, CubeCount.Static(1), CubeDim.new_1d(2), 4, *args)
    double_vec.launch(client, CubeCount.Static(1), CubeDim.new_1d(2), 4,
                      BufferArg.from_raw_parts(x.offset_start(16), 8),
                      BufferArg.from_raw_parts(out, 8))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), 2.0 * np.arange(4, 12))


def test_a_view_keeps_its_buffer_alive_and_cannot_be_freed_itself(client):
    from cubelab import ReleasedHandleError

    x = floats(client, np.arange(16))
    view = x.offset_start(8)
    with pytest.raises(ReleasedHandleError, match="is a view of"):
        client.free(view)
    client.free(x)
    assert view.released
    with pytest.raises(ReleasedHandleError):
        client.read_one(view)
