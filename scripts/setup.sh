# Sourced by scripts/lab.sh and scripts/test.sh: install what is missing, then activate .venv.
# Idempotent and quiet when everything is already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# System packages: Mesa's software Vulkan driver (lavapipe) gives wgpu a real adapter on a
# machine without a GPU; g++ checks the generated MSL against tests/metal_shim; chromium is the
# real browser the JupyterLab test drives (Playwright never downloads one here).
APT_PACKAGES="mesa-vulkan-drivers libvulkan1 g++ chromium"
missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "cubelab setup: installing system packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq $missing >/dev/null
  else
    echo "cubelab setup: missing system packages:$missing" >&2
    echo "  run as root (or: sudo apt-get install -y$missing); without a Vulkan driver cubelab" >&2
    echo "  falls back to its CPU runtime and the wgpu tests cannot run." >&2
  fi
fi

# The Python environment: .venv with cubelab (editable) and its lab + test extras.
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "cubelab setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=".venv/.cubelab-installed"
want="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "cubelab setup: installing Python packages into .venv (first run takes a minute or two)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[test]"
  echo "$want" > "$stamp"
fi

# JupyterHub's proxy, configurable-http-proxy (an npm package), for the classroom test's real hub
# (tests/test_jupyterhub.py). It goes into .venv (bin/ and lib/node_modules/), so activating the
# venv puts it on PATH. Without npm (and not root to install it) that one test skips and says so.
if [ ! -x .venv/bin/configurable-http-proxy ]; then
  if ! command -v npm >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "cubelab setup: installing nodejs and npm (for JupyterHub's proxy)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq nodejs npm >/dev/null || true
  fi
  if command -v npm >/dev/null; then
    echo "cubelab setup: installing configurable-http-proxy into .venv (npm)"
    npm install -g --prefix .venv --no-audit --no-fund --loglevel=error \
      "configurable-http-proxy@^5" >/dev/null \
      || echo "cubelab setup: npm could not install configurable-http-proxy" >&2
  else
    echo "cubelab setup: no npm, so no configurable-http-proxy: the JupyterHub test will skip" >&2
  fi
fi

# shellcheck disable=SC1091
source .venv/bin/activate

# Notebooks are committed without outputs (the suite checks what git would commit). In a git
# checkout, nbstripout's git filter strips them on the way into git, so running and saving a
# notebook never shows up as a change, never gets committed, and never fails the next test run.
# It is configured in this checkout only (.git/config, .git/info/attributes). `--keep-id`: the
# chapters' cell ids are part of them (nbstripout would renumber them, and every notebook would
# show as changed the moment the filter is installed).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  strip="\"$ROOT/.venv/bin/python\" -m nbstripout --keep-id"
  if [ "$(git config --get filter.nbstripout.clean || true)" != "$strip" ]; then
    .venv/bin/python -m nbstripout --install
    git config filter.nbstripout.clean "$strip"
    git config diff.ipynb.textconv "$strip -t"
    echo "cubelab setup: notebooks are stripped of outputs when committed (nbstripout git filter)"
  fi
fi

# lavapipe prints an error line when XDG_RUNTIME_DIR is unset. cubelab sets a private one itself
# before it first touches Vulkan (runtime/wgpu/server.py: ensure_runtime_dir), for kernels and
# processes started any other way; this covers other Vulkan users started from this shell.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "${XDG_RUNTIME_DIR}" ]; then
  export XDG_RUNTIME_DIR="$(mktemp -d)"
fi
