"""JupyterHub for a cubelab class on one machine — The Littlest JupyterHub's shape, standalone.

    sudo python3 -m venv /opt/jupyterhub && sudo /opt/jupyterhub/bin/pip install \
         jupyterhub jupyterhub-systemdspawner jupyterhub-nativeauthenticator jupyterhub-idle-culler
    sudo npm install -g configurable-http-proxy
    sudo python3 -m venv /opt/cubelab && sudo /opt/cubelab/bin/pip install "cubelab[lab] @ ..." \
         jupyterhub nbgrader                     # the shared environment every student runs in
    sudo /opt/jupyterhub/bin/jupyterhub -f deploy/jupyterhub_config.py

docs/classroom.md has the whole walk-through (TLS, the systemd unit, nbgrader's exchange, and the
same set-up through TLJH's own `tljh-config`). The shape, as TLJH has it:

- one process per student: SystemdSpawner starts each student's `jupyterhub-singleuser` as its
  own systemd unit, with a memory and CPU limit enforced by the kernel's cgroups (a student's
  runaway kernel is killed alone, not the machine); `/tmp` and devices are private to the unit;
- cubelab in one shared environment (`CUBELAB_HUB_ENV`, /opt/cubelab): the teacher upgrades it
  once for everybody; students' own `pip install --user` lands in their home;
- accounts: `native` (default) — students sign up with a username and password, an admin (or the
  class list) authorises them; `pam` — the machine's own users, each server runs as that user;
- idle servers are culled after an hour, so 300 students who closed their laptops don't hold 300
  kernels' memory.

Every knob is an environment variable read once below, so the file itself stays as shipped. The
sizes come from the measurements in docs/classroom.md: a student holds ~0.3 GiB (their JupyterLab
server and one lavapipe kernel after the whole course), ~0.65 GiB with three chapters open; 2 GiB
leaves room for their own experiments, and ~150-160 students share a 16-core / 128 GiB machine. The trap: lavapipe (Mesa's software
Vulkan driver) starts one render thread per core *in every student's process* unless
`LP_NUM_THREADS` says otherwise; on a 16-core machine with 100 students that is 1600 threads
fighting over 16 cores. It is set to the CPU limit here.
"""

import math
import os
import sys

c = get_config()  # noqa: F821 (JupyterHub executes this file with get_config defined)

AUTH = os.environ.get("CUBELAB_HUB_AUTH", "native")  # "native" | "pam"
USER_ENV = os.environ.get("CUBELAB_HUB_ENV", "/opt/cubelab")  # the students' shared environment
MEM_LIMIT = os.environ.get("CUBELAB_HUB_MEM", "2G")  # per student, enforced (cgroup MemoryMax)
CPU_LIMIT = float(os.environ.get("CUBELAB_HUB_CPU", "1"))  # per student, cores (CPUQuota)
ADMINS = {u for u in os.environ.get("CUBELAB_HUB_ADMINS", "teacher").split(",") if u}
CLASS_LIST = os.environ.get("CUBELAB_HUB_CLASS_LIST", "")  # a file: one username per line
CULL_AFTER_S = int(os.environ.get("CUBELAB_HUB_CULL_S", "3600"))
STATE_DIR = os.environ.get("CUBELAB_HUB_STATE", "/srv/jupyterhub")
EXCHANGE = os.environ.get("CUBELAB_HUB_EXCHANGE", "/srv/nbgrader/exchange")  # nbgrader's

# -- the hub itself: behind a TLS-terminating reverse proxy (Caddy/nginx/traefik) on this host --
c.JupyterHub.bind_url = os.environ.get("CUBELAB_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.db_url = f"sqlite:///{STATE_DIR}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{STATE_DIR}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.pid_file = f"{STATE_DIR}/jupyterhub-proxy.pid"
c.JupyterHub.cleanup_servers = False  # a hub restart (config change) keeps students' kernels
c.JupyterHub.concurrent_spawn_limit = 20  # a class logging in at 9:00 sharp queues, not stampedes

# -- accounts -----------------------------------------------------------------------------------
c.Authenticator.admin_users = ADMINS
if CLASS_LIST:
    with open(CLASS_LIST, encoding="utf-8") as f:
        c.Authenticator.allowed_users = {line.strip() for line in f if line.strip()} | ADMINS
else:
    c.Authenticator.allow_all = True  # anyone who can log in (native: once authorised)
if AUTH == "native":
    import nativeauthenticator

    c.JupyterHub.authenticator_class = "native"
    c.JupyterHub.template_paths = [f"{os.path.dirname(nativeauthenticator.__file__)}/templates/"]
    # With a class list the listed students are let in as soon as they sign up; without one an
    # admin authorises each sign-up at /hub/authorize.
    c.NativeAuthenticator.open_signup = bool(CLASS_LIST)
    c.NativeAuthenticator.minimum_password_length = 8
    c.NativeAuthenticator.check_common_password = True
    c.NativeAuthenticator.allowed_failed_logins = 10
    c.NativeAuthenticator.seconds_before_next_try = 60
elif AUTH == "pam":
    c.JupyterHub.authenticator_class = "pam"  # the machine's users and passwords
else:
    raise ValueError(f"CUBELAB_HUB_AUTH={AUTH!r}: use 'native' or 'pam'")

# -- one process per student, limited -----------------------------------------------------------
c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
# native accounts are no system users: systemd makes one per student unit (DynamicUser) with a
# persistent home under /var/lib/private; pam accounts run as themselves in their own home.
c.SystemdSpawner.dynamic_users = AUTH == "native"
c.SystemdSpawner.mem_limit = MEM_LIMIT
c.SystemdSpawner.cpu_limit = CPU_LIMIT
c.SystemdSpawner.isolate_tmp = True
c.SystemdSpawner.isolate_devices = True  # no /dev/dri etc.: lavapipe needs none (GPU: see docs)
c.SystemdSpawner.disable_user_sudo = True
c.SystemdSpawner.unit_extra_properties = {"TasksMax": "512"}  # a fork bomb stays in its unit
# DynamicUser units see the file system read-only outside their home: nbgrader's exchange, where
# students fetch and submit assignments, must be named to stay writable.
c.SystemdSpawner.readwrite_paths = [EXCHANGE]
c.Spawner.cmd = [f"{USER_ENV}/bin/jupyterhub-singleuser"]
c.SystemdSpawner.extra_paths = [f"{USER_ENV}/bin"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 60
c.Spawner.environment = {
    # lavapipe prints an error line without it; the unit's /tmp is private (isolate_tmp)
    "XDG_RUNTIME_DIR": "/tmp",
    # one lavapipe render thread per core the student may use (see the module's docstring)
    "LP_NUM_THREADS": str(max(1, math.ceil(CPU_LIMIT))),
    # numpy's BLAS pools likewise (the CPU runtime is numpy)
    "OMP_NUM_THREADS": str(max(1, math.ceil(CPU_LIMIT))),
    "OPENBLAS_NUM_THREADS": str(max(1, math.ceil(CPU_LIMIT))),
    # students may pick the runtime per notebook (%cubelab device cpu|wgpu); the machine default:
    **({"CUBELAB_DEVICE": os.environ["CUBELAB_HUB_DEVICE"]}
       if os.environ.get("CUBELAB_HUB_DEVICE") else {}),
}

# -- idle servers go away -----------------------------------------------------------------------
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_AFTER_S}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
