"""`%load_ext cubelab`, `%%cube` and `%cubelab`, driven through IPython's InteractiveShell."""

from __future__ import annotations

import os

import pytest

from cubelab.widgets import KernelInspector

DOUBLE = '''%%cube{opts}
from cubelab.prelude import *

@cube(launch=True)
def double(x: SliceMut[f32]):
    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0
'''

LAUNCH = '''
import numpy as np
from cubelab import Device, BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
c = Device.default().client()
h = c.create_from_slice(f32.as_bytes(np.arange(4, dtype=np.float32)))
double.launch(c, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(h, 4))
result = f32.from_bytes(c.read_one(h)).tolist()
'''


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "cubelab")
    return shell


def test_a_cube_cell_defines_its_kernels_and_shows_an_inspector(ip, client):
    r = ip.run_cell(DOUBLE.format(opts=""))
    assert r.success, r.error_in_exec
    assert isinstance(r.result, KernelInspector)
    assert r.result.model()["tabs"][0] == "Source"
    assert "Cell In[" in r.result.widget.children[0].value  # not IPython's temp file name
    assert "x[ABSOLUTE_POS] * 2.0" in ip.user_ns["double"].source
    assert ip.run_cell(LAUNCH).success
    assert ip.user_ns["result"] == [0.0, 2.0, 4.0, 6.0]


def test_show_picks_the_inspector_views_and_no_display_shows_nothing(ip):
    r = ip.run_cell(DOUBLE.format(opts=" --show expanded,ir,wgsl"))
    assert r.result.model()["tabs"] == ["Expanded", "IR", "WGSL"]
    r = ip.run_cell(DOUBLE.format(opts=" --no-display"))
    assert r.success and r.result is None and "double" in ip.user_ns


def test_a_bad_show_option_is_a_usage_error(ip, capsys):
    r = ip.run_cell(DOUBLE.format(opts=" --show ptx"))
    assert not r.success
    assert "unknown inspector view 'ptx'" in capsys.readouterr().err


def test_a_kernel_error_in_a_cube_cell_points_at_the_cell_line_with_a_caret(ip, capsys):
    r = ip.run_cell('''%%cube
from cubelab.prelude import *

@cube(launch=True)
def bad(x: SliceMut[f32]):
    x[ABSOLUTE_POS] = (lambda v: v)(x[ABSOLUTE_POS])
''')
    assert not r.success
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "line 6:" in text and "`lambda` is not allowed" in text
    lines = text.splitlines()
    src = next(i for i, ln in enumerate(lines) if "(lambda v: v)" in ln)
    caret = lines[src + 1]
    assert caret.strip() == "^" and lines[src][caret.index("^"):].startswith("lambda")


def test_a_python_error_in_a_cube_cell_shows_only_the_cells_frames(ip, capsys):
    r = ip.run_cell("%%cube\ndef f():\n    return 1 / 0\nf()\n")
    assert not r.success
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "line 3, in f" in text and "ZeroDivisionError" in text
    assert "magic.py" not in text and "interactiveshell" not in text.lower()


def test_log_on_prints_the_compile_log_and_off_stops_it(ip, capsys, client):
    ip.run_cell(DOUBLE.format(opts=" --no-display"))
    ip.run_line_magic("cubelab", "reset")
    ip.run_line_magic("cubelab", "log on")
    try:
        assert ip.run_cell(LAUNCH).success
    finally:
        ip.run_line_magic("cubelab", "log off")
    out = capsys.readouterr().out
    assert "[START_KERNEL_COMPILATION]" in out and "@compute" in out
    assert ip.run_cell(LAUNCH).success
    assert "[START_KERNEL_COMPILATION]" not in capsys.readouterr().out


def test_log_msl_prints_the_msl_source(ip, capsys, client):
    ip.run_cell(DOUBLE.format(opts=" --no-display"))
    ip.run_line_magic("cubelab", "reset")
    ip.run_line_magic("cubelab", "log msl")
    try:
        assert ip.run_cell(LAUNCH).success
    finally:
        ip.run_line_magic("cubelab", "log off")
    out = capsys.readouterr().out
    assert "```msl" in out and "[[kernel]]" in out


