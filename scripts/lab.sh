#!/usr/bin/env bash
# Install what is missing, then start JupyterLab on the notebooks.
source "$(dirname "$0")/setup.sh"
exec python -m jupyterlab --notebook-dir="$ROOT/notebooks" "$@"
