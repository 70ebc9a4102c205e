"""Chapter 11 · Lower an op (the compiler track): a plug-in op (`cubelab.ir.plugins`) taken
through every layer — its meaning and effect in the IR, its spelling in WGSL and in each C-family
dialect, its step in the CPU runtime — the errors that say which part is missing, the cache that
forgets a pipeline when an op changes, and lowering an op by a pass instead.

The checks declare ops of their own (`compiler_kinds.private_op`: `check.<name>_<n>`, removed
however the check ends), so a student's own `student.*` ops are never touched; the hidden
kernels below call whichever op a check binds to them (`_OP`, `_LESSON`: module globals the
kernels read when they expand). Each change of an op clears the client's pipeline cache — the
lesson of exercise 11.5, and the reason a check can reuse these kernels safely.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from cubelab.exercises import register, variants
from cubelab.exercises.base import Misconception
from cubelab.exercises.compiler_kinds import (LoweringExercise, OpKernel, PassCase,
                                              PassExercise, TemplatePass, op_text, private_op,
                                              set_parts)
from cubelab.exercises.kinds import CallsExercise, CountExercise, ValueExercise
from cubelab.ir.core import KernelDefinition
from cubelab.prelude import *  # noqa: F403

N = 32
ONE, DIM = CubeCount.Static(1), CubeDim.new_1d(N)  # noqa: F405

# The functions the variants lower: meaning, numpy (float64), and a part for each layer.
FUNCTIONS: dict[str, dict[str, Any]] = {
    "softplus": dict(
        meaning="softplus(x) = log(1 + exp(x)) of an f32 scalar or vector, computed as written "
        "(so inf for x > 88)",
        numpy=lambda x: np.log1p(np.exp(x)),
        wgsl="log(1.0 + exp({0}))", msl="log(1.0f + exp({0}))", cuda="logf(1.0f + expf({0}))",
        cpu=lambda x: np.log(np.float32(1) + np.exp(x)), marker="logf("),
    "sigmoid": dict(
        meaning="sigmoid(x) = 1 / (1 + exp(-x)) of an f32 scalar or vector",
        numpy=lambda x: 1.0 / (1.0 + np.exp(-x)),
        wgsl="1.0 / (1.0 + exp(-{0}))", msl="1.0f / (1.0f + exp(-{0}))",
        cuda="1.0f / (1.0f + expf(-{0}))",
        cpu=lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)), marker="expf("),
    "silu": dict(
        meaning="silu(x) = x / (1 + exp(-x)) of an f32 scalar or vector",
        numpy=lambda x: x / (1.0 + np.exp(-x)),
        wgsl="{0} / (1.0 + exp(-{0}))", msl="{0} / (1.0f + exp(-{0}))",
        cuda="{0} / (1.0f + expf(-{0}))",
        cpu=lambda x: x / (np.float32(1) + np.exp(-x)), marker="expf("),
    "softsign": dict(
        meaning="softsign(x) = x / (1 + |x|) of an f32 scalar or vector",
        numpy=lambda x: x / (1.0 + np.abs(x)),
        wgsl="{0} / (1.0 + abs({0}))", msl="{0} / (1.0f + abs({0}))",
        cuda="{0} / (1.0f + fabsf({0}))",
        cpu=lambda x: x / (np.float32(1) + np.abs(x)), marker="fabsf("),
}
# The functions a student lowers (chapter 11's own example, softplus, is not one of them).
VARIANT_FUNCTIONS = ("sigmoid", "silu", "softsign")

_OP: Any = None  # the op a check binds its hidden kernels to (an `intrinsic`)


def _bind(fn: Any) -> None:
    global _OP
    _OP = fn


@cube(launch=True)  # noqa: F405
def op_scalar(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _OP(x[i])


@cube(launch=True)  # noqa: F405
def op_vec4(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _OP(x[i])


@cube(launch=True)  # noqa: F405
def op_composed(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _OP(x[i] * 0.5) - _OP(-x[i])


def _run(kernel: Any, client: Any, x: np.ndarray) -> np.ndarray:
    """One cube of 32 units over `x` (32 scalars, or 32 vectors' worth)."""
    xs = np.ascontiguousarray(x, dtype=np.float32)
    hx = client.create_from_slice(f32.as_bytes(xs))  # noqa: F405
    hout = client.create_from_slice(f32.as_bytes(np.zeros_like(xs)))  # noqa: F405
    kernel.launch(client, ONE, DIM, BufferArg.from_raw_parts(hx, xs.size),  # noqa: F405
                  BufferArg.from_raw_parts(hout, xs.size))  # noqa: F405
    return f32.from_bytes(client.read_one(hout))  # noqa: F405


def _kernels(f: Callable[[np.ndarray], np.ndarray]) -> list[OpKernel]:
    return [OpKernel("the op on each f32", op_scalar, _run, f),
            OpKernel("the op on a Vector[f32, 4]", op_vec4, _run, f, 4 * N),
            OpKernel("f(x * 0.5) - f(-x)", op_composed, _run,
                     lambda x: f(x * 0.5) - f(-x))]


def _inputs(n: int) -> list[np.ndarray]:
    return [np.linspace(-6, 6, n)]


# -- 11.1 where a missing part is met ------------------------------------------------------------

_PARTS = {"a": ("wgsl", "cpu"), "b": ("msl", "cuda"), "c": ("cpu", "msl")}


class _PartsCalls(CallsExercise):
    """A calls exercise whose scene is a private op with some of its parts."""

    def run(self, client: Any) -> tuple[set[str], dict[str, str]]:
        from cubelab.prelude import intrinsic

        f = FUNCTIONS["softplus"]
        parts = {p: f[p] for p in _PARTS[self.variant.parts]}
        with private_op("parts", f["meaning"], parts=parts) as name:
            _bind(intrinsic(name))
            try:
                return super().run(client)
            finally:
                _bind(None)


def _calls(client: Any) -> dict[str, Callable[[], Any]]:
    from cubelab.inspect import instance, ir, msl, source_of, wgsl
    from cubelab.runtime.device import Device

    k = instance(op_scalar, cube_dim=DIM)
    cpu = Device.cpu().client()
    return {"ir": lambda: ir(k), "wgsl": lambda: wgsl(k), "msl": lambda: msl(k),
            "cuda": lambda: source_of(k, "cuda"),
            "cpu": lambda: _run(op_scalar, cpu, np.linspace(-1, 1, N))}


def _parts_code(v: Any) -> str:
    lines = ['add_op("student.softplus", "softplus(x) = log(1 + exp(x)) ...")']
    for p in _PARTS[v.parts]:
        lines.append(f'cpu_step("student.softplus", lambda x: ...)' if p == "cpu" else
                     f'TARGETS["{p}"].lower("student.softplus", "...")')
    lines += ['softplus = intrinsic("student.softplus")', "",
              "inspect.ir(k)                      # ir",
              "inspect.wgsl(k)                    # wgsl",
              "inspect.msl(k)                     # msl",
              'inspect.source_of(k, "cuda")       # cuda',
              "op_scalar.launch(cpu_client, ...); cpu_client.read_one(out)   # cpu"]
    return "\n".join(lines)


@variants("ch11.what_fails", [dict(parts=p) for p in _PARTS])
def what_fails(v: Any) -> CallsExercise:
    missing = {"wgsl", "msl", "cuda", "cpu"} - set(_PARTS[v.parts])
    return _PartsCalls(
        "ch11.what_fails", "A half-lowered op: which calls raise?",
        f"An op is declared and given only its {' and '.join(_PARTS[v.parts])} part(s) (below); "
        "`k` is `op_scalar`, a kernel that calls it. Which of the five calls raise? Answer with "
        "their names, e.g. `{\"wgsl\", \"cpu\"}`, or `set()` for none.",
        "Each layer meets the op where it produces something from it: a target when it writes "
        "its source (asked for by name, its error is raised), the CPU runtime when it builds its "
        "plan (the launch fails on the buffers it writes, and the read says why). The IR layer "
        "has all it needs once the op is declared.",
        ({"wgsl", "msl", "cuda", "cpu", "ir"}, set()),
        nudge="Go through the layers: which part does each call need?",
        worked="Another op, given only its WGSL spelling: `inspect.wgsl` works, `inspect.msl` "
        "raises saying `TARGETS['msl'].lower(...)` is missing; a wgpu launch runs (the MSL "
        "beside it becomes a comment).",
        misconceptions=[Misconception("nothing fails before a launch", {"cpu"},
                                      "Asking a target for its source runs its code "
                                      "generation: nothing waits for a launch."),
                        Misconception("everything but the IR", {"wgsl", "msl", "cuda", "cpu"},
                                      "Some parts were given.")],
        code=_parts_code(v), calls=_calls, error=Exception,
        explanation=f"{', '.join(sorted(missing))}: each raises naming the call that adds its "
        "part; the IR needs only the declaration.")


# -- 11.2 the WGSL spelling, 11.4 the CPU step ----------------------------------------------------

def _lowering(key: str, part: str, fn: str, title: str, question: str, hint: str,
              wrong: tuple[Any, ...], **tiers: Any) -> LoweringExercise:
    f = FUNCTIONS[fn]
    return LoweringExercise(key, title, question, hint, wrong, part=part, meaning=f["meaning"],
                            kernels=_kernels(f["numpy"]), bind=_bind, inputs=_inputs, **tiers)


@variants("ch11.wgsl_spelling", [dict(fn=f) for f in VARIANT_FUNCTIONS])
def wgsl_spelling(v: Any) -> LoweringExercise:
    f = FUNCTIONS[v.fn]
    return _lowering(
        "ch11.wgsl_spelling", "wgsl", v.fn, "Spell an op in WGSL",
        f"Your op's meaning: **{f['meaning']}**. Give its WGSL spelling: a WGSL expression of "
        "the operand `{0}`, as a string (what `TARGETS[\"wgsl\"].lower(op, spelling)` takes). "
        "The check declares the op, launches hidden kernels that call it — on an f32, on a "
        "`Vector[f32, 4]`, twice in one expression — on a WebGPU device, and compares with the "
        "meaning.",
        "WGSL's math builtins are `exp`, `log`, `sqrt`, ...: overloaded for f32 and its vectors, "
        "so one spelling serves both. Float literals are written `1.0` (an abstract float takes "
        "the operand's type); the operand is `{0}`, never a name.",
        (f["cuda"], f["wgsl"].replace("{0}", "x"), "exp({0})"),
        nudge="Write the meaning with WGSL's names and put `{0}` where x is.",
        worked="A worked step on another op, `cube(x) = x * x * x`: its spelling is "
        "`\"{0} * {0} * {0}\"` — `{0}` three times, since the emitter puts the operand's name "
        "there.",
        misconceptions=[Misconception("C's names in WGSL", f["cuda"],
                                      "`expf`/`logf` are C's float functions; WGSL has none of "
                                      "those names.")])


@variants("ch11.cpu_step", [dict(fn=f) for f in VARIANT_FUNCTIONS])
def cpu_step_exercise(v: Any) -> LoweringExercise:
    f = FUNCTIONS[v.fn]
    return _lowering(
        "ch11.cpu_step", "cpu", v.fn, "Give an op its CPU step",
        f"Your op's meaning: **{f['meaning']}**. Give its CPU step: a function of the operand's "
        "numpy array (what `cpu_step(op, fn)` takes). The check launches hidden kernels that "
        "call the op on the CPU runtime and compares with the meaning.",
        "The CPU runtime runs a step once per chunk of lanes, on numpy arrays: one row per unit "
        "(a vector's components along the last axis). Write it with numpy's elementwise "
        "functions, in f32 (np.float32 constants), as the GPU computes.",
        (lambda x: math.exp(x), lambda x: np.exp(x)),
        nudge="Your function gets arrays, not numbers.",
        worked="A worked step on another op, `cube(x) = x * x * x`: `lambda x: x * x * x` — "
        "numpy multiplies the whole array at once; `lambda x: math.pow(x, 3)` fails, because "
        "`math` takes one number.")


# -- 11.3 per component in the C family -----------------------------------------------------------

@cube(launch=True)  # noqa: F405
def vec2_once(x: Slice[Vector[f32, 2]], out: SliceMut[Vector[f32, 2]]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _OP(x[i])


@cube(launch=True)  # noqa: F405
def vec4_twice(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _OP(x[i]) + _OP(x[i] * 2.0)


_COMPONENT_KERNELS = {
    "vec2_once": (vec2_once, "out[i] = softplus(x[i])          # x: Slice[Vector[f32, 2]]", 1),
    "vec4_twice": (vec4_twice, "out[i] = softplus(x[i]) + softplus(x[i] * 2.0)   "
                   "# x: Slice[Vector[f32, 4]]", 2),
    "vec4_once": (op_vec4, "out[i] = softplus(x[i])          # x: Slice[Vector[f32, 4]]", 1),
}


def _count_in_cuda(kernel: Any) -> Callable[[Any], int]:
    def count(client: Any) -> int:
        from cubelab.inspect import compiled, instance
        from cubelab.prelude import intrinsic

        f = FUNCTIONS["softplus"]
        with private_op("components", f["meaning"],
                        parts={t: f[t] for t in ("wgsl", "msl", "cuda", "cpu")}) as name:
            _bind(intrinsic(name))
            try:
                return compiled(instance(kernel, cube_dim=DIM)).sources["cuda"].source.count(
                    f["marker"])
            finally:
                _bind(None)
    return count


@variants("ch11.components_in_c", [dict(kernel=k) for k in _COMPONENT_KERNELS])
def components_in_c(v: Any) -> ValueExercise:
    kernel, code, calls = _COMPONENT_KERNELS[v.kernel]
    return ValueExercise(
        "ch11.components_in_c", "One op, how many calls in CUDA C++?",
        "`softplus`'s CUDA spelling is `logf(1.0f + expf({0}))`. In the CUDA C++ of the kernel "
        "below, how many times does `logf(` appear? Answer with a whole number.",
        "The C-family emitter writes a cubelab vector as a struct (`float_4 { float i_0; ... }`, "
        "as CubeCL's C++ backend does) and vector arithmetic one component at a time — a "
        "plug-in op's spelling too. WGSL's `vec4<f32>` takes `log` and `exp` whole.",
        (calls,),
        nudge="How is a Vector[f32, N] written in the C family?",
        worked="Another kernel: `out[i] = x[i] * 2.0` on Vector[f32, 4] is one `*` in WGSL "
        "(`v5 * vec4<f32>(2.0f)`) and four in CUDA (`v5.i_0 * 2.0f`, ... `v5.i_3 * 2.0f`).",
        misconceptions=[Misconception("once per call, as in WGSL", calls,
                                      "That is WGSL's count, where a vector is one value.")],
        code=code, value=_count_in_cuda(kernel),
        explanation="Once per component per call: the C family has no vector math on its "
        "`float_N` structs, so the emitter applies the spelling to each component.")


# -- 11.5 the cache forgets an op that changed ----------------------------------------------------

def _cpu_a(x: Any) -> Any:
    return np.log(np.float32(1) + np.exp(x))


def _cpu_b(x: Any) -> Any:
    return np.log1p(np.exp(x)).astype(np.float32)


_SOFT = FUNCTIONS["softplus"]
_CACHE_STEPS: dict[str, list[tuple[str, Any]]] = {
    "a": [("parts", {"wgsl": _SOFT["wgsl"], "cpu": _cpu_a}), ("launch", None), ("launch", None),
          ("parts", {"wgsl": _SOFT["wgsl"]}), ("launch", None), ("parts", {"cpu": _cpu_b}),
          ("launch", None)],
    "b": [("parts", {"wgsl": _SOFT["wgsl"], "cpu": _cpu_a}), ("launch", None),
          ("parts", {"msl": _SOFT["msl"]}), ("launch", None), ("launch", None),
          ("other", None), ("launch", None)],
    "c": [("parts", {"wgsl": _SOFT["wgsl"], "cpu": _cpu_a}), ("launch", None),
          ("parts", {"wgsl": "log(exp({0}) + 1.0)"}), ("launch", None),
          ("parts", {"wgsl": _SOFT["wgsl"]}), ("launch", None), ("parts", {"cpu": _cpu_b}),
          ("launch", None), ("launch", None)],
}


def _cache_program(v: Any) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        from cubelab.prelude import intrinsic

        with private_op("cache", _SOFT["meaning"]) as name:
            _bind(intrinsic(name))
            try:
                for what, parts in _CACHE_STEPS[v.steps]:
                    if what == "launch":
                        _run(op_scalar, client, np.linspace(-1, 1, N))
                    elif what == "parts":
                        set_parts(name, parts)
                    else:
                        with private_op("other", "another op, used by no kernel here"):
                            pass
            finally:
                _bind(None)
    return run


def _cache_code(v: Any) -> str:
    def part(target: str, value: Any) -> str:
        if target == "cpu":
            return f"cpu_step(op, {value.__name__})"
        return f'TARGETS["{target}"].lower(op, "{value}")'

    lines = []
    for what, parts in _CACHE_STEPS[v.steps]:
        if what == "launch":
            lines.append("op_scalar.launch(client, ...)")
        elif what == "parts":
            lines += [part(t, p) for t, p in parts.items()]
        else:
            lines.append('add_op("student.other", "...")   # another op; no kernel here uses it')
    return "\n".join(lines)


@variants("ch11.cache_knows_ops", [dict(steps=s) for s in _CACHE_STEPS])
def cache_knows_ops(v: Any) -> CountExercise:
    launches = sum(w == "launch" for w, _ in _CACHE_STEPS[v.steps])
    return CountExercise(
        "ch11.cache_knows_ops", "An op changes: how many compiles?",
        "`op` is declared; then the program below gives it parts and launches `op_scalar` "
        "(which calls it) — the same KernelId every time. `_cpu_a` and `_cpu_b` are two CPU "
        "steps of the same meaning, written differently. How many compiles on your client?",
        "A plug-in op's parts are code the KernelId does not see. Every change to any plug-in "
        "op — a spelling or a step that differs from the one it had, an op added or removed — "
        "empties each client's pipeline cache; giving a part the very same value again "
        "changes nothing.",
        (1, launches),
        nudge="Mark each line that changes an op (a different value than before) — then count "
        "the launches that come right after a mark, plus the first.",
        worked="Another program: lower(op, A); launch; lower(op, A); launch; lower(op, B); "
        "launch — two compiles: the first launch and the one after B.",
        misconceptions=[Misconception("the KernelId did not change", 1,
                                      "The KernelId did not change — but the code it compiles "
                                      "to did.")],
        code=_cache_code(v), launches=[_cache_program(v)],
        explanation="A compile follows every change to an op, on whichever target it is: the "
        "MSL and CUDA shown beside a compile are part of what it produced, and another op's "
        "arrival is a change too (the cache keeps no list of which kernel uses which op, so it "
        "forgets all).")


# -- 11.6 lower an op by a pass -------------------------------------------------------------------

_LESSON: Any = None


@cube(launch=True)  # noqa: F405
def lesson_scalar(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _LESSON(x[i]) * 2.0


@cube(launch=True)  # noqa: F405
def lesson_vec4(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = _LESSON(x[i] - 1.0)


@cube(launch=True)  # noqa: F405
def lesson_branch(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        if x[i] > 0.0:
            out[i] = _LESSON(x[i])
        else:
            out[i] = _LESSON(_LESSON(x[i]))


def _lesson_scene(fn: str) -> Callable[[], Any]:
    @contextmanager
    def scene() -> Iterator[None]:
        global _LESSON
        from cubelab.ir.plugins import PLUGIN_OPS, add_op, remove_op
        from cubelab.prelude import intrinsic

        name = f"lesson.{fn}"
        added = name not in PLUGIN_OPS
        add_op(name, FUNCTIONS[fn]["meaning"])  # the same declaration again changes nothing
        _LESSON = intrinsic(name)
        try:
            yield
        finally:
            _LESSON = None
            if added and name in PLUGIN_OPS:
                remove_op(name)
    return scene


def _lesson_case(label: str, kernel: Any, width: int, f: Callable[[np.ndarray], np.ndarray],
                 trap: str = "") -> PassCase:
    n = N * width

    def launch(k: Any, client: Any, h: dict[str, Any]) -> None:
        k.launch(client, ONE, DIM, BufferArg.from_raw_parts(h["x"], n),  # noqa: F405
                 BufferArg.from_raw_parts(h["out"], n))  # noqa: F405

    def spec(b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"out": np.asarray(f(b["x"].astype(np.float64)), dtype=np.float32)}

    return PassCase(label, kernel, lambda: {"x": np.linspace(-4, 4, n, dtype=np.float32),
                                            "out": np.zeros(n, dtype=np.float32)},
                    launch, trap, spec)


def _lowered(fn: str) -> Callable[[KernelDefinition, KernelDefinition], str | None]:
    def expect(before: KernelDefinition, after: KernelDefinition) -> str | None:
        for op in after.walk():
            if op.name == f"lesson.{fn}":
                return f"{op_text(op)} is still there: no target has a spelling for it."
        return None
    return expect


@variants("ch11.lower_by_pass", [dict(fn=f) for f in VARIANT_FUNCTIONS])
def lower_by_pass(v: Any) -> PassExercise:
    f = FUNCTIONS[v.fn]
    numpy = f["numpy"]
    return PassExercise(
        "ch11.lower_by_pass", "Lower an op by a pass",
        f"The op `lesson.{v.fn}` — {f['meaning']} — is declared, but no target has a spelling "
        "for it and the CPU runtime no step. Write a pass that replaces each `lesson."
        f"{v.fn}` op by cubelab's own ops (`math.unary` with its `fn`: `exp`, `abs`, ...; "
        "`arith.*`; constants), so every target can compile the kernel. Hidden kernels call it on "
        "f32 and on Vector[f32, 4], inside a branch, and on its own result; the results must "
        "match the meaning on your runtime and the CPU runtime, and no `lesson` op may be left.",
        "Each new op needs a fresh result value (ids above `max_value_id(definition)`), of the "
        "operand's type — a vector stays a vector: a constant is always a scalar (OPS), so a "
        "constant used with a Vector[f32, 4] is splatted first (`vector.splat`). The last op you "
        "add takes over the op's own result value, so every use of it still finds it.",
        (TemplatePass("lower-lesson-op"),),
        nudge="Work block by block; where the op was, put the ops that compute its meaning.",
        worked="A worked step on another op, `lesson.cube(x) = x * x * x` on a vec4 `%v5`: "
        "`%v40 = arith.mul %v5, %v5 : vec4<f32>`, then the op's own result "
        "`%v9 = arith.mul %v40, %v5 : vec4<f32>` — no constant needed there; `1.0` beside a "
        "vec4 would be `%v41 = arith.constant {value = 1.0} : f32`, `%v42 = vector.splat %v41 : "
        "vec4<f32>`.",
        cases=[_lesson_case("the op on each f32, doubled", lesson_scalar, 1,
                            lambda x: numpy(x) * 2),
               _lesson_case("the op on a Vector[f32, 4]", lesson_vec4, 4,
                            lambda x: numpy(x - 1),
                            trap="a Vector[f32, 4] operand: each op you add gives a vec4, and a "
                            "constant beside it must be splatted (a constant is a scalar)"),
               _lesson_case("the op in both branches, and of itself", lesson_branch, 1,
                            lambda x: np.where(x > 0, numpy(x), numpy(numpy(x))),
                            trap="ops inside an `scf.if` branch, and an op whose operand is the "
                            "result of another one")],
        expect=_lowered(v.fn), scene=_lesson_scene(v.fn), rtol=2e-5, atol=1e-6)
