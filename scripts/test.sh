#!/usr/bin/env bash
# Install what is missing, then run the whole test suite (kernels on wgpu/lavapipe, notebooks).
source "$(dirname "$0")/setup.sh"
exec python -m pytest "$@"
