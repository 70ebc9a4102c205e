"""The README's set-up, run from a fresh checkout: the lab command starts JupyterLab and prints
its URL — for root (containers, cloud machines) and for a normal user — on cubelab's notebooks or
on a teacher's folder, with what a class does not need turned off; and the set-up installs the
git filter that keeps saved notebook outputs out of git.

The checkout is a `git clone` of this repository's HEAD. Its `.venv` borrows this environment
(links to its bin/lib/share and a set-up stamp matching the clone's pyproject.toml), so
`scripts/setup.sh` finds everything installed and installs nothing.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
STUDENT = "cubelab-lab-test"


def _readme_lab_command() -> list[str]:
    line = next(ln for ln in README.read_text().splitlines() if "scripts/lab.sh" in ln
                and ln.startswith("bash "))
    return line.split("#")[0].split()


def _fresh_checkout(tmp: Path, user: str | None = None) -> Path:
    clone = tmp / "cubelab"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    venv = Path(sys.prefix)
    (clone / ".venv").mkdir()
    if user is None or _usable_by(venv / "bin" / "python", user):
        for part in venv.iterdir():
            if not part.name.startswith("."):
                (clone / ".venv" / part.name).symlink_to(part)
    else:
        _borrow_with_a_system_python(clone / ".venv", venv)
    import hashlib

    stamp = hashlib.sha256((clone / "pyproject.toml").read_bytes()).hexdigest()[:16]
    (clone / ".venv" / ".cubelab-installed").write_text(stamp + "\n")
    return clone


def _usable_by(python: Path, user: str) -> bool:
    return subprocess.run(["runuser", "-u", user, "--", str(python), "-c", "pass"],
                          capture_output=True, timeout=300).returncode == 0


def _borrow_with_a_system_python(target: Path, venv: Path) -> None:
    """This environment's interpreter may live where a normal user cannot go (a pyenv under
    /root): give the student a venv of the system's python of the same version that imports
    this environment's packages."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin")
    assert system, f"no {version} outside this environment for a normal user to run"
    shutil.rmtree(target)
    subprocess.run([system, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    site = target / "lib" / version / "site-packages"
    shared = venv / "lib" / version / "site-packages"
    (site / "cubelab-borrowed.pth").write_text(f"import site; site.addsitedir({str(shared)!r})\n")
    (target / "share").symlink_to(venv / "share")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _student() -> str | None:
    """A normal user to run the lab as: created when we are root, else ourselves (None)."""
    if os.getuid() != 0:
        return None
    try:
        pwd.getpwnam(STUDENT)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", STUDENT], check=True, timeout=60)
    return STUDENT


def _clean_env(user: str | None) -> dict[str, str]:
    """A new terminal's environment: nothing of this test run's venv, Jupyter or Python set-up."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "VIRTUAL_ENV", "PYTHON", "XDG_RUNTIME_DIR"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    if user is not None:
        env.update(HOME=pwd.getpwnam(user).pw_dir, USER=user, LOGNAME=user)
        # the session's compilation store is private to this user; another user's would be
        # their real cache folder
        env["CUBELAB_CACHE_DIR"] = "off"
    return env


class Lab:
    """`bash scripts/lab.sh [FOLDER] --no-browser --port N` in its own process group."""

    def __init__(self, clone: Path, args: list[str], user: str | None, cwd: Path) -> None:
        self.port = _free_port()
        cmd = [*_readme_lab_command(), *args, "--no-browser", f"--ServerApp.port={self.port}",
               "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1"]
        cmd[1] = str(clone / cmd[1])  # `bash scripts/lab.sh`, run from anywhere
        env = _clean_env(user)
        if user is not None:
            cmd = ["runuser", "-u", user, "--", *cmd]
        self.log = open(cwd / f"lab-{self.port}.log", "w+")  # noqa: SIM115 - closed in stop
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def url(self, timeout: float = 300) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(rf"(http://127\.0\.0\.1:{self.port}/lab\?token=\w+)", self.output())
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        pytest.fail(f"the lab printed no URL (exit {self.proc.poll()}):\n{self.output()}")

    def _open(self, req: urllib.request.Request | str) -> tuple[int, bytes]:
        # Under heavy load the first request once found the port refusing connections just after
        # the URL was printed; a refusal is retried for a while (the lab must still answer).
        end = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(req, timeout=120) as r:  # noqa: S310 - our own server
                    return r.status, r.read()
            except urllib.error.URLError as exc:
                refused = isinstance(exc.reason, ConnectionRefusedError)
                if not refused or time.monotonic() > end or self.proc.poll() is not None:
                    raise
                time.sleep(0.5)

    def get(self, path: str, token: str) -> tuple[int, str]:
        sep = "&" if "?" in path else "?"
        status, body = self._open(f"http://127.0.0.1:{self.port}{path}{sep}token={token}")
        return status, body.decode()

    def post(self, path: str, token: str, body: dict) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}?token={token}",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        return json.loads(self._open(req)[1])  # type: ignore[no-any-return]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        self.log.close()


def _run_in_kernel(port: int, token: str, kernel_id: str, code: str) -> str:
    """Send one execute_request over the server's kernel websocket; return the printed text."""
    import asyncio
    import uuid

    from tornado.websocket import websocket_connect

    async def run() -> str:
        ws = await websocket_connect(
            f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={token}")
        msg_id = uuid.uuid4().hex
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False}}))
        printed = ""
        while True:
            raw = await ws.read_message()
            assert raw is not None, "the kernel websocket closed"
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                printed += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                ws.close()
                return printed

    return asyncio.run(asyncio.wait_for(run(), timeout=300))


