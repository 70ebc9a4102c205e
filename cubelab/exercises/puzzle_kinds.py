"""Puzzles held to more than their values: the checks of the puzzles only cubelab can pose.

A kernel puzzle of `puzzles.py` is right when its buffers match a numpy spec and no unit reads
too much. The puzzles of `puzzles_cubelab.py` ask about what else a run does — how often it
compiled, what the compiled IR still holds, which buffers carry a failure, which streams had to
wait for each other, how many 32-byte sectors a plane moved — so their checks read the events,
the IR and the access map of the run, as well as the buffers:

- `Trial` — what one real run of the student's answer showed: every event (a `RunReport`:
  compiles, hits, dispatches, skips, failures, stream alignments), the IR each compile produced,
  the buffers the program read back, the plane width of the device it ran on, named windows of
  events (`trial.window("repair")`: what the student's own part did) and, for a kernel, the
  access map with its cost records.
- `Rule` — one requirement: `test(trial) -> what the run did wrong, in words, or None`. A rule
  states the target (it is part of the question: "exactly 2 compiles", "100 % of every sector
  used") and what the student's run did; never how to get there. The rules library below
  (`compiles`, `no_op`, `has_op`, `coalesced`, `conflict_free`, `phases_at_most`,
  `buffers_match`) covers the puzzles; a puzzle may write its own.
- `KernelPuzzle` — a `puzzles.Puzzle` (spec, fixed launch, per-unit limits, races) plus rules;
  its spec may take the device's plane width (`spec(a, plane)`), measured by a real launch
  (`inspect.peaks.plane_width`), since a plane's result differs per device (lavapipe 8, the CPU
  runtime 32, an NVIDIA GPU 32).
- `ProgramPuzzle` — the answer is part of a program — a function, a geometry, a kernel whose
  signature decides what is compiled in — and `play(answer, client, trial)` runs the puzzle's
  fixed program around it, on a cleared cache, recording everything.

A kernel puzzle's figure is, as in `puzzles.py`, the access map (`AccessMap.to_svg()`) of its
*first attempt* (`first_try`) — the straightforward kernel a student writes first, which the
check rejects; the puzzle module commits the figures and shows them in the questions.

The trap: a check here must not become an answer key in disguise. Every rule measures the
student's own run (the target number is in the question; what the run did is the student's),
and a rule that fails says what the run did, never what would pass — the tiered hints (nudge,
concept, a worked step on another program) do the teaching, as for every exercise.
"""

from __future__ import annotations

import inspect
import re
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np

from cubelab.errors import hinted
from cubelab.exercises.base import Exercise, Result
from cubelab.exercises.kinds import RunReport, unreadable
from cubelab.exercises.puzzles import Puzzle
from cubelab.runtime import events as ev

__all__ = ["Trial", "Rule", "KernelPuzzle", "ProgramPuzzle", "compiles", "dispatches", "no_op",
           "has_op", "coalesced", "conflict_free", "phases_at_most", "buffers_match", "ir_ops"]


# -- what a run showed ------------------------------------------------------------------------

def _report(events: Sequence[Any]) -> RunReport:
    """A RunReport of recorded events (the counts `kinds.record_run` makes)."""
    of = lambda kind: [e for e in events if isinstance(e, kind)]  # noqa: E731
    compiled = of(ev.CompileFinished)
    skips = of(ev.LaunchSkipped)
    return RunReport(
        len(compiled), len(of(ev.CacheHit)), [], [], [], [c.kernel_id for c in compiled],
        [f.kernel for f in of(ev.LaunchFailed)],
        [k.kernel for k in skips if k.why != "dry-run"],
        [k.kernel for k in skips if k.why == "dry-run"],
        [(f.why, f.dispatches) for f in of(ev.Flushed)],
        [i.kernel_id for i in of(ev.LaunchIssued)], list(events))


def ir_ops(ir: str) -> Counter[str]:
    """The ops of an IR listing by name (`scf.for`, `plane.reduce`, `memory.load` ...)."""
    return Counter(re.findall(r"^\s*(?:%v\d+ = )?([a-z_]+\.[a-z_]+)\b", ir, re.M))


