"""The puzzles only cubelab can pose (notebooks/15_puzzles_cubelab.ipynb,
cubelab/exercises/puzzles_cubelab.py) and the machinery behind them (puzzle_kinds.py).

tests/test_exercises.py already runs every puzzle blank (unanswered), with each wrong answer and
misconception (wrong, with a hint or the program's own error) and with its solution (correct), on
both runtimes, every variant on the CPU runtime; tests/test_notebooks.py runs the notebook blank
on both runtimes and solved. Here: the set itself (how many, which categories, which only
cubelab can pose), that the notebook and the figures are what the module says, and the rules the
checks are built from — each seen failing on a real run for the reason it names.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import cubelab.exercises as ex
from cubelab.exercises import puzzles_cubelab as pc
from cubelab.exercises.puzzle_kinds import (KernelPuzzle, ProgramPuzzle, Rule, Trial,
                                            buffers_match, compiles, ir_ops)
from tests.chapters import solutions, solved_answer

ROOT = Path(__file__).resolve().parent.parent
KEYS = list(pc.ORDER)
SOLVED = solutions("15_puzzles_cubelab")


def test_twenty_four_puzzles_nineteen_only_cubelab_can_pose():
    assert len(KEYS) == len(set(KEYS)) == 24
    assert set(KEYS) == {k for k in ex.keys() if k.startswith("puzzles_cubelab.")}
    only = [k for k in KEYS if pc.INFO[k].only_cubelab]
    assert len(only) == 19
    cats = {c: [k for k in KEYS if pc.INFO[k].category == c] for c in
            ("cache", "expansion", "failure", "streams", "plane", "cost")}
    assert {c: len(v) for c, v in cats.items()} == {"cache": 4, "expansion": 4, "failure": 3,
                                                    "streams": 3, "plane": 5, "cost": 5}
    assert not [k for k in cats["plane"] if pc.INFO[k].only_cubelab]  # said honestly
    assert set(SOLVED) == set(KEYS)


def test_every_puzzle_has_three_hint_tiers_and_a_wrong_answer_or_misconception():
    for key in KEYS:
        for e in ex.all_variants(key):
            assert len(e.hints()) == 3, key
            assert e.wrong_answers(), key


def test_a_template_is_its_first_wrong_answer():
    """The answer cell as committed (with `answer = ...` set to its function or kernel) is
    rejected: the template is a first attempt, never a solution."""
    for key in KEYS:
        e = ex.get(key)
        if isinstance(e, (KernelPuzzle, ProgramPuzzle)):
            first = e.wrong[0]
            assert e.template.rstrip().endswith("answer = ...") and "FILL ME IN" in e.template
            assert f"def {first.__name__}(" in e.template, key


def _builder():
    spec = importlib.util.spec_from_file_location(
        "puzzles_cubelab_notebook", ROOT / "scripts" / "puzzles_cubelab_notebook.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_the_notebook_is_what_the_module_says():
    """Run scripts/puzzles_cubelab_notebook.py after editing a puzzle's text."""
    nbformat = pytest.importorskip("nbformat")
    built = _builder().build()
    committed = nbformat.read(ROOT / "notebooks" / "15_puzzles_cubelab.ipynb", as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in built.cells]
    assert [c.metadata.get("cubelab") for c in committed.cells] == \
        [c.metadata.get("cubelab") for c in built.cells]


def test_each_figure_is_the_access_map_the_module_draws_and_the_question_shows_it(tmp_path):
    """notebooks/figures/puzzles_cubelab/<name>.svg is `AccessMap.to_svg()` of the puzzle's
    first attempt (or of a kernel its program launches), as committed; after a change to the
    renderer, run scripts/puzzles_cubelab_notebook.py --figures."""
    committed = ROOT / "notebooks" / pc.FIGURE_DIR
    written = pc.write_all_figures(tmp_path)
    assert len(written) == len(KEYS)
    for path in written:
        assert path.read_text() == (committed / path.name).read_text(), \
            f"{path.name} is stale: run scripts/puzzles_cubelab_notebook.py --figures"
        assert path.read_text().startswith("<svg")
    for key in KEYS:
        info, e = pc.INFO[key], ex.get(key)
        shown = info.story if not isinstance(e, (KernelPuzzle, ProgramPuzzle)) else e.question
        assert f"]({pc.FIGURE_DIR}/{info.name}.svg)" in (shown + info.image)
        assert f"]({pc.FIGURE_DIR}/{info.name}.svg)" in (e.question if isinstance(
            e, (KernelPuzzle, ProgramPuzzle)) else info.image)


