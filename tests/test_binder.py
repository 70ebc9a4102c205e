"""The Binder / repo2docker files build an environment that serves the course.

repo2docker itself (and conda, and Docker) cannot run here, so this checks what can be checked:
`environment.yml` asks for what pyproject says cubelab needs; its packages resolve together from
PyPI in a clean venv (conda-forge names mapped to PyPI's where they differ; pip's resolver in
`--dry-run`, so JupyterLab, the hub and nbgrader are solved for but not installed — that would
cost minutes); cubelab's own dependencies are installed from that list and `binder/postBuild`
then installs cubelab, after which the venv launches a kernel on the CPU runtime.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# conda-forge package → the PyPI distribution that provides it
PYPI_NAME = {"jupyterhub-singleuser": "jupyterhub", "matplotlib-base": "matplotlib"}
NOT_PIP = {"python", "pip"}


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req, maxsplit=1)[0].strip().lower().replace("_", "-")


def _environment() -> tuple[list[str], list[str]]:
    """environment.yml → (conda requirements, pip-section requirements)."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = [r for d in env["dependencies"] if isinstance(d, dict) for r in d.get("pip", [])]
    return conda, pip


def _pip_requirements() -> list[str]:
    conda, pip = _environment()
    reqs = []
    for spec in conda:
        name = _name(spec)
        if name in NOT_PIP:
            continue
        # conda's single '=' pin is pip's '=='; ranges are spelled the same
        spec = re.sub(r"(?<![<>=!~])=(?!=)", "==", spec)
        reqs.append(PYPI_NAME.get(name, name) + spec[len(name):])
    return reqs + pip


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_environment_yml_installs_what_pyproject_says_cubelab_needs() -> None:
    project = _project()
    needed = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["lab"]}
    conda, pip = _environment()
    provided = {PYPI_NAME.get(_name(r), _name(r)) for r in conda + pip}
    assert needed <= provided, f"environment.yml lacks {sorted(needed - provided)}"
    python = next(d for d in conda if _name(d) == "python")
    minimum = re.search(r">=\s*3\.(\d+)", project["requires-python"])
    assert minimum and int(python.split("=")[1].split(".")[1]) >= int(minimum.group(1))


def test_apt_txt_has_the_vulkan_driver_and_loader() -> None:
    packages = (ROOT / "apt.txt").read_text().split()
    assert {"mesa-vulkan-drivers", "libvulkan1"} <= set(packages)


def test_the_binder_environment_installs_in_a_clean_venv_and_postbuild_runs(
        tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # The whole list resolves together (what conda would have to solve on Binder) ...
    resolve = subprocess.run([str(py), "-m", "pip", "install", "-q", "--dry-run",
                              "--disable-pip-version-check", "--report", str(tmp_path / "r.json"),
                              *_pip_requirements()], env=env, capture_output=True, text=True,
                             timeout=900)
    assert resolve.returncode == 0, resolve.stdout[-3000:] + resolve.stderr[-3000:]
    resolved = {_name(i["metadata"]["name"])
                for i in json.loads((tmp_path / "r.json").read_text())["install"]}
    assert {_name(r) for r in _pip_requirements()} <= resolved
    assert {"jupyter-server", "nbconvert", "sqlalchemy"} <= resolved  # their dependencies too
    # ... and what cubelab itself imports is installed, for postBuild's editable install to run.
    runtime = [r for r in _pip_requirements()
               if _name(r) in {_name(d) for d in _project()["dependencies"]}]
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              *runtime], env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]

    # repo2docker runs postBuild in a copy of the repository; so does this test.
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", "build", "course", "artifacts", ".whl",
        ".gl", "node_modules", ".ipynb_checkpoints"))
    post = subprocess.run(["bash", "binder/postBuild"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)
    assert post.returncode == 0, post.stdout[-3000:] + post.stderr[-3000:]

    probe = (
        "import numpy as np, cubelab\n"
        "from cubelab.prelude import *\n"
        "assert cubelab.__file__.startswith(%r), cubelab.__file__\n"
        "@cube(launch=True)\n"
        "def twice(x: Slice[f32], out: SliceMut[f32]):\n"
        "    if ABSOLUTE_POS < x.len():\n"
        "        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + x[ABSOLUTE_POS]\n"
        "client = Device.cpu().client()\n"
        "x = client.create_from_slice(f32.as_bytes(np.arange(4, dtype=np.float32)))\n"
        "out = client.empty(16)\n"
        "twice.launch(client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4),\n"
        "             BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))\n"
        "print(f32.from_bytes(client.read_one(out)).tolist())\n" % str(repo))
    (tmp_path / "probe.py").write_text(probe)  # a @cube kernel needs its source in a file
    run = subprocess.run([str(py), "probe.py"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("[0.0, 2.0, 4.0, 6.0]")
