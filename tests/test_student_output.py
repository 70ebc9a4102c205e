"""The project's error catalogue, as a student meets it: every refused construct of
`docs/language.md` (the cases of `tests/test_language_errors.py`) and the common mistakes with
the API, each written in a notebook cell and run in a real IPython kernel, as JupyterLab would.

Each must fail with its own message, in the student's terms: the traceback names `Cell In[N]`,
and nothing anywhere in the notebook's outputs shows IPython's temporary file
(`/tmp/ipykernel…`), cubelab's own frames or generated code (`tests/student_view.py`). A
decoration-time refusal fails the defining cell; an expansion-time one fails the read of an
output the launch would have written (seed 001), also pointing at the kernel's cell and line.

One kernel runs every case (on the CPU runtime: which runtime reports an error does not change
its text). The chapters' own outputs get the same scan in `tests/test_notebooks.py`.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.student_view import ANSI, problems
from tests.test_language_errors import CASES, HEADER

nbformat = pytest.importorskip("nbformat", reason="the test extra (nbformat, nbclient) is missing")
from nbclient import NotebookClient  # noqa: E402

SETUP = """\
import numpy as np
from cubelab import Device, BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import *
client = Device.cpu().client()
def buffers():
    x = client.create_from_slice(f32.as_bytes(np.ones(4, np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.zeros(4, np.float32)))
    hist = client.create_from_slice(u32.as_bytes(np.zeros(4, np.uint32)))
    return x, out, hist
"""

LAUNCH = """
x, out, hist = buffers()
a = lambda h: BufferArg.from_raw_parts(h, 4)
bad.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), a(x), a(out), a(hist), a(x), a(x), 3)
client.read_one(out)
"""

# Mistakes with the API itself (not the kernel language): each must say what to do, from the
# student's line.
API_MISTAKES = {
    "float64 data": ("client.create_from_slice(np.arange(4.0))", "8-byte values"),
    "a helper inspected": ("@cube\ndef twice(v: f32) -> f32:\n    return v + v\n"
                           "inspect.wgsl(twice)", "is a @cube helper"),
    "a helper called": ("@cube\ndef thrice(v: f32) -> f32:\n    return v + v + v\n"
                        "thrice(1.0)", "@cube helper"),
    "arguments missing": ("@cube(launch=True)\ndef one(out: SliceMut[f32]):\n"
                          "    out[ABSOLUTE_POS] = f32(1.0)\n"
                          "one.launch(client, CubeCount.Static(1), CubeDim.new_1d(4))",
                          "takes client, cube_count, cube_dim and 1 more"),
    "generic types missing": ("F = Float.generic('F')\n@cube(launch=True)\n"
                              "def gen(out: SliceMut[F]):\n    out[ABSOLUTE_POS] = F(1.0)\n"
                              "x, out, hist = buffers()\n"
                              "gen.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), "
                              "BufferArg.from_raw_parts(out, 4))", "has generic types [F]"),
    "a typo": ("@cube(launch=True)\ndef typo(out: SliceMut[f32]):\n"
               "    out[ABSOLUTE_POS] = f32(1.0) + tpyo\n", "unknown name `tpyo`"),
}


@pytest.fixture(scope="module")
def catalogue():  # type: ignore[no-untyped-def]
    cells = ["%load_ext cubelab", SETUP]
    expected = []
    for name, lines, phase, message, _hint, _caret in CASES:
        src = HEADER + textwrap.indent("\n".join(lines), "    ") + "\n"
        cells.append(src + (LAUNCH if phase == "expand" else ""))
        expected.append((name, message))
    for name, (src, message) in API_MISTAKES.items():
        cells.append(src)
        expected.append((name, message))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute()
    return nb, expected


def test_every_catalogued_mistake_fails_its_cell_in_the_students_terms(catalogue):
    nb, expected = catalogue
    for i, (cell, (name, message)) in enumerate(zip(nb.cells[2:], expected), start=2):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{name}: the cell ran without an error"
        text = ANSI.sub("", "\n".join(errors[0].traceback))
        assert message in text, f"{name}: {message!r} not in\n{text}"
        assert "Cell In[" in text, f"{name}: the error does not name the student's cell\n{text}"


def test_nothing_in_the_catalogues_outputs_shows_temp_files_or_cubelabs_frames(catalogue):
    nb, _ = catalogue
    assert not problems(nb, "the error catalogue")
