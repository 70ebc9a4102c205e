"""The CPU runtime is a runtime like wgpu: same Client API, limits, cache, events, debug log."""

import dataclasses
import io
import warnings

import numpy as np
import pytest

from cubelab import (BufferArg, BufferFailure, CubeCount, CubeDim, Device, DeviceError, LaunchError,
                     ResourceError)
from cubelab.prelude import f32, u32
from cubelab.runtime import device as device_mod
from cubelab.runtime import events as ev
from cubelab.runtime.cpu import DivergentBarrier
from cubelab.runtime.debug_log import DebugLog
from tests.fixtures.cpu_kernels import barrier_in_a_branch, barrier_in_a_uniform_branch
from tests.fixtures.kernels import saxpy, topology


def test_the_cpu_client_is_named_cpu_numpy_and_has_webgpus_default_limits(cpu_client):
    assert cpu_client.name() == "cpu<numpy>"
    p = cpu_client.properties()
    assert (p.max_units_per_cube, p.max_cube_dim, p.max_cubes_per_dim, p.max_shared_memory) == \
        (256, (256, 256, 64), 65535, 16384)
    assert p.adapter_type == "CPU"


def test_a_launch_over_a_limit_is_refused_the_same_way_on_both_runtimes(client):
    out = client.empty(4 * 512)
    with pytest.raises(LaunchError, match="units per cube"):
        topology.launch(client, CubeCount.Static(1), CubeDim.new_1d(512),
                        BufferArg.from_raw_parts(out, 512))
    # the grid limit is checked on the device thread: a failure on the buffers it would write
    topology.launch(client, CubeCount.Static(70000), CubeDim.new_1d(1),
                    BufferArg.from_raw_parts(out, 512))
    with pytest.raises(BufferFailure, match="65535 cubes per dimension"):
        client.read_one(out)


def test_the_cpu_runtime_checks_shared_memory_against_its_own_servers_limit(cpu_client,
                                                                             monkeypatch):
    """One home for the limit: the server's properties, not a default restated in the plan.
    `too_much_shared` declares 24000 bytes (two tiles, each under WebGPU's 16 KiB)."""
    from tests.fixtures.seed001_kernels import too_much_shared

    server = cpu_client.device.server
    default = server.properties

    def launch_with_limit(limit: int) -> np.ndarray:
        monkeypatch.setattr(server, "properties",
                            dataclasses.replace(default, max_shared_memory=limit))
        cpu_client.clear_cache()
        out = cpu_client.empty(4 * 4)
        too_much_shared.launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4),
                               BufferArg.from_raw_parts(out, 4))
        return np.frombuffer(cpu_client.read_one(out), dtype=np.float32)

    try:
        assert launch_with_limit(32768).tolist() == [3.0] * 4
        with pytest.raises(BufferFailure, match="24000 bytes of shared memory; a cube on this "
                                                "device has 20000") as info:
            launch_with_limit(20000)
        assert isinstance(info.value.cause, ResourceError)
    finally:
        cpu_client.clear_cache()


def test_a_compile_is_define_passes_and_a_plan_and_the_debug_log_prints_the_ir(cpu_client):
    cpu_client.clear_cache()
    log = DebugLog("stdout")
    buf = io.StringIO()
    log._write = buf.write  # type: ignore[method-assign]
    unsubscribe = cpu_client.events.subscribe(log)
    try:
        with cpu_client.events.record(ev.CompileStarted, ev.CompileFinished, ev.CacheHit,
                                      ev.LaunchDispatched) as rec:
            x = cpu_client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
            y = cpu_client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
            for a in (1.0, 2.0):
                saxpy.launch[f32](cpu_client, CubeCount.Static(1), CubeDim.new_1d(2), 4, a,
                                  BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8))
            cpu_client.sync()
    finally:
        unsubscribe()
    assert len(rec.of(ev.CompileStarted)) == 1 and len(rec.of(ev.CacheHit)) == 1
    assert len(rec.of(ev.LaunchDispatched)) == 2
    (done,) = rec.of(ev.CompileFinished)
    assert done.target == "ir" and done.source.startswith(f"kernel @{done.entry}(")
    assert "msl" in done.extra_sources
    text = buf.getvalue()
    assert "[START_KERNEL_COMPILATION]" in text and "```ir\nkernel @saxpy_f_f32_n_4_" in text
    assert "arith.cmp" in text and "[END_KERNEL_COMPILATION]" in text
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(y)),
                                  3 * np.arange(8, dtype=np.float32))


