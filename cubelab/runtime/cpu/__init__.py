"""The CPU runtime: a vectorised numpy interpreter of cubelab's IR behind the same Client API.

    client = Device.cpu().client()            # client.name() == "cpu<numpy>"
    set_oob_mode(client, "report")            # per client: "zero" (default) | "clamp" | "report"
    with oob_mode(client, "report") as result:  # or for the launches of one block
        add.launch_unchecked[f32](client, ...)
    result.oob                                 # [OobAccess(buffer="x", index=6, length=6, ...)]
    result.prints                              # debug_print lines of those launches
    with race_report(client) as result:        # record accesses; judge them
        block_sum.launch[f32](client, ...)
    result.races, result.uninitialised         # [Race(array, index, units, lines, phase)], ...
    with nonfinite_report(client) as result:   # an op making inf/NaN from finite operands
        ...
    result.nonfinite                           # [NonFinite(kernel, unit, op, result, ..., line)]
    set_reports(client, races=True, nonfinite=True)   # every launch from now on; printed
    set_reports(client, cost=True)             # every launch's coalescing and bank conflicts
    cpu_step("student.softplus", fn)           # a plug-in op's step (cubelab.ir.plugins)

Why a CPU runtime: cubelab must run where no Vulkan driver exists, and a student must be able to
*watch* a kernel run (`cubelab.inspect.trace`). The modes and reports exist only here — a GPU
never tells you which unit read past the end. The blocks wait for their launches (they end with
a round trip to the device thread), so their results are complete when the block exits.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from cubelab.errors import CubeError, hinted
from cubelab.runtime.cpu.access import Access, NonFinite, Race
from cubelab.runtime.cpu.instruments import Instruments
from cubelab.runtime.cpu.memory import OOB_MODES, OobAccess
from cubelab.runtime.cpu.lanes import DivergentBarrier, KernelRuntimeError
from cubelab.runtime.cpu.server import (
    CostMeasured,
    CpuServer,
    DebugPrinted,
    LaunchReport,
    NonFiniteMade,
    OutOfBoundsWrite,
    RacesFound,
    print_lines,
    report_lines,
)

from cubelab.runtime.cpu.steps.plugin import cpu_step

__all__ = ["cpu_step", "CpuServer", "DebugPrinted", "DivergentBarrier", "KernelRuntimeError", "LaunchReport",
           "LaunchResults", "OOB_MODES", "OobAccess", "OutOfBoundsWrite", "cpu_server", "oob_mode", "set_oob_mode",
           "launch_results", "race_report", "nonfinite_report", "set_reports", "RacesFound",
           "NonFiniteMade", "Race", "NonFinite", "Access", "report_lines", "print_lines",
           "CostMeasured"]


def cpu_server(client: Any, what: str = "this") -> CpuServer:
    """The CPU server behind `client`, or a clear error if `client` is another runtime's."""
    server = getattr(getattr(client, "device", None), "server", None)
    if not isinstance(server, CpuServer):
        name = client.name() if hasattr(client, "name") else type(client).__name__
        raise CubeError(hinted(
            f"{what} needs the CPU runtime, but the client is {name!r}",
            "use `Device.cpu().client()` (and create the buffers with that client)"))
    return server


@dataclass
class LaunchResults:
    """The reports of the launches made inside an `oob_mode` / `launch_results` block."""

    launches: list[LaunchReport] = field(default_factory=list)

    def _all(self, report_field: str) -> list[Any]:
        """One field of every launch's report, in launch order (an absent list counts as empty)."""
        return [x for r in self.launches for x in (getattr(r, report_field) or [])]

    @property
    def oob(self) -> list[OobAccess]:
        return self._all("oob")

    @property
    def prints(self) -> list[str]:
        return self._all("prints")

    @property
    def races(self) -> list[Race]:
        return self._all("races")

    @property
    def uninitialised(self) -> list[Access]:
        return self._all("uninitialised")

    @property
    def nonfinite(self) -> list[NonFinite]:
        return self._all("nonfinite")

    def __str__(self) -> str:
        lines = [str(a) for a in self.oob]
        for r in self.launches:
            lines += report_lines(r)
        checked = [r for r in self.launches if r.races is not None]
        if checked and not self.races and not self.uninitialised:
            lines.append(f"{len(checked)} launch(es) checked: no race, no uninitialised shared "
                         "read")
        nf = [r for r in self.launches if r.nonfinite is not None]
        if nf and not self.nonfinite:
            lines.append(f"{len(nf)} launch(es) checked: no op made inf or NaN from finite "
                         "operands")
        if not lines:
            return f"{len(self.launches)} launch(es), no out-of-bounds access"
        return "\n".join(lines)


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
    with _reports(client, "oob_mode", Instruments(), mode) as result:
        yield result


def launch_results(client: Any) -> Any:
    """`with launch_results(client) as r:` collects reports (and debug_print lines) only."""
    return oob_mode(client, None)


@contextmanager
def _reports(client: Any, what: str, instruments: Instruments,
             mode: str | None = None) -> Iterator[LaunchResults]:
    """The one report scope: launches of the block carry `instruments` (and `mode`, if given)."""
    server = cpu_server(client, what)
    runner = client.device.runner
    result = LaunchResults()
    runner.call(server.push_scope, mode, result.launches, instruments)
    try:
        yield result
    finally:
        runner.call(server.pop_scope)
        # debug_print lines of the block, printed here, on the calling thread: in a notebook
        # they land in the cell that made the launches
        for report in result.launches:
            if report.prints:
                print("\n".join(print_lines(report)))


def race_report(client: Any) -> Any:
    """`with race_report(client) as r:` records every global and shared access of the launches
    in the block (the first 64 cubes of each) and judges them: `r.races` (two units, one
    element, nothing ordering them, at least one plain write) and `r.uninitialised` (shared
    reads of elements nobody wrote before). The rules: `cubelab.runtime.cpu.access`."""
    return _reports(client, "race_report", Instruments(accesses=True))


def nonfinite_report(client: Any) -> Any:
    """`with nonfinite_report(client) as r:` — `r.nonfinite` lists every op of the block's
    launches that made inf or NaN from finite operands (unit, op, operands, kernel line). WGSL
    lets a GPU assume floats are finite, so such a kernel is not portable."""
    return _reports(client, "nonfinite_report", Instruments(nonfinite=True))


def set_reports(client: Any, races: bool = False, nonfinite: bool = False,
                echo: bool = True, cost: bool = False) -> None:
    """Judge every launch of this CPU device from now on (`%cubelab races on` / `cost on` use
    it): findings are published as `RacesFound` / `NonFiniteMade` / `CostMeasured` events and,
    with `echo`, printed. `cost`: each launch's coalescing and bank conflicts per source line
    (the first 64 cubes, 32 units per plane; the rules: `cost.py`)."""
    server = cpu_server(client, "set_reports")
    client.device.runner.call(server.set_reports, races, nonfinite, echo, cost)
