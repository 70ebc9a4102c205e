"""The exercise kinds: each decides an answer from a real run, never from an answer key.

- `CountExercise`      predict a count (compiles, cache hits, skipped launches, flushes ...):
                       runs the launches on a cleared cache and counts events (`RunReport`).
- `ValueExercise`      predict a value a real run produces (what a kernel writes, which thread
                       a step ran on ...): `value(client)` runs it and returns the value.
- `KernelIdDiffExercise` predict which KernelId fields differ between two launches: runs both
                       and diffs the KernelIds the launches really issued.
- `FailedBuffersExercise` predict which buffers end failed: runs a program, then asks the
                       runtime (`client.check`) about each named buffer.
- `CallsExercise`      predict which of several calls raise (which discovery path reports a
                       failure, what a capture window refuses): makes each call for real.
- `KernelExercise`     fix a broken kernel / write a kernel to a spec: launches the student's
                       kernel with fixed geometry, compares every buffer with a numpy spec, and
                       (by default) re-runs it on the CPU runtime in "report" mode, where every
                       out-of-bounds access is seen — on wgpu an unguarded read just gives 0.

Each is a dataclass: a chapter module declares one in a few lines and `register`s it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from cubelab.exercises.answer_text import Unreadable, read
from cubelab.exercises.base import Exercise, Result
from cubelab.runtime import events as ev

__all__ = ["RunReport", "record_run", "count_compiles", "CountExercise", "ValueExercise",
           "KernelIdDiffExercise", "FailedBuffersExercise", "CallsExercise", "KernelExercise",
           "names_of"]

Launch = Callable[[Any], Any]


# -- a run, seen through its events -------------------------------------------------------------

@dataclass
class RunReport:
    """What really happened when an exercise's launches ran (all counted from events)."""

    compiles: int
    hits: int
    log: list[str]  # one line per compile, as the debug log would name it
    why: list[str]  # per compile: why it was a new KernelId
    outputs: list[Any] = field(default_factory=list)
    kernel_ids: list[Any] = field(default_factory=list)  # of each compile
    failed: list[str] = field(default_factory=list)  # kernels whose launch failed (seed 001)
    skipped: list[str] = field(default_factory=list)  # skipped because an input had failed
    dry_run_skipped: list[str] = field(default_factory=list)  # compiled, not dispatched
    flushes: list[tuple[str, int]] = field(default_factory=list)  # (why, dispatches) each
    issued: list[Any] = field(default_factory=list)  # the KernelId of every launch issued
    events: list[Any] = field(default_factory=list)  # everything the bus published

    def of(self, kind: type) -> list[Any]:
        """The published events of one kind, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def dispatched(self) -> int:
        """How many launches were dispatched (ran on the device): a CountExercise's `count`."""
        return len(self.of(ev.LaunchDispatched))


def record_run(client: Any, launches: Sequence[Launch], clear_cache: bool = True) -> RunReport:
    """Run `launches` (each `f(client) -> output`) and report what the events say.

    The cache is cleared first (a count must not depend on what ran before) and the device is
    synced at the end, so every launch has reached the device when the count is taken.
    """
    from cubelab.inspect.live import nearest_earlier

    if clear_cache:
        client.clear_cache()
    outputs = []
    with client.events.record() as rec:
        for launch in launches:
            outputs.append(launch(client))
        client.sync()
    compiles = rec.of(ev.CompileFinished)
    log, why, earlier = [], [], []
    for c in compiles:
        kid = c.kernel_id
        info = ", ".join(f"{k.removeprefix('info.')}: {v}" for k, v in kid.fields().items()
                         if k.startswith("info.") and v != "()" and "Buffer" not in str(v))
        log.append(f"[START_KERNEL_COMPILATION] {kid.type}  mode: {kid.mode.value}"
                   f"{'  ' + info if info else ''}  entry: {c.entry}")
        why.append("; ".join(nearest_earlier(kid, earlier)[1]))
        earlier.append(kid)
    skips = rec.of(ev.LaunchSkipped)
    return RunReport(
        len(compiles), len(rec.of(ev.CacheHit)), log, why, outputs,
        [c.kernel_id for c in compiles],
        [f.kernel for f in rec.of(ev.LaunchFailed)],
        [k.kernel for k in skips if k.why != "dry-run"],
        [k.kernel for k in skips if k.why == "dry-run"],
        [(f.why, f.dispatches) for f in rec.of(ev.Flushed)],
        [i.kernel_id for i in rec.of(ev.LaunchIssued)],
        list(rec.events))


