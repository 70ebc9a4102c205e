"""CubeCL parity: barriers and uniform loads, with the inputs and expected outputs of CubeCL's
`crates/cubecl-core/src/runtime_tests/synchronization.rs`, on both runtimes.

CubeCL's single shared value `Shared::<F>::new()` is a one-item `SharedMemory[F](1)` here;
`terminate!()` is `return`. Its `sync_plane` test has no counterpart: WGSL (naga in wgpu 0.32)
has no subgroup barrier.
"""

from __future__ import annotations

import numpy as np

from cubelab import CubeCount, CubeDim
from cubelab.prelude import *  # noqa: F403
from tests.parity import empty, read
from tests.test_language_uniform_load import uniform_count  # synchronization.rs's kernel

F = Float.generic("F")
N = Size.generic("N")
ONE = CubeCount.Static(1)


@cube(launch=True)
def sync_cube_neighbours(buffer: SliceMut[u32], out: SliceMut[u32]):
    unit_pos = UNIT_POS
    buffer[unit_pos] = UNIT_POS
    sync_cube()
    if unit_pos != 0:
        out[unit_pos] = buffer[unit_pos - 1] + buffer[unit_pos]


def test_sync_cube_makes_a_neighbours_write_visible(client):
    # synchronization.rs test_sync_cube: a 8x2 cube; unit i reads unit i-1's write: 2i - 1
    out = empty(client, 32, np.uint32)
    sync_cube_neighbours.launch(client, ONE, CubeDim.new_2d(8, 2), empty(client, 32, np.uint32),
                                out)
    assert read(client, out, np.uint32)[1:16].tolist() == [2 * i - 1 for i in range(1, 16)]


@cube(launch=True)
def finished_sync_cube(buffer: SliceMut[u32], out: SliceMut[u32]):
    unit_pos = UNIT_POS
    buffer[unit_pos] = UNIT_POS
    if UNIT_POS > 16:
        return
    sync_cube()
    sync_cube()
    if UNIT_POS != 0:
        out[unit_pos] = buffer[unit_pos - 1] + buffer[unit_pos]
    sync_cube()


def test_barriers_after_an_early_return_that_no_unit_takes(client):
    # synchronization.rs test_finished_sync_cube: two 8x2 cubes (no unit passes 16)
    out = empty(client, 32, np.uint32)
    finished_sync_cube.launch(client, CubeCount.Static(2), CubeDim.new_2d(8, 2),
                              empty(client, 32, np.uint32), out)
    assert read(client, out, np.uint32)[1:8].tolist() == [2 * i - 1 for i in range(1, 8)]


@cube(launch=True)
def sync_cube_shared(out: SliceMut[F]):
    shared_memory = SharedMemory[F](1)
    if UNIT_POS == 0:
        shared_memory[0] = F.new(1.0)
    sync_cube()
    out[UNIT_POS] = shared_memory[0]


def test_a_shared_value_written_by_one_unit_is_seen_by_all_after_sync_cube(client):
    out = empty(client, 64)
    sync_cube_shared.launch[f32](client, ONE, CubeDim.new_2d(32, 2), out)
    assert read(client, out).tolist() == [1.0] * 64


def test_workgroup_uniform_load_gives_every_unit_the_value_a_barrier_may_depend_on(client):
    out = empty(client, 64, np.uint32)
    uniform_count.launch(client, ONE, CubeDim.new_2d(32, 2), out)
    assert read(client, out, np.uint32).tolist() == [3] * 64


@cube(launch=True)
def uniform_load_vector(out: SliceMut[Vector[f32, N]]):
    smem = SharedMemory[Vector[f32, N]](1)
    if UNIT_POS == 0:
        smem[0] = Vector.new(f32(7.0))
    sync_cube()
    out[UNIT_POS] = workgroup_uniform_load(smem[0])


def test_workgroup_uniform_load_of_a_vector(client):
    for width in (1, 2, 4):
        out = empty(client, 64 * width)
        uniform_load_vector.launch(client, ONE, CubeDim.new_2d(32, 2), width, out)
        assert read(client, out).tolist() == [7.0] * (64 * width)
