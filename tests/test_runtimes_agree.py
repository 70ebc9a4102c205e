"""The two runtimes never disagree: the same value or the same clear error (#28's N-items).

Each test is a one-line repro that gave wgpu (lavapipe) and the CPU runtime different answers, or
a wrong answer on both, pinned on both through the `client` fixture: indices at or past 2^30
items (lavapipe computed the byte offset in 32 bits and wrapped back into the buffer), runtime
indices past a local or shared array (naga clamped them), comptime ones (refused), zero divisors
a driver can fold (a vector splat, a fresh local `Array`, `x % 0.0`), a tensor indexed with
another number of indices than its rank, arrays of what no kernel type holds, and allocations
and bindings over the device's limits."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.errors import BufferFailure, KernelSourceError, ResourceError
from cubelab.prelude import (ABSOLUTE_POS, UNIT_POS, Array, Atomic, SharedMemory, Slice, SliceMut,
                             Tensor, TensorArg, Vector, cube, f32, sync_cube, u32)

ONE = CubeCount.Static(1)
FAR = 2**30  # the first item index whose f32 byte offset no longer fits 32 bits


def up(client, kind, values):  # type: ignore[no-untyped-def]
    arr = np.asarray(values, kind.dtype)
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), arr.size)


def read(client, kind, arg):  # type: ignore[no-untyped-def]
    return kind.from_bytes(client.read_one(arg.handle))[: arg.length]


@contextmanager
def fixed_rule(client) -> Iterator[None]:  # type: ignore[no-untyped-def]
    client.set_compilation_options(checked_io="fixed")
    try:
        yield
    finally:
        client.set_compilation_options(checked_io="cubecl-0.11.3")


# -- N1: an index at or past 2^30 items ----------------------------------------------------------
@cube(launch=True, launch_unchecked=True)
def far_read(x: Slice[f32], out: SliceMut[f32], offset: u32):
    out[ABSOLUTE_POS] = x[offset + ABSOLUTE_POS]


@cube(launch=True, launch_unchecked=True)
def far_write(x: Slice[f32], out: SliceMut[f32], offset: u32):
    out[offset + ABSOLUTE_POS] = x[ABSOLUTE_POS]


@cube(launch=True)
def far_atomic(h: SliceMut[Atomic[u32]], old: SliceMut[u32]):
    old[ABSOLUTE_POS] = h[u32(FAR) + ABSOLUTE_POS].fetch_add(u32(5))


@pytest.mark.parametrize("offset", [FAR, FAR + 3, 2**31, 2**32 - 4])
def test_a_read_at_or_past_2_30_items_gives_zero_it_never_wraps_into_the_buffer(client, offset):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, [1, 2, 3, 4]), up(client, f32, [9] * 4)
    far_read.launch_unchecked(client, ONE, CubeDim.new_1d(4), x, out, offset)
    np.testing.assert_array_equal(read(client, f32, out), [0, 0, 0, 0])


@pytest.mark.parametrize("offset", [FAR, 2**31 + 1])
def test_a_write_at_or_past_2_30_items_is_dropped_it_never_lands_in_the_buffer(client, offset):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, [1, 2, 3, 4]), up(client, f32, [9] * 4)
    far_write.launch(client, ONE, CubeDim.new_1d(4), x, out, offset)
    np.testing.assert_array_equal(read(client, f32, out), [9, 9, 9, 9])


def test_an_atomic_at_2_30_items_is_dropped_and_returns_zero(client):  # type: ignore[no-untyped-def]
    h, old = up(client, u32, [1, 2]), up(client, u32, [7, 7])
    far_atomic.launch(client, ONE, CubeDim.new_1d(2), h, old)
    np.testing.assert_array_equal(read(client, u32, h), [1, 2])
    np.testing.assert_array_equal(read(client, u32, old), [0, 0])


def test_under_the_fixed_rule_a_far_index_is_clamped_to_the_last_item(client):  # type: ignore[no-untyped-def]
    with fixed_rule(client):
        x, out = up(client, f32, [1, 2, 3, 4]), up(client, f32, [9] * 4)
        far_read.launch(client, ONE, CubeDim.new_1d(4), x, out, FAR)
        np.testing.assert_array_equal(read(client, f32, out), [4, 4, 4, 4])
        far_write.launch(client, ONE, CubeDim.new_1d(1), x, out, FAR)
        np.testing.assert_array_equal(read(client, f32, out), [4, 4, 4, 1])
        # the rule is Checked's: an unchecked launch still reads zero
        far_read.launch_unchecked(client, ONE, CubeDim.new_1d(4), x, out, FAR)
        np.testing.assert_array_equal(read(client, f32, out), [0, 0, 0, 0])


# -- N2: local Array and SharedMemory out of range -----------------------------------------------
@cube(launch=True)
def local_past_end(step: u32, out: SliceMut[f32]):
    a = Array[f32](6)
    for k in range(6):
        a[k] = f32(k + 1)
    a[u32(6) + step * ABSOLUTE_POS] = f32(100.0)  # never lands (and never in item 5)
    out[ABSOLUTE_POS] = a[u32(4) + step * ABSOLUTE_POS]


@cube(launch=True)
def shared_past_end(step: u32, out: SliceMut[f32]):
    s = SharedMemory[f32]((2, 4))
    s[0, UNIT_POS % u32(4)] = f32(UNIT_POS + u32(1))
    s[1, UNIT_POS % u32(4)] = f32(UNIT_POS + u32(11))
    sync_cube()
    s[u32(2), step * UNIT_POS] = f32(100.0)  # row 2 does not exist
    sync_cube()
    out[UNIT_POS] = s[u32(1), u32(2) + step * UNIT_POS]


def test_a_runtime_index_past_a_local_array_reads_zero_and_drops_the_write(client):  # type: ignore[no-untyped-def]
    out = up(client, f32, [9] * 4)
    local_past_end.launch(client, ONE, CubeDim.new_1d(4), 1, out)
    np.testing.assert_array_equal(read(client, f32, out), [5, 6, 0, 0])


def test_a_runtime_index_past_shared_memory_reads_zero_and_drops_the_write(client):  # type: ignore[no-untyped-def]
    out = up(client, f32, [9] * 4)
    shared_past_end.launch(client, ONE, CubeDim.new_1d(4), 1, out)
    np.testing.assert_array_equal(read(client, f32, out), [13, 14, 0, 0])


def test_the_fixed_rule_clamps_global_buffers_only_local_arrays_still_read_zero(client):  # type: ignore[no-untyped-def]
    with fixed_rule(client):
        out = up(client, f32, [9] * 4)
        local_past_end.launch(client, ONE, CubeDim.new_1d(4), 1, out)
        np.testing.assert_array_equal(read(client, f32, out), [5, 6, 0, 0])


@cube(launch=True)
def comptime_past_rows(out: SliceMut[f32]):
    a = Array[f32]((2, 3))
    out[0] = a[2, 0]


@cube(launch=True)
def comptime_past_end(out: SliceMut[f32]):
    s = SharedMemory[f32](8)
    s[8] = f32(1.0)


@pytest.mark.parametrize("kernel, says", [
    (comptime_past_rows, r"index 2 on axis 0 is out of range for the local array of shape "
                         r"\(2, 3\)(.|\n)*hint: indices on axis 0 run from 0 to 1"),
    (comptime_past_end, r"index 8 is out of range for the shared memory of 8 items"
                        r"(.|\n)*hint: indices run from 0 to 7"),
], ids=["rows", "flat"])
def test_a_comptime_index_past_a_local_or_shared_array_is_refused_with_a_caret(client, kernel, says):  # type: ignore[no-untyped-def]
    out = up(client, f32, [9])
    kernel.launch(client, ONE, CubeDim.new_1d(1), out)
    with pytest.raises(BufferFailure) as info:
        client.read_one(out.handle)
    cause = info.value.cause
    assert isinstance(cause, KernelSourceError)
    assert cause.line > 0 and "^" in str(cause)
    assert __import__("re").search(says, str(cause))
    del info


# -- N3: zero divisors a driver can fold ---------------------------------------------------------
@cube(launch=True)
def vector_by_zero(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] / Vector.new(f32(0.0))


@cube(launch=True)
def by_fresh_array(x: Slice[f32], out: SliceMut[f32]):
    a = Array[f32](2)
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] / a[0]


@cube(launch=True)
def remainders(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    out[4 * i] = x[i] % f32(0.0)
    out[4 * i + 1] = x[i] % f32(float("inf"))
    out[4 * i + 2] = f32(float("inf")) % (x[i] + f32(1.0))
    out[4 * i + 3] = x[i] % f32(1.5)


X = [1.0, -2.0, 0.0, -0.0, np.inf, np.nan, 3.5, -7.25]
IEEE_DIV = [np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan, np.inf, -np.inf]


def test_a_vector_divided_by_a_splat_of_zero_gives_the_ieee_result(client):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, X), up(client, f32, [9] * 8)
    vector_by_zero.launch(client, ONE, CubeDim.new_1d(2), x, out)
    np.testing.assert_array_equal(read(client, f32, out), IEEE_DIV)


def test_a_divisor_read_from_a_fresh_local_array_gives_the_ieee_result(client):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, X), up(client, f32, [9] * 8)
    by_fresh_array.launch(client, ONE, CubeDim.new_1d(8), x, out)
    np.testing.assert_array_equal(read(client, f32, out), IEEE_DIV)


def test_a_float_remainder_follows_c_fmod_at_zero_and_infinity(client):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, X), up(client, f32, [9] * 32)
    remainders.launch(client, ONE, CubeDim.new_1d(8), x, out)
    xs = np.asarray(X, np.float32)
    with np.errstate(all="ignore"):
        want = np.stack([np.fmod(xs, np.float32(0)), np.fmod(xs, np.float32(np.inf)),
                         np.fmod(np.float32(np.inf), xs + np.float32(1)),
                         np.fmod(xs, np.float32(1.5))], axis=1).ravel()
    np.testing.assert_array_equal(read(client, f32, out), want)


# -- N6: a tensor indexed with more (or fewer) indices than its rank -----------------------------
@cube(launch=True)
def pick2(t: Tensor[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = t[ABSOLUTE_POS, 1]


@cube(launch=True)
def pick3(t: Tensor[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = t[ABSOLUTE_POS, 1, 0]


def tensor(client, shape, strides):  # type: ignore[no-untyped-def]
    data = np.arange(16, dtype=np.float32)
    return TensorArg.from_raw_parts(client.create_from_slice(f32.as_bytes(data)), shape, strides)


@pytest.mark.parametrize("kernel, shape, strides, n, rank", [
    (pick2, (16,), (1,), 2, 1), (pick3, (4, 4), (4, 1), 3, 2), (pick2, (2, 2, 4), (8, 4, 1), 2, 3)],
    ids=["2-on-rank-1", "3-on-rank-2", "2-on-rank-3"])
def test_indexing_a_tensor_with_another_number_of_indices_than_its_rank_fails_the_launch(
        client, kernel, shape, strides, n, rank):  # type: ignore[no-untyped-def]
    out = up(client, f32, [9] * 2)
    kernel.launch(client, ONE, CubeDim.new_1d(2), tensor(client, shape, strides), out)
    with pytest.raises(BufferFailure) as info:
        client.read_one(out.handle)
    cause = info.value.cause
    del info
    assert isinstance(cause, KernelSourceError) and "^" in str(cause)
    assert f"with {n} indices, but this launch's TensorArg has rank {rank}" in str(cause)
    assert "hint: pass a TensorArg of rank" in str(cause)
    # the same kernel with a tensor of the right rank runs
    right = tensor(client, (4, 4) if n == 2 else (2, 2, 4), (4, 1) if n == 2 else (8, 4, 1))
    kernel.launch(client, ONE, CubeDim.new_1d(2), right, out)
    np.testing.assert_array_equal(read(client, f32, out), [1, 5] if n == 2 else [4, 12])


# -- N7: arrays of what no kernel type holds -----------------------------------------------------
@pytest.mark.parametrize("array", [np.zeros(2, np.complex64), np.array(["ab", "cd"]),
                                   np.array([object(), 1]), np.zeros(2, "datetime64[s]"),
                                   np.zeros(2, "timedelta64[s]"), np.zeros(1, "i4,f4")],
                         ids=["complex64", "unicode", "object", "datetime64", "timedelta64",
                              "record"])
def test_create_from_slice_and_write_refuse_arrays_no_kernel_type_holds(client, array):  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="no kernel type holds(.|\n)*hint: "):
        client.create_from_slice(array)
    h = client.create_from_slice(np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="no kernel type holds(.|\n)*hint: "):
        client.write(h, array)
    assert client.read_one(h) == bytes(32)  # nothing was written


# -- N11: allocations and bindings over the device's limits --------------------------------------
def test_an_allocation_over_the_buffer_limit_is_refused_the_same_way_on_both_runtimes(client):  # type: ignore[no-untyped-def]
    limit = client.properties().max_buffer_size
    assert limit is not None and limit >= 2**31 - 1
    for ask in (client.zeros, client.empty):  # (the limit is the device's: 143 GB on an H200)
        with pytest.raises(ResourceError, match=r"a buffer holds at most \d+ bytes on this device"
                                                r"(.|\n)*hint: split the data"):
            ask(limit + 1)
    assert client.memory_usage().bytes_in_use < 2**31


@cube(launch=True)
def touch_all(x: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        x[ABSOLUTE_POS] = f32(1.0)


def test_a_binding_over_the_devices_binding_limit_fails_the_launch_on_both_runtimes(client):  # type: ignore[no-untyped-def]
    limit = client.properties().max_binding_size
    assert limit is not None
    items = limit // 4 + 4
    h = client.zeros(items * 4)
    touch_all.launch(client, ONE, CubeDim.new_1d(4), BufferArg.from_raw_parts(h, items))
    with pytest.raises(BufferFailure, match=r"binds \d+ bytes; this device binds at most"):
        client.check([h])
    # a view within the limit runs
    touch_all.launch(client, ONE, CubeDim.new_1d(4), BufferArg.from_raw_parts(h, 4))
    assert f32.from_bytes(client.read_one(h))[:5].tolist() == [1, 1, 1, 1, 0]
    del h


# -- N4: a dynamic count over the device's limit -------------------------------------------------
@cube(launch=True)
def fill_one(y: SliceMut[f32]):
    if ABSOLUTE_POS < y.len():
        y[ABSOLUTE_POS] = f32(1.0)


@pytest.mark.parametrize("grid", [(70000, 1, 1), (1, 65536, 1), (2, 2, 2**32 - 1)],
                         ids=["x", "y", "z"])
def test_a_dynamic_count_over_the_limit_fails_the_launch_on_both_runtimes(client, grid):  # type: ignore[no-untyped-def]
    count = client.create_from_slice(u32.as_bytes(np.array(grid, np.uint32)))
    y = up(client, f32, [0] * 4)
    fill_one.launch(client, CubeCount.Dynamic(count), CubeDim.new_1d(4), y)
    with pytest.raises(BufferFailure, match=rf"the dynamic cube count \({grid[0]}, {grid[1]}, "
                                            rf"{grid[2]}\) exceeds the device limit of 65535 "
                                            r"cubes per dimension(.|\n)*hint: "):
        client.read_one(y.handle)
    # the limit itself runs, and repairs the pure output
    client.write(count, u32.as_bytes(np.array([1, 65535, 1], np.uint32)))
    fill_one.launch(client, CubeCount.Dynamic(count), CubeDim.new_1d(4), y)
    np.testing.assert_array_equal(read(client, f32, y), [1, 1, 1, 1])


# -- long loops: lavapipe ends a unit's loops after 65 535 steps in all --------------------------
@cube(launch=True, launch_unchecked=True)
def count_for(n: u32, out: SliceMut[u32]):
    acc = u32(0)
    for i in range(n):
        acc += i & u32(1)
    out[ABSOLUTE_POS] = acc


@cube(launch=True, launch_unchecked=True)
def lcg_while(n: u32, out: SliceMut[u32]):
    x = ABSOLUTE_POS
    i = u32(0)
    while i < n:
        x = x * u32(1664525) + u32(1013904223)
        i += u32(1)
    out[ABSOLUTE_POS] = x


def lcg_after(n: int, seed: int) -> int:
    """The LCG's n-th value from `seed`, by squaring the affine map (mod 2^32)."""
    m, a, b, x = 2**32, 1664525, 1013904223, seed
    while n:
        if n & 1:
            x = (a * x + b) % m
        a, b, n = a * a % m, (a * b + b) % m, n >> 1
    return x


