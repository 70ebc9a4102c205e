"""The compiler as a plug-in board: a target added in one place appears in every view; options are
checked where they are set and followed by every view of a client's launch; a student's pass runs
after the built-in ones, on every target and the CPU runtime, and is part of the cache key.

The constant-folding pass below is the compiler track's first exercise, written the way a student
would write it: walk the ops (`definition.walk()`), read constants from `arith.constant` ops'
`attrs["value"]`, and turn a foldable op into a constant in place (its result keeps its SSA name,
so nothing that uses it changes).
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import cubelab.inspect as ci
from cubelab import BufferArg, CubeCount
from cubelab.compiler import TARGETS, CompilationOptions, CompiledSource, Pass, options_key
from cubelab.compiler.info import info_layout
from cubelab.compiler.options import pass_identity
from cubelab.errors import BufferFailure, PassError
from cubelab.ir import KernelDefinition
from cubelab.prelude import ABSOLUTE_POS, CubeDim, SliceMut, cube, u32
from cubelab.runtime import events as ev


# -- a kernel with something to fold -------------------------------------------------------------
@cube(launch=True)
def offset_by_six(out: SliceMut[u32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = u32(2) * u32(3) + ABSOLUTE_POS


N = 8


def run_offset(client: Any) -> np.ndarray:
    out = client.create_from_slice(u32.as_bytes(np.zeros(N, dtype=np.uint32)))
    offset_by_six.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(N),
                         BufferArg.from_raw_parts(out, N))
    return u32.from_bytes(client.read_one(out))


# -- student passes ------------------------------------------------------------------------------
_FOLD = {"arith.add": operator.add, "arith.sub": operator.sub, "arith.mul": operator.mul}


class ConstantFold:
    """Constant folding: an `arith.add/sub/mul` of two scalar integer constants becomes one
    constant (wrapping mod 2**32, as the IR's integer arithmetic does)."""

    name = "constant-fold"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        constants: dict[int, int] = {}  # value id -> the constant it holds
        for op in definition.walk():  # program order: a constant before its uses
            if op.name == "arith.constant":
                constants[op.result.id] = op.attrs["value"]
                continue
            ty = op.results[0].type if len(op.results) == 1 else None
            if op.name in _FOLD and getattr(ty, "width", 0) == 1 and ty.elem.is_int and \
                    all(v.id in constants for v in op.operands):
                a, b = (constants[v.id] for v in op.operands)
                value = _FOLD[op.name](a, b) & 0xFFFFFFFF
                if ty.elem.value == "i32" and value >= 2**31:
                    value -= 2**32
                op.name, op.operands, op.attrs = "arith.constant", [], {"value": value}
                constants[op.result.id] = value
        return definition


class MulIsAdd:
    """A deliberately wrong "optimisation": a multiply of two constants becomes an add — so
    the runs show that a pass changes what runs, on every runtime."""

    name = "mul-is-add"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        constants = {op.result.id for op in definition.walk() if op.name == "arith.constant"}
        for op in definition.walk():
            if op.name == "arith.mul" and all(v.id in constants for v in op.operands):
                op.name = "arith.add"
        return definition


@dataclass
class DropConstants:
    """A broken pass: deletes every constant of the top block, leaving its uses dangling."""

    name: str = "drop-constants"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        definition.body.ops = [op for op in definition.body.ops if op.name != "arith.constant"]
        return definition


class FloatSix(ConstantFold):
    """A broken fold: gives a u32 result a float value."""

    name = "float-six"

    def run(self, definition: KernelDefinition) -> KernelDefinition:
        for op in ConstantFold().run(definition).walk():
            if op.name == "arith.constant" and op.attrs["value"] == 6:
                op.attrs = {"value": 6.5}
        return definition


@pytest.fixture
def restore_options(client):
    before = client.compilation_options()
    yield client
    client.set_compilation_options(**before.as_dict())


def test_the_student_passes_have_the_public_pass_shape():
    for p in (ConstantFold(), MulIsAdd(), DropConstants()):
        assert isinstance(p, Pass)


def test_constant_folding_changes_the_code_that_runs_and_the_result_stays_right(restore_options):
    client = restore_options
    plain = run_offset(client)
    with client.events.record(ev.CompileFinished, ev.CacheCleared) as rec:
        client.set_compilation_options(extra_passes=[ConstantFold()])
        folded = run_offset(client)
    assert list(plain) == list(folded) == [6 + i for i in range(N)]
    (cleared,) = rec.of(ev.CacheCleared)
    assert "extra_passes" in cleared.reason and "ConstantFold@" in cleared.reason
    (done,) = rec.of(ev.CompileFinished)  # a new pipeline: the options are half its key
    assert "ConstantFold@" in done.options_key
    assert done.passes[-1][0] == "constant-fold"
    # what ran: the product is a constant, in the IR every runtime executes (the CPU
    # runtime runs this IR) and in the source that runs on wgpu
    _, before, after = done.passes[-1]
    assert "value = 6}" in done.ir and "value = 6}" not in before
    assert after.count("arith.mul") < before.count("arith.mul")
    if done.target == "wgsl":
        assert ": u32 = 6u;" in done.source
    for name, text in done.extra_sources.items():  # every target saw the folded IR
        assert "6" in text, name


def test_a_pass_changes_what_runs_on_every_runtime(restore_options):
    client = restore_options
    client.set_compilation_options(extra_passes=[MulIsAdd()])
    assert list(run_offset(client)) == [5 + i for i in range(N)]  # 2 + 3, not 2 * 3


def test_inspect_passes_shows_each_extra_pass_with_its_before_and_after_ir(restore_options):
    client = restore_options
    client.set_compilation_options(extra_passes=[ConstantFold(), MulIsAdd()])
    k = ci.default_instance(offset_by_six, CubeDim.new_1d(N))
    records = ci.passes(k, client=client)
    assert [r.name for r in records][-2:] == ["constant-fold", "mul-is-add"]
    fold = records[-2]
    assert "value = 6}" in fold.after and "value = 6}" not in fold.before and fold.changed
    assert not records[-1].changed  # nothing left to turn into an add
    assert "constant-fold" not in [r.name for r in ci.passes(k)]


def test_a_pass_that_leaves_dangling_values_is_a_clear_error_naming_the_pass(restore_options):
    client = restore_options
    client.set_compilation_options(extra_passes=[DropConstants()])
    k = ci.default_instance(offset_by_six, CubeDim.new_1d(N))
    with pytest.raises(PassError, match=r"pass `drop-constants` left kernel `offset_by_six`") \
            as info:
        ci.compiled(k, client=client)
    assert "dangling value" in str(info.value)
    # a launch fails on the buffers it writes, with the same error as the root cause
    with pytest.raises(BufferFailure, match="drop-constants"):
        run_offset(client)


def test_a_pass_that_breaks_types_is_refused_before_any_target_sees_it(restore_options):
    client = restore_options
    client.set_compilation_options(extra_passes=[FloatSix()])
    k = ci.default_instance(offset_by_six, CubeDim.new_1d(N))
    with pytest.raises(PassError, match=r"(?s)pass `float-six`.*value 6\.5 is not a whole number"):
        ci.compiled(k, client=client)


def test_a_pass_that_raises_or_returns_nothing_is_named():
    class Raises:
        name = "raises"

        def run(self, definition: KernelDefinition) -> KernelDefinition:
            raise KeyError("oops")

    class ReturnsNone:
        name = "forgets-return"

        def run(self, definition: KernelDefinition) -> None:
            definition.body.ops.reverse()

    k = ci.default_instance(offset_by_six, CubeDim.new_1d(N))
    with pytest.raises(PassError, match="pass `raises` raised KeyError"):
        ci.compiled(k, options=CompilationOptions(extra_passes=[Raises()]))
    with pytest.raises(PassError, match="pass `forgets-return` returned NoneType"):
        ci.compiled(k, options=CompilationOptions(extra_passes=[ReturnsNone()]))


def test_a_pass_is_identified_by_its_class_its_code_and_its_settings():
    a, b = pass_identity(DropConstants()), pass_identity(DropConstants(name="other"))
    assert a.startswith("tests.test_compiler_plugins.DropConstants@") and a != b
    assert pass_identity(ConstantFold()) == pass_identity(ConstantFold())
    # the same class name with other code (a notebook cell run again, edited) is another pass
    spaces: list[dict[str, Any]] = [{}, {}]
    for space, body in zip(spaces, ("return d", "d.body.ops.clear(); return d")):
        exec(f"class Edited:\n    name = 'edited'\n    def run(self, d):\n        {body}\n",
             space)
    one, two = (pass_identity(s["Edited"]()) for s in spaces)
    assert one != two
    keys = {options_key(CompilationOptions(extra_passes=p))
            for p in ([], [ConstantFold()], [MulIsAdd()], [ConstantFold(), MulIsAdd()])}
    assert len(keys) == 4


def test_explain_with_a_client_shows_the_options_half_of_the_cache_key(restore_options):
    client = restore_options
    client.set_compilation_options(extra_passes=[ConstantFold()])
    rows = ci.explain(ci.default_instance(offset_by_six, CubeDim.new_1d(N)), client=client)
    field, value, why = rows[-1]
    assert field == "compilation options" and "ConstantFold@" in value
    assert "cache" in why


# -- options are checked where they are set ------------------------------------------------------
@pytest.mark.parametrize("changes, allowed", [
    ({"checked_io": "fxed"}, "'fixed', 'cubecl-0.11.3'"),
    ({"checked_io": 42}, "'fixed', 'cubecl-0.11.3'"),
    ({"checked_io": None}, "'fixed', 'cubecl-0.11.3'"),
    ({"loop_budget": -5}, "None (no loop guard) or a whole number from 1 to 4294967294"),
    ({"loop_budget": 1.5}, "a whole number"),
    ({"loop_budget": "big"}, "a whole number"),
    ({"loop_budget": 2**40}, "a whole number"),
    ({"extra_passes": [ConstantFold]}, "pass objects, not classes"),
    ({"extra_passes": ["fold"]}, "is not a pass"),
    ({"extra_passes": ConstantFold()}, "must be a list of passes"),
    ({"chekced_io": "fixed"}, "the options are checked_io, loop_budget, extra_passes"),
])
def test_a_bad_option_is_refused_at_once_and_changes_nothing(client, changes, allowed):
    before = client.compilation_options()
    with pytest.raises(ValueError) as info:
        client.set_compilation_options(**changes)
    assert allowed in str(info.value)
    assert client.compilation_options() == before


# -- every view of a client's launch compiles with that client's options -------------------------
OPTION_SETS = [dict(zip(("checked_io", "loop_budget", "extra_passes"), combo))
               for combo in itertools.product(("cubecl-0.11.3", "fixed"), (None, 1000, 1 << 28),
                                              ((), (ConstantFold(),)))]


def test_the_preview_is_what_the_server_compiled_under_every_option_combination(restore_options):
    from tests.fixtures.cpu_kernels import collatz  # a loop, so the loop guard has work

    client = restore_options
    n = 16
    start = client.create_from_slice(u32.as_bytes(np.arange(1, n + 1, dtype=np.uint32)))
    steps = client.create_from_slice(u32.as_bytes(np.zeros(n, dtype=np.uint32)))
    for options in OPTION_SETS:
        client.set_compilation_options(**options)
        with client.events.record(ev.CompileFinished) as rec:
            collatz.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(n),
                           BufferArg.from_raw_parts(start, n), BufferArg.from_raw_parts(steps, n))
            client.read_one(steps)
        (done,) = rec.of(ev.CompileFinished)
        k = ci.instance_from_id(collatz, done.kernel_id)
        c = ci.compiled(k, client=client)
        assert c.ir == done.ir, options
        assert [(r.name, r.before, r.after) for r in c.passes] == list(done.passes), options
        for name, src in c.sources.items():
            shown = done.source if name == done.target else done.extra_sources[name]
            assert src.source == shown, (name, options)