count_compiles = record_run  # the first wave's name


def names_of(answer: Any) -> set[str] | None:
    """A set of names from "a, b", "a b", ["a", "b"], {"a"}; "none"/"" or an empty collection
    is the empty set; None if the answer is not names at all."""
    if isinstance(answer, str):
        parts = [p for p in re.split(r"[,\s]+", answer.strip()) if p]
        if [p.lower() for p in parts] in ([], ["none"], ["nothing"], ["set()"]):
            return set()
        return {p.strip("'\"`") for p in parts}
    if isinstance(answer, (set, frozenset, list, tuple)):
        if not all(isinstance(p, str) for p in answer):
            return None
        return {p.strip() for p in answer}
    return None


def _names(text: str, how: str) -> Any:
    """A typed answer that must be names ("b, c", "b c", "[b, c]", "none")."""
    value = read(text, how)
    if value is not Ellipsis and names_of(value) is None:
        raise Unreadable(f"could not read {text.strip()!r} as names: {how}")
    return value


# -- predict a count ------------------------------------------------------------------------------

@dataclass
class CountExercise(Exercise):
    """"How many ...?" — the answer is `count(report)` of a real run of `launches`."""

    code: str = ""  # what the student reads (shown highlighted by the Quiz widget)
    launches: Sequence[Launch] = ()
    count: Callable[[RunReport], int] = lambda r: r.compiles
    explanation: str = ""  # shown once the answer is right
    what: str = "compiles"  # the counted thing, in words ("compiles", "skipped launches" ...)
    clear_cache: bool = True

    def run(self, client: Any = None) -> RunReport:
        from cubelab.exercises.base import grading_client

        return record_run(grading_client(client), self.launches, self.clear_cache)

    def parse(self, text: str) -> Any:
        how = f"write a whole number of {self.what}, e.g. 3"
        value = read(text, how)
        if value is not Ellipsis and (isinstance(value, bool) or not isinstance(value, int)):
            raise Unreadable(f"could not read {text.strip()!r} as a count: {how}")
        return value

    def _check(self, answer: Any, client: Any) -> Result:
        if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
            return self._wrong(answer, f"answer with a whole number of {self.what}, not "
                               f"{answer!r}")
        report = self.run(client)
        expected = self.count(report)
        if int(answer) == expected:
            return self._right(answer, f"{expected} {self.what}. {self.explanation}".strip(),
                               expected=expected, report=report)
        return self._wrong(answer, f"{answer} is not what the run did.", expected=expected,
                           report=report)


# -- predict a value ----------------------------------------------------------------------------

@dataclass
class ValueExercise(Exercise):
    """"What does this produce?" — `value(client)` makes the real run and returns its value (a
    number, a list, a word); the answer must equal it (sequences item by item, words without
    regard to case or surrounding spaces)."""

    code: str = ""
    value: Callable[[Any], Any] = lambda c: None
    explanation: str = ""

    @staticmethod
    def same(answer: Any, expected: Any) -> bool:
        if isinstance(expected, str):
            return isinstance(answer, str) and answer.strip().lower() == expected.lower()
        if isinstance(answer, str) or isinstance(answer, bool) != isinstance(expected, bool):
            return False
        try:
            a, e = np.asarray(answer), np.asarray(expected)
        except (TypeError, ValueError):
            return bool(answer == expected)
        if a.dtype == object or a.shape != e.shape:
            return False
        return bool(np.array_equal(a, e))

    def _check(self, answer: Any, client: Any) -> Result:
        expected = self.value(client)
        if self.same(answer, expected):
            shown = expected.tolist() if isinstance(expected, np.ndarray) else expected
            return self._right(answer, f"{shown}. {self.explanation}".strip(), expected=expected)
        return self._wrong(answer, f"{answer!r} is not what the run produced.",
                           expected=expected)