@pytest.mark.parametrize("checked", [True, False], ids=["launch", "launch_unchecked"])
def test_a_for_loop_of_100_000_iterations_is_right_on_both_runtimes(client, checked):  # type: ignore[no-untyped-def]
    out = up(client, u32, [7] * 8)
    (count_for.launch if checked else count_for.launch_unchecked)(
        client, ONE, CubeDim.new_1d(8), 100_000, out)
    np.testing.assert_array_equal(read(client, u32, out), [50_000] * 8)


def test_a_while_loop_of_100_000_iterations_is_right_on_both_runtimes(client):  # type: ignore[no-untyped-def]
    out = up(client, u32, [7] * 4)
    lcg_while.launch(client, ONE, CubeDim.new_1d(4), 100_000, out)
    np.testing.assert_array_equal(read(client, u32, out), [lcg_after(100_000, s) for s in range(4)])


def test_a_for_loop_of_ten_million_iterations_is_right_on_lavapipe(wgpu_client):  # type: ignore[no-untyped-def]
    # (the CPU runtime stops one loop after 2^20 iterations: an interpreted iteration costs
    # microseconds — docs/language.md, "The loop guard")
    out = up(wgpu_client, u32, [7] * 4)
    count_for.launch(wgpu_client, ONE, CubeDim.new_1d(4), 10**7, out)
    np.testing.assert_array_equal(read(wgpu_client, u32, out), [5 * 10**6] * 4)