def test_log_takes_every_registered_target(ip, monkeypatch):
    """`%cubelab log <target>` iterates the registry: a target added there is accepted at once
    (tests/test_compiler_plugins.py finds it in every other view)."""
    from cubelab.compiler.targets import TARGETS
    from cubelab.runtime.device import Device
    from tests.test_compiler_plugins import StubTarget

    monkeypatch.setitem(TARGETS, "stub", StubTarget())
    ip.run_line_magic("cubelab", "log stub")
    try:
        assert Device.default().debug_log.target == "stub"
    finally:
        ip.run_line_magic("cubelab", "log off")


def test_monitor_returns_the_live_views_and_reset_zeroes_them(ip, client):
    box = ip.run_line_magic("cubelab", "monitor")
    cache = box.views[0]
    ip.run_cell(DOUBLE.format(opts=" --no-display"))
    ip.run_line_magic("cubelab", "reset")
    assert ip.run_cell(LAUNCH).success
    cache.refresh()
    assert cache.model()["total_compiles"] == 1
    ip.run_line_magic("cubelab", "reset")
    cache.refresh()
    assert cache.model()["total_compiles"] == 0
    for v in box.views:
        v.close()


def test_memory_shows_the_memory_board_and_cleanup_gives_pages_back(ip):
    board = ip.run_line_magic("cubelab", "memory")
    h = board.client.empty(3 << 20)  # an exclusive page
    board.client.sync()
    board.refresh()
    assert h.id in board.model()["handles"]
    del h
    before = board.client.memory_usage().bytes_reserved
    board.close()
    board = ip.run_line_magic("cubelab", "memory cleanup")
    assert board.client.memory_usage().bytes_reserved <= before - (3 << 20)
    board.close()


def test_device_switches_what_device_default_returns(ip, monkeypatch, capsys):
    from cubelab import Device

    monkeypatch.setenv("CUBELAB_DEVICE", "wgpu")
    ip.run_line_magic("cubelab", "device cpu")
    assert os.environ["CUBELAB_DEVICE"] == "cpu"
    assert Device.default().kind == "cpu"
    ip.run_line_magic("cubelab", "device wgpu")
    assert Device.default().kind == "wgpu"
    assert "Device.default() is now wgpu" in capsys.readouterr().out


def test_unknown_cubelab_commands_are_usage_errors(ip):
    from IPython.core.error import UsageError

    for line in ("frobnicate", "log loud", "device tpu", "memory now"):
        with pytest.raises(UsageError):
            ip.run_line_magic("cubelab", line)


def test_reset_zeroes_every_open_monitor_not_only_the_magics_own(ip, wgpu_client):
    from cubelab.widgets import CacheMonitor

    cm = CacheMonitor(wgpu_client, live=False)
    ip.run_cell(DOUBLE.format(opts=" --no-display"))
    assert ip.run_cell(LAUNCH).success
    cm.refresh()
    assert cm.model()["total_hits"] + cm.model()["total_compiles"] >= 1
    ip.run_line_magic("cubelab", "reset")
    cm.refresh()
    assert cm.model()["total_compiles"] == cm.model()["total_hits"] == 0
    cm.close()


def test_a_device_thread_error_from_a_cube_cell_names_the_cell_on_the_buffer_board(ip, wgpu_client):
    from cubelab.widgets import BufferBoard

    board = BufferBoard(wgpu_client, live=False)
    # a Comptime[int] without a default: which values fail is known only at launch, so the cell
    # defines it (the eager check has no verdict) and the failure is the launch's
    r = ip.run_cell('''%%cube --no-display
from cubelab.prelude import *

def boom(n):
    raise ValueError("boom")

@cube(launch=True)
def broken_in_cell(out: SliceMut[f32], n: Comptime[int]):
    out[ABSOLUTE_POS] = f32(comptime(boom(n)))
''')
    assert r.success
    assert ip.run_cell('''
from cubelab import Device, BufferArg, CubeCount, CubeDim
c = Device.default().client()
h = c.empty(16)
broken_in_cell.launch(c, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(h, 4),
                      3)
c.sync()
hid = h.id
''').success
    board.refresh()
    error = board.model()[ip.user_ns["hid"]]["error"]
    assert "Cell In[" in error and ", line 9:" in error
    board.close()


