"""A branch few units take runs on those units alone (compaction) — with the same results.

The CPU runtime compacts a divergent branch only on large launches
(`compaction.COMPACT_MIN_LANES`); here it is forced on every branch, and the tests of the other
CPU modules must still hold — each case is one whose kernel branches per unit, and each asserts
that some branch really ran compacted (`compaction.compacted_runs`). Atomics and OOB reports are
covered by kernels that use them *inside* a branch: their plain tests have no branch to compact.
"""

import pytest

from cubelab.runtime.cpu import compaction
from tests import test_cpu_debug_print as debug_print_tests
from tests import test_cpu_oob as oob_tests
from tests import test_cpu_plane as plane_tests
from tests import test_cpu_runtime as runtime_tests
from tests import test_cpu_semantics as semantics_tests
from tests import test_cpu_trace as trace_tests

CASES = [
    semantics_tests.test_while_loops_and_break_are_per_unit,
    semantics_tests.test_return_and_continue_are_per_unit,
    semantics_tests.test_shared_memory_tree_reduction_sums_each_cube,
    semantics_tests.test_atomics_under_divergence_count_only_the_units_that_take_the_branch,
    plane_tests.test_plane_reductions_votes_and_broadcasts_cover_the_active_units_of_each_plane,
    oob_tests.test_an_oob_read_inside_a_branch_is_reported_for_the_units_that_took_it,
    trace_tests.test_a_unit_that_skips_the_branch_has_no_steps_inside_it,
    runtime_tests.test_a_barrier_reached_by_only_some_units_of_a_cube_is_a_clear_error,
    runtime_tests.test_a_barrier_skipped_by_whole_cubes_is_fine,
]


@pytest.fixture
def compacted_runs(monkeypatch):  # type: ignore[no-untyped-def]
    """Compaction forced on every masked branch; call the result for how many bodies ran
    compacted since — each case must have taken that path, or it covers nothing."""
    monkeypatch.setattr(compaction, "COMPACT_MIN_LANES", 1)
    monkeypatch.setattr(compaction, "COMPACT_RATIO", 1)
    before = compaction.compacted_runs
    return lambda: compaction.compacted_runs - before


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_compacted_branches_give_the_same_results(case, cpu_client, compacted_runs):
    case(cpu_client)
    assert compacted_runs() > 0, "no branch ran compacted: the case covers nothing here"


def test_debug_print_from_a_compacted_branch_names_the_right_units(cpu_client, capsys,
                                                                    compacted_runs):
    debug_print_tests.test_debug_print_lines_carry_unit_coordinates_and_reach_stdout(cpu_client,
                                                                                      capsys)
    assert compacted_runs() > 0


def test_without_forcing_a_small_launch_never_compacts(cpu_client):
    """The counter itself: the cases above would pass unforced too, and count nothing."""
    before = compaction.compacted_runs
    semantics_tests.test_while_loops_and_break_are_per_unit(cpu_client)
    assert compaction.compacted_runs == before
