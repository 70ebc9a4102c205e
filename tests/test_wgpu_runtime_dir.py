"""Mesa's "XDG_RUNTIME_DIR is invalid or not set" never reaches a user: cubelab gives the Vulkan
loader a private runtime directory before it first touches it, whoever started the process."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import os; from cubelab import Device; print(Device.wgpu().client().name()); "
         "d = os.environ['XDG_RUNTIME_DIR']; print(d, oct(os.stat(d).st_mode & 0o777))")


def _env(xdg: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    # cubelab from this checkout, and whatever else the suite's own path holds (the GPU check
    # puts the wgpu wheels on PYTHONPATH)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    if xdg is not None:
        env["XDG_RUNTIME_DIR"] = xdg
    return env


@pytest.mark.parametrize("xdg", [None, "", "relative/dir", "/no/such/dir"],
                         ids=["unset", "empty", "relative", "missing"])
def test_a_wgpu_client_prints_no_xdg_runtime_dir_error(wgpu_client, xdg, tmp_path):
    out = subprocess.run([sys.executable, "-c", PROBE], env=_env(xdg), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "XDG_RUNTIME_DIR" not in out.stdout + out.stderr
    name, (path, mode) = out.stdout.splitlines()[0], out.stdout.split()[-2:]
    assert name == "wgpu<wgsl>" and os.path.isabs(path) and mode == "0o700"


def test_a_valid_runtime_dir_is_left_alone(wgpu_client, tmp_path):
    mine = tmp_path / "run"
    mine.mkdir(mode=0o700)
    out = subprocess.run([sys.executable, "-c", PROBE], env=_env(str(mine)), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2] == str(mine)
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700


def test_cubelab_demo_starts_without_the_xdg_runtime_dir_error(wgpu_client, tmp_path):
    out = subprocess.run([sys.executable, "-m", "cubelab", "demo", "--device", "wgpu"],
                         env=_env(None), cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert "XDG_RUNTIME_DIR" not in out.stdout + out.stderr
