"""Step through a launch: every op a chosen unit executed, its value, its IR and its kernel line.

    t = cubelab.inspect.trace(saxpy.launch[f32], client, CubeCount.Static(2), CubeDim.new_1d(4),
                              4, 2.0, BufferArg.from_raw_parts(x, 32),
                              BufferArg.from_raw_parts(y, 32), units=[5])
    t.current            # TraceStep of the cursor (starts at the first step)
    t.forward(); t.back(); t.goto(7); t.select(unit)   # navigation (returns the new step)
    t.steps_of(5)        # every TraceStep of unit 5, in order
    t.table()            # the same as text, one line per step

The launch runs on the CPU runtime (it is the one that can watch a unit), for real: the buffers
are written as by an ordinary launch. Given a client of another runtime (wgpu), the buffer
arguments are first copied to the CPU runtime and the launch runs there: the wgpu buffers are
left unchanged, and `Trace.client` is the CPU client holding the copies. Only
the one launch is traced — the server builds an instrumented plan for it; ordinary launches keep
running the plain plan, so tracing costs nothing when it is not used.

Shape of the data (all plain: ints, floats, bools, lists, strings — JSON-ready via `to_dict`):
`Trace.steps[unit]` is a list of `TraceStep(index, unit, op, ir, result, value, operands, line,
source, depth, note)` — see `cubelab.runtime.cpu.trace.TraceStep`. A unit's list holds only the
ops it executed while active: a branch it skipped has no steps, a loop body appears once per
iteration (the `scf.for` step before each iteration carries the loop index in `value`).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from cubelab.errors import BufferFailure, CubeError, FailedTraceWarning, api_boundary, hinted
from cubelab.ir.printer import print_kernel
from cubelab.runtime.cpu import LaunchReport, cpu_server
from cubelab.runtime.cpu.trace import TraceStep
from cubelab.runtime.device import Device
from cubelab.frontend import aggregate_launch
from cubelab.runtime.handle import BufferArg, TensorArg

__all__ = ["Trace", "TraceStep", "trace", "unit_position"]


@dataclass
class Trace:
    kernel: str
    units: tuple[int, ...]
    steps: dict[int, list[TraceStep]]
    ir: str
    source_lines: list[str]
    first_line: int
    report: LaunchReport
    truncated: bool = False
    client: Any = None  # the CPU client the launch ran on
    copied: bool = False  # True when the buffers were copied from another runtime first
    failure: BaseException | None = None  # why the traced launch failed (its steps end there)
    unit: int = 0
    position: int = 0
    _history: list[tuple[int, int]] = field(default_factory=list, repr=False)

    # -- navigation ---------------------------------------------------------------------------
    def steps_of(self, unit: int | None = None) -> list[TraceStep]:
        u = self.unit if unit is None else unit
        if u not in self.steps:
            raise KeyError(f"unit {u} was not traced; traced units: {list(self.units)}")
        return self.steps[u]

    @property
    def current(self) -> TraceStep | None:
        s = self.steps_of()
        return s[self.position] if 0 <= self.position < len(s) else None

    def __len__(self) -> int:
        return len(self.steps_of())

    def goto(self, position: int) -> TraceStep | None:
        n = len(self.steps_of())
        self.position = max(0, min(position, n - 1)) if n else 0
        return self.current

    def forward(self, n: int = 1) -> TraceStep | None:
        return self.goto(self.position + n)

    def back(self, n: int = 1) -> TraceStep | None:
        return self.goto(self.position - n)

    def select(self, unit: int) -> TraceStep | None:
        """Show another traced unit, at the same position (clamped)."""
        self.steps_of(unit)
        self.unit = unit
        return self.goto(self.position)

    def at_line(self, line: int, unit: int | None = None) -> list[TraceStep]:
        return [s for s in self.steps_of(unit) if s.line == line]

    def find(self, op: str | None = None, result: str | None = None,
             unit: int | None = None) -> list[TraceStep]:
        return [s for s in self.steps_of(unit)
                if (op is None or s.op == op) and (result is None or s.result == result)]

    # -- output -------------------------------------------------------------------------------
    def table(self, unit: int | None = None) -> str:
        rows = []
        for s in self.steps_of(unit):
            where = f"line {s.line}" if s.line is not None else "prologue"
            mark = "▶" if s.index == self.position and (unit is None or unit == self.unit) else " "
            val = "" if s.value is None else f" = {_show(s.value)}"
            note = f"   ({s.note})" if s.note else ""
            rows.append(f"{mark}{s.index:4d} {'  ' * s.depth}{s.ir}{val}   [{where}]{note}")
        return "\n".join(rows)

    def __str__(self) -> str:
        head = f"trace of `{self.kernel}`, unit {self.unit}:"
        if self.failure is not None:
            head += (f"\n(the launch failed — the steps end where it stopped: "
                     f"{type(self.failure).__name__}: {self.failure})")
        return f"{head}\n{self.table()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "units": list(self.units), "unit": self.unit,
            "position": self.position, "truncated": self.truncated, "ir": self.ir,
            "source_lines": list(self.source_lines), "first_line": self.first_line,
            "steps": {str(u): [s.to_dict() for s in ss] for u, ss in self.steps.items()},
            "oob": [str(a) for a in self.report.oob], "prints": list(self.report.prints),
        }


def _show(v: Any) -> str:
    import numpy as np

    if isinstance(v, float):
        return str(np.float32(v))
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return str(v)


def unit_position(count: Any, dim: Any, cube: tuple[int, int, int],
                  unit: tuple[int, int, int]) -> int:
    """The linear position (ABSOLUTE_POS) of unit `unit` (UNIT_POS_X/Y/Z) of cube `cube`
    (CUBE_POS_X/Y/Z): cube-major, x fastest — the order every runtime numbers units in."""
    cx, cy, _ = count.as_tuple()
    dx, dy, _ = dim.as_tuple()
    c = cube[0] + cube[1] * cx + cube[2] * cx * cy
    return c * dim.num_units + unit[0] + unit[1] * dx + unit[2] * dx * dy


@api_boundary
def trace(launcher: Any, client: Any, cube_count: Any, cube_dim: Any, *args: Any,
          units: Iterable[Any] = (0,), limit: int = 100_000) -> Trace:
    """Run `launcher(client, cube_count, cube_dim, *args)` on the CPU runtime, recording every op
    of the chosen `units`: linear positions in the dispatch (ABSOLUTE_POS), or
    `((cube_x, cube_y, cube_z), (unit_x, unit_y, unit_z))` pairs for 2-D/3-D launches."""
    total = _total_units(cube_count, cube_dim)
    units = [unit_position(cube_count, cube_dim, tuple(u[0]), tuple(u[1]))
             if isinstance(u, (tuple, list)) else int(u) for u in units]
    for u in units:
        if not 0 <= int(u) < total:
            raise ValueError(hinted(f"unit {u} is not part of this launch ({total} units)",
                                    f"pick units 0 .. {total - 1}"))
    units_t = tuple(int(u) for u in units)
    if not units_t:
        raise ValueError(hinted("trace(..., units=[...]) needs at least one unit",
                                "e.g. units=[0]"))
    result, client, args, copied = run_recorded(client, launcher, cube_count, cube_dim, args,
                                                "trace", (units_t, limit))
    tracer, report, definition = result
    t = Trace(definition.name, units_t, tracer.steps, print_kernel(definition),
              list(definition.source_lines), definition.first_line, report, tracer.truncated,
              client, copied, failure=failure_of(client, args), unit=units_t[0])
    if t.failure is not None:
        warnings.warn(FailedTraceWarning(
            f"trace of `{t.kernel}`: the launch failed, so its steps end where it stopped "
            f"(`Trace.failure`): {type(t.failure).__name__}: {t.failure}"), stacklevel=2)
    return t


def failure_of(client: Any, args: tuple[Any, ...]) -> BaseException | None:
    """The root cause a traced launch left on its buffers (a failure is buffer state: the
    launch itself returned normally, with its steps cut off where it stopped)."""
    handles = [a.handle for x in args for a in aggregate_launch.host_values(x)
               if isinstance(a, (BufferArg, TensorArg))]
    try:
        client.check(handles)
    except BufferFailure as exc:
        return exc.cause
    return None


def run_recorded(client: Any, launcher: Any, cube_count: Any, cube_dim: Any,
                 args: tuple[Any, ...], recorder: str, start: tuple[Any, ...],
                 copy: bool = False) -> tuple[Any, Any, tuple[Any, ...], bool]:
    """Run one launch on the CPU runtime with its server's `recorder` on ("trace": `begin_trace`
    / `end_trace`, "record": `begin_record` / `end_record`, each called on the device thread).

    A launch issued on another runtime (or any, with `copy`) is re-run on CPU copies of its
    buffers, compiled with the issuing client's options. Returns (what `end_<recorder>` gave,
    the CPU client, the arguments it ran with, whether the buffers were copied); raises when
    the launch did not run."""
    copied = False
    source = client
    if copy or client.name() != "cpu<numpy>":
        client, args = _copy_to_cpu(client, args)
        copied = True
    server = cpu_server(client, "trace" if recorder == "trace" else "access_map")
    runner = client.device.runner
    with same_options(source, client):
        runner.call(getattr(server, f"begin_{recorder}"), *start)
        try:
            launcher(client, cube_count, cube_dim, *args)
        finally:
            result = runner.call(getattr(server, f"end_{recorder}"))
    if result is None:
        cause = failure_of(client, args)
        if isinstance(cause, CubeError):
            # it failed to compile (or was refused): say why, with the kernel line and caret
            raise cause.with_traceback(None)
        raise CubeError(
            f"the {recorder.rstrip('e')}ed launch did not run: it was gated (a zero cube count), "
            f"skipped or a dry run{f' ({type(cause).__name__}: {cause})' if cause else ''}"
            "\n  hint: launch it outside `dry_run()` with a non-zero CubeCount, or read one of "
            "its output buffers to see why")
    return result, client, args, copied


@contextmanager
def same_options(source: Any, cpu: Any) -> Iterator[None]:
    """Compile on `cpu` with `source`'s compilation options (the CheckedIo rule, the loop
    budget, extra passes) while the block runs: a re-run launch must do what it did where it
    was issued."""
    if source is cpu:
        yield
        return
    want, had = source.compilation_options(), cpu.compilation_options()
    if want == had:
        yield
        return
    cpu.set_compilation_options(**want.as_dict())
    try:
        yield
    finally:
        cpu.set_compilation_options(**had.as_dict())


def _copy_to_cpu(client: Any, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """The CPU client and `args` with every buffer argument replaced by a CPU copy."""
    cpu = Device.cpu().client()
    copies: dict[int, Any] = {}

    def copy(handle: Any) -> Any:
        if handle.id not in copies:
            copies[handle.id] = cpu.create_from_slice(client.read_one(handle))
        return copies[handle.id]

    def rehome(a: Any) -> Any:
        if isinstance(a, TensorArg):
            return TensorArg(copy(a.handle), a.shape, a.strides, a.length)
        if isinstance(a, BufferArg):
            return BufferArg(copy(a.handle), a.length)
        return a

    # a @cube_type argument's buffer fields are copied too
    return cpu, tuple(aggregate_launch.map_host(a, rehome) for a in args)


def _total_units(count: Any, dim: Any) -> int:
    if getattr(count, "handle", None) is not None:
        return 2**62  # a dynamic count: the grid is known only on the device
    x, y, z = count.as_tuple()
    return x * y * z * dim.num_units
