"""Seed 000's out-of-bounds experiment on the CPU runtime, in each of the three modes.

x and y hold 6 items, out 8, and 8 units run `add` unchecked: units 6 and 7 read x[6], x[7],
y[6], y[7]. `zero` is what wgpu does (reads give 0), `clamp` what CheckedIo intends (x[5] +
y[5] = 66), `report` reads 0 and says who read what, where.
"""

import numpy as np
import pytest

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab.ir.passes import DEFAULT_CHECKED_IO
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.cpu import OutOfBoundsWrite, oob_mode, set_oob_mode
from tests.fixtures.cpu_kernels import odd_units_copy, off_by_one, write_past_the_end
from tests.fixtures.kernels import add

X = np.arange(1, 7, dtype=np.float32)
Y = np.arange(10, 70, 10, dtype=np.float32)


def run_add(client, mode):
    xh, yh = client.create_from_slice(f32.as_bytes(X)), client.create_from_slice(f32.as_bytes(Y))
    out = client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
    with oob_mode(client, mode) as result:
        add.launch_unchecked[f32](client, CubeCount.Static(1), CubeDim.new_1d(8),
                                  BufferArg.from_raw_parts(xh, 6), BufferArg.from_raw_parts(yh, 6),
                                  BufferArg.from_raw_parts(out, 8), False)
    return f32.from_bytes(client.read_one(out)), result


def test_oob_zero_mode_reads_zero_as_wgpu_does(cpu_client):
    out, result = run_add(cpu_client, "zero")
    np.testing.assert_array_equal(out, [11, 22, 33, 44, 55, 66, 0, 0])
    assert result.oob == []


def test_oob_clamp_mode_reads_item_len_minus_one(cpu_client):
    out, result = run_add(cpu_client, "clamp")
    np.testing.assert_array_equal(out, [11, 22, 33, 44, 55, 66, 66, 66])
    assert result.oob == []


def test_oob_report_mode_names_units_6_and_7_buffers_x_and_y_and_the_kernel_line(cpu_client):
    with cpu_client.events.record(ev.OobReported) as rec:
        out, result = run_add(cpu_client, "report")
    np.testing.assert_array_equal(out, [11, 22, 33, 44, 55, 66, 0, 0])
    got = sorted((a.buffer, a.index, a.absolute, a.unit, a.length, a.write) for a in result.oob)
    assert got == [("x", 6, 6, (6, 0, 0), 6, False), ("x", 7, 7, (7, 0, 0), 6, False),
                   ("y", 6, 6, (6, 0, 0), 6, False), ("y", 7, 7, (7, 0, 0), 6, False)]
    for a in result.oob:
        assert a.source == "v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]"
        assert a.kernel == "add" and a.cube == (0, 0, 0) and a.loc.endswith(f":{a.line}:" +
                                                                              a.loc.split(":")[-1])
    assert "unit 6 (cube (0, 0, 0), unit (6, 0, 0)) reads x[6] but x has 6 items" in str(result)
    events = rec.of(ev.OobReported)
    assert sorted((e.buffer, e.index, e.unit) for e in events) == \
        [("x", 6, (6, 0, 0)), ("x", 7, (7, 0, 0)), ("y", 6, (6, 0, 0)), ("y", 7, (7, 0, 0))]


def test_an_oob_read_inside_a_branch_is_reported_for_the_units_that_took_it(cpu_client):
    """Units 1, 3, 5, 7 copy; only unit 7 reads past x's 6 items (unit 6 skips the branch)."""
    xh = cpu_client.create_from_slice(f32.as_bytes(X))
    out = cpu_client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
    with oob_mode(cpu_client, "report") as result:
        odd_units_copy.launch_unchecked(cpu_client, CubeCount.Static(1), CubeDim.new_1d(8),
                                        BufferArg.from_raw_parts(xh, 6),
                                        BufferArg.from_raw_parts(out, 8))
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)),
                                  [0, 3, 0, 5, 0, 7, 0, 1])
    (a,) = result.oob
    assert (a.buffer, a.index, a.absolute, a.unit, a.cube, a.write) == \
        ("x", 7, 7, (7, 0, 0), (0, 0, 0), False)
    assert a.source == "out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 1.0"


