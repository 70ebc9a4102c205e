"""Every construct the kernel language refuses gets an error that names the kernel, points at
file:line:col with a caret under the offending construct, and says what to write instead.

Each case is a kernel written to a real module file (so the error can quote its line): either
the `@cube` decoration refuses it (the AST rewrite) or the expansion does (`define()`, which a
launch runs on the device thread and turns into a buffer failure). The same list is the table of
refused constructs in `docs/language.md`; a test keeps the two in step.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.errors import BufferFailure, FeatureError, KernelSourceError
from cubelab.inspect import instance
from cubelab.prelude import f32

HEADER = """\
import numpy as np
from cubelab.prelude import *


def plain_python(v):
    return v


@cube
def helper_recursive(v: f32):
    return helper_recursive(v)


@cube
def helper_comptime(v: f32, n: Comptime[int]):
    return v * n


@cube_type
class Pt:
    x: f32
    y: u32


@cube_type
class Holder:
    data: SliceMut[f32]


@cube_type(runtime_variants=True)
class Sh:
    class Dot:
        r: f32

    class Nil:
        pass


@cube_type
class Ce:
    class A:
        v: f32

    class B:
        v: f32


@cube(launch=True)
def bad(x: Slice[f32], out: SliceMut[f32], hist: SliceMut[Atomic[u32]],
        v2: Slice[Vector[f32, 2]], v4: Slice[Vector[f32, 4]], n: u32):
    i = ABSOLUTE_POS
