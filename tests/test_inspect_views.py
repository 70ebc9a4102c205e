"""cubelab.inspect: plain data, and renderers for notebooks (theme-aware HTML) and terminals."""

from __future__ import annotations

import re
import subprocess
import sys

from pygments.token import Comment, Name

from cubelab import CubeDim
from cubelab import inspect as I
from cubelab.inspect.highlight import css, to_html
from cubelab.inspect.lexer import CubeIrLexer
from cubelab.inspect.views import CodeView, NoteView, SectionsView, TableView
from cubelab.prelude import f32
from tests.fixtures.kernels import add, saxpy


def saxpy4():
    return I.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))


def test_importing_cubelab_imports_no_ipython_ipywidgets_or_rich():
    code = ("import sys, cubelab, cubelab.inspect, cubelab.exercises; "
            "bad = [m for m in ('IPython', 'ipywidgets', 'rich', 'ipykernel') if m in sys.modules];"
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_colour_is_a_jupyterlab_variable_with_a_literal_fallback():
    sheet = css()
    colours = re.findall(r"(?<![-\w])color:\s*([^;]+);", sheet)
    assert colours
    for c in colours:
        if c.strip() == "inherit":  # takes the page's colour: readable in any theme
            continue
        assert re.fullmatch(r"var\(--jp-[\w-]+,\s*(#[0-9a-fA-F]{3,6}|inherit)\)", c.strip()), c


def test_the_stylesheet_is_scoped_and_never_restyles_the_page():
    for rule in re.findall(r"^([^{\n]+)\{", css(), flags=re.M):
        assert rule.strip().startswith(".cubelab-code"), rule
    assert "td.linenos" not in css()


def test_ir_lexer_colours_values_ops_and_source_locations():
    toks = list(CubeIrLexer().get_tokens("%v3 = arith.add %v1, %v2 : f32  // line 7\n"))
    kinds = {text: tok for tok, text in toks}
    assert kinds["%v3"] in Name.Variable
    assert kinds["arith.add"] in Name.Builtin
    assert kinds["// line 7"] in Comment


def test_highlighted_html_marks_lines_and_carries_hover_titles():
    out = to_html("a\nb\nc", "python", hl_lines=[2], line_titles={3: "from kernel line 9"},
                  gutter={3: "py9"})
    assert 'class="hll"' in out
    assert 'title="from kernel line 9"' in out and "py9" in out


def test_every_view_renders_as_text_html_and_rich():
    from rich.console import Console

    views = [CodeView("x = 1", "python", title="t"), TableView(["a", "b"], [(1, 2)], title="t"),
             NoteView(["one"], title="n"), SectionsView([NoteView(["x"])], title="s")]
    for v in views:
        bundle = v._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "text/html"}
        assert "cubelab-code" in bundle["text/html"]
        console = Console(record=True, width=80)
        console.print(v)
        assert console.export_text().strip()


def test_a_kernel_instance_shows_ir_passes_and_wgsl_with_its_entry_name():
    text = I.view(saxpy4()).text()
    c = I.compiled(saxpy4())
    assert "IR (as expanded)" in text and "pass `checked-io`" in text
    assert f"WGSL — {c.wgsl.entry}" in text
    assert c.wgsl.entry.startswith("saxpy_f_f32_n_4_")


def test_a_kernel_id_is_explained_field_by_field():
    rows = {k: (v, why) for k, v, why in I.explain(saxpy4())}
    assert rows["mode"][0] == "Checked"
    assert rows["info.n"][0] == "4"
    assert rows["info.a"][0] == "()" and "never recompiles" in rows["info.a"][1]
    assert "cube_dim" in rows and "workgroup_size" in rows["cube_dim"][1]


def test_diff_says_why_a_launch_recompiled():
    a = I.instance(add, f32, comptime=(False,)).id()
    b = I.instance(add, f32, comptime=(False,), checked=False).id()
    c = I.instance(add, f32, comptime=(True,)).id()
    assert I.diff(a, b) == ["execution mode changed: Checked → Unchecked (launch vs launch_unchecked)"]
    assert I.diff(a, c) == ["`relu` changed: false → true"]
    assert I.diff(a, a) == []


def test_instance_from_id_rebuilds_the_kernel_a_launch_made():
    for k in (saxpy4(), I.instance(add, f32, comptime=(True,), checked=False)):
        fn = saxpy if k.fn is saxpy else add
        assert I.instance_from_id(fn, k.id()).id() == k.id()


def test_a_kernel_line_maps_to_the_ir_and_wgsl_lines_it_became():
    c = I.compiled(saxpy4(), checked_io="fixed")  # the clamp's `min(` marks the body's lines
    corr = I.correspondence(c, saxpy.file)
    guard = saxpy.first_line + 3  # `if ABSOLUTE_POS < x.len():`
    body = saxpy.first_line + 4  # `y[ABSOLUTE_POS] = ...`
    wgsl = c.wgsl.source.splitlines()
    assert any(wgsl[n - 1].strip().startswith("if ") for n in corr.targets["wgsl"][guard])
    assert any("min(" in wgsl[n - 1] for n in corr.targets["wgsl"][body])
    ir = c.ir.splitlines()
    assert any("memory.store" in ir[n - 1] for n in corr.ir[body])


def test_default_instance_previews_a_kernel_before_any_launch():
    k = I.default_instance(add)
    assert k.comptimes == (False,) and k.types == {"F": f32}


def test_show_in_a_terminal_prints_through_rich(capsys):
    v = I.show(saxpy)
    out = capsys.readouterr().out
    assert "@cube saxpy" in out and "expand" in out
    assert isinstance(v, SectionsView)


def test_a_cpu_trace_renders_as_its_step_table(cpu_client):
    import numpy as np

    from cubelab import BufferArg, CubeCount

    x = cpu_client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
    y = cpu_client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
    t = I.trace(saxpy.launch[f32], cpu_client, CubeCount.Static(1), CubeDim.new_1d(2), 4, 2.0,
                BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8), units=[1])
    text = I.view(t).text()
    assert "trace of `saxpy`, unit 1" in text and "memory.store" in text
