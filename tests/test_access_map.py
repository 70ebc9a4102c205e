"""Seeing units on real launches: access maps, races, out-of-bounds before any clamp, non-finite.

Tests that take `client` run on both runtimes: a wgpu launch is re-run on the CPU runtime on
copies of its buffers (as `trace` does), so the same map comes back either way. Each
out-of-bounds test names its CheckedIo rule explicitly (the default is the seed's 0.11.3 rule;
the fixed clamp is `checked_io="fixed"`).
"""

import xml.etree.ElementTree as ET
from contextlib import contextmanager

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import f32, u32
from cubelab.runtime.cpu import nonfinite_report, oob_mode, race_report
from tests.fixtures.access_kernels import (
    conv3,
    divide_by_zero,
    histogram4,
    map_no_guard,
    pairs_write_one,
    tree_sum,
    tree_sum_no_sync,
)

SVG = "{http://www.w3.org/2000/svg}"


def f32_buf(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def u32_buf(client, values):
    return client.create_from_slice(u32.as_bytes(np.asarray(values, dtype=np.uint32)))


@contextmanager
def checked_io(client, rule):
    before = client.compilation_options().checked_io
    client.set_compilation_options(checked_io=rule)
    try:
        yield
    finally:
        client.set_compilation_options(checked_io=before)


def line_of(kernel, text):
    for n, line in enumerate(kernel.source.splitlines()):
        if text in line:
            return kernel.first_line + n
    raise AssertionError(text)


def tree_map(client, kernel):
    x = f32_buf(client, np.arange(16))
    out = f32_buf(client, np.zeros(2))
    return inspect.access_map(kernel.launch, client, CubeCount.Static(2), CubeDim.new_1d(8),
                              BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(out, 2))


# -- races ---------------------------------------------------------------------------------------
def test_a_tree_reduction_without_its_barrier_races_naming_both_units_and_lines(client):
    m = tree_map(client, tree_sum_no_sync)
    assert m.races, m.report()
    step = line_of(tree_sum_no_sync, "sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]")
    # step s=2: unit 0 reads sm[2] while unit 2 writes it (its s=4 sum), both after barrier 1
    r = next(r for r in m.races if r.array == "sm" and r.index == 2 and r.cubes == (0, 0))
    assert set(r.units) == {0, 2} and r.lines == (step, step) and r.phase == 1
    assert "race on sm[2] of cube 0 in phase 1" in str(r)
    # the answer is right anyway: lockstep hides the race
    assert f32.from_bytes(m.client.read_one(m.args[1].handle)).tolist() == [28.0, 92.0]


def test_the_same_reduction_with_its_barrier_has_no_race_and_no_uninitialised_read(client):
    m = tree_map(client, tree_sum)
    assert m.races == [] and m.uninitialised == [], m.report()
    assert m.phases == 5  # before the first barrier, and after each of the 4
    assert "no race" in m.report()


def test_a_histogram_with_atomics_has_no_race(client):
    x = u32_buf(client, np.arange(16) * 3)
    hist = u32_buf(client, np.zeros(4))
    m = inspect.access_map(histogram4.launch, client, CubeCount.Static(2), CubeDim.new_1d(8),
                           BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(hist, 4))
    assert m.races == []
    assert sorted({a.kind for a in m.accesses if a.array == "hist"}) == ["atomic"]
    assert m.scores.total()["atomics"] == 16


def test_two_units_writing_one_global_element_are_reported(client):
    out = u32_buf(client, np.zeros(8))
    m = inspect.access_map(pairs_write_one.launch, client, CubeCount.Static(2),
                           CubeDim.new_1d(8), BufferArg.from_raw_parts(out, 8))
    assert m.races_total == 8
    r = next(r for r in m.races if r.index == 0)
    assert r.array == "out" and set(r.units) == {0, 1} and r.kinds == ("write", "write")


def test_race_report_judges_the_launches_of_a_block_on_its_own(cpu_client):
    x = f32_buf(cpu_client, np.arange(16))
    out = f32_buf(cpu_client, np.zeros(2))
    args = (BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(out, 2))
    with race_report(cpu_client) as bad:
        tree_sum_no_sync.launch(cpu_client, CubeCount.Static(2), CubeDim.new_1d(8), *args)
    with race_report(cpu_client) as good:
        tree_sum.launch(cpu_client, CubeCount.Static(2), CubeDim.new_1d(8), *args)
    assert bad.races and "race on sm[" in str(bad)
    assert good.races == [] and "no race" in str(good)
    # outside a block the plain plan runs again: nothing is recorded
    tree_sum_no_sync.launch(cpu_client, CubeCount.Static(2), CubeDim.new_1d(8), *args)
    assert f32.from_bytes(cpu_client.read_one(out)).tolist() == [28.0, 92.0]


# -- out of bounds, seen before any clamp --------------------------------------------------------
def guardless(client):
    x = f32_buf(client, np.arange(6))
    out = f32_buf(client, np.zeros(6))
    return (BufferArg.from_raw_parts(x, 6), BufferArg.from_raw_parts(out, 6))


def test_a_guardless_map_under_the_fixed_rule_reports_every_access_as_clamped(client):
    with checked_io(client, "fixed"):
        m = inspect.access_map(map_no_guard.launch, client, CubeCount.Static(1),
                               CubeDim.new_1d(8), *guardless(client))
    got = sorted((o.array, o.index, o.unit, o.kind, o.outcome) for o in m.oob)
    assert got == [("out", 6, 6, "write", "clamped"), ("out", 7, 7, "write", "clamped"),
                   ("x", 6, 6, "read", "clamped"), ("x", 7, 7, "read", "clamped")]
    assert all(o.length == 6 and o.line == line_of(map_no_guard, "out[ABSOLUTE_POS] =")
               for o in m.oob)


def test_a_guardless_map_under_the_0_11_3_rule_reads_zero_and_drops_the_writes(client):
    with checked_io(client, "cubecl-0.11.3"):
        m = inspect.access_map(map_no_guard.launch, client, CubeCount.Static(1),
                               CubeDim.new_1d(8), *guardless(client))
    got = sorted((o.array, o.index, o.outcome) for o in m.oob)
    assert got == [("out", 6, "dropped"), ("out", 7, "dropped"), ("x", 6, "zero"),
                   ("x", 7, "zero")]


def test_report_mode_sees_the_index_before_checked_io_clamps_it(cpu_client):
    with checked_io(cpu_client, "fixed"):
        with oob_mode(cpu_client, "report") as result:
            map_no_guard.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(8),
                                *guardless(cpu_client))
    got = sorted((a.buffer, a.index, a.write, a.outcome) for a in result.oob)
    assert got == [("out", 6, True, "clamped"), ("out", 7, True, "clamped"),
                   ("x", 6, False, "clamped"), ("x", 7, False, "clamped")]
    assert "clamped to x[5]" in str(result)


