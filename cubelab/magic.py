"""IPython magics: `%%cube` defines kernels in a cell and shows an inspector; `%cubelab` drives
the session (log, monitor, reset, device).

    %load_ext cubelab
    %%cube [--show expanded,ir,<target>,...] [--no-display]
    %cubelab log on|off|<target>  the seed's debug log (launches become blocking while on); a
                                  target name (msl, cuda, ...) prints that target's source
    %cubelab monitor              CacheMonitor + BufferBoard + LaunchTimeline for this session
    %cubelab reset                zero every open view's counters, clear the pipeline cache
    %cubelab memory [cleanup]     MemoryBoard: the device's pages and which buffer lives where
                                  (`cleanup` first gives unused pages back)
    %cubelab device cpu|wgpu      which runtime Device.default() (and these magics) use
    %cubelab races on|off         CPU runtime: judge every launch for races and uninitialised
                                  shared reads; findings print under the cell that launched
    %cubelab nonfinite on|off     CPU runtime: report ops that make inf/NaN from finite values
    %cubelab cost on|off          CPU runtime: each launch's coalescing (32-byte sectors) and
                                  shared-memory bank conflicts per source line, under the cell
    %cubelab oob on|off           every out-of-bounds access of every launch, printed under the
                                  cell (on wgpu each launch is re-run on the CPU runtime to see it)

When the cell has run, each kernel it defined is checked: every name it reads must exist, and it
is expanded for every instance the cell could launch (`inspect/definition.py`) — a mistake
all of them meet (`/` on integers, `len(x)`, `print`, `f32 + u32`) fails this cell with its
caret, not a read much later.

`%%cube` registers the cell's text with IPython's compile cache before running it, so
`inspect.getsource` finds the kernels (cubelab's expansion needs their source) and errors point
at cell lines with a caret. The body is compiled as `"\\n" + cell`, so line N of the code is line
N of the cell (line 1 is `%%cube`); it is never passed through `transform_cell`, which would
strip leading blank lines and shift every line number. Errors from a cell show only the cell's
frames (`_render_traceback_`), not the magic's machinery.

IPython is imported here and only here (through `load_ipython_extension` in `cubelab`).
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from cubelab.errors import CubeError, hinted
from cubelab.frontend.kernel import CubeFunction

__all__ = ["CubelabMagics", "CellError", "load"]


class CellError(Exception):
    """An error raised by a `%%cube` cell, shown as the cell's lines only (no magic frames)."""

    def __init__(self, original: BaseException, lines: list[str]) -> None:
        self.original = original
        self.lines = lines
        super().__init__("\n".join(lines))

    def _render_traceback_(self) -> list[str]:
        return self.lines


def _cell_frames_only(exc: BaseException, filename: str, label: str) -> list[str]:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    lines: list[str] = []
    if tb is not None:
        lines += "".join(traceback.format_tb(tb)).replace(f'File "{filename}"', label).splitlines()
    message = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
    lines += message.replace(filename, label).splitlines()
    return lines


def _cell_number(shell: Any) -> int:
    """The `In[N]` of the cell running now. Trap: `shell.execution_count` is already N + 1 here
    (IPython counts the cell before running it); the number of the running cell is on the
    displayhook's current `ExecutionResult`. Outside a cell (`run_cell_magic` called directly)
    there is none and the counter has not moved."""
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    count = getattr(result, "execution_count", None)
    return int(count) if count is not None else int(shell.execution_count)


class _Session:
    """Where the magics get their client: `Device.default()` (which `%cubelab device` sets)."""

    def client(self) -> Any:
        from cubelab.runtime.device import Device

        return Device.default().client()


