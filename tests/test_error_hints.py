"""Every error cubelab raises for a student's mistake says what to do instead (#28).

Two walks, so neither a new `raise` nor a new error class can slip by:

- every `raise` in the package (read with `ast`) carries a hint: a builder's hint argument
  (`error(s, message, hint)` in the frontend, `KernelSourceError(..., hint)`, the rewrite's
  `refuse(node, message, hint)`, `type_refusal(message, hint)`), a message made by
  `errors.hinted(message, hint)` or holding "hint:", or a call to a function of the package that
  makes its message one of those ways — unless the raise is a re-raise, or its class is one of
  `INTERNAL`: an error that says cubelab itself is broken (a target lacking an op, a registry
  asked for an unknown key by cubelab's own code), each with the reason it is not the student's;
- every error class a student can meet, built the ways the project's own bad-input tests build
  them, prints its hint (`CATALOGUE`: a mistake per public entry point — launch arguments,
  memory, streams, capture, dynamic counts, options, the course build, exercises — run on both
  runtimes where it touches one).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import cubelab
import cubelab.exercises
import cubelab.inspect
from cubelab import BufferArg, CubeCount, CubeDim, TensorArg
from cubelab.errors import CubeError, KernelSourceError
from cubelab.prelude import ABSOLUTE_POS, SliceMut, cube, f32, u32

PACKAGE = Path(cubelab.__file__).parent
# the builders whose hint is an argument: name -> its position
HINT_ARGUMENT = {"error": 2, "refuse": 2, "_error": 3, "KernelSourceError": 5, "type_refusal": 1}
# errors that report a bug in cubelab, not a student's mistake: class -> why
INTERNAL = {
    "CodegenError": "a target that cannot lower an op of the IR (cubelab's gap, caught by tests)",
    "UnknownOpError": "an op added to the IR without its memory effect (a developer's step)",
    "KernelRuntimeError": "the CPU interpreter meeting IR it does not implement (cubelab's gap); "
                          "the student-facing runtime errors (loop cap, divergent barrier) are "
                          "built by _runaway / DivergentBarrier, which carry hints",
    "CudaError": "a CUDA driver call that failed: the device's report, raised as the launch's "
                 "failure with the call named",
    "KeyError": "a lookup in cubelab's own tables (an info field, a KernelId field, a ledger "
                "key, a traced unit) — the public lookups (exercises.get, Trace.steps_of) say "
                "what is known",
    "AttributeError": "Python's attribute protocol (`__getattr__` of a read-only value)",
    "RuntimeError": "an exercise's own consistency check (a launch that issued nothing)",
    "Unreadable": "an answer box's internal signal: its text (what was typed, how to write it) "
                  "becomes the verdict the student reads",
}
# a raise whose message was made (and hinted) elsewhere says so: `raise X(msg)  # hint: whose`


def _raises() -> list[tuple[Path, ast.Raise, str]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                fn = node.exc.func
                name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "?")
                out.append((path, node, name))
    return out


def _builders() -> set[str]:
    """Functions of the package that build a hinted message or error (`hinted(...)`, a hint
    argument, or "hint:" in their text)."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _hinted(node, set()):
                names.add(node.name)
    return names


def _hinted(node: ast.AST, builders: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "hint:" in sub.value:
            return True
        if isinstance(sub, ast.Call):
            fn = sub.func
            name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
            if name == "hinted" or name in builders:
                return True
            if name in HINT_ARGUMENT and (len(sub.args) > HINT_ARGUMENT[name]
                                          or any(k.arg == "hint" for k in sub.keywords)
                                          # `refuse(node, *_REFUSED[...])`: (message, hint)
                                          or any(isinstance(a, ast.Starred) for a in sub.args)):
                return True
    return False


def test_every_raise_in_cubelab_carries_a_hint_or_reports_cubelabs_own_bug():
    builders = _builders() - {"error", "refuse", "_error"}
    missing = []
    lines: dict[Path, list[str]] = {}
    for path, node, name in _raises():
        if name == "with_traceback" or name in INTERNAL:
            continue  # a re-raise of an error made elsewhere; cubelab's own bug
        if _hinted(node.exc, builders):
            continue
        src = lines.setdefault(path, path.read_text(encoding="utf-8").splitlines())
        if "# hint: " in src[node.end_lineno - 1]:  # says whose message (and hint) it raises
            continue
        missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}")
    assert not missing, "raises without a hint (use errors.hinted):\n" + "\n".join(missing)


def test_the_internal_allowlist_names_only_classes_that_exist_and_are_raised():
    raised = {name for _, _, name in _raises()}
    assert set(INTERNAL) <= raised | {"KeyError", "AttributeError", "RuntimeError"}, \
        set(INTERNAL) - raised


