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
                       kernel on every case (geometry and sizes; one of them the variant's),
                       compares every buffer with a numpy spec, and re-runs it on the CPU
                       runtime with every access recorded (`inspect.access_map`), where every
                       out-of-bounds access and every race is seen — on wgpu an unguarded read
                       just gives 0. A wrong kernel is told what its run showed: which item
                       differs, which unit wrote it and what that unit read.

Each is a dataclass: a chapter module declares one in a few lines and `register`s it (or, with
variants, `variants(key, params)(make)`: `make(variant)` declares the exercise of one variant).
A wrong result never carries the expected answer (base.py); each kind's `_truth(client)` is the
answer of a real run, for the tests and for teachers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, NamedTuple, Sequence

import numpy as np

from cubelab.exercises.answer_text import Unreadable, read
from cubelab.exercises.base import Exercise, Result, same
from cubelab.runtime import events as ev

__all__ = ["RunReport", "record_run", "count_compiles", "CountExercise", "ValueExercise",
           "KernelIdDiffExercise", "FailedBuffersExercise", "CallsExercise", "KernelExercise",
           "names_of", "unreadable", "launches_that_compile", "first_seen", "Geometry"]

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


def launches_that_compile(client: Any, steps: Sequence[Callable[[], Any]]) -> list[int]:
    """On a cleared cache, run the steps in order; the (1-based) numbers of those during which
    the device thread started a compile (a cache miss: `define` → `expand`). The answer of every
    "which launches compile?" exercise."""
    client.clear_cache()
    out = []
    for i, step in enumerate(steps, 1):
        with client.events.record(ev.CompileStarted) as rec:
            step()
            client.sync()
        if rec.of(ev.CompileStarted):
            out.append(i)
    return out


def first_seen(keys: Sequence[Any]) -> list[int]:
    """The (1-based) positions where a key appears for the first time: the launches that would
    compile if `keys` were their KernelIds (the misconceptions' answers)."""
    seen: set[Any] = set()
    out = []
    for i, k in enumerate(keys, 1):
        if k not in seen:
            seen.add(k)
            out.append(i)
    return out


class Geometry(NamedTuple):
    """One launch of a kernel exercise: `cubes` cubes of `units` units over `n` items (a case:
    the chapter's, or the student's)."""

    n: int
    cubes: int
    units: int

    def __str__(self) -> str:
        return f"{self.n} items, {self.cubes} cube{'s' * (self.cubes > 1)} of {self.units} units"

    def launch(self, launcher: Any, client: Any, handles: dict[str, Any], *names: str,
               before: tuple[Any, ...] = ()) -> None:
        """`launcher(client, count, dim, *before, *buffers)`: the named buffers as BufferArgs of
        `n` items, after the `before` arguments (a scalar that comes first)."""
        from cubelab.prelude import BufferArg, CubeCount, CubeDim

        launcher(client, CubeCount.Static(self.cubes), CubeDim.new_1d(self.units), *before,
                 *(BufferArg.from_raw_parts(handles[n], self.n) for n in names))


def names_of(answer: Any) -> set[str] | None:
    """A set of names from "a, b", "a b", ["a", "b"], {"a"}; "none"/"" or an empty collection
    is the empty set; None if the answer is not names at all."""
    if isinstance(answer, str):
        parts = [p for p in re.split(r"[,\s]+", answer.strip()) if p]
        if [p.lower() for p in parts] in ([], ["none"], ["nothing"], ["set()"]):
            return set()
        return {p.strip("'\"`") for p in parts}
    if isinstance(answer, (set, frozenset, list, tuple)):
        # names, or numbers that label things ({1, 3} for calls numbered 1 to 5)
        if not all(isinstance(p, str) or (isinstance(p, int) and not isinstance(p, bool))
                   for p in answer):
            return None
        return {str(p).strip() for p in answer}
    return None


def _names(text: str, how: str) -> Any:
    """A typed answer that must be names ("b, c", "b c", "[b, c]", "none")."""
    value = read(text, how)
    if value is not Ellipsis and names_of(value) is None:
        raise Unreadable(f"could not read {text.strip()!r} as names: {how}")
    return value


# -- predict a count ----------------------------------------------------------------------------

def _whole_number(answer: Any) -> bool:
    return not isinstance(answer, bool) and isinstance(answer, (int, np.integer))


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

    def _truth(self, client: Any) -> int:
        return self.count(self.run(client))

    def _check(self, answer: Any, client: Any) -> Result:
        if not _whole_number(answer):
            return unreadable(answer, f"answer with a whole number of {self.what}, not "
                              f"{answer!r}")
        report = self.run(client)
        expected = self.count(report)
        if int(answer) == expected:
            return self._right(answer, f"{expected} {self.what}. {self.explanation}".strip(),
                               report=report)
        return self._wrong(answer, f"{answer} is not what the run did.")


def unreadable(answer: Any, message: str) -> Result:
    """An answer the check cannot read (not a number, not names): said so, with how to write
    it; not counted as an attempt."""
    return Result("wrong", message, "", answer, unreadable=True)


# -- predict a value ----------------------------------------------------------------------------

@dataclass
class ValueExercise(Exercise):
    """"What does this produce?" — `value(client)` makes the real run and returns its value (a
    number, a list, a set, a pair, a word); the answer must say the same (`base.same`: sequences
    item by item, sets in any order, words without regard to case or surrounding spaces)."""

    code: str = ""
    value: Callable[[Any], Any] = lambda c: None
    explanation: str = ""

    same = staticmethod(same)

    def _truth(self, client: Any) -> Any:
        return self.value(client)

    def _check(self, answer: Any, client: Any) -> Result:
        expected = self.value(client)
        if same(answer, expected):
            shown = expected.tolist() if isinstance(expected, np.ndarray) else expected
            if isinstance(shown, (set, frozenset)):
                shown = sorted(shown, key=str)
            return self._right(answer, f"{shown}. {self.explanation}".strip())
        return self._wrong(answer, f"{answer!r} is not what the run produced.")


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

    def _says(self, answer: Any, predicted: Any) -> bool:
        names = names_of(answer)
        return names is not None and {n.removeprefix("info.") for n in names} == \
            names_of(predicted)

    def _truth(self, client: Any) -> set[str]:
        return self.differing(*self.run(client))

    def _check(self, answer: Any, client: Any) -> Result:
        names = names_of(answer)
        if names is None:
            return unreadable(answer, self.name_example)
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
            return self._right(answer, f"{what}. {self.explanation}".strip(), details=details)
        if strangers:
            # about the answer's words, not about the expected fields: every KernelId has these
            info = sorted(k.removeprefix("info.") for k in fields if k.startswith("info."))
            return self._wrong(
                answer, f"{', '.join(strangers)} is not a field of this KernelId.",
                f"A KernelId holds the kernel type, address type, cube_dim, execution mode and "
                f"the Info ({', '.join(info)}). What is not in the key never recompiles.")
        return self._wrong(answer, f"{', '.join(sorted(names)) or 'none'} is not the "
                           "difference.")


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

    def _says(self, answer: Any, predicted: Any) -> bool:
        names = names_of(answer)
        return names is not None and names == names_of(predicted)

    def _truth(self, client: Any) -> set[str]:
        return self.run(client)[0]

    def _check(self, answer: Any, client: Any) -> Result:
        ex: Any = self  # an Exercise: `_right`, `_wrong` and `explanation` come from it
        names = names_of(answer)
        if names is None:
            return unreadable(answer, self.name_example)
        found, why = self.run(client)
        if names == found:
            details = "\n".join(f"{n}: {w}" for n, w in sorted(why.items()))
            return ex._right(answer, f"{', '.join(sorted(found)) or 'none'}. "
                             f"{ex.explanation}".strip(), details=details)
        return ex._wrong(answer, f"{', '.join(sorted(names)) or 'none'} is not {self.not_what}")


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
Rule = Callable[[Any, Any], "str | None"]  # (access map, case) -> what is wrong, or None


class _RecordedLaunch:
    """Stands in for the student's kernel while an exercise's `launch` runs: records the launch
    it would make (launcher, count, dim, arguments) instead of making it, so the very same
    launch can be re-run on the CPU runtime with every access recorded."""

    def __init__(self, launcher: Any, calls: list[tuple[Any, ...]]) -> None:
        self._launcher, self._calls = launcher, calls

    def __getitem__(self, generics: Any) -> "_RecordedLaunch":
        return _RecordedLaunch(self._launcher[generics], self._calls)

    def __call__(self, client: Any, count: Any, dim: Any, *args: Any) -> None:
        self._calls.append((self._launcher, count, dim, args))


class _Recorder:
    def __init__(self, kernel: Any) -> None:
        self.kernel, self.calls = kernel, []

    @property
    def launch(self) -> _RecordedLaunch:
        return _RecordedLaunch(self.kernel.launch, self.calls)

    @property
    def launch_unchecked(self) -> _RecordedLaunch:
        return _RecordedLaunch(self.kernel.launch_unchecked, self.calls)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)


