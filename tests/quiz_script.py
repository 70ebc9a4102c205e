"""Seed 000's quiz program, run under CUBELAB_DEBUG_LOG=stdout by test_debug_log.py."""

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim, Device
from cubelab.prelude import f32
from kernels import add

client = Device.wgpu().client()


def run_add(checked, relu):
    x = client.create_from_slice(f32.as_bytes(np.array([1, -2, 3, -4, 5, -6], np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.full(6, 0.5, np.float32)))
    out = client.empty(6 * 4)
    launcher = add.launch if checked else add.launch_unchecked
    launcher[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(8),
                  BufferArg.from_raw_parts(x, 6), BufferArg.from_raw_parts(y, 6),
                  BufferArg.from_raw_parts(out, 6), relu)
    values = f32.from_bytes(client.read_one(out)).tolist()
    print(f"add checked={str(checked).lower()} relu={str(relu).lower()} out = {values}")


for checked, relu in [(True, False), (False, False), (True, True), (True, False)]:
    run_add(checked, relu)
