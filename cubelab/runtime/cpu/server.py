"""The CPU runtime's server: memory as numpy byte arrays, "pipelines" as interpreter plans.

It is a `Server` like the wgpu one, so the KernelId cache, the compile events, the failure
ledger and the debug log are the shared ones: a "compile" here is define → passes → printing the
IR (the debug log's "source" is that IR text) → building a `Plan`. A dispatch runs the plan to
completion on the device thread, so `sync` has nothing to wait for and a dynamic cube count is
simply read from memory (everything before it has run).

What only this server does, each decided on the calling thread and handed over in FIFO order
through the runner (so it applies exactly to the launches submitted in between):

- the out-of-bounds mode (`zero`, the default, what WebGPU drivers do; `clamp`; `report`), per
  client (`set_oob_mode`) or for a `with oob_mode(client, ...)` block;
- collecting each launch's `LaunchReport` (OOB accesses, debug_print lines) for such a block;
- tracing the next launch for chosen units (`cubelab.inspect.trace`), with a separately built,
  instrumented plan — the ordinary plan carries no tracing code at all;
- recording the next launch's accesses (`cubelab.inspect.access_map`), and the race and
  non-finite reports (a `race_report`/`nonfinite_report` block, or `set_reports` per client):
  again a second plan per KernelId, carrying the instruments of `instruments.py`, built only
  when one is asked for.

debug_print lines are published as `DebugPrinted`; inside an `oob_mode`/`launch_results` block
the calling thread prints them when the block ends (so a notebook shows them in the cell that
launched), otherwise the device thread writes them to `sys.stdout` when the launch has run.

The trap: the scope stack is per device, not per calling thread — two threads opening blocks
on one CPU device at once see each other's launches.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cubelab.compiler.base import CompiledSource
from cubelab.compiler.info import info_layout
from cubelab.errors import CubeError, hinted
from cubelab.ir.core import KernelDefinition
from cubelab.ir.printer import print_kernel_mapped
from cubelab.ir.types import Atomic, Ty
from cubelab.runtime import events as ev
from cubelab.runtime.cpu import semantics as sem
from cubelab.runtime.cpu.access import Access, AccessLog, NonFinite, Race, find_races, \
    find_uninitialised
from cubelab.runtime.cpu.cost import LineCoalescing, LineConflicts, bank_conflicts, \
    coalescing_by_line, conflicts_by_line, cost_lines, transactions
from cubelab.runtime.cpu.instruments import Counts, Instruments, Recorder
from cubelab.runtime.cpu.lanes import MAX_LOOP_ITERATIONS, LaunchState
from cubelab.runtime.cpu.memory import OOB_MODES, Mem, OobAccess
from cubelab.runtime.cpu.plan import Plan
from cubelab.runtime.cpu.trace import Tracer
from cubelab.runtime.handle import Handle, binding_start
from cubelab.runtime.kernel_id import KernelId
from cubelab.runtime.launch_args import Bindings, CubeCount
from cubelab.runtime.memory_pool import MemoryConfiguration, Slice
from cubelab.runtime.properties import DeviceProperties
from cubelab.runtime.execute_scope import LaunchInfo, fail_buffers
from cubelab.runtime.server import PipelineEntry, Server

PLANE_SIZE = 32
MAX_REPORT_CUBES = 64  # cubes a race report records per launch (the first ones)


@dataclass(slots=True, eq=False)
class DebugPrinted(ev.Event):
    """CPU runtime: the lines a launch's `debug_print` calls produced (already prefixed with
    each unit's coordinates)."""

    kernel: str
    lines: tuple[str, ...]
    total: int
    launch_seq: int


@dataclass(slots=True, eq=False)
class RacesFound(ev.Event):
    """CPU runtime, race report on: the races (and uninitialised shared reads) of one launch."""

    kernel: str
    races: tuple[Race, ...]
    total: int
    uninitialised: tuple[Access, ...]
    launch_seq: int


@dataclass(slots=True, eq=False)
class CostMeasured(ev.Event):
    """CPU runtime, cost report on: one launch's coalescing and bank conflicts per source line
    (over the recorded cubes; `cost.py`), with the text of those lines."""

    kernel: str
    coalescing: tuple[LineCoalescing, ...]
    conflicts: tuple[LineConflicts, ...]
    plane_width: int
    source: dict[int, str]
    launch_seq: int


