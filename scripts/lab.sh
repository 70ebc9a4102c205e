#!/usr/bin/env bash
# Install what is missing, then start JupyterLab on the notebooks (or on FOLDER).
#
#   bash scripts/lab.sh                      # JupyterLab on cubelab's notebooks/
#   bash scripts/lab.sh ~/course             # ... on a teacher's course folder instead
#   bash scripts/lab.sh ~/course --port 9000 # anything after the folder goes to JupyterLab
#
# The class-room settings live in scripts/jupyter-config/ and are added to Jupyter's config
# search path (JUPYTER_CONFIG_PATH), never written into your home: no "would you like the
# news?" prompt, no update check, and kernels talk to the server over local IPC sockets instead
# of TCP (so the server log does not warn "Kernel is running over TCP without encryption" at
# every kernel start). Your own ~/.jupyter configuration still wins over them.
caller_pwd="$PWD"
folder=""
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  folder="$1"
  shift
fi
source "$(dirname "$0")/setup.sh"   # cd's to the repository root
if [ -z "$folder" ]; then
  folder="$ROOT/notebooks"
else
  case "$folder" in /*) ;; *) folder="$caller_pwd/$folder" ;; esac
  if [ ! -d "$folder" ]; then
    echo "cubelab lab: no such folder: $folder" >&2
    exit 2
  fi
fi
export JUPYTER_CONFIG_PATH="$ROOT/scripts/jupyter-config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
as_root=()
if [ "$(id -u)" = "0" ]; then
  as_root=(--allow-root)   # containers and cloud machines often give you only root
fi
exec python -m jupyterlab --ServerApp.root_dir="$folder" "${as_root[@]}" "$@"
