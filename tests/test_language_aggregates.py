"""@cube_type structs and enums as kernel values and launch arguments (CubeCL's
`#[derive(CubeType, CubeLaunch)]`), cubelab's own rules; CubeCL's own tests with its inputs and
expected outputs are in `test_cubecl_parity_types.py`. Kernels: `tests/fixtures/aggregate_kernels.py`.
"""

from __future__ import annotations

import numpy as np
import pytest

import cubelab.inspect as ci
from cubelab import CubeCount, CubeDim
from cubelab.errors import LaunchError
from cubelab.runtime import events as ev
from tests.fixtures.aggregate_kernels import (
    Acc,
    Job,
    run_job,
    struct_through_helpers,
)
from tests.parity import buf, empty, read

ONE = CubeCount.Static(1)


def test_a_struct_built_in_a_kernel_goes_through_helpers_merges_after_a_branch_and_is_written_back(
        client):
    x = np.array([1, 2, 3, 4], np.float32)
    xs, out, counts = buf(client, x), empty(client, 4), empty(client, 4, np.uint32)
    struct_through_helpers.launch(client, ONE, CubeDim.new_1d(4), xs, out, counts)
    prefix = np.cumsum(x)
    big = x > 2
    np.testing.assert_array_equal(read(client, out), np.where(big, prefix * 10, prefix))
    np.testing.assert_array_equal(read(client, counts, np.uint32),
                                  np.where(big, np.arange(1, 5), 100))


def test_a_struct_launch_argument_flattens_into_a_buffer_a_scalar_and_a_comptime_field(client):
    data = buf(client, [1.0, 2.0, 3.0])
    run_job.launch(client, ONE, CubeDim.new_1d(4), Job(data, 2.0, "square"))
    np.testing.assert_array_equal(read(client, data), [2.0, 8.0, 18.0])
    run_job.launch(client, ONE, CubeDim.new_1d(4), Job(data, 0.5, "add"))
    np.testing.assert_array_equal(read(client, data), [2.5, 8.5, 18.5])


def test_each_comptime_field_value_is_a_kernel_id_and_a_repeat_is_a_cache_hit(client):
    client.clear_cache()
    data = buf(client, [1.0, 2.0])
    with client.events.record(ev.CompileStarted, ev.CacheHit) as rec:
        for mode, scale in (("square", 1.0), ("add", 1.0), ("square", 3.0)):
            run_job.launch(client, ONE, CubeDim.new_1d(2), Job(data, scale, mode))
        client.sync()
    assert len(rec.of(ev.CompileStarted)) == 2, "two comptime values are two kernels"
    assert len(rec.of(ev.CacheHit)) == 1, "a new runtime scalar is the same kernel"


def test_the_kernel_id_shows_the_struct_type_and_its_fields_as_compilation_args():
    ids = [ci.instance(run_job, comptime=(Job(None, 1.0, mode),)).id() for mode in ("a", "b")]
    text = ids[0].debug()
    assert "job: JobCompilationArg {" in text and "mode: a," in text and "scale: ()," in text
    assert "data: BufferCompilationArg {" in text
    assert ci.diff(ids[0], ids[1]) == ["`job` changed: JobCompilationArg {\n    data: "
                                       "BufferCompilationArg {\n        inplace: None,\n    },\n"
                                       "    scale: (),\n    mode: a,\n} → JobCompilationArg {\n"
                                       "    data: BufferCompilationArg {\n        inplace: None,"
                                       "\n    },\n    scale: (),\n    mode: b,\n}"]
    rebuilt = ci.instance_from_id(run_job, ids[1])
    assert rebuilt.id() == ids[1]


def test_a_launch_struct_missing_a_field_names_the_kernel_the_argument_and_the_field(client):
    job = Job(buf(client, [1.0]), 2.0, "square")
    del job.scale
    with pytest.raises(LaunchError, match=r"launch of `run_job`: argument `job` \(Job\) has no "
                                          r"value for its field `scale`"):
        run_job.launch(client, ONE, CubeDim.new_1d(1), job)


def test_a_launch_struct_with_a_wrong_typed_field_names_the_kernel_the_argument_and_the_field(
        client):
    with pytest.raises(LaunchError, match=r"launch of `run_job`: argument `job.scale` is f32, "
                                          r"got 'two'"):
        run_job.launch(client, ONE, CubeDim.new_1d(1), Job(buf(client, [1.0]), "two", "square"))
    with pytest.raises(LaunchError, match=r"launch of `run_job`: argument `job.data` is a "
                                          r"SliceMut\[f32\], got (.|\n)*hint: pass BufferArg"):
        run_job.launch(client, ONE, CubeDim.new_1d(1), Job(2.0, 1.0, "square"))
    with pytest.raises(LaunchError, match=r"launch of `run_job`: argument `job` is a Job, got "
                                          r"Acc(.|\n)*hint: pass Job\(\.\.\.\)"):
        run_job.launch(client, ONE, CubeDim.new_1d(1), Acc(1.0, 2))


