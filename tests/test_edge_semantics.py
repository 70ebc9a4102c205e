"""Edge cases where a kernel could be silently wrong, each pinned on both runtimes (#11's items
11-17): a literal-zero float divisor, zero-length views under the clamping rule, numpy arrays of
the wrong width handed to `create_from_slice`, constant shifts of 32 or more, float edge cases,
`range` bounds that wrap a u32 counter, and what `debug_print`/trace tell the student when they
cannot do their job."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.exercises.ch05 import checked_io
from cubelab.prelude import (ABSOLUTE_POS, Atomic, Slice, SliceMut, Vector, cube, debug_print, f32,
                             i32, u32)
from tests.fixtures.failing_kernels import forever

ONE = CubeCount.Static(1)


def up(client, kind, values):  # type: ignore[no-untyped-def]
    arr = np.asarray(values, kind.dtype)
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), arr.size)


def read(client, kind, arg):  # type: ignore[no-untyped-def]
    return kind.from_bytes(client.read_one(arg.handle))[: arg.length]


# -- item 14: constant shifts of 32 or more ------------------------------------------------------
@cube(launch=True)
def const_shifts(a: Slice[u32], out: SliceMut[u32], sa: SliceMut[i32]):
    if ABSOLUTE_POS == 0:
        out[0] = a[0] << u32(36)
        out[1] = a[0] >> u32(33)
        out[2] = a[0] << u32(32)
        sa[0] = i32(a[0]) >> u32(63)


def test_a_constant_shift_of_32_or_more_uses_the_amount_mod_32(client):  # type: ignore[no-untyped-def]
    v = 0x80000003
    a, out, sa = up(client, u32, [v]), up(client, u32, [7, 7, 7]), up(client, i32, [7])
    const_shifts.launch(client, ONE, CubeDim.new_1d(1), a, out, sa)
    np.testing.assert_array_equal(read(client, u32, out),
                                  [(v << 4) & 0xFFFFFFFF, v >> 1, v])
    np.testing.assert_array_equal(read(client, i32, sa), [-1])


# -- item 13: create_from_slice and numpy's 8-byte defaults --------------------------------------
@pytest.mark.parametrize("dtype, fix", [(np.float64, "f32.as_bytes"), (np.int64, "i32.as_bytes"),
                                        (np.uint64, "u32.as_bytes")])
def test_create_from_slice_refuses_an_8_byte_array_and_names_the_as_bytes_to_use(
        client, dtype, fix):  # type: ignore[no-untyped-def]
    # (no `as excinfo`: it would hold this frame, and `h` below with it, in a reference cycle)
    with pytest.raises(TypeError, match=f"a {np.dtype(dtype).name} array(.|\n)*{fix}"):
        client.create_from_slice(np.arange(4, dtype=dtype))
    h = client.create_from_slice(np.zeros(2, np.float32))  # a 4-byte array is taken as is
    with pytest.raises(TypeError, match=fix.replace(".", r"\.")):
        client.write(h, np.zeros(1, dtype))
    assert client.read_one(client.create_from_slice(np.arange(3, dtype=np.uint8))) == b"\0\1\2"


# -- item 11: a literal-zero float divisor -------------------------------------------------------
@cube(launch=True)
def by_literal_zero(x: Slice[f32], out: SliceMut[f32], derived: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        q = x[i] / f32(0.0)
        out[i] = q
        derived[i] = q * f32(2.0) + x[i]


def test_a_literal_zero_float_divisor_gives_the_ieee_result_on_both_runtimes(client):  # type: ignore[no-untyped-def]
    x = up(client, f32, [1.0, -2.0, 0.0, 3.0, -0.0])
    out, derived = up(client, f32, [7] * 5), up(client, f32, [7] * 5)
    by_literal_zero.launch(client, ONE, CubeDim.new_1d(8), x, out, derived)
    inf, nan = np.inf, np.nan
    np.testing.assert_array_equal(read(client, f32, out), [inf, -inf, nan, inf, nan])
    np.testing.assert_array_equal(read(client, f32, derived), [inf, -inf, nan, inf, nan])


# -- item 12: a zero-length view under the clamping rule -----------------------------------------
@cube(launch=True)
def touch_views(x: Slice[f32], out: SliceMut[f32], empty_out: SliceMut[f32],
                count: SliceMut[Atomic[u32]]):
    i = ABSOLUTE_POS
    out[i] = x[i] + f32(1.0)
    empty_out[i] = f32(5.0)
    count[i].fetch_add(u32(1))


def test_a_zero_length_view_is_never_touched_under_the_clamping_rule(client):  # type: ignore[no-untyped-def]
    # `min(i, len - 1)` wraps to 2^32 - 1 when len is 0: without a guard wgpu wrote items 0..3 of
    # the handle behind an empty view. Each empty view here is the start of an 8-item handle.
    x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
    out = up(client, f32, [7] * 4)
    empty = client.create_from_slice(f32.as_bytes(np.full(8, 7, np.float32)))
    count = client.create_from_slice(u32.as_bytes(np.full(8, 9, np.uint32)))
    with checked_io(client, "fixed"):
        touch_views.launch(client, ONE, CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 0), out,
                           BufferArg.from_raw_parts(empty, 0), BufferArg.from_raw_parts(count, 0))
    np.testing.assert_array_equal(read(client, f32, out), [1, 1, 1, 1])  # reads of x gave 0
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(empty)), [7] * 8)
    np.testing.assert_array_equal(u32.from_bytes(client.read_one(count)), [9] * 8)
    # a non-empty view is still clamped to its last item
    with checked_io(client, "fixed"):
        touch_views.launch(client, ONE, CubeDim.new_1d(4), BufferArg.from_raw_parts(x, 2), out,
                           BufferArg.from_raw_parts(empty, 1), BufferArg.from_raw_parts(count, 3))
    np.testing.assert_array_equal(read(client, f32, out), [1, 2, 2, 2])
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(empty)), [5] + [7] * 7)
    np.testing.assert_array_equal(u32.from_bytes(client.read_one(count)), [10, 10, 11] + [9] * 5)


# -- item 16: a range whose comptime bounds wrap its u32 counter ---------------------------------
@cube(launch=True)
def near_the_top(out: SliceMut[u32]):
    for i in range(4294967290, 4294967295, 4):  # i = 2^32-6, 2^32-2, then wraps to 2
        out[0] = i


@cube(launch=True)
def just_below_the_top(out: SliceMut[u32]):
    for i in range(4294967289, 4294967295, 2):  # the last i + 2 is 2^32 - 1: no wrap
        out[0] = i


def test_a_range_whose_comptime_bounds_wrap_its_u32_counter_warns_at_expansion():
    from cubelab import inspect as ci
    from cubelab.errors import RangeWrapWarning

    with pytest.warns(RangeWrapWarning, match=r"wraps its u32 counter: after i = 4294967294, i \+ 4"
                                              r" passes 4294967295 and wraps to 2") as w:
        ci.wgsl(ci.instance(near_the_top, cube_dim=CubeDim.new_1d(1)))
    assert w[0].filename == __file__ and "range(4294967290" in str(w[0].message)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ci.wgsl(ci.instance(just_below_the_top, cube_dim=CubeDim.new_1d(1)))


# -- item 17: a failure that no read can report --------------------------------------------------
@cube(launch=True)
def fails_and_writes_nothing(x: Slice[u32]):
    y = x[0] / u32(2)  # `/` on integers: refused at expansion (on the device thread)


def test_a_failed_launch_that_writes_no_buffer_is_not_silent(client):  # type: ignore[no-untyped-def]
    from cubelab.errors import UnreportedFailureWarning

    x = up(client, u32, [5])
    with pytest.warns(UnreportedFailureWarning, match=r"`FailsAndWritesNothing`.*writes no "
                                                      r"buffer.*`/` on u32 values"):
        fails_and_writes_nothing.launch(client, ONE, CubeDim.new_1d(1), x)
        client.sync()


@cube(launch=True)
def prints_only(x: Slice[f32]):
    debug_print("x[0] = {}", x[0])


def test_debug_print_in_a_kernel_with_no_output_runs_and_is_not_silent(client, capfd):  # type: ignore[no-untyped-def]
    from cubelab.errors import CompileNoticeWarning

    x = up(client, f32, [2.5])
    if not client.name().startswith("cpu"):  # no printf in WGSL / CUDA: runs without it, says so
        with pytest.warns(CompileNoticeWarning, match=r"`prints_only`.*Device\.cpu\(\)"):
            prints_only.launch(client, ONE, CubeDim.new_1d(1), x)
            client.sync()
    else:
        prints_only.launch(client, ONE, CubeDim.new_1d(1), x)
        client.sync()
        assert "x[0] = 2.5" in capfd.readouterr().out


def test_a_trace_of_a_launch_that_failed_says_so(client):  # type: ignore[no-untyped-def]
    from cubelab import inspect as ci
    from cubelab.errors import FailedTraceWarning, LoopGuardError
    from cubelab.ir.passes import DEFAULT_LOOP_BUDGET

    client.set_compilation_options(loop_budget=10)
    try:
        with pytest.warns(FailedTraceWarning, match=r"`forever`.*failed.*steps end where it stopped"):
            t = ci.trace(forever.launch, client, ONE, CubeDim.new_1d(1), up(client, u32, [0]))
    finally:
        client.set_compilation_options(loop_budget=DEFAULT_LOOP_BUDGET)
    assert isinstance(t.failure, LoopGuardError)
    assert "the launch failed" in str(t) and 0 < len(t) < 1000


# -- item 15: float edge cases -------------------------------------------------------------------
@cube(launch=True)
def float_edges(a: Slice[f32], b: Slice[f32], p: SliceMut[f32], c: SliceMut[i32], u: SliceMut[u32]):
    i = ABSOLUTE_POS
    if i < a.len():
        p[i] = pow(a[i], b[i])
        c[i] = i32(a[i])
        u[i] = u32(a[i])


def test_pow_edges_and_nan_casts_agree_on_both_runtimes(client):  # type: ignore[no-untyped-def]
    nan, inf = np.nan, np.inf
    a = [0.0, 0.0, 1.0, nan, nan, 0.0, 2.0, -2.0, -2.0, 0.0]
    b = [0.0, -1.0, nan, 0.0, 1.0, nan, 3.0, 2.0, 0.0, 2.0]
    n = len(a)
    p, c, u = up(client, f32, [7] * n), up(client, i32, [7] * n), up(client, u32, [7] * n)
    float_edges.launch(client, ONE, CubeDim.new_1d(16), up(client, f32, a), up(client, f32, b),
                       p, c, u)
    # C/numpy's edges; a negative base with an integral exponent is the signed power (CubeCL)
    np.testing.assert_array_equal(read(client, f32, p),
                                  [1.0, inf, 1.0, 1.0, nan, nan, 8.0, 4.0, 1.0, 0.0])
    want = [0, 0, 1, 0, 0, 0, 2, -2, -2, 0]  # NaN -> 0 (lavapipe's own cast gave i32 MIN)
    np.testing.assert_array_equal(read(client, i32, c), want)
    np.testing.assert_array_equal(read(client, u32, u), [max(w, 0) for w in want])


# -- a view shorter than its handle --------------------------------------------------------------
@cube(launch_unchecked=True)
def fill_past(out: SliceMut[f32], n: u32):
    i = ABSOLUTE_POS
    if i < n:  # n is larger than out's length: the kernel's own guard is wrong
        out[i] = f32(5.0)


@cube(launch_unchecked=True)
def fill_past_vec(out: SliceMut[Vector[f32, 4]]):
    out[ABSOLUTE_POS] = out[ABSOLUTE_POS] * f32(0.0) + f32(5.0)  # the scalars are splatted


def test_a_view_shorter_than_its_handle_is_all_a_kernel_can_touch(client):  # type: ignore[no-untyped-def]
    # A BufferArg declares a length; the memory past it (still inside the handle) belongs to
    # the student's other data. wgpu once bound the whole handle, so an unguarded write landed
    # there while the CPU runtime dropped it.
    h = client.create_from_slice(f32.as_bytes(np.full(16, 7, np.float32)))
    fill_past.launch_unchecked(client, ONE, CubeDim.new_1d(16), BufferArg.from_raw_parts(h, 4), 16)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(h)), [5] * 4 + [7] * 12)
    v = client.create_from_slice(f32.as_bytes(np.full(64, 7, np.float32)))
    fill_past_vec.launch_unchecked(client, ONE, CubeDim.new_1d(16), BufferArg.from_raw_parts(v, 8))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(v)), [5] * 8 + [7] * 56)
    e = client.create_from_slice(f32.as_bytes(np.full(4, 7, np.float32)))
    fill_past.launch_unchecked(client, ONE, CubeDim.new_1d(4), BufferArg.from_raw_parts(e, 0), 4)
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(e)), [7] * 4)
