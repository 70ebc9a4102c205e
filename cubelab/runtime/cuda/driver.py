"""NVIDIA's own Python bindings (`cuda-bindings`: the driver API and NVRTC), loaded once, with
errors that say what is missing.

Contract: `bindings()` returns the `driver` and `nvrtc` modules with the driver initialised, or
raises `DeviceError` naming the missing piece — the bindings package (`pip install
'cubelab[cuda]'`), the NVIDIA driver (`libcuda.so.1`), a GPU, or NVRTC — and what to use instead.
There is never a fallback: `Device.cuda()` on a machine without an NVIDIA driver is that error.
`ok(result, what)` unpacks a binding's `(CUresult, *values)` tuple and turns a failure into
`CudaError` with the driver's own name for it (`CUDA_ERROR_OUT_OF_MEMORY`). `nvrtc_compile`
compiles one CUDA C++ source to a cubin for this GPU's architecture.

Why these and not CuPy: docs/runtime.md ("The CUDA runtime") gives the measurements.

The trap: the bindings return errors as values, never raise them; a call whose result is not
checked fails silently. Every call here goes through `ok` (or compares with `SUCCESS` on the hot
path, `server.py`).
"""

from __future__ import annotations

import re
from typing import Any

from cubelab.errors import CubeError, DeviceError, hinted

_loaded: tuple[Any, Any] | None = None

INSTALL = "pip install 'cubelab[cuda]' (NVIDIA's cuda-bindings and nvidia-cuda-nvrtc)"
INSTEAD = "use Device.wgpu() or Device.cpu() on this machine"


class CudaError(CubeError):
    """A CUDA driver or NVRTC call failed; the message names the call and CUDA's error."""


def bindings() -> tuple[Any, Any]:
    """(driver, nvrtc), the driver initialised; `DeviceError` saying what is missing."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        from cuda.bindings import driver, nvrtc
    except ImportError as exc:
        raise DeviceError(hinted(f"the CUDA runtime needs NVIDIA's Python bindings, which are "
                                 f"not installed ({exc})", f"{INSTALL}; or {INSTEAD}")) from None
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - libcuda.so.1 absent: cuda-pathfinder's own error
        raise DeviceError(hinted(f"no NVIDIA driver on this machine (libcuda.so.1 could not be "
                                 f"loaded: {type(exc).__name__}). The CUDA runtime runs only "
                                 "where an NVIDIA GPU and its driver are installed", INSTEAD)
                          ) from None
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DeviceError(hinted(f"the NVIDIA driver did not start (cuInit: "
                                 f"{error_name(driver, err)})", "check that nvidia-smi sees a "
                                 f"GPU here; otherwise {INSTEAD}"))
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        raise DeviceError(hinted("the NVIDIA driver is installed but sees no GPU", INSTEAD))
    try:
        err, *_ = nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - libnvrtc absent
        raise DeviceError(hinted(f"NVRTC (NVIDIA's run-time CUDA C++ compiler) could not be "
                                 f"loaded ({type(exc).__name__}: {exc})", INSTALL)) from None
    _loaded = (driver, nvrtc)
    return _loaded


def error_name(driver: Any, err: Any) -> str:
    try:
        e, name = driver.cuGetErrorName(err)
        e2, text = driver.cuGetErrorString(err)
        return f"{name.decode()}: {text.decode()}"
    except Exception:  # noqa: BLE001 - an error code the driver does not know
        return str(err)


def ok(result: Any, what: str) -> Any:
    """The values of a driver call's `(CUresult, *values)` result; `CudaError` if it failed."""
    driver = _loaded[0] if _loaded is not None else None
    err, *values = result
    if driver is not None and err != driver.CUresult.CUDA_SUCCESS:
        raise CudaError(f"{what} failed: {error_name(driver, err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


# "kernel.cu(12): error: identifier "x" is undefined"
_NVRTC_LINE = re.compile(r"\((\d+)\): (error|warning)")


def nvrtc_compile(nvrtc: Any, source: str, name: str, arch: str) -> tuple[bytes, str]:
    """(cubin, log) of `source` for `arch` ("sm_90"); `CudaError` with NVRTC's log when it
    refuses, the first error's line number in `.line`."""
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CudaError(f"nvrtcCreateProgram failed: {err}")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.rstrip(b"\0 ").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            exc = CudaError(log or str(status))
            m = _NVRTC_LINE.search(log)
            exc.line = int(m.group(1)) if m else None  # type: ignore[attr-defined]
            raise exc
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