def test_a_host_struct_is_built_like_a_dataclass_and_refuses_a_missing_field_at_once():
    job = Job(data=None, scale=1.0, mode="x")
    assert job == Job(None, 1.0, "x") and repr(job) == "Job(data=None, scale=1.0, mode='x')"
    assert Job.__match_args__ == ("data", "scale", "mode")
    with pytest.raises(TypeError, match=r"Job\(\.\.\.\) is missing the field `mode`"):
        Job(None, 1.0)
    with pytest.raises(TypeError, match="Job has no field `size`"):
        Job(None, 1.0, "x", size=3)


# -- enums -------------------------------------------------------------------------------------
from tests.fixtures.aggregate_kernels import (  # noqa: E402
    BStruct,
    Scene,
    Shape,
    TestEnum,
    kernel_runtime_variants_value,
    kernel_scalar_enum,
    scene_area,
    shapes_with_guards,
)
from tests.fixtures.aggregate_kernels import RuntimeEnumSingleValue  # noqa: E402


def test_a_runtime_enum_built_in_branches_matches_with_or_patterns_guards_and_a_wildcard(client):
    kind = np.array([0, 0, 1, 1, 2, 1], np.uint32)
    a = np.array([1, 3, 2, 4, 5, 1], np.float32)
    b = np.array([9, 9, 5, 1, 5, 1], np.float32)
    out, tags = empty(client, 6), empty(client, 6, np.uint32)
    shapes_with_guards.launch(client, ONE, CubeDim.new_1d(8), buf(client, kind, np.uint32),
                              buf(client, a), buf(client, b), out, tags)
    np.testing.assert_array_equal(read(client, out),
                                  np.where(kind == 0, 3 * a * a, np.where(kind == 1, a * b, 0)))
    # Circle(r) | Rect(r, _) if r > 2 → 7; Rect(w, h) → w < h; anything else → 9
    np.testing.assert_array_equal(read(client, tags, np.uint32), [9, 7, 1, 7, 9, 0])


def test_a_runtime_enum_in_a_struct_launch_argument_and_chosen_by_a_conditional_expression(
        client):
    out = empty(client, 2)
    scene_area.launch(client, ONE, CubeDim.new_1d(1), Scene(Shape.Rect(2.0, 3.0), 2.0), out)
    np.testing.assert_array_equal(read(client, out), [12.0, 6.0])
    scene_area.launch(client, ONE, CubeDim.new_1d(1), Scene(Shape.Circle(2.0), 0.5), out)
    np.testing.assert_array_equal(read(client, out), [6.0, 3.0])


def test_a_default_enums_variant_is_in_the_kernel_id_and_a_runtime_enums_is_not(client):
    client.clear_cache()
    with client.events.record(ev.CompileStarted, ev.CacheHit) as rec:
        for value in (TestEnum.C(10), TestEnum.C(20), TestEnum.A(1, 2)):
            kernel_scalar_enum.launch(client, ONE, CubeDim.new_1d(1), value, empty(client, 1))
        for value in (RuntimeEnumSingleValue.A(), RuntimeEnumSingleValue.B(BStruct(1, 2))):
            kernel_runtime_variants_value.launch_unchecked(client, ONE, CubeDim.new_1d(1), value,
                                                           empty(client, 1))
        client.sync()
    assert len(rec.of(ev.CompileStarted)) == 3 and len(rec.of(ev.CacheHit)) == 2
    kid = ci.instance(kernel_scalar_enum, comptime=(TestEnum.B(BStruct(1, 2)),)).id()
    assert "test: TestEnumCompilationArg::B {" in kid.debug()
    assert ci.instance_from_id(kernel_scalar_enum, kid).id() == kid


def test_a_match_on_a_runtime_enum_is_one_switch_on_its_tag_in_wgsl_and_msl():
    k = ci.instance(kernel_runtime_variants_value, checked=False)
    assert "switch " in ci.wgsl(k) and "switch(" in ci.msl(k).replace("switch (", "switch(")


def test_a_runtime_variants_enum_refuses_a_buffer_or_comptime_payload():
    from cubelab.prelude import Slice, cube_type, f32

    with pytest.raises(TypeError, match="a runtime-variants enum's payload holds runtime values"):
        @cube_type(runtime_variants=True)
        class Bad:
            class A:
                data: Slice[f32]
    with pytest.raises(TypeError, match=r"`Shape` is an enum\n  hint: build one of its variants"):
        Shape()


