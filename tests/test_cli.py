"""`python -m cubelab` / `cubelab`: expand, ir, wgsl, msl, id and the seed-000 demo."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cubelab.cli import main

KERNELS = str(Path(__file__).parent / "fixtures" / "kernels.py")


def run(capsys, *argv: str) -> str:
    assert main(["--color", "never", *argv]) == 0
    return capsys.readouterr().out


def test_python_dash_m_cubelab_expands_a_kernel_from_a_file():
    out = subprocess.run([sys.executable, "-m", "cubelab", "--color", "never", "expand",
                          f"{KERNELS}::saxpy"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "def expand(__s, a, x, y)" in out.stdout


def test_the_console_script_is_installed_next_to_python():
    from importlib import metadata

    try:
        metadata.distribution("cubelab")
    except metadata.PackageNotFoundError:
        # e.g. the GPU machine's run (scripts/gpu_check.sh): cubelab is on PYTHONPATH, not
        # installed, so there is no console script to find — say so rather than fail.
        pytest.skip("cubelab is imported from PYTHONPATH, not installed: no console script")
    script = Path(sys.executable).parent / "cubelab"
    assert script.exists() or shutil.which("cubelab"), "pip install -e . installs `cubelab`"


def test_ir_before_and_after_passes(capsys):
    before = run(capsys, "ir", f"{KERNELS}::saxpy", "--types", "f32", "--sizes", "4",
                 "--cube-dim", "4")
    after = run(capsys, "ir", f"{KERNELS}::saxpy", "--types", "f32", "--sizes", "4",
                "--cube-dim", "4", "--after-passes")
    fixed = run(capsys, "ir", f"{KERNELS}::saxpy", "--types", "f32", "--sizes", "4",
                "--cube-dim", "4", "--after-passes", "--checked-io", "fixed")
    assert "memory.index" in before and "arith.min" not in before
    assert "arith.min" not in after  # the seed's 0.11.3 rule, the default: nothing clamped
    assert "arith.min" in fixed


def test_wgsl_honours_unchecked_and_comptime(capsys):
    checked = run(capsys, "wgsl", f"{KERNELS}::add", "--types", "f32", "--comptime", "true",
                  "--checked-io", "fixed")
    unchecked = run(capsys, "wgsl", f"{KERNELS}::add", "--types", "f32", "--comptime", "false",
                    "--unchecked")
    assert "max(" in checked and "min(" in checked
    assert "max(" not in unchecked and "min(" not in unchecked


def test_msl_prints_the_metal_kernel(capsys):
    out = run(capsys, "msl", f"{KERNELS}::saxpy", "--types", "f32", "--sizes", "4", "--cube-dim",
              "4")
    assert "[[kernel]]" in out and "float_4" in out


def test_id_explains_the_kernel_id(capsys):
    out = run(capsys, "id", f"{KERNELS}::add", "--types", "f32", "--comptime", "true")
    assert "relu: true" in out and "Checked" in out


def test_a_missing_kernel_names_the_ones_the_file_has():
    with pytest.raises(SystemExit, match="its @cube functions: saxpy, add"):
        main(["expand", f"{KERNELS}::nope"])


def test_demo_runs_the_seed_000_experiments(capsys):
    out = run(capsys, "demo")
    assert "saxpy y = [1, 3, 5" in out
    assert "3 compiles, 1 hit" in out and "answer: 3 compiles, 1 cache hit" in out
    assert "[11, 22, 33, 44, 55, 66, 0, 0]" in out and "[11, 22, 33, 44, 55, 66, 66, 66]" in out


LONG_KERNEL = '''from cubelab.prelude import *


@cube(launch=True)
def long_line(x: Slice[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(1.0) + x[ABSOLUTE_POS] * f32(2.0) + x[ABSOLUTE_POS] * f32(3.0) + x[ABSOLUTE_POS] * f32(4.0) + f32(5.0)
'''
BOX = set("│╭╮╰╯─━┃")


def _squash(text: str) -> str:
    """Text without whitespace, box drawing or ANSI colour: what is left when nothing is cropped."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return "".join(ch for ch in text if not ch.isspace() and ch not in BOX)


def _cli(*argv: str, cwd: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "cubelab", *argv], capture_output=True,
                         text=True, timeout=300, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("color", [[], ["--color", "never"]], ids=["piped", "never"])
def test_piped_wgsl_is_the_wgsl_itself_no_box_no_crop(tmp_path, color):
    from cubelab import inspect as I
    from cubelab.cli import load_kernel

    (tmp_path / "long_kernels.py").write_text(LONG_KERNEL)
    spec = f"{tmp_path / 'long_kernels.py'}::long_line"
    wgsl = _cli(*color, "wgsl", spec, "--types", "", cwd=tmp_path)
    from cubelab.cli import parser
    from cubelab.prelude import CubeDim

    rule = parser().parse_args(["wgsl", spec]).checked_io
    expected = I.compiled(I.default_instance(load_kernel(spec), CubeDim.new_1d(1)),
                          checked_io=rule).wgsl.source
    assert wgsl.strip("\n") == expected.strip("\n")
    assert not BOX & set(wgsl)
    expand = _cli(*color, "expand", spec, cwd=tmp_path)
    assert max(len(ln) for ln in expand.splitlines()) > 150  # the long line, whole
    assert expand.startswith("def expand(")


def test_colour_forced_into_a_pipe_is_never_cropped(tmp_path):
    (tmp_path / "long_kernels.py").write_text(LONG_KERNEL)
    out = _cli("--color", "always", "expand", f"{tmp_path / 'long_kernels.py'}::long_line",
               cwd=tmp_path)
    from cubelab import inspect as I
    from cubelab.cli import load_kernel

    expanded = I.expanded(load_kernel(f"{tmp_path / 'long_kernels.py'}::long_line"))
    assert "\x1b[" in out and max(len(ln) for ln in expanded.splitlines()) > 150
    for line in expanded.splitlines():
        assert _squash(line) in _squash(out), line


def test_the_demo_in_a_narrow_terminal_wraps_the_expansion_instead_of_cropping(monkeypatch,
                                                                               capsys):
    from cubelab import inspect as I
    from cubelab.exercises.seed000 import saxpy

    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["demo", "--device", "cpu"]) == 0
    shown = _squash(capsys.readouterr().out)
    for line in I.expanded(saxpy).splitlines():
        assert _squash(line) in shown, line
