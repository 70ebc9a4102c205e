"""The CPU runtime: a vectorised numpy interpreter of cubelab's IR behind the same Client API.

    client = Device.cpu().client()            # client.name() == "cpu<numpy>"
    set_oob_mode(client, "report")            # per client: "zero" (default) | "clamp" | "report"
    with oob_mode(client, "report") as result:  # or for the launches of one block
        add.launch_unchecked[f32](client, ...)
    result.oob                                 # [OobAccess(buffer="x", index=6, length=6, ...)]
    result.prints                              # debug_print lines of those launches

Why a CPU runtime: cubelab must run where no Vulkan driver exists, and a student must be able to
*watch* a kernel run (`cubelab.inspect.trace`). The modes and reports exist only here — a GPU
never tells you which unit read past the end. The blocks wait for their launches (they end with
a round trip to the device thread), so their results are complete when the block exits.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from cubelab.errors import CubeError
from cubelab.runtime.cpu.memory import OOB_MODES, OobAccess
from cubelab.runtime.cpu.lanes import DivergentBarrier, KernelRuntimeError
from cubelab.runtime.cpu.server import (
    CpuServer,
    DebugPrinted,
    LaunchReport,
    OutOfBoundsWrite,
    print_lines,
)

__all__ = ["CpuServer", "DebugPrinted", "DivergentBarrier", "KernelRuntimeError", "LaunchReport",
           "LaunchResults", "OOB_MODES", "OobAccess", "OutOfBoundsWrite", "cpu_server", "oob_mode", "set_oob_mode",
           "launch_results"]


def cpu_server(client: Any, what: str = "this") -> CpuServer:
    """The CPU server behind `client`, or a clear error if `client` is another runtime's."""
    server = getattr(getattr(client, "device", None), "server", None)
    if not isinstance(server, CpuServer):
        name = client.name() if hasattr(client, "name") else type(client).__name__
        raise CubeError(
            f"{what} needs the CPU runtime, but the client is {name!r}; use "
            "`Device.cpu().client()` (and create the buffers with that client)")
    return server


@dataclass
class LaunchResults:
    """The reports of the launches made inside an `oob_mode` / `launch_results` block."""

    launches: list[LaunchReport] = field(default_factory=list)

    @property
    def oob(self) -> list[OobAccess]:
        return [a for r in self.launches for a in r.oob]

    @property
    def prints(self) -> list[str]:
        return [line for r in self.launches for line in r.prints]

    def __str__(self) -> str:
        if not self.oob:
            return f"{len(self.launches)} launch(es), no out-of-bounds access"
        return "\n".join(str(a) for a in self.oob)


def set_oob_mode(client: Any, mode: str) -> None:
    """How this CPU client treats an out-of-bounds index from now on (see `oob_mode`)."""
    server = cpu_server(client, "set_oob_mode")
    client.device.runner.call(server.set_oob_mode, mode)


@contextmanager
def oob_mode(client: Any, mode: str | None) -> Iterator[LaunchResults]:
    """Launches submitted inside the block use `mode`; their reports land in the result.

    - "zero":   reads out of bounds give 0, writes are dropped (what WebGPU drivers do);
    - "clamp":  the index is clamped to len - 1 (what the CheckedIo pass intends);
    - "report": as "zero", and every such access is recorded (buffer, index, length, unit,
                cube, kernel line) and published as an `OobReported` event.

    `mode=None` keeps the client's mode and only collects reports.
    """
    server = cpu_server(client, "oob_mode")
    runner = client.device.runner
    result = LaunchResults()
    runner.call(server.push_scope, mode, result.launches)
    try:
        yield result
    finally:
        runner.call(server.pop_scope)
        # debug_print lines of the block, printed here, on the calling thread: in a notebook
        # they land in the cell that made the launches
        for report in result.launches:
            if report.prints:
                print("\n".join(print_lines(report)))


def launch_results(client: Any) -> Any:
    """`with launch_results(client) as r:` collects reports (and debug_print lines) only."""
    return oob_mode(client, None)