def test_a_cube_cell_with_only_a_helper_shows_its_source_and_expansion(ip):
    r = ip.run_cell('''%%cube
from cubelab.prelude import *

@cube
def twice(v):
    return v + v
''')
    assert r.success
    m = r.result.model()
    assert m["kernel_ids"] == [] and "inlined" in r.result.tab_html("IR")
    assert ">expand<" in r.result.tab_html("Expanded")


RACY_CELL = '''
import numpy as np
from cubelab import Device, BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from tests.fixtures.access_kernels import tree_sum_no_sync, divide_by_zero
c = Device.default().client()
x = c.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
out = c.create_from_slice(f32.as_bytes(np.zeros(16, dtype=np.float32)))
tree_sum_no_sync.launch(c, CubeCount.Static(2), CubeDim.new_1d(8),
                        BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(out, 2))
divide_by_zero.launch(c, CubeCount.Static(1), CubeDim.new_1d(4),
                      BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
'''


def test_races_on_prints_the_races_under_the_cell_and_off_stops_it(ip, monkeypatch, capsys):
    monkeypatch.setenv("CUBELAB_DEVICE", "cpu")
    ip.run_line_magic("cubelab", "races on")
    ip.run_line_magic("cubelab", "nonfinite on")
    capsys.readouterr()
    assert ip.run_cell(RACY_CELL).success
    out = capsys.readouterr().out
    assert "race(s) in `tree_sum_no_sync`" in out and "race on sm[" in out
    assert "non-finite value(s) made in `divide_by_zero`" in out and "y / f32(0.0)" in out
    ip.run_line_magic("cubelab", "races off")
    ip.run_line_magic("cubelab", "nonfinite off")
    capsys.readouterr()
    assert ip.run_cell(RACY_CELL).success
    assert "race" not in capsys.readouterr().out


STRIDED_CELL = '''
import numpy as np
from cubelab import Device, BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from tests.fixtures.cost_kernels import strided_read, shared_strided
c = Device.default().client()
x = c.create_from_slice(f32.as_bytes(np.arange(128, dtype=np.float32)))
out = c.empty(4 * 64)
strided_read.launch(c, CubeCount.Static(1), CubeDim.new_1d(64), BufferArg.from_raw_parts(x, 128),
                    BufferArg.from_raw_parts(out, 64), 2)
shared_strided.launch(c, CubeCount.Static(1), CubeDim.new_1d(64),
                      BufferArg.from_raw_parts(out, 64), 32)
'''


def test_cost_on_prints_each_launchs_coalescing_and_conflicts_and_off_stops_it(ip, monkeypatch,
                                                                               capsys):
    monkeypatch.setenv("CUBELAB_DEVICE", "cpu")
    ip.run_line_magic("cubelab", "cost on")
    assert "cost report on" in capsys.readouterr().out
    assert ip.run_cell(STRIDED_CELL).success
    out = capsys.readouterr().out
    assert "memory cost of `strided_read`" in out and "50% coalesced" in out
    assert "x[i * stride]" in out  # the student's own line
    assert "memory cost of `shared_strided`" in out and "32-way bank conflict" in out
    assert "race" not in out  # cost on is not races on
    ip.run_line_magic("cubelab", "cost off")
    capsys.readouterr()
    assert ip.run_cell(STRIDED_CELL).success
    assert "memory cost" not in capsys.readouterr().out


