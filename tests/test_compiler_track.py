"""The compiler track (chapters 10 and 11, the compiler capstone) beyond what every exercise gets
in test_exercises.py: each misconception a pass exercise exists to catch is rejected — a pass
that changes results, folds across a runtime value, deletes a store, forgets the types — and the
passes a student writes (the solutions) run on the kernel zoo: the zoo's own numpy checks pass
with them on both runtimes, and the WGSL changes as chapter 10 says.

The misconception passes are near-solutions, so they live here and not in the package a student
imports.
"""

from __future__ import annotations

import operator
from typing import Any, Iterator

import numpy as np
import pytest

import cubelab.exercises as ex
import cubelab.inspect as ci
from cubelab.compiler import CompilationOptions
from cubelab.ir import U32, KernelDefinition, Op, Value
from cubelab.ir.analysis import is_pure, max_value_id
from tests.chapters import solutions, solved_answer

CH10 = solutions("10_compiler_write_a_pass")


def solution(key: str, client: Any) -> Any:
    return solved_answer(key, CH10[key], client)


# -- constant folding: near-misses ---------------------------------------------------------------
_FOLD = {"arith.add": operator.add, "arith.sub": operator.sub, "arith.mul": operator.mul}


class FoldInPython:
    """Folds with Python's numbers: no wrap-around, f32 sums in double precision."""

    name = "fold-in-python"
    wrap = False
    single = False

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        constants: dict[int, Any] = {}
        for op in definition.walk():
            if op.name == "arith.constant":
                constants[op.result.id] = op.attrs["value"]
            elif op.name in _FOLD and all(v.id in constants for v in op.operands):
                a, b = (constants[v.id] for v in op.operands)
                value = _FOLD[op.name](a, b)
                if self.wrap and isinstance(value, int):
                    value &= 0xFFFFFFFF
                    if op.result.type.elem.value == "i32" and value >= 2**31:
                        value -= 2**32
                if self.single and isinstance(value, float):
                    value = float(np.float32(a) + np.float32(b)) if op.name == "arith.add" \
                        else float(_FOLD[op.name](np.float32(a), np.float32(b)))
                op.name, op.operands, op.attrs = "arith.constant", [], {"value": value}
                constants[op.result.id] = value
        return definition


class FoldWithoutF32Rounding(FoldInPython):
    """Wraps its integers but adds f32 constants in double precision."""

    name = "fold-in-double"
    wrap = True


class FoldThroughLocals(FoldInPython):
    """Also treats a load of a local as the last constant stored into it: a runtime value."""

    name = "fold-through-locals"
    wrap = True
    single = True

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        constants = {op.result.id: op.attrs["value"] for op in definition.walk()
                     if op.name == "arith.constant"}
        stored: dict[int, Any] = {}
        for op in definition.walk():
            if op.name == "memory.store" and op.operands[1].id in constants:
                stored[op.operands[0].id] = constants[op.operands[1].id]
            elif op.name == "memory.load" and op.operands[0].id in stored:
                op.name, op.operands, op.attrs = ("arith.constant", [],
                                                  {"value": stored[op.operands[0].id]})
        return super().run(definition)


class FoldDivisionsToo(FoldInPython):
    """Folds divisions with Python's `//` (floored; the IR's truncates toward zero)."""

    name = "fold-divisions"
    wrap = True
    single = True

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        _FOLD["arith.div"] = operator.floordiv
        try:
            return super().run(definition)
        finally:
            del _FOLD["arith.div"]


@pytest.mark.parametrize("wrong, says", [
    (FoldInPython(), "does not fit u32"),
    (FoldWithoutF32Rounding(), "f32 arithmetic rounds after every op"),
    (FoldThroughLocals(), "a load of a local is a runtime value"),
    (FoldDivisionsToo(), "-7 // 2 is -3 in a kernel"),
])
def test_a_folding_pass_that_computes_otherwise_than_the_kernel_is_rejected(wrong, says,
                                                                              cpu_client):
    r = ex.get("ch10.constant_fold").check(wrong, cpu_client)
    assert r.status == "wrong"
    assert says in r.details + r.message, str(r)
    assert r.hint or r.error is not None


