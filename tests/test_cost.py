"""The cost instruments on real launches: coalescing into 32-byte sectors and shared-memory bank
conflicts, per plane-instruction and per source line (`AccessMap.transactions`, `.coalescing()`,
`.bank_conflicts`, `.conflicts()`; the rules: `cubelab.runtime.cpu.cost`).

Tests that take `client` run on both runtimes: a wgpu launch is re-run on the CPU runtime on
copies of its buffers, so the same counts come back. Each counting test names `plane_width=32`
(a 32-unit plane, as NVIDIA's warp): the device's own width is its own test.
"""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.inspect.access_map import AccessMap
from cubelab.inspect.peaks import plane_width
from cubelab.prelude import f32, u32
from cubelab.runtime.cpu.access import Access, ArrayInfo
from cubelab.runtime.cpu.cost import BankConflict, Transaction
from tests.fixtures.cost_kernels import (
    copy_vec4,
    guarded_copy,
    histogram,
    rows_and_columns,
    shared_strided,
    strided_read,
)


def f32_buf(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def strided(client, stride, units=64, width=32):
    x = f32_buf(client, np.arange(units * max(1, stride), dtype=np.float32))
    out = client.empty(4 * units)
    return inspect.access_map(strided_read.launch, client, CubeCount.Static(units // 64),
                              CubeDim.new_1d(64), BufferArg.from_raw_parts(x, units * max(1, stride)),
                              BufferArg.from_raw_parts(out, units), stride, plane_width=width)


def line_row(table, array, kind="read"):
    rows = [r for r in table if r.array == array and r.kind == kind]
    assert len(rows) == 1, list(table)
    return rows[0]


# -- coalescing ------------------------------------------------------------------------------------
def test_a_coalesced_f32_copy_touches_4_sectors_per_32_unit_plane_efficiency_1(client):
    m = strided(client, 1)
    reads = [t for t in m.transactions if t.array == "x"]
    assert len(reads) == 2  # 64 units = 2 planes, one read instruction each
    for t in reads:
        assert (t.units, t.bytes, t.sectors, t.ideal) == (32, 128, 4, 4)
        assert t.efficiency == 1.0 and t.kind == "read" and t.cube == 0
    assert {t.plane for t in reads} == {0, 1}
    x = line_row(m.coalescing(), "x")
    assert (x.instructions, x.sectors, x.ideal, x.efficiency) == (2, 8, 8, 1.0)
    out = line_row(m.coalescing(), "out", "write")
    assert out.efficiency == 1.0


@pytest.mark.parametrize("stride, sectors, efficiency", [(2, 8, 0.5), (4, 16, 0.25),
                                                         (8, 32, 0.125), (32, 32, 0.125)])
def test_a_strided_read_wastes_the_sectors_it_skips(client, stride, sectors, efficiency):
    m = strided(client, stride)
    x = line_row(m.coalescing(), "x")
    assert x.sectors_per_instruction == sectors and x.efficiency == efficiency
    assert x.ideal == 8  # the same 128 bytes per plane were asked for


def test_a_broadcast_read_is_one_sector(client):
    m = strided(client, 0)
    for t in (t for t in m.transactions if t.array == "x"):
        assert (t.units, t.bytes, t.sectors, t.ideal, t.efficiency) == (32, 128, 1, 1, 1.0)


def test_a_vec4_access_moves_16_bytes_per_unit_and_is_4_words_per_bank_pass(client):
    x = f32_buf(client, np.arange(256, dtype=np.float32))
    out = client.empty(4 * 256)
    m = inspect.access_map(copy_vec4.launch, client, CubeCount.Static(1), CubeDim.new_1d(64),
                           BufferArg.from_raw_parts(x, 256), BufferArg.from_raw_parts(out, 256),
                           plane_width=32)
    reads = [t for t in m.transactions if t.array == "x"]
    assert [(t.units, t.bytes, t.sectors, t.ideal) for t in reads] == [(32, 512, 16, 16)] * 2
    assert m.arrays["x"].item_bytes == 16
    # 32 units × 4 words = 128 words: 4 per bank, the fewest a plane can do, so no conflict
    sm = line_row(m.conflicts(), "sm", "write")
    assert (sm.worst, sm.ideal) == (4, 4) and sm.excess == 1.0


def test_a_guard_turning_units_off_leaves_a_masked_plane_with_fewer_bytes(client):
    n = 40
    x = f32_buf(client, np.arange(n, dtype=np.float32))
    out = client.empty(4 * 64)
    m = inspect.access_map(guarded_copy.launch, client, CubeCount.Static(1), CubeDim.new_1d(64),
                           BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, 64),
                           plane_width=32)
    reads = sorted((t for t in m.transactions if t.array == "x"), key=lambda t: t.plane)
    assert [(t.plane, t.units, t.bytes, t.sectors, t.ideal) for t in reads] == \
        [(0, 32, 128, 4, 4), (1, 8, 32, 1, 1)]


def test_a_2d_cube_makes_planes_of_consecutive_units_in_linear_order(client):
    x = f32_buf(client, np.arange(64, dtype=np.float32))
    along, across = client.empty(4 * 64), client.empty(4 * 64)
    m = inspect.access_map(rows_and_columns.launch, client, CubeCount.Static(1),
                           CubeDim.new_2d(8, 8), BufferArg.from_raw_parts(x, 64),
                           BufferArg.from_raw_parts(along, 64),
                           BufferArg.from_raw_parts(across, 64), plane_width=32)
    reads = [t for t in m.transactions if t.array == "x"]
    assert sorted(t.plane for t in reads) == [0, 0, 1, 1]  # rows 0-3 and rows 4-7
    by_line = {r.line: r for r in m.coalescing() if r.array == "x"}
    lines = sorted(by_line)
    # along the rows: 32 consecutive floats a plane; across: 8 columns × 4 rows → 8 sectors
    assert by_line[lines[0]].efficiency == 1.0
    assert (by_line[lines[1]].sectors_per_instruction, by_line[lines[1]].efficiency) == (8, 0.5)


def test_global_atomics_count_sectors_like_any_access(client):
    x = client.create_from_slice(u32.as_bytes(np.arange(64, dtype=np.uint32)))
    hist = client.create_from_slice(u32.as_bytes(np.zeros(4, dtype=np.uint32)))
    m = inspect.access_map(histogram.launch, client, CubeCount.Static(1), CubeDim.new_1d(64),
                           BufferArg.from_raw_parts(x, 64), BufferArg.from_raw_parts(hist, 4),
                           plane_width=32)
    atomics = [t for t in m.transactions if t.kind == "atomic"]
    assert [(t.units, t.bytes, t.sectors, t.ideal) for t in atomics] == [(32, 128, 1, 1)] * 2
    assert line_row(m.coalescing(), "hist", "atomic").efficiency == 1.0


# -- bank conflicts --------------------------------------------------------------------------------
@pytest.mark.parametrize("stride, ways", [(1, 1), (2, 2), (4, 4), (32, 32), (0, 1), (33, 1)])
def test_shared_memory_at_a_stride_conflicts_that_many_ways_and_a_broadcast_is_one(client, stride,
                                                                                   ways):
    out = client.empty(4 * 64)
    m = inspect.access_map(shared_strided.launch, client, CubeCount.Static(1), CubeDim.new_1d(64),
                           BufferArg.from_raw_parts(out, 64), stride, plane_width=32)
    read = line_row(m.conflicts(), "sm", "read")
    assert (read.instructions, read.worst, read.mean) == (2, ways, ways)
    assert line_row(m.conflicts(), "sm", "write").worst == 1
    assert all(isinstance(b, BankConflict) and b.phase == (1 if b.kind == "read" else 0)
               for b in m.bank_conflicts)


# -- plane width -----------------------------------------------------------------------------------
def test_the_plane_width_is_the_devices_own_unless_named(client):
    width = plane_width(client)
    if client.name().startswith("cpu"):
        assert width == 32
    m = strided(client, 2, width=None)
    assert m.plane_width == width
    x = line_row(m.coalescing(), "x")
    assert x.instructions == 64 // width and x.efficiency == 0.5  # the waste does not depend on it
    with pytest.raises(ValueError, match="plane_width"):
        strided(client, 1, width=0)


# -- plain data: hand-made records, views ------------------------------------------------------------
def test_hand_made_records_count_a_units_nth_access_of_a_line_as_one_instruction():
    recs = [Access(u, 0, 0, "x", u * k, "read", None, 7, "global", u, seq)
            for seq, (k, u) in enumerate((k, u) for k in (1, 8) for u in range(32))]
    m = AccessMap.from_records(recs, {"x": ArrayInfo("x", "global", 1024)})
    assert sorted(t.sectors for t in m.transactions) == [4, 32]
    assert all(isinstance(t, Transaction) and t.line == 7 for t in m.transactions)
    (row,) = m.coalescing()
    assert (row.instructions, row.sectors, row.ideal) == (2, 36, 8)


def test_cost_tables_print_render_and_serialise(cpu_client):
    m = strided(cpu_client, 2)
    text = str(m.coalescing())
    assert "efficiency" in text and "50%" in text and "x[i * stride]" in text
    html = m.coalescing()._repr_mimebundle_()["text/html"]
    assert 'class="cl-cost"' in html and "background:#" in html
    assert "2-way" not in m.cost_report() and "50% coalesced" in m.cost_report()
    d = m.to_dict()
    assert d["plane_width"] == 32 and d["coalescing"][0]["efficiency"] in (0.5, 1.0)
    assert str(m.conflicts()).endswith("no shared access recorded")


# -- views: the SVG and the widget colour each access line -----------------------------------------
def test_the_access_map_svg_colours_each_access_line_by_what_it_costs(client):
    import xml.etree.ElementTree as ET

    m = strided(client, 8)
    root = ET.fromstring(m.to_svg())
    groups = root.iter("{http://www.w3.org/2000/svg}g")
    lines = {(g.get("data-array"), g.get("data-kind")): g for g in groups
             if g.get("class") == "cost-line"}
    assert set(lines) == {("x", "read"), ("out", "write")}
    bad, good = lines[("x", "read")], lines[("out", "write")]
    assert float(bad.get("data-badness")) == 1.0 and float(good.get("data-badness")) == 0.0
    fill = {g: next(r for r in g if r.tag.endswith("rect")).get("fill") for g in (bad, good)}
    assert fill[bad] == "#d62728" and fill[good] == "#2ca02c"  # red: 1/8 used; green: all
    assert "12% coalesced" in "".join(bad.itertext()) and "x[i * stride]" in "".join(bad.itertext())


def test_the_access_map_widget_folds_out_the_cost_tables(cpu_client):
    from cubelab.widgets import AccessMap

    out = cpu_client.empty(4 * 64)
    m = inspect.access_map(shared_strided.launch, cpu_client, CubeCount.Static(1),
                           CubeDim.new_1d(64), BufferArg.from_raw_parts(out, 64), 2)
    w = AccessMap(m)
    model = w.model()
    assert [r["worst"] for r in model["conflicts"] if r["kind"] == "read"] == [2]
    assert model["coalescing"][0]["efficiency"] == 1.0
    assert "worst bank conflict: sm read 2-way" in w.details.value
    assert 'class="cl-cost"' in w.details.value and 'class="cost-line"' in w.drawing.value


# -- the terminal ------------------------------------------------------------------------------------
def test_cubelab_cost_builds_the_launch_from_the_signature_and_prints_the_tables(capsys):
    from pathlib import Path

    from cubelab.cli import main

    kernels = str(Path(__file__).parent / "fixtures" / "cost_kernels.py")
    assert main(["--color", "never", "cost", f"{kernels}::strided_read", "--count", "2",
                 "--cube-dim", "32", "--len", "x=256", "--arg", "stride=4"]) == 0
    out = capsys.readouterr().out
    assert "access map of `strided_read`" in out and "no race" in out
    assert "coalescing of `strided_read` (32 units per plane" in out
    row = next(line for line in out.splitlines() if line.startswith("13") and " x " in line)
    assert "25%" in row and "x[i * stride]" in row
    assert main(["--color", "never", "cost", f"{kernels}::rows_and_columns", "--cube-dim",
                 "8,8"]) == 0
    assert "50%" in capsys.readouterr().out  # the transposed read
    with pytest.raises(SystemExit, match="--arg stride=VALUE"):
        main(["--color", "never", "cost", f"{kernels}::strided_read"])
    with pytest.raises(SystemExit, match="has no argument `y`"):
        main(["--color", "never", "cost", f"{kernels}::strided_read", "--len", "y=3"])
