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
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, ContextManager, Iterator, Sequence

import numpy as np

from cubelab.exercises.base import Exercise, Result
from cubelab.exercises.kinds import unreadable
from cubelab.runtime import events as ev

__all__ = ["PassCase", "PassExercise", "LoweringExercise", "OpKernel", "TemplatePass",
           "extra_passes",
           "run_case", "definitions", "op_text", "private_op", "set_parts"]

Buffers = dict[str, np.ndarray]


@dataclass
class PassCase:
    """One hidden kernel: its buffers before the launch, the launch, and the trap it sets."""

    name: str  # how a verdict names it ("u32 arithmetic that wraps")
    kernel: Any  # a @cube(launch=True) function
    inputs: Callable[[], Buffers]
    launch: Callable[[Any, Any, dict[str, Any]], None]  # (kernel, client, handles)
    trap: str = ""  # what a pass must not do here, said when it does
    # what the buffers must hold, from the inputs (numpy); None: what the kernel computes
    # without the pass (a CPU run) — a kernel that cannot run without the pass needs a spec
    spec: Callable[[Buffers], Buffers] | None = None


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


def _mismatches(got: Buffers, want: Buffers, rtol: float, atol: float,
                against: str = "without your pass") -> list[str]:
    lines = []
    for name, expected in want.items():
        have = got[name]
        if np.issubdtype(expected.dtype, np.floating):
            ok = np.isclose(have, expected, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = have == expected
        for i in np.flatnonzero(~ok)[:4]:
            lines.append(f"{name}[{i}] = {have[i].item()!r}; {against}: "
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
    # what the hidden kernels need while they run (a plug-in op declared, ...): a context
    scene: Callable[[], ContextManager[Any]] = nullcontext
    rtol: float = 1e-6
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False
    _baselines: dict[str, Buffers] = field(default_factory=dict, repr=False, compare=False)

    def baseline(self, case: PassCase) -> Buffers:
        """What the kernel must leave: its spec, else what it computes without any extra pass
        (a CPU run, kept)."""
        if case.spec is not None:
            host = case.inputs()
            return {**host, **case.spec({n: a.copy() for n, a in host.items()})}
        if case.name not in self._baselines:
            cpu = _cpu_client()
            with extra_passes(cpu, ()):
                self._baselines[case.name] = run_case(case, cpu)[0]
        return self._baselines[case.name]

    def _truth(self, client: Any) -> list[Buffers]:
        with self.scene():
            return [self.baseline(c) for c in self.cases]

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.compiler import Pass

        if isinstance(answer, type):
            return unreadable(answer, f"answer with a pass object, not its class: "
                              f"`answer = {answer.__name__}()`")
        if not isinstance(answer, Pass):
            return unreadable(answer, "answer with your pass: an object with a `name` and a "
                              f"`run(definition)` method (`answer = MyPass()`), not {answer!r}")
        with self.scene():
            return self._check_cases(answer, client)

    def _check_cases(self, answer: Any, client: Any) -> Result:
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
                bad = _mismatches(got, want, self.rtol, self.atol,
                                  "the kernel's spec" if case.spec else "without your pass")
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


@dataclass
class TemplatePass:
    """A pass exercise's answer cell as the student receives it, run as it is: it has the
    exercise's pass name and changes nothing (each pass exercise's first wrong answer)."""

    name: str

    def run(self, definition: Any) -> Any:
        return definition


_PRIVATE = itertools.count()


@contextmanager
def private_op(stem: str, meaning: str, arity: int = 1,
               parts: dict[str, Any] | None = None) -> Iterator[str]:
    """A plug-in op of its own for one check (`check.<stem>_<n>`: never a name a student uses),
    with `parts` — a spelling per target name, "cpu": a numpy step — removed however the block
    ends. A part the op does not take raises ValueError from inside the block."""
    from cubelab.ir.plugins import PLUGIN_OPS, add_op, remove_op

    name = f"check.{stem}_{next(_PRIVATE)}"
    add_op(name, meaning, arity=arity)
    try:
        set_parts(name, parts or {})
        yield name
    finally:
        if name in PLUGIN_OPS:
            remove_op(name)


def set_parts(name: str, parts: dict[str, Any]) -> None:
    """Give plug-in op `name` each part: a target's spelling by its name, "cpu": its step."""
    from cubelab.compiler import TARGETS
    from cubelab.runtime.cpu import cpu_step

    for target, part in parts.items():
        if target == "cpu":
            cpu_step(name, part)
        else:
            TARGETS[target].lower(name, part)


@dataclass
class OpKernel:
    """A hidden kernel that calls the op: `bind(op_function)` makes the kernel call it (the
    kernels read a module global when they expand), `run(kernel, client, x) -> out` launches it
    on the operand rows `x` and returns what it wrote, `reference(x)` is what the meaning gives
    (numpy, float64)."""

    name: str
    kernel: Any
    run: Callable[[Any, Any, np.ndarray], np.ndarray]
    reference: Callable[[np.ndarray], np.ndarray]
    size: int = 32  # the operand scalars one launch covers


@dataclass
class LoweringExercise(Exercise):
    """"Give the op its <part>": `part` is "wgsl" — the answer is a WGSL spelling, a format
    string of the operands — or "cpu" — the answer is a numpy function of the operands' rows.
    The check declares a private op with `meaning` and `arity`, gives it the student's part
    (and `reference` parts, if the kernels need more), binds the hidden kernels to it and runs
    each on `inputs` on the runtime that runs the part — the CPU runtime for "cpu"; for "wgsl"
    the student's client when it runs WGSL, else this machine's WebGPU adapter — and compares
    with the meaning's values."""

    part: str = "wgsl"
    meaning: str = ""
    arity: int = 1
    reference: dict[str, Any] = field(default_factory=dict)
    kernels: Sequence[OpKernel] = ()
    bind: Callable[[Any], None] = lambda fn: None
    inputs: Callable[[int], Sequence[np.ndarray]] = lambda n: ()  # operand rows of n scalars
    rtol: float = 2e-5
    atol: float = 1e-6
    takes_text: ClassVar[bool] = False

    def runtime(self, client: Any) -> Any:
        """The client whose runtime executes `part`."""
        from cubelab.runtime.device import Device

        if self.part == "cpu":
            return client if client.name().startswith("cpu") else _cpu_client()
        return client if client.name().startswith("wgpu") else Device.wgpu().client()

    def _truth(self, client: Any) -> Any:
        return [k.reference(x) for k in self.kernels for x in self.inputs(k.size)]

    def _check(self, answer: Any, client: Any) -> Result:
        from cubelab.errors import DeviceError
        from cubelab.prelude import intrinsic

        if self.part == "cpu" and not callable(answer):
            return unreadable(answer, "answer with a function of numpy arrays, e.g. "
                              f"`answer = lambda x: np.exp(x)`, not {answer!r}")
        if self.part != "cpu" and not isinstance(answer, str):
            return unreadable(answer, "answer with the spelling as a string, the operands as "
                              f"{{0}}, {{1}}, ...: e.g. `answer = \"exp({{0}})\"`, not {answer!r}")
        try:
            runtime = self.runtime(client)
        except DeviceError as exc:
            return Result("wrong", f"this check runs your {self.part.upper()} for real and needs a "
                          f"WebGPU adapter (lavapipe will do), which this machine lacks: {exc}",
                          answer=answer, unreadable=True)
        with private_op(self.key.split(".")[-1], self.meaning, self.arity) as name:
            try:
                set_parts(name, {**self.reference, self.part: answer})
            except ValueError as exc:
                return self._wrong(answer, f"the op does not take this {self.part}: {exc}")
            self.bind(intrinsic(name))
            try:
                return self._run(answer, runtime)
            finally:
                self.bind(None)

    def _run(self, answer: Any, runtime: Any) -> Result:
        for k in self.kernels:
            for x in self.inputs(k.size):
                try:
                    got = np.asarray(k.run(k.kernel, runtime, x))
                except Exception as exc:  # noqa: BLE001 - the answer failing is an answer
                    return _failure(answer, exc, f"on the hidden kernel `{k.name}` "
                                    f"({runtime.name()}), the launch failed")
                want = np.asarray(k.reference(x), dtype=np.float64).astype(np.float32)
                ok = np.isclose(got, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
                if not ok.all():
                    i = int(np.flatnonzero(~ok.reshape(-1))[0])
                    rows = np.asarray(x, dtype=np.float32).reshape(self.arity, -1)[:, i]
                    operand = ", ".join(f"{float(r):.7g}" for r in rows)
                    return self._wrong(
                        answer, f"on the hidden kernel `{k.name}` ({runtime.name()}), the op does "
                        "not compute its meaning.",
                        details=f"at item {i} (operands {operand}) the kernel wrote "
                        f"{float(got.reshape(-1)[i]):.7g}; the meaning gives "
                        f"{float(want.reshape(-1)[i]):.7g}\n" + _kernel_source(k.kernel))
        return self._right(answer, f"the op computes its meaning on {runtime.name()} in every "
                           "hidden kernel.")