def test_races_on_needs_the_cpu_runtime(ip, monkeypatch, wgpu_client):
    from IPython.core.error import UsageError

    monkeypatch.setenv("CUBELAB_DEVICE", "wgpu")
    with pytest.raises(UsageError, match="device cpu"):
        ip.run_line_magic("cubelab", "races on")


def _err(capsys) -> str:
    shown = capsys.readouterr()
    return shown.out + shown.err


def test_a_cube_cell_is_labelled_with_its_own_execution_count(ip):
    n = ip.execution_count
    r = ip.run_cell(DOUBLE.format(opts=""), store_history=True)
    assert r.success and r.execution_count == n
    header = r.result.widget.children[0].value
    assert f"Cell In[{n}], line 4" in header and f"Cell In[{n + 1}]" not in header


def test_a_definition_error_names_the_cell_that_holds_it(ip, capsys):
    n = ip.execution_count
    r = ip.run_cell('%%cube\nfrom cubelab.prelude import *\n\n@cube(launch=True)\n'
                    'def bad(x: SliceMut[f32]):\n    x[0] = (lambda v: v)(x[0])\n',
                    store_history=True)
    assert not r.success
    assert f"Cell In[{n}], line 6:" in _err(capsys)


def test_a_typo_in_a_cube_cell_fails_that_cell_with_a_caret(ip, capsys):
    n = ip.execution_count
    r = ip.run_cell('%%cube\nfrom cubelab.prelude import *\n\n@cube(launch=True)\n'
                    'def typo(x: SliceMut[f32]):\n    x[ABSOLUTE_POS] = x[ABSOLUT_POS] * 2.0\n',
                    store_history=True)
    assert not r.success
    text = _err(capsys)
    assert f"Cell In[{n}], line 6:" in text and "unknown name `ABSOLUT_POS`" in text
    assert "did you mean `ABSOLUTE_POS`?" in text
    lines = text.splitlines()
    src = next(i for i, ln in enumerate(lines) if "x[ABSOLUT_POS]" in ln)
    assert lines[src][lines[src + 1].index("^"):].startswith("ABSOLUT_POS")


SETUP = '''
import numpy as np
from cubelab.prelude import *
from cubelab import Device, BufferArg, CubeCount, CubeDim
c = Device.default().client()
'''
RUN = '''
h = c.create_from_slice(u32.as_bytes(np.arange(4, dtype=np.uint32)))
bad.launch(c, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(h, 4))
c.read_one(h)
'''


@pytest.mark.parametrize("body, needle", [
    ("x[ABSOLUTE_POS] = x[ABSOLUTE_POS] / u32(2)", "x[ABSOLUTE_POS] / u32(2)"),
    ("x[ABSOLUTE_POS] = u32(np.sqrt(x[ABSOLUTE_POS]))", "np.sqrt("),
    ("x[ABSOLUTE_POS] = u32(1) if x[ABSOLUTE_POS] > u32(2) else 0.5", "u32(1) if"),
], ids=["div-u32", "np.sqrt", "ifexp-mixed-types"])
def test_a_launch_error_from_a_notebook_kernel_names_the_cell_and_hides_cubelabs_frames(
        ip, capsys, client, body, needle):
    ip.run_line_magic("cubelab", f"device {client.name().split('<')[0]}")
    assert ip.run_cell(SETUP, store_history=True).success
    n = ip.execution_count
    assert ip.run_cell("@cube(launch=True)\ndef bad(x: SliceMut[u32]):\n    " + body + "\n",
                       store_history=True).success
    capsys.readouterr()
    r = ip.run_cell(RUN, store_history=True)
    assert not r.success
    text = _err(capsys)
    assert f"Cell In[{n}], line 3:" in text, text
    assert "/tmp/ipykernel" not in text and "<ipython-input" not in text
    for internal in ("cubelab/runtime", "client.py", "runner.py", "frontend/"):
        assert internal not in text, text  # the student's frames only
    lines = text.splitlines()
    src = next(i for i, ln in enumerate(lines) if needle in ln and "^" in lines[i + 1])
    assert lines[src][lines[src + 1].index("^"):].startswith(needle.split("(")[0].split(" ")[0])


