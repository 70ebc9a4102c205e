"""The puzzle set (notebooks/09_puzzles.ipynb, cubelab/exercises/puzzles.py).

tests/test_exercises.py already runs every puzzle blank (unanswered), with its wrong answers and
with its solution, on both runtimes; here: that the wrong answer *is* the blank template (so
"the template fails its check" is what that test proves), and the two ways a kernel can get the
numbers right and still be wrong — no guard, or the wrong signature.
"""

from __future__ import annotations

import cubelab.exercises as ex
from cubelab.exercises.puzzles import PUZZLES
from chapters import solutions, solved_answer

KEYS = sorted(PUZZLES)


def test_the_puzzle_set_covers_the_fourteen_ideas():
    names = {k.split(".", 1)[1] for k in KEYS}
    assert names >= {"map", "zip", "guard", "map_2d", "broadcast", "blocks", "blocks_2d",
                     "shared", "pooling", "dot", "conv1d", "prefix_sum", "axis_sum", "matmul"}
    assert set(solutions("09_puzzles")) == set(KEYS)


def test_each_puzzles_wrong_answer_is_its_blank_template():
    for key in KEYS:
        p = ex.get(key)
        (template,) = p.wrong
        assert p.template.rstrip().endswith("answer = ...")
        assert f"def {template.__name__}(" in p.template and "FILL ME IN" in p.template


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
