"""Bad input gets an error naming the kernel and file:line:col with a caret, and says what to do
instead. A launch refused on the calling thread submits nothing and changes no buffer."""

import re

import numpy as np
import pytest

from cubelab import (
    BufferArg,
    BufferFailure,
    CubeCount,
    CubeDim,
    KernelSourceError,
    LaunchError,
)
from cubelab.prelude import f32, i32, u32
from tests.fixtures import bad_kernels as bk

FILE = re.escape(bk.__file__)


def assert_points_at(err: Exception, kernel: str, needle: str, hint: str) -> None:
    text = str(err)
    assert f"in kernel `{kernel}`" in text
    assert re.search(FILE + r":\d+:\d+", text), text
    lines = text.splitlines()
    caret_line = next(i for i, ln in enumerate(lines) if ln.strip() == "^")
    source = lines[caret_line - 1]
    start = source.find(needle)
    assert start >= 0, (needle, source)
    col = lines[caret_line].index("^")
    assert start <= col < start + len(needle), "the caret points inside the offending code"
    assert hint in text


@pytest.mark.parametrize(
    "define, kernel, needle, hint",
    [
        (bk.define_try, "uses_try", "try:", "guard with `if`"),
        (bk.define_lambda, "uses_lambda", "lambda v: v", "@cube helper"),
        (bk.define_with, "uses_with", 'with open("x"):', "without the context manager"),
        (bk.define_missing_annotation, "no_annotation", "def no_annotation(out):",
         "annotate it"),
        (bk.define_slice_assignment, "writes_input", "x[ABSOLUTE_POS] = out", "SliceMut"),
    ],
)
def test_unsupported_source_is_refused_at_decoration_with_a_caret(define, kernel, needle, hint):
    with pytest.raises(KernelSourceError) as info:
        define()
    assert_points_at(info.value, kernel, needle, hint)


def test_a_name_bound_nowhere_is_refused_at_decoration_with_the_closest_name():
    with pytest.raises(KernelSourceError) as info:
        bk.define_misspelt_name()
    assert "unknown name `ABSOLUT_POS`" in str(info.value)
    assert_points_at(info.value, "misspelt_name", "ABSOLUT_POS", "did you mean `ABSOLUTE_POS`?")


def test_a_name_the_file_binds_but_never_set_is_refused_at_the_first_launch(client):
    out = client.empty(16)
    with pytest.raises(KernelSourceError) as info:
        bk.unknown_name.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                               BufferArg.from_raw_parts(out, 4))
    assert "unknown name `no_such_value`" in str(info.value)
    assert_points_at(info.value, "unknown_name", "no_such_value", "define it")


def test_a_runtime_value_where_a_comptime_one_is_needed_fails_the_written_buffer(client):
    x = client.create_from_slice(f32.as_bytes(np.ones(4, dtype=np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.full(4, 7.0, dtype=np.float32)))
    bk.runtime_in_comptime.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                                  BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    with pytest.raises(BufferFailure) as info:
        client.read_one(out)
    cause = info.value.cause
    assert isinstance(cause, KernelSourceError)
    assert "comptime(...) needs a value known at expansion, but `x` is the buffer `x`" in str(cause)
    assert_points_at(cause, "runtime_in_comptime", "comptime(x.len())", "Comptime")
    # the input was not written, so it reads fine
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(x)), np.ones(4))


def test_adding_vectors_of_widths_2_and_4_is_an_expansion_error_on_the_written_buffer(client):
    x = client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
    out = client.empty(16)
    bk.mixed_widths.launch(client, CubeCount.Static(1), CubeDim.new_1d(2),
                           BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8),
                           BufferArg.from_raw_parts(out, 4))
    with pytest.raises(BufferFailure, match="vectors of widths 2 and 4"):
        client.read_one(out)


def launch_copy(client, *args):
    bk.copy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), *args)


def test_launch_with_the_wrong_number_of_arguments_is_refused(client):
    x = client.empty(16)
    with pytest.raises(LaunchError, match=r"takes client, cube_count, cube_dim and 2 more"):
        launch_copy(client, BufferArg.from_raw_parts(x, 4))


def test_launch_with_a_wrong_argument_type_is_refused(client):
    x = client.empty(16)
    with pytest.raises(LaunchError, match="argument `out` is a SliceMut"):
        launch_copy(client, BufferArg.from_raw_parts(x, 4), 3.0)
    with pytest.raises(LaunchError, match="generic F is a Float, got i32"):
        bk.copy.launch[i32]
    with pytest.raises(LaunchError, match=r"write copy.launch\[f32\]"):
        bk.copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4))


def test_buffer_arg_longer_than_its_buffer_is_refused():
    from cubelab import Handle

    h = Handle.new(24, 0)
    with pytest.raises(ValueError, match=r"length 8 needs 32 bytes but .* holds 24 bytes"):
        BufferArg.from_raw_parts(h, 8)


