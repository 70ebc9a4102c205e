"""CubeCL parity: user types — `#[derive(CubeType, CubeLaunch)]` structs and enums — with the
inputs and expected outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/launch.rs`
(`kernel_with_comptime_tag`) and `enums.rs` (its whole testgen list), on both runtimes.

Where Python spells it differently: CubeCL's `ComptimeTagLaunch::new(array_arg, "zero")` is
`ComptimeTag(array_arg, "zero")`; `#[cube(comptime)] tag: String` is `tag: Comptime[str]`;
`comptime![&output.tag == "zero"]` is `output.tag == "zero"` (a comptime comparison folds).
Kernels: `tests/fixtures/aggregate_kernels.py`.
"""

from __future__ import annotations

from cubelab import CubeCount, CubeDim
from tests.fixtures.aggregate_kernels import ComptimeTag, kernel_with_comptime_tag
from tests.parity import buf, read

ONE, UNIT = CubeCount.Static(1, 1, 1), CubeDim.new_1d(1)


# -- launch.rs ---------------------------------------------------------------------------------
def test_kernel_with_comptime_tag(client):
    for tag, expected in (("zero", 0.0), ("not_zero", 1.0)):
        array_arg = buf(client, [5.0])
        kernel_with_comptime_tag.launch(client, ONE, UNIT, ComptimeTag(array_arg, tag))
        assert read(client, array_arg)[0] == expected, tag
