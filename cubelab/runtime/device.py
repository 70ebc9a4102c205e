"""Devices: one runner thread and one server each, created on first use.

`Device.default()` picks the runtime named by `CUBELAB_DEVICE=cpu|wgpu|cuda` (an error if it is
unavailable: no silent fallback when one is named), else wgpu when an adapter exists (lavapipe
counts) and otherwise the CPU runtime, saying so once. `Device.wgpu()` / `Device.cpu()` /
`Device.cuda()` choose explicitly (CUDA is never chosen for you: it is an optional extra). A device is a
process-wide singleton per kind, so every `client()` of it shares one pipeline cache, one
failure ledger and one event bus. No adapter is requested until a device is asked for.
"""

from __future__ import annotations

import itertools
import os
import threading
import warnings
from typing import Any, Callable

from cubelab.errors import DeviceError, hinted
from cubelab.runtime.client import Client
from cubelab.runtime.debug_log import DebugLog
from cubelab.runtime.events import EventBus
from cubelab.runtime.runner import Runner

_ids = itertools.count(1)
_lock = threading.Lock()
_devices: dict[str, "Device"] = {}
_server_factories: dict[str, Callable[[EventBus], Any]] = {}
_probes: dict[str, Callable[[], None]] = {}


def register_server(kind: str, factory: Callable[[EventBus], Any],
                    probe: Callable[[], None] | None = None) -> None:
    """Plug in a server kind (each runtime registers itself; adding one edits no other).
    `probe`, if given, runs on the calling thread before a device thread is started, and
    raises `DeviceError` when the runtime cannot start here (no driver)."""
    _server_factories[kind] = factory
    if probe is not None:
        _probes[kind] = probe


def _wgpu_factory(bus: EventBus) -> Any:
    try:
        import wgpu  # noqa: F401
    except ImportError:
        # "no GPU runtime here" must be a DeviceError, or Device.default() cannot fall back
        raise DeviceError(hinted("the wgpu package is not installed",
                                 "pip install wgpu (bash scripts/lab.sh installs it), or use "
                                 "Device.cpu()")) from None
    from cubelab.runtime.wgpu.server import WgpuServer

    return WgpuServer(bus)


register_server("wgpu", _wgpu_factory)


def _cpu_factory(bus: EventBus) -> Any:
    from cubelab.runtime.cpu.server import CpuServer

    return CpuServer(bus)


register_server("cpu", _cpu_factory)


def _cuda_factory(bus: EventBus) -> Any:
    # the bindings' own import and the driver's absence both become a DeviceError naming what
    # is missing (runtime/cuda/driver.py); never a fallback to another runtime
    from cubelab.runtime.cuda.server import CudaServer

    return CudaServer(bus)


def _cuda_probe() -> None:
    from cubelab.runtime.cuda.driver import bindings

    bindings()


register_server("cuda", _cuda_factory, _cuda_probe)