def _check_lab(lab: Lab, expect_file: str) -> None:
    url = lab.url()
    token = url.rsplit("=", 1)[1]
    status, page = lab.get("/lab", token)
    assert status == 200 and "jupyter-config-data" in page
    _, tree = lab.get("/api/contents", token)
    assert expect_file in [c["name"] for c in json.loads(tree)["content"]]
    # no "would you like to get notified about official Jupyter news?" and no update check
    _, settings = lab.get("/lab/api/settings/@jupyterlab/apputils-extension:notification", token)
    defaults = json.loads(settings)["schema"]["properties"]
    assert defaults["fetchNews"]["default"] == "false"  # JupyterLab's own default: "none" (ask)
    assert defaults["checkForUpdates"]["default"] is False
    # a kernel starts (over IPC) and runs code; the log does not warn about TCP at its start
    kernel = lab.post("/api/kernels", token, {"name": "python3"})
    assert _run_in_kernel(lab.port, token, kernel["id"], "print(6 * 7)") == "42\n"
    out = lab.output()
    assert "Running as root is not recommended" not in out
    assert "without encryption" not in out, out


@pytest.mark.parametrize("who", ["the user running the tests", "a normal user"])
def test_the_readme_lab_command_starts_jupyterlab_from_a_fresh_checkout(tmp_path, who):
    user = _student() if who == "a normal user" else None
    if user is not None:  # pytest's tmp_path is private to root: the student gets a folder
        tmp_path = Path(tempfile.mkdtemp(prefix="cubelab-lab-"))
    try:
        clone = _fresh_checkout(tmp_path, user)
        if user is not None:
            subprocess.run(["chown", "-R", f"{user}:", str(tmp_path)], check=True, timeout=60)
        lab = Lab(clone, [], user, tmp_path)
        try:
            _check_lab(lab, sorted(p.name for p in (clone / "notebooks").glob("*.ipynb"))[0])
        finally:
            lab.stop()
    finally:
        if user is not None:
            shutil.rmtree(tmp_path, ignore_errors=True)


def test_the_lab_command_opens_a_teachers_folder_given_relative_to_where_it_runs(tmp_path):
    clone = _fresh_checkout(tmp_path)
    course = tmp_path / "course"
    course.mkdir()
    (course / "week1.ipynb").write_text(json.dumps(
        {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    lab = Lab(clone, ["course"], None, tmp_path)
    try:
        _check_lab(lab, "week1.ipynb")
    finally:
        lab.stop()


def test_the_lab_command_refuses_a_folder_that_does_not_exist(tmp_path):
    clone = _fresh_checkout(tmp_path)
    lab = Lab(clone, ["no-such-course"], None, tmp_path)
    try:
        assert lab.proc.wait(timeout=300) == 2
        assert "no such folder" in lab.output()
    finally:
        lab.stop()


def test_the_set_up_strips_saved_notebook_outputs_on_their_way_into_git(tmp_path):
    from tests.test_notebooks import what_git_would_commit

    clone = _fresh_checkout(tmp_path)
    subprocess.run(["bash", "-c", "source scripts/setup.sh"], cwd=clone, env=_clean_env(None),
                   check=True, timeout=300, capture_output=True)
    # each git command below runs the clean filter (a python start) per notebook: minutes on a
    # loaded machine
    git = {"cwd": clone, "capture_output": True, "text": True, "check": True, "timeout": 900}
    # installing the filter changes nothing by itself: the committed notebooks are in its form
    assert subprocess.run(["git", "status", "--porcelain"], **git).stdout == ""
    notebook = sorted((clone / "notebooks").glob("*.ipynb"))[0]
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    cell.execution_count = 1
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nbformat.write(nb, notebook)  # a student ran the notebook and JupyterLab saved it
    assert "ran\\n" in notebook.read_text()
    assert subprocess.run(["git", "diff", "--stat"], **git).stdout == ""  # no change to show
    subprocess.run(["git", "add", "-A"], **git)  # `git commit -a` would store nothing new
    assert subprocess.run(["git", "status", "--porcelain"], **git).stdout == ""
    committed = json.loads(what_git_would_commit(notebook))
    assert all(not c.get("outputs") for c in committed["cells"] if c["cell_type"] == "code")
