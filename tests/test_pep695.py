"""On Python >= 3.12, `def saxpy[F: Float, N: Size](...)` is the same kernel as with
`Float.generic("F")`. (Python 3.11 cannot parse the syntax: there the test is skipped.)"""

import sys

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="PEP 695 syntax needs Python >= 3.12")


def test_pep695_type_parameters_make_the_same_generics(client):
    from tests.py312.pep695_kernels import saxpy695  # imported here: older Pythons cannot parse it

    assert [g.name for g in saxpy695.generics] == ["F", "N"]
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    saxpy695.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0,
                         BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)),
                                  np.arange(1, 32, 2, dtype=np.float32))