def test_cubelab_traceback_full_shows_cubelabs_frames_again(ip, capsys, monkeypatch):
    assert ip.run_cell(SETUP, store_history=True).success
    assert ip.run_cell("@cube(launch=True)\ndef bad(x: SliceMut[u32]):\n"
                       "    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] / u32(2)\n",
                       store_history=True).success
    capsys.readouterr()
    assert not ip.run_cell(RUN, store_history=True).success
    assert "runner.py" not in _err(capsys)
    monkeypatch.setenv("CUBELAB_TRACEBACK", "full")
    assert not ip.run_cell(RUN, store_history=True).success
    assert "runner.py" in _err(capsys)


def test_calling_a_helper_from_python_says_it_runs_inside_kernels_not_launch(ip, capsys):
    r = ip.run_cell("from cubelab.prelude import *\n@cube\ndef twice(v):\n    return v + v\n"
                    "twice(1)\n", store_history=True)
    assert not r.success
    text = _err(capsys)
    assert "@cube helper" in text and ".launch" not in text and "kernel.py" not in text


@pytest.mark.parametrize("call", ["inspect.wgsl(inspect.instance(bad))",
                                  "inspect.msl(inspect.instance(bad))",
                                  "inspect.ir(inspect.instance(bad))",
                                  "inspect.passes(inspect.instance(bad))"])
def test_an_inspect_call_on_a_broken_kernel_shows_the_cell_not_cubelabs_frames(ip, capsys, call):
    # inspect's functions are entry points like launch: the student's kernel error, with its
    # caret, and no frames of cubelab/inspect or the frontend above it
    assert ip.run_cell("from cubelab.prelude import *\nfrom cubelab import inspect\n",
                       store_history=True).success
    n = ip.execution_count
    assert ip.run_cell("@cube(launch=True)\ndef bad(x: SliceMut[u32]):\n"
                       "    x[0] = x[0] / u32(2)\n", store_history=True).success
    capsys.readouterr()
    r = ip.run_cell(call + "\n", store_history=True)
    assert not r.success
    text = _err(capsys)
    assert f"Cell In[{n}], line 3:" in text, text
    for internal in ("cubelab/inspect", "preview.py", "instances.py", "frontend/", "<cubelab "):
        assert internal not in text, text


# -- kernel mistakes at definition (%%cube), and nothing of cubelab's in what a student sees ----

DEFINITION_MISTAKES = {
    "integer /": ("x[ABSOLUTE_POS] = x[ABSOLUTE_POS] / u32(2)", "x[ABSOLUTE_POS] / u32(2)", "//"),
    "list with a runtime index": ("vals = [u32(1), u32(2)]\n    x[ABSOLUTE_POS] = vals[x[0]]",
                                  "vals[x[0]]", "Array"),
    "len": ("x[ABSOLUTE_POS] = len(x)", "len(x)", "x.len()"),
    "print": ("print(x[0])", "print(x[0])", "debug_print"),
    "np.sqrt": ("x[ABSOLUTE_POS] = u32(np.sqrt(x[ABSOLUTE_POS]))", "np.sqrt(", "sqrt(x)"),
    "f32 + u32": ("y = f32(1.0) + x[0]", "f32(1.0) + x[0]", "cast_from"),
}


@pytest.mark.parametrize("case", list(DEFINITION_MISTAKES))
def test_a_kernel_mistake_fails_the_cube_cell_that_defines_it(ip, capsys, case):
    body, needle, hint = DEFINITION_MISTAKES[case]
    n = ip.execution_count
    r = ip.run_cell("%%cube\nimport numpy as np\nfrom cubelab.prelude import *\n\n"
                    f"@cube(launch=True)\ndef bad(x: SliceMut[u32]):\n    {body}\n",
                    store_history=True)
    assert not r.success, "the mistake waited for a launch"
    text = _err(capsys)
    assert f"KernelSourceError: in kernel `bad` at Cell In[{n}], line " in text, text
    assert hint in text and "Traceback" not in text and "cubelab/" not in text
    lines = text.splitlines()
    src = next(i for i, ln in enumerate(lines) if needle in ln)
    start = lines[src].index(needle)
    assert start <= lines[src + 1].index("^") < start + len(needle), text