@dataclass(slots=True, eq=False)
class NonFiniteMade(ev.Event):
    """CPU runtime, non-finite report on: ops of one launch that made inf/NaN from finite
    operands."""

    kernel: str
    records: tuple[NonFinite, ...]
    total: int
    launch_seq: int


@dataclass
class LaunchReport:
    """What one CPU launch observed besides its outputs (plain data)."""

    kernel: str
    launch_seq: int
    oob_mode: str
    oob: list[OobAccess] = field(default_factory=list)
    oob_total: int = 0  # may exceed len(oob): at most 1000 accesses are kept per launch
    prints: list[str] = field(default_factory=list)
    prints_total: int = 0
    # with the race report on (cubes recorded: the first MAX_REPORT_CUBES)
    races: list[Race] | None = None
    races_total: int = 0
    uninitialised: list[Access] = field(default_factory=list)
    cubes_checked: int = 0
    # with the non-finite report on
    nonfinite: list[NonFinite] | None = None
    nonfinite_total: int = 0
    # with the cost report on: per source line, and the text of those lines
    coalescing: list[LineCoalescing] | None = None
    conflicts: list[LineConflicts] = field(default_factory=list)
    source: dict[int, str] = field(default_factory=dict)


def report_lines(report: LaunchReport) -> list[str]:
    """The race and non-finite findings of a launch, as printed when the reports are on."""
    lines: list[str] = []
    k = report.kernel
    if report.races:
        lines.append(f"cubelab: {report.races_total} race(s) in `{k}`:")
        lines += [f"  {r}" for r in report.races[:20]]
        if report.races_total > 20:
            lines.append(f"  ... {report.races_total - 20} more")
    if report.uninitialised:
        lines.append(f"cubelab: {len(report.uninitialised)} uninitialised shared read(s) in "
                     f"`{k}`:")
        lines += [f"  unit {a.unit} reads {a.array}[{a.index}] (cube {a.cube}) in phase "
                  f"{a.phase}, line {a.line}, but no unit wrote it before"
                  for a in report.uninitialised[:20]]
    if report.nonfinite:
        lines.append(f"cubelab: {report.nonfinite_total} non-finite value(s) made in `{k}`:")
        lines += [f"  {n}" for n in report.nonfinite[:20]]
    if report.coalescing is not None:
        lines += cost_lines(k, report.coalescing, report.conflicts, report.source.get)
    return lines


def print_lines(report: LaunchReport) -> list[str]:
    """A launch's debug_print lines as printed (with a note when some were dropped)."""
    lines = list(report.prints)
    if report.prints_total > len(lines):
        lines.append(f"... {report.prints_total - len(lines)} more debug_print lines not shown")
    return lines


class CpuTarget:
    """The CPU runtime's "codegen": the IR text is the source (the debug log prints it)."""

    name = "ir"
    shown_only = False

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        text, line_map = print_kernel_mapped(kernel)
        return CompiledSource("ir", kernel.entry, text + "\n", info_layout(kernel), line_map)