def test_the_unrolled_loops_are_marked_in_the_ir_and_only_where_the_driver_caps_loops(client):  # type: ignore[no-untyped-def]
    from cubelab import inspect as ci

    k = ci.instance(count_for, cube_dim=CubeDim.new_1d(8))
    capped = client.properties().driver_loop_limit is not None
    ir = ci.compiled(k, client=client).ir
    assert ("unroll = " in ir) == capped
    assert "unroll" not in ci.compiled(k).ir  # a preview without a device: as written
    if capped:
        assert "loop-unroll" in [p.name for p in ci.passes(k, client=client)]
        assert "unrolled x" in ci.wgsl(k, client=client)


# -- N10: access maps and traces of launches that fail -------------------------------------------
@cube(launch=True)
def spins(out: SliceMut[u32]):
    out[ABSOLUTE_POS] = u32(1)
    x = u32(1)
    while x != u32(0):
        x = x | u32(1)
    out[ABSOLUTE_POS] = x


@cube(launch=True)
def divides_u32(out: SliceMut[u32]):
    out[ABSOLUTE_POS] = u32(1) / u32(2)


def test_an_access_map_of_a_launch_the_loop_guard_stopped_says_it_is_not_the_whole_kernel(client):  # type: ignore[no-untyped-def]
    from cubelab import inspect as ci
    from cubelab.errors import FailedTraceWarning, LoopGuardError

    out = up(client, u32, [0] * 4)
    client.set_compilation_options(loop_budget=100)
    try:
        with pytest.warns(FailedTraceWarning, match="access map of `spins`: the launch failed"):
            m = ci.access_map(spins.launch, client, ONE, CubeDim.new_1d(4), out)
    finally:
        from cubelab.ir.passes import DEFAULT_LOOP_BUDGET

        client.set_compilation_options(loop_budget=DEFAULT_LOOP_BUDGET)
    assert isinstance(m.failure, LoopGuardError)
    assert "the launch FAILED (LoopGuardError" in m.report()
    assert "among the recorded accesses" in m.report()
    assert len(m.accesses) == 4  # the first store of every unit, before the loop