def test_a_generic_kernel_fails_at_definition_only_when_no_type_can_expand_it(ip, capsys):
    # `&` on an Int generic expands for i32 and u32: defined, inspector shown
    r = ip.run_cell("%%cube\nfrom cubelab.prelude import *\nN = Int.generic('N')\n"
                    "@cube(launch=True)\ndef bits(x: SliceMut[N]):\n"
                    "    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] & x[0]\n")
    assert r.success and isinstance(r.result, KernelInspector)
    # a Numeric generic: u32 and i32 expand it, so f32's refusal is not the cell's
    r = ip.run_cell("%%cube\nfrom cubelab.prelude import *\nT = Numeric.generic('T')\n"
                    "@cube(launch=True)\ndef bits2(x: SliceMut[T]):\n"
                    "    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] & x[0]\n")
    assert r.success
    # ... its inspector previews f32, which cannot expand: the error whole, caret on its own line
    pane = r.result.tab_html("IR")
    assert "this kernel does not expand" in pane and "<pre" in pane
    text = pane.split("<pre", 1)[1]
    lines = text.splitlines()
    assert lines[0].endswith("`&amp;` on f32 values"), text
    assert lines[2].strip() == "^" and lines[1].index("x[ABSOLUTE_POS] &amp;") == \
        lines[2].index("^"), text
    # a Float generic: no type expands `&`, so the cell fails
    r = ip.run_cell("%%cube\nfrom cubelab.prelude import *\nF = Float.generic('F')\n"
                    "@cube(launch=True)\ndef bits3(x: SliceMut[F]):\n"
                    "    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] & x[0]\n")
    assert not r.success and "bit operations work on i32 / u32" in _err(capsys)


def test_a_kernel_of_a_plain_cell_is_inspected_under_its_cell_name(ip):
    assert ip.run_cell("from cubelab.prelude import *\n", store_history=True).success
    n = ip.execution_count
    assert ip.run_cell("@cube(launch=True)\ndef plain(x: SliceMut[f32]):\n"
                       "    x[ABSOLUTE_POS] = f32(1.0)\n", store_history=True).success
    view = KernelInspector(ip.user_ns["plain"], live=False)
    head = view.widget.children[0].value
    assert f"Cell In[{n}], line 1" in head and "ipykernel" not in head and ".py" not in head


def test_a_typo_in_a_plain_cell_kernel_shows_no_cubelab_frame(ip, capsys):
    r = ip.run_cell("from cubelab.prelude import *\n@cube(launch=True)\n"
                    "def typo(x: SliceMut[f32]):\n    x[ABSOLUTE_POS] = 1.0 + yy\n",
                    store_history=True)
    assert not r.success
    text = _err(capsys)
    assert "unknown name `yy`" in text and "kernel.py" not in text and "cubelab/" not in text


def test_a_wrong_argument_to_the_api_shows_its_message_without_cubelabs_frames(ip, capsys):
    r = ip.run_cell("import numpy as np\nfrom cubelab import Device\n"
                    "Device.cpu().client().create_from_slice(np.arange(4.0))\n",
                    store_history=True)
    assert not r.success
    text = _err(capsys)
    assert "float64 array holds 8-byte values" in text
    assert "client.py" not in text and "cubelab/" not in text, text


