"""Seed 001: `CubeCount.Dynamic(handle)` — the grid is three u32 written by an earlier kernel
(DESIGN §4 rule 7). wgpu dispatches it indirectly; the CPU runtime drains the stream and reads
the 12 bytes. A zero count dispatches nothing; a count buffer carrying a failure skips.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab.prelude import f32, u32
from cubelab.runtime import events as ev
from tests.fixtures.seed001_kernels import bad_widths, inc, write_count


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def count_of(client, cubes):
    """A count buffer written on the device, by a kernel, as the seed's use case has it."""
    cnt = client.empty(12)
    write_count.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                       BufferArg.from_raw_parts(cnt, 3), cubes)
    return cnt


def inc_dynamic(client, y, cnt, n=32):
    inc.launch(client, CubeCount.Dynamic(cnt), CubeDim.new_1d(4), BufferArg.from_raw_parts(y, n))


def test_a_dynamic_count_written_by_a_kernel_sets_the_grid(client):
    y = floats(client, np.zeros(32))
    cnt = count_of(client, 3)  # 3 cubes of 4 units: the first 12 items
    inc_dynamic(client, y, cnt)
    out = f32.from_bytes(client.read_one(y))
    np.testing.assert_array_equal(out, np.r_[np.ones(12), np.zeros(20)])
    assert np.frombuffer(client.read_one(cnt), np.uint32).tolist() == [3, 1, 1]


def test_a_zero_dynamic_count_dispatches_nothing_and_leaves_the_outputs_valid(client):
    y = floats(client, np.full(32, 5.0))
    cnt = count_of(client, 0)
    with client.events.record(ev.LaunchSkipped, ev.LaunchDispatched) as rec:
        inc_dynamic(client, y, cnt)
        np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)), np.full(32, 5.0))
    client.check([y])
    skipped = [e.why for e in rec.of(ev.LaunchSkipped) if e.kernel == "Inc"]
    dispatched = [e for e in rec.of(ev.LaunchDispatched) if e.kernel == "Inc"]
    if not client.name().startswith("wgpu"):  # read back on the host (CPU, CUDA): dropped
        assert skipped == ["zero-count"] and not dispatched
    else:  # indirect: the GPU reads the zero itself, no read-back
        assert len(dispatched) == 1 and not skipped


def test_a_tainted_count_buffer_skips_the_launch_with_the_root_cause(client):
    cnt = client.empty(12)
    a, b = floats(client, np.zeros(4)), floats(client, np.zeros(4))
    # the kernel meant to write the count does not compile: the count carries its failure
    bad_widths.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                      BufferArg.from_raw_parts(a, 4), BufferArg.from_raw_parts(b, 4),
                      BufferArg.from_raw_parts(cnt, 3))
    y = floats(client, np.zeros(32))
    with client.events.record(ev.LaunchSkipped, ev.LaunchDispatched) as rec:
        inc_dynamic(client, y, cnt)
        with pytest.raises(BufferFailure) as info:
            client.read_one(y)
    assert info.value.kernel == "BadWidths" and info.value.skipped == ("Inc",)
    assert [e.why for e in rec.of(ev.LaunchSkipped)] == ["tainted-input"]
    assert not rec.of(ev.LaunchDispatched)


def test_a_dynamic_count_needs_twelve_bytes(client):
    small = client.create_from_slice(u32.as_bytes(np.array([1, 1], np.uint32)))
    with pytest.raises(ValueError, match="12 bytes"):
        CubeCount.Dynamic(small)