def test_a_barrier_reached_by_only_some_units_of_a_cube_is_a_clear_error(cpu_client):
    out = cpu_client.empty(4 * 8)
    with cpu_client.events.record(ev.LaunchFailed) as rec:
        barrier_in_a_branch.launch(cpu_client, CubeCount.Static(2), CubeDim.new_1d(4),
                                   BufferArg.from_raw_parts(out, 8))
        with pytest.raises(BufferFailure) as info:
            cpu_client.read_one(out)
    assert isinstance(info.value.cause, DivergentBarrier)
    msg = str(info.value)
    assert "sync_cube()" in msg and "only some units of cube (0, 0, 0)" in msg
    assert "units 0, 1 reached it, units 2, 3 did not" in msg
    assert "uniform control flow" in msg
    (failed,) = rec.of(ev.LaunchFailed)
    assert out.id in failed.buffers


def test_a_barrier_skipped_by_whole_cubes_is_fine(cpu_client):
    out = cpu_client.empty(4 * 8)
    barrier_in_a_uniform_branch.launch(cpu_client, CubeCount.Static(2), CubeDim.new_1d(4),
                                       BufferArg.from_raw_parts(out, 8))
    np.testing.assert_array_equal(u32.from_bytes(cpu_client.read_one(out)), [0, 1, 2, 3] * 2)


def test_device_default_falls_back_to_the_cpu_runtime_without_an_adapter(monkeypatch):
    def no_adapter(bus):  # type: ignore[no-untyped-def]
        raise DeviceError("no wgpu adapter (simulated)")

    monkeypatch.delenv("CUBELAB_EXPECT_WGPU", raising=False)
    monkeypatch.delenv("CUBELAB_DEVICE", raising=False)
    monkeypatch.setitem(device_mod._server_factories, "wgpu", no_adapter)
    saved = device_mod._devices.pop("wgpu", None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dev = Device.default()
        assert dev.kind == "cpu" and dev.client().name() == "cpu<numpy>"
        assert any("falling back to the CPU runtime" in str(w.message) for w in caught)
    finally:
        if saved is not None:
            device_mod._devices["wgpu"] = saved


def test_cubelab_device_picks_the_named_runtime(monkeypatch):
    for kind in ("cpu", "wgpu"):
        monkeypatch.setenv("CUBELAB_DEVICE", kind)
        try:
            assert Device.default().kind == kind
        except DeviceError as exc:  # no adapter here: then the error must say so, not fall back
            assert kind == "wgpu" and "CUBELAB_DEVICE=wgpu" in str(exc)


def test_cubelab_device_naming_an_unavailable_runtime_raises_instead_of_falling_back(monkeypatch):
    def no_adapter(bus):  # type: ignore[no-untyped-def]
        raise DeviceError("no wgpu adapter (simulated)")

    monkeypatch.setenv("CUBELAB_DEVICE", "wgpu")
    monkeypatch.setitem(device_mod._server_factories, "wgpu", no_adapter)
    saved = device_mod._devices.pop("wgpu", None)
    try:
        with pytest.raises(DeviceError, match="CUBELAB_DEVICE=wgpu but that runtime is "
                                              "unavailable.*no wgpu adapter"):
            Device.default()
        monkeypatch.setenv("CUBELAB_DEVICE", "opencl")  # (cuda is a runtime now)
        with pytest.raises(DeviceError, match="CUBELAB_DEVICE='opencl' names no runtime"):
            Device.default()
    finally:
        if saved is not None:
            device_mod._devices["wgpu"] = saved


def _spin_with_a_cap_of_1000(cpu_client, checked: bool) -> BufferFailure:
    """Launch the never-ending `spin` with the CPU runtime's loop cap at 1000; the read's failure."""
    from tests.fixtures.cpu_kernels import spin

    server = cpu_client.device.server
    out = cpu_client.empty(16)
    launch = spin.launch if checked else spin.launch_unchecked
    saved, server.max_loop_iterations = server.max_loop_iterations, 1000
    try:
        launch(cpu_client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(out, 4))
        with pytest.raises(BufferFailure) as info:
            cpu_client.read_one(out)
    finally:
        server.max_loop_iterations = saved
    return info.value


def test_a_runaway_loop_is_stopped_with_a_clear_error(cpu_client):
    from cubelab.runtime.cpu import KernelRuntimeError

    # unchecked: no loop guard, the CPU runtime's own cap stops it
    failure = _spin_with_a_cap_of_1000(cpu_client, checked=False)
    assert isinstance(failure.cause, KernelRuntimeError)
    assert "ran more than 1000 iterations" in str(failure)
    assert "looks infinite" in str(failure)


def test_a_checked_launch_stops_a_runaway_loop_with_the_loop_guard(cpu_client):
    from cubelab.errors import LoopGuardError

    failure = _spin_with_a_cap_of_1000(cpu_client, checked=True)
    assert isinstance(failure.cause, LoopGuardError)
    assert "ran more than 1000 iterations" in str(failure)
    assert "looks infinite" in str(failure)
    assert "the CPU runtime stops one loop after 1000 iterations" in str(failure)
