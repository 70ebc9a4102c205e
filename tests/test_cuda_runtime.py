"""The CUDA runtime (`Device.cuda()`, `runtime/cuda/`).

Everywhere (CI included): without NVIDIA's bindings, or without an NVIDIA driver, asking for
the CUDA runtime is a `DeviceError` that names what is missing and what to use instead — never
another runtime in its place, also through `CUBELAB_DEVICE=cuda`. The kernel-parameter packing
is checked without a GPU.

Where NVRTC is installed (no GPU needed; skipped in CI, which does not install it): every
kernel's CUDA C++ compiles for real.

On a machine with an NVIDIA GPU (skipped elsewhere, with the reason): what only the CUDA server
does — a compile is NVRTC + module load with the CUDA C++ as the event's source, profiling is
timed by CUDA events, runs of identical launches go out as CUDA graphs, a buffer shared by two
streams is ordered by an event. Every other kernel test runs on it through the `client`
fixture with `CUBELAB_TEST_RUNTIMES=wgpu,cpu,cuda` (`scripts/gpu_check.sh`).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import types

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, CubeCount, CubeDim, Device, DeviceError
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, f32
from cubelab.runtime import device as device_mod
from cubelab.runtime import events as ev
from cubelab.runtime.cuda import driver as cuda_driver
from cubelab.runtime.cuda.server import _Params, _pointer_param


@pytest.fixture
def fresh_bindings(monkeypatch):  # type: ignore[no-untyped-def]
    """Forget the loaded bindings and any CUDA device, so a test can take them away."""
    monkeypatch.setattr(cuda_driver, "_loaded", None)
    monkeypatch.delitem(device_mod._devices, "cuda", raising=False)
    return monkeypatch


def test_without_nvidias_bindings_the_error_says_how_to_install_them(fresh_bindings) -> None:
    fresh_bindings.setitem(sys.modules, "cuda.bindings", None)  # import fails as if absent
    with pytest.raises(DeviceError, match=r"cubelab\[cuda\].*Device.wgpu\(\) or Device.cpu\(\)"):
        Device.cuda()


def test_without_an_nvidia_driver_the_error_names_it_and_never_falls_back(
        fresh_bindings) -> None:
    class NoDriver(Exception):
        pass

    def cu_init(flags: int) -> None:
        raise NoDriver('"cuda" is an NVIDIA driver library and can only be found via system '
                       "search")

    fake = types.ModuleType("cuda.bindings")
    fake.driver = types.SimpleNamespace(cuInit=cu_init)  # type: ignore[attr-defined]
    fake.nvrtc = types.SimpleNamespace()  # type: ignore[attr-defined]
    fresh_bindings.setitem(sys.modules, "cuda.bindings", fake)
    threads = threading.active_count()
    with pytest.raises(DeviceError, match="no NVIDIA driver on this machine.*libcuda"):
        Device.cuda()
    fresh_bindings.setenv("CUBELAB_DEVICE", "cuda")
    with pytest.raises(DeviceError, match=r"(?s)CUBELAB_DEVICE=cuda.*does not fall back"):
        Device.default()
    assert threading.active_count() == threads  # no device thread was started for nothing
    assert "cuda" not in device_mod._devices


def test_kernel_parameters_are_packed_once_with_the_guard_word_last() -> None:
    p = _Params([(0x1000).to_bytes(8, "little"), b"\x01\x02\x03", (0x2000).to_bytes(8, "little")],
                guarded=True)
    at = [p.pointers[i] for i in range(3)]
    assert ctypes.c_uint64.from_address(at[0]).value == 0x1000
    assert ctypes.string_at(at[1], 3) == b"\x01\x02\x03"
    assert all(a % 16 == 0 for a in at)  # every value aligned for any by-value struct
    p.guard.value = 0x2004  # a guarded launch's slot changes this word only
    assert ctypes.c_uint64.from_address(at[2]).value == 0x2004
    assert _Params([b"\0" * 8], guarded=False).guard is None


def test_the_info_block_is_by_value_or_by_pointer_as_the_signature_says() -> None:
    src = ('extern "C" __global__ void k_1(const float_4* v1, float_4* v2, '
           "const info_st info, uint32_t* guard_status) {}")
    assert [_pointer_param(src, "k_1", i) for i in range(4)] == [True, True, False, True]
    assert _pointer_param(src.replace("const info_st info", "const info_st* info"), "k_1", 2)


def test_every_kernel_compiles_through_nvrtc_for_a_hopper_gpu() -> None:
    # NVRTC needs no GPU: where it is installed (`cubelab[cuda]`), the CUDA C++ of every core,
    # zoo, runtime-test and aggregate kernel and of the every-op kernel is compiled for real, as
    # `Device.cuda()` would (the g++ shim of tests/test_cuda.py checks C++ only).
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - not installed, or its library missing
        pytest.skip(f"NVRTC is not installed here ({type(exc).__name__}); "
                    "pip install 'cubelab[cuda]' to compile the kernels for real")
    from cubelab.compiler.cpp.cuda import CudaTarget
    from tests.test_cuda import cuda_of
    from tests.test_msl import (aggregate_kernels, core_kernels, every_op_kernel,
                                runtime_test_kernels, zoo_kernels)

    sources = {"every_op": CudaTarget().compile(every_op_kernel()).source}
    for group in (core_kernels, zoo_kernels, runtime_test_kernels, aggregate_kernels):
        for name, k in group().items():
            sources[name] = cuda_of(k)
    refused = {}
    for name, src in sources.items():
        try:
            cuda_driver.nvrtc_compile(nvrtc, src, "kernel", "sm_90")
        except cuda_driver.CudaError as exc:
            refused[name] = str(exc)[:400]
    assert len(sources) > 60 and not refused, refused


# -- on an NVIDIA GPU ---------------------------------------------------------------------------

@contextlib.contextmanager
def subscribed(client, fn, kind):  # type: ignore[no-untyped-def]
    unsub = client.events.subscribe(fn, kind)
    try:
        yield
    finally:
        unsub()


@cube(launch=True)
def axpb_cuda(x: Slice[f32], y: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        y[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(2.0) + f32(1.0)


N = 1024


@pytest.fixture(scope="module")
def cuda(cuda_client):  # type: ignore[no-untyped-def]
    hx = np.arange(N, dtype=np.float32)
    x = cuda_client.create_from_slice(f32.as_bytes(hx))
    return cuda_client, hx, BufferArg.from_raw_parts(x, N)


def test_a_compile_is_nvrtc_and_its_event_carries_the_cuda_source(cuda) -> None:
    client, hx, x = cuda
    y = client.zeros(N * 4)
    done: list[ev.CompileFinished] = []
    client.clear_cache()
    with subscribed(client, done.append, ev.CompileFinished):
        axpb_cuda.launch(client, CubeCount.Static(N // 256), CubeDim.new_1d(256), x,
                         BufferArg.from_raw_parts(y, N))
        client.sync()
    assert client.name() == "cuda<cpp>"
    assert done and done[0].target == "cuda" and "__global__" in done[0].source
    assert done[0].driver_s > 0  # NVRTC + cuModuleLoadData
    assert np.array_equal(f32.from_bytes(client.read_one(y)), hx * 2 + 1)


def test_profiling_is_timed_by_cuda_events(cuda) -> None:
    client, hx, x = cuda
    y = client.zeros(N * 4)
    with client.profile() as p:
        axpb_cuda.launch(client, CubeCount.Static(N // 256), CubeDim.new_1d(256), x,
                         BufferArg.from_raw_parts(y, N))
    assert len(p.samples) == 1 and 0 < p.samples[0].duration_s < 0.1


def test_a_long_run_of_identical_launches_goes_out_as_cuda_graphs_with_every_result(
        cuda) -> None:
    client, hx, _ = cuda
    a = client.create_from_slice(f32.as_bytes(hx))
    b = client.zeros(N * 4)
    A, B = BufferArg.from_raw_parts(a, N), BufferArg.from_raw_parts(b, N)
    count, dim = CubeCount.Static(N // 256), CubeDim.new_1d(256)
    flushed: list[ev.Flushed] = []
    with subscribed(client, flushed.append, ev.Flushed):
        for _ in range(300):  # b = 2a + 1, 300 times: runs of up to max_tasks launches
            axpb_cuda.launch(client, count, dim, A, B)
        for _ in range(300):  # then a = 2b + 1: ordered after every one of them
            axpb_cuda.launch(client, count, dim, B, A)
        got = f32.from_bytes(client.read_one(a))
    assert np.array_equal(got, (hx * 2 + 1) * 2 + 1)
    assert sum(f.dispatches for f in flushed) == 600  # every launch counted, none lost


def test_a_buffer_shared_by_two_streams_is_ordered_by_an_event(cuda) -> None:
    client, hx, x = cuda
    y = client.zeros(N * 4)
    z = client.zeros(N * 4)
    Y, Z = BufferArg.from_raw_parts(y, N), BufferArg.from_raw_parts(z, N)
    count, dim = CubeCount.Static(N // 256), CubeDim.new_1d(256)
    shared: list[ev.StreamShared] = []

    def producer() -> None:
        for _ in range(20):
            axpb_cuda.launch(client, count, dim, x, Y)

    with subscribed(client, shared.append, ev.StreamShared):
        t = threading.Thread(target=producer)
        t.start()
        t.join()
        axpb_cuda.launch(client, count, dim, Y, Z)  # this thread's stream reads y
        got = f32.from_bytes(client.read_one(z))
    assert shared
    assert np.array_equal(got, (hx * 2 + 1) * 2 + 1)


def test_dry_runs_and_zero_dynamic_counts_dispatch_nothing(cuda) -> None:
    client, hx, x = cuda
    y = client.zeros(N * 4)
    Y = BufferArg.from_raw_parts(y, N)
    with cubelab.dry_run():
        axpb_cuda.launch(client, CubeCount.Static(N // 256), CubeDim.new_1d(256), x, Y)
    zero = client.create_from_slice(np.array([0, 1, 1], np.uint32).tobytes())
    axpb_cuda.launch(client, CubeCount.Dynamic(zero), CubeDim.new_1d(256), x, Y)
    assert not f32.from_bytes(client.read_one(y)).any()
    four = client.create_from_slice(np.array([N // 256, 1, 1], np.uint32).tobytes())
    axpb_cuda.launch(client, CubeCount.Dynamic(four), CubeDim.new_1d(256), x, Y)
    assert np.array_equal(f32.from_bytes(client.read_one(y)), hx * 2 + 1)
