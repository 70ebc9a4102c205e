"""CUBELAB_DEBUG_LOG=stdout prints the seed's compilation blocks and profile lines."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def run_quiz(extra_env=None):
    env = dict(os.environ)
    # keep the caller's PYTHONPATH behind ours (where wgpu comes from a path, not site-packages)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(HERE.parent), os.environ.get("PYTHONPATH", "")] if p)
    env["CUBELAB_DEBUG_LOG"] = "stdout"
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, str(HERE / "fixtures" / "quiz_script.py")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def log(wgpu_client):
    return run_quiz()


def test_the_quiz_prints_three_compilation_blocks(log):
    assert log.count("[START_KERNEL_COMPILATION]") == 3
    assert log.count("[END_KERNEL_COMPILATION]") == 3


def test_each_block_has_the_seeds_layout(log):
    blocks = re.findall(r"\[START_KERNEL_COMPILATION\]\n(.*?)\[END_KERNEL_COMPILATION\]", log,
                        re.S)
    modes = []
    for block in blocks:
        lines = block.splitlines()
        assert re.fullmatch(r"name: \S*::add::Add<f32>", lines[0])
        assert lines[1] == "id: KernelId {"
        assert re.fullmatch(r"    type: \S*::add::Add<f32>,", lines[2])
        assert lines[3] == "    address_type: U32,"
        assert lines[4:9] == ["    cube_dim: Dim3 {", "        x: 8,", "        y: 1,",
                              "        z: 1,", "    },"]
        modes.append(lines[9])
        assert lines[10] == "    info: AddInfo {"
        assert "source:" in lines
        assert any(re.fullmatch(r"fn add_f_f32_[0-9a-f]{8}\(.*", ln) for ln in lines)
    assert modes == ["    mode: Checked,", "    mode: Unchecked,", "    mode: Checked,"]
    relus = re.findall(r"^        relu: (\w+),$", log, re.M)
    assert relus == ["false", "false", "true"]


def test_every_launch_prints_a_profile_line_and_the_fourth_reuses_the_first(log):
    lines = re.findall(r"^\| (\d+\.\d{3}(?:µs|ms|s)) +\| Add \| (f32_[0-9a-f]{8})$", log, re.M)
    assert len(lines) == 4
    tags = [t for _, t in lines]
    assert tags[3] == tags[0] and len(set(tags[:3])) == 3


def test_results_are_the_seeds(log):
    assert "add checked=true relu=false out = [1.5, -1.5, 3.5, -3.5, 5.5, -5.5]" in log
    assert "add checked=true relu=true out = [1.5, 0.0, 3.5, 0.0, 5.5, 0.0]" in log


def test_the_log_can_go_to_a_file(tmp_path, wgpu_client):
    path = tmp_path / "cubelab.log"
    out = run_quiz({"CUBELAB_DEBUG_LOG": str(path)})
    assert "[START_KERNEL_COMPILATION]" not in out
    assert path.read_text(encoding="utf-8").count("[START_KERNEL_COMPILATION]") == 3