# -- the rules, on real runs ----------------------------------------------------------------------

def test_ir_ops_reads_op_names_from_a_listing():
    ir = ("  %v3 = arith.constant {value = 0.0} : f32\n  scf.for %v5, %v2 {guard = 0} {\n"
          "    %v28 = plane.reduce %v27 {kind = 'sum'} : f32\n  }\n  memory.store %v4, %v3\n")
    assert ir_ops(ir) == {"arith.constant": 1, "scf.for": 1, "plane.reduce": 1,
                          "memory.store": 1}


def test_a_rejection_says_what_the_run_did_never_what_passes(cpu_client):
    key = "puzzles_cubelab.cache_twice"
    r = ex.get(key).check(ex.get(key).wrong[0], cpu_client)
    assert r.status == "wrong" and "the run compiled 4 times" in r.message
    assert r.report is None and "2 compiles" not in r.hint


def test_program_errors_are_the_verdict_and_an_open_capture_window_is_closed(client):
    from cubelab.errors import CaptureError

    key = "puzzles_cubelab.capture_fresh_inputs"
    first = ex.get(key).wrong[0]  # opens a window, then a host write dooms it and raises
    r = ex.get(key).check(first, client)
    assert r.status == "wrong" and "stopped with an error" in r.message
    assert "CaptureError" in r.details and "create_from_slice" in r.details
    with pytest.raises(CaptureError, match="no capture is open"):
        client.stop_capture()  # the check closed the student's window


def test_an_answer_of_the_wrong_shape_is_not_counted_as_an_attempt(cpu_client):
    e = ex.get("puzzles_cubelab.cache_one_pipeline")
    for bad in (3, ex.get("puzzles_cubelab.cache_twice").wrong[0], lambda a, b: a):
        r = e.check(bad, cpu_client)
        assert r.status == "wrong" and r.unreadable, bad
    k = ex.get("puzzles_cubelab.cache_twice").check(lambda n: n, cpu_client)
    assert k.unreadable and "@cube(launch=True)" in k.message


def test_a_plane_puzzles_spec_is_computed_for_the_width_the_device_runs(client):
    """Puzzle 18's answer is each plane's total: 32 lanes on the CPU runtime, 8 on a 256-bit
    lavapipe. The same solution is right on both; the spec of a width is wrong on the other."""
    from cubelab.inspect.peaks import plane_width

    key = "puzzles_cubelab.shuffle_butterfly"
    p = ex.get(key)
    width = plane_width(client)
    (truth,) = p._truth(client)
    a = p.arrays["a"]
    assert np.allclose(truth["out"], np.repeat(a.reshape(-1, width).sum(axis=1), width))
    assert p.check(solved_answer(key, SOLVED[key], client), client).correct


def test_kernel_rules_run_after_the_values_and_the_limits(cpu_client):
    """A strided transpose has the right values: only the coalescing rule rejects it, saying
    which line and what efficiency the run measured at the device's plane width."""
    e = ex.get("puzzles_cubelab.transpose_tile")
    r = e.check(e.first_try, cpu_client)
    assert r.status == "wrong" and r.message.startswith("right values")
    assert "writes `out` at 25% efficiency" in r.message and "32 units per plane" in r.message


def test_an_ir_rule_reads_what_this_client_compiled(client):
    e = ex.get("puzzles_cubelab.comptime_branch")
    r = e.check(e.wrong[1], client)  # the select version
    assert r.status == "wrong" and "arith.select" in r.message


def test_rules_compose_on_a_trial_made_by_hand(cpu_client):
    from cubelab.exercises.puzzle_programs import EIGHT, ONE, arg, floats, inc

    t = Trial(cpu_client)
    y = floats(cpu_client, np.zeros(8))
    cpu_client.clear_cache()
    with cpu_client.events.record() as rec:
        with t.watch("twice"):
            inc.launch(cpu_client, ONE, EIGHT, arg(y))
            inc.launch(cpu_client, ONE, EIGHT, arg(y))
    t.events = list(rec.events)
    t.read("y", y)
    assert compiles(1).test(t) is None
    assert compiles(2, window="twice").test(t) == "the run compiled 1 time in the twice."
    assert buffers_match(lambda t: {"y": np.full(8, 2.0)}).test(t) is None
    assert "`y[0]` holds 2.0, the spec says 3.0" in buffers_match(
        lambda t: {"y": np.full(8, 3.0)}).test(t)
    assert Rule("anything", lambda t: None).test(t) is None
