#!/usr/bin/env bash
# Install what a student needs, then start JupyterLab on the chapters (or on FOLDER).
#
#   bash scripts/lab.sh                      # JupyterLab on cubelab's notebooks/ (a student's lab)
#   bash scripts/lab.sh ~/course             # ... on a course folder instead
#   bash scripts/lab.sh ~/course --port 9000 # anything after the folder goes to JupyterLab
#   bash scripts/lab.sh --teacher [FOLDER]   # a teacher's lab: nbgrader's menus, solutions shown
#
# A student's lab installs the `lab` extra only (JupyterLab, ipywidgets, ipykernel: no
# Playwright, nbgrader, JupyterHub or npm); `--teacher` adds nbgrader (the `teach` extra);
# `bash scripts/test.sh` installs everything. The lab itself is `cubelab lab` (cubelab/lab.py):
# class-room settings on JUPYTER_CONFIG_PATH for this server only (no news prompt, no update
# check, kernels over IPC), and for students nbgrader's UI off and `solutions/` out of view.
caller_pwd="$PWD"
teacher=()
CUBELAB_EXTRA=lab
if [ "${1:-}" = "--teacher" ]; then
  teacher=(--teacher)
  CUBELAB_EXTRA=teach
  shift
fi
folder=""
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  folder="$1"
  shift
fi
export CUBELAB_EXTRA
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
# this checkout's cubelab (what its editable install points at anyway)
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec python -m cubelab lab "${teacher[@]}" \
  "$folder" "$@"