@dataclass
class Trial:
    """One real run of a puzzle's program (or kernel) with the student's answer in it."""

    client: Any
    events: list[Any] = field(default_factory=list)
    buffers: dict[str, np.ndarray] = field(default_factory=dict)
    windows: dict[str, list[Any]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)  # what the program wants rules to see
    plane_width: int = 32
    access_map: Any = None  # a kernel puzzle's map (None for a program)

    @property
    def report(self) -> RunReport:
        return _report(self.events)

    def window(self, name: str) -> RunReport:
        """The events of one named part of the program (`with trial.watch(name):`)."""
        return _report(self.windows.get(name, []))

    @contextmanager
    def watch(self, name: str) -> Iterator[None]:
        """Record the events of a block under `name` (the whole run is recorded too)."""
        with self.client.events.record() as rec:
            yield
            self.client.sync()
        self.windows[name] = list(rec.events)

    @property
    def compiled_ir(self) -> list[tuple[str, str]]:
        """(kernel, IR after the passes) of every compile of the run."""
        return [(e.kernel, e.ir) for e in self.events if isinstance(e, ev.CompileFinished)]

    def read(self, name: str, handle: Any, dtype: Any = np.float32) -> np.ndarray:
        """Read a buffer back into `buffers[name]` (raises BufferFailure as `read_one` does)."""
        self.buffers[name] = np.frombuffer(self.client.read_one(handle), dtype=dtype).copy()
        return self.buffers[name]


@dataclass(frozen=True)
class Rule:
    """One requirement of a puzzle: `test(trial)` says what the run did wrong, or None.
    `says` is the requirement in words, for the question."""

    says: str
    test: Callable[[Trial], "str | None"]
    needs_ir: bool = False  # the rule reads the compiled IR (the check compiles afresh)


# -- the rules library ---------------------------------------------------------------------------

def compiles(n: int, window: str | None = None) -> Rule:
    """Exactly `n` compiles (in the whole run, or in one window)."""
    def test(t: Trial) -> str | None:
        got = (t.window(window) if window else t.report).compiles
        where = f" in the {window}" if window else ""
        return None if got == n else f"the run compiled {got} time{'s' * (got != 1)}{where}."
    says = f"exactly {n} compile{'s' * (n != 1)}" if n else "no compile"
    return Rule(says + (f" in the {window}" if window else ""), test)


def dispatches(n: int, window: str) -> Rule:
    """Exactly `n` launches of one window reached the device (`LaunchDispatched`)."""
    def test(t: Trial) -> str | None:
        got = t.window(window).dispatched()
        return None if got == n else (f"{got} launch{'es' * (got != 1)} of the {window} "
                                      "reached the device.")
    return Rule(f"no launch of the {window} dispatched" if n == 0 else
                f"{n} dispatches in the {window}", test)


def no_op(pattern: str, what: str) -> Rule:
    """No compiled IR of the run holds an op whose name matches `pattern` (a regex)."""
    rx = re.compile(pattern)

    def test(t: Trial) -> str | None:
        for kernel, ir in t.compiled_ir:
            found = sorted(op for op in ir_ops(ir) if rx.fullmatch(op))
            if found:
                return f"the IR `{kernel}` compiled to still holds {', '.join(found)}."
        return None
    return Rule(f"no {what} in the compiled IR", test, needs_ir=True)


def has_op(pattern: str, what: str) -> Rule:
    """Every compiled IR of the run holds an op whose name (and attributes) match `pattern`."""
    rx = re.compile(pattern)

    def test(t: Trial) -> str | None:
        for kernel, ir in t.compiled_ir:
            if not rx.search(ir):
                return f"the IR `{kernel}` compiled to has no {what}."
        return None
    return Rule(f"{what} in the compiled IR", test, needs_ir=True)


def coalesced(at_least: float = 1.0, array: str | None = None) -> Rule:
    """Every global access line (of `array`, or all) reaches this coalescing efficiency on the
    device's planes (ideal sectors / sectors touched, from the access map)."""
    def test(t: Trial) -> str | None:
        rows = [r for r in t.access_map.coalescing()
                if array is None or r.array == array]
        worst = min(rows, key=lambda r: r.efficiency, default=None)
        if worst is None or worst.efficiency + 1e-9 >= at_least:
            return None
        return (f"line {worst.line} (`{t.access_map.source(worst.line)}`) {worst.kind}s "
                f"`{worst.array}` at {worst.efficiency:.0%} efficiency: {worst.sectors} sectors "
                f"for data that fits in {worst.ideal} ({t.access_map.plane_width} units per "
                "plane).")
    on = f" of `{array}`" if array else ""
    return Rule(f"every global access{on} at least {at_least:.0%} coalesced", test)


