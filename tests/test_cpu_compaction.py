"""A branch few units take runs on those units alone (compaction) — with the same results.

The CPU runtime compacts a divergent branch only on large launches
(`compaction.COMPACT_MIN_LANES`); here it is forced on every branch, and the tests of the other
CPU modules must still hold.
"""

import pytest

import test_cpu_debug_print as debug_print_tests
import test_cpu_oob as oob_tests
import test_cpu_plane as plane_tests
import test_cpu_runtime as runtime_tests
import test_cpu_semantics as semantics_tests
import test_cpu_trace as trace_tests
from cubelab.runtime.cpu import compaction

CASES = [
    semantics_tests.test_while_loops_and_break_are_per_unit,
    semantics_tests.test_return_and_continue_are_per_unit,
    semantics_tests.test_shared_memory_tree_reduction_sums_each_cube,
    semantics_tests.test_atomic_fetch_add_hands_every_unit_a_distinct_old_value,
    plane_tests.test_plane_reductions_votes_and_broadcasts_cover_the_active_units_of_each_plane,
    oob_tests.test_oob_report_mode_names_units_6_and_7_buffers_x_and_y_and_the_kernel_line,
    trace_tests.test_a_unit_that_skips_the_branch_has_no_steps_inside_it,
    runtime_tests.test_a_barrier_reached_by_only_some_units_of_a_cube_is_a_clear_error,
    runtime_tests.test_a_barrier_skipped_by_whole_cubes_is_fine,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_compacted_branches_give_the_same_results(case, cpu_client, monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_MIN_LANES", 1)
    monkeypatch.setattr(compaction, "COMPACT_RATIO", 1)
    case(cpu_client)


def test_debug_print_from_a_compacted_branch_names_the_right_units(cpu_client, capsys,
                                                                    monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_MIN_LANES", 1)
    monkeypatch.setattr(compaction, "COMPACT_RATIO", 1)
    debug_print_tests.test_debug_print_lines_carry_unit_coordinates_and_reach_stdout(cpu_client,
                                                                                      capsys)