# -- strength reduction: near-misses -------------------------------------------------------------

class ShiftByAnyConstant:
    """Shifts by floor(log2(c)) for every constant c >= 2, powers of two or not, in any int."""

    name = "shift-any"
    types = "int"  # which products it shifts: "u32", "int" (i32 and u32) or "any" (f32 too)
    right_only = False  # looks at the right operand only
    exact = False  # only exact powers of two
    signed_amount = False  # the amount takes the shifted value's type

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        constants = {op.result.id: op.attrs["value"] for op in definition.walk()
                     if op.name == "arith.constant"}
        fresh = max_value_id(definition) + 1
        for block in definition.blocks():
            out: list[Op] = []
            for op in block.ops:
                ty = op.result.type if op.name == "arith.mul" else None
                if ty is not None and {"u32": ty == U32, "int": ty.elem.is_int,
                                       "any": True}[self.types]:
                    pairs = [op.operands] if self.right_only else [op.operands,
                                                                    op.operands[::-1]]
                    for x, c in pairs:
                        k = constants.get(c.id)
                        if not isinstance(k, (int, float)) or isinstance(k, bool) or k < 2 or (
                                self.exact and int(k) & (int(k) - 1)):
                            continue
                        amount = Value(fresh, ty if self.signed_amount else U32)
                        fresh += 1
                        out.append(Op("arith.constant", [], [amount],
                                      {"value": int(k).bit_length() - 1}, [], op.loc))
                        op.name, op.operands = "arith.shl", [x, amount]
                        break
                out.append(op)
            block.ops[:] = out
        return definition


class ShiftFloatsToo(ShiftByAnyConstant):
    """Exact powers of two, f32 products too."""

    name = "shift-floats"
    types = "any"
    exact = True


class ShiftWhenTheConstantIsOnTheRight(ShiftByAnyConstant):
    """Exact powers of two of u32 only, but only `x * 8`: misses `16 * x`."""

    name = "shift-right-side"
    types = "u32"
    right_only = True
    exact = True


class ShiftI32BySignedAmount(ShiftByAnyConstant):
    """Exact powers of two of i32 and u32, the amount of the value's type (i32 for an i32)."""

    name = "shift-signed"
    exact = True
    signed_amount = True


@pytest.mark.parametrize("wrong, says", [
    (ShiftByAnyConstant(), "x * 6 is not x << 2"),
    (ShiftFloatsToo(), "shifts take i32 or u32"),
    (ShiftWhenTheConstantIsOnTheRight(), "still multiplies a u32 by a power of two"),
    (ShiftI32BySignedAmount(), "the amount is a u32"),
])
def test_a_strength_reduction_that_is_not_exact_is_rejected(wrong, says, cpu_client):
    r = ex.get("ch10.strength_reduce").check(wrong, cpu_client)
    assert r.status == "wrong" and says in r.details + r.message, str(r)


# -- dead code: near-misses ----------------------------------------------------------------------

class RemoveUnused:
    """Removes every op whose results nobody uses — pure or not, results or not."""

    name = "remove-unused"
    sweeps = 10
    pure_only = False

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        for _ in range(self.sweeps):
            used = {v.id for op in definition.walk() for v in op.operands}
            for block in definition.blocks():
                block.ops[:] = [op for op in block.ops if op.regions or any(
                    r.id in used for r in op.results) or (self.pure_only and not is_pure(op))]
        return definition


class OneSweep(RemoveUnused):
    name = "one-sweep"
    sweeps = 1
    pure_only = True


def test_a_dead_code_pass_that_deletes_a_store_or_an_atomic_is_rejected(cpu_client):
    r = ex.get("ch10.dead_code").check(RemoveUnused(), cpu_client)
    assert r.status == "wrong" and "changed what the kernel computes" in r.message, str(r)
    assert "never dead" in r.details or "what the kernel is for" in r.details