"""

# (case id, kernel lines (the LAST one is the offending line), phase, message part, hint part,
#  the text the caret must point at)
CASES = [
    ("unknown struct field", ["out[i] = Pt(x[i], n).z"], "expand", "Pt has no field `z`",
     "its fields: x, y", "Pt(x[i], n).z"),
    ("assigning a struct field the wrong type", ["p = Pt(x[i], n)", "p.y = x[i]"], "expand",
     "the field `y` of Pt is u32, assigned f32", "cast the value: u32(...)", "p.y = x[i]"),
    ("a buffer field built in a kernel", ["h = Holder(out)"], "expand",
     "a struct holding a buffer cannot be built inside a kernel",
     "pass a Holder as a launch argument", "Holder(out)"),
    ("missing struct field", ["p = Pt(x[i])"], "expand", "Pt(...) is missing the field `y`",
     "name each field once", "Pt(x[i])"),
    ("a field of a runtime-variant enum before a match", ["s = Sh.Dot(x[i])", "out[i] = s.r"],
     "expand", "its variant is known only at run time", "match it first", "s.r"),
    ("a literal pattern on a runtime payload",
     ["s = Sh.Dot(x[i])", "match s:", "    case Sh.Dot(1.0):", "        out[i] = 1.0"], "expand",
     "a pattern cannot compare it at expansion", "test it in a guard", "Sh.Dot(1.0)"),
    ("a comptime enum's variant changed by a runtime branch",
     ["e = Ce.A(x[i])", "if x[i] > 0.0:", "    e = Ce.B(x[i])"], "expand",
     "`e` holds a Ce.A but is assigned", "runtime_variants=True", "e = Ce.B(x[i])"),
    ("class", ["class Point:", "    pass"], "decorate", "classes cannot be defined",
     "define them outside", "class Point"),
    ("list comprehension", ["ys = [v for v in range(3)]"], "decorate",
     "list comprehensions are not allowed", "use a for loop", "[v for"),
    ("generator expression", ["s = sum(v for v in range(3))"], "decorate",
     "generator expressions are not allowed", "use a for loop", "(v for v"),
    ("try", ["try:", "    out[i] = x[i]", "except Exception:", "    pass"], "decorate",
     "`try` is not allowed", "guard with `if`", "try:"),
    ("with", ["with open('f'):", "    pass"], "decorate", "`with` is not allowed",
     "without the context manager", "with open"),
    ("lambda", ["f = lambda v: v"], "decorate", "`lambda` is not allowed",
     "write a @cube helper", "lambda v"),
    ("global", ["global counter"], "decorate", "`global` is not allowed",
     "pass the value as an argument", "global counter"),
    ("keyword argument", ["out[i] = max(x[i], f32(0.0), key=None)"], "decorate",
     "keyword arguments are not allowed", "pass arguments by position", "max("),
    ("nested function", ["def inner():", "    pass"], "decorate",
     "functions cannot be defined inside a kernel", "define a @cube helper at module level",
     "def inner"),
    ("writing a read-only argument", ["x[i] = f32(1.0)"], "decorate",
     "`x` is a Slice (read-only)", "SliceMut", "x[i]"),
    ("for-else", ["for j in range(3):", "    pass", "else:", "    pass"], "decorate",
     "`for ... else` is not allowed", "set a flag before `break`", "for j"),
    ("iterating a runtime value", ["for v in n:", "    pass"], "expand",
     "a kernel loop cannot iterate over a runtime u32", "a comptime tuple or list",
     "for v in n:"),
    ("plain Python function on a runtime value", ["out[i] = plain_python(x[i])"], "expand",
     "`plain_python` is a plain Python function called on a runtime value",
     "decorate it with @cube", "plain_python("),
    ("unroll with runtime bounds", ["for j in unroll(range(n)):", "    out[i] = x[j]"], "expand",
     "unroll(range(...)) needs comptime bounds", "Comptime[int]", "for j"),
    ("runtime value for a Comptime helper argument", ["out[i] = helper_comptime(x[i], n)"],
     "expand", "is Comptime but got a runtime value", "pass a Python value",
     "helper_comptime("),
    ("mismatched vector widths", ["w = v2[0] + v4[0]"], "expand",
     "vectors of widths 2 and 4", "same width", "v2[0] + v4[0]"),
    ("wrong number of indices", ["tile = SharedMemory[f32]((3, 3))", "out[i] = tile[i, 0, 1]"],
     "expand", "3 indices into the shared memory of shape (3, 3)", "one index per axis",
     "tile[i, 0, 1]"),
    ("several indices into a Slice", ["out[i] = x[i, 0]"], "expand",
     "2 indices into a Slice, which is one-dimensional", "declare a Tensor", "x[i, 0]"),
    ("shared memory with a runtime length", ["tile = SharedMemory[f32](n)"], "expand",
     "shared memory with a runtime length", "Comptime", "SharedMemory[f32](n)"),
    # reported where the helper calls itself (the expansion is inside the helper by then)
    ("recursion", ["out[i] = helper_recursive(x[i])"], "expand", "calls itself (recursion)",
     "write a loop", "helper_recursive(v)"),
    ("integer `/`", ["out[i] = f32(n / 2)"], "expand", "`/` on u32 values", "`//`", "n / 2"),
    ("assigning an atomic", ["hist[i] = u32(1)"], "expand", "holds atomics",
     "store(v)", "hist[i] = u32(1)"),
    ("while True without an exit", ["while True:", "    out[i] = x[i]"], "expand",
     "never ends", "add a `break`", "while True"),
    # the functions a student reaches for out of habit get the kernel's own spelling
    ("print", ["print(x[i])"], "expand", "`print` is a plain Python function",
     'debug_print("x = {}", x)', "print("),
    ("len()", ["out[i] = f32(len(x))"], "expand", "`len` is a plain Python function",
     "`x.len()`", "len(x)"),
    ("numpy math", ["out[i] = np.sqrt(x[i])"], "expand", "`sqrt` is a plain Python function",
     "write `sqrt(x)` (from the prelude) or `F.sqrt(x)`", "np.sqrt("),
    ("f-string", ["s = f'{i}'"], "decorate", "f-strings are not allowed", "debug_print",
     "f'{i}'"),
    ("Python error while expanding", ["out[i] = f32(i32(7 // 0))"], "expand",
     "Python raised ZeroDivisionError", "runs as plain Python when the kernel is built",
     "7 // 0"),
    ("out-of-range literal", ["out[i] = f32(n + 5000000000)"], "expand",
     "the literal 5000000000 does not fit in u32", "u32 holds 0..4294967295", "n + 5000000000"),
    ("negative literal on u32", ["out[i] = f32(n + -1)"], "expand",
     "the literal -1 does not fit in u32", "subtract a positive literal", "n + -1"),
    # reported where the literal fixed the type, not where the types meet
    ("a local typed by a bare literal", ["acc = 0", "for j in range(n):", "    acc += n"],
     "expand", "`acc` is i32 from here on", "`acc = u32(...)`", "acc = 0"),
    # match: patterns are comptime values, `a | b` of them, or `_`
    ("capture pattern on a runtime subject", ["match n:", "    case k:", "        pass"],
     "expand", "a capture pattern matches only a comptime subject, and this one is a runtime "
     "u32", "use the subject itself instead of a capture", "k:"),
    ("class or sequence pattern on a runtime subject",
     ["match n:", "    case [1, 2]:", "        pass"], "expand",
     "a sequence pattern matches only a comptime subject", "(`case 1 | 2:`) or `_`", "[1, 2]"),
    ("runtime match on a float", ["match x[i]:", "    case 1:", "        pass"], "expand",
     "a `match` on a runtime f32 value", "write if/elif/else", "match x[i]"),
    ("match pattern outside the subject's type", ["match n:", "    case -1:", "        pass"],
     "expand", "`case -1` cannot match a runtime u32 subject", "comptime u32 values", "-1:"),
]

_counter = itertools.count()


def load(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    src = HEADER + textwrap.indent("\n".join(lines), "    ") + "\n"
    path = tmp_path / f"bad_kernel_{next(_counter)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path, src


def refusal(tmp_path: Path, lines: list[str], phase: str) -> tuple[KernelSourceError, Path, str]:
    if phase == "decorate":
        with pytest.raises(KernelSourceError) as info:
            load(tmp_path, lines)
        path = sorted(tmp_path.glob("bad_kernel_*.py"))[-1]
        return info.value, path, path.read_text()
    module, path, src = load(tmp_path, lines)
    with pytest.raises(KernelSourceError) as info:
        instance(module.bad, cube_dim=CubeDim.new_1d(4)).define()
    return info.value, path, src


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_construct_names_kernel_line_caret_and_alternative(tmp_path, case):
    _, lines, phase, message, hint, caret_at = case
    err, path, src = refusal(tmp_path, lines, phase)
    text = str(err)
    src_lines = src.splitlines()
    # the offending line is the one holding the caret's target, searched from the kernel's body
    body_start = src_lines.index("    i = ABSOLUTE_POS")
    line_no = next(n for n in [*range(body_start, len(src_lines)), *range(body_start)]
                   if caret_at in src_lines[n]) + 1
    col = src_lines[line_no - 1].index(caret_at)
    assert f"in kernel `bad` at {path}:{line_no}:{col + 1}:" in text, text
    assert message in text, text
    assert hint in text, text
    quoted = src_lines[line_no - 1].strip()
    shift = len(src_lines[line_no - 1]) - len(src_lines[line_no - 1].lstrip())
    assert f"    {quoted}\n    {' ' * (col - shift)}^" in text, text


def test_the_docs_table_lists_every_refused_construct():
    doc = (Path(__file__).parent.parent / "docs" / "language.md").read_text()
    table = doc[doc.index("## Refused constructs"):]
    for case in CASES:
        assert f"| {case[0]} |" in table, f"docs/language.md's table lacks `{case[0]}`"


def test_expansion_errors_become_a_failure_on_the_buffers_the_launch_writes(client, tmp_path):
    module, _, _ = load(tmp_path, ["out[i] = plain_python(x[i])"])
    x = client.create_from_slice(f32.as_bytes(np.ones(4, np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.zeros(4, np.float32)))
    hist = client.create_from_slice(f32.as_bytes(np.zeros(4, np.float32)))
    module.bad.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                      BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4),
                      BufferArg.from_raw_parts(hist, 4), BufferArg.from_raw_parts(x, 4),
                      BufferArg.from_raw_parts(x, 4), 3)
    with pytest.raises(BufferFailure) as info:
        client.read_one(out)
    assert "plain Python function called on a runtime value" in str(info.value)


def test_plane_ops_record_the_subgroup_feature_and_a_device_without_it_refuses(tmp_path):
    import dataclasses

    from cubelab.runtime.cpu.server import CpuServer
    from cubelab.runtime.events import EventBus

    module, _, _ = load(tmp_path, ["out[i] = plane_sum(x[i]) + f32(PLANE_DIM)"])
    kernel = instance(module.bad, cube_dim=CubeDim.new_1d(4))
    assert kernel.define().required_features == {"subgroup"}
    server = CpuServer(EventBus())
    server.properties = dataclasses.replace(server.properties, features=frozenset())
    with pytest.raises(FeatureError, match=re.escape("need the adapter feature(s) ['subgroup']")):
        server.compile(kernel, kernel.id(), 0)


@pytest.mark.parametrize("signature, message, hint, caret_at", [
    ("out: SliceMut[Atomic[f32]]", "Atomic[...] holds u32 or i32", "Atomic[u32] or Atomic[i32]",
     "Atomic[f32]"),
    ("flags: Slice[bool_]", "buffers of bool are not allowed", "store flags as u32",
     "Slice[bool_]"),
    ("v: Slice[Vector[f32, 3]]", "vector widths are 1, 2 or 4", "width of 1, 2 or 4",
     "Vector[f32, 3]"),
], ids=["Atomic[f32]", "Slice[bool_]", "Vector width 3"])
def test_a_refused_type_in_a_signature_names_the_kernel_and_the_annotation(
        tmp_path, signature, message, hint, caret_at):
    from cubelab.errors import KernelTypeError

    src = ("from cubelab.prelude import *\n\n\n@cube(launch=True)\n"
           f"def typed(x: Slice[f32],\n          {signature}):\n    pass\n")
    path = tmp_path / f"typed_{next(_counter)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(KernelTypeError) as info:  # a TypeError too, for code that catches one
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    text = str(info.value)
    col = src.splitlines()[5].index(caret_at)
    assert f"in kernel `typed` at {path}:6:{col + 1}: {message}" in text, text
    assert f"hint: {hint}" in text or hint in text
    frames = [f.filename for f in __import__("traceback").extract_tb(info.value.__traceback__)]
    assert not any("cubelab/frontend" in f for f in frames), frames  # only the student's frames