def test_report_mode_under_the_0_11_3_rule_reads_zero_and_fails_the_written_buffer(cpu_client):
    with checked_io(cpu_client, "cubecl-0.11.3"):
        with oob_mode(cpu_client, "report") as result:
            args = guardless(cpu_client)
            map_no_guard.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(8), *args)
    got = sorted((a.buffer, a.index, a.outcome) for a in result.oob)
    assert got == [("out", 6, "failed"), ("out", 7, "failed"), ("x", 6, "zero"),
                   ("x", 7, "zero")]
    from cubelab.runtime.execute_scope import BufferFailure

    with pytest.raises(BufferFailure, match="out of bounds"):
        cpu_client.read_one(args[1].handle)


# -- the access map of a 1-D convolution ---------------------------------------------------------
def expected_conv_cells(n=16, per=8, width=3):
    """Independently of the runtime: what each unit touches in each phase, from the spec."""
    cells = {}
    for c in range(n // per):
        for u in range(per):
            i = c * per + u
            p0 = {"a": {i}, "sm": {u}}
            if u < width - 1 and i + per < n:
                p0["a"].add(i + per)
                p0["sm"].add(u + per)
            p1 = {"sm": {u + k for k in range(width) if i + k < n},
                  "b": {k for k in range(width) if i + k < n}, "out": {i}}
            cells[i] = {0: {k: sorted(v) for k, v in p0.items()},
                        1: {k: sorted(v) for k, v in p1.items()}}
    return cells


def conv_map(client):
    a = f32_buf(client, np.arange(16))
    b = f32_buf(client, [1.0, 2.0, 3.0])
    out = f32_buf(client, np.zeros(16))
    return inspect.access_map(conv3.launch, client, CubeCount.Static(2), CubeDim.new_1d(8),
                              BufferArg.from_raw_parts(a, 16), BufferArg.from_raw_parts(b, 3),
                              BufferArg.from_raw_parts(out, 16))


def test_the_convolution_map_draws_exactly_the_cells_each_unit_touched_per_phase(client):
    m = conv_map(client)
    assert m.phases == 2 and not m.races and not m.uninitialised and not m.oob, m.report()
    for unit, phases in expected_conv_cells().items():
        for phase, want in phases.items():
            assert m.cells_of(unit, phase) == want, (unit, phase)
    s = m.scores[7]  # the last unit of cube 0: three neighbours, two of them loaded by others
    assert (s.global_reads, s.global_writes, s.shared_reads, s.shared_writes) == (4, 1, 3, 1)
    assert m.scores.max()["global_reads"] == 5 and m.scores.total()["global_writes"] == 16


def test_the_convolution_svg_parses_and_has_one_element_per_cell(client):
    m = conv_map(client)
    root = ET.fromstring(m.to_svg())
    cells = [e for e in root.iter(f"{SVG}rect") if "cell" in e.get("class", "").split()]
    # per phase: a (16) + b (3) + out (16) + sm of cube 0 and of cube 1 (10 each)
    assert len(cells) == 2 * (16 + 3 + 16 + 2 * 10)
    drawn = {(c.get("data-array"), c.get("data-cube"), int(c.get("data-index")),
              int(c.get("data-phase"))) for c in cells if "untouched" not in c.get("class")}
    want = set()
    for unit, phases in expected_conv_cells().items():
        for phase, arrays in phases.items():
            for arr, idx in arrays.items():
                cube = str(unit // 8) if arr == "sm" else "-1"
                want |= {(arr, cube, i, phase) for i in idx}
    assert drawn == want
    assert "<svg" in m._repr_html_()


def test_access_map_records_only_the_chosen_cubes(client):
    a = f32_buf(client, np.arange(16))
    b = f32_buf(client, [1.0, 2.0, 3.0])
    out = f32_buf(client, np.zeros(16))
    m = inspect.access_map(conv3.launch, client, CubeCount.Static(2), CubeDim.new_1d(8),
                           BufferArg.from_raw_parts(a, 16), BufferArg.from_raw_parts(b, 3),
                           BufferArg.from_raw_parts(out, 16), cubes=[1])
    assert m.cubes == [1] and {a.cube for a in m.accesses} == {1}
    assert m.units == list(range(8, 16))


def test_a_wgpu_launch_is_re_run_on_a_cpu_copy_and_the_wgpu_buffers_are_left_alone(wgpu_client):
    out = u32_buf(wgpu_client, np.full(8, 7))
    m = inspect.access_map(pairs_write_one.launch, wgpu_client, CubeCount.Static(2),
                           CubeDim.new_1d(8), BufferArg.from_raw_parts(out, 8))
    assert m.copied and m.client.name() == "cpu<numpy>"
    assert u32.from_bytes(wgpu_client.read_one(out)).tolist() == [7] * 8


# -- non-finite values ---------------------------------------------------------------------------
def test_the_nonfinite_report_catches_a_division_by_zero_and_names_the_line(cpu_client):
    x = f32_buf(cpu_client, [1.0, -2.0, 0.0, 3.0])
    out = f32_buf(cpu_client, np.zeros(4))
    with nonfinite_report(cpu_client) as result:
        divide_by_zero.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                              BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    line = line_of(divide_by_zero, "y / f32(0.0)")
    got = sorted((n.unit, n.op, n.result, n.line) for n in result.nonfinite)
    assert got == [(0, "arith.div", "inf", line), (1, "arith.div", "-inf", line),
                   (2, "arith.div", "nan", line), (3, "arith.div", "inf", line)]
    assert "y / f32(0.0)" in str(result)


def test_without_the_nonfinite_report_nothing_is_checked(cpu_client):
    x = f32_buf(cpu_client, [1.0, 2.0, 3.0, 4.0])
    out = f32_buf(cpu_client, np.zeros(4))
    from cubelab.runtime.cpu import launch_results

    with launch_results(cpu_client) as result:
        divide_by_zero.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                              BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    assert result.nonfinite == [] and result.launches[0].nonfinite is None


def test_an_access_map_of_a_wgpu_launch_also_names_the_division_by_zero(client):
    x = f32_buf(client, [1.0, 2.0, 3.0, 4.0])
    out = f32_buf(client, np.zeros(4))
    m = inspect.access_map(divide_by_zero.launch, client, CubeCount.Static(1), CubeDim.new_1d(4),
                           BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    line = line_of(divide_by_zero, "y / f32(0.0)")
    assert sorted((n.unit, n.op, n.result, n.line) for n in m.nonfinite) == \
        [(u, "arith.div", "inf", line) for u in range(4)]
    assert "non-finite: unit 0: arith.div(2.0, 0.0) made inf" in m.report()


def test_reading_halo_cells_nobody_loaded_is_an_uninitialised_read(client):
    from tests.fixtures.access_kernels import conv3_no_edge_guard

    a = f32_buf(client, np.arange(16))
    b = f32_buf(client, [1.0, 2.0, 3.0])
    out = f32_buf(client, np.zeros(16))
    m = inspect.access_map(conv3_no_edge_guard.launch, client, CubeCount.Static(2),
                           CubeDim.new_1d(8), BufferArg.from_raw_parts(a, 16),
                           BufferArg.from_raw_parts(b, 3), BufferArg.from_raw_parts(out, 16))
    got = sorted((u.cube, u.unit, u.index, u.phase) for u in m.uninitialised)
    # cube 1 loads a[8..16) only: sm[8], sm[9] (a[16], a[17]) were never written
    assert got == [(1, 14, 8, 1), (1, 15, 8, 1), (1, 15, 9, 1)]
    assert not m.races
    root = ET.fromstring(m.to_svg())
    marked = {(e.get("data-cube"), e.get("data-index")) for e in root.iter(f"{SVG}rect")
              if "uninitialised" in e.get("class", "").split()}
    assert marked == {("1", "8"), ("1", "9")}