def test_a_dead_code_pass_that_stops_after_one_sweep_is_told_what_is_left(cpu_client):
    r = ex.get("ch10.dead_code").check(OneSweep(), cpu_client)
    assert r.status == "wrong" and "is pure and nothing uses its result" in r.message, str(r)


# -- hoisting: near-misses -----------------------------------------------------------------------

class HoistLoadsToo:
    """Treats a load through an invariant pointer as invariant: the loop stores there."""

    name = "hoist-loads"
    pure = staticmethod(lambda op: is_pure(op) or op.name == "memory.load")

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        for _ in range(3):
            for block in list(definition.blocks()):
                out: list[Op] = []
                for op in block.ops:
                    if op.name == "scf.for":
                        body = op.regions[0]
                        inside = {a.id for a in body.args} | {
                            r.id for inner in body.walk() for r in inner.results}
                        stay = []
                        for inner in body.ops:
                            if self.pure(inner) and inner.results and not any(
                                    v.id in inside for v in inner.operands):
                                out.append(inner)
                                inside -= {r.id for r in inner.results}
                            else:
                                stay.append(inner)
                        body.ops[:] = stay
                    out.append(op)
                block.ops[:] = out
        return definition


class HoistEverythingPure(HoistLoadsToo):
    """Hoists every pure op of a loop body, invariant or not."""

    name = "hoist-all-pure"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        for block in list(definition.blocks()):
            out: list[Op] = []
            for op in block.ops:
                if op.name == "scf.for":
                    body = op.regions[0]
                    out += [inner for inner in body.ops if is_pure(inner)]
                    body.ops[:] = [inner for inner in body.ops if not is_pure(inner)]
                out.append(op)
            block.ops[:] = out
        return definition


def test_a_hoisting_pass_that_moves_a_load_or_a_dependent_op_is_rejected(cpu_client):
    e = ex.get("ch10.hoist_invariants")
    r = e.check(HoistLoadsToo(), cpu_client)
    assert r.status == "wrong" and "a load is not pure" in r.details, str(r)
    r = e.check(HoistEverythingPure(), cpu_client)
    assert r.status == "wrong" and r.error is not None and "not well formed" in r.details, str(r)


def test_a_pass_given_as_a_class_is_told_to_give_an_object(cpu_client):
    r = ex.get("ch10.dead_code").check(RemoveUnused, cpu_client)
    assert r.status == "wrong" and r.unreadable and "answer = RemoveUnused()" in r.message


def test_a_check_puts_the_clients_options_back(cpu_client):
    before = cpu_client.compilation_options()
    ex.get("ch10.dead_code").check(RemoveUnused(), cpu_client)
    ex.get("ch10.dead_code").check(solution("ch10.dead_code", cpu_client), cpu_client)
    assert cpu_client.compilation_options() == before


# -- the student's passes on the zoo --------------------------------------------------------------

@pytest.fixture(scope="module")
def student_passes(cpu_client: Any) -> list[Any]:
    """Chapter 10's four passes from the solutions, in the order the chapter suggests."""
    return [solution(k, cpu_client) for k in ("ch10.constant_fold", "ch10.strength_reduce",
                                              "ch10.hoist_invariants", "ch10.dead_code")]


@pytest.fixture
def with_student_passes(client: Any, student_passes: list[Any]) -> Iterator[Any]:
    before = client.compilation_options()
    client.set_compilation_options(extra_passes=student_passes)
    try:
        yield client
    finally:
        client.set_compilation_options(**before.as_dict())


def test_the_zoo_computes_what_numpy_computes_with_the_students_passes(with_student_passes):
    """The zoo's own checks (against numpy), with the four passes on: loops, shared memory,
    atomics, a switch, an enum, vectors."""
    from tests.zoo import test_zoo as z

    client = with_student_passes
    z.test_gelu_on_vec4_matches_the_cubecl_example(client)
    z.test_block_sum_in_shared_memory_gives_each_cube_its_partial_sum(client, 200)
    z.test_tiled_matmul_with_shared_tiles_matches_numpy(client, 9, 13, 11)
    z.test_histogram_with_shared_and_global_atomics_counts_exactly(client, 1000)
    z.test_softmax_per_row_matches_numpy(client, 3, 70)
    z.test_collatz_with_break_and_continue_counts_steps(client, 64, 200)
    z.test_tiny_vm_runs_a_program_of_opcodes_through_a_switch(client, 64)
    z.test_horner_helper_with_comptime_degree_is_numpy_polyval(client, 200)