@magics_class
class CubelabMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.session = _Session()

    # -- %%cube -------------------------------------------------------------------------------
    @magic_arguments()
    @argument("--show", default=None,
              help="inspector tabs, comma separated: source,expanded,ir,passes, a target's "
                   "name (wgsl,msl,cuda,...), ids")
    @argument("--no-display", action="store_true", help="define the kernels, show nothing")
    @cell_magic
    def cube(self, line: str, cell: str) -> Any:
        """Define the @cube functions in this cell and show an inspector for each kernel."""
        args = parse_argstring(self.cube, line)
        if args.show is not None:
            from cubelab.widgets.kernel_inspector import _normalize_show

            try:
                _normalize_show(args.show)
            except ValueError as exc:
                raise UsageError(str(exc)) from None  # hint: _normalize_show's
        shell = self.shell
        n = _cell_number(shell)
        header = f"%%cube {line}".rstrip()
        filename = shell.compile.cache(f"{header}\n{cell}", n)
        label = f"Cell In[{n}]"
        from cubelab.inspect.live import SOURCE_LABELS

        SOURCE_LABELS[filename] = label  # device-thread errors shown by the views name the cell
        ns = shell.user_ns
        before = {k: id(v) for k, v in ns.items()}
        try:
            code = compile("\n" + cell, filename, "exec")
            exec(code, ns)  # noqa: S102 - the user's own cell
        except BaseException as exc:  # noqa: BLE001 - re-shown as the cell's lines
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise CellError(exc, self._format(exc, filename, label)) from None  # hint: exc's
        found = [v for k, v in ns.items()
                 if isinstance(v, CubeFunction) and before.get(k) != id(v)
                 and v.file == filename]
        from cubelab.inspect.definition import definition_error

        try:
            for f in found:  # the cell has run: every name a kernel reads must exist now
                f.check_names()
            for f in found:  # ... and a mistake every launch would meet fails this cell
                err = definition_error(f)
                if err is not None:
                    raise err
        except CubeError as exc:
            raise CellError(exc, self._format(exc, filename, label)) from None  # hint: exc's
        if args.no_display or not found:
            return None
        return self._inspectors(found, args.show, label)

    @staticmethod
    def _format(exc: BaseException, filename: str, label: str) -> list[str]:
        if isinstance(exc, CubeError):
            text = str(exc).replace(f"{filename}:", f"{label}, line ")
            return [f"{type(exc).__name__}: {text}"]
        if isinstance(exc, SyntaxError) and exc.filename == filename:
            exc.filename = label
            return traceback.format_exception_only(type(exc), exc)[-4:]
        return _cell_frames_only(exc, filename, label)

    def _inspectors(self, kernels: list[CubeFunction], show: str | None, label: str) -> Any:
        from cubelab.widgets import KernelInspector

        client = self.session.client() if any(k.is_kernel for k in kernels) else None
        views = [KernelInspector(k, client, show=show, label=f"{label}, line {k.first_line}")
                 for k in kernels]
        if len(views) == 1:
            return views[0]
        return _Many(views)

    # -- %cubelab -----------------------------------------------------------------------------
    @line_magic
    def cubelab(self, line: str) -> Any:
        """%cubelab log on|off|<target> · monitor · reset · memory [cleanup] · device cpu|wgpu ·
        races on|off · nonfinite on|off · cost on|off · oob on|off · status"""
        words = line.split()
        if not words or words[0] == "status":
            return self._status()
        cmd, rest = words[0], words[1:]
        if cmd == "log":
            return self._log(rest)
        if cmd == "monitor":
            from cubelab.widgets import monitor

            return monitor(self.session.client())
        if cmd == "memory" and rest in ([], ["cleanup"]):
            from cubelab.widgets import MemoryBoard

            client = self.session.client()
            if rest:
                client.memory_cleanup()
            return MemoryBoard(client)
        if cmd == "reset":
            from cubelab.widgets._live import open_views

            client = self.session.client()
            client.clear_cache()
            views = [v for v in open_views() if v.counters]
            for v in views:
                for ledger in v._ledgers:
                    ledger.reset()
            print(f"cubelab: pipeline cache cleared on {client.name()}; {len(views)} open "
                  "view(s) reset")
            return None
        if cmd == "device":
            return self._device(rest)
        if cmd in ("races", "nonfinite", "cost"):
            return _findings(self).switch(cmd, rest)
        if cmd == "oob":
            return _findings(self).switch_oob(rest)
        raise UsageError(hinted(f"unknown %cubelab command {cmd!r}",
                                "use log on|off|<target>, monitor, reset, memory [cleanup], "
                                "device cpu|wgpu, races on|off, nonfinite on|off, cost on|off, "
                                "oob on|off, status"))

    def _status(self) -> None:
        from cubelab.runtime.device import Device

        dev = Device.default()
        log = dev.debug_log
        state = "off" if log is None else \
            f"on ({log.target or 'the running target'} → {log.dest})"
        print(f"cubelab: device {dev.kind} ({dev.client().name()}), debug log {state}")

    def _log(self, rest: list[str]) -> None:
        from cubelab.runtime.device import Device

        from cubelab.compiler.targets import TARGETS

        if len(rest) != 1 or rest[0] not in ("on", "off", *TARGETS):
            raise UsageError(hinted("%cubelab log needs one word",
                                    f"write %cubelab log on|off|{'|'.join(TARGETS)}"))
        dev = Device.default()
        mode = rest[0]
        if mode == "off":
            dev.set_debug_log(None)
            print("cubelab: debug log off (launches are asynchronous again)")
            return
        target = None if mode == "on" else mode  # on: the source of the target that runs
        dev.set_debug_log("stdout", target)
        what = "the source that runs" if target is None else f"the {target.upper()} source"
        print(f"cubelab: debug log on, printing {what}; launches are blocking and timed "
              "while it is on (as with CUBECL_DEBUG_LOG), so do not time anything with it on")

    def _device(self, rest: list[str]) -> None:
        from cubelab.runtime.device import Device

        if len(rest) != 1 or rest[0] not in ("cpu", "wgpu"):
            raise UsageError(hinted("%cubelab device needs a runtime",
                                    "write %cubelab device cpu|wgpu"))
        kind = rest[0]
        try:
            dev = Device.cpu() if kind == "cpu" else Device.wgpu()
        except CubeError as exc:
            raise UsageError(f"cannot use the {kind} runtime here: {exc}") from None  # hint: exc's
        os.environ["CUBELAB_DEVICE"] = kind
        print(f"cubelab: Device.default() is now {kind} ({dev.client().name()}) in this kernel")
        findings = getattr(self, "_findings", None)
        if findings is not None and findings.oob is not None:  # the report follows the device
            findings.switch_oob(["on"])