def conflict_free() -> Rule:
    """No shared-memory access of any plane needs more passes than its words need (ways ==
    ideal: 1 for one word per unit)."""
    def test(t: Trial) -> str | None:
        rows = list(t.access_map.conflicts())
        bad = max(rows, key=lambda r: r.worst / max(r.ideal, 1), default=None)
        if bad is None or bad.worst <= bad.ideal:
            return None
        return (f"line {bad.line} (`{t.access_map.source(bad.line)}`) {bad.kind}s `{bad.array}` "
                f"with {bad.worst}-way bank conflicts ({t.access_map.plane_width} units per "
                "plane, 32 banks).")
    return Rule("no bank conflict", test)


def phases_at_most(n: int) -> Rule:
    """At most `n` barrier phases (n - 1 `sync_cube()` a unit passes)."""
    def test(t: Trial) -> str | None:
        got = t.access_map.phases
        return None if got <= n else (f"the units pass {got - 1} barriers ({got} phases); the "
                                      f"puzzle allows {n - 1}.")
    return Rule(f"at most {n - 1} `sync_cube()` on the way", test)


def buffers_match(expected: Callable[[Trial], dict[str, np.ndarray]], rtol: float = 1e-5,
                  atol: float = 1e-5) -> Rule:
    """The buffers the program read back equal `expected(trial)` (numpy, computed per run)."""
    def test(t: Trial) -> str | None:
        for name, want in expected(t).items():
            got = t.buffers.get(name)
            if got is None:
                return f"`{name}` was not read back."
            want = np.asarray(want).reshape(-1)
            if got.size != want.size or not np.allclose(got, want, rtol=rtol, atol=atol):
                bad = next((i for i in range(min(got.size, want.size))
                            if not np.isclose(got[i], want[i], rtol=rtol, atol=atol)),
                           min(got.size, want.size))
                shown = got[bad].item() if bad < got.size else "nothing"
                return f"`{name}[{bad}]` holds {shown}, the spec says {want[bad].item()}."
        return None
    return Rule("the values of the spec", test)


# -- kernel puzzles with rules -------------------------------------------------------------------

def _takes_plane(fn: Callable[..., Any]) -> bool:
    return "plane" in inspect.signature(fn).parameters


@dataclass
class KernelPuzzle(Puzzle):
    """A kernel puzzle (`puzzles.Puzzle`: spec, fixed launch, limits, races) whose run is also
    held to `rules` — coalescing, bank conflicts, barriers, what the compiled IR holds. A spec
    with a `plane` parameter is given the plane width of the device the check runs on."""

    rules: Sequence[Rule] = ()

    _plane: int = field(default=32, init=False, repr=False)
    _maps: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)

    def expected(self) -> np.ndarray:
        kw = {"plane": self._plane} if _takes_plane(self.spec_fn) else {}
        return np.asarray(self.spec_fn(**self.arrays, **kw), dtype=np.float32).reshape(-1)

    def access_map(self, kernel: Any, case: Any = None) -> Any:
        """As `KernelExercise.access_map`, kept for the length of one check (the values, the
        limits and the rules read one recorded run)."""
        key = (id(kernel), repr(case))
        if key not in self._maps:
            m = super().access_map(kernel, case)
            if m is not None:  # cost records at the plane width of the device checked on
                m.plane_width = self._plane
            self._maps[key] = m
        return self._maps[key]

    def _plane_of(self, client: Any) -> int:
        from cubelab.inspect.peaks import plane_width

        return plane_width(client)

    def _truth(self, client: Any) -> Any:
        self._plane = self._plane_of(client)
        return super()._truth(client)

    def _check(self, answer: Any, client: Any) -> Result:
        self._plane = self._plane_of(client)
        self._maps = {}
        try:
            return self._check_with_rules(answer, client)
        finally:
            self._maps = {}

    def _check_with_rules(self, answer: Any, client: Any) -> Result:
        needs_ir = any(r.needs_ir for r in self.rules)
        events: list[Any] = []
        if needs_ir:  # the IR of what runs: compile it afresh, on the student's client
            client.clear_cache()
            with client.events.record(ev.CompileFinished) as rec:
                result = super()._check(answer, client)
                client.sync()
            events = list(rec.events)
        else:
            result = super()._check(answer, client)
        if not result.correct:
            return result
        m = self.access_map(answer)
        trial = Trial(client, events, plane_width=self._plane, access_map=m)
        for rule in self.rules:
            why = rule.test(trial)
            if why:
                return self._wrong(answer, f"right values, but asked for {rule.says}; {why}")
        return result

    def first_try_map(self) -> Any:
        """The access map of the first attempt, on the CPU runtime (the committed figure)."""
        self._plane = 32
        return super().first_try_map()


# -- program puzzles ------------------------------------------------------------------------------

Play = Callable[[Any, Any, Trial], None]