def test_the_zoos_wgsl_changes_as_chapter_10_says(student_passes):
    """ABSOLUTE_POS's `* 64u` becomes a shift in every zoo kernel that reads it, no u32 product by
    a power of two is left, nothing foldable, nothing dead, nothing invariant left in a loop."""
    from cubelab.compiler.pipeline import compile_definition
    from cubelab.exercises import ch10
    from tests.zoo import ZOO

    options = CompilationOptions(extra_passes=student_passes)
    reduced = 0
    for name, k in ZOO[:20]:
        plain, passed = ci.compiled(k), ci.compiled(k, options=options)
        before = compile_definition(k.define(), k.mode, CompilationOptions(), run=None,
                                    record=False).definition
        after = compile_definition(k.define(), k.mode, options, run=None,
                                   record=False).definition
        for rule in (ch10.nothing_left_to_fold, ch10.no_u32_power_of_two_products,
                     ch10.no_dead_pure_ops, ch10.nothing_invariant_in_loops):
            assert rule(before, after) is None, (name, rule.__name__, rule(before, after))
        muls = passed.ir.count("= arith.mul "), plain.ir.count("= arith.mul ")
        assert muls[0] <= muls[1], name
        if ch10.no_u32_power_of_two_products(before, before):  # e.g. ABSOLUTE_POS's `* 64u`
            assert muls[0] < muls[1] and " << " in passed.wgsl.source, name
            assert " << " in passed.sources["msl"].source, name  # every target reads the IR
            reduced += 1
    assert reduced >= 15  # nearly every zoo kernel reads ABSOLUTE_POS


# -- chapter 11 ------------------------------------------------------------------------------------
CH11 = solutions("11_compiler_lower_an_op")


class LowerWithScalarConstants:
    """Lowers `lesson.<fn>` as the solution does, but makes its 1.0 an f32 even beside a vec4:
    it forgets to keep the types."""

    name = "lower-forgets-types"

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        self._inner.run(definition)
        for op in definition.walk():  # drop each splat: its users now meet a scalar
            if op.name == "vector.splat":
                op.name, op.attrs = "arith.add", {}
                op.operands = op.operands * 2
                op.results[0].type = op.operands[0].type
        return definition


def test_a_lowering_pass_that_forgets_the_vector_types_is_told_by_the_verifier(cpu_client):
    e = ex.get("ch11.lower_by_pass")  # every variant's meaning has a constant: 1
    good = solved_answer("ch11.lower_by_pass", CH11["ch11.lower_by_pass"], cpu_client)
    r = e.check(LowerWithScalarConstants(good), cpu_client)
    assert r.status == "wrong" and r.error is not None, str(r)
    assert "where vec4<f32>" in r.details and "not well formed" in r.details, r.details


def test_a_cpu_step_written_for_one_number_is_told_it_gets_arrays(cpu_client):
    import math

    r = ex.get("ch11.cpu_step").check(lambda x: math.exp(x), cpu_client)
    assert r.status == "wrong" and "TypeError" in r.details, str(r)


def test_every_lowering_check_leaves_no_op_behind(cpu_client):
    from cubelab.ir.core import OPS
    from cubelab.ir.plugins import PLUGIN_OPS

    before = set(OPS)
    for key in ("ch11.what_fails", "ch11.components_in_c", "ch11.cpu_step",
                "ch11.cache_knows_ops", "ch11.lower_by_pass"):
        e = ex.get(key)
        e.check(solved_answer(key, CH11[key], cpu_client), cpu_client)
        e.check(e.wrong[0], cpu_client)
    assert set(OPS) == before and not [n for n in PLUGIN_OPS if n.startswith("check.")]