class CpuServer(Server):
    name = "cpu<numpy>"

    def __init__(self, bus: ev.EventBus) -> None:
        super().__init__(bus)
        self.properties = DeviceProperties(
            adapter=f"numpy {np.__version__} interpreter", backend="numpy", adapter_type="CPU",
            features=frozenset({"subgroup"}),
        )
        self.target = CpuTarget()
        self.plane_size = PLANE_SIZE
        # A loop running longer than this is stopped with a clear error (on a GPU it would hang
        # the device); `Device.cpu().server.max_loop_iterations` may be changed.
        self.max_loop_iterations = MAX_LOOP_ITERATIONS
        # handle id -> its bytes: a uint8 view of its slice of a pooled page, 16-byte multiple
        # (so every item type up to vec4 views it whole)
        self.memory: dict[int, np.ndarray] = {}
        self.oob_mode = "zero"
        self._scopes: list[tuple[str | None, list[LaunchReport], Instruments]] = []
        self._trace_request: tuple[tuple[int, ...], int] | None = None
        self._trace_result: tuple[Tracer, LaunchReport, KernelDefinition] | None = None
        self._traced_plans: dict[KernelId, Plan] = {}
        self._record_request: tuple[frozenset[int] | None, int, bool] | None = None
        self._record_result: tuple[AccessLog, LaunchReport, KernelDefinition] | None = None
        self._instrumented_plans: dict[tuple[KernelId, Instruments], Plan] = {}
        self.reports = Instruments()  # per device: `set_reports`
        self._reports_on = False  # bool(self.reports), kept so a plain launch makes no call
        self.race_reports = False  # set_reports: which judgements the recorded accesses get
        self.cost_reports = False
        self.reports_echo = True  # print findings from the device thread (not in a block)
        self._seq = 0
        self._oob_writes: list[OobAccess] = []
        self._bound: dict[tuple[Any, ...], list[Mem]] = {}
        self._bound_of: dict[int, list[tuple[Any, ...]]] = {}  # handle id -> its _bound keys
        self.init_memory(MemoryConfiguration(alignment=self.properties.memory_alignment))
        # Integer wrap-around and float overflow are WGSL semantics here, not accidents: numpy
        # must not warn about them (numpy 2 keeps this setting per thread: the device thread).
        np.seterr(all="ignore")

    # -- memory -------------------------------------------------------------------------------
    def alloc_page(self, size: int) -> Any:
        # np.zeros asks the OS for zeroed pages (calloc/mmap): untouched bytes cost no RSS, and
        # a freed page of this size goes straight back to the OS
        return np.zeros(size, dtype=np.uint8)

    def place(self, handle: Handle, s: Slice, data: bytes | None, zero: bool) -> None:
        size = max(16, (handle.size + 15) & ~15)  # <= s.size: the alignment is at least 16
        view = s.page.storage[s.offset: s.offset + size]
        if data is not None:
            n = len(data)
            view[:n] = np.frombuffer(data, dtype=np.uint8)
            view[n:] = 0
        elif zero:
            view[:] = 0
        self.memory[handle.id] = view

    def forget_bindings(self, handle_id: int) -> None:
        self.memory.pop(handle_id, None)
        keys = self._bound_of.pop(handle_id, None)
        if keys:
            for key in keys:
                self._bound.pop(key, None)

    def read_bytes(self, handles: list[Handle]) -> list[bytes]:
        out = []
        for h in handles:
            self.slice_of(h, "read")
            out.append(self.memory[h.id][h.offset: h.offset + h.size].tobytes())
        return out

    def write_bytes(self, handle: Handle, data: bytes) -> None:
        self.slice_of(handle, "write")
        at = handle.offset  # a view writes where it starts
        self.memory[handle.id][at: at + len(data)] = np.frombuffer(data, dtype=np.uint8)

    def sync(self) -> None:
        """Every dispatch ran to completion on this thread already."""

    def wait(self) -> None:
        """Nothing is ever in flight."""

    def clear_cache(self, reason: str) -> None:
        self._traced_plans.clear()
        self._instrumented_plans.clear()
        self._bound.clear()
        self._bound_of.clear()
        super().clear_cache(reason)

    # -- compile ------------------------------------------------------------------------------
    def build_pipeline(self, entry: PipelineEntry) -> None:
        entry.pipeline = Plan(entry.definition)

    def forget_pipeline(self, entry: PipelineEntry) -> None:
        # the views cache is keyed by id(plan): a plan that dies must take its entries along,
        # or a new plan born at the same address would be handed the old one's views
        plan, kid = id(entry.pipeline), entry.kernel_id
        for key in [k for k in self._bound if k[0] == plan]:
            del self._bound[key]
        self._traced_plans.pop(kid, None)
        for key in [k for k in self._instrumented_plans if k[0] == kid]:
            del self._instrumented_plans[key]

    # -- calling-thread requests (run on the device thread, in submission order) ---------------
    def set_oob_mode(self, mode: str) -> None:
        _check_mode(mode)
        self.oob_mode = mode

    def push_scope(self, mode: str | None, sink: list[LaunchReport],
                   instruments: Instruments = Instruments()) -> None:
        if mode is not None:
            _check_mode(mode)
        self._scopes.append((mode, sink, instruments))

    def set_reports(self, races: bool, nonfinite: bool, echo: bool = True,
                    cost: bool = False) -> None:
        self.reports = Instruments(races or cost, nonfinite)
        self.race_reports, self.cost_reports = races, cost
        self._reports_on = bool(self.reports)
        self.reports_echo = echo

    def begin_record(self, cubes: frozenset[int] | None, limit: int,
                     nonfinite: bool = False, counts: bool = False,
                     run_only: tuple[tuple[int, int], ...] | None = None) -> None:
        """Record the next launch: the accesses of `cubes` (None: every cube), at most `limit`;
        with `counts`, what it moves and computes (`instruments.Counts`); with `run_only`, only
        those (first, end) runs of cubes execute (a roofline's sample, on copies)."""
        self._record_request = (cubes if cubes is None else frozenset(cubes), limit, nonfinite,
                                counts, run_only)
        self._record_result = None

    def end_record(self) -> tuple[AccessLog, LaunchReport, KernelDefinition,
                                  Counts | None] | None:
        self._record_request = None
        out, self._record_result = self._record_result, None
        return out

    def pop_scope(self) -> None:
        self._scopes.pop()

    def begin_trace(self, units: tuple[int, ...], limit: int) -> None:
        self._trace_request = (tuple(int(u) for u in units), limit)
        self._trace_result = None

    def end_trace(self) -> tuple[Tracer, LaunchReport, KernelDefinition] | None:
        self._trace_request = None
        out, self._trace_result = self._trace_result, None
        return out

    def current_oob_mode(self) -> str:
        for mode, _, _ in reversed(self._scopes):
            if mode is not None:
                return mode
        return self.oob_mode

    # -- launch -------------------------------------------------------------------------------
    def launch(self, kernel: Any, count: CubeCount, bindings: Bindings, seq: int,
               *args: Any, **kwargs: Any) -> Any:
        self._seq = seq
        self._oob_writes = []
        out = super().launch(kernel, count, bindings, seq, *args, **kwargs)
        if self._oob_writes:
            self._fail_oob_writes(kernel, bindings, seq)
        return out

    def _fail_oob_writes(self, kernel: Any, bindings: Bindings, seq: int) -> None:
        """`report` mode: a buffer written out of bounds carries a failure (seed 001's model)
        naming every recorded access, so reading it says what went wrong and where."""
        by_buffer: dict[str, list[OobAccess]] = {}
        for a in self._oob_writes:
            by_buffer.setdefault(a.buffer, []).append(a)
        self._oob_writes = []
        for b in bindings.buffers:
            accesses = by_buffer.get(b.name)
            if not accesses:
                continue
            lines = "\n".join(f"  {a}" for a in accesses[:8])
            more = f"\n  ... {len(accesses) - 8} more" if len(accesses) > 8 else ""
            err = OutOfBoundsWrite(
                f"kernel `{kernel.name}` wrote `{b.name}` out of bounds (OOB mode `report`); "
                f"those writes were dropped:\n{lines}{more}")
            fail_buffers(self.ledger, self.bus, LaunchInfo(kernel.name, kernel.id(), seq),
                         [(b.handle, b.name)], err)

    def dispatch(self, entry: PipelineEntry, count: CubeCount, bindings: Bindings) -> None:
        definition = entry.definition
        grid = count.as_tuple()
        plan: Plan = entry.pipeline
        tracer: Tracer | None = None
        if self._trace_request is not None:
            units, limit = self._trace_request
            self._trace_request = None  # one launch is traced
            traced = self._traced_plans.get(entry.kernel_id)
            if traced is None:
                traced = Plan(definition, traced=True)
                self._traced_plans[entry.kernel_id] = traced
            plan = traced
            tracer = Tracer(units, limit)
        mode = self.current_oob_mode()
        recorder, races = None, False
        # the plain path pays three attribute reads: no call, no instrument (benchmarks show it)
        if tracer is None and (self._record_request is not None or self._reports_on
                               or self._scopes):
            recorder, races = self._recorder(definition, grid, mode)
        cube_runs = None
        if recorder is not None:
            cube_runs = recorder.cube_runs
            inst = Instruments(recorder.log is not None, recorder.nonfinite is not None,
                               recorder.counts is not None)
            plan = self._instrumented_plans.get((entry.kernel_id, inst))  # type: ignore[assignment]
            if plan is None:
                plan = Plan(definition, instruments=inst)
                self._instrumented_plans[(entry.kernel_id, inst)] = plan
        mems = self._bind(definition, plan, bindings)
        launch = LaunchState(definition.name, grid, definition.cube_dim, mems, bindings.scalars,
                             oob=mode, plane_size=self.plane_size, launch_seq=self._seq,
                             tracer=tracer, definition=definition,
                             max_iterations=self.max_loop_iterations, recorder=recorder,
                             scalar_key=bindings.scalar_key(), cube_runs=cube_runs)
        try:
            plan.run(launch)
        finally:
            if self._scopes or tracer is not None or recorder is not None or launch.reports \
                    or launch.prints:
                report = LaunchReport(definition.name, self._seq, mode, launch.reports,
                                      launch.reports_total, launch.prints, launch.prints_total)
                if recorder is not None:
                    self._findings(report, recorder, races)
                for _, sink, _ in self._scopes:
                    sink.append(report)
                self._oob_writes.extend(a for a in launch.reports
                                        if a.write and a.outcome != "clamped")
                if tracer is not None:
                    self._trace_result = (tracer, report, definition)
                self._publish(report, launch)

    def _recorder(self, definition: KernelDefinition, grid: tuple[int, int, int],
                  mode: str) -> tuple[Recorder | None, bool]:
        """The instruments this launch carries: an access recording (access_map), the race
        report, the non-finite report — or none (the plain plan runs)."""
        races = self.reports.accesses or any(i.accesses for _, _, i in self._scopes)
        nonfinite = self.reports.nonfinite or any(i.nonfinite for _, _, i in self._scopes)
        request = self._record_request
        if request is None and not races and not nonfinite:
            return None, False
        per = definition.cube_dim[0] * definition.cube_dim[1] * definition.cube_dim[2]
        total = grid[0] * grid[1] * grid[2]
        log = None
        counts, runs = False, None
        if request is not None:
            self._record_request = None  # one launch is recorded
            cubes, limit, asked_nonfinite, counts, runs = request
            log = AccessLog(cubes, limit) if limit > 0 else None
            nonfinite = nonfinite or asked_nonfinite
        elif races:
            log = AccessLog(None if total <= MAX_REPORT_CUBES
                            else frozenset(range(MAX_REPORT_CUBES)))
        rec = Recorder(definition, total * per, per, log, [] if nonfinite else None,
                       oob_mode=mode)
        if counts:
            rec.counts = Counts()
            rec.cube_runs = runs
        rec.cubes_checked = min(total, MAX_REPORT_CUBES) if races else 0
        return rec, races and request is None

    def _findings(self, report: LaunchReport, rec: Recorder, races: bool) -> None:
        if (rec.log is not None or rec.counts is not None) and not races:
            self._record_result = (rec.log if rec.log is not None else AccessLog(frozenset()),
                                   report, rec.definition, rec.counts)
        # `races`: a judged launch (a race_report block, or set_reports), not an access_map
        scoped = any(i.accesses for _, _, i in self._scopes)
        if races and rec.log is not None and (self.race_reports or scoped):
            t = rec.log.table()
            lengths = np.array([rec.log.arrays[n].length for n in t.names] + [0], dtype=np.int64)
            t = t.select((t.index >= 0) & (t.index < lengths[t.array]))
            report.races, report.races_total = find_races(t)
            report.uninitialised = find_uninitialised(t)
            report.cubes_checked = rec.cubes_checked
        if races and rec.log is not None and self.cost_reports:
            t, arrays = rec.log.table(), dict(rec.log.arrays)
            report.coalescing = coalescing_by_line(transactions(t, arrays, self.plane_size))
            report.conflicts = conflicts_by_line(bank_conflicts(t, arrays, self.plane_size))
            d = rec.definition
            for r in report.coalescing + report.conflicts:
                if r.line is not None and 0 <= r.line - d.first_line < len(d.source_lines):
                    report.source[r.line] = d.source_lines[r.line - d.first_line].strip()
        if rec.nonfinite is not None:
            report.nonfinite = rec.nonfinite
            report.nonfinite_total = rec.nonfinite_total

    def _bind(self, definition: KernelDefinition, plan: Plan, bindings: Bindings) -> list[Mem]:
        # Views are cached per (plan, buffers): binding costs ~15 µs, a quarter of a small
        # launch. A handle's memory never moves; a released handle's entries are dropped
        # (`forget_bindings`), so the cache never holds a released slice's view.
        key = (id(plan), tuple((b.handle.id, b.handle.offset, b.items, getattr(b, "shape", None),
                                getattr(b, "strides", None)) for b in bindings.buffers))
        mems = self._bound.get(key)
        if mems is None:
            if len(self._bound) > 4096:
                self._bound.clear()
                self._bound_of.clear()
            mems = self._bind_views(definition, plan, bindings)
            self._bound[key] = mems
            for b in bindings.buffers:
                self._bound_of.setdefault(b.handle.id, []).append(key)
        return mems

    def _bind_views(self, definition: KernelDefinition, plan: Plan,
                    bindings: Bindings) -> list[Mem]:
        written_handles = {bindings.buffers[i].handle.id for i in plan.written
                           if i < len(bindings.buffers)}
        mems = []
        for p, b in zip(definition.buffers, bindings.buffers):
            item = p.item
            ty = item.value_ty if isinstance(item, Atomic) else item
            assert isinstance(ty, Ty)
            self.slice_of(b.handle, f"launch of `{definition.name}`")
            # a view binds from where its memory starts, rounded down to the binding alignment
            # (as on wgpu): a kernel compiled for such a view skips the rest itself
            start = binding_start(b.handle, self.properties.memory_alignment)
            store = self.memory[b.handle.id][start:].view(sem.dtype_of(ty))
            if ty.width > 1:
                store = store.reshape(-1, ty.width)
            view_ok = p.index not in plan.written and b.handle.id not in written_handles
            mem = Mem(p.name, store, b.items, "global", view_ok, b.handle.id)
            mem.aliased = sum(1 for o in bindings.buffers if o.handle.id == b.handle.id) > 1
            shape = getattr(b, "shape", None)
            if shape is not None:
                mem.shape = tuple(shape)
                mem.strides = tuple(getattr(b, "strides", None) or ())
            mems.append(mem)
        return mems

    def _publish(self, report: LaunchReport, launch: LaunchState) -> None:
        if report.prints:
            lines = print_lines(report)
            if not self._scopes:
                # inside an oob_mode/launch_results block the calling thread prints them when
                # the block ends (a notebook shows a thread's output in the cell that started
                # the thread, which for the device thread is an old one)
                sys.stdout.write("\n".join(lines) + "\n")
                sys.stdout.flush()
            if self.bus.active:
                self.bus.publish(DebugPrinted(report.kernel, tuple(lines), report.prints_total,
                                              report.launch_seq))
        if report.oob and self.bus.active:
            for a in report.oob:
                self.bus.publish(ev.OobReported(a.kernel, a.buffer, a.index, a.length, a.unit,
                                                a.cube, a.write, a.loc, report.launch_seq))
        found = report.races or report.uninitialised or report.nonfinite or \
            report.coalescing is not None
        if found and self.bus.active:
            if report.coalescing is not None:
                self.bus.publish(CostMeasured(report.kernel, tuple(report.coalescing),
                                              tuple(report.conflicts), self.plane_size,
                                              dict(report.source), report.launch_seq))
            if report.races is not None and (report.races or report.uninitialised):
                self.bus.publish(RacesFound(report.kernel, tuple(report.races),
                                            report.races_total, tuple(report.uninitialised),
                                            report.launch_seq))
            if report.nonfinite:
                self.bus.publish(NonFiniteMade(report.kernel, tuple(report.nonfinite),
                                               report.nonfinite_total, report.launch_seq))
        if found and not self._scopes and self.reports_echo and self.reports:
            sys.stdout.write("\n".join(report_lines(report)) + "\n")
            sys.stdout.flush()


class OutOfBoundsWrite(CubeError):
    """`report` mode: the kernel wrote past the end of a buffer (the write was dropped)."""


def _check_mode(mode: str) -> None:
    if mode not in OOB_MODES:
        raise ValueError(hinted(f"out-of-bounds mode must be one of {OOB_MODES}, got {mode!r}",
                                f"pick one of {', '.join(OOB_MODES)}"))
