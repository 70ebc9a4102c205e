"""The compiler track's exercise kinds: a student's pass, or a student's lowering of an op, run on
hidden kernels for real.

- `PassExercise`      write a pass (`cubelab.compiler.Pass`): it is given to
                      `set_compilation_options(extra_passes=[...])` and every hidden kernel
                      (`PassCase`) is launched with it on the student's client and on the CPU
                      runtime. Right when, on every kernel, every buffer is what the kernel
                      computes without the pass (ints exactly, floats to rounding) and the IR
                      after the pass has the change the exercise asks for (`expect`).
- `LoweringExercise`  give one part of a plug-in op (`cubelab.ir.plugins`): a target's
                      spelling or the CPU step. The check declares a private op with the
                      exercise's meaning, puts the student's part beside reference parts for
                      the rest, launches every hidden kernel that calls it on the runtime that
                      runs that part, and compares with numpy's value of the meaning; the op is
                      removed again however the check ends.

What a wrong answer is told is what the run showed — which hidden kernel, which item and its
value with and without the pass, the op the pass left, or the error the pass or the spelling
caused (then that error is the verdict, as for a kernel that does not compile) — and what that
kernel was built to catch. Never a solution: the hints are the exercise's tiers.

Why hidden kernels: a pass written against the chapter's demo kernel can be right there by luck
(no negative numbers, no loop, no store whose value is unused). Each case is small and sets one
trap a real pass must not fall into, which is how the course rejects the misconceptions (a pass
that changes results, folds across a runtime value, deletes a store, forgets the types).

Trap: a check changes the client's compilation options for its runs and puts them back after,
and a lowering check adds and removes an op: each change clears the client's pipeline cache
(that is the lesson, not a side effect), so a notebook's next launch compiles again.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Sequence

import numpy as np

from cubelab.exercises.base import Exercise, Result
from cubelab.exercises.kinds import unreadable
from cubelab.runtime import events as ev

__all__ = ["PassCase", "PassExercise", "LoweringExercise", "extra_passes", "run_case",
           "definitions", "op_text"]

Buffers = dict[str, np.ndarray]


@dataclass
class PassCase:
    """One hidden kernel: its buffers before the launch, the launch, and the trap it sets."""

    name: str  # how a verdict names it ("u32 arithmetic that wraps")
    kernel: Any  # a @cube(launch=True) function
    inputs: Callable[[], Buffers]
    launch: Callable[[Any, Any, dict[str, Any]], None]  # (kernel, client, handles)
    trap: str = ""  # what a pass must not do here, said when it does


@contextmanager
def extra_passes(client: Any, passes: Sequence[Any]) -> Iterator[None]:
    """The client's launches compile with `passes` as its extra passes inside the block; its
    options before it are restored after (each change clears its pipeline cache)."""
    before = client.compilation_options()
    client.set_compilation_options(extra_passes=list(passes))
    try:
        yield
    finally:
        client.set_compilation_options(**before.as_dict())


def run_case(case: PassCase, client: Any, kernel: Any = None) -> tuple[Buffers, Any]:
    """Launch `case` on `client`; every buffer after it, and the KernelId it issued."""
    host = case.inputs()
    handles = {n: client.create_from_slice(np.ascontiguousarray(a).tobytes())
               for n, a in host.items()}
    with client.events.record(ev.LaunchIssued) as rec:
        case.launch(kernel if kernel is not None else case.kernel, client, handles)
    out = {n: np.frombuffer(client.read_one(h), dtype=host[n].dtype).copy()
           for n, h in handles.items()}
    issued = rec.of(ev.LaunchIssued)
    return out, issued[-1].kernel_id if issued else None


def definitions(kernel: Any, kernel_id: Any, passes: Sequence[Any]) -> tuple[Any, Any]:
    """The IR of the launch `kernel_id` of `kernel` without and with `passes` (after the
    built-in passes of its mode, as the server compiles it)."""
    from cubelab.compiler.options import CompilationOptions
    from cubelab.compiler.pipeline import compile_definition
    from cubelab.inspect import instance_from_id

    k = instance_from_id(kernel, kernel_id)
    out = []
    for chosen in ((), tuple(passes)):
        c = compile_definition(k.define(), k.mode, CompilationOptions(extra_passes=chosen),
                               run=None, record=False)
        out.append(c.definition)
    return out[0], out[1]


def op_text(op: Any) -> str:
    """One op as the IR prints it, with the kernel line it came from."""
    import linecache

    from cubelab.ir.printer import format_op_line

    line = linecache.getline(op.loc.file, op.loc.line) if op.loc is not None else ""
    where = f" (from `{_plain_line(line)}`)" if line.strip() else ""
    return f"`{format_op_line(op)}`{where}"


def _plain_line(line: str) -> str:
    """A source line as a student wrote it: stripped, without a lint comment."""
    return line.split("  # noqa", 1)[0].strip()


def _mismatches(got: Buffers, want: Buffers, rtol: float, atol: float) -> list[str]:
    lines = []
    for name, expected in want.items():
        have = got[name]
        if np.issubdtype(expected.dtype, np.floating):
            ok = np.isclose(have, expected, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = have == expected
        for i in np.flatnonzero(~ok)[:4]:
            lines.append(f"{name}[{i}] = {have[i].item()!r}; without your pass "
                         f"{expected[i].item()!r}")
    return lines


def _kernel_source(kernel: Any) -> str:
    text = getattr(kernel, "source", "") or ""
    lines = [ln.split("  # noqa", 1)[0].rstrip() for ln in text.rstrip().splitlines()]
    return "the hidden kernel:\n" + "\n".join("    " + ln for ln in lines)


def _cpu_client() -> Any:
    from cubelab.runtime.device import Device

    return Device.cpu().client()


def _failure(answer: Any, exc: BaseException, what: str) -> Result:
    """The pass (or the spelling) made the launch fail: that error is the verdict."""
    from cubelab.errors import BufferFailure

    cause = exc.cause if isinstance(exc, BufferFailure) else exc
    return Result("wrong", what, answer=answer,
                  details=f"{type(cause).__name__}: {str(cause).strip()}", error=cause)


@dataclass
class PassExercise(Exercise):
    """"Write a pass that ...": checked on `cases` (hidden kernels) — results identical to the
    kernel without the pass on the student's client and on the CPU runtime, and
    `expect(before, after)` (the IR without and with the pass) says what change is missing, or
    None. The pass is given as an object: `answer = ConstantFold()`."""

    cases: Sequence[PassCase] = ()
    expect: Callable[[Any, Any], "str | None"] = lambda before, after: None
    rtol: float = 1e-6
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False
    _baselines: dict[str, Buffers] = field(default_factory=dict, repr=False, compare=False)

    def baseline(self, case: PassCase) -> Buffers:
        """What the kernel computes without any extra pass (a CPU run, kept)."""
        if case.name not in self._baselines:
            cpu = _cpu_client()
            with extra_passes(cpu, ()):
                self._baselines[case.name] = run_case(case, cpu)[0]
        return self._baselines[case.name]

    def _truth(self, client: Any) -> list[Buffers]:
        return [self.baseline(c) for c in self.cases]

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.compiler import Pass

        if isinstance(answer, type):
            return unreadable(answer, f"answer with a pass object, not its class: "
                              f"`answer = {answer.__name__}()`")
        if not isinstance(answer, Pass):
            return unreadable(answer, "answer with your pass: an object with a `name` and a "
                              f"`run(definition)` method (`answer = MyPass()`), not {answer!r}")
        cpu = _cpu_client()
        runtimes = [client] if client is cpu else [client, cpu]
        for case in self.cases:
            want = self.baseline(case)
            kernel_id = None
            for c in runtimes:
                try:
                    with extra_passes(c, [answer]):
                        got, kernel_id = run_case(case, c)
                except Exception as exc:  # noqa: BLE001 - the student's pass failing is an answer
                    return _failure(answer, exc, f"on the hidden kernel `{case.name}`, your pass "
                                    "made the compile fail")
                bad = _mismatches(got, want, self.rtol, self.atol)
                if bad:
                    return self._wrong(
                        answer, f"on the hidden kernel `{case.name}` ({c.name()}), your pass "
                        "changed what the kernel computes.",
                        details="\n".join(bad + ([f"this kernel: {case.trap}"] if case.trap
                                                 else []) + [_kernel_source(case.kernel)]))
            before, after = definitions(case.kernel, kernel_id, [answer])
            missing = self.expect(before, after)
            if missing:
                return self._wrong(answer, f"on the hidden kernel `{case.name}` the results "
                                   f"are right, but {missing}",
                                   details=_kernel_source(case.kernel))
        names = " and ".join(c.name() for c in runtimes)
        return self._right(answer, f"your pass keeps the results of all {len(self.cases)} "
                           f"hidden kernels on {names} and makes the change in each.")


_PRIVATE = itertools.count()


@dataclass
class LoweringExercise(Exercise):
    """"Give the op its <part>": `part` is a target's name ("wgsl", "msl", "cuda") — the answer
    is a spelling, a format string of the operands — or "cpu" — the answer is a numpy function
    of the operands' rows. The check declares a private op with `meaning` and `arity`, sets the
    student's part and `reference` parts (a spelling per other target, "cpu": a function),
    defines each of `kernels(op_function)` (hidden kernels that call the op) and launches it
    through `launch(kernel, client, x) -> out`, on the runtime that runs `part` (a wgpu client
    for "wgsl": the student's when it is one, else one of this machine), comparing with
    `numpy(x)` (float64, then f32). The op is removed however the check ends."""

    part: str = "wgsl"
    meaning: str = ""
    arity: int = 1
    reference: dict[str, Any] = field(default_factory=dict)
    numpy: Callable[..., np.ndarray] = lambda x: x
    kernels: Callable[[Any], Sequence[tuple[str, Any]]] = lambda op: ()
    launch: Callable[[Any, Any, np.ndarray], np.ndarray] = lambda k, c, x: x
    inputs: Sequence[np.ndarray] = ()
    rtol: float = 2e-5
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False

    def _runtime(self, client: Any) -> Any:
        """The client whose runtime executes `part`."""
        from cubelab.runtime.device import Device

        if self.part == "cpu":
            return client if client.name().startswith("cpu") else _cpu_client()
        if self.part == "wgsl":
            return client if client.name().startswith("wgpu") else Device.wgpu().client()
        raise ValueError(f"{self.key}: nothing here runs the {self.part!r} target")

    def _truth(self, client: Any) -> Any:
        return self.reference.get(self.part)

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.compiler import TARGETS
        from cubelab.errors import DeviceError
        from cubelab.ir.plugins import PLUGIN_OPS, add_op, remove_op
        from cubelab.prelude import intrinsic
        from cubelab.runtime.cpu import cpu_step

        if self.part == "cpu":
            if not callable(answer):
                return unreadable(answer, "answer with a function of numpy arrays, e.g. "
                                  f"`answer = lambda x: np.exp(x)`, not {answer!r}")
        elif not isinstance(answer, str):
            return unreadable(answer, "answer with the spelling as a string, the operands as "
                              f"{{0}}, {{1}}, ...: e.g. `answer = \"exp({{0}})\"`, not {answer!r}")
        try:
            runtime = self._runtime(client)
        except DeviceError as exc:
            return Result("wrong", f"this check runs your {self.part.upper()} for real and needs "
                          f"a WebGPU adapter (lavapipe will do), which this machine lacks: "
                          f"{exc}", answer=answer, unreadable=True)
        name = f"check.{self.key.replace('.', '_')}_{next(_PRIVATE)}"
        add_op(name, self.meaning, arity=self.arity)
        try:
            parts = {**self.reference, self.part: answer}
            try:
                for target, spelling in parts.items():
                    if target == "cpu":
                        cpu_step(name, spelling)
                    else:
                        TARGETS[target].lower(name, spelling)
            except ValueError as exc:
                return self._wrong(answer, f"the op does not take this {self.part}: {exc}")
            fn = intrinsic(name)
            for label, kernel in self.kernels(fn):
                for x in self.inputs:
                    try:
                        got = self.launch(kernel, runtime, x)
                    except Exception as exc:  # noqa: BLE001 - the answer failing is an answer
                        return _failure(answer, exc, f"on the hidden kernel `{label}` "
                                        f"({runtime.name()}), the launch failed")
                    want = np.asarray(self.numpy(*self._args(x)), dtype=np.float64)
                    ok = np.isclose(got, want.astype(np.float32), rtol=self.rtol, atol=self.atol,
                                    equal_nan=True)
                    if not ok.all():
                        i = int(np.flatnonzero(~ok)[0])
                        operands = ", ".join(f"{a.reshape(-1)[i]!r}" for a in self._args(x))
                        return self._wrong(
                            answer, f"on the hidden kernel `{label}` ({runtime.name()}), the op "
                            "does not compute its meaning.",
                            details=f"at item {i}, for the operand(s) {operands}: "
                            f"{got.reshape(-1)[i]!r}, where the meaning gives "
                            f"{np.float32(want.reshape(-1)[i])!r}")
            return self._right(answer, f"the op computes its meaning on {runtime.name()} in "
                               f"every hidden kernel.")
        finally:
            if name in PLUGIN_OPS:
                remove_op(name)

    def _args(self, x: np.ndarray) -> list[np.ndarray]:
        """The operands of the op for input `x` (a (arity, n) array when arity > 1)."""
        return [x] if self.arity == 1 else [x[i] for i in range(self.arity)]
