import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import u32
from tests.fixtures.kernels import topology


def test_absolute_pos_over_a_3d_grid_of_2d_cubes_covers_0_to_419(client):
    out = client.empty(420 * 4)
    topology.launch(client, CubeCount.Static(3, 5, 7), CubeDim.new_2d(2, 2),
                    BufferArg.from_raw_parts(out, 420))
    np.testing.assert_array_equal(u32.from_bytes(client.read_one(out)), np.arange(420))
