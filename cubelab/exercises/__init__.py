"""Exercises with answers checked against a real run, not against an answer key.

    from cubelab.exercises import HOW_MANY_COMPILES
    verdict = HOW_MANY_COMPILES.check(3, client)   # clears the cache, runs the launches, counts
    verdict.correct, verdict.report.compiles, verdict.report.log, verdict.report.why

An exercise is a question, the code a student reads, the launches that code performs, and a
function from the run's report to the right answer — so the answer is whatever the runtime does
(if the runtime changed, the quiz would say so, instead of teaching a stale number). Declaring one
takes a few lines: see `compile_count_exercise`. `cubelab.widgets.Quiz` displays any exercise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from cubelab.runtime import events as ev

__all__ = ["Exercise", "RunReport", "Verdict", "compile_count_exercise", "count_compiles",
           "HOW_MANY_COMPILES", "HOW_MANY_SKIPPED", "EXERCISES"]

Launch = Callable[[Any], Any]


@dataclass
class RunReport:
    """What really happened when the exercise's launches ran."""

    compiles: int
    hits: int
    log: list[str]  # one line per compile, as the debug log would name it
    why: list[str]  # per compile: why it was a new KernelId
    outputs: list[Any] = field(default_factory=list)
    kernel_ids: list[Any] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # kernels whose launch failed (seed 001)
    skipped: list[str] = field(default_factory=list)  # kernels skipped: an input had failed


@dataclass
class Verdict:
    correct: bool
    answer: Any
    expected: Any
    message: str
    report: RunReport


def count_compiles(client: Any, launches: Sequence[Launch], clear_cache: bool = True) -> RunReport:
    """Run `launches` (each `f(client) -> output`) and count compiles and hits from events.

    The cache is cleared first (the count must not depend on what ran before) and every output
    is read back, so every launch has reached the device when the count is taken.
    """
    from cubelab.inspect.live import nearest_earlier

    if clear_cache:
        client.clear_cache()
    outputs = []
    with client.events.record(ev.CompileFinished, ev.CacheHit, ev.LaunchFailed,
                              ev.LaunchSkipped) as rec:
        for launch in launches:
            outputs.append(launch(client))
        client.sync()
    compiles = rec.of(ev.CompileFinished)
    hits = rec.of(ev.CacheHit)
    log, why, earlier = [], [], []
    for c in compiles:
        kid = c.kernel_id
        fields = kid.fields()
        info = ", ".join(f"{k.removeprefix('info.')}: {v}" for k, v in fields.items()
                         if k.startswith("info.") and v != "()" and "Buffer" not in str(v))
        log.append(f"[START_KERNEL_COMPILATION] {kid.type}  mode: {kid.mode.value}"
                   f"{'  ' + info if info else ''}  entry: {c.entry}")
        why.append("; ".join(nearest_earlier(kid, earlier)[1]))
        earlier.append(kid)
    return RunReport(len(compiles), len(hits), log, why, outputs,
                     [c.kernel_id for c in compiles],
                     [f.kernel for f in rec.of(ev.LaunchFailed)],
                     [k.kernel for k in rec.of(ev.LaunchSkipped) if k.why != "dry-run"])


@dataclass
class Exercise:
    key: str
    title: str
    question: str
    code: str  # what the student reads (Python, shown highlighted)
    launches: Sequence[Launch]
    answer_of: Callable[[RunReport], Any]  # the right answer, derived from the real run
    explanation: str = ""
    answer_kind: type = int

    def run(self, client: Any = None) -> RunReport:
        """Run the launches on `client` (default: Device.default()) and report what happened."""
        if client is None:
            from cubelab.runtime.device import Device

            client = Device.default().client()
        return count_compiles(client, self.launches)

    def check(self, answer: Any, client: Any = None) -> Verdict:
        """Run the launches for real and compare the student's answer with what happened."""
        report = self.run(client)
        expected = self.answer_of(report)
        try:
            given = self.answer_kind(answer)
        except (TypeError, ValueError):
            given = answer
        correct = given == expected
        msg = (f"Right: {expected}." if correct else f"Not quite: you said {answer}, the runtime "
               f"did {expected}.")
        return Verdict(correct, answer, expected, f"{msg} {self.explanation}".strip(), report)


def compile_count_exercise(key: str, title: str, question: str, code: str,
                           launches: Sequence[Launch], explanation: str = "") -> Exercise:
    """Declare a "how many compiles?" exercise in a few lines."""
    ex = Exercise(key, title, question, code, launches, lambda r: r.compiles, explanation)
    EXERCISES[key] = ex
    return ex