def test_oob_mode_per_client_applies_until_changed(cpu_client):
    set_oob_mode(cpu_client, "clamp")
    try:
        out, _ = run_add(cpu_client, None)
        np.testing.assert_array_equal(out[6:], [66, 66])
    finally:
        set_oob_mode(cpu_client, "zero")
    out, _ = run_add(cpu_client, None)
    np.testing.assert_array_equal(out[6:], [0, 0])
    with pytest.raises(ValueError, match="zero"):
        set_oob_mode(cpu_client, "wrap")


def test_a_negative_index_is_out_of_bounds_never_wrapped_to_the_end(cpu_client):
    x = cpu_client.create_from_slice(f32.as_bytes(np.array([1, 2, 3, 4], dtype=np.float32)))
    out = cpu_client.empty(16)
    cpu_client.set_compilation_options(checked_io="fixed")
    try:
        with oob_mode(cpu_client, "report") as result:
            off_by_one.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                              BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    finally:
        cpu_client.set_compilation_options(checked_io=DEFAULT_CHECKED_IO)
    # the fixed CheckedIo clamps: 0 - 1 wraps to 4294967295, clamped to len - 1 = 3; the
    # report still sees the index the kernel computed, and says it was clamped ...
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)), [4, 1, 2, 3])
    (a,) = result.oob
    assert (a.buffer, a.index, a.absolute, a.outcome) == ("x", 2**32 - 1, 0, "clamped")
    # ... and by default (the pass not firing), unit 0's index is out of bounds, not x[-1]
    with oob_mode(cpu_client, "report") as result:
        off_by_one.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                          BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)), [0, 1, 2, 3])
    (a,) = result.oob
    assert (a.buffer, a.index, a.absolute, a.length) == ("x", 2**32 - 1, 0, 4)


def test_a_reported_oob_write_is_a_failure_on_that_buffer(cpu_client):
    out = cpu_client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    with oob_mode(cpu_client, "report") as result:
        write_past_the_end.launch_unchecked(cpu_client, CubeCount.Static(1), CubeDim.new_1d(6),
                                            BufferArg.from_raw_parts(out, 4))
    assert sorted((a.index, a.write) for a in result.oob) == [(4, True), (5, True)]
    with pytest.raises(BufferFailure) as info:
        cpu_client.read_one(out)
    assert isinstance(info.value.cause, OutOfBoundsWrite)
    assert "out[4]" in str(info.value) and "out[5]" in str(info.value)
    # the same launch in `zero` mode drops the writes quietly, like wgpu
    with oob_mode(cpu_client, "zero"):
        write_past_the_end.launch_unchecked(cpu_client, CubeCount.Static(1), CubeDim.new_1d(6),
                                            BufferArg.from_raw_parts(out, 4))
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)), [1, 1, 1, 1])


def test_the_seeds_checked_launch_under_the_0_11_3_rule_reports_the_same_four_reads(cpu_client):
    """Seed 000's exact setup: `launch` (Checked) with CubeCL 0.11.3's CheckedIo — cubelab's
    default — which never fires on global buffers, so the report names the accesses the pass
    should have clamped."""
    xh = cpu_client.create_from_slice(f32.as_bytes(X))
    yh = cpu_client.create_from_slice(f32.as_bytes(Y))
    out = cpu_client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
    with oob_mode(cpu_client, "report") as result:
        add.launch[f32](cpu_client, CubeCount.Static(1), CubeDim.new_1d(8),
                        BufferArg.from_raw_parts(xh, 6), BufferArg.from_raw_parts(yh, 6),
                        BufferArg.from_raw_parts(out, 8), False)
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)),
                                  [11, 22, 33, 44, 55, 66, 0, 0])
    assert sorted((a.buffer, a.index) for a in result.oob) == [("x", 6), ("x", 7), ("y", 6),
                                                               ("y", 7)]