def test_trace_and_access_map_re_run_a_struct_launch_with_its_buffer_fields_copied(client):
    data = buf(client, [1.0, 2.0, 3.0])
    amap = ci.access_map(run_job.launch, client, ONE, CubeDim.new_1d(4),
                         Job(data, 2.0, "square"))
    writes = sorted(a.index for a in amap.accesses if a.kind == "write")
    assert writes == [0, 1, 2] and {a.array for a in amap.accesses} == {"job.data"}
    t = ci.trace(run_job.launch, client, ONE, CubeDim.new_1d(4), Job(data, 2.0, "square"),
                 units=[1])
    assert t.kernel == "run_job" and t.failure is None
    if client.name() != "cpu<numpy>":  # the re-run worked on copies: the original is untouched
        np.testing.assert_array_equal(read(client, data), [1.0, 2.0, 3.0])


def test_explain_shows_a_struct_argument_field_by_field_on_one_line():
    rows = dict((k, (v, why)) for k, v, why in ci.explain(
        ci.instance(run_job, comptime=(Job(None, 1.0, "square"),))))
    text, why = rows["info.job"]
    assert text == ("JobCompilationArg { data: BufferCompilationArg { inplace: None, }, "
                    "scale: (), mode: square, }")
    assert "@cube_type" in why


def test_redefining_a_struct_with_another_field_type_makes_another_kernel_id():
    """A re-run notebook cell: the same kernel source over a struct whose field changed type
    must not reuse the pipeline built for the old layout."""
    import linecache
    import textwrap
    import types

    ids = []
    for field_type in ("f32", "u32"):
        src = textwrap.dedent(f"""
            from cubelab.prelude import *

            @cube_type
            class Cfg:
                scale: {field_type}

            @cube(launch=True)
            def apply(cfg: Cfg, out: SliceMut[f32]):
                out[0] = f32.cast_from(cfg.scale)
            """)
        name = f"<redefined-cell-{field_type}>"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        cell = types.ModuleType("redefined_cell")
        exec(compile(src, name, "exec"), cell.__dict__)  # noqa: S102 - the test's own cell
        ids.append(ci.default_instance(cell.apply).id())
    assert ids[0].debug() == ids[1].debug(), "same kernel, same argument kinds"
    assert ids[0] != ids[1], "but the struct's layout changed: another kernel"


def test_vector_and_generic_fields_methods_and_a_struct_copied_into_another(client):
    from cubelab.prelude import f32
    from tests.fixtures.aggregate_kernels import particles

    xs = np.array([[1, 2], [3, -1], [0.5, 4]], np.float32)
    out = empty(client, 3)
    particles.launch[f32](client, ONE, CubeDim.new_1d(4), buf(client, xs.reshape(-1)), out)
    pos = xs + 1  # push(1.0) moved p before it was copied into the pair
    want = 0.5 * 2.0 * pos[:, 0] ** 2 + xs[:, 1] + 100.0
    np.testing.assert_allclose(read(client, out), want, rtol=1e-6)


def test_a_struct_argument_changed_between_launches_is_read_again_each_launch(client):
    """A @cube_type instance is a mutable object, so a loop passing the same one is never
    served from the launcher's repeat memo (which keeps only immutable arguments)."""
    data = buf(client, [1.0, 1.0])
    job = Job(data, 1.0, "add")
    for scale in (1.0, 2.0, 3.0):
        job.scale = scale
        run_job.launch(client, ONE, CubeDim.new_1d(2), job)
    np.testing.assert_array_equal(read(client, data), [7.0, 7.0])


def test_an_enum_argument_given_something_else_names_its_variants(client):
    with pytest.raises(LaunchError, match=r"launch of `kernel_scalar_enum`: argument `test` is a "
                                          r"TestEnum, got (.|\n)*hint: pass one of its variants \(TestEnum.A"):
        kernel_scalar_enum.launch(client, ONE, CubeDim.new_1d(1), BStruct(1, 2), empty(client, 1))
    with pytest.raises(LaunchError, match=r"argument `test.b.y` = -1 does not fit in u32"):
        kernel_scalar_enum.launch(client, ONE, CubeDim.new_1d(1), TestEnum.B(BStruct(1, -1)),
                                  empty(client, 1))


def test_a_generic_buffer_field_is_bound_by_the_launch_and_a_generic_value_field_is_refused(
        client):
    from cubelab.prelude import f32, i32
    from tests.fixtures.aggregate_kernels import Scaled, Window, fill_window, scale_by

    for kind, dtype in ((f32, np.float32), (i32, np.int32)):
        data = empty(client, 5, dtype)
        fill_window.launch[kind](client, ONE, CubeDim.new_1d(4), Window(data, 2))
        np.testing.assert_array_equal(read(client, data, dtype), [0, 0, 1, 2, 3])
    with pytest.raises(LaunchError, match=r"launch of `scale_by`: field `s.by` is "
                                          r"Float.generic\('F'\); a launch passes scalars of a "
                                          r"concrete type"):
        scale_by.launch[f32](client, ONE, CubeDim.new_1d(1), Scaled(empty(client, 1), 2.0))