def _close_capture(client: Any) -> None:
    """Close a capture window the student's part left open on this thread's stream (it raised
    inside it, or never stopped it): the next check, and the student's next cell, must not
    be recorded into it."""
    from cubelab.errors import CubeError

    try:
        client.stop_capture()
    except CubeError:
        pass  # none open (the usual case), or a doomed one: closed either way


@dataclass
class ProgramPuzzle(Exercise):
    """A puzzle whose answer is part of a program: a function the program calls, a geometry,
    or a kernel whose signature decides what is compiled in.

    `play(answer, client, trial)` runs the puzzle's fixed program with the answer in it — on a
    cleared cache, every event recorded into `trial` — and reads back what it needs
    (`trial.read`); `rules` then decide, in order. The answer must be a kernel (`expects =
    "kernel"`) or a plain function taking the parameters the template names (`params`)."""

    story: str = ""
    template: str = ""
    play: Play = lambda answer, client, trial: None
    rules: Sequence[Rule] = ()
    expects: str = "function"  # "function" | "kernel"
    params: tuple[str, ...] = ()  # a function answer's parameters, as the template names them
    program: str = ""  # the fixed program, as the question shows it

    takes_text: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.question:
            self.question = self.describe()

    def describe(self) -> str:
        rules = "; ".join(r.says for r in self.rules)
        program = f"\n\nThe program the check runs:\n\n```python\n{self.program.rstrip()}\n```" \
            if self.program else ""
        return f"### {self.title}\n\n{self.story}{program}\n\nChecked on the run: {rules}."

    def _readable(self, answer: Any) -> str | None:
        from cubelab.frontend.kernel import CubeFunction

        is_kernel = isinstance(answer, CubeFunction) and answer.is_kernel
        if self.expects == "kernel":
            return None if is_kernel else (
                "answer with your kernel: the name of the function you decorated with "
                f"@cube(launch=True), not {answer!r}")
        if is_kernel or not callable(answer):
            return (f"answer with your function ({', '.join(self.params)}): its name, not "
                    f"{answer!r}")
        try:
            n = len(inspect.signature(answer).parameters)
        except (TypeError, ValueError):
            return None
        if self.params and n != len(self.params):
            return (f"`{getattr(answer, '__name__', answer)}` takes {n} parameters; the "
                    f"program calls it with {len(self.params)}: ({', '.join(self.params)}).")
        return None

    def run(self, answer: Any, client: Any) -> Trial:
        """The puzzle's program with `answer` in it, on a cleared cache, every event recorded.
        An error the program raises is kept in `trial.notes["error"]`."""
        from cubelab.inspect.peaks import plane_width

        trial = Trial(client, plane_width=plane_width(client))
        client.clear_cache()
        with client.events.record() as rec:
            try:
                self.play(answer, client, trial)
                client.sync()
            except Exception as exc:  # noqa: BLE001 - the student's part failing is an answer
                trial.notes["error"] = exc
            finally:
                _close_capture(client)
        trial.events = list(rec.events)
        return trial

    def _truth(self, client: Any) -> Trial:
        raise NotImplementedError(hinted("a program puzzle's answer is a program, not a value",
                                         "read its solution (notebooks/solutions/) instead"))

    def _check(self, answer: Any, client: Any) -> Result:
        why = self._readable(answer)
        if why:
            return unreadable(answer, why)
        trial = self.run(answer, client)
        error = trial.notes.get("error")
        if error is not None:
            return self._error(answer, error)
        for rule in self.rules:
            why = rule.test(trial)
            if why:
                return self._wrong(answer, f"asked for {rule.says}; {why}")
        return self._right(answer, "every requirement holds: "
                           + "; ".join(r.says for r in self.rules) + ".", report=trial)

    def _error(self, answer: Any, error: BaseException) -> Result:
        """The program stopped: a BufferFailure's cause, a compile error of the student's
        kernel, or a Python error in the student's function — its own text is the verdict."""
        from cubelab.errors import BufferFailure, CubeError

        cause = error.cause if isinstance(error, BufferFailure) and error.cause else error
        if isinstance(error, BufferFailure):
            what = f"a read raised BufferFailure: {str(error).splitlines()[0]}"
        elif isinstance(cause, CubeError):
            what = f"{type(cause).__name__}: {str(cause).strip()}"
        else:
            tb = traceback.extract_tb(error.__traceback__)
            mine = [f for f in tb if not f.filename.endswith(".py") or "<" in f.filename]
            at = f" (line {mine[-1].lineno} of your cell)" if mine else ""
            what = f"{type(error).__name__}: {error}{at}"
        return Result("wrong", "the program stopped with an error", answer=answer,
                      details=what, error=cause)
