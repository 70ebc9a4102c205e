"""Shared fixtures. The wgpu client FAILS (never skips) when CUBELAB_EXPECT_WGPU=1 and no
adapter is found — CI sets it, so a missing lavapipe cannot pass as green."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

if not os.environ.get("XDG_RUNTIME_DIR") or not os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubelab-xdg-")

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def wgpu_client():  # type: ignore[no-untyped-def]
    from cubelab import Device, DeviceError

    try:
        return Device.wgpu().client()
    except DeviceError as exc:
        if os.environ.get("CUBELAB_EXPECT_WGPU") == "1":
            pytest.fail(f"CUBELAB_EXPECT_WGPU=1 but no wgpu adapter: {exc}")
        pytest.skip(f"no wgpu adapter here: {exc}")


@pytest.fixture
def client(wgpu_client):  # type: ignore[no-untyped-def]
    return wgpu_client