@pytest.mark.parametrize("view", ["access_map", "trace"])
def test_a_view_of_a_kernel_that_fails_to_compile_raises_its_error_with_the_caret(client, view):  # type: ignore[no-untyped-def]
    from cubelab import inspect as ci

    out = up(client, u32, [0] * 4)
    with pytest.raises(KernelSourceError, match=r"`/` on u32 values") as info:
        getattr(ci, view)(divides_u32.launch, client, ONE, CubeDim.new_1d(4), out)
    assert "^" in str(info.value) and "hint: integer division is `//`" in str(info.value)
    assert info.value.line == divides_u32.first_line + 2
    del info


@cube(launch=True)
def constant_past_shared(x: Slice[f32], out: SliceMut[f32]):
    s = SharedMemory[f32](8)
    a = Array[f32](4)
    s[UNIT_POS] = x[UNIT_POS]
    sync_cube()
    s[u32(8)] = f32(5.0)  # a typed constant: past the end, dropped (naga would refuse `s[8u]`)
    a[u32(4)] = f32(6.0)
    out[UNIT_POS] = s[u32(8)] + a[u32(4)] + s[u32(7) - UNIT_POS]


def test_a_typed_constant_index_past_a_local_or_shared_array_compiles_and_reads_zero(client):  # type: ignore[no-untyped-def]
    x, out = up(client, f32, range(1, 9)), up(client, f32, [9] * 8)
    constant_past_shared.launch(client, ONE, CubeDim.new_1d(8), x, out)
    np.testing.assert_array_equal(read(client, f32, out), [8, 7, 6, 5, 4, 3, 2, 1])
