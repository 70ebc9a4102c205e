"""The JupyterHub configurations in deploy/ say what docs/classroom.md promises.

The one-machine config is loaded the way JupyterHub loads it (executed with `get_config`) for
both account kinds; the Kubernetes values are read as the Helm chart would. Neither hub can run
here (systemd units, a cluster); the hub the suite does run is in test_jupyterhub.py.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
import yaml
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"


def _load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> Config:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # nativeauthenticator is installed on the hub, not in the test environment: the config only
    # needs its package folder (for the sign-up templates).
    fake = types.ModuleType("nativeauthenticator")
    fake.__file__ = str(tmp_path / "nativeauthenticator" / "__init__.py")
    monkeypatch.setitem(sys.modules, "nativeauthenticator", fake)
    config = Config()
    source = (DEPLOY / "jupyterhub_config.py").read_text()
    exec(compile(source, str(DEPLOY / "jupyterhub_config.py"), "exec"),
         {"get_config": lambda: config, "__file__": str(DEPLOY / "jupyterhub_config.py")})
    return config


def test_one_machine_hub_runs_one_limited_systemd_unit_per_student(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    c = _load(monkeypatch, tmp_path, CUBELAB_HUB_MEM="3G", CUBELAB_HUB_CPU="2")
    assert c.JupyterHub.spawner_class == "systemdspawner.SystemdSpawner"
    assert c.SystemdSpawner.mem_limit == "3G" and c.SystemdSpawner.cpu_limit == 2.0
    assert c.Spawner.cmd == ["/opt/cubelab/bin/jupyterhub-singleuser"]  # the shared environment
    assert c.Spawner.environment["LP_NUM_THREADS"] == "2"  # lavapipe: threads = the CPU limit
    assert c.JupyterHub.services[0]["name"] == "idle-culler"
    assert c.SystemdSpawner.readwrite_paths == ["/srv/nbgrader/exchange"]  # students can submit


def test_one_machine_hub_accounts_native_by_default_or_the_hosts_users(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    native = _load(monkeypatch, tmp_path)
    assert native.JupyterHub.authenticator_class == "native"
    assert native.SystemdSpawner.dynamic_users is True  # sign-ups are no system users
    assert native.NativeAuthenticator.open_signup is False  # an admin authorises each
    roster = tmp_path / "class.txt"
    roster.write_text("ada\nalan\n")
    listed = _load(monkeypatch, tmp_path, CUBELAB_HUB_CLASS_LIST=str(roster))
    assert listed.Authenticator.allowed_users == {"ada", "alan", "teacher"}
    assert listed.NativeAuthenticator.open_signup is True
    pam = _load(monkeypatch, tmp_path, CUBELAB_HUB_AUTH="pam")
    assert pam.JupyterHub.authenticator_class == "pam"
    assert pam.SystemdSpawner.dynamic_users is False  # each server runs as the host user


def test_kubernetes_values_default_to_cpu_and_offer_a_gpu_profile() -> None:
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    user = values["singleuser"]
    cpu, gpu = user["profileList"]
    assert cpu.get("default") is True and "kubespawner_override" not in cpu
    override = gpu["kubespawner_override"]
    assert override["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert "graphics" in override["environment"]["NVIDIA_DRIVER_CAPABILITIES"]
    icd = override["environment"]["VK_DRIVER_FILES"]
    assert icd.startswith("/srv/cubelab/")  # --target-repo-dir: outside the home volume
    shipped = json.loads((ROOT / icd.removeprefix("/srv/cubelab/")).read_text())
    assert shipped["ICD"]["library_path"] == "libGLX_nvidia.so.0"
    assert user["memory"]["limit"] and user["cpu"]["limit"]
    assert user["extraEnv"]["LP_NUM_THREADS"] == "1"
    assert values["cull"]["enabled"] is True