class Device:
    def __init__(self, kind: str) -> None:
        if kind not in _server_factories:
            raise DeviceError(hinted(f"no runtime called {kind!r}",
                                     f"name one of {sorted(_server_factories)}"))
        self.kind = kind
        self.id = next(_ids)
        self.bus = EventBus()
        self.debug_log = DebugLog.from_env()
        self._debug_unsub: Callable[[], None] | None = None
        if self.debug_log is not None:
            self._debug_unsub = self.bus.subscribe(self.debug_log)
        self.runner = Runner(f"cubelab-{kind}-{self.id}", on_idle=self._on_idle,
                             before_call=self._before_call)
        factory = _server_factories[kind]
        self.server = self.runner.call(factory, self.bus)
        warm_up = getattr(self.server, "warm_up", None)
        if warm_up is not None and os.environ.get("CUBELAB_WARM_UP", "1") != "0":
            # the driver's first-pipeline cost, paid on the device thread while the caller
            # goes on (the server's `warm_up` says why); CUBELAB_WARM_UP=0 leaves it to the
            # first launch
            self.runner.submit(warm_up)
        # back-to-back identical launches reach the server as one run (runner.py)
        self.runner.gather_runs(self.server.launch, self.server.launch_run)
        self._client: Any = None

    def set_debug_log(self, dest: str | None, target: str | None = None) -> None:
        """Turn the debug log on (`dest`: "stdout", "stderr" or a file path) or off (None) at
        run time, printing `target`'s source (a name of `compiler.targets.TARGETS`) —
        `%cubelab log on|off|<target>` uses it. As with CUBELAB_DEBUG_LOG, every launch is
        blocking and timed while it is on."""
        if self._debug_unsub is not None:
            self._debug_unsub()
            self._debug_unsub = None
        self.debug_log = DebugLog(dest, target) if dest else None
        if self.debug_log is not None:
            self._debug_unsub = self.bus.subscribe(self.debug_log)

    def _on_idle(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.flush("idle")

    def _before_call(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.publish_hit_tallies()

    def client(self) -> Any:
        if self._client is None:
            self._client = Client(self)
        return self._client

    def __repr__(self) -> str:
        return f"Device.{self.kind}(#{self.id})"

    # -- constructors -------------------------------------------------------------------------
    @staticmethod
    def _get(kind: str) -> "Device":
        with _lock:
            dev = _devices.get(kind)
            if dev is None:
                probe = _probes.get(kind)
                if probe is not None:
                    probe()
                dev = Device(kind)
                _devices[kind] = dev
            return dev

    @staticmethod
    def wgpu() -> "Device":
        return Device._get("wgpu")

    @staticmethod
    def cpu() -> "Device":
        return Device._get("cpu")

    @staticmethod
    def cuda() -> "Device":
        """The CUDA runtime: the kernel's CUDA C++ compiled by NVRTC and run on an NVIDIA GPU
        (`pip install 'cubelab[cuda]'`). A `DeviceError` naming what is missing where there is
        no NVIDIA driver, GPU or NVRTC; never another runtime in its place."""
        return Device._get("cuda")

    @staticmethod
    def default() -> "Device":
        """The runtime named by `CUBELAB_DEVICE` (`cpu`, `wgpu` or `cuda`) when it is set; otherwise wgpu
        if an adapter exists, else the CPU runtime (said once, as a warning).

        A named runtime is never swapped for another: if `CUBELAB_DEVICE=wgpu` and no adapter
        exists, this raises — a notebook run "on wgpu" that silently ran on numpy would prove
        nothing about wgpu. Notebooks call this and never name a runtime themselves, so the
        same chapter runs on both (the notebook tests set the variable)."""
        forced = os.environ.get("CUBELAB_DEVICE", "").strip().lower()
        if forced:
            if forced not in _server_factories:
                raise DeviceError(hinted(f"CUBELAB_DEVICE={forced!r} names no runtime",
                                         f"use one of {sorted(_server_factories)} (or unset it "
                                         "to let cubelab choose)"))
            try:
                return Device._get(forced)
            except DeviceError as exc:
                raise DeviceError(hinted(f"CUBELAB_DEVICE={forced} but that runtime is "
                                         f"unavailable: {exc}",
                                         "unset CUBELAB_DEVICE (or set it to another runtime) "
                                         "to run elsewhere; cubelab does not fall back when a "
                                         "runtime is named")) from None
        try:
            return Device.wgpu()
        except DeviceError as exc:
            if os.environ.get("CUBELAB_EXPECT_WGPU") == "1":
                raise DeviceError(hinted(f"CUBELAB_EXPECT_WGPU=1 but {exc}",
                                         "install the Vulkan driver (apt-get install "
                                         "mesa-vulkan-drivers libvulkan1), or unset "
                                         "CUBELAB_EXPECT_WGPU")) from None
            if "cpu" not in _server_factories:
                raise
            warnings.warn(f"{exc}; falling back to the CPU runtime", RuntimeWarning, stacklevel=2)
            return Device.cpu()
