"""CubeCL parity: the plane (subgroup) operations at vector widths 1, 2 and 4, with the inputs and
expected outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/plane.rs`, on both runtimes.

The reference launches one cube of 32 units on a 32-lane plane (its shuffle tests say what it
means: `plane_size_max` units), reads and rewrites one tensor `output`, and builds the expected
values with `plane_size` in its formulas. Planes differ here — lavapipe's is 8 lanes, the CPU
runtime's 32 — so each test first asks the device for its plane width `P` (`PLANE_DIM` in a
kernel), launches one cube of `P` units and evaluates the reference's formulas with
`plane_size = P`: on a 32-lane device that is the reference's own data, unchanged.
Floats compare with CubeCL's rule at its epsilon, 1e-5 (`tests/parity.py` `approx`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim, TensorArg
from cubelab.prelude import *  # noqa: F403
from tests.parity import approx, empty, read

F = Float.generic("F")
N = Size.generic("N")
ONE = CubeCount.Static(1)


@cube(launch=True)
def plane_width(out: SliceMut[u32]):
    if UNIT_POS == 0:
        out[0] = PLANE_DIM


def plane_units(client: Any) -> int:
    """The device's plane width, read from a kernel on a 32-unit cube (the reference's)."""
    out = empty(client, 1, np.uint32)
    plane_width.launch(client, ONE, CubeDim.new_1d(32), out)
    return int(read(client, out, np.uint32)[0])


@cube(launch=True)
def reduce_into_first(output: TensorMut[Vector[F, N]], fn: Comptime[object]):
    val = output[UNIT_POS]
    val2 = fn(val)
    if UNIT_POS == 0:
        output[0] = val2


@cube(launch=True)
def each_unit(output: TensorMut[Vector[F, N]], fn: Comptime[object]):
    val = output[UNIT_POS]
    output[UNIT_POS] = fn(val)


@cube(launch=True)
def from_lane_into_first(output: TensorMut[Vector[F, N]], fn: Comptime[object],
                         lane: Comptime[int]):
    val = output[UNIT_POS]
    val2 = fn(val, u32(lane))
    if UNIT_POS == 0:
        output[0] = val2


@cube(launch=True)
def each_from_lane(output: TensorMut[Vector[F, N]], fn: Comptime[object], lane: Comptime[int]):
    val = output[UNIT_POS]
    output[UNIT_POS] = fn(val, u32(lane))


def _tensor(client: Any, values: np.ndarray, width: int = 1) -> TensorArg:
    """A 1-D tensor of `values` read as vectors of `width` (its shape counts vectors)."""
    handle = client.create_from_slice(f32.as_bytes(values.astype(np.float32)))
    return TensorArg.from_raw_parts(handle, (values.size // width,), (1,))


def _launch(client: Any, kernel: Any, units: int, width: int, values: np.ndarray,
            *comptime: Any) -> np.ndarray:
    t = _tensor(client, values, width)
    kernel.launch[f32](client, ONE, CubeDim.new_1d(units), width, t, *comptime)
    return f32.from_bytes(client.read_one(t.handle))


def _lanes(x: np.ndarray, p: int, w: int) -> np.ndarray:
    """The flat input as (lane, component)."""
    return x.reshape(p, w)


def _counting(p: int, w: int) -> np.ndarray:
    return np.arange(p * w, dtype=np.float64)


def _near_one(p: int, w: int) -> np.ndarray:
    # the reference keeps products near 1 to avoid overflow: 0.5, 1.25, 1.75, ...
    return np.array([(0.5, 1.25, 1.75)[k % 3] for k in range(p * w)])


def _reduce(reduce: Any, data: Any) -> Any:
    def expected(p: int, w: int) -> np.ndarray:
        x = data(p, w)
        want = x.copy()
        want[:w] = reduce(_lanes(x, p, w), axis=0)
        return want
    return expected


def _scan(scan: Any, data: Any, inclusive: bool, identity: float) -> Any:
    def expected(p: int, w: int) -> np.ndarray:
        lanes = _lanes(data(p, w), p, w)
        acc = scan(lanes, axis=0)
        if not inclusive:
            acc = np.concatenate([np.full((1, w), identity), acc[:-1]])
        return acc.reshape(-1)
    return expected


def _with(value_at: int, v: float) -> Any:
    def data(p: int, w: int) -> np.ndarray:
        x = _counting(p, w)
        # the reference puts the extreme at item 16, away from the ends (the middle of a
        # smaller plane's items)
        x[min(value_at, p * w // 2)] = v
        return x
    return data


# name: (kernel, function, lane or None, input(p, w), expected(p, w))
CASES = {
    "plane_sum": (reduce_into_first, plane_sum, None, _counting, _reduce(np.sum, _counting)),
    "plane_inclusive_sum": (each_unit, plane_inclusive_sum, None, _counting,
                            _scan(np.cumsum, _counting, True, 0.0)),
    "plane_exclusive_sum": (each_unit, plane_exclusive_sum, None, _counting,
                            _scan(np.cumsum, _counting, False, 0.0)),
    "plane_prod": (reduce_into_first, plane_prod, None, _near_one, _reduce(np.prod, _near_one)),
    "plane_inclusive_prod": (each_unit, plane_inclusive_prod, None, _near_one,
                             _scan(np.cumprod, _near_one, True, 1.0)),
    "plane_exclusive_prod": (each_unit, plane_exclusive_prod, None, _near_one,
                             _scan(np.cumprod, _near_one, False, 1.0)),
    "plane_max": (reduce_into_first, plane_max, None, _with(16, 999.0),
                  _reduce(np.max, _with(16, 999.0))),
    "plane_min": (reduce_into_first, plane_min, None, _with(16, -5.0),
                  _reduce(np.min, _with(16, -5.0))),
}


def _from_lane(pick: Any) -> Any:
    """Expected values of a shuffle: lane i reads lane pick(i, p) where that is in the plane,
    else keeps its own value (the reference's expectation at the plane's ends)."""
    def expected(p: int, w: int) -> np.ndarray:
        lanes = _lanes(_counting(p, w), p, w)
        want = lanes.copy()
        for i in range(p):
            j = pick(i, p)
            if 0 <= j < p:
                want[i] = lanes[j]
        return want.reshape(-1)
    return expected


def _first_from(lane: int) -> Any:
    def expected(p: int, w: int) -> np.ndarray:
        x = _counting(p, w)
        want = x.copy()
        want[:w] = x[lane * w:(lane + 1) * w]
        return want
    return expected


LANE_CASES = {
    "plane_broadcast": (from_lane_into_first, plane_broadcast, 2, _first_from(2)),
    "plane_shuffle": (from_lane_into_first, plane_shuffle, 0, _first_from(0)),
    "plane_shuffle_xor": (each_from_lane, plane_shuffle_xor, 1, _from_lane(lambda i, p: i ^ 1)),
    "plane_shuffle_up": (each_from_lane, plane_shuffle_up, 1, _from_lane(lambda i, p: i - 1)),
    "plane_shuffle_down": (each_from_lane, plane_shuffle_down, 1,
                           _from_lane(lambda i, p: i + 1)),
}


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_plane_reduction_and_scan_give_cubecls_results(client, name, width):
    kernel, fn, _, data, expected = CASES[name]
    p = plane_units(client)
    got = _launch(client, kernel, p, width, data(p, width), fn)
    approx(got, expected(p, width), 1e-5)


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("name", sorted(LANE_CASES))
def test_plane_broadcast_and_shuffles_give_cubecls_results(client, name, width):
    kernel, fn, lane, expected = LANE_CASES[name]
    p = plane_units(client)
    got = _launch(client, kernel, p, width, _counting(p, width), fn, lane)
    approx(got, expected(p, width), 1e-5)


def test_plane_min_over_a_cube_smaller_than_the_plane_ignores_the_inactive_lanes(client):
    # plane.rs test_plane_min_partial: 4 units, a 32-item buffer of 1..32; inactive lanes
    # reading as 0 would show up as a minimum of 0
    values = np.arange(1, 33, dtype=np.float64)
    got = _launch(client, reduce_into_first, 4, 1, values, plane_min)
    want = values.copy()
    want[0] = values[:4].min()
    approx(got, want, 1e-5)


@cube(launch=True)
def vote_all(output: TensorMut[f32]):
    val = output[UNIT_POS]
    output[UNIT_POS] = f32(plane_all(val < 5.0))


@cube(launch=True)
def vote_any(output: TensorMut[f32]):
    val = output[UNIT_POS]
    output[UNIT_POS] = f32(plane_any(val > 5.0))


def test_plane_all_and_any_give_cubecls_results(client):
    # plane.rs test_plane_all / test_plane_any: x % 5 on every lane, lane 4 set to 10; so
    # "all below 5" is false everywhere and "any above 5" true everywhere
    p = plane_units(client)
    values = np.arange(p, dtype=np.float64) % 5
    values[4] = 10.0
    t = _tensor(client, values)
    vote_all.launch(client, ONE, CubeDim.new_1d(p), t)
    assert f32.from_bytes(client.read_one(t.handle)).tolist() == [0.0] * p
    t = _tensor(client, values)
    vote_any.launch(client, ONE, CubeDim.new_1d(p), t)
    assert f32.from_bytes(client.read_one(t.handle)).tolist() == [1.0] * p


@cube(launch=True)
def elect_adds_one(output: TensorMut[f32]):
    if plane_elect():
        output[20] += 1.0


def test_plane_elect_picks_one_unit(client):
    # plane.rs test_plane_elect: on one plane exactly one unit adds 1 to item 20 (the
    # reference's 32 units; a cube of one plane here, so no two elected units race)
    p = plane_units(client)
    t = _tensor(client, np.zeros(max(p, 32)))
    elect_adds_one.launch(client, ONE, CubeDim.new_1d(p), t)
    want = np.zeros(max(p, 32))
    want[20] = 1.0
    assert f32.from_bytes(client.read_one(t.handle)).tolist() == want.tolist()


@cube(launch=True)
def ballot_first_eight(output: TensorMut[Vector[u32, 4]]):
    val2 = plane_ballot(UNIT_POS < 8)
    if UNIT_POS == 0:
        output[0] = val2


def test_plane_ballot_gives_cubecls_mask(client):
    # plane.rs test_plane_ballot: 32 units, units below 8 vote: [0b1111_1111, 0, 0, 0]
    handle = client.create_from_slice(u32.as_bytes(np.zeros(4, np.uint32)))
    ballot_first_eight.launch(client, ONE, CubeDim.new_1d(32),
                              TensorArg.from_raw_parts(handle, (1,), (1,)))
    assert u32.from_bytes(client.read_one(handle)).tolist() == [0b1111_1111, 0, 0, 0]
