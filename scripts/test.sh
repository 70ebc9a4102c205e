#!/usr/bin/env bash
# Install everything (the `test` extra: the lab, nbgrader, JupyterHub, Playwright, build tools),
# then run the whole test suite (kernels on wgpu/lavapipe, notebooks, the real browser).
export CUBELAB_EXTRA=test
source "$(dirname "$0")/setup.sh"
exec python -m pytest "$@"
