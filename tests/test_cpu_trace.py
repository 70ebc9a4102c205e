"""Step-through of saxpy for unit 5: the values the seed's MSL computes (v88, v12, v19, v65)."""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import f32
from tests.fixtures.kernels import saxpy


def trace_saxpy(client, units=(5,)):
    x = client.create_from_slice(f32.as_bytes(np.arange(32, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(32, dtype=np.float32)))
    t = inspect.trace(saxpy.launch[f32], client, CubeCount.Static(2), CubeDim.new_1d(4), 4, 2.0,
                      BufferArg.from_raw_parts(x, 32), BufferArg.from_raw_parts(y, 32),
                      units=units)
    return t, f32.from_bytes(client.read_one(y))


def test_saxpy_unit_5_shows_absolute_pos_the_guard_the_loaded_vector_and_the_result(cpu_client):
    t, y = trace_saxpy(cpu_client)
    steps = t.steps_of(5)
    # v88 in the seed's MSL: ABSOLUTE_POS = CUBE_POS * 4 + UNIT_POS = 1 * 4 + 1
    (pos,) = [s for s in steps if s.note == "ABSOLUTE_POS"]
    assert pos.value == 5 and pos.op == "arith.add"
    # v12: `ABSOLUTE_POS < x.len()` — 5 < 8 (32 floats are 8 vectors of 4)
    (guard,) = t.find(op="arith.cmp")
    assert guard.operands == ((pos.result, 5), (guard.operands[1][0], 8)) and guard.value is True
    assert guard.source == "if ABSOLUTE_POS < x.len():"
    (branch,) = t.find(op="scf.if")
    assert branch.value is True
    # v19: the loaded vector x[5]; v65: a * x + y
    x_load, y_load = t.find(op="memory.load")
    assert x_load.value == [20.0, 21.0, 22.0, 23.0] and x_load.operands[0][1] == "x[5]"
    assert y_load.value == [1.0, 1.0, 1.0, 1.0]
    (store,) = t.find(op="memory.store")
    assert store.value == [41.0, 43.0, 45.0, 47.0] and store.note == "store y[5]"
    assert store.line == guard.line + 1 and "Vector.new(F.cast_from(a))" in store.source
    assert [s.index for s in steps] == list(range(len(steps)))
    # the launch really ran: the buffers hold saxpy's result
    np.testing.assert_array_equal(y, 2 * np.arange(32, dtype=np.float32) + 1)


def test_a_trace_is_navigable_forwards_and_backwards_and_across_units(cpu_client):
    t, _ = trace_saxpy(cpu_client, units=(5, 0))
    assert t.unit == 5 and t.position == 0
    first = t.current
    t.forward(3)
    assert t.current.index == 3
    t.back()
    assert t.current.index == 2
    assert t.goto(10_000).index == len(t) - 1  # clamped at the end
    assert t.back(10_000) == first
    t.select(0)
    assert t.current.unit == 0
    assert "▶" in t.table() and "memory.store" in t.table()
    d = t.to_dict()
    assert set(d["steps"]) == {"5", "0"} and d["steps"]["5"][0]["unit"] == 5


def test_a_unit_that_skips_the_branch_has_no_steps_inside_it(cpu_client):
    t, _ = trace_saxpy(cpu_client, units=(5,))
    x = cpu_client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = cpu_client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    t2 = inspect.trace(saxpy.launch[f32], cpu_client, CubeCount.Static(2), CubeDim.new_1d(4), 4,
                       2.0, BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16),
                       units=[5])
    (guard,) = t2.find(op="arith.cmp")
    assert guard.value is False  # 5 < 4 is false
    assert not t2.find(op="memory.load") and not t2.find(op="memory.store")
    assert len(t2) < len(t)


def test_tracing_a_wgpu_launch_runs_it_on_a_cpu_copy_and_leaves_wgpu_buffers_alone(wgpu_client):
    t, y_wgpu = trace_saxpy(wgpu_client)
    assert t.copied and t.client.name() == "cpu<numpy>"
    np.testing.assert_array_equal(y_wgpu, np.ones(32, dtype=np.float32))
    (store,) = t.find(op="memory.store")
    assert store.value == [41.0, 43.0, 45.0, 47.0]


def test_trace_needs_a_unit_of_the_launch(cpu_client):
    with pytest.raises(ValueError, match="not part of this launch"):
        trace_saxpy(cpu_client, units=(8,))


def test_a_loop_appears_once_per_iteration_the_unit_ran(cpu_client):
    from tests.fixtures.cpu_kernels import skip_multiples_of_three
    from cubelab.prelude import u32

    out = cpu_client.empty(4 * 8)
    t = inspect.trace(skip_multiples_of_three.launch, cpu_client, CubeCount.Static(1),
                      CubeDim.new_1d(8), BufferArg.from_raw_parts(out, 8), units=[4, 1])
    iterations = [s.value for s in t.find(op="scf.for", unit=4)]
    assert iterations == [0, 1, 2, 3, 4]  # range(ABSOLUTE_POS + 1) for unit 4
    assert [s.value for s in t.find(op="scf.for", unit=1)] == [0, 1]
    (store,) = t.find(op="memory.store", unit=4)[-1:]
    assert store.value == 1 + 2 + 4
    np.testing.assert_array_equal(u32.from_bytes(cpu_client.read_one(out))[:5], [0, 1, 3, 3, 7])


def test_units_of_a_3d_launch_can_be_named_by_cube_and_unit_coordinates(cpu_client):
    from tests.fixtures.kernels import topology

    out = cpu_client.empty(420 * 4)
    count, dim = CubeCount.Static(3, 5, 7), CubeDim.new_2d(2, 2)
    t = inspect.trace(topology.launch, cpu_client, count, dim, BufferArg.from_raw_parts(out, 420),
                      units=[((1, 2, 3), (1, 1, 0))])
    expect = inspect.unit_position(count, dim, (1, 2, 3), (1, 1, 0))
    assert expect == ((3 * 5 * 3) + 2 * 3 + 1) * 4 + 3
    assert t.units == (expect,)
    (store,) = t.find(op="memory.store")
    assert store.value == expect  # topology writes ABSOLUTE_POS