def test_every_cubelab_error_class_prints_its_hint():
    """Every CubeError subclass, built with a hinted message, says it on a line of its own —
    none swallows or reformats the message (BufferFailure wraps its cause's)."""
    from cubelab import errors

    classes = {c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, CubeError)}
    for sub in list(classes):
        classes |= set(sub.__subclasses__())
    assert len(classes) >= 10
    for cls in classes:
        if cls is errors.BufferFailure:
            err = cls(1, "k", ValueError(errors.hinted("bad", "do this")))
        elif issubclass(cls, KernelSourceError):
            err = cls("k", "f.py", 1, 0, "bad", "do this")
        else:
            try:
                err = cls(errors.hinted("bad", "do this"))
            except TypeError:
                continue  # a class with its own signature: built by its raise sites above
        assert "\n  hint: do this" in str(err), cls


# -- the catalogue: a mistake per public entry point, as the project's bad-input tests make them
@cube(launch=True)
def fill(out: SliceMut[f32], v: f32):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = v


def _mistakes(client):  # type: ignore[no-untyped-def]
    h = client.create_from_slice(np.zeros(4, np.float32))
    out = BufferArg.from_raw_parts(h, 4)
    return {
        "a launch without its client": lambda: fill.launch(CubeCount.Static(1),
                                                           CubeDim.new_1d(4), out, 1.0),
        "a string for an f32 argument": lambda: fill.launch(client, CubeCount.Static(1),
                                                            CubeDim.new_1d(4), out, "one"),
        "a u32 argument out of range": lambda: _u32_kernel().launch(
            client, CubeCount.Static(1), CubeDim.new_1d(1), -1),
        "a handle for a BufferArg": lambda: fill.launch(client, CubeCount.Static(1),
                                                        CubeDim.new_1d(4), h, 1.0),
        "a BufferArg longer than its handle": lambda: BufferArg.from_raw_parts(h, 64),
        "a TensorArg whose ranks differ": lambda: TensorArg.from_raw_parts(h, (2, 2), (1,)),
        "a negative CubeCount": lambda: CubeCount.Static(-1),
        "a too-small dynamic count": lambda: CubeCount.Dynamic(client.empty(4)),
        "a float64 array": lambda: client.create_from_slice(np.zeros(4)),
        "a complex array": lambda: client.create_from_slice(np.zeros(4, np.complex64)),
        "a write larger than the buffer": lambda: client.write(h, np.zeros(8, np.float32)),
        "a negative allocation": lambda: client.empty(-4),
        "an allocation over the device's limit": lambda: client.zeros(
            client.properties().max_buffer_size + 1),
        "a bad stream id": lambda: client.set_stream(0),
        "a misspelt compilation option": lambda: client.set_compilation_options(checkd_io="fixed"),
        "an unknown checked_io rule": lambda: client.set_compilation_options(checked_io="fxed"),
        "a negative loop budget": lambda: client.set_compilation_options(loop_budget=-5),
        "a pass class instead of a pass": lambda: client.set_compilation_options(
            extra_passes=[type("P", (), {"name": "p", "run": lambda self, d: d})]),
        "calling a kernel": lambda: fill(out, 1.0),
        "stop_capture without start": lambda: client.stop_capture(),
        "an unknown exercise": lambda: cubelab.exercises.get("ch99.nothing"),
        "an access map of a dynamic count": lambda: cubelab.inspect.access_map(
            fill.launch, client, CubeCount.Dynamic(client.empty(16)), CubeDim.new_1d(4), out,
            1.0),
    }


def _u32_kernel():  # type: ignore[no-untyped-def]
    @cube(launch=True)
    def takes_u32(n: u32):
        pass

    return takes_u32


def test_every_mistake_of_the_catalogue_is_refused_with_a_hint(client):  # type: ignore[no-untyped-def]
    unhinted = []
    for what, mistake in _mistakes(client).items():
        try:
            mistake()
        except Exception as exc:  # noqa: BLE001 - every refusal is examined
            text = str(exc)
            if "\n  hint: " not in text and not (isinstance(exc, KernelSourceError) and exc.hint):
                unhinted.append(f"{what}: {type(exc).__name__}: {text}")
        else:
            unhinted.append(f"{what}: accepted")
    assert not unhinted, "\n".join(unhinted)
    client.sync()


def test_the_catalogue_covers_every_public_area():
    src = inspect.getsource(_mistakes)
    for area in ("launch(", "BufferArg", "TensorArg", "CubeCount", "create_from_slice", "write(",
                 "empty(", "zeros(", "set_stream", "set_compilation_options", "capture",
                 "exercises", "access_map"):
        assert area in src, area
