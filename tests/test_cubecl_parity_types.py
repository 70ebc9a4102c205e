"""CubeCL parity: user types — `#[derive(CubeType, CubeLaunch)]` structs and enums — with the
inputs and expected outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/launch.rs`
(`kernel_with_comptime_tag`) and `enums.rs` (its whole testgen list), on both runtimes.

Where Python spells it differently: a tuple variant `A(i32, u32)` is a nested class with named
fields (`case TestEnum.A(x, y):` is positional all the same); `TestEnum::new_A(x, y)` and
`TestEnumArgs::C(10)` are `TestEnum.A(x, y)` and `TestEnum.C(10)`; `RuntimeEnumSingleValueLaunch::
Runtime(RuntimeEnumSingleValueArgs::B(BStructLaunch::new(5, 5)))` is
`RuntimeEnumSingleValue.B(BStruct(5, 5))`; `ComptimeOption::None` is `ComptimeOption.Nothing()`;
CubeCL's `let v = match ... { .. }` assigns `v` in each arm. CubeCL's `ComptimeTagLaunch::new(array_arg, "zero")` is
`ComptimeTag(array_arg, "zero")`; `#[cube(comptime)] tag: String` is `tag: Comptime[str]`;
`comptime![&output.tag == "zero"]` is `output.tag == "zero"` (a comptime comparison folds).
Kernels: `tests/fixtures/aggregate_kernels.py`.
"""

from __future__ import annotations

from cubelab import CubeCount, CubeDim
import numpy as np

from tests.fixtures.aggregate_kernels import (
    ArrayFloatInt,
    BStruct,
    ComptimeOption,
    ComptimeTag,
    RuntimeEnumEmpty,
    RuntimeEnumSingleValue,
    SimpleEnumMut,
    SimpleEnumRef,
    TestEnum,
    kernel_array_float_int,
    kernel_comptime_option_scalar,
    kernel_runtime_variants_empty,
    kernel_runtime_variants_empty_wildcard,
    kernel_runtime_variants_value,
    kernel_scalar_enum,
    kernel_tuple_enum,
    kernel_with_comptime_tag,
)
from tests.parity import buf, empty, read

ONE, UNIT = CubeCount.Static(1, 1, 1), CubeDim.new_1d(1)


# -- launch.rs ---------------------------------------------------------------------------------
def test_kernel_with_comptime_tag(client):
    for tag, expected in (("zero", 0.0), ("not_zero", 1.0)):
        array_arg = buf(client, [5.0])
        kernel_with_comptime_tag.launch(client, ONE, UNIT, ComptimeTag(array_arg, tag))
        assert read(client, array_arg)[0] == expected, tag


# -- enums.rs ----------------------------------------------------------------------------------
def test_scalar_enum(client):
    output = empty(client, 1)
    kernel_scalar_enum.launch(client, ONE, UNIT, TestEnum.C(10), output)
    assert read(client, output)[0] == 10.0


def test_scalar_enum_every_variant_binds_its_payload(client):
    """Beyond CubeCL's one case (C(10)): each arm, or-patterns and the struct payload."""
    for value, expected in ((TestEnum.A(-3, 5), 2.0), (TestEnum.B(BStruct(2, 3)), 5.0),
                            (TestEnum.D(), 999.0), (TestEnum.E(7), 7.0),
                            (TestEnum.F(1, 4), 5.0)):
        output = empty(client, 1)
        kernel_scalar_enum.launch(client, ONE, UNIT, value, output)
        assert read(client, output)[0] == expected, value


def test_runtime_enum_empty(client):
    output = empty(client, 1)
    kernel_runtime_variants_empty.launch_unchecked(client, ONE, UNIT, 1, output)
    assert read(client, output)[0] == 20.0
    for test, expected in ((0, 10.0), (2, 30.0), (7, 30.0)):
        output = empty(client, 1)
        kernel_runtime_variants_empty.launch_unchecked(client, ONE, UNIT, test, output)
        assert read(client, output)[0] == expected, test


def test_runtime_enum_value(client):
    output = empty(client, 1)
    kernel_runtime_variants_value.launch_unchecked(
        client, ONE, UNIT, RuntimeEnumSingleValue.B(BStruct(5, 5)), output)
    assert read(client, output)[0] == 5.0


def test_runtime_enum_empty_wildcard(client):
    output = empty(client, 1)
    kernel_runtime_variants_empty_wildcard.launch_unchecked(client, ONE, UNIT,
                                                            RuntimeEnumEmpty.C(), output)
    assert read(client, output)[0] == 10.0


def test_array_float_int(client):
    array = empty(client, 1, np.float32)
    kernel_array_float_int.launch(client, ONE, UNIT, ArrayFloatInt.Float(array))
    assert read(client, array, np.float32)[0] == 10.0
    array = empty(client, 1, np.int32)
    kernel_array_float_int.launch(client, ONE, UNIT, ArrayFloatInt.Int(array))
    assert read(client, array, np.int32)[0] == 20


def test_comptime_option_scalar(client):
    for opt, expected in ((ComptimeOption.Some(3.5), 3.5), (ComptimeOption.Nothing(), 999.0)):
        output = empty(client, 1)
        kernel_comptime_option_scalar.launch(client, ONE, UNIT, opt, output)
        assert read(client, output)[0] == expected, opt


def test_tuple_enum(client):
    first, second = buf(client, [20], np.uint32), buf(client, [5], np.uint32)
    kernel_tuple_enum.launch(client, ONE, UNIT, SimpleEnumMut.Variant(first),
                             SimpleEnumRef.Variant(second))
    assert read(client, first, np.uint32)[0] == 5
