"""A real JupyterHub serving the course to two students, started and stopped by this test.

The hub runs on 127.0.0.1 with the dummy authenticator, a local process spawner (one
`jupyterhub-singleuser` per student, as on a one-machine hub) and its own configurable-http-proxy.
Each student logs in through the hub's REST API (a token requested with their username and
password), starts their server, and runs a chapter — its answers filled in from the solutions and
its checks as the graded test cells `cubelab course build` writes — through the kernel API over
the proxy; then, in the same kernel, both launch one probe kernel while recording events: each
sees its own compile of the same KernelId, so no student's compile is another's cache hit (one
process, one client, one cache per student).

Skipped only where the proxy is not installed (`scripts/setup.sh` installs it with npm; a machine
without npm cannot). The hub is bounded: every wait has a deadline, and the hub's process group
and any server it spawned are stopped when the test ends, whatever happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from cubelab.course import build_chapter, read_solutions

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "course_fixture"
STUDENTS = ("alice", "bob")
DEADLINE_S = 240.0  # a bound, not a target: chapter 1 in two kernels takes ~20-50 s here

PROBE = '''
import json, os
from cubelab.prelude import *
from cubelab.runtime import events as ev

@cube(launch=True)
def classroom_probe(out: SliceMut[f32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = f32.cast_from(ABSOLUTE_POS)

_client = Device.default().client()
_out = _client.empty(16)
with _client.events.record(ev.CompileFinished, ev.CacheHit) as _rec:
    for _ in range(2):
        classroom_probe.launch(_client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4),
                               BufferArg.from_raw_parts(_out, 4))
    _client.sync()
print("PROBE " + json.dumps({
    "pid": os.getpid(), "client": _client.name(),
    "compiled": [str(e.kernel_id.short()) for e in _rec.of(ev.CompileFinished)],
    "hits": len(_rec.of(ev.CacheHit)),
    "values": f32.from_bytes(_client.read_one(_out)).tolist()}))
'''


def _proxy() -> str | None:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("configurable-http-proxy", path=path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chapter() -> tuple[Path, Path]:
    """The course's chapter 1 once it has exercises and solutions, else the fixture chapter."""
    real = sorted((ROOT / "notebooks").glob("01_*.ipynb"))
    if real and (ROOT / "notebooks" / "solutions" / f"{real[0].stem}.py").is_file():
        return real[0], ROOT / "notebooks" / "solutions" / f"{real[0].stem}.py"
    return (FIXTURE / "notebooks" / "01_fixture.ipynb",
            FIXTURE / "notebooks" / "solutions" / "01_fixture.py")


HUB_CONFIG = '''
import os, sys
c = get_config()
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {tmp!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + {tmp!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {tmp!r} + "/cookie_secret"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {students!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {tmp!r} + "/home/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.ip = "127.0.0.1"
c.Spawner.start_timeout = 40
c.Spawner.http_timeout = 40
c.Spawner.default_url = "/lab"
c.Spawner.environment = {environment!r}
# stopping: SIGINT, then SIGTERM after 2 s (the default waits 10 s before escalating)
c.LocalProcessSpawner.interrupt_timeout = 2
c.LocalProcessSpawner.term_timeout = 3
# jupyter-server refuses to run as root unless told to; CI runs as root.
c.Spawner.args = ["--allow-root"] if os.getuid() == 0 else []
'''


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    proxy = _proxy()
    if proxy is None:
        # scripts/setup.sh keeps why npm could not install it (said once, when it failed)
        why = Path(sys.prefix) / ".cubelab-npm-failed"
        reason = " ".join(why.read_text().split()) if why.is_file() else \
            "scripts/setup.sh has not run npm for this environment"
        pytest.skip(f"configurable-http-proxy (JupyterHub's proxy) is not installed: {reason}; "
                    "so no JupyterHub can run here")
    import psutil

    tmp = tmp_path_factory.mktemp("hub")
    port = _free_port()
    bin_dir = Path(sys.executable).parent
    environment = {
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(FIXTURE)]),
        "XDG_RUNTIME_DIR": str(tmp),
        **{k: v for k, v in os.environ.items() if k.startswith("CUBELAB_")},
    }
    (tmp / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
        port=port, hub_port=_free_port(), api_port=_free_port(), proxy=proxy, tmp=str(tmp),
        students=set(STUDENTS), singleuser=str(bin_dir / "jupyterhub-singleuser"),
        environment=environment))
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    log = open(tmp / "hub.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", "jupyterhub_config.py"],
                            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/hub/api/", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the hub did not start:\n" + (tmp / "hub.log").read_text()[-4000:])
                time.sleep(0.2)
        yield {"url": url, "log": tmp / "hub.log", "spawned": spawned,
               "process": psutil.Process(proc.pid)}
    finally:
        try:
            spawned.update(p.pid for p in psutil.Process(proc.pid).children(recursive=True))
        except psutil.Error:
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the hub stops its servers and its proxy
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        for pid in spawned:  # anything the hub started and did not stop (servers, kernels)
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        log.close()