# -- predict a KernelId diff ----------------------------------------------------------------------

_KERNEL_ID_FIELDS = ("type", "address_type", "cube_dim", "mode", "info")


@dataclass
class KernelIdDiffExercise(Exercise):
    """"Which KernelId fields differ between these two launches?" Answer with field names
    ("mode", "cube_dim", an Info field such as "relu" or "n"), or "none" for a cache hit."""

    code: str = ""
    first: Launch = lambda c: None
    second: Launch = lambda c: None
    explanation: str = ""

    def run(self, client: Any) -> tuple[Any, Any]:
        """The KernelIds the two launches really issued (the last of each)."""
        ids = []
        for launch in (self.first, self.second):
            with client.events.record(ev.LaunchIssued) as rec:
                launch(client)
            issued = rec.of(ev.LaunchIssued)
            if not issued:
                raise RuntimeError(f"{self.key}: a launch issued nothing")
            ids.append(issued[-1].kernel_id)
        client.sync()
        return ids[0], ids[1]

    @staticmethod
    def differing(a: Any, b: Any) -> set[str]:
        fa, fb = a.fields(), b.fields()
        out = {k.removeprefix("info.") for k in dict.fromkeys([*fa, *fb])
               if fa.get(k) != fb.get(k)}
        if not out and a.origin != b.origin:
            out.add("source")
        return out

    name_example = "answer with KernelId field names, e.g. mode, cube_dim — or none"

    def parse(self, text: str) -> Any:
        return _names(text, self.name_example)

    def _check(self, answer: Any, client: Any) -> Result:
        names = names_of(answer)
        if names is None:
            return self._wrong(answer, self.name_example)
        names = {n.removeprefix("info.") for n in names}
        a, b = self.run(client)
        expected = self.differing(a, b)
        fields = set(a.fields()) | set(b.fields())
        known = {k.removeprefix("info.") for k in fields} | set(_KERNEL_ID_FIELDS)
        strangers = sorted(names - known)
        if names == expected:
            what = ", ".join(sorted(expected)) or "nothing: the same KernelId, a cache hit"
            fa, fb = a.fields(), b.fields()
            details = "\n".join(f"{k}: {fa.get(k, '-')} -> {fb.get(k, '-')}"
                                 for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k))
            return self._right(answer, f"{what}. {self.explanation}".strip(), expected=expected,
                               details=details)
        if strangers:
            info = sorted(k.removeprefix("info.") for k in fields if k.startswith("info."))
            hint = (f"{', '.join(strangers)} is not a field of this KernelId: it holds the "
                    f"kernel type, address type, cube_dim, execution mode and the Info "
                    f"({', '.join(info)}). What is not in the key (the cube count, the data) "
                    "never recompiles.")
        elif names > expected:
            hint = "You named a field that did not change between the two launches. " + self.hint
        elif names < expected:
            hint = "A field changed that you did not name. " + self.hint
        else:
            hint = self.hint
        return self._wrong(answer, f"{', '.join(sorted(names)) or 'none'} is not the "
                           "difference.", hint.strip(), expected=expected)


# -- which names: the answer is a set of names, the runtime's own answer is `run(client)` -------