EXERCISES: dict[str, Exercise] = {}


# -- seed 000: "same add, four launches — how many compiles?" ---------------------------------

def _run_add(checked: bool, relu: bool) -> Launch:
    def launch(client: Any) -> Any:
        import numpy as np

        from cubelab.exercises.seed000 import add
        from cubelab.prelude import BufferArg, CubeCount, CubeDim, f32

        x = np.array([1, -2, 3, -4, 5, -6], dtype=np.float32)
        y = np.full(6, 0.5, dtype=np.float32)
        xh = client.create_from_slice(f32.as_bytes(x))
        yh = client.create_from_slice(f32.as_bytes(y))
        out = client.empty(6 * 4)
        launcher = add.launch if checked else add.launch_unchecked
        launcher[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(8),
                      BufferArg.from_raw_parts(xh, 6), BufferArg.from_raw_parts(yh, 6),
                      BufferArg.from_raw_parts(out, 6), relu)
        return f32.from_bytes(client.read_one(out))

    launch.__name__ = f"run_add(checked={checked}, relu={relu})"
    return launch


HOW_MANY_COMPILES = compile_count_exercise(
    "seed000-how-many-compiles",
    "Same add, four launches: how many compiles?",
    "`run_add(client, checked, relu)` launches `add` once on 6 elements with 8 units; `checked` "
    "picks `launch` or `launch_unchecked`. The four calls below run in order with the debug log "
    "on. How many times does `[START_KERNEL_COMPILATION]` appear?",
    "run_add(client, checked=True,  relu=False)\n"
    "run_add(client, checked=False, relu=False)\n"
    "run_add(client, checked=True,  relu=True)\n"
    "run_add(client, checked=True,  relu=False)\n",
    [_run_add(True, False), _run_add(False, False), _run_add(True, True),
     _run_add(True, False)],
    "The execution mode and the Comptime `relu` are KernelId fields, so launches 2 and 3 are new "
    "keys; launch 4 has launch 1's KernelId and reuses its pipeline (input data is not in the "
    "key).",
)


# -- seed 001: failure is buffer state ----------------------------------------------------------

def _failure_chain(client: Any) -> Any:
    """broken → a; copy a → b; copy b → c; fill a; copy a → d — then read what can be read."""
    from cubelab.errors import BufferFailure
    from cubelab.exercises.seed001 import broken, copy, fill
    from cubelab.prelude import BufferArg, CubeCount, CubeDim

    one, four = CubeCount.Static(1), CubeDim.new_1d(4)
    a, b, c, d = (client.empty(16) for _ in range(4))
    arg = lambda h: BufferArg.from_raw_parts(h, 4)  # noqa: E731
    broken.launch(client, one, four, arg(a))
    copy.launch(client, one, four, arg(a), arg(b))
    copy.launch(client, one, four, arg(b), arg(c))
    fill.launch(client, one, four, arg(a), 1.0)
    copy.launch(client, one, four, arg(a), arg(d))
    readable = []
    for name, h in zip("abcd", (a, b, c, d)):
        try:
            client.read_one(h)
            readable.append(name)
        except BufferFailure:
            pass
    return readable


HOW_MANY_SKIPPED = Exercise(
    "seed001-how-many-skipped",
    "A failure travels: how many launches are skipped?",
    "`broken` fails while it is being compiled (its expansion raises), so its output `a` carries "
    "the error. Then: `copy a → b`, `copy b → c`, `fill a` (writes a fresh value), `copy a → d`. "
    "A launch that reads a failed buffer is skipped and its outputs point at the root cause. How "
    "many of the five launches are skipped?",
    "broken.launch(client, one, four, a)      # fails: a carries the error\n"
    "copy.launch(client, one, four, a, b)\n"
    "copy.launch(client, one, four, b, c)\n"
    "fill.launch(client, one, four, a, 1.0)   # a pure output: not a read\n"
    "copy.launch(client, one, four, a, d)\n",
    [_failure_chain],
    lambda r: len(r.skipped),
    "copy a → b and copy b → c read a failed buffer and are skipped (c points at `broken`, the "
    "root cause, not at the skipped copy); fill only writes `a`, so it runs and repairs it, and "
    "the last copy reads a valid `a`.",
)
EXERCISES[HOW_MANY_SKIPPED.key] = HOW_MANY_SKIPPED
