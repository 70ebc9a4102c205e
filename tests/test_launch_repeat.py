"""A launch repeated with the very same argument objects (issue #17, the launch path).

A loop `for _ in range(n): scale.launch(client, count, dim, xa, ya, 2.0)` hands the same objects
to every launch, so `frontend/launch.py` checks them once and hands the same `Bindings` over
again (the device thread keeps what it derived from them on them: `server.PreparedLaunch`).
These tests pin that the shortcut is exact: it sees every new value, keeps nothing alive,
refuses what a fresh launch refuses, and gives what fresh launches give — on both runtimes.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, ReleasedHandleError
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.handle import ScalarArg, TensorArg
from tests.fixtures.seed001_kernels import inc, scale

ONE = (CubeCount.Static(1), CubeDim.new_1d(8))


def floats(client, values):  # type: ignore[no-untyped-def]
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def read(client, h):  # type: ignore[no-untyped-def]
    return f32.from_bytes(client.read_one(h))


def test_launch_arguments_are_values_that_cannot_be_changed_after_construction(client):
    h = client.zeros(32)
    for value, field in ((BufferArg.from_raw_parts(h, 8), "length"),
                         (TensorArg.from_raw_parts(h, (2, 4), (4, 1)), "shape"),
                         (ScalarArg(2.0), "value")):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(value, field, 4)


def test_a_loop_of_identical_launches_gives_what_fresh_launches_give(client):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    for _ in range(20):
        inc.launch(client, *ONE, ya)
    for _ in range(5):  # fresh argument objects each time
        inc.launch(client, *ONE, BufferArg.from_raw_parts(y, 8))
    np.testing.assert_array_equal(read(client, y), np.full(8, 25.0))


def test_a_new_scalar_value_in_a_loop_is_used_not_the_repeated_one(client):
    x, out = floats(client, np.ones(8)), floats(client, np.zeros(8))
    xa, oa = BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8)
    for a in (3.0, 3.0, 3.0, 4.0):
        scale.launch(client, *ONE, xa, oa, a)
    np.testing.assert_array_equal(read(client, out), np.full(8, 4.0))
    for a in (5.0, 5.0, 5.0):
        scale.launch(client, *ONE, xa, oa, a)
        np.testing.assert_array_equal(read(client, out), np.full(8, a))


def test_going_back_to_an_earlier_scalar_object_uses_it(client):
    # The memo first knew these arguments with `a1`; after a launch with `a2` it is `a2`'s
    # launch, and `a1`, the very same object as the first time, is a new scalar again.
    x, out = floats(client, np.ones(8)), floats(client, np.zeros(8))
    xa, oa = BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8)
    a1, a2 = 3.0, 4.0
    for a in (a1, a2, a1, a2, a1):
        scale.launch(client, *ONE, xa, oa, a)
        np.testing.assert_array_equal(read(client, out), np.full(8, a))


def test_minus_zero_after_zero_reaches_the_kernel_with_its_sign(client):
    # 0.0 == -0.0 (and they hash alike) in Python, yet the kernel sees the sign bit: neither the
    # repeat shortcut (it keys on the argument objects) nor the caches keyed on the scalars (wgpu's
    # bind groups, the CPU runtime's uniform values: `Bindings.scalar_key`, an f32's bits) may
    # take one for the other.
    x, out = floats(client, np.ones(8)), floats(client, np.zeros(8))
    xa, oa = BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8)
    zero, minus_zero = 0.0, -0.0
    for _ in range(3):
        scale.launch(client, *ONE, xa, oa, zero)
    assert client.read_one(out) == struct.pack("<8f", *[0.0] * 8)
    scale.launch(client, *ONE, xa, oa, minus_zero)
    assert client.read_one(out) == struct.pack("<8f", *[-0.0] * 8)


def test_a_repeated_launch_on_another_cube_dim_or_buffer_is_checked_afresh(client):
    x, out, other = (floats(client, np.arange(8)), floats(client, np.zeros(8)),
                     floats(client, np.zeros(8)))
    xa, oa = BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(out, 8)
    for _ in range(3):
        scale.launch(client, *ONE, xa, oa, 2.0)
    with client.events.record(ev.CompileStarted) as rec:
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), xa,
                     BufferArg.from_raw_parts(other, 8), 3.0)
        client.sync()
    assert [e.kernel_id.cube_dim for e in rec.of(ev.CompileStarted)] == [CubeDim.new_1d(4)]
    np.testing.assert_array_equal(read(client, out), np.arange(8) * 2.0)
    np.testing.assert_array_equal(read(client, other), np.arange(8) * 3.0)


def test_a_freed_buffer_is_refused_by_a_repeated_launch(client):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    for _ in range(3):
        inc.launch(client, *ONE, ya)
    client.free(y)
    with pytest.raises(ReleasedHandleError, match=rf"Handle\(#{y.id}"):
        inc.launch(client, *ONE, ya)


def test_repeating_a_launch_keeps_no_dropped_buffer_alive(client):
    y = floats(client, np.zeros(8))
    ya = BufferArg.from_raw_parts(y, 8)
    for _ in range(3):
        inc.launch(client, *ONE, ya)
    client.sync()
    yid = y.id
    with client.events.record(ev.MemoryReleased) as rec:
        del y, ya  # the launcher's memo holds the argument weakly: this was the last reference
        client.sync()
    assert [e.handle_id for e in rec.of(ev.MemoryReleased) if e.handle_id == yid] == [yid]


def test_wgpu_launches_give_the_same_results_through_wgpu_pys_own_pass_methods(wgpu_client):
    # The server calls wgpu-native's dispatch and offset bind directly (`_NativePass`) and falls
    # back to wgpu-py's public pass methods where those internals are absent: both must work.
    from tests.fixtures.seed001_kernels import scale_slow

    client = wgpu_client
    server = client.device.server
    native = server._native
    assert native is not None  # wgpu-py 0.32, as pinned: the direct calls are what normally run
    x, a, b = (floats(client, np.arange(8)), floats(client, np.zeros(8)),
               floats(client, np.zeros(8)))
    xa, aa, ba = (BufferArg.from_raw_parts(h, 8) for h in (x, a, b))
    try:
        for which in (None, native):
            client.device.runner.call(setattr, server, "_native", which)
            out, outa = (a, aa) if which is None else (b, ba)
            for _ in range(3):
                scale.launch(client, *ONE, xa, outa, 2.0)  # unguarded: a dispatch
                scale_slow.launch(client, *ONE, xa, outa, 2.0, 64)  # guarded: an offset bind
            np.testing.assert_array_equal(read(client, out), np.arange(8) * 2.0)
    finally:
        client.device.runner.call(setattr, server, "_native", native)


def test_bindings_checked_by_one_client_are_checked_afresh_by_another(wgpu_client, cpu_client):
    # The client keeps "these bindings passed my gates" on the `Bindings` (a loop then only
    # re-reads `released`); another device's client must still refuse the foreign handle.
    from cubelab import LaunchError

    y = floats(wgpu_client, np.zeros(8))
    captured = []

    class Capture:
        def launch(self, kernel, count, bindings):  # type: ignore[no-untyped-def]
            captured.append((kernel, count, bindings))

        def properties(self):  # type: ignore[no-untyped-def]
            return wgpu_client.properties()

    inc.launch(Capture(), *ONE, BufferArg.from_raw_parts(y, 8))
    kernel, count, bindings = captured[0]
    wgpu_client.launch(kernel, count, bindings)  # checked, and the answer kept on `bindings`
    with pytest.raises(LaunchError, match="belongs to device"):
        cpu_client.launch(kernel, count, bindings)
    np.testing.assert_array_equal(read(wgpu_client, y), np.ones(8))


def test_freeing_another_buffer_between_repeated_launches_changes_nothing_for_them(client):
    # Any free makes the next launch re-check its handles (the client's memo counts frees):
    # a free elsewhere is seen, re-checked and passed; the buffer's own free is refused.
    y, other = floats(client, np.zeros(8)), client.zeros(32)
    ya = BufferArg.from_raw_parts(y, 8)
    for _ in range(3):
        inc.launch(client, *ONE, ya)
    client.free(other)
    for _ in range(3):
        inc.launch(client, *ONE, ya)
    np.testing.assert_array_equal(read(client, y), np.full(8, 6.0))
    with client.empty(16) as scratch:  # a `with` block's end is a free too
        inc.launch(client, *ONE, ya)
        del scratch
    client.free(y)
    with pytest.raises(ReleasedHandleError):
        inc.launch(client, *ONE, ya)