def _api(url: str, method: str = "GET", token: str | None = None, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"token {token}")
    with urllib.request.urlopen(req, timeout=90) as resp:  # a kernel start under load
        text = resp.read().decode()
    return json.loads(text) if text else None


def _login(hub_url: str, name: str) -> str:
    """Log in through the REST API: the authenticator checks username and password."""
    reply = _api(f"{hub_url}/hub/api/users/{name}/tokens", "POST",
                 body={"auth": {"username": name, "password": f"{name}-password"},
                       "note": "classroom test", "expires_in": 600})
    return reply["token"]


def _start_server(hub_url: str, name: str, token: str) -> str:
    try:
        _api(f"{hub_url}/hub/api/users/{name}/server", "POST", token)
    except urllib.error.HTTPError as exc:
        if exc.code != 400:  # 400: already running
            raise
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        server = _api(f"{hub_url}/hub/api/users/{name}", token=token)["servers"].get("", {})
        if server.get("ready"):
            return f"{hub_url}{server['url']}"
        time.sleep(0.3)
    raise AssertionError(f"{name}'s server did not become ready")


def _start_kernel(server: str, token: str) -> str:
    return _api(f"{server}api/kernels", "POST", token, {"name": "python3"})["id"]


async def _run_cells(server: str, token: str, kernel: str,
                     cells: list[str]) -> list[dict[str, Any]]:
    """Execute `cells` in the kernel over the server's websocket; outputs per cell."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    ws_url = server.replace("http://", "ws://") + f"api/kernels/{kernel}/channels"
    # the server answers the handshake once the kernel is ready: slow on a loaded machine
    ws = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"},
                                             connect_timeout=120, request_timeout=120))
    session, results = uuid.uuid4().hex, []
    try:
        for code in cells:
            msg_id = uuid.uuid4().hex
            ws.write_message(json.dumps({
                "header": {"msg_id": msg_id, "session": session, "username": "student",
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False,
                            "stop_on_error": True}}))
            out: dict[str, Any] = {"text": "", "errors": [], "reply": None, "idle": False}
            while out["reply"] is None or not out["idle"]:
                raw = await asyncio.wait_for(ws.read_message(), timeout=120)
                assert raw is not None, "the kernel's websocket closed"
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    out["text"] += content["text"]
                elif kind == "error":
                    out["errors"].append(f"{content['ename']}: {content['evalue']}")
                elif kind == "execute_reply":
                    out["reply"] = content["status"]
                elif kind == "status" and content["execution_state"] == "idle":
                    out["idle"] = True
            results.append(out)
    finally:
        ws.close()
    return results


def test_two_students_each_run_the_chapter_in_their_own_server_with_their_own_cache(
        hub: dict[str, Any], tmp_path: Path) -> None:
    notebook, solutions = _chapter()
    sys.path.insert(0, str(FIXTURE))
    import fixture_exercises

    with fixture_exercises.registered():  # build checks every key is registered
        built = build_chapter(notebook, read_solutions(solutions), tmp_path)
    source = json.loads(built.path.read_text())
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in source["cells"] if c["cell_type"] == "code"]

    tokens = {name: _login(hub["url"], name) for name in STUDENTS}
    with pytest.raises(urllib.error.HTTPError) as refused:  # not on the class list
        _login(hub["url"], "mallory")
    assert refused.value.code == 403
    servers = {name: _start_server(hub["url"], name, tokens[name]) for name in STUDENTS}
    assert len(set(servers.values())) == 2

    kernels = {name: _start_kernel(servers[name], tokens[name]) for name in STUDENTS}

    async def chapter_for_both() -> dict[str, list[dict[str, Any]]]:
        runs = await asyncio.gather(*(_run_cells(servers[n], tokens[n], kernels[n],
                                                 cells + [PROBE]) for n in STUDENTS))
        return dict(zip(STUDENTS, runs))

    runs = asyncio.run(asyncio.wait_for(chapter_for_both(), DEADLINE_S))
    probes = {}
    for name, outputs in runs.items():
        for code, out in zip(cells + [PROBE], outputs):
            assert out["reply"] == "ok" and not out["errors"], (name, code, out)
        printed = "".join(o["text"] for o in outputs)
        for key in built.exercises:
            assert f"{key}: correct" in printed, (name, key, printed)
        probes[name] = json.loads(outputs[-1]["text"].split("PROBE ", 1)[1])

    # Both launched the same probe kernel in the kernel that ran the chapter, at the same time:
    # had they shared a cache, one of the two would have found the other's pipeline.
    alice, bob = probes["alice"], probes["bob"]
    assert alice["pid"] != bob["pid"]
    assert alice["compiled"] == bob["compiled"] and len(bob["compiled"]) == 1
    assert alice["hits"] == bob["hits"] == 1  # each one's second launch hits its own cache
    assert alice["values"] == bob["values"] == [0.0, 1.0, 2.0, 3.0]
