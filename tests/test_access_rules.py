"""The access rules on hand-made records: races, uninitialised shared reads, scores, the SVG.

These pin the rules themselves (`cubelab.runtime.cpu.access`), independent of any runtime; the
tests in `test_access_map.py` check that real launches produce the records these rules judge.
"""

import xml.etree.ElementTree as ET

from cubelab.inspect.access_map import AccessMap
from cubelab.runtime.cpu.access import (
    Access,
    ArrayInfo,
    OobRecord,
    find_races,
    find_uninitialised,
    unit_scores,
)

SVG = "{http://www.w3.org/2000/svg}"


def acc(unit, kind, index, array="sm", phase=0, cube=0, line=10, space="shared", seq=0):
    return Access(unit, cube, phase, array, index, kind, 1.0, line, space, unit % 4, seq)


def test_two_units_on_one_shared_element_in_one_phase_with_a_write_race():
    races, total = find_races([acc(0, "write", 3, line=11, seq=0),
                               acc(1, "read", 3, line=12, seq=1)])
    assert total == 1
    (r,) = races
    assert (r.array, r.index, r.units, r.lines, r.phase) == ("sm", 3, (0, 1), (11, 12), 0)
    assert "unit 0 writes" in str(r) and "unit 1 reads" in str(r)


def test_a_barrier_between_the_write_and_the_read_orders_them():
    assert find_races([acc(0, "write", 3, phase=0), acc(1, "read", 3, phase=1)]) == ([], 0)


def test_reads_alone_never_race_and_a_unit_never_races_with_itself():
    assert find_races([acc(0, "read", 3), acc(1, "read", 3), acc(2, "read", 3)]) == ([], 0)
    assert find_races([acc(0, "write", 3, seq=0), acc(0, "read", 3, seq=1),
                       acc(0, "write", 3, seq=2)]) == ([], 0)


def test_atomics_on_one_element_do_not_race_but_an_atomic_and_a_plain_write_do():
    hist = [acc(u, "atomic", 2, array="hist", space="global") for u in range(8)]
    assert find_races(hist) == ([], 0)
    (r,), _ = find_races(hist + [acc(9, "write", 2, array="hist", space="global", seq=5)])
    assert r.units[0] == 9 and r.kinds == ("write", "atomic")


def test_shared_arrays_of_different_cubes_are_different_memory():
    assert find_races([acc(0, "write", 1, cube=0), acc(4, "write", 1, cube=1)]) == ([], 0)


def test_units_of_different_cubes_race_on_a_global_element_whatever_their_phase():
    a = acc(0, "write", 0, array="out", space="global", cube=0, phase=2)
    b = acc(4, "write", 0, array="out", space="global", cube=1, phase=0)
    (r,), total = find_races([a, b])
    assert total == 1 and r.cubes == (0, 1) and "no barrier orders cubes" in str(r)


def test_one_race_is_reported_per_element_and_phase():
    recs = [acc(u, "write", 0, seq=u) for u in range(4)] + \
           [acc(u, "write", 0, phase=1, seq=10 + u) for u in range(4)]
    races, total = find_races(recs)
    assert total == 2 and [r.phase for r in races] == [0, 1]


def test_a_shared_read_of_an_element_nobody_wrote_before_is_uninitialised():
    recs = [acc(0, "write", 0, seq=0), acc(0, "read", 0, seq=1),  # own earlier write: fine
            acc(1, "read", 1, seq=2), acc(1, "write", 1, seq=3),  # read before its own write
            acc(2, "write", 2, phase=0, seq=4), acc(3, "read", 2, phase=1, seq=5),  # ordered
            acc(3, "read", 3, phase=1, seq=6)]  # nobody ever wrote sm[3]
    assert [(a.unit, a.index) for a in find_uninitialised(recs)] == [(1, 1), (3, 3)]


def test_global_reads_are_never_uninitialised():
    assert find_uninitialised([acc(0, "read", 0, array="x", space="global")]) == []


