"""CubeCL parity: forms a CubeCL user writes that cubelab once refused — `Vector`'s static
methods, the atomic uniform load, tuple unpacking, `device_properties()` — with the inputs and
expected outputs of CubeCL's `crates/cubecl-core/src/runtime_tests/` (`binary.rs` `test_dot`,
`unary.rs` `test_magnitude` / `test_normalize` / `test_vector_sum`, `synchronization.rs`
`test_workgroup_uniform_load_atomic`, `assign.rs`, `properties.rs`) and its nested-destructuring
compile test (`tests/pass/nested_tuple_destructure.rs`), on both runtimes.

One deliberate difference is pinned here too: `v = Vector.new(x)` followed by `v[1] = y` — rustc
infers `v`'s width from a later line, cubelab's expansion runs line by line — is refused with a
caret on the `Vector.new` line that names the width to write.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.errors import KernelSourceError
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403
from tests.parity import approx, buf, empty, read
from tests.test_cubecl_parity_binary import BINARY_CASES
from tests.test_cubecl_parity_unary import FLOAT_CASES

F = Float.generic("F")
In = Size.generic("In")
Out = Size.generic("Out")
N = Size.generic("N")
ONE = CubeCount.Static(1)


# -- Vector's static methods (binary.rs test_dot, unary.rs) ------------------------------------
@cube(launch_unchecked=True)
def static_dot(lhs: Slice[Vector[F, In]], rhs: Slice[Vector[F, In]],
               out: SliceMut[Vector[F, Out]]):
    if ABSOLUTE_POS < rhs.len():
        out[ABSOLUTE_POS] = Vector.dot(lhs[ABSOLUTE_POS], rhs[ABSOLUTE_POS])


@cube(launch_unchecked=True)
def static_unary(x: Slice[Vector[F, In]], out: SliceMut[Vector[F, Out]], name: Comptime[str]):
    if ABSOLUTE_POS < x.len():
        v = x[ABSOLUTE_POS]
        if name == "magnitude":
            out[ABSOLUTE_POS] = Vector.magnitude(v)
        elif name == "normalize":
            out[ABSOLUTE_POS] = Vector.normalize(v)
        else:
            out[ABSOLUTE_POS] = Vector.vector_sum(v)


def test_vector_dot_written_as_cubecls_static_method_gives_cubecls_results(client):
    for width, out_width, lhs, rhs, expected in BINARY_CASES["dot"][1]:
        out = empty(client, len(expected))
        static_dot.launch_unchecked[f32](client, ONE, CubeDim.new_1d(len(lhs) // width), width,
                                         out_width, buf(client, lhs), buf(client, rhs), out)
        approx(read(client, out), np.float32(expected), 0.001)


@pytest.mark.parametrize("name", ["magnitude", "normalize", "vector_sum"])
def test_vector_static_methods_give_cubecls_results_at_widths_1_2_4(client, name):
    for width, out_width, values, expected in FLOAT_CASES[name][1]:
        out = empty(client, len(expected))
        static_unary.launch_unchecked[f32](client, ONE, CubeDim.new_1d(len(values) // width),
                                           width, out_width, buf(client, values), out, name)
        approx(read(client, out), np.float32(expected), 0.02)


@cube(launch=True)
def unknown_static(out: SliceMut[f32]):
    out[0] = Vector.frobnicate(f32(1.0))


def test_an_unknown_vector_static_method_is_refused_with_the_list_of_known_ones():
    with pytest.raises(KernelSourceError, match=r"Vector.frobnicate(.|\n)*\^(.|\n)*Vector\.dot"):
        instance(unknown_static).define()


# -- Vector.new(x) then v[1] = y: say which width to write --------------------------------------
@cube(launch=True)
def splat_then_component(out: SliceMut[Vector[F, N]]):
    v = Vector.new(F.new(1.0))
    if UNIT_POS == 0:
        v[1] = F.new(3.0)
        out[0] = v


@cube(launch=True)
def sized_then_component(out: SliceMut[Vector[F, N]]):
    # what the refusal says to write: the width where the vector starts
    v = Vector[F, N].new(F.new(1.0))
    if UNIT_POS == 0:
        v[1] = F.new(3.0)
        out[0] = v


def test_a_component_write_into_a_splat_names_the_width_to_write_at_its_vector_new():
    with pytest.raises(KernelSourceError) as err:
        instance(splat_then_component, f32, sizes=(4,)).define()
    text = str(err.value)
    assert "v = Vector.new(F.new(1.0))\n    ^" in text  # the caret is on the line to change
    assert "`v[1] = ...` at line" in text
    assert "Vector[F, N].new(...)` (N is 4 in this launch)" in text


def test_the_width_written_where_the_vector_starts_makes_the_component_write_work(client):
    # assign.rs kernel_add_assign_vector's shape: a splat, one component replaced, stored whole
    out = empty(client, 4)
    sized_then_component.launch[f32](client, ONE, CubeDim.new_1d(1), 4, out)
    assert read(client, out).tolist() == [1.0, 3.0, 1.0, 1.0]


# -- workgroup_uniform_load on an atomic (synchronization.rs) -----------------------------------
@cube(launch=True)
def uniform_atomic(out: SliceMut[u32]):
    count = SharedMemory[Atomic[u32]](1)
    if UNIT_POS == 0:
        count[0].store(u32(3))
    sync_cube()
    n = workgroup_uniform_load(count[0])
    if n > 0:
        sync_cube()  # a barrier under a branch on the uniform value
    out[UNIT_POS] = n


@cube(launch=True)
def uniform_atomic_cubecl_name(out: SliceMut[u32]):
    count = SharedMemory[Atomic[u32]](1)
    if UNIT_POS == 0:
        count[0].store(u32(3))
    sync_cube()
    n = workgroup_uniform_load_atomic(count[0])
    if n > 0:
        sync_cube()
    out[UNIT_POS] = n


@pytest.mark.parametrize("kernel", [uniform_atomic, uniform_atomic_cubecl_name])
def test_a_uniform_load_of_a_shared_atomic_gives_every_unit_its_value(client, kernel):
    out = empty(client, 64, np.uint32)
    kernel.launch(client, ONE, CubeDim.new_2d(32, 2), out)
    assert read(client, out, np.uint32).tolist() == [3] * 64


def test_the_atomic_uniform_load_is_one_wgsl_op_and_an_atomic_load_after_a_barrier_in_msl():
    import cubelab.inspect as ci

    inst = instance(uniform_atomic, cube_dim=CubeDim.new_2d(32, 2))
    assert "workgroupUniformLoad(&" in ci.wgsl(inst)
    assert "threadgroup_barrier(mem_flags::mem_threadgroup);\nuint32_t const" in ci.msl(inst)
    assert "atomic_load_explicit(" in ci.msl(inst)


def test_the_atomic_uniform_load_msl_compiles_under_the_metal_shim(tmp_path):
    from tests.test_msl import compile_under_shim, msl_of

    compile_under_shim({"uniform_atomic": msl_of(instance(uniform_atomic,
                                                          cube_dim=CubeDim.new_2d(32, 2)))},
                       tmp_path)


@cube(launch=True)
def uniform_global_atomic(h: SliceMut[Atomic[u32]], out: SliceMut[u32]):
    out[UNIT_POS] = workgroup_uniform_load(h[0])


def test_a_uniform_load_of_a_global_atomic_is_refused_with_a_caret():
    with pytest.raises(KernelSourceError, match=r"not in shared memory(.|\n)*\^(.|\n)*\.load\(\)"):
        instance(uniform_global_atomic, cube_dim=CubeDim.new_1d(4)).define()


# -- tuples (assign.rs, tests/pass/nested_tuple_destructure.rs) ---------------------------------
@cube
def nested_sum(t):
    a, b, (c, d, (e, f)) = t
    return a + b + c + d + e + f


@cube
def sibling_nested_sum(t):
    (a, b), c, (d, (e, f)) = t
    return a + b + c + d + e + f


@cube
def ordered(a: u32, b: u32):
    if a > b:
        return b, a  # a runtime early return of a tuple
    return a, b


@cube(launch=True)
def tuples(x: Slice[u32], out: SliceMut[u32]):
    if UNIT_POS == 0:
        out[0] = nested_sum((x[0], x[1], (x[2], x[3], (x[4], x[5]))))
        out[1] = sibling_nested_sum(((x[0], x[1]), x[2], (x[3], (x[4], x[5]))))
        lo, hi = ordered(x[5], x[0])
        out[2] = lo
        out[3] = hi
        a, b = x[0], x[1]
        a, b = b, a  # read whole before either is assigned: a swap
        out[4] = a * u32(10) + b
        p = (x[0], x[1])
        if x[2] > u32(0):
            p = (x[2], x[3])  # a tuple assigned in a runtime branch is the one read after it
        first, second = p
        out[5] = first * u32(10) + second


def test_tuples_unpack_nested_from_helpers_and_swap_as_in_cubecl(client):
    xs = buf(client, [1, 2, 3, 4, 5, 6], np.uint32)
    out = empty(client, 6, np.uint32)
    tuples.launch(client, ONE, CubeDim.new_1d(1), xs, out)
    assert read(client, out, np.uint32).tolist() == [21, 21, 1, 6, 21, 34]


@cube(launch=True)
def unpack_a_vector(x: Slice[Vector[f32, 2]], out: SliceMut[f32]):
    a, b = x[0]
    out[0] = a + b


@cube(launch=True)
def unpack_too_many(out: SliceMut[u32]):
    a, b, c = (u32(1), u32(2))
    out[0] = a + b + c


@pytest.mark.parametrize("kernel, message", [
    (unpack_a_vector, r"cannot unpack a runtime vec2<f32>(.|\n)*\^(.|\n)*v\[0\]"),
    (unpack_too_many, r"3 names are assigned from a tuple of 2 items(.|\n)*\^"),
])
def test_unpacking_what_is_not_a_tuple_of_that_size_is_refused_with_a_caret(kernel, message):
    with pytest.raises(KernelSourceError, match=message):
        instance(kernel).define()


def test_starred_unpacking_is_refused_when_the_kernel_is_decorated():
    with pytest.raises(KernelSourceError, match=r"starred unpacking(.|\n)*\^(.|\n)*a, b, c = t"):
        @cube(launch=True)
        def unpack_starred(out: SliceMut[u32]):
            a, *rest = (u32(1), u32(2), u32(3))
            out[0] = a


# -- device_properties() (properties.rs) --------------------------------------------------------
@cube(launch=True)
def kernel_properties(output: SliceMut[u32]):
    if UNIT_POS == 0:
        properties = device_properties()
        output[0] = properties.hardware.plane_size_min
        output[1] = properties.hardware.plane_size_max


def test_device_properties_give_the_kernel_the_devices_plane_sizes(client):
    out = empty(client, 2, np.uint32)
    kernel_properties.launch(client, ONE, CubeDim.new_1d(1), out)
    props = client.properties()
    assert read(client, out, np.uint32).tolist() == [props.plane_size_min, props.plane_size_max]
    assert 1 <= props.plane_size_min <= props.plane_size_max
