"""The pip path: `python -m build` makes a wheel and an sdist that `twine check` passes, and the
wheel, installed into a clean venv, carries the course — `cubelab course copy DIR` puts the
chapters (without solutions) in a folder and `cubelab lab DIR` starts JupyterLab there.

One build and one clean venv for the module (the venv install is the slow part: ~30 s with
pip's cache). The venv gets the wheel with its dependencies (numpy, wgpu, pygments) for real;
for `cubelab lab` it then borrows this environment's JupyterLab through a `.pth` file placed
after its own site-packages, so `cubelab` is still the wheel's copy — installing the `lab`
extra's ~60 packages again would only re-test pip (the student environment's size and time are
measured in docs/classroom.md, "Student and teacher environments").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))

pytest.importorskip("build", reason="the test extra (build, twine) is missing")


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)  # type: ignore
    assert out.returncode == 0, f"{' '.join(map(str, cmd))}:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "cubelab"
    # build from what git holds (a clean clone), not from this working tree's leftovers
    _run(["git", "clone", "-q", str(ROOT), str(src)])
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(src)])
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = tmp_path_factory.mktemp("venv") / "student"
    _run([sys.executable, "-m", "venv", str(env)])
    wheel = next(dist.glob("cubelab-*.whl"))
    _run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    return env


def test_build_makes_a_wheel_and_an_sdist_that_twine_checks(dist):
    wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
    out = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
    assert out.stdout.count("PASSED") == 2, out.stdout
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for chapter in CHAPTERS:
        assert f"cubelab/chapters/{chapter}" in names
    figures = [p.relative_to(ROOT / "notebooks").as_posix()
               for p in (ROOT / "notebooks" / "figures").rglob("*.svg")]
    missing = [f for f in figures if f"cubelab/chapters/{f}" not in names]
    assert not missing, f"the chapters' figures are not in the wheel: {missing}"
    assert not [n for n in names if "solutions" in n], "the wheel gives students the solutions"
    assert "cubelab/lab_config/student/labconfig/page_config.json" in names


def _in_venv(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV",
                                                                      "JUPYTER"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    return _run(list(args), cwd=cwd, env=env)


def test_the_installed_wheel_copies_the_course_without_solutions(venv, tmp_path):
    where = _in_venv(venv, "python", "-c", "import cubelab; print(cubelab.__file__)",
                     cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where  # the wheel's copy, not this checkout
    out = _in_venv(venv, "cubelab", "course", "copy", "my-course", cwd=tmp_path).stdout
    course = tmp_path / "my-course"
    assert sorted(p.name for p in course.glob("*.ipynb")) == CHAPTERS, out
    assert not (course / "solutions").exists()
    # a second copy keeps the student's work
    (course / CHAPTERS[0]).write_text("{}")
    again = _in_venv(venv, "cubelab", "course", "copy", "my-course", cwd=tmp_path).stdout
    assert "nothing overwritten" in again and (course / CHAPTERS[0]).read_text() == "{}"


def test_cubelab_lab_from_the_wheel_starts_jupyterlab_on_a_fresh_course_folder(venv, tmp_path):
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    ours = sysconfig.get_paths()["purelib"]
    (site / "zz-borrow-jupyter.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV",
                                                                      "JUPYTER"))}
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "lab.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(venv / "bin" / "cubelab"), "lab", "course", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, url = time.monotonic() + 300, None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=(\w+)",
                          (tmp_path / "lab.log").read_text())
            url = m and m.group(1)
            time.sleep(0.5)
        text = (tmp_path / "lab.log").read_text()
        assert url, f"cubelab lab printed no URL:\n{text}"
        assert "the course's chapters are now in" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={url}",
                                    timeout=60) as r:
            listed = sorted(c["name"] for c in json.load(r)["content"])
        assert [n for n in listed if n.endswith(".ipynb")] == CHAPTERS
        assert "solutions" not in listed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(tmp_path / "rt", ignore_errors=True)
