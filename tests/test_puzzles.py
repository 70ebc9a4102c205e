"""The puzzle set (notebooks/09_puzzles.ipynb, cubelab/exercises/puzzles.py).

tests/test_exercises.py already runs every puzzle blank (unanswered), with its wrong answers and
with its solution, on both runtimes; here: that the wrong answer *is* the blank template (so
"the template fails its check" is what that test proves), and the ways a kernel can get the
numbers right and still not be accepted — no guard, the wrong signature, or more reads than the
puzzle's limits allow.
"""

from __future__ import annotations

import cubelab.exercises as ex
from cubelab.exercises.puzzles import PUZZLES
from tests.chapters import solutions, solved_answer

KEYS = sorted(PUZZLES)


def test_the_puzzle_set_covers_the_fourteen_ideas():
    names = {k.split(".", 1)[1] for k in KEYS}
    assert names >= {"map", "zip", "guard", "map_2d", "broadcast", "blocks", "blocks_2d",
                     "shared", "pooling", "dot", "conv1d", "prefix_sum", "axis_sum", "matmul"}
    assert set(solutions("09_puzzles")) == set(KEYS)


def test_each_puzzles_wrong_answers_are_its_blank_template_and_its_first_attempt():
    for key in KEYS:
        p = ex.get(key)
        template, *first = p.wrong
        assert p.template.rstrip().endswith("answer = ...")
        assert f"def {template.__name__}(" in p.template and "FILL ME IN" in p.template
        assert first == ([] if key in ("puzzles.map", "puzzles.zip") else [p.first_try])


def test_each_puzzle_has_three_hint_tiers_and_the_last_is_not_its_solution():
    for key in KEYS:
        p = ex.get(key)
        nudge, concept, worked = p.hints()
        body = [ln.strip() for ln in solutions("09_puzzles")[key].splitlines()
                if ln.strip() and not ln.strip().startswith(("@cube", "def ", "answer", "#"))]
        # the worked step is about another example: no line of the solution's body is in it
        assert not [ln for ln in body if len(ln) > 12 and ln in worked], (key, worked)


def test_each_puzzles_figure_is_its_first_attempts_access_map_as_committed(tmp_path):
    """notebooks/figures/puzzles/<name>.svg is what `write_figures` draws today, and the caption
    says what that map shows. After a change to the renderer, regenerate them with
    `python -c "from cubelab.exercises.puzzles import write_figures; write_figures('notebooks/figures/puzzles')"`."""
    from pathlib import Path

    from cubelab.exercises.puzzles import write_figures

    committed = Path(__file__).resolve().parents[1] / "notebooks" / "figures" / "puzzles"
    for path in write_figures(tmp_path):
        assert path.read_text() == (committed / path.name).read_text(), \
            f"{path.name} is stale: regenerate the puzzles' figures"
    for key in KEYS:
        p = ex.get(key)
        assert p.shows == p.figure_caption()
        assert f"](figures/puzzles/{key.split('.')[1]}.svg)" in p.question


WRONG_INDEX = """
@cube(launch=True)
def add_ten_blocks(a: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        out[i] = a[UNIT_POS] + f32(10.0)

answer = add_ten_blocks
"""


def test_a_wrong_kernel_is_told_which_unit_wrote_the_item_that_came_out_wrong(cpu_client):
    r = ex.get("puzzles.blocks").check(solved_answer("blocks", WRONG_INDEX, cpu_client),
                                       cpu_client)
    assert r.status == "wrong" and "differ from the spec" in r.message
    assert "out[4] = 10.0, the spec says 14.0 — written by unit 4" in r.details, r.details
    assert "which read a[0]" in r.details


UNGUARDED = """
@cube(launch=True)
def add_ten_guarded(a: Slice[f32], out: SliceMut[f32]):
    i = UNIT_POS
    out[i] = a[i] + f32(10.0)

answer = add_ten_guarded
"""


def test_an_unguarded_kernel_with_the_right_values_is_rejected_by_the_oob_report(client):
    """On wgpu the read past the end gives 0 and the write is dropped: the values are right."""
    r = ex.get("puzzles.guard").check(solved_answer("guard", UNGUARDED, client), client)
    assert r.status == "wrong"
    assert "unit 5 reads a[5] but a has 5 items" in r.details


def test_a_kernel_with_the_wrong_signature_is_told_so(client):
    r = ex.get("puzzles.zip").check(solved_answer("zip", UNGUARDED, client), client)
    assert r.status == "wrong" and "takes 2 parameters" in r.message


NAIVE_POOLING = """
@cube(launch=True)
def window3(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](8)
    i = UNIT_POS
    acc = a[i]
    if i >= 1:
        acc += a[i - 1]
    if i >= 2:
        acc += a[i - 2]
    out[i] = acc

answer = window3
"""

NAIVE_MATMUL = """
@cube(launch=True)
def matmul(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], size: u32):
    row = ABSOLUTE_POS_Y
    col = ABSOLUTE_POS_X
    acc = f32(0.0)
    for k in range(size):
        acc += a[row * size + k] * b[k * size + col]
    out[row * size + col] = acc

answer = matmul
"""


def test_right_values_from_too_many_global_reads_are_not_accepted_yet(client):
    """The spec check alone would pass these; the access counts (per unit, from the access map
    on the CPU runtime) hold the busiest unit against the puzzle's limits."""
    r = ex.get("puzzles.pooling").check(solved_answer("pooling", NAIVE_POOLING, client), client)
    assert r.status == "wrong"
    assert "unit 2 makes 3 global reads where the puzzle allows 1" in r.message
    assert "shared memory" in r.hint
    r = ex.get("puzzles.matmul").check(solved_answer("matmul", NAIVE_MATMUL, client), client)
    assert r.status == "wrong" and "16 global reads where the puzzle allows 4" in r.message


def test_an_accepted_puzzle_shows_the_busiest_units_counts(cpu_client):
    key = "puzzles.matmul"
    r = ex.get(key).check(solved_answer(key, solutions("09_puzzles")[key], cpu_client),
                          cpu_client)
    assert r.correct
    assert "global reads        4       4" in r.details


NO_BARRIER = """
@cube(launch=True)
def rotate_add(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](4)
    u = UNIT_POS
    tile[u] = a[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = tile[u] + tile[(u + 1) % 4]

answer = rotate_add
"""


def test_a_missing_sync_cube_is_a_race_even_when_the_values_come_out_right(client):
    """The CPU runtime runs a cube's units in lockstep, so the values are right there (and often
    on lavapipe); the access map sees the unordered write and read."""
    r = ex.get("puzzles.shared").check(solved_answer("shared", NO_BARRIER, client), client)
    assert r.status == "wrong"
    if client.name().startswith("cpu") or "differ from the spec" not in r.message:
        assert "a race" in r.message and "sync_cube()" in r.hint, r