# -- a target added in one place appears in every view -------------------------------------------
class StubTarget:
    name = "stub"
    shown_only = True
    lexer = "c"

    def compile(self, kernel: KernelDefinition) -> CompiledSource:
        first = next((op.loc for op in kernel.walk() if op.loc is not None), None)
        return CompiledSource("stub", kernel.entry, f"/* stub target */ int {kernel.entry};\n",
                              info_layout(kernel), {1: first} if first else {})


@pytest.fixture
def stub_target(monkeypatch):
    monkeypatch.setitem(TARGETS, "stub", StubTarget())
    return "stub"


def test_a_stub_target_appears_in_every_view(stub_target, client, capsys, monkeypatch):
    from tests.fixtures.kernels import saxpy

    from cubelab.cli import main
    from cubelab.inspect.highlight import lexer_for
    from cubelab.runtime.debug_log import DebugLog
    from cubelab.widgets.kernel_inspector import KernelInspector

    k = ci.instance(saxpy, *([__import__("cubelab").prelude.f32]), sizes=(4,),
                    cube_dim=CubeDim.new_1d(4))
    c = ci.compiled(k)
    assert "stub target" in c.sources["stub"].source                       # inspect.compiled
    assert "STUB — " in ci.view(c).text() and "stub target" in ci.view(c).text()  # inspect.show
    assert "stub" in ci.correspondence(c).targets                          # line correspondence
    assert lexer_for("stub").name == "C"                                   # highlighting
    ki = KernelInspector(saxpy, client, live=False)                        # one tab per target
    assert "STUB" in ki.tab_names and "stub target" in ki.tab_html("STUB")
    assert KernelInspector(saxpy, show="ir,stub", live=False).tab_names == ["IR", "STUB"]
    assert main(["--color", "never", "stub", "tests/fixtures/kernels.py::saxpy", "--types",
                 "f32", "--sizes", "4", "--cube-dim", "4"]) == 0           # the CLI
    assert "stub target" in capsys.readouterr().out
    monkeypatch.setenv("CUBELAB_DEBUG_LOG", "stdout")                      # CUBELAB_DEBUG_TARGET
    monkeypatch.setenv("CUBELAB_DEBUG_TARGET", "stub")
    log = DebugLog.from_env()
    assert log is not None and log.target == "stub"
    monkeypatch.setenv("CUBELAB_DEBUG_TARGET", "nope")
    with pytest.raises(ValueError, match="the targets are wgsl, msl, cuda, stub"):
        DebugLog.from_env()
    unsubscribe = client.events.subscribe(log)
    try:
        client.clear_cache()
        run_offset(client)
    finally:
        unsubscribe()
    assert "```stub\n/* stub target */" in capsys.readouterr().out         # the compile event
