"""`PLANE_DIM` is the device's plane (subgroup) width whatever the cube's size, on every runtime —
as a GPU reports it: lavapipe its SIMD width (8 lanes on a 256-bit llvmpipe), the CPU runtime 32
(a fixed width like most GPUs'). A cube smaller than a plane, or the tail of a cube the width does
not divide, fills only part of a plane: `UNIT_POS_PLANE` counts from 0 in each plane, and the
lanes past the cube's last unit are inactive for every plane op (a sum counts the units there
are, `plane_elect` picks one of them)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403


@cube(launch=True)
def plane_facts(out: SliceMut[u32]):
    u = UNIT_POS
    out[u * 4] = PLANE_DIM
    out[u * 4 + 1] = UNIT_POS_PLANE
    out[u * 4 + 2] = plane_sum(u32(1))
    out[u * 4 + 3] = select(plane_elect(), u32(1), u32(0))


def facts(client, units):
    out = BufferArg.from_raw_parts(
        client.create_from_slice(u32.as_bytes(np.zeros(4 * units, np.uint32))), 4 * units)
    plane_facts.launch(client, CubeCount.Static(1), CubeDim.new_1d(units), out)
    return u32.from_bytes(client.read_one(out.handle)).reshape(units, 4).T


def device_width(client):
    """What the device reports for a cube that fills several planes."""
    return int(facts(client, 64)[0][0])


def test_the_cpu_runtime_reports_a_fixed_width_of_32(cpu_client):
    assert device_width(cpu_client) == 32


def test_lavapipe_reports_its_simd_width(wgpu_client):
    adapter = wgpu_client.properties().adapter
    bits = re.search(r"llvmpipe .*\b(\d+) bits", adapter)
    width = device_width(wgpu_client)
    assert width in (4, 8, 16, 32, 64, 128)
    if bits:  # lavapipe: one lane per 32-bit slot of its vector registers
        assert width == int(bits.group(1)) // 32, adapter


@pytest.mark.parametrize("units", [1, 4, 12, 40])
def test_a_small_or_ragged_cube_fills_part_of_a_plane(client, units):
    width = device_width(client)
    dim, lane, count, elected = facts(client, units)
    assert list(dim) == [width] * units  # never min(width, units)
    assert list(lane) == [u % width for u in range(units)]
    # each plane's sum counts the units it holds: `width`, or fewer in the last one
    assert list(count) == [min(width, units - u // width * width) for u in range(units)]
    planes = -(-units // width)
    assert int(elected.sum()) == planes and all(elected[p * width] for p in range(planes))
