"""The loop guard: no kernel is silently truncated by a driver, and none can hang a GPU.

Checked launches (`launch`) count every unit's loop iterations against a budget
(`client.set_compilation_options(loop_budget=N)`, default 2^28; `ir/passes.py` LoopGuard) and
check how each loop ended: past the budget, or stopped by the driver (lavapipe ends every loop
after 65 535 iterations, silently), the launch fails on its written buffers with a
`LoopGuardError` naming the loop's line — and the client goes on working. Each test runs on
wgpu (lavapipe here, the H200 in `scripts/gpu_check.sh`) and on the CPU runtime."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim
from cubelab import inspect as ci
from cubelab.errors import LoopGuardError
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, f32, u32

from tests.fixtures.failing_kernels import forever
from tests.fixtures.kernels import saxpy
from tests.fixtures.launch_run_kernels import serial_sum


@cube(launch=True)
def double(x: Slice[u32], out: SliceMut[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * u32(2)


def _line_of(fn: object, needle: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return first + next(i for i, t in enumerate(lines) if needle in t)


@pytest.fixture
def budget(client):  # type: ignore[no-untyped-def]
    """Set the client's loop budget for one test, and put the default back after it."""
    def set_(n: int | None) -> None:
        client.set_compilation_options(loop_budget=n)
    yield set_
    from cubelab.ir.passes import DEFAULT_LOOP_BUDGET

    client.set_compilation_options(loop_budget=DEFAULT_LOOP_BUDGET)


def _saxpy_still_works(client) -> None:  # type: ignore[no-untyped-def]
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0,
                      BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(y)),
                                  2 * np.arange(16, dtype=np.float32) + 1)


def test_an_infinite_loop_ends_as_a_failure_naming_its_line_and_the_client_goes_on(client):
    out = client.empty(4 * 8)
    forever.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 8))
    with pytest.raises(BufferFailure) as info:
        client.read_one(out)
    assert isinstance(info.value.cause, LoopGuardError)
    text = str(info.value)
    assert f"failing_kernels.py:{_line_of(forever, 'while x != 0')}" in text
    assert "while x != 0:" in text and "^" in text  # the student's line, with a caret
    # lavapipe's own limit comes first there; a real GPU and the CPU runtime reach the budget
    assert ("stopped the loop" in text) or ("ran more than" in text and "looks infinite" in text)
    _saxpy_still_works(client)


def test_the_budget_is_settable_and_names_the_loop_that_ran_out(client, budget):
    budget(1000)
    xs = np.ones(2000, np.float32)
    x = client.create_from_slice(f32.as_bytes(xs))
    out = client.empty(4)
    serial_sum.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                      BufferArg.from_raw_parts(x, 2000), BufferArg.from_raw_parts(out, 1), 2000)
    with pytest.raises(BufferFailure) as info:
        client.read_one(out)
    assert isinstance(info.value.cause, LoopGuardError)
    assert "ran more than 1000 iterations" in str(info.value)
    assert f":{_line_of(serial_sum, 'for i in range(n)')}:" in str(info.value)
    assert "loop_budget=N" in str(info.value)  # what to do instead
    # under the budget, the same kernel is right
    serial_sum.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                      BufferArg.from_raw_parts(x, 2000), BufferArg.from_raw_parts(out, 1), 900)
    assert f32.from_bytes(client.read_one(out))[0] == 900.0


def test_a_loop_longer_than_65535_iterations_is_right_or_fails_loudly_never_truncated(client):
    n = 100_000
    x = client.create_from_slice(f32.as_bytes(np.ones(n, np.float32)))
    out = client.empty(4)
    serial_sum.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                      BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(out, 1), n)
    try:
        got = float(f32.from_bytes(client.read_one(out))[0])
    except BufferFailure as exc:
        assert isinstance(exc.cause, LoopGuardError)
        assert "stopped the loop" in str(exc) and "65 535" in str(exc)
        assert client.name().startswith("wgpu")  # only a driver cuts loops short
        return
    assert got == float(n)


def test_a_launch_that_read_a_guard_failed_buffer_fails_with_the_same_root_cause(client, budget):
    budget(100)
    out = client.empty(4 * 4)
    doubled = client.empty(4 * 4)
    forever.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 4))
    double.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 4),
                  BufferArg.from_raw_parts(doubled, 4))
    with pytest.raises(BufferFailure) as info:
        client.read_one(doubled)
    assert info.value.kernel == "Forever" or "forever" in str(info.value)
    assert isinstance(info.value.cause, LoopGuardError)
    assert "Double" in info.value.skipped or "double" in " ".join(info.value.skipped).lower()
    # relaunching a good kernel into the failed output repairs it
    fresh = client.create_from_slice(u32.as_bytes(np.arange(4, dtype=np.uint32)))
    double.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(fresh, 4),
                  BufferArg.from_raw_parts(doubled, 4))
    np.testing.assert_array_equal(u32.from_bytes(client.read_one(doubled)), [0, 2, 4, 6])


def test_unchecked_launches_and_a_budget_of_none_carry_no_guard():
    k_checked = ci.instance(serial_sum, cube_dim=CubeDim.new_1d(1))
    k_unchecked = ci.instance(serial_sum, cube_dim=CubeDim.new_1d(1), checked=False)
    assert "guard_n" in ci.wgsl(k_checked)
    assert "guard_n" not in ci.wgsl(k_unchecked)
    assert "loop-guard" in [p.name for p in ci.compiled(k_checked).passes]
    assert "guard = 0" in ci.compiled(k_checked).ir  # the pass marks the loop in the IR


def test_an_unchecked_infinite_loop_is_still_stopped_on_the_cpu_runtime(cpu_client):
    from cubelab.runtime.cpu import KernelRuntimeError

    server = cpu_client.device.server
    saved, server.max_loop_iterations = server.max_loop_iterations, 500
    try:
        out = cpu_client.empty(16)
        forever.launch_unchecked(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                                 BufferArg.from_raw_parts(out, 4))
        with pytest.raises(BufferFailure) as info:
            cpu_client.read_one(out)
    finally:
        server.max_loop_iterations = saved
    assert isinstance(info.value.cause, KernelRuntimeError)
