"""A plug-in IR op (`cubelab.ir.plugins`): declared from outside the package, lowered by each
target, stepped by the CPU runtime, called from a kernel — and never served from a pipeline that
was compiled from another definition of it.

The op is the compiler track's example, softplus, added exactly as chapter 11 adds it from a
notebook: `add_op` (meaning, effect, purity), `TARGETS[name].lower` for every target,
`cpu_step`, `intrinsic`. Every test removes what it declared, so `OPS` is the package's own again
for the tests that compare it with the emitters' tables.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest

import cubelab.inspect as ci
from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.compiler import TARGETS, CodegenError, CompilationOptions, options_key
from cubelab.errors import BufferFailure, PassError
from cubelab.ir import KernelDefinition
from cubelab.ir.analysis import EFFECTS, PURE, Effect
from cubelab.ir.core import OPS
from cubelab.ir.plugins import PLUGIN_OPS, add_op, identity, remove_op
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, Vector, cube, f32, intrinsic
from cubelab.runtime import events as ev
from cubelab.runtime.cpu import cpu_step

OP = "student.softplus"
MEANING = "log(1 + exp(x)) of an f32 scalar or vector, computed as written"
SPELLINGS = {"wgsl": "log(1.0 + exp({0}))", "msl": "log(1.0f + exp({0}))",
             "cuda": "logf(1.0f + expf({0}))"}


def softplus_np(x: np.ndarray) -> np.ndarray:
    return np.log(np.float32(1) + np.exp(x))


@pytest.fixture
def declared() -> Iterator[str]:
    """softplus declared in the IR layer only: no spelling, no CPU step yet."""
    add_op(OP, MEANING)
    try:
        yield OP
    finally:
        for name in list(PLUGIN_OPS):
            remove_op(name)


@pytest.fixture
def softplus_op(declared: str) -> str:
    """softplus through every layer."""
    for name, spelling in SPELLINGS.items():
        TARGETS[name].lower(OP, spelling)
    cpu_step(OP, softplus_np)
    return OP


softplus = None  # the kernels below read it when they expand (set by `kernels_call`)


@pytest.fixture
def kernels_call(softplus_op: str) -> Iterator[None]:
    global softplus
    softplus = intrinsic(OP)
    try:
        yield
    finally:
        softplus = None


@cube(launch=True)
def apply_softplus(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = softplus(x[ABSOLUTE_POS]) + 1.0


@cube(launch=True)
def apply_softplus4(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = softplus(x[ABSOLUTE_POS] * 2.0)


def run(client: Any, kernel: Any, xs: np.ndarray) -> np.ndarray:
    n = xs.size  # a buffer's length counts scalars, for vector slices too
    x = client.create_from_slice(f32.as_bytes(xs))
    out = client.create_from_slice(f32.as_bytes(np.zeros_like(xs)))
    kernel.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), BufferArg.from_raw_parts(x, n),
                  BufferArg.from_raw_parts(out, n))
    return f32.from_bytes(client.read_one(out))


XS = np.linspace(-6, 6, 8, dtype=np.float32)


def test_a_plug_in_op_is_in_the_tables_every_op_of_the_package_is_in(declared):
    assert OPS[OP] == MEANING and EFFECTS[OP] is Effect.NONE and OP in PURE
    remove_op(OP)
    assert OP not in OPS and OP not in EFFECTS and OP not in PURE and OP not in PLUGIN_OPS
    add_op(OP, MEANING, pure=False)  # a value op with hidden state: never dropped or speculated
    assert OP in OPS and OP not in PURE


def test_a_plug_in_op_runs_on_every_runtime_as_numpy_computes_it(kernels_call, client):
    np.testing.assert_allclose(run(client, apply_softplus, XS), softplus_np(XS) + 1, rtol=1e-5)
    xs = np.linspace(-3, 3, 32, dtype=np.float32)
    np.testing.assert_allclose(run(client, apply_softplus4, xs), softplus_np(2 * xs),
                               rtol=1e-5)


def test_each_target_writes_its_own_spelling_the_c_family_one_component_at_a_time(kernels_call):
    c = ci.compiled(ci.instance(apply_softplus4, cube_dim=CubeDim.new_1d(8)))
    assert f"= {OP} " in c.ir
    wgsl, msl, cuda = (c.sources[t].source for t in ("wgsl", "msl", "cuda"))
    assert wgsl.count("log(1.0 + exp(") == 1  # WGSL's log and exp take the whole vec4
    assert msl.count("log(1.0f + exp(") == 4 and cuda.count("logf(1.0f + expf(") == 4


def test_the_c_family_spellings_compile_under_the_shims(kernels_call, tmp_path):
    from tests import test_cuda, test_msl

    c = ci.compiled(ci.instance(apply_softplus4, cube_dim=CubeDim.new_1d(8)))
    test_msl.compile_under_shim({"softplus": c.sources["msl"].source}, tmp_path, jobs=1)
    test_cuda.compile_under_shim({"softplus": c.sources["cuda"].source}, tmp_path)


def test_a_missing_part_is_an_error_that_names_the_call_that_adds_it(declared, cpu_client):
    global softplus
    softplus = intrinsic(OP)
    try:
        k = ci.instance(apply_softplus, cube_dim=CubeDim.new_1d(8))
        assert f"= {OP} " in ci.ir(k)  # the IR layer knows it: the frontend can emit it
        with pytest.raises(CodegenError, match=r"TARGETS\['wgsl'\]\.lower\('student\.softplus'"):
            ci.wgsl(k)
        TARGETS["wgsl"].lower(OP, SPELLINGS["wgsl"])
        c = ci.compiled(k)  # WGSL now; MSL and CUDA, shown only, are comments saying why
        assert "log(1.0 + exp(" in c.wgsl.source and set(c.failures) == {"msl", "cuda"}
        with pytest.raises(BufferFailure, match=r"cpu_step\('student\.softplus'"):
            run(cpu_client, apply_softplus, XS)
        cpu_step(OP, softplus_np)
        np.testing.assert_allclose(run(cpu_client, apply_softplus, XS), softplus_np(XS) + 1,
                                   rtol=1e-6)
    finally:
        softplus = None


def test_a_new_spelling_never_meets_a_pipeline_compiled_from_the_old_one(kernels_call, client):
    """Same KernelId, other code: the client forgets its pipelines when a plug-in op changes,
    and the options' key (the compilation store's) names each op's digest."""
    with client.events.record(ev.CompileFinished, ev.CacheCleared) as rec:
        first = run(client, apply_softplus, XS)
        key = rec.of(ev.CompileFinished)[-1].options_key
        TARGETS["wgsl"].lower(OP, "log(2.0 + exp({0}))")  # deliberately another function
        TARGETS["msl"].lower(OP, "log(2.0f + exp({0}))")  # (every target that may run it:
        TARGETS["cuda"].lower(OP, "logf(2.0f + expf({0}))")  # the CUDA runtime runs this one)
        cpu_step(OP, lambda x: np.log(np.float32(2) + np.exp(x)))
        second = run(client, apply_softplus, XS)
    assert OP in key and identity() in rec.of(ev.CompileFinished)[-1].options_key
    assert rec.of(ev.CompileFinished)[-1].options_key != key
    assert any(OP in c.reason for c in rec.of(ev.CacheCleared))
    np.testing.assert_allclose(second, np.log(2 + np.exp(XS)) + 1, rtol=1e-5)
    assert not np.allclose(first, second)
    assert options_key(CompilationOptions()).endswith(f";plugin_ops=[{identity()}]")