def test_scores_count_reads_and_writes_per_unit_with_max_and_total():
    recs = [acc(0, "read", 0, array="x", space="global"), acc(0, "read", 1, array="x",
                                                             space="global"),
            acc(0, "write", 0), acc(1, "read", 0), acc(1, "atomic", 0, array="h",
                                                       space="global")]
    s = unit_scores(recs, [(0, 0), (1, 0), (2, 0)])
    assert (s[0].global_reads, s[0].shared_writes, s[0].shared_reads) == (2, 1, 0)
    assert (s[1].shared_reads, s[1].global_writes, s[1].atomics) == (1, 1, 1)
    assert s[2].global_reads == 0  # a unit that touched nothing is still in the table
    assert s.max()["global_reads"] == 2 and s.total()["shared_reads"] == 1
    assert "total" in s.table()


def cells(svg):
    root = ET.fromstring(svg)
    return [e for e in root.iter(f"{SVG}rect") if "cell" in e.get("class", "").split()]


def test_the_svg_parses_as_xml_and_has_one_cell_per_element_per_phase():
    recs = [acc(u, "write", u, seq=u) for u in range(4)] + \
           [acc(u, "read", (u + 1) % 4, phase=1, seq=10 + u) for u in range(4)] + \
           [acc(u, "read", u, array="x", space="global", seq=20 + u) for u in range(4)]
    m = AccessMap.from_records(recs, {"x": ArrayInfo("x", "global", 6),
                                      "sm": ArrayInfo("sm", "shared", 4)})
    assert m.phases == 2 and not m.races
    cs = cells(m.to_svg())
    # x (6 cells) and sm (4 cells) in each of the 2 phases
    assert len(cs) == 2 * (6 + 4)
    phase1_sm = {int(c.get("data-index")): c for c in cs
                 if c.get("data-array") == "sm" and c.get("data-phase") == "1"}
    assert all("read" in c.get("class") for c in phase1_sm.values())
    assert "unit 0" in phase1_sm[1].find(f"{SVG}title").text  # who touched it, on hover


def test_racing_cells_and_out_of_bounds_cells_are_marked():
    recs = [acc(0, "write", 1, seq=0), acc(1, "read", 1, seq=1)]
    oob = [OobRecord("x", 9, 4, 2, 12, "zero", "read")]
    m = AccessMap.from_records(recs + [acc(2, "read", 0, array="x", space="global")],
                               {"x": ArrayInfo("x", "global", 4),
                                "sm": ArrayInfo("sm", "shared", 2)}, oob=oob)
    svg = m.to_svg()
    cs = cells(svg)
    (race,) = [c for c in cs if "race" in c.get("class").split()]
    assert race.get("data-array") == "sm" and race.get("data-index") == "1"
    (out,) = [c for c in cs if "oob" in c.get("class").split()]
    assert out.get("data-index") == "9" and out.get("data-array") == "x"
    assert "read as 0" in str(m.oob[0]) and "race on sm[1]" in m.report()


def test_a_chosen_unit_is_outlined_and_the_rest_faded():
    recs = [acc(u, "write", u, seq=u) for u in range(4)]
    m = AccessMap.from_records(recs)
    cs = cells(m.to_svg(unit=2))
    (sel,) = [c for c in cs if "selected" in c.get("class").split()]
    assert sel.get("data-index") == "2"
    assert all(c.get("opacity") == "0.35" for c in cs if c is not sel)


def test_a_long_array_is_summarised_in_bins_not_drawn_cell_by_cell():
    recs = [acc(u, "read", u * 7, array="x", space="global", seq=u) for u in range(512)]
    m = AccessMap.from_records(recs, {"x": ArrayInfo("x", "global", 4096)})
    root = ET.fromstring(m.to_svg())
    assert not cells(m.to_svg())
    bins = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "bin"]
    assert len(bins) == 64


def test_a_2d_tensor_is_drawn_as_a_grid():
    recs = [acc(u, "read", u, array="t", space="global", seq=u) for u in range(12)]
    m = AccessMap.from_records(recs, {"t": ArrayInfo("t", "global", 12, (3, 4))})
    cs = cells(m.to_svg())
    ys = sorted({float(c.get("y")) for c in cs})
    xs = sorted({float(c.get("x")) for c in cs})
    assert len(ys) == 3 and len(xs) == 4