@dataclass
class KernelExercise(Exercise):
    """Run the student's kernel on each case and compare every buffer with a numpy spec.

    `inputs()` gives every buffer's host values before the launch (by name; outputs too, e.g.
    filled with a sentinel so a stray write shows), `spec(buffers)` the values the kernel must
    leave in the buffers it names, and `launch(kernel, client, handles)` makes the fixed launch
    (the student writes the kernel, never the geometry). With `cases` (geometries, sizes: one
    fixed, one the variant's), each of the three takes the case as its last argument and the
    kernel must pass them all.

    Then the launch is re-run on the CPU runtime with every access recorded: an out-of-bounds
    access (`report_oob`) or a race is wrong even when the values are right, and each of
    `checks` — `rule(access_map, case) -> what is wrong, or None` — may add a rule (each item
    written by one unit, a limit on reads ...)."""

    inputs: Callable[..., Buffers] = dict
    spec: Callable[..., Buffers] = lambda b: {}
    launch: Callable[..., Any] = lambda k, c, h: None
    cases: Sequence[Any] = ()
    report_oob: bool = True
    checks: Sequence[Rule] = ()
    rtol: float = 1e-5
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False

    # -- the cases -----------------------------------------------------------------------------
    def _cases(self) -> list[Any]:
        return list(self.cases) or [None]

    @staticmethod
    def _call(fn: Callable[..., Any], *args: Any, case: Any) -> Any:
        return fn(*args) if case is None else fn(*args, case)

    def _inputs_of(self, case: Any) -> Buffers:
        return self._call(self.inputs, case=case)

    def _run(self, kernel: Any, client: Any, case: Any = None) -> Buffers:
        host = self._inputs_of(case)
        handles = {n: client.create_from_slice(np.ascontiguousarray(a).tobytes())
                   for n, a in host.items()}
        self._call(self.launch, kernel, client, handles, case=case)
        return {n: np.frombuffer(client.read_one(handles[n]), dtype=host[n].dtype).copy()
                for n in host}

    def access_map(self, kernel: Any, case: Any = None) -> Any:
        """Every access each unit of `kernel` makes on this exercise's launch (of `case`),
        recorded on the CPU runtime (`cubelab.inspect.access_map`); None when the launch does
        not run there (it failed to compile, or was skipped)."""
        from cubelab.errors import CubeError
        from cubelab.inspect import access_map
        from cubelab.runtime.device import Device

        cpu = Device.cpu().client()
        host = self._inputs_of(case)
        handles = {n: cpu.create_from_slice(np.ascontiguousarray(a).tobytes())
                   for n, a in host.items()}
        rec = _Recorder(kernel)
        self._call(self.launch, rec, cpu, handles, case=case)
        if not rec.calls:
            return None
        launcher, count, dim, args = rec.calls[-1]
        try:
            return access_map(launcher, cpu, count, dim, *args)
        except CubeError:
            return None

    def _truth(self, client: Any) -> list[Buffers]:
        return [self._call(self.spec, {n: a.copy() for n, a in self._inputs_of(c).items()}, case=c)
                for c in self._cases()]

    # -- the check -----------------------------------------------------------------------------
    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.frontend.kernel import CubeFunction

        if not (isinstance(answer, CubeFunction) and answer.is_kernel):
            return unreadable(answer, "answer with your kernel: the name of the function you "
                              f"decorated with @cube(launch=True), not {answer!r}")
        cases = self._cases()
        for case in cases:
            r = self._check_case(answer, client, case, len(cases) > 1)
            if r is not None:
                return r
        return self._right(answer, "every buffer matches the spec"
                           + (f" on all {len(cases)} launches." if len(cases) > 1 else "."))

    def _check_case(self, kernel: Any, client: Any, case: Any, label: bool) -> Result | None:
        on = f"on {case}: " if label and case is not None else ""
        host = self._inputs_of(case)
        expected = self._call(self.spec, {n: a.copy() for n, a in host.items()}, case=case)
        try:
            got = self._run(kernel, client, case)
        except Exception as exc:  # noqa: BLE001 - the student's kernel failing is an answer
            return self._failed(kernel, exc, on)
        bad = self._mismatches(got, expected, host)
        amap = self.access_map(kernel, case) if (bad or self.report_oob or self.checks) \
            else None
        if bad:
            return self._wrong(kernel, f"{on}the buffers differ from the spec.",
                               details="\n".join(self._evidence(bad, amap)))
        if amap is None:
            return None
        if self.report_oob and amap.oob:
            return self._wrong(
                kernel, f"{on}right values, but some unit reads or writes past the end of a "
                "buffer (seen on the CPU runtime, which records every access).",
                "On wgpu an out-of-bounds read quietly gives 0 and a write is dropped, so "
                "the values can look right. Guard the access with the buffer's length.",
                details="\n".join(self._oob_lines(amap)))
        if amap.races:
            r = amap.races[0]
            return self._wrong(kernel, f"{on}right values, but a race: {r}.", _race_hint(r),
                               details=f"{amap.races_total} racing pair(s)")
        for rule in self.checks:
            why = rule(amap, case)
            if why:
                return self._wrong(kernel, f"{on}the values are right, but a rule is broken: "
                                   f"{why}")
        return None

    def _failed(self, answer: Any, exc: BaseException, on: str = "") -> Result:
        """The student's kernel did not compile (or failed while running): its own error —
        place, caret, hint — is the verdict. A read of its output raises `BufferFailure`, whose
        cause is that error; the wrapper and the exercise's hint would only hide it."""
        from cubelab.errors import BufferFailure, CompileError, FeatureError, KernelSourceError

        cause = exc.cause if isinstance(exc, BufferFailure) else exc
        compiles = not isinstance(cause, (KernelSourceError, CompileError, FeatureError))
        what = "failed while running" if compiles else "does not compile"
        return Result("wrong", f"{on}your kernel {what}", answer=answer,
                      details=f"{type(cause).__name__}: {str(cause).strip()}", error=cause)

    def _mismatches(self, got: Buffers, expected: Buffers,
                    host: Buffers) -> list[tuple[str, tuple[int, ...], Any, Any, bool]]:
        """(buffer, index, value, spec value, still the value before the launch) per item that
        differs (at most 6 per buffer)."""
        out: list[tuple[str, tuple[int, ...], Any, Any, bool]] = []
        for name, want in expected.items():
            want = np.asarray(want)
            have = got[name].reshape(-1)[: want.size].reshape(want.shape) \
                if got[name].size >= want.size else got[name]
            before = host[name].reshape(-1)[: want.size].reshape(want.shape) \
                if host[name].size >= want.size else host[name]
            if have.shape != want.shape:
                out.append((name, (), f"{have.size} items", f"{want.size} items", False))
                continue
            if np.issubdtype(want.dtype, np.floating):
                ok = np.isclose(have, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
            else:
                ok = have == want
            for i in np.argwhere(~np.asarray(ok))[:6]:
                at = tuple(int(v) for v in i)
                out.append((name, at, have[at].item(), want[at].item(),
                            bool(before.shape == have.shape and have[at] == before[at])))
        return out

    def _evidence(self, bad: list[tuple[str, tuple[int, ...], Any, Any, bool]],
                  amap: Any) -> list[str]:
        """What the run showed about each differing item: who wrote it, and what they read."""
        lines = []
        for name, at, have, want, untouched in bad:
            if not at:
                lines.append(f"{name}: {have}, the spec has {want}")
                continue
            flat = at[0] if len(at) == 1 else None
            where = f"{name}[{', '.join(map(str, at))}]"
            line = f"{where} = {have!r}, the spec says {want!r}"
            writers = ([a for a in amap.who_touched(name, flat) if a.kind != "read"]
                       if amap is not None and flat is not None else [])
            if writers:
                w = writers[-1]
                reads = [f"{a.array}[{a.index}]" for a in amap.touched_by(w.unit)
                         if a.kind == "read" and a.space == "global"][:4]
                line += (f" — written by unit {w.unit} (line {w.line}: {amap.source(w.line)})"
                         + (f", which read {', '.join(reads)}" if reads else ""))
                if len(writers) > 1:
                    line += f"; {len(writers)} writes to it in all"
            elif amap is not None and flat is not None:
                line += " — no unit wrote it" + (" (it still holds its value from before "
                                                  "the launch)" if untouched else "")
            lines.append(line)
        return lines

    @staticmethod
    def _oob_lines(amap: Any) -> list[str]:
        lines = []
        for a in amap.oob[:8]:
            lines.append(f"unit {a.unit} {a.kind}s {a.array}[{a.index}] but {a.array} has "
                         f"{a.length} items (line {a.line}: {amap.source(a.line)})")
        if len(amap.oob) > 8:
            lines.append(f"... and {len(amap.oob) - 8} more")
        return lines


def _race_hint(r: Any) -> str:
    if r.space == "shared":
        return ("On a GPU the units of a cube do not run in lockstep: a unit may read a tile item "
                "before its owner has written it. Put `sync_cube()` between the writes and the "
                "reads (and between a step's reads and the next step's writes).")
    return ("Two units touch one item of a global buffer and at least one writes it: on a GPU "
            "which one wins is not defined. Give each item of the output one unit that writes "
            "it, and let the units with no item of their own do nothing.")
