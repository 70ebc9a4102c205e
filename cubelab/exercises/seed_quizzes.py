"""The first wave's two quizzes, kept under their names (`cubelab.widgets.Quiz`, the terminal
demo and the tests use them): seed 000's "same add, four launches" and seed 001's "how far
does a failure travel?"."""

from __future__ import annotations

from typing import Any

from cubelab.exercises import _COMPILE_HINT, _COMPILE_NUDGE, _COMPILE_WORKED, register
from cubelab.exercises.kinds import CountExercise

Launch = Any


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


HOW_MANY_COMPILES = CountExercise(
    "seed000-how-many-compiles",
    "Same add, four launches: how many compiles?",
    "`run_add(client, checked, relu)` launches `add` once on 6 elements with 8 units; `checked` "
    "picks `launch` or `launch_unchecked`. The four calls below run in order with the debug log "
    "on. How many times does `[START_KERNEL_COMPILATION]` appear?",
    _COMPILE_HINT,
    (4, 2, 1),
    code="run_add(client, checked=True,  relu=False)\n"
    "run_add(client, checked=False, relu=False)\n"
    "run_add(client, checked=True,  relu=True)\n"
    "run_add(client, checked=True,  relu=False)\n",
    launches=[_run_add(True, False), _run_add(False, False), _run_add(True, True),
              _run_add(True, False)],
    explanation="The execution mode and the Comptime `relu` are KernelId fields, so launches 2 "
    "and 3 are new keys; launch 4 has launch 1's KernelId and reuses its pipeline (input data "
    "is not in the key).",
    nudge=_COMPILE_NUDGE,
    worked=_COMPILE_WORKED,
)


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


HOW_MANY_SKIPPED = CountExercise(
    "seed001-how-many-skipped",
    "A failure travels: how many launches are skipped?",
    "`broken` fails while it is being compiled (its expansion raises), so its output `a` carries "
    "the error. Then: `copy a → b`, `copy b → c`, `fill a` (writes a fresh value), `copy a → d`. "
    "A launch that reads a failed buffer is skipped and its outputs point at the root cause. How "
    "many of the five launches are skipped?",
    "A launch is skipped when a buffer it reads carries a failure; a pure output is not a read, "
    "so writing a failed buffer repairs it instead.",
    (3, 1, 0),
    code="broken.launch(client, one, four, a)      # fails: a carries the error\n"
    "copy.launch(client, one, four, a, b)\n"
    "copy.launch(client, one, four, b, c)\n"
    "fill.launch(client, one, four, a, 1.0)   # a pure output: not a read\n"
    "copy.launch(client, one, four, a, d)\n",
    launches=[_failure_chain],
    count=lambda r: len(r.skipped),
    what="skipped launches",
    explanation="copy a → b and copy b → c read a failed buffer and are skipped (c points at "
    "`broken`, the root cause, not at the skipped copy); fill only writes `a`, so it runs and "
    "repairs it, and the last copy reads a valid `a`.",
    nudge="Follow the failure buffer by buffer: after each launch, which buffers carry it?",
    worked="A worked example on another chain: `broken → p`, `scale p → q`, `inc q`. scale reads "
    "p (failed): skipped, q now points at `broken`. inc reads q (failed): skipped too. Two skips; "
    "had the last launch written q as a pure output, it would have run and repaired q.",
)

register(HOW_MANY_COMPILES, HOW_MANY_SKIPPED)
