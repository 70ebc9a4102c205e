"""Chapter 10 · Write a pass (the compiler track): the IR a pass sees, four passes a student
writes — constant folding, strength reduction, dead-code elimination, loop-invariant hoisting —
checked on hidden kernels, which sources a pass changes, and why the cache must know the passes.

Each pass exercise runs the student's pass on hidden kernels (`compiler_kinds.PassExercise`):
the results must be those of the kernel without the pass, on the student's runtime and on the
CPU runtime, and the IR after it must show the change. Each hidden kernel sets one trap a real
pass must not fall into: a folded sum that must wrap (u32) or round (f32), a local whose value
depends on the unit, a multiplication by 6 next to one by 8, a store nobody reads back, an
atomic add whose old value nobody uses, a load whose address does not change in the loop but
whose value does. The near-solutions that fall into them are in the tests
(`tests/test_compiler_track.py`), not here: this module is importable by a student.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from cubelab.exercises import register, variants
from cubelab.exercises.base import Misconception
from cubelab.exercises.compiler_kinds import PassCase, PassExercise, TemplatePass, op_text
from cubelab.exercises.kinds import CountExercise, ValueExercise
from cubelab.ir.analysis import is_pure
from cubelab.ir.core import KernelDefinition
from cubelab.prelude import *  # noqa: F403
from cubelab.ir.types import F32, U32  # after the prelude: the IR's types, not the kernels'

N = 32  # items of every hidden kernel: one cube of 32 units
ONE, DIM = CubeCount.Static(1), CubeDim.new_1d(N)  # noqa: F405


def _case(name: str, kernel: Any, buffers: Callable[[], dict[str, np.ndarray]],
          scalars: tuple[Any, ...] = (), trap: str = "") -> PassCase:
    """A hidden kernel launched as one cube of N units, its buffers in the signature's order,
    then its scalars."""
    def launch(k: Any, client: Any, h: dict[str, Any]) -> None:
        k.launch(client, ONE, DIM, *(BufferArg.from_raw_parts(h[n], N) for n in h),  # noqa
                 *scalars)
    return PassCase(name, kernel, buffers, launch, trap)


def _u32s(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, N, dtype=np.uint32)


def _outs(dtype: Any) -> np.ndarray:
    return np.zeros(N, dtype=dtype)


def _operands_constant(op: Any, constants: set[int]) -> bool:
    return bool(op.operands) and all(v.id in constants for v in op.operands)


# -- 10.1 the IR a pass sees: how many multiplications? ------------------------------------------

@cube(launch=True)  # noqa: F405
def scale_abs(x: Slice[u32], out: SliceMut[u32]):  # noqa: F405
    if ABSOLUTE_POS < out.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 3  # noqa: F405


@cube(launch=True)  # noqa: F405
def shift_cube(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = CUBE_POS * 32 + UNIT_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] + 1.0


@cube(launch=True)  # noqa: F405
def poly_abs(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = (x[i] + 1.0) * (x[i] + 2.0) * 4.0


_MUL_KERNELS = {
    "scale_abs": (scale_abs, "if ABSOLUTE_POS < out.len():\n"
                  "    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 3", 1),
    "shift_cube": (shift_cube, "i = CUBE_POS * 32 + UNIT_POS\nif i < out.len():\n"
                   "    out[i] = x[i] + 1.0", 1),
    "poly_abs": (poly_abs, "i = ABSOLUTE_POS\nif i < out.len():\n"
                 "    out[i] = (x[i] + 1.0) * (x[i] + 2.0) * 4.0", 2),
}


def _muls(kernel: Any) -> Callable[[Any], int]:
    def count(client: Any) -> int:
        from cubelab.inspect import instance, ir

        return ir(instance(kernel, cube_dim=DIM)).count("= arith.mul ")
    return count


@variants("ch10.muls_in_ir", [dict(kernel=k) for k in _MUL_KERNELS])
def muls_in_ir(v: Any) -> ValueExercise:
    kernel, code, written = _MUL_KERNELS[v.kernel]
    return ValueExercise(
        "ch10.muls_in_ir", "How many multiplications does a pass see?",
        f"`{v.kernel}` is compiled with `CubeDim.new_1d(32)`. How many `arith.mul` ops does its "
        "IR hold as the frontend expands it, before any pass? Answer with a whole number.",
        "A pass sees every op the expansion registered, not only the ones you wrote: a builtin "
        "position that the hardware does not have is computed from the ones it has.",
        (written + 1,),
        nudge="Count the `*` in the source first; then ask where each name in it comes from.",
        worked="A worked step on another kernel: `out[UNIT_POS] = x[UNIT_POS] + 1.0` has no `*` "
        "and its IR no `arith.mul`: UNIT_POS is the hardware's local index. A position the "
        "hardware does not have is rebuilt from the ones it has: print `inspect.ir` of a "
        "kernel that reads one and read its first lines.",
        misconceptions=[Misconception("only the `*` I wrote", written,
                                      "Those are only the multiplications you wrote.")],
        code=code, value=_muls(kernel),
        explanation="CUBE_POS is rebuilt from the three axes' workgroup ids and counts, "
        "`z * (nx * ny) + y * nx + x`: three multiplications; ABSOLUTE_POS = CUBE_POS * "
        "CUBE_DIM + UNIT_POS adds a fourth. Then the ones you wrote.")


# -- 10.2 constant folding -----------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def fold_chain(x: Slice[u32], out: SliceMut[u32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] + (u32(3) * u32(4) + u32(5))  # noqa: F405


@cube(launch=True)  # noqa: F405
def fold_wraps(x: Slice[u32], out: SliceMut[u32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] + (u32(4294967295) + u32(2)) + (u32(1) - u32(3))  # noqa: F405


@cube(launch=True)  # noqa: F405
def fold_signed(x: Slice[i32], out: SliceMut[i32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] * (i32(-7) * i32(3)) + i32(-7) // i32(2)  # noqa: F405


@cube(launch=True)  # noqa: F405
def fold_f32(x: Slice[f32], out: SliceMut[f32], s: f32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] * s + (f32(1e8) + f32(1.0) - f32(1e8)) * f32(0.5)  # noqa: F405


@cube(launch=True)  # noqa: F405
def fold_local(x: Slice[u32], out: SliceMut[u32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        k = u32(2)  # noqa: F405
        if x[i] > u32(10):  # noqa: F405
            k = u32(5)  # noqa: F405
        out[i] = x[i] * (k + u32(1))  # noqa: F405


FOLD_CASES = [
    _case("a chain of u32 constants", fold_chain,
          lambda: {"x": _u32s(1), "out": _outs(np.uint32)}),
    _case("u32 sums that leave the range", fold_wraps,
          lambda: {"x": _u32s(2), "out": _outs(np.uint32)},
          trap="u32 arithmetic wraps modulo 2**32: 4294967295 + 2 is 1, and 1 - 3 is 4294967294"),
    _case("i32 products and a division", fold_signed,
          lambda: {"x": np.arange(-16, 16, dtype=np.int32), "out": _outs(np.int32)},
          trap="i32 division truncates toward zero (OPS): -7 // 2 is -3 in a kernel, where "
          "Python's // gives -4"),
    _case("f32 constants beside a runtime scalar", fold_f32,
          lambda: {"x": np.linspace(-2, 2, N, dtype=np.float32), "out": _outs(np.float32)},
          scalars=(3.0,),
          trap="f32 arithmetic rounds after every op: 1e8 + 1 is 1e8 in f32, so "
          "(1e8 + 1) - 1e8 is 0 in the kernel (1 in Python's float)"),
    _case("a local set in a branch", fold_local,
          lambda: {"x": _u32s(3), "out": _outs(np.uint32)},
          trap="`k` is 2 or 5 depending on the unit's x: a load of a local is a runtime value, "
          "whatever constant was stored into it somewhere"),
]

_FOLDABLE = ("arith.add", "arith.sub", "arith.mul")


def nothing_left_to_fold(before: KernelDefinition, after: KernelDefinition) -> str | None:
    constants = {op.result.id for op in after.walk() if op.name == "arith.constant"}
    for op in after.walk():
        if op.name in _FOLDABLE and _operands_constant(op, constants):
            return f"{op_text(op)} still computes with constants only."
    return None


CONSTANT_FOLD = PassExercise(
    "ch10.constant_fold", "Write a constant-folding pass",
    "Write a pass that replaces every `arith.add`, `arith.sub` and `arith.mul` whose operands "
    "are all constants by one `arith.constant` holding the value the kernel would compute. It "
    "is checked on hidden kernels: u32, i32 and f32 arithmetic, runtime values beside the "
    "constants; every result must stay what it was, on your runtime and on the CPU runtime.",
    "Compute as the IR computes, not as Python does: u32 and i32 wrap modulo 2**32 (i32 is "
    "two's complement), an f32 result is rounded to f32 after each op (`np.float32(a) + "
    "np.float32(b)`). Only `arith.constant` results are constants: a load, a scalar "
    "argument or a builtin is a runtime value.",
    (TemplatePass("constant-fold"),),
    nudge="Walk the ops in program order (`definition.walk()`), remember the value of each "
    "`arith.constant` by its result's id, and rewrite a foldable op in place into a constant: "
    "its result keeps its id, so every use still finds it.",
    worked="A worked step on another op: `%v9 = arith.sub %v3, %v4 : i32` with constants 2 and "
    "5 becomes `%v9 = arith.constant {value = -3} : i32` — `op.name, op.operands, op.attrs = "
    "'arith.constant', [], {'value': -3}`. For a u32 the same subtraction is 4294967293.",
    cases=FOLD_CASES, expect=nothing_left_to_fold,
)


# -- 10.3 which sources change -------------------------------------------------------------------

class DoubleTheConstants:
    """A pass for the question below (not an optimisation): every f32 constant doubles."""

    name = "double-the-constants"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        for op in definition.walk():
            if op.name == "arith.constant" and op.result.type == F32:  # noqa: F405
                op.attrs = {"value": op.attrs["value"] * 2}
        return definition


@cube(launch=True)  # noqa: F405
def shift_by_half(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] + 0.5


def _sources_that_change(client: Any) -> set[str]:
    from cubelab.compiler import CompilationOptions
    from cubelab.inspect import compiled, instance

    k = instance(shift_by_half, cube_dim=DIM)
    plain = compiled(k)
    changed = compiled(k, options=CompilationOptions(extra_passes=[DoubleTheConstants()]))
    out = {name for name, s in plain.sources.items() if s.source != changed.sources[name].source}
    if plain.ir != changed.ir:
        out.add("ir")
    return out


WHICH_SOURCES_CHANGE = ValueExercise(
    "ch10.which_sources_change", "A pass changes the IR: which sources change?",
    "`DoubleTheConstants` turns every f32 constant of a kernel into its double. With it in "
    "`extra_passes`, `shift_by_half` (`out[i] = x[i] + 0.5`) is compiled again. Which of `ir` "
    "(what the CPU runtime executes), `wgsl`, `msl`, `cuda` come out different? Answer with a "
    "set of names, e.g. `{\"wgsl\"}`.",
    "There is one pipeline (compiler/pipeline.py): define, the passes, then every target reads "
    "the IR the last pass returned. Nothing downstream sees the IR before the passes.",
    ({"wgsl"}, {"ir"}, set()),
    nudge="Which target runs depends on the runtime; which targets read the IR after the "
    "passes does not.",
    worked="Another case: the `checked_io=\"fixed\"` rule (chapter 4) rewrites indices in a "
    "built-in pass, and MSL gets the same `min(index, len - 1)` as the WGSL that runs.",
    misconceptions=[Misconception("only the target that runs", {"wgsl", "ir"},
                                  "The target that runs is one of several readers of the same "
                                  "IR.")],
    code="client.set_compilation_options(extra_passes=[DoubleTheConstants()])",
    value=_sources_that_change,
    explanation="All four: the literal 0.5 becomes 1.0 in the IR and so in every target (`1.0f` "
    "in WGSL, MSL and CUDA alike). Shown targets are rendered from the same IR as the one that "
    "runs, on every compile.",
)


# -- 10.4 strength reduction ---------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def sr_u32(x: Slice[u32], out: SliceMut[u32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] * 8 + 16 * x[i] + x[i] * 6 + x[i] * 1


@cube(launch=True)  # noqa: F405
def sr_mixed(x: Slice[i32], f: Slice[f32], out: SliceMut[i32], fout: SliceMut[f32]):  # noqa
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i] * 4
        fout[i] = f[i] * 8.0


@cube(launch=True)  # noqa: F405
def sr_index(x: Slice[f32], out: SliceMut[f32], w: u32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len() // 2:
        out[i * 2] = x[(i * 4) % w] + x[i * w % 32]  # noqa: F405


SR_CASES = [
    _case("u32 products by 8, 16, 6 and 1", sr_u32,
          lambda: {"x": np.arange(N, dtype=np.uint32) * 977, "out": _outs(np.uint32)},
          trap="6 is not a power of two: x * 6 is not x << 2 (that is x * 4)"),
    _case("an i32 and an f32 product", sr_mixed,
          lambda: {"x": np.arange(-16, 16, dtype=np.int32),
                   "f": np.linspace(-1, 1, N, dtype=np.float32), "out": _outs(np.int32),
                   "fout": _outs(np.float32)},
          trap="a float has no shift: f32 * 8.0 stays a multiplication (`arith.shl` takes i32 "
          "or u32, OPS)"),
    _case("indices scaled by constants and by a scalar", sr_index,
          lambda: {"x": np.linspace(0, 3, N, dtype=np.float32), "out": _outs(np.float32)},
          scalars=(32,),
          trap="`w` is a runtime scalar: i * w stays a multiplication, whatever w is at launch"),
]


def _power_of_two(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 2 and \
        value & (value - 1) == 0


def no_u32_power_of_two_products(before: KernelDefinition,
                                  after: KernelDefinition) -> str | None:
    constants = {op.result.id: op.attrs["value"] for op in after.walk()
                 if op.name == "arith.constant"}
    for op in after.walk():
        if op.name == "arith.mul" and op.result.type == U32 and any(  # noqa: F405
                _power_of_two(constants.get(v.id)) for v in op.operands):
            return f"{op_text(op)} still multiplies a u32 by a power of two."
    return None


STRENGTH_REDUCE = PassExercise(
    "ch10.strength_reduce", "Write a strength-reduction pass",
    "Write a pass that turns every `arith.mul` of a u32 by a constant power of two, 2**k with "
    "k >= 1 (on either side), into `arith.shl` by the u32 constant k. Hidden kernels multiply "
    "u32, i32 and f32 values by constants and by a runtime scalar; every result must stay what "
    "it was, and no u32 multiplication by a power of two may be left.",
    "`x * 2**k` and `x << k` are the same bits for a u32 (both wrap modulo 2**32). The shift "
    "amount is an operand: a new `arith.constant` of type u32, which needs a fresh value id "
    "(above `cubelab.ir.analysis.max_value_id(definition)`) and a place in the block before the "
    "shift. Only an exact power of two qualifies, and only integers shift.",
    (TemplatePass("strength-reduce"),),
    nudge="Work block by block (`definition.blocks()`): build each block's new op list, "
    "putting a new constant op right before the op that uses it.",
    worked="A worked step on another rewrite: to turn `%v7 = arith.div %v5, %v6 : u32` (with "
    "%v6 the constant 4) into a shift right, make `c = Value(fresh, U32)`, insert "
    "`Op('arith.constant', [], [c], {'value': 2})` before it, then set `op.name, op.operands "
    "= 'arith.shr', [%v5, c]`; %v7 keeps its id.",
    cases=SR_CASES, expect=no_u32_power_of_two_products,
)


# -- 10.5 dead-code elimination ------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def dce_expressions(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        x[i] * 3.0 + 1.0
        UNIT_POS_X * 2  # noqa: F405
        out[i] = x[i]


@cube(launch=True)  # noqa: F405
def dce_atomics(x: Slice[u32], hist: SliceMut[Atomic[u32]]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        hist[x[i] % 4].fetch_add(u32(1))  # noqa: F405


@cube(launch=True)  # noqa: F405
def dce_stores(x: Slice[f32], out: SliceMut[f32], spare: SliceMut[f32]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        t = x[i] * 2.0
        spare[i] = t + 1.0
        out[i] = t - 1.0
        t * t


DCE_CASES = [
    _case("expressions whose values nobody uses", dce_expressions,
          lambda: {"x": np.linspace(0, 1, N, dtype=np.float32), "out": _outs(np.float32)},
          trap="the values of the two bare expressions are dead; the `memory.store` of "
          "`out[i] = x[i]` has no result for anyone to use, yet it is what the kernel is for"),
    _case("an atomic add whose old value nobody reads", dce_atomics,
          lambda: {"x": _u32s(4), "hist": np.zeros(N, dtype=np.uint32)},
          trap="`fetch_add` returns the old value, which nobody uses — but the add is the "
          "point: an op that writes memory is never dead (it is not pure)"),
    _case("stores, and a value used only by dead code", dce_stores,
          lambda: {"x": np.linspace(-1, 1, N, dtype=np.float32), "out": _outs(np.float32),
                   "spare": _outs(np.float32)},
          trap="a `memory.store` has no result for anyone to use, yet it is what the kernel is "
          "for"),
]


def _uses(definition: KernelDefinition) -> dict[int, int]:
    used: dict[int, int] = {}
    for op in definition.walk():
        for v in op.operands:
            used[v.id] = used.get(v.id, 0) + 1
    return used


def _impure_count(definition: KernelDefinition) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in definition.walk():
        if not is_pure(op):
            counts[op.name] = counts.get(op.name, 0) + 1
    return counts


def no_dead_pure_ops(before: KernelDefinition, after: KernelDefinition) -> str | None:
    kept, had = _impure_count(after), _impure_count(before)
    for name, n in had.items():
        if kept.get(name, 0) < n:
            return (f"{n - kept.get(name, 0)} `{name}` op(s) are gone; a dead-code pass may only "
                    "remove pure ops (`cubelab.ir.analysis.is_pure`).")
    used = _uses(after)
    for op in after.walk():
        if is_pure(op) and op.results and not any(used.get(r.id) for r in op.results):
            return f"{op_text(op)} is pure and nothing uses its result."
    return None


DEAD_CODE = PassExercise(
    "ch10.dead_code", "Write a dead-code-elimination pass",
    "Write a pass that removes every op that is pure (`cubelab.ir.analysis.is_pure(op)`) and "
    "whose results nothing uses — until none is left: removing one can leave the ops that fed "
    "it unused. Hidden kernels have values nobody reads, stores, and atomics; every result must "
    "stay what it was, and no pure op may be left unused.",
    "Dead means pure *and* unused. An op with no results (a store, a barrier) or whose effect "
    "is the point (an atomic add, whose returned old value is often ignored) is never dead. "
    "Count the uses of each value id over the whole kernel — nested regions included — remove, "
    "and count again until nothing changes.",
    (TemplatePass("dead-code"),),
    nudge="Count uses with `definition.walk()`; remove with `definition.blocks()`, rebuilding "
    "each block's `ops` list without the dead ones.",
    worked="A worked step on another kernel: in `%v3 = arith.constant 2.0; %v4 = arith.mul "
    "%v1, %v3; memory.store %v9, %v1`, %v4 has no use and is pure: it goes. Then %v3 has no "
    "use: it goes in the next round. The store stays, though no op uses it.",
    cases=DCE_CASES, expect=no_dead_pure_ops,
)


# -- 10.6 loop-invariant hoisting ----------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def licm_scale(x: Slice[f32], out: SliceMut[f32], s: f32, n: u32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        acc = f32(0.0)  # noqa: F405
        for j in range(n):
            acc += x[j] * (s * 2.0 + 1.0) + x[i]
        out[i] = acc


@cube(launch=True)  # noqa: F405
def licm_accumulate(x: Slice[f32], out: SliceMut[f32], n: u32):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = 0.0
        for j in range(n):
            out[i] = out[i] + x[(i + j) % n]


LICM_CASES = [
    _case("a scalar expression inside a loop", licm_scale,
          lambda: {"x": np.linspace(0, 1, N, dtype=np.float32), "out": _outs(np.float32)},
          scalars=(0.5, 7),
          trap="`s * 2.0 + 1.0` and the address of x[i] do not change in the loop; `acc` is a "
          "local the loop stores to, so the load of `acc` — whose pointer does not change either "
          "— reads a new value on every iteration: a load is not pure"),
    _case("a loop that accumulates into out[i]", licm_accumulate,
          lambda: {"x": np.linspace(0, 1, N, dtype=np.float32), "out": _outs(np.float32)},
          scalars=(5,),
          trap="the address of out[i] does not change in the loop, but its value does: the "
          "loop stores to it. A load is not pure, so it is not invariant"),
]


def nothing_invariant_in_loops(before: KernelDefinition, after: KernelDefinition) -> str | None:
    for loop in after.walk():
        if loop.name != "scf.for":
            continue
        body = loop.regions[0]
        inside = {a.id for a in body.args}
        for op in body.walk():
            inside.update(r.id for r in op.results)
            for region in op.regions:
                inside.update(a.id for a in region.args)
        for op in body.ops:
            if is_pure(op) and op.results and op.operands and \
                    not any(v.id in inside for v in op.operands):
                return (f"{op_text(op)} is pure and uses only values from outside its loop, but "
                        "runs on every iteration.")
    return None


HOIST = PassExercise(
    "ch10.hoist_invariants", "Write a loop-invariant hoisting pass",
    "Write a pass that moves each pure op out of an `scf.for` body — to just before the loop — "
    "when every operand is defined outside the loop (or by an op already moved out). Hidden "
    "kernels compute scalar expressions and addresses inside loops, and read and write memory "
    "there; every result must stay what it was, and no such op may be left in a loop body.",
    "An op is invariant when nothing it reads changes between iterations: its operands come "
    "from outside the body (not the loop's counter, not an op of the body). Only pure ops may "
    "move: a load's address may be invariant while the value behind it is stored to in the "
    "loop. Move ops in body order, so an op whose operands were just moved can follow them.",
    (TemplatePass("hoist-invariants"),),
    nudge="For each `scf.for` (`loop.regions[0]` is its body, `body.args[0]` the counter), "
    "collect the ids defined in the body; walk `body.ops` in order and split it in two lists.",
    worked="A worked step on another loop: in `for j in range(n): acc += x[j] * t + u` with t, u "
    "defined before it, nothing moves except what uses only t, u and constants — `x[j]` uses "
    "the counter j, and `acc`'s load reads a local the loop stores to.",
    cases=LICM_CASES, expect=nothing_invariant_in_loops,
)


# -- 10.7 the cache knows the passes -------------------------------------------------------------

class Noop:
    """A pass that changes nothing (a stand-in with an identity of its own)."""

    name = "noop"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        return definition


class Label:
    """Another pass that changes nothing, with a setting (its label): its settings are part of
    its identity, so Label("a") and Label("b") are two passes."""

    name = "label"

    def __init__(self, text: str = "a") -> None:
        self.text = text

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        return definition


# each step: ("launch", None) or ("passes", [what the cell writes]); the compiles are counted
_STEPS: dict[str, list[tuple[str, Any]]] = {
    "a": [("launch", None), ("passes", ["Noop()"]), ("launch", None), ("launch", None),
          ("passes", ["Noop()"]), ("launch", None)],
    "b": [("passes", ["Noop()"]), ("launch", None), ("passes", ["Noop()", "Label()"]),
          ("launch", None), ("passes", ["Noop()", "Label()"]), ("launch", None),
          ("passes", ["Noop()", "Label('b')"]), ("launch", None)],
    "c": [("launch", None), ("passes", ["Label()"]), ("launch", None),
          ("passes", ["Label()", "Noop()"]), ("launch", None),
          ("passes", ["Noop()", "Label()"]), ("launch", None), ("launch", None)],
}
_FACTORIES: dict[str, Callable[[], Any]] = {"Noop()": Noop, "Label()": Label,
                                            "Label('b')": lambda: Label("b")}


def _program(v: Any) -> Callable[[Any], None]:
    def run(client: Any) -> None:
        from cubelab.exercises.launching import arg, floats, scale

        before = client.compilation_options()
        x, out = floats(client, range(8)), floats(client, [0] * 8)
        try:
            for what, passes in _STEPS[v.steps]:
                if what == "launch":
                    scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                                 arg(x), arg(out), 2.0)
                    client.read_one(out)
                else:
                    client.set_compilation_options(
                        extra_passes=[_FACTORIES[p]() for p in passes])
        finally:
            client.set_compilation_options(**before.as_dict())
    return run


def _steps_code(v: Any) -> str:
    lines = []
    for what, passes in _STEPS[v.steps]:
        lines.append("scale.launch(client, ...)" if what == "launch" else
                     f"client.set_compilation_options(extra_passes=[{', '.join(passes)}])")
    return "\n".join(lines)


def _launches(v: Any) -> int:
    return sum(what == "launch" for what, _ in _STEPS[v.steps])


@variants("ch10.cache_knows_passes", [dict(steps=s) for s in _STEPS])
def cache_knows_passes(v: Any) -> CountExercise:
    return CountExercise(
        "ch10.cache_knows_passes", "Passes and the cache: how many compiles?",
        "After `client.clear_cache()`, the program below launches the same `scale` kernel (same "
        "KernelId every time) and changes the extra passes between launches. `Noop` and "
        "`Label` change no op of the IR. How many compiles?",
        "The pipeline cache's key is the KernelId *and* the options (`options_key`): a pass is "
        "identified by its class, its code and its settings. Changing the options to different "
        "passes empties the cache; setting the same passes again (even new objects of the same "
        "class with the same settings) changes nothing.",
        (1, _launches(v)),
        nudge="Mark each `set_compilation_options` line: is the list of passes different from "
        "the one before it (class, settings, order)?",
        worked="Another program: launch; extra_passes=[A()]; launch; extra_passes=[A()]; "
        "launch — two compiles: the first launch, and the one after A arrived. Setting A() "
        "again is the same pass, so the third launch hits.",
        misconceptions=[Misconception("the KernelId did not change", 1,
                                      "The KernelId did not change — but it is only half of "
                                      "the cache's key.")],
        code=_steps_code(v), launches=[_program(v)],
        explanation="A compile follows each change of the pass list — a class added, removed, "
        "reordered or configured differently — because the pipeline compiled before it was built "
        "from other IR. A pass whose run changes nothing is still a different pass: the cache "
        "cannot know what a pass does without running it.")


register(CONSTANT_FOLD, WHICH_SOURCES_CHANGE, STRENGTH_REDUCE, DEAD_CODE, HOIST)