class _Findings:
    """`%cubelab races|nonfinite|cost on|off`: the CPU runtime judges every launch; its findings
    arrive as events on the device thread and are printed after each cell, on the main thread,
    so they land under the cell that launched (the device thread's own output would not)."""

    def __init__(self, magics: CubelabMagics) -> None:
        self.magics = magics
        self.races = False
        self.nonfinite = False
        self.cost = False
        self.oob: Any = None  # the OobWatch while `%cubelab oob on`
        self.found: list[Any] = []
        self._client: Any = None
        self._unsubscribe: Any = None
        magics.shell.events.register("post_run_cell", self.flush)

    def switch(self, what: str, rest: list[str]) -> None:
        from cubelab.inspect.peaks import plane_width
        from cubelab.runtime.cpu import CostMeasured, NonFiniteMade, RacesFound, set_reports

        if len(rest) != 1 or rest[0] not in ("on", "off"):
            raise UsageError(hinted(f"%cubelab {what} needs on or off",
                                    f"write %cubelab {what} on|off"))
        client = self.magics.session.client()
        if client.name() != "cpu<numpy>":
            raise UsageError(hinted(
                f"%cubelab {what} needs the CPU runtime (it watches every unit)",
                "run `%cubelab device cpu` first, or re-run one launch there with "
                "cubelab.inspect.access_map(...)"))
        setattr(self, what, rest[0] == "on")
        if self._client is not client:
            if self._unsubscribe is not None:
                self._unsubscribe()
            self._client = client
            self._unsubscribe = client.events.subscribe(self.found.append, RacesFound,
                                                        NonFiniteMade, CostMeasured)
        set_reports(client, races=self.races, nonfinite=self.nonfinite, echo=False,
                    cost=self.cost)
        if what == "cost":
            print("cubelab: cost report " + (
                "on — every launch's global and shared accesses are recorded (first 64 cubes) "
                "and its coalescing and bank conflicts per line are printed under the cell "
                f"({plane_width(client)} units per plane)"
                if self.cost else "off"))
        elif what == "races":
            print("cubelab: race report " + (
                "on — every launch's global and shared accesses are recorded (first 64 cubes) "
                "and races and uninitialised shared reads are printed under the cell"
                if self.races else "off"))
        else:
            print("cubelab: non-finite report " + (
                "on — an op making inf or NaN from finite operands is printed under the cell"
                if self.nonfinite else "off"))

    def switch_oob(self, rest: list[str]) -> None:
        from cubelab.inspect.oob_watch import OobWatch

        if len(rest) != 1 or rest[0] not in ("on", "off"):
            raise UsageError(hinted("%cubelab oob takes one word",
                                    "%cubelab oob on (or off)"))
        client = self.magics.session.client()
        if self.oob is not None:
            self.flush()
            self.oob.close()
            self.oob = None
        if rest[0] == "off":
            print("cubelab: out-of-bounds report off")
            return
        self.oob = OobWatch(client)
        how = ("" if client.name() == "cpu<numpy>" else
               " — each launch is re-run on the CPU runtime to see it, so launches wait for "
               "the work before them: turn it off to time anything")
        print(f"cubelab: out-of-bounds report on for {client.name()}: every access past the end "
              f"of a buffer is printed under the cell that launched it{how}")

    def flush(self, *_: Any) -> None:
        if self.oob is not None:
            from cubelab.inspect.oob_watch import report_lines

            for kernel, accesses, total in self.oob.take():
                for line in report_lines(kernel, accesses, total):
                    print(line)
        if self._client is None or not (self.races or self.nonfinite or self.cost or
                                        self.found):
            return
        self._client.device.runner.call(lambda: None)  # the cell's launches have run
        found, self.found[:] = list(self.found), []
        for e in found:
            for line in _finding_lines(e):
                print(line)