class _WhichNames:
    """The one check of the "which of these ..." kinds below: the student names a set, `run`
    says which names the runtime picked (and why); right when the two sets are equal."""

    name_example = ""  # how to answer, said when the answer is not a list of names
    not_what = ""  # ending of "<names> is not ..." for a wrong set

    def run(self, client: Any) -> tuple[set[str], dict[str, str]]:
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        return _names(text, self.name_example)

    def _check(self, answer: Any, client: Any) -> Result:
        ex: Any = self  # an Exercise: `_right`, `_wrong` and `explanation` come from it
        names = names_of(answer)
        if names is None:
            return ex._wrong(answer, self.name_example)
        found, why = self.run(client)
        if names == found:
            details = "\n".join(f"{n}: {w}" for n, w in sorted(why.items()))
            return ex._right(answer, f"{', '.join(sorted(found)) or 'none'}. "
                             f"{ex.explanation}".strip(), expected=found, details=details)
        return ex._wrong(answer, f"{', '.join(sorted(names)) or 'none'} is not {self.not_what}",
                         expected=found)


# -- which buffers end failed ---------------------------------------------------------------------

@dataclass
class FailedBuffersExercise(_WhichNames, Exercise):
    """"Which buffers end failed?" `program(client)` launches and returns its buffers by name;
    the runtime's own answer is `client.check([h])` on each."""

    code: str = ""
    program: Callable[[Any], dict[str, Any]] = lambda c: {}
    explanation: str = ""
    name_example = "answer with buffer names, e.g. b, c — or none"
    not_what = "what the runtime reports."

    def run(self, client: Any) -> tuple[set[str], dict[str, str]]:
        from cubelab.errors import BufferFailure

        buffers = self.program(client)
        failed, why = set(), {}
        for name, h in buffers.items():
            try:
                client.check([h])
            except BufferFailure as exc:
                failed.add(name)
                why[name] = str(exc).splitlines()[0]
        return failed, why


# -- which calls raise ----------------------------------------------------------------------------

@dataclass
class CallsExercise(_WhichNames, Exercise):
    """"Which of these calls raise?" `calls(client)` sets the scene and returns {name: call};
    the runtime's answer is which calls raise `error` when made, in order."""

    code: str = ""
    calls: Callable[[Any], dict[str, Callable[[], Any]]] = lambda c: {}
    error: type[BaseException] = Exception
    explanation: str = ""
    name_example = "answer with call names, e.g. check, read_one — or none"
    not_what = "what raised."

    def run(self, client: Any) -> tuple[set[str], dict[str, str]]:
        raised, why = set(), {}
        for name, call in self.calls(client).items():
            try:
                call()
            except self.error as exc:
                raised.add(name)
                why[name] = str(exc).splitlines()[0]
        return raised, why


# -- fix a kernel / write a kernel to a spec ------------------------------------------------------

Buffers = dict[str, np.ndarray]