@pytest.mark.parametrize("view", ["wgsl", "msl", "ir", "passes", "compiled"])
def test_inspect_views_take_the_kernel_itself_with_generics_as_arguments(ip, view):
    assert ip.run_cell(
        "from cubelab import inspect\nfrom cubelab.prelude import *\n"
        "F = Float.generic('F')\nN = Size.generic('N')\n"
        "@cube(launch=True)\ndef sax(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):\n"
        "    if ABSOLUTE_POS < x.len():\n"
        "        y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]\n"
        f"preview = inspect.{view}(sax)\n"
        f"vec4 = inspect.{view}(sax, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))\n"
        f"same = inspect.{view}(inspect.instance(sax, f32, sizes=(4,), "
        "cube_dim=CubeDim.new_1d(4)))\n").success
    ns = ip.user_ns
    assert str(ns["vec4"]) == str(ns["same"]) and str(ns["preview"]) != str(ns["vec4"])


def test_the_debug_print_notice_is_one_cubelab_line_not_a_python_warning(ip, capsys, wgpu_client):
    import warnings

    from cubelab.magic import _show_cubelab_warnings_plainly

    with warnings.catch_warnings(record=True) as others:  # what Python itself would show
        warnings.simplefilter("always")
        _show_cubelab_warnings_plainly()
        r = ip.run_cell("import numpy as np\nfrom cubelab.prelude import *\n"
                        "@cube(launch=True)\ndef says(x: SliceMut[f32]):\n"
                        "    debug_print('x = {}', x[ABSOLUTE_POS])\n"
                        "    x[ABSOLUTE_POS] = f32(1.0)\n"
                        "c = Device.wgpu().client()\n"
                        "h = c.create_from_slice(f32.as_bytes(np.zeros(4, np.float32)))\n"
                        "says.launch(c, CubeCount.Static(1), CubeDim.new_1d(4), "
                        "BufferArg.from_raw_parts(h, 4))\nc.sync()\n", store_history=True)
        warnings.warn("another library's warning", UserWarning)
    assert r.success
    err = capsys.readouterr().err
    notice = [ln for ln in err.splitlines() if "debug_print" in ln]
    assert notice and notice[0].startswith("cubelab: kernel `says`: debug_print"), err
    assert "server.py" not in err and "CompileNoticeWarning" not in err and "cubelab/" not in err
    # another library's warning goes on to Python's own showing, as before
    assert [str(w.message) for w in others] == ["another library's warning"]


OOB_CELL = '''
import numpy as np
from cubelab.prelude import *

@cube(launch=True)
def shift_read(x: Slice[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 2]

c = Device.default().client()
x = c.create_from_slice(f32.as_bytes(np.arange(6, dtype=np.float32)))
out = c.create_from_slice(f32.as_bytes(np.zeros(6, dtype=np.float32)))
shift_read.launch(c, CubeCount.Static(1), CubeDim.new_1d(6), BufferArg.from_raw_parts(x, 6),
                  BufferArg.from_raw_parts(out, 6))
got = f32.from_bytes(c.read_one(out)).tolist()
'''


def test_oob_on_reports_every_out_of_bounds_access_of_every_launch_on_both_runtimes(
        ip, monkeypatch, capsys, client):
    monkeypatch.setenv("CUBELAB_DEVICE", client.name().split("<")[0])
    assert ip.run_cell(OOB_CELL).success
    quiet = ip.user_ns["got"]
    assert quiet == [2.0, 3.0, 4.0, 5.0, 0.0, 0.0]  # on wgpu the driver's silent 0s
    ip.run_line_magic("cubelab", "oob on")
    capsys.readouterr()
    assert ip.run_cell(OOB_CELL).success
    out = capsys.readouterr().out
    assert "cubelab: 2 out-of-bounds accesses in `shift_read`" in out, out
    assert "reads x[6], but x has 6 items" in out and "reads x[7], but x has 6 items" in out
    assert "x[ABSOLUTE_POS + 2]" in out and "/tmp/ipykernel" not in out
    assert ip.user_ns["got"] == quiet  # the watched launch itself ran as before
    ip.run_line_magic("cubelab", "oob off")
    capsys.readouterr()
    assert ip.run_cell(OOB_CELL).success
    assert "out-of-bounds" not in capsys.readouterr().out