def test_running_a_declaration_again_changes_nothing_and_another_one_is_refused(softplus_op):
    before = identity()
    add_op(OP, MEANING)
    TARGETS["wgsl"].lower(OP, SPELLINGS["wgsl"])
    assert identity() == before
    with pytest.raises(ValueError, match="already declared with another meaning"):
        add_op(OP, "something else")


@pytest.mark.parametrize("call, message", [
    (lambda: add_op("softplus", MEANING), r"`dialect\.name`"),
    (lambda: add_op("math.softplus", MEANING), r"(?s)dialect of cubelab's own ops.*'student\."),
    (lambda: add_op("student.x", " "), "meaning in words"),
    (lambda: add_op("student.x", MEANING, arity=4), "1, 2 or 3"),
    (lambda: TARGETS["wgsl"].lower("student.nothing", "exp({0})"), r"add_op\('student\.nothing'"),
    (lambda: TARGETS["wgsl"].lower("arith.add", "{0} + {1}"), "cubelab's own ops"),
    (lambda: TARGETS["wgsl"].lower(OP, "exp({1})"), r"uses \{1\}\n  hint: its operands are \{0\}"),
    (lambda: TARGETS["wgsl"].lower(OP, "exp(x)"), r"never uses operand \{0\}"),
    (lambda: TARGETS["wgsl"].lower(OP, "exp({0}"), None),  # fine as a format string: naga says
    (lambda: TARGETS["msl"].lower(OP, "exp({0)"), "not a spelling"),
    (lambda: cpu_step(OP, "np.exp"), "function of the operands"),
    (lambda: remove_op("arith.add"), "cannot be removed"),
])
def test_a_bad_declaration_is_refused_at_once_saying_what_to_write(declared, call, message):
    if message is None:
        call()
        return
    with pytest.raises(ValueError, match=message):
        call()


def test_the_verifier_holds_a_pass_to_the_plug_in_ops_shape(kernels_call):
    class SoftplusOnTheIndex:
        """A broken pass: feeds the op a u32 where its f32 result's type is expected."""

        name = "softplus-on-the-index"

        def run(self, definition: KernelDefinition) -> KernelDefinition:
            index = next(op for op in definition.walk() if op.name == "memory.index")
            for op in definition.walk():
                if op.name == OP:
                    op.operands = [index.operands[1]]
            return definition

    k = ci.instance(apply_softplus, cube_dim=CubeDim.new_1d(8))
    with pytest.raises(PassError, match=rf"`{OP}`.* is u32 where f32 \(the result's type\)"):
        ci.compiled(k, options=CompilationOptions(extra_passes=[SoftplusOnTheIndex()]))


def test_with_python_numbers_the_intrinsic_computes_in_python_through_the_cpu_step(softplus_op):
    assert intrinsic(OP)(0.0) == pytest.approx(np.log(2.0), rel=1e-6)
    with pytest.raises(ValueError, match="declare it first"):
        intrinsic("student.nothing")