@dataclass
class KernelExercise(Exercise):
    """Run the student's kernel and compare every buffer with a numpy spec.

    `inputs()` gives every buffer's host values before the launch (by name; outputs too, e.g.
    filled with a sentinel so a stray write shows), `spec(buffers)` the values the kernel must
    leave in the buffers it names, and `launch(kernel, client, handles)` makes the fixed launch
    (the student writes the kernel, never the geometry). `checks` are extra rules, each
    `f(kernel, client) -> hint or None` (a race found by the access map, say).
    """

    inputs: Callable[[], Buffers] = dict
    spec: Callable[[Buffers], Buffers] = lambda b: {}
    launch: Callable[[Any, Any, dict[str, Any]], Any] = lambda k, c, h: None
    report_oob: bool = True
    checks: Sequence[Callable[[Any, Any], str | None]] = ()
    rtol: float = 1e-5
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False

    def _run(self, kernel: Any, client: Any) -> Buffers:
        host = self.inputs()
        handles = {n: client.create_from_slice(np.ascontiguousarray(a).tobytes())
                   for n, a in host.items()}
        self.launch(kernel, client, handles)
        return {n: np.frombuffer(client.read_one(handles[n]), dtype=host[n].dtype).copy()
                for n in host}

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.frontend.kernel import CubeFunction

        if not (isinstance(answer, CubeFunction) and answer.is_kernel):
            return self._wrong(answer, "answer with your kernel: the name of the function you "
                               f"decorated with @cube(launch=True), not {answer!r}")
        host = self.inputs()
        expected = self.spec({n: a.copy() for n, a in host.items()})
        try:
            got = self._run(answer, client)
        except Exception as exc:  # noqa: BLE001 - the student's kernel failing is an answer
            return self._failed(answer, exc)
        bad = self._mismatches(got, expected)
        if bad:
            return self._wrong(answer, "the buffers differ from the spec.",
                               details="\n".join(bad), expected=expected)
        if self.report_oob:
            oob = self._out_of_bounds(answer, client)
            if oob:
                return self._wrong(
                    answer, "right values, but some unit reads or writes past the end of a "
                    "buffer (seen on the CPU runtime, which checks every index).",
                    "On wgpu an out-of-bounds read quietly gives 0 and a write is dropped, so "
                    "the values can look right. Guard the access with the buffer's length.",
                    details="\n".join(oob))
        for rule in self.checks:
            why = rule(answer, client)
            if why:
                return self._wrong(answer, "the values are right, but a rule is broken.", why)
        return self._right(answer, "every buffer matches the spec.", expected=expected)

    def _failed(self, answer: Any, exc: BaseException) -> Result:
        """The student's kernel did not compile (or failed while running): its own error —
        place, caret, hint — is the verdict. A read of its output raises `BufferFailure`, whose
        cause is that error; the wrapper and the exercise's hint would only hide it."""
        from cubelab.errors import BufferFailure, CompileError, FeatureError, KernelSourceError

        cause = exc.cause if isinstance(exc, BufferFailure) else exc
        compiles = not isinstance(cause, (KernelSourceError, CompileError, FeatureError))
        what = "failed while running" if compiles else "does not compile"
        return Result("wrong", f"your kernel {what}", answer=answer,
                      details=f"{type(cause).__name__}: {str(cause).strip()}", error=cause)

    def _mismatches(self, got: Buffers, expected: Buffers) -> list[str]:
        out: list[str] = []
        for name, want in expected.items():
            want = np.asarray(want)
            have = got[name].reshape(-1)[: want.size].reshape(want.shape) \
                if got[name].size >= want.size else got[name]
            if have.shape != want.shape:
                out.append(f"{name}: {have.size} items, the spec has {want.size}")
                continue
            if np.issubdtype(want.dtype, np.floating):
                ok = np.isclose(have, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
            else:
                ok = have == want
            idx = np.argwhere(~np.asarray(ok))
            for i in idx[:6]:
                at = tuple(int(v) for v in i)
                at_s = ", ".join(map(str, at))
                out.append(f"{name}[{at_s}] = {have[at].item()!r}, "
                           f"the spec says {want[at].item()!r}")
            if len(idx) > 6:
                out.append(f"... and {len(idx) - 6} more in {name}")
        return out

    def _out_of_bounds(self, kernel: Any, client: Any) -> list[str]:
        """Re-run on the CPU runtime in "report" mode and list every out-of-bounds access."""
        from cubelab.runtime.cpu import oob_mode
        from cubelab.runtime.device import Device

        cpu = client if client.name().startswith("cpu") else Device.cpu().client()
        from cubelab.errors import BufferFailure

        with oob_mode(cpu, "report") as result:
            try:
                self._run(kernel, cpu)
            except BufferFailure:  # a reported out-of-bounds write fails its buffer
                pass
        lines = []
        for a in result.oob[:8]:
            verb = "writes" if a.write else "reads"
            lines.append(f"unit {a.absolute} {verb} {a.buffer}[{a.index}] but {a.buffer} has "
                         f"{a.length} items (line {a.line}: {a.source})")
        if len(result.oob) > 8:
            lines.append(f"... and {len(result.oob) - 8} more")
        return lines
