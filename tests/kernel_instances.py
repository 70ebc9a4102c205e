"""Every core and zoo kernel as one compile-time instance each, for tests that compare what
different consumers make of the same KernelId (the analysis, the inspector, the server)."""

from __future__ import annotations

from cubelab import CubeDim
from cubelab.frontend.kernel import KernelInstance
from cubelab.inspect import instance
from cubelab.prelude import f32
from kernels import add, saxpy, topology
from zoo import ZOO


def core_and_zoo_instances() -> list[tuple[str, KernelInstance]]:
    core = [
        ("saxpy<f32, 4>", instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))),
        ("saxpy<f32, 1> unchecked-io rule", instance(saxpy, f32, sizes=(1,))),
        ("add<f32> relu", instance(add, f32, cube_dim=CubeDim.new_1d(8), comptime=(True,))),
        ("add<f32> unchecked", instance(add, f32, cube_dim=CubeDim.new_1d(8), comptime=(False,),
                                        checked=False)),
        ("topology", instance(topology, cube_dim=CubeDim.new_2d(2, 2))),
    ]
    return core + list(ZOO)
