"""Widgets' model state, without a browser (ipywidgets run on a dummy comm in plain pytest)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab.exercises import HOW_MANY_COMPILES, compile_count_exercise
from cubelab.prelude import f32
from cubelab.widgets import (BufferBoard, CacheMonitor, KernelInspector, LaunchTimeline, Quiz,
                             UiThread, monitor)
from tests.fixtures.failing_kernels import broken, copy
from tests.fixtures.kernels import add, saxpy
from tests.test_inspect_live import quiz, run_add


def test_after_the_quiz_the_cache_monitor_holds_three_compiles_and_one_hit(client):
    cm = CacheMonitor(client, live=False)
    quiz(client)
    cm.refresh()
    m = cm.model()
    assert (m["total_compiles"], m["total_hits"]) == (3, 1)
    assert [r["compiles"] for r in m["rows"]] == [1, 1, 1]
    assert 'data-compiles="3"' in cm.total.value
    assert "relu" in cm.table.value and "execution mode changed" in cm.table.value
    cm.close()


def test_the_cache_monitor_says_which_compiles_the_persistent_store_served(client):
    # the suite's store (a session temp dir) holds what the quiz compiled: after clearing the
    # in-memory cache, the same KernelIds come back from disk, and the monitor says so
    quiz(client)
    client.clear_cache()
    cm = CacheMonitor(client, live=False)
    quiz(client)
    cm.refresh()
    m = cm.model()
    assert m["total_compiles"] == 3 and m["total_loaded"] == 3
    assert [r["origin"] for r in m["rows"]] == ["loaded"] * 3
    assert 'data-loaded="3"' in cm.total.value and 'data-origin="loaded"' in cm.table.value
    assert "(1 loaded)" in cm.table.value
    cm.close()


def test_the_reset_button_zeroes_the_cache_monitor(client):
    cm = CacheMonitor(client, live=False)
    quiz(client)
    cm.reset_button.click()
    assert cm.model()["total_compiles"] == 0
    assert 'data-compiles="0"' in cm.total.value
    cm.close()


def _skip_chain(client):
    x = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    broken.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 4))
    copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 4),
                BufferArg.from_raw_parts(out, 4))
    with pytest.raises(BufferFailure):
        client.read_one(out)
    return x, out


def test_the_buffer_board_shows_the_root_cause_on_a_skipped_launchs_output(client):
    bb = BufferBoard(client, live=False)
    x, out = _skip_chain(client)
    bb.refresh()
    m = bb.model()
    assert m[x.id]["state"] == "failed" and m[x.id]["root_kernel"] == "Broken"
    assert m[out.id]["state"] == "skipped" and m[out.id]["root_kernel"] == "Broken"
    assert f'data-buffer="{out.id}" data-state="skipped"' in bb.table.value
    assert "root cause: <code>Broken</code>" in bb.table.value
    bb.close()


def test_selecting_a_buffer_shows_its_history(client):
    bb = BufferBoard(client, live=False)
    _, out = _skip_chain(client)
    bb.refresh()
    assert (f"#{out.id} skipped", out.id) in bb.picker.options
    bb.picker.value = out.id  # what a click in the list does
    assert f"buffer #{out.id}" in bb.history.value
    assert "skipped: input carried the failure of `Broken`" in bb.history.value
    bb.close()


def test_the_launch_timeline_shows_each_launchs_two_hops(client):
    lt = LaunchTimeline(client, live=False)
    quiz(client)
    lt.refresh()
    m = lt.model()
    assert [r["cache"] for r in m] == ["compile", "compile", "compile", "hit"]
    assert all(r["hop2"][-1] == "clean" for r in m)
    assert m[0]["thread"] == threading.current_thread().name
    assert 'data-status="dispatched"' in lt.table.value
    lt.close()


def test_the_kernel_inspector_previews_before_any_launch():
    ki = KernelInspector(saxpy, live=False)
    m = ki.model()
    assert m["tabs"] == ["Source", "Expanded", "IR", "Passes", "WGSL", "MSL", "CUDA", "KernelIds"]
    assert m["kernel_ids"][0].startswith("preview (not launched)")
    assert "@compute" in ki.tab_html("WGSL")
    assert ">expand<" in ki.tab_html("Expanded")  # the generated `def expand(...)`
    assert "checked-io" in ki.tab_html("Passes")


def test_the_kernel_inspector_lists_kernel_ids_as_they_compile(client):
    ki = KernelInspector(add, client, live=False)
    quiz(client)
    ki.refresh()
    compiled = [k for k in ki.kernel_ids if "compiled" in k]
    assert len(compiled) == 3
    assert ki.model()["selected"] == compiled[0]
    ki.select(compiled[1])
    assert "Unchecked" in ki.tab_html("KernelIds")
    assert "execution mode changed" in ki.tab_html("KernelIds")
    ki.close()


def test_an_inspector_opened_after_the_compiles_shows_what_a_cache_hit_ran(client):
    # a second Run All: the kernel's KernelIds are cached, its launches only hit
    quiz(client)
    ki = KernelInspector(add, client, live=False)
    for checked, relu in [(True, False), (False, False)]:
        run_add(client, checked, relu)
    client.sync()
    ki.refresh()
    cached = [k for k in ki.kernel_ids if "cached" in k]
    assert cached and ki.model()["selected"] == cached[0]
    assert "@compute" in ki.tab_html("WGSL") and "preview" not in ki.tab_html("WGSL")
    ki.close()


def test_picking_a_kernel_line_highlights_what_it_became():
    ki = KernelInspector(saxpy, live=False)
    body = saxpy.first_line + 4  # y[ABSOLUTE_POS] = ...
    ki.lines.value = body  # what choosing it in the dropdown does
    hl = ki.model()["highlight"]
    assert hl["ir"] and hl["wgsl"] and hl["msl"] and hl["cuda"]
    for tab in ("Source", "IR", "WGSL", "MSL", "CUDA"):
        assert 'class="hll"' in ki.tab_html(tab), tab
    assert f"from kernel line {body}" in ki.tab_html("WGSL")
    assert f"py{body}" in ki.tab_html("MSL")


def test_the_show_option_picks_the_inspector_tabs():
    ki = KernelInspector(saxpy, show="expanded,ir,wgsl", live=False)
    assert ki.model()["tabs"] == ["Expanded", "IR", "WGSL"]
    with pytest.raises(ValueError):
        KernelInspector(saxpy, show="ptx", live=False)


def test_the_quiz_checks_an_answer_against_a_real_run(client):
    q = Quiz(client=client)
    v = q.check(3)
    assert v.correct and v.report.compiles == 3 and v.report.hits == 1
    assert "cl-quiz-compiles'>3<" in q.result.value
    assert len(v.report.log) == 3 and "mode: Unchecked" in v.report.log[1]
    wrong = HOW_MANY_COMPILES.check(4, client)
    assert not wrong.correct and wrong.report is None  # a wrong answer holds no count


def test_an_exercise_is_declared_in_a_few_lines(client):
    from tests.test_seed000_quiz import run_add

    ex = compile_count_exercise(
        "test-two-relus", "relu twice", "How many compiles?", "run_add(relu=True) twice",
        [lambda c: run_add(c, True, True), lambda c: run_add(c, True, True)])
    v = ex.check(1, client)
    assert v.correct and v.report.hits == 1


def test_live_views_redraw_on_the_ui_thread_not_the_launch_path(client):
    ui = UiThread(hz=10, name="cubelab-ui-test")
    cm = CacheMonitor(client, ui=ui)
    painted_on: list[str] = []
    original = cm.render

    def spy() -> None:
        painted_on.append(threading.current_thread().name)
        original()

    cm.render = spy  # type: ignore[method-assign]
    quiz(client)
    deadline = time.monotonic() + 10
    while cm.model()["total_compiles"] != 3 or 'data-compiles="3"' not in cm.total.value:
        assert time.monotonic() < deadline, "the UI thread never redrew"
        time.sleep(0.02)
    assert painted_on and set(painted_on) == {"cubelab-ui-test"}
    cm.close()
    ui.stop()


def test_many_events_coalesce_into_few_redraws(client):
    ui = UiThread(hz=10, name="cubelab-ui-coalesce")
    cm = CacheMonitor(client, ui=ui)
    for _ in range(3):
        quiz(client)
    client.sync()
    deadline = time.monotonic() + 10
    while 'data-compiles="9"' not in cm.total.value:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # the view may have redrawn between the last compile and the last hit's tally (published
    # before sync returned): fold what is queued before counting
    cm.stats.snapshot()
    events = cm.stats.version  # events folded in: compiles, hits, cache clears
    assert events >= 15 and ui.redraws < events
    cm.close()
    ui.stop()


def test_monitor_bundles_the_cache_buffer_and_launch_views(client):
    box = monitor(client, live=False)
    kinds = [type(v).__name__ for v in box.views]
    assert kinds == ["CacheMonitor", "BufferBoard", "LaunchTimeline"]
    for v in box.views:
        v.close()


def _saxpy_trace(client, units=(5, 7)):
    from cubelab import inspect as I

    x = client.create_from_slice(f32.as_bytes(np.arange(32, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(32, dtype=np.float32)))
    return I.trace(saxpy.launch[f32], client, CubeCount.Static(2), CubeDim.new_1d(4), 4, 2.0,
                   BufferArg.from_raw_parts(x, 32), BufferArg.from_raw_parts(y, 32),
                   units=list(units))


def test_the_stepper_walks_a_trace_and_highlights_the_current_op(client):
    from cubelab.widgets import Stepper

    st = Stepper(_saxpy_trace(client))
    assert st.model()["position"] == 0 and st.back_button.disabled
    guard = next(i for i, s in enumerate(st.trace.steps_of(5)) if s.op == "scf.if")
    st.goto(guard)
    m = st.model()
    assert m["op"] == "scf.if" and m["value"] is True and m["line"] == saxpy.first_line + 3
    assert "scf.if" in st.trace.ir.splitlines()[m["ir_line"] - 1]
    assert 'class="hll"' in st.ir.value and 'class="hll"' in st.source.value
    st.forward_button.click()
    assert st.model()["position"] == guard + 1
    st.back_button.click()
    assert st.model()["position"] == guard


def test_the_stepper_shows_every_traced_units_value_for_the_same_op(client):
    from cubelab.widgets import Stepper

    st = Stepper(_saxpy_trace(client, units=(5, 7)))
    absolute_pos = next(i for i, s in enumerate(st.trace.steps_of(5)) if s.note == "ABSOLUTE_POS")
    st.goto(absolute_pos)
    assert st.model()["others"] == {5: 5, 7: 7}
    st.unit.value = 7  # what picking another unit in the dropdown does
    assert st.model()["unit"] == 7 and st.model()["value"] == 7
    assert "unit 7" in st.values.value


def test_a_displayed_view_without_a_name_stays_alive_with_its_widget(client):
    import gc
    import weakref

    view = LaunchTimeline(client, live=False)
    ref, root = weakref.ref(view), view.widget
    del view
    gc.collect()
    assert ref() is not None and root._cubelab_view is ref()
    ref().close()


def test_the_seed_001_exercise_counts_skipped_launches_from_a_real_run(client):
    from cubelab.exercises import HOW_MANY_SKIPPED

    v = HOW_MANY_SKIPPED.check(2, client)
    assert v.correct, v.message
    assert v.report.failed == ["Broken"] and v.report.skipped == ["Copy", "Copy"]
    assert v.report.outputs == [["a", "d"]]  # `fill` repaired a; d was copied from it
    q = Quiz(HOW_MANY_SKIPPED, client=client)
    assert not q.check(3).correct
    assert "Copy, Copy" not in q.result.value  # a wrong answer is not shown the run's counts
    assert q.check(2).correct
    assert "cl-quiz-skipped'>Copy, Copy<" in q.result.value


def test_counts_are_singular_for_one_and_times_are_clock_times_that_never_go_stale(client):
    import re

    cm = CacheMonitor(client, live=False)
    x = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    client.clear_cache()
    cm.reset()
    for _ in range(2):
        copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                    BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(y, 4))
    client.sync()
    cm.refresh()
    assert ">compile</div>" in cm.total.value and "1 cache hit<" in cm.total.value
    assert "s ago" not in cm.table.value  # "0.0 s ago" was true for a moment, then stale
    assert re.search(r"<td class='cl-nowrap'>\d\d:\d\d:\d\d</td>", cm.table.value)
    cm.close()


def test_rows_of_one_kernel_say_which_kernel_id_field_tells_them_apart(client):
    cm = CacheMonitor(client, live=False)
    client.clear_cache()
    cm.reset()
    quiz(client)
    cm.refresh()
    table = cm.table.value
    for key in ("Checked · relu: false", "Unchecked · relu: false", "Checked · relu: true"):
        assert f"<div class='cl-key'>{key}</div>" in table
    cm.close()


def test_errors_on_the_board_and_timeline_are_whole_never_cut_mid_word(client):
    bb, tl = BufferBoard(client, live=False), LaunchTimeline(client, live=False)
    x, _ = _skip_chain(client)
    bb.refresh()
    tl.refresh()
    error = bb.model()[x.id]["error"]
    hint = next(ln for ln in error.splitlines() if "hint:" in ln).strip()
    assert len(error) > 300 or hint  # the hint sat past the old 300-character cut
    import html as _html

    assert _html.escape(hint) in bb.table.value
    assert _html.escape(hint) in tl.table.value
    bb.close()
    tl.close()


def test_the_quiz_renders_its_markdown_code_spans_as_code():
    q = Quiz(HOW_MANY_COMPILES)
    head = q.widget.children[0].value
    assert "<code>run_add(client, checked, relu)</code>" in head and "`" not in head


def test_the_steppers_ir_pane_is_a_window_that_follows_the_current_op(client):
    from cubelab.widgets import Stepper

    st = Stepper(_saxpy_trace(client))
    n_ir = len(st.trace.ir.splitlines())
    assert n_ir > Stepper.IR_WINDOW  # saxpy's IR is longer than the pane
    for position in (0, len(st.trace) // 2, len(st.trace) - 1):
        st.goto(position)
        shown = st.ir.value.count('data-line="')
        assert shown <= Stepper.IR_WINDOW
        assert st.ir.value.count('class="hll"') == 1, position  # the current op is in view


def test_a_gated_launch_never_reads_queued_and_the_header_names_only_real_threads(client):
    timeline = LaunchTimeline(client, last=4, live=False)
    x = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))
    args = (BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    copy.launch(client, CubeCount.Static(0), CubeDim.new_1d(4), *args)  # gate 1: zero count
    copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), *args)
    client.sync()
    timeline.refresh()
    page = timeline.table.value
    gated = [r for r in timeline.model() if r["gated"]]
    assert gated and "never handed off" in page and "queued" not in page
    assert "(, " not in page and "(cubelab-" in page
    timeline.close()
