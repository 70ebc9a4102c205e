"""CubeCL parity: language constructs — short-circuit logic, sequences, slices, local arrays,
assignment, vector values — with the inputs and expected outputs of CubeCL's
`crates/cubecl-core/src/runtime_tests/` `short_circuit.rs`, `sequence.rs`, `slice.rs`,
`index.rs`, `assign.rs` and `vector.rs`, on both runtimes.

Where Python spells a construct differently, the test says so: CubeCL's `Sequence` is a Python
list built at expansion (`seq = []`, `seq.push(x)`), `terminate!()` is `return`, `&input[2..4]` is `x[2:4]`,
`if c { a } else { b }` is `a if c else b`.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403
from tests.parity import buf, empty, read

F = Float.generic("F")
N = Size.generic("N")
ONE, UNIT = CubeCount.Static(1), CubeDim.new_1d(1)


# -- short_circuit.rs --------------------------------------------------------------------------
@cube
def mark_side_channel(side_channel: Array[u32]) -> bool:
    side_channel[0] = u32(1)
    return False


@cube(launch=True)
def short_circuit_or(output: SliceMut[u32], left_input: u32):
    if UNIT_POS == 0:
        side_channel = Array[u32](1)
        side_channel[0] = u32(0)
        flag = left_input != 0 or mark_side_channel(side_channel)
        if flag:
            output[0] = side_channel[0]
        else:
            output[0] = u32(999)


@cube(launch=True)
def short_circuit_and(output: SliceMut[u32], left_input: u32):
    if UNIT_POS == 0:
        side_channel = Array[u32](1)
        side_channel[0] = u32(0)
        flag = left_input != 0 and mark_side_channel(side_channel)
        if not flag:
            output[0] = side_channel[0]
        else:
            output[0] = u32(999)


def test_or_does_not_run_its_right_side_when_the_left_is_true(client):
    out = empty(client, 1, np.uint32)
    short_circuit_or.launch(client, ONE, UNIT, out, 1)
    assert read(client, out, np.uint32)[0] == 0, "`or` did not short-circuit"


def test_and_does_not_run_its_right_side_when_the_left_is_false(client):
    out = empty(client, 1, np.uint32)
    short_circuit_and.launch(client, ONE, UNIT, out, 0)
    assert read(client, out, np.uint32)[0] == 0, "`and` did not short-circuit"


@cube(launch=True)
def pure_or(output: SliceMut[u32], a: u32, b: u32):
    if UNIT_POS == 0:
        flag = a != 0 or b != 0
        if flag:
            output[0] = u32(1)
        else:
            output[0] = u32(0)


@cube(launch=True)
def pure_and(output: SliceMut[u32], a: u32, b: u32):
    if UNIT_POS == 0:
        flag = a != 0 and b != 0
        if flag:
            output[0] = u32(1)
        else:
            output[0] = u32(0)


@pytest.mark.parametrize("kernel, table", [
    (pure_or, {(0, 0): 0, (0, 7): 1, (5, 0): 1, (5, 7): 1}),
    (pure_and, {(0, 0): 0, (0, 7): 0, (5, 0): 0, (5, 7): 1})], ids=["or", "and"])
def test_pure_and_or_give_the_logical_result(client, kernel, table):
    for (a, b), want in table.items():
        out = empty(client, 1, np.uint32)
        kernel.launch(client, ONE, UNIT, out, a, b)
        assert read(client, out, np.uint32)[0] == want, (a, b)


# -- sequence.rs -------------------------------------------------------------------------------
@cube(launch=True)
def sequence_for_loop(output: SliceMut[F]):
    if UNIT_POS != 0:
        return
    sequence = []
    sequence.push(F.new(1.0))
    sequence.push(F.new(4.0))
    for value in sequence:
        output[0] += value


@cube(launch=True)
def sequence_index(output: SliceMut[F]):
    if UNIT_POS != 0:
        return
    sequence = []
    sequence.push(F.new(2.0))
    sequence.push(F.new(4.0))
    output[0] += sequence[0]
    output[0] += sequence[1]


@pytest.mark.parametrize("kernel, want", [(sequence_for_loop, 5.0), (sequence_index, 6.0)],
                         ids=["for_loop", "index"])
def test_a_sequence_of_runtime_values_iterates_and_indexes(client, kernel, want):
    out = buf(client, [0.0])
    kernel.launch[f32](client, ONE, UNIT, out)
    assert read(client, out)[0] == want


# -- slice.rs ----------------------------------------------------------------------------------
@cube(launch=True)
def slice_select(input: Slice[F], output: SliceMut[F]):
    if UNIT_POS == 0:
        part = input[2:3]
        output[0] = part[0]


@cube(launch=True)
def slice_len(input: Slice[F], output: SliceMut[u32]):
    if UNIT_POS == 0:
        part = input[2:4]
        output[0] = part.len()


@cube(launch=True)
def slice_for(input: Slice[F], output: SliceMut[F]):
    if UNIT_POS == 0:
        total = F.new(0.0)
        for item in input[2:4]:
            total += item
        output[0] = total


@cube(launch=True)
def slice_mut_assign(input: Slice[F], output: SliceMut[F]):
    if UNIT_POS == 0:
        part = output[2:3]
        part[0] = input[0]


@cube(launch=True)
def slice_mut_len(output: SliceMut[u32]):
    if UNIT_POS == 0:
        part = output[:2]
        output[0] = part.len()


def test_a_slice_reads_from_its_start_and_has_its_own_len(client):
    five = [0.0, 1.0, 2.0, 3.0, 4.0]
    out = empty(client, 1)
    slice_select.launch[f32](client, ONE, UNIT, buf(client, five), out)
    assert read(client, out)[0] == 2.0
    n = empty(client, 1, np.uint32)
    slice_len.launch[f32](client, ONE, UNIT, buf(client, five), n)
    assert read(client, n, np.uint32).tolist() == [2]
    total = buf(client, [0.0])
    slice_for.launch[f32](client, ONE, UNIT, buf(client, five), total)
    assert read(client, total)[0] == 5.0


def test_a_mutable_slice_writes_through_to_its_buffer(client):
    out = buf(client, [0.0, 1.0, 2.0, 3.0, 4.0])
    slice_mut_assign.launch[f32](client, ONE, UNIT, buf(client, [15.0]), out)
    assert read(client, out).tolist() == [0.0, 1.0, 15.0, 3.0, 4.0]
    n = empty(client, 4, np.uint32)
    slice_mut_len.launch(client, ONE, UNIT, n)
    assert read(client, n, np.uint32)[0] == 2


# -- index.rs ----------------------------------------------------------------------------------
@cube(launch=True)
def shuffle_kernel(orders: SliceMut[u32]):
    if UNIT_POS < 2:
        order = Array[u32](2)
        order[0] = u32(0)
        order[1] = u32(1)
        i = ABSOLUTE_POS & 1
        tmp = order[i]
        order[i] = u32(9)
        order[i ^ 1] = tmp
        base = ABSOLUTE_POS * 2
        orders[base] = order[0]
        orders[base + 1] = order[1]


def test_a_local_array_indexed_at_runtime_swaps_its_items(client):
    # index.rs test_kernel_shuffle (CubeCL's regression test for an invalid copy transform)
    out = empty(client, 4, np.uint32)
    shuffle_kernel.launch(client, ONE, CubeDim.new_1d(2), out)
    assert read(client, out, np.uint32).tolist() == [9, 0, 1, 9]


@cube(launch=True)
def destructurable_kernel(orders: SliceMut[u32]):
    if UNIT_POS == 0:
        order = Array[u32](4)
        order[0] = orders[0]
        order[1] = orders[1]
        order[2] = orders[2]
        order[3] = orders[3]
        for i in unroll(range(4)):
            order[i] += order[4 - i - 1] + u32(i)
        for i in unroll(range(4)):
            # ABSOLUTE_POS keeps the index a runtime value, as in the reference
            orders[ABSOLUTE_POS + i + 4] = order[i]


def test_an_unrolled_loop_over_a_local_array_reads_its_own_updates(client):
    out = buf(client, [1, 2, 3, 4, 10, 10, 10, 10], np.uint32)
    destructurable_kernel.launch(client, ONE, CubeDim.new_1d(2), out)
    assert read(client, out, np.uint32).tolist() == [1, 2, 3, 4, 5, 6, 11, 12]


# -- assign.rs ---------------------------------------------------------------------------------
@cube(launch=True)
def assign_scalar(output: SliceMut[F]):
    if UNIT_POS == 0:
        item = F.new(5.0)
        output[0] = item


@cube(launch=True)
def assign_one_tuple(output: SliceMut[F]):
    if UNIT_POS == 0:
        item = (F.new(5.0),)
        output[0] = item[0]


@cube(launch=True)
def add_assign_array(output: SliceMut[Vector[F, N]]):
    if UNIT_POS == 0:
        output[0] = Vector.new(F.new(5.0))
        output[0] += Vector.new(F.new(1.0))


def test_assignment_of_a_scalar_a_tuple_item_and_an_add_assign_into_a_buffer(client):
    out = buf(client, [0.0, 1.0])
    assign_scalar.launch[f32](client, ONE, UNIT, out)
    assert read(client, out)[0] == 5.0
    out = buf(client, [0.0])
    assign_one_tuple.launch[f32](client, ONE, UNIT, out)
    assert read(client, out)[0] == 5.0
    for width in (1, 2, 4):
        out = empty(client, width)
        add_assign_array.launch[f32](client, ONE, UNIT, width, out)
        assert read(client, out).tolist() == [6.0] * width


@cube(launch=True)
def assign_mut_expression(output: SliceMut[u32]):
    thread_idx = UNIT_POS
    num_threads = CUBE_DIM
    step = u32(256 // 2)
    while step > 0:
        for pos in range(thread_idx, step, num_threads):
            output[pos] = u32(0)
        step //= 2


def test_a_loop_bound_updated_in_a_while_loop_is_read_each_time(client):
    # assign.rs assign_mut_expression: zero the first 128 items with a halving bound
    out = buf(client, np.arange(1, 257), np.uint32)
    assign_mut_expression.launch(client, ONE, CubeDim.new_1d(64), out)
    got = read(client, out, np.uint32)
    assert got[:128].tolist() == [0] * 128
    assert got[128:].tolist() == list(range(129, 257))


# -- vector.rs ---------------------------------------------------------------------------------
@cube(launch_unchecked=True)
def vector_index(output: SliceMut[F]):
    # vector.rs test_vector_index: a vector of width 4 (the reference's N >= 4), made from a
    # scalar with its width stated, read component by component
    if UNIT_POS == 0:
        v = Vector[F, 4].new(F.new(5.0))
        for i in unroll(range(4)):
            output[i] = v[i]


@cube(launch_unchecked=True)
def vector_conditional(input: Slice[Vector[F, N]], flag: Slice[u32], output: SliceMut[Vector[F, N]]):
    cond = flag[0] == u32(0)
    vector = input[0] if cond else input[1]
    output[0] = vector


def test_a_splatted_vector_reads_its_components(client):
    out = empty(client, 4)
    vector_index.launch_unchecked[f32](client, ONE, UNIT, out)
    assert read(client, out).tolist() == [5.0] * 4


def test_a_conditional_expression_picks_a_whole_vector(client):
    data = [1.0] * 4 + [2.0] * 4
    for flag, want in ((0, 1.0), (1, 2.0)):
        out = empty(client, 4)
        vector_conditional.launch_unchecked[f32](client, ONE, UNIT, 4, buf(client, data),
                                                 buf(client, [flag], np.uint32), out)
        assert read(client, out).tolist() == [want] * 4


@cube(launch_unchecked=True)
def vector_shared_memory(output: SliceMut[Vector[F, N]]):
    smem1 = SharedMemory[Vector[F, N]](8)
    smem1[0] = Vector.new(F.new(42.0))
    output[0] = smem1[0]


def test_shared_memory_holds_vectors(client):
    for width in (1, 2, 4):
        out = empty(client, width)
        vector_shared_memory.launch_unchecked[f32](client, ONE, UNIT, width, out)
        assert read(client, out)[0] == 42.0


@cube(launch_unchecked=True)
def vector_cast(x: Slice[Vector[u32, N]], output: SliceMut[Vector[F, N]]):
    output[0] = Vector[F, N].cast_from(x[0])
    output[1] = Vector[F, N].cast_from(u32(7))


def test_a_vector_of_a_stated_width_converts_a_vector_or_splats_a_scalar(client):
    # unroll.rs's `Vector::cast_from(out)`: componentwise conversion at width N; a scalar fills
    for width in (1, 2, 4):
        out = empty(client, 2 * width)
        vector_cast.launch_unchecked[f32](client, ONE, UNIT, width,
                                          buf(client, [7, 8, 9, 10][:width], np.uint32), out)
        assert read(client, out).tolist() == [7.0, 8.0, 9.0, 10.0][:width] + [7.0] * width


@cube(launch_unchecked=True)
def vector_extract_dynamic(input: Slice[Vector[F, N]], index: Slice[u32], output: SliceMut[F]):
    if UNIT_POS == 0:
        output[0] = input[0][index[0]]


def test_a_vector_component_at_a_runtime_index(client):
    # vector.rs test_vector_extract_dynamic (its width 8 is past cubelab's 4): every lane in
    # turn; an index past the last component reads the last (cubelab's rule on every target)
    for width in (2, 4):
        data = [float(k + 1) for k in range(width)]
        for lane in [*range(width), 7]:
            out = empty(client, 1)
            vector_extract_dynamic.launch_unchecked[f32](client, ONE, UNIT, width,
                                                         buf(client, data),
                                                         buf(client, [lane], np.uint32), out)
            assert read(client, out)[0] == data[min(lane, width - 1)], (width, lane)


@cube(launch_unchecked=True)
def vector_insert_dynamic(index: Slice[u32], output: SliceMut[Vector[F, N]]):
    if UNIT_POS == 0:
        vector = output[0]
        vector[index[0]] = F.new(5.0)
        output[0] = vector


def test_a_vector_component_assigned_at_a_runtime_index(client):
    # vector.rs test_vector_insert_dynamic (width 8 there): 5 lands in the named lane only; an
    # index past the end changes nothing (cubelab's rule on every target)
    for width in (2, 4):
        for lane in [*range(width), 7]:
            out = empty(client, width)
            vector_insert_dynamic.launch_unchecked[f32](client, ONE, UNIT, width,
                                                        buf(client, [lane], np.uint32), out)
            want = [5.0 if k == lane else 0.0 for k in range(width)]
            assert read(client, out).tolist() == want, (width, lane)


@cube(launch_unchecked=True)
def vector_index_assign(output: SliceMut[Vector[F, N]]):
    if UNIT_POS == 0:
        vector = output[0]
        vector[0] = F.new(5.0)
        output[0] = vector


def test_a_vector_component_assigned_at_a_comptime_index(client):
    # vector.rs test_vector_index_assign (CubeCL goes through a RuntimeCell; a local here)
    for width in (2, 4):
        out = empty(client, width)
        vector_index_assign.launch_unchecked[f32](client, ONE, UNIT, width, out)
        assert read(client, out).tolist() == [5.0] + [0.0] * (width - 1)


@cube(launch_unchecked=True)
def vector_loop_unroll(output: SliceMut[Vector[F, N]]):
    if UNIT_POS == 0:
        vector = output[0]
        for k in unroll(range(N)):
            vector[k] = vector[k] + F.cast_from(k)
        output[0] = vector


def test_an_unrolled_loop_over_a_vectors_width_updates_each_component(client):
    # vector.rs test_vector_loop_unroll and assign.rs kernel_add_assign_vector: N, the launch's
    # vector size, bounds an unrolled loop in the body
    for width in (1, 2, 4):
        out = empty(client, width)
        vector_loop_unroll.launch_unchecked[f32](client, ONE, UNIT, width, out)
        assert read(client, out).tolist() == [float(k) for k in range(width)]



# -- unroll.rs ---------------------------------------------------------------------------------
@cube(launch=True)
def unroll_reinterpret(output: SliceMut[Vector[F, N]]):
    if UNIT_POS != 0:
        return
    values = Vector[f32, N].cast_from(output[0])
    bits = Vector[u32, N].reinterpret(values)
    scaled = bits + u32(1 << 23)
    output[0] = Vector[F, N].cast_from(f32.reinterpret(scaled))


def test_reinterpreting_the_bits_adds_one_to_the_exponent(client):
    # unroll.rs test_unroll_reinterpret (its width 8 is past cubelab's 4): adding 1 << 23 to
    # each f32's bit pattern doubles it
    for width in (1, 2, 4):
        out = buf(client, [1.0, 2.0, 3.0, 4.0][:width])
        unroll_reinterpret.launch[f32](client, ONE, UNIT, width, out)
        assert read(client, out).tolist() == [2.0, 4.0, 6.0, 8.0][:width]


@cube(launch=True)
def unroll_load_store(output: SliceMut[Vector[F, N]]):
    if UNIT_POS != 0:
        return
    a = output[0]
    b = Vector[F, N].new(F.cast_from(3))
    output[0] = a + b


def test_a_vector_loaded_added_and_stored(client):
    # unroll.rs test_unroll_load_store, at the widths cubelab has
    for width in (1, 2, 4):
        out = buf(client, [0.0, 1.0, 2.0, 3.0][:width])
        unroll_load_store.launch[f32](client, ONE, UNIT, width, out)
        assert read(client, out).tolist() == [3.0, 4.0, 5.0, 6.0][:width]
