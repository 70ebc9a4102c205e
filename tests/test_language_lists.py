"""Lists of runtime values at a comptime length — CubeCL's `Sequence` (its `sequence.rs` tests:
push 1 and 4 then sum over the sequence gives 5; push 2 and 4 then `seq[0] + seq[1]` gives 6):
`vals = []` + `vals.append(x)`, `[f32(0.0)] * n`, `vals[k]` and `vals[k] = y` with a comptime
k (also inside runtime branches and loops), `for v in vals` (unrolled), `len(vals)`."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.errors import KernelSourceError
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403
from tests.test_language_semantics import read, up, zeros


@cube(launch=True)
def sequence_sum(out: SliceMut[f32]):
    if UNIT_POS == 0:
        seq = []
        seq.append(f32(1.0))
        seq.append(f32(4.0))
        for value in seq:
            out[0] += value
        pair = []
        pair.append(f32(2.0))
        pair.push(f32(4.0))  # CubeCL's name
        out[1] += pair[0] + pair[1]
        out[2] = f32(len(seq) + pair.len())


def test_cubecl_sequence_for_loop_and_index(client):
    out = zeros(client, 3)
    sequence_sum.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), out)
    np.testing.assert_array_equal(read(client, out), [5.0, 6.0, 4.0])


@cube(launch=True)
def four_accumulators(x: Slice[f32], out: SliceMut[f32], n: u32):
    """Four partial sums per unit (a reduction's classic register tile), kept in a list."""
    acc = [f32(0.0)] * 4
    for j in range(n):  # a runtime loop: the items are locals, so the sums survive it
        for k in unroll(range(4)):
            acc[k] += x[4 * j + k]
    if n > 2:  # assigning an item inside a runtime branch
        acc[3] = acc[3] * 10.0
    total = f32(0.0)
    for a in acc:
        total += a
    for k in unroll(range(4)):
        out[k] = acc[k]
    out[4] = total
    out[5] = acc[-1]


@pytest.mark.parametrize("n", [2, 3])
def test_a_list_of_accumulators_survives_runtime_loops_and_branches(client, n):
    xs = np.arange(12, dtype=np.float32)
    out = zeros(client, 6)
    four_accumulators.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), up(client, xs), out,
                             n)
    sums = xs[: 4 * n].reshape(n, 4).sum(axis=0)
    if n > 2:
        sums[3] *= 10
    np.testing.assert_array_equal(read(client, out), [*sums, sums.sum(), sums[3]])


@cube(launch=True)
def collect(x: Slice[i32], out: SliceMut[i32], taps: Comptime[int]):
    i = UNIT_POS
    window = []
    for k in unroll(range(taps)):
        window.append(x[i + k])
    weights = [1, 2, 3]  # Python values stay Python (constants in the IR)
    acc = i32(0)
    for k in unroll(range(len(window))):
        acc += window[k] * weights[k % 3]
    window[0] = i32(100)
    out[i] = acc + window[0] + window[1:][0]


def test_append_in_an_unrolled_loop_and_python_items_stay_comptime(client):
    xs = np.arange(8, dtype=np.int32)
    out = zeros(client, 4, i32)
    collect.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), up(client, xs), out, 3)
    want = [xs[i] * 1 + xs[i + 1] * 2 + xs[i + 2] * 3 + 100 + xs[i + 1] for i in range(4)]
    np.testing.assert_array_equal(read(client, out, i32), want)
    # each runtime item is a local of its own: three appends, three var.declare
    ops = [op.name for op in instance(collect, cube_dim=CubeDim.new_1d(4),
                                      comptime=(3,)).define().walk()]
    assert ops.count("var.declare") == 1 + 3  # acc, then the window's items


@cube(launch=True)
def runtime_index(x: Slice[f32], out: SliceMut[f32]):
    vals = [x[0], x[1]]
    out[0] = vals[UNIT_POS]


@cube(launch=True)
def append_in_branch(x: Slice[f32], out: SliceMut[f32]):
    vals = []
    if x[0] > 0.0:
        vals.append(x[0])
    out[0] = f32(len(vals))


@cube(launch=True)
def python_item_in_branch(x: Slice[f32], out: SliceMut[f32]):
    acc = [0.0] * 2
    if x[0] > 0.0:
        acc[0] = x[0]
    out[0] = acc[0]


@pytest.mark.parametrize("kernel,message,hint,caret", [
    (runtime_index, "a runtime index into the list `vals`", "use an Array[T](n)",
     "vals[UNIT_POS]"),
    (append_in_branch, "`vals.append(...)` inside a runtime branch or loop",
     "append outside the runtime", "vals.append(x[0])"),
    (python_item_in_branch, "`acc[0]` holds the Python value 0.0",
     "`acc = [f32(...)] * n`", "acc[0] = x[0]"),
])
def test_list_misuses_are_refused_with_a_caret(kernel, message, hint, caret):
    with pytest.raises(KernelSourceError) as info:
        instance(kernel, cube_dim=CubeDim.new_1d(1)).define()
    text = str(info.value)
    assert message in text and hint in text, text
    line = next(ln for ln in text.splitlines() if caret in ln)
    caret_line = text.splitlines()[text.splitlines().index(line) + 1]
    assert caret_line.index("^") == line.index(caret), text


@cube(launch=True)
def comptime_over_a_list(out: SliceMut[f32]):
    weights = [0.5, 0.25, 0.25]
    scale = comptime(sum(weights) * weights[0] * len(weights))  # the list as Python sees it
    out[0] = f32(scale)


def test_a_list_of_python_values_still_works_inside_comptime(client):
    out = zeros(client, 1)
    comptime_over_a_list.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), out)
    assert read(client, out).tolist() == [1.5]