def _finding_lines(e: Any) -> list[str]:
    from cubelab.runtime.cpu import LaunchReport, report_lines

    r = LaunchReport(e.kernel, e.launch_seq, "")
    if hasattr(e, "races"):
        r.races, r.races_total, r.uninitialised = list(e.races), e.total, list(e.uninitialised)
    elif hasattr(e, "coalescing"):
        r.coalescing, r.conflicts, r.source = list(e.coalescing), list(e.conflicts), e.source
    else:
        r.nonfinite, r.nonfinite_total = list(e.records), e.total
    return report_lines(r)


def _findings(magics: CubelabMagics) -> _Findings:
    found = getattr(magics, "_findings", None)
    if found is None:
        found = magics._findings = _Findings(magics)  # type: ignore[attr-defined]
    return found


class _Many:
    """Several inspectors from one cell, displayed one under the other."""

    def __init__(self, views: list[Any]) -> None:
        self.views = views

    def _ipython_display_(self) -> None:
        from IPython.display import display

        for v in self.views:
            display(v.widget)


def load(ipython: Any) -> None:
    ipython.register_magics(CubelabMagics)
    _show_cubelab_warnings_plainly()


def _show_cubelab_warnings_plainly() -> None:
    """Show cubelab's own warnings as one `cubelab: <message>` line. Python's format names the
    file and line that called `warnings.warn` — cubelab's server, on its device thread — and
    prints that source line; to a student that is noise around the one sentence that matters.
    Other libraries' warnings keep Python's format; filters (`-W`, `pytest.warns`) still see
    every cubelab warning, since only the showing changes."""
    import warnings

    from cubelab.errors import CubelabWarning

    shown = warnings.showwarning
    if getattr(shown, "_cubelab", False):
        return

    def show(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if not issubclass(category, CubelabWarning):
            return shown(message, category, filename, lineno, file, line)
        import sys

        out = file if file is not None else sys.stderr
        try:
            out.write(f"cubelab: {message}\n")
        except (OSError, ValueError):  # a closed stream: a warning must never raise
            pass
        return None

    show._cubelab = True  # type: ignore[attr-defined]
    warnings.showwarning = show


