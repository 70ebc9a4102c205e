# Sourced by scripts/lab.sh and scripts/test.sh: install what is missing, then activate .venv.
# Idempotent and quiet when everything is already there.
#
# What is installed depends on CUBELAB_EXTRA (the pyproject extra; lab.sh and test.sh set it):
#   lab    a student's lab: cubelab + JupyterLab, ipywidgets, ipykernel (the default)
#   teach  a teacher's lab: lab + nbgrader
#   test   everything: teach + rich, pytest, nbclient, Playwright, JupyterHub, build tools;
#          plus g++ and chromium from apt and JupyterHub's proxy from npm
# Each includes the one before it: a .venv set up for the tests also serves the lab (the lab
# turns nbgrader's UI off for students itself, see cubelab/lab.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
extra="${CUBELAB_EXTRA:-lab}"
_cubelab_rank() { case "$1" in lab) echo 1 ;; teach) echo 2 ;; test) echo 3 ;; *) echo 0 ;; esac; }
level="$(_cubelab_rank "$extra")"
if [ "$level" = 0 ]; then
  echo "cubelab setup: CUBELAB_EXTRA must be lab, teach or test, not '$extra'" >&2
  return 2
fi

# System packages: Mesa's software Vulkan driver (lavapipe) gives wgpu a real adapter on a
# machine without a GPU. For the tests only: g++ checks the generated MSL against
# tests/metal_shim; chromium is the real browser the JupyterLab test drives (Playwright never
# downloads one here).
APT_PACKAGES="mesa-vulkan-drivers libvulkan1"
if [ "$level" -ge 3 ]; then
  APT_PACKAGES="$APT_PACKAGES g++ chromium"
fi
missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ] && command -v dpkg >/dev/null; then
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

# The Python environment: .venv with cubelab (editable) and the extra asked for. The stamp holds
# pyproject.toml's digest and the largest extra installed (a bare digest is the first waves'
# stamp, which installed everything).
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "cubelab setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=".venv/.cubelab-installed"
want="$(sha256sum < pyproject.toml | cut -c1-16)"
have="" have_extra=""
[ -f "$stamp" ] && { read -r have have_extra < "$stamp" || true; }
have_extra="${have_extra:-test}"  # a bare digest: the first waves' stamp, which installed all
have_level=0
[ -n "$have" ] && have_level="$(_cubelab_rank "$have_extra")"
if [ "$have" != "$want" ] || [ "$have_level" -lt "$level" ]; then
  target="$extra"
  [ "$have_level" -gt "$level" ] && target="$have_extra"  # an update keeps what was there
  echo "cubelab setup: installing Python packages into .venv (cubelab[$target]; the first run" \
       "takes a minute or two)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # nbstripout: the git filter below (a checkout's tool, not the package's: no extra needs it)
  .venv/bin/python -m pip install -q -e ".[$target]" "nbstripout>=0.7"
  echo "$want $target" > "$stamp"
fi

# JupyterHub's proxy, configurable-http-proxy (an npm package), for the classroom test's real hub
# (tests/test_jupyterhub.py); tests only. It goes into .venv (bin/ and lib/node_modules/), so
# activating the venv puts it on PATH. A failure is said once, with what it costs, and kept in
# .venv/.cubelab-npm-failed (the hub test's skip message quotes it); later runs do not retry
# (npm may wait minutes on a registry it cannot reach) until that file is removed.
npm_failed=".venv/.cubelab-npm-failed"
if [ "$level" -ge 3 ] && [ ! -x .venv/bin/configurable-http-proxy ] && [ ! -f "$npm_failed" ]; then
  if ! command -v npm >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "cubelab setup: installing nodejs and npm (for JupyterHub's proxy)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq nodejs npm >/dev/null 2>&1 || true
  fi
  if command -v npm >/dev/null; then
    echo "cubelab setup: installing configurable-http-proxy into .venv (npm)"
    if ! npm install -g --prefix .venv --no-audit --no-fund --loglevel=error \
        --fetch-retries=1 --fetch-timeout=60000 \
        "configurable-http-proxy@^5" >"$npm_failed.log" 2>&1; then
      { echo "npm could not install configurable-http-proxy:"; tail -n 4 "$npm_failed.log"; } \
        > "$npm_failed"
    fi
    rm -f "$npm_failed.log"
  else
    echo "there is no npm (and this user cannot install it)" > "$npm_failed"
  fi
  if [ -f "$npm_failed" ]; then
    echo "cubelab setup: no JupyterHub proxy ($(head -n 1 "$npm_failed")); the one test that" \
         "starts a real JupyterHub will skip, naming this. Remove $npm_failed to try again." >&2
  fi
fi

# shellcheck disable=SC1091
source .venv/bin/activate

# Notebooks are committed without outputs (the suite checks what git would commit). In a git
# checkout, nbstripout's git filter strips them on the way into git, so running and saving a
# notebook never shows up as a change, never gets committed, and never fails the next test run.
# It is configured in this checkout only (.git/config, .git/info/attributes). `--keep-id`: the
# chapters' cell ids are part of them (nbstripout would renumber them, and every notebook would
# show as changed the moment the filter is installed). The extra keys (scripts/nbstripout-extra-keys)
# are what JupyterLab adds when it saves.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  keys="$(grep -v '^#' scripts/nbstripout-extra-keys | tr '\n' ' ' | sed 's/ *$//')"
  strip="\"$ROOT/.venv/bin/python\" -m nbstripout --keep-id --extra-keys \"$keys\""
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
