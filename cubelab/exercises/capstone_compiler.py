"""The compiler track's capstone: a row softmax, a fused op for its exponential and its scale
(`capstone.exp_scale(x, s) = exp(x) * s`), the pass that makes the fusion, and what the cache
does when the passes and the op change.

The fused op's parts are given (`EXP_SCALE`): chapter 11 taught how to lower an op, and the
capstone's work is the kernel and the pass. The pass exercise declares the op for its run when
the notebook has not (`_fused_op_scene`), and never overwrites a part the student gave it. No
softmax kernel lives here — it is the first exercise's answer; the pass is checked on hidden
kernels of the same shape (an exponential times a scale, in a loop, on vectors) and on the
shapes a fusion must leave alone (an exponential used twice, an exponential plus a value).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from cubelab.exercises import register, variants
from cubelab.exercises.base import Misconception
from cubelab.exercises.compiler_kinds import (PassCase, PassExercise, TemplatePass, op_text,
                                              private_op)
from cubelab.exercises.kinds import CountExercise, KernelExercise, ValueExercise
from cubelab.ir.core import KernelDefinition, Op
from cubelab.prelude import *  # noqa: F403

FUSED = "capstone.exp_scale"
EXP_SCALE: dict[str, Any] = {
    "meaning": "exp_scale(x, s) = exp(x) * s of two f32 values of one type (scalars or vectors "
               "of one width): the exponential and the scale of a softmax's last loop, fused",
    "wgsl": "exp({0}) * {1}", "msl": "exp({0}) * {1}", "cuda": "expf({0}) * {1}",
    "cpu": lambda x, s: np.exp(x) * s,
}


def declare_exp_scale() -> None:
    """Declare `capstone.exp_scale` with the parts it does not have yet (the notebook's cell;
    the pass exercise's run when the notebook has not)."""
    from cubelab.compiler import TARGETS
    from cubelab.ir.plugins import add_op, plugin_op
    from cubelab.runtime.cpu import cpu_step

    op = add_op(FUSED, EXP_SCALE["meaning"], arity=2)
    for target in ("wgsl", "msl", "cuda"):
        if target not in op.lowerings:
            TARGETS[target].lower(FUSED, EXP_SCALE[target])
    if plugin_op(FUSED).cpu is None:  # type: ignore[union-attr]
        cpu_step(FUSED, EXP_SCALE["cpu"])


# -- 1. the softmax kernel -----------------------------------------------------------------------

SENTINEL = -7.0


@cube(launch=True)  # noqa: F405
def softmax_template(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    """The answer cell's template: copies each row."""
    row = ABSOLUTE_POS  # noqa: F405
    if row * cols < x.len():
        base = row * cols
        for c in range(cols):
            out[base + c] = x[base + c]


@cube(launch=True)  # noqa: F405
def softmax_without_max(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    """Exponentials of the raw values: exp(100) is inf in f32, and inf / inf is NaN."""
    row = ABSOLUTE_POS  # noqa: F405
    if row * cols < x.len():
        base = row * cols
        total = f32(0.0)  # noqa: F405
        for c in range(cols):
            total += exp(x[base + c])  # noqa: F405
        for c in range(cols):
            out[base + c] = exp(x[base + c]) * (1.0 / total)  # noqa: F405


def _rows(case: tuple[int, int]) -> dict[str, np.ndarray]:
    rows, cols = case
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.normal(0, 3, (rows, cols)).astype(np.float32)
    x[0, : min(cols, 3)] = [100.0, 90.0, -50.0][: min(cols, 3)]  # a row exp alone overflows on
    return {"x": x.reshape(-1), "out": np.full(rows * cols, SENTINEL, dtype=np.float32)}


def _softmax_spec(b: dict[str, np.ndarray], case: tuple[int, int]) -> dict[str, np.ndarray]:
    rows, cols = case
    x = b["x"].astype(np.float64).reshape(rows, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32).reshape(-1)}


def _launch_softmax(kernel: Any, client: Any, h: dict[str, Any], case: tuple[int, int]) -> None:
    rows, cols = case
    kernel.launch(client, CubeCount.Static(-(-rows // 8)), CubeDim.new_1d(8),  # noqa: F405
                  BufferArg.from_raw_parts(h["x"], rows * cols),  # noqa: F405
                  BufferArg.from_raw_parts(h["out"], rows * cols), cols)  # noqa: F405


@variants("capstone_compiler.softmax", [dict(rows=r, cols=c) for r, c in ((5, 33), (11, 7),
                                                                             (3, 64))])
def softmax(v: Any) -> KernelExercise:
    return KernelExercise(
        "capstone_compiler.softmax", "A row softmax",
        "Write `softmax(x, out, cols)`: `x` holds rows of `cols` floats, one unit per row; each "
        "unit writes its row's softmax, `out[r, c] = exp(x[r, c] - m) * (1 / s)` with `m` the "
        "row's maximum and `s` the sum of `exp(x[r, c] - m)` — one division per row, a "
        f"multiplication per item. It is launched on 8 rows of 16 and on {v.rows} rows of "
        f"{v.cols} (cubes of 8 units: the last cube has units with no row).",
        "Subtract the row's maximum before the exponential: exp of a large value is inf in f32 "
        "(exp(89) already), and inf / inf is NaN; exp(x - m) is at most 1. A unit with no row "
        "must not touch memory.",
        (softmax_template, softmax_without_max),
        nudge="Three loops over the row's columns: the maximum, the sum, the writes.",
        worked="A worked step on another reduction, a row mean: `total = f32(0.0)`, then `for c "
        "in range(cols): total += x[base + c]`, then `inv = 1.0 / f32(cols)` once, and each "
        "item is scaled by `inv`.",
        inputs=_rows, spec=_softmax_spec, launch=_launch_softmax,
        cases=((8, 16), (v.rows, v.cols)), rtol=1e-5, atol=1e-6)


# -- 2. where a fusion pass can fuse --------------------------------------------------------------

def fusable_sites(definition: KernelDefinition) -> list[Op]:
    """The `arith.mul` ops of `definition` with an operand that a `math.unary` exp defines and
    nothing else uses: where `exp(a) * s` can become `capstone.exp_scale(a, s)` and the exp go."""
    exps = {op.result.id for op in definition.walk()
            if op.name == "math.unary" and op.attrs.get("fn") == "exp"}
    uses: dict[int, int] = {}
    for op in definition.walk():
        for v in op.operands:
            uses[v.id] = uses.get(v.id, 0) + 1
    return [op for op in definition.walk() if op.name == "arith.mul" and any(
        v.id in exps and uses[v.id] == 1 for v in op.operands)]


@cube(launch=True)  # noqa: F405
def two_exps(x: Slice[f32], out: SliceMut[f32], s: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    out[i] = exp(x[i]) * s + exp(x[i] * 2.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def three_exps(x: Slice[f32], out: SliceMut[f32], s: f32, t: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    out[i] = exp(x[i]) * s + t * exp(-x[i]) + exp(x[i] + 1.0)  # noqa: F405


@cube(launch=True)  # noqa: F405
def shared_exp(x: Slice[f32], out: SliceMut[f32], s: f32, t: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    e = exp(x[i])  # noqa: F405
    out[i] = e * s + e * t


_SITE_KERNELS = {
    "two_exps": (two_exps, "out[i] = exp(x[i]) * s + exp(x[i] * 2.0)", 2),
    "three_exps": (three_exps, "out[i] = exp(x[i]) * s + t * exp(-x[i]) + exp(x[i] + 1.0)", 3),
    "shared_exp": (shared_exp, "e = exp(x[i])\nout[i] = e * s + e * t", 1),
}


def _sites(kernel: Any) -> Callable[[Any], int]:
    def count(client: Any) -> int:
        from cubelab.inspect import instance

        return len(fusable_sites(instance(kernel, cube_dim=CubeDim.new_1d(32)).define()))  # noqa
    return count


@variants("capstone_compiler.sites", [dict(kernel=k) for k in _SITE_KERNELS])
def sites(v: Any) -> ValueExercise:
    kernel, code, exps = _SITE_KERNELS[v.kernel]
    return ValueExercise(
        "capstone_compiler.sites", "Where can a fusion pass fuse?",
        "A fusion pass turns `arith.mul` of an exponential and a scale into one "
        "`capstone.exp_scale` op, and drops the exponential — so only where nothing else uses "
        "the exponential's value. In the kernel below (`x[i]` of a launch with exactly one unit "
        "per item), how many multiplications can it fuse? Answer with a whole number.",
        "Follow each `exp(...)` value in the IR: what uses it? A product can absorb the "
        "exponential only if it is its one use; an exponential that is added, or that feeds "
        "two products, stays.",
        (exps,),
        nudge="Count the exponentials, then ask of each: is its value multiplied, and by "
        "nothing else used?",
        worked="Another kernel: `out[i] = exp(x[i]) * exp(x[i])` — one exponential op? No: two "
        "`math.unary exp` ops, each used once, by the same product: one fusion, which keeps the "
        "other exponential as its operand.",
        misconceptions=[Misconception("one per exponential", exps,
                                      "Not every exponential is multiplied, and one that is "
                                      "used twice must stay.")],
        code=code, value=_sites(kernel),
        explanation="A fusion replaces a product whose operand is an exponential used nowhere "
        "else: `exp(x) * s` and `t * exp(-x)` fuse; `exp(x * 2.0)` is added, and `e` feeds two "
        "products (fusing one would still need `e` for the other).")


# -- 3. the fusion pass ---------------------------------------------------------------------------

N = 32
ONE, DIM = CubeCount.Static(1), CubeDim.new_1d(N)  # noqa: F405


@cube(launch=True)  # noqa: F405
def scaled_exp(x: Slice[f32], out: SliceMut[f32], s: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    out[i] = exp(x[i] - 1.0) * s  # noqa: F405


@cube(launch=True)  # noqa: F405
def scale_first4(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]], s: f32):  # noqa
    i = ABSOLUTE_POS  # noqa: F405
    out[i] = s * exp(x[i])  # noqa: F405


@cube(launch=True)  # noqa: F405
def exp_kept(x: Slice[f32], out: SliceMut[f32], s: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    e = exp(x[i])  # noqa: F405
    out[i] = e * s + e + exp(x[i] * 0.5) + s


@cube(launch=True)  # noqa: F405
def rows_scaled(x: Slice[f32], out: SliceMut[f32], cols: u32):  # noqa: F405
    row = ABSOLUTE_POS  # noqa: F405
    if row * cols < x.len():
        base = row * cols
        inv = 1.0 / f32(cols)  # noqa: F405
        for c in range(cols):
            out[base + c] = exp(x[base + c]) * inv  # noqa: F405


def _fuse_case(name: str, kernel: Any, n: int, scalars: tuple[Any, ...],
               spec: Callable[[np.ndarray], np.ndarray], trap: str = "") -> PassCase:
    def launch(k: Any, client: Any, h: dict[str, Any]) -> None:
        k.launch(client, ONE, DIM, BufferArg.from_raw_parts(h["x"], n),  # noqa: F405
                 BufferArg.from_raw_parts(h["out"], n), *scalars)  # noqa: F405

    return PassCase(name, kernel, lambda: {"x": np.linspace(-3, 3, n, dtype=np.float32),
                                           "out": np.zeros(n, dtype=np.float32)}, launch, trap,
                    lambda b: {"out": spec(b["x"].astype(np.float64)).astype(np.float32)})


FUSE_CASES = [
    _fuse_case("an exponential times a scalar", scaled_exp, N, (1.5,),
               lambda x: np.exp(x - 1) * 1.5),
    _fuse_case("a scalar times an exponential, on vectors", scale_first4, 4 * N, (0.5,),
               lambda x: 0.5 * np.exp(x),
               trap="the exponential is the right operand here, and a vec4: the scale is the "
               "splat of `s`, of the product's type"),
    _fuse_case("an exponential used twice, and one added", exp_kept, N, (2.0,),
               lambda x: np.exp(x) * 2 + np.exp(x) + np.exp(x * 0.5) + 2,
               trap="`e` feeds a product and a sum: the product may fuse, but `e` must stay for "
               "the sum; `exp(x * 0.5)` is added, not scaled"),
    _fuse_case("a loop over a row", rows_scaled, N, (8,), lambda x: np.exp(x) / 8.0),
]


def fused(before: KernelDefinition, after: KernelDefinition) -> str | None:
    """What a fusion pass left undone: a product it could have fused, or no fusion at all."""
    left = fusable_sites(after)
    if left:
        return f"{op_text(left[0])} still multiplies an exponential used nowhere else."
    if fusable_sites(before) and not any(op.name == FUSED for op in after.walk()):
        return f"no `{FUSED}` op is in the IR."
    return None


@contextmanager
def _fused_op_scene() -> Iterator[None]:
    from cubelab.ir.plugins import PLUGIN_OPS, remove_op

    added = FUSED not in PLUGIN_OPS
    declare_exp_scale()
    try:
        yield
    finally:
        if added and FUSED in PLUGIN_OPS:
            remove_op(FUSED)


FUSE = PassExercise(
    "capstone_compiler.fuse", "The fusion pass",
    f"Write a pass that turns each `arith.mul` whose operand is an exponential (`math.unary` "
    f"with fn `exp`) used nowhere else into one `{FUSED}` op of the exponential's operand and "
    "the other factor — in that order, whichever side the exponential was on — and removes the "
    "exponential. Hidden kernels scale exponentials by scalars, on vectors, in a loop, and use "
    "an exponential twice; the results must match, and no such product may be left.",
    f"`{FUSED}(x, s)` takes the exponential's *operand* x and the scale s, both of the "
    "product's type. Count uses over the whole kernel first: an exponential with a second use "
    "stays (the product may still fuse, from its operand). The fused op takes over the "
    "product's result value, so every use of the product finds it.",
    (TemplatePass("fuse-exp-scale"),),
    nudge="Two walks: one to find the exponentials and count uses, one over the blocks to "
    "rewrite products and drop the exponentials they absorbed.",
    worked="A worked step on another fusion, a multiply-add: `%v7 = arith.mul %v3, %v4` used "
    "only by `%v9 = arith.add %v7, %v5` becomes `%v9 = math.fma %v3, %v4, %v5` — "
    "`op.name, op.operands = 'math.fma', [%v3, %v4, %v5]` on the add, and %v7's op removed.",
    cases=FUSE_CASES, expect=fused, scene=_fused_op_scene, rtol=1e-5, atol=1e-6,
)


# -- 4. the cache, at the end of the project ------------------------------------------------------

_CACHE_STEPS: dict[str, list[str]] = {
    "a": ["launch", "pass", "launch", "launch", "same pass", "launch"],
    "b": ["pass", "launch", "spelling", "launch", "same spelling", "launch", "no pass", "launch",
          "pass", "launch"],
    "c": ["launch", "launch", "pass", "launch", "same pass", "launch", "spelling", "launch",
          "launch"],
}
_STEP_CODE = {
    "launch": "rows_scaled.launch(client, ...)",
    "pass": "client.set_compilation_options(extra_passes=[FuseExpScale()])",
    "same pass": "client.set_compilation_options(extra_passes=[FuseExpScale()])   # again",
    "no pass": "client.set_compilation_options(extra_passes=[])",
    "spelling": 'TARGETS["wgsl"].lower("capstone.exp_scale", "{1} * exp({0})")',
    "same spelling": 'TARGETS["wgsl"].lower("capstone.exp_scale", "{1} * exp({0})")   # again',
}


class _FuseForCount:
    """A stand-in fusion for the count below (its work does not change the count): it fuses
    nothing, so this module holds no solution; the count depends only on its identity."""

    name = "fuse-exp-scale"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        return definition


def _cache_program(v: Any) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        from cubelab.compiler import TARGETS

        before = client.compilation_options()
        x = client.create_from_slice(f32.as_bytes(np.linspace(-1, 1, N, dtype=np.float32)))  # noqa
        out = client.create_from_slice(f32.as_bytes(np.zeros(N, dtype=np.float32)))  # noqa
        with private_op("cache", EXP_SCALE["meaning"], 2,
                        {t: EXP_SCALE[t] for t in ("wgsl", "msl", "cuda", "cpu")}) as name:
            try:
                for step in _CACHE_STEPS[v.steps]:
                    if step == "launch":
                        rows_scaled.launch(client, ONE, CubeDim.new_1d(4),  # noqa: F405
                                           BufferArg.from_raw_parts(x, N),  # noqa: F405
                                           BufferArg.from_raw_parts(out, N), 8)  # noqa: F405
                        client.read_one(out)
                    elif step in ("pass", "same pass"):
                        client.set_compilation_options(extra_passes=[_FuseForCount()])
                    elif step == "no pass":
                        client.set_compilation_options(extra_passes=[])
                    else:
                        TARGETS["wgsl"].lower(name, "{1} * exp({0})")
            finally:
                client.set_compilation_options(**before.as_dict())
    return run


@variants("capstone_compiler.compiles", [dict(steps=s) for s in _CACHE_STEPS])
def compiles(v: Any) -> CountExercise:
    launches = _CACHE_STEPS[v.steps].count("launch")
    return CountExercise(
        "capstone_compiler.compiles", "The project's cache: how many compiles?",
        "After `client.clear_cache()`, with `capstone.exp_scale` declared and spelled "
        "`exp({0}) * {1}` in WGSL: the program below launches `rows_scaled` (one KernelId), "
        "turns the fusion pass on and off, and respells the fused op. How many compiles?",
        "The cache's key is the KernelId and the options (`options_key`: the passes by identity, "
        "every plug-in op by digest). A change of either — another pass list, another "
        "spelling — empties the cache; the same passes or the same spelling again change "
        "nothing.",
        (1, launches),
        nudge="Mark the lines that change the passes or an op; count the launches right after a "
        "mark, plus the first.",
        worked="Another program: launch; passes=[P()]; launch; lower(op, A) with A its spelling "
        "already; launch — two compiles.",
        misconceptions=[Misconception("the KernelId did not change", 1,
                                      "The KernelId never changes here; the code does.")],
        code="\n".join(_STEP_CODE[s] for s in _CACHE_STEPS[v.steps]),
        launches=[_cache_program(v)],
        explanation="One compile for the first launch, and one after each change to the "
        "options or to an op — whether or not the kernel uses the changed op, and whether or "
        "not the pass finds anything to fuse: the cache cannot know without compiling.")


register(FUSE)