def test_vector_size_that_does_not_divide_the_length_is_refused_and_changes_nothing(client):
    from tests.fixtures.kernels import saxpy

    data = np.arange(6, dtype=np.float32)
    x = client.create_from_slice(f32.as_bytes(data))
    y = client.create_from_slice(f32.as_bytes(data))
    with pytest.raises(LaunchError, match="the vector size 4 does not divide"):
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(2), 4, 1.0,
                          BufferArg.from_raw_parts(x, 6), BufferArg.from_raw_parts(y, 6))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)), data)


def test_too_many_units_per_cube_is_refused_on_the_calling_thread(client):
    x = client.empty(4 * 512)
    y = client.empty(4 * 512)
    with pytest.raises(LaunchError, match="units per cube"):
        bk.copy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(512),
                            BufferArg.from_raw_parts(x, 512), BufferArg.from_raw_parts(y, 512))


def test_one_buffer_bound_read_only_and_writable_is_refused(client):
    x = client.empty(16)
    with pytest.raises(LaunchError, match="bound as `x` \\(read-only\\) and `out` \\(writable\\)"):
        launch_copy(client, BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(x, 4))


def test_calling_a_kernel_like_a_function_says_it_is_launched():
    with pytest.raises(TypeError, match="kernels are launched, not called"):
        bk.copy(1, 2)


def test_a_u32_scalar_out_of_range_is_refused():
    from cubelab.frontend.launch import _scalar_bytes

    with pytest.raises(LaunchError, match="does not fit in u32"):
        _scalar_bytes(u32, -1, "n", "k")


def test_an_f32_scalar_too_large_for_f32_is_refused_and_changes_no_buffer(client):
    from tests.fixtures.kernels import saxpy

    x = client.create_from_slice(f32.as_bytes(np.arange(4, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(4, dtype=np.float32)))
    args = (BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(y, 4))
    for big in (1e39, 10**400):
        with pytest.raises(LaunchError, match="`a` = .* does not fit in f32"):
            saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 1, big, *args)
    # infinities pass through as themselves
    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 1, float("inf"), *args)
    assert f32.from_bytes(client.read_one(y))[1] == np.inf


def test_a_cube_dim_checked_once_is_still_checked_for_another_launch(client):
    # the launcher remembers the dims it has checked; a new, too large one is still refused
    x, y = client.empty(4 * 512), client.empty(4 * 512)
    args = (BufferArg.from_raw_parts(x, 512), BufferArg.from_raw_parts(y, 512))
    bk.copy.launch[f32](client, CubeCount.Static(2), CubeDim.new_1d(256), *args)
    with pytest.raises(LaunchError, match="units per cube"):
        bk.copy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(512), *args)
    with pytest.raises(LaunchError, match="units per cube"):
        bk.copy.launch[f32](client, CubeCount.Static(1), CubeDim.new_3d(16, 16, 2), *args)


def test_a_forgotten_client_is_named_as_the_missing_client_not_a_wrong_cube_count(client):
    out = client.empty(16)
    with pytest.raises(LaunchError) as info:
        bk.copy.launch[f32](CubeCount.Static(1), CubeDim.new_1d(4),
                            BufferArg.from_raw_parts(out, 4), BufferArg.from_raw_parts(out, 4))
    text = str(info.value)
    assert "the first argument is the client" in text and "Device.default().client()" in text
    assert "cube count" not in text.split(";")[0]


def test_launch_unchecked_without_the_decorator_flag_says_which_flag_to_add(client):
    out = client.empty(16)
    for use in (lambda: bk.unknown_name.launch_unchecked(client, CubeCount.Static(1),
                                                        CubeDim.new_1d(4),
                                                        BufferArg.from_raw_parts(out, 4)),
                lambda: bk.copy.launch_unchecked[f32]):
        with pytest.raises(LaunchError, match=r"@cube\(launch_unchecked=True\)"):
            use()


def test_calling_a_kernel_or_a_helper_like_a_function_says_what_each_is_for():
    from cubelab.errors import KernelCallError
    from cubelab.prelude import cube

    @cube
    def twice(v):
        return v + v

    with pytest.raises(KernelCallError, match=r"copy.launch\[\.\.\.\]\(client"):
        bk.copy(1)
    with pytest.raises(TypeError) as info:  # still a TypeError, for code that catches one
        twice(1)
    assert "@cube helper" in str(info.value) and ".launch" not in str(info.value)


def test_a_kernel_typed_at_the_plain_python_prompt_is_told_where_to_define_it():
    # The plain prompt and `python -c` keep no source, and a kernel is expanded from its source:
    # this was a bare OSError ("could not get source code") from inside cubelab.
    import subprocess
    import sys
    from pathlib import Path

    code = ("from cubelab.prelude import *\n"
            "@cube(launch=True)\n"
            "def fill(out: SliceMut[u32]):\n"
            "    out[0] = u32(1)\n")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=root)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()
    assert "KernelSourceError: in kernel `fill` at <string>:2" in out.stderr, out.stderr
    assert "cannot read this function's source" in out.stderr
    assert last[-1].strip().startswith("hint: define it in a .py file, a notebook cell")
    assert "OSError" not in out.stderr
