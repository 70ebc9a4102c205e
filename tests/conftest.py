"""Shared fixtures.

`client` is parametrised over both runtimes — one test suite, two devices: every test that takes
`client` runs as `test_x[wgpu]` (lavapipe or a GPU) and `test_x[cpu]` (the numpy interpreter),
and must get identical integer results and floats within its stated tolerance on both. A test
that only makes sense on one runtime takes `wgpu_client` or `cpu_client` instead.

The wgpu client FAILS (never skips) when CUBELAB_EXPECT_WGPU=1 and no adapter is found — CI sets
it, so a missing lavapipe cannot pass as green. Without it, a machine with no Vulkan driver skips
the `[wgpu]` half and still runs the `[cpu]` half."""

from __future__ import annotations

import os
import tempfile

import pytest

if not os.environ.get("XDG_RUNTIME_DIR") or not os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cubelab-xdg-")


@pytest.fixture(scope="session")
def wgpu_client():  # type: ignore[no-untyped-def]
    from cubelab import Device, DeviceError

    try:
        return Device.wgpu().client()
    except DeviceError as exc:
        if os.environ.get("CUBELAB_EXPECT_WGPU") == "1":
            pytest.fail(f"CUBELAB_EXPECT_WGPU=1 but no wgpu adapter: {exc}")
        pytest.skip(f"no wgpu adapter here: {exc}")


@pytest.fixture(scope="session")
def cpu_client():  # type: ignore[no-untyped-def]
    from cubelab import Device

    return Device.cpu().client()


@pytest.fixture(params=["wgpu", "cpu"])
def client(request):  # type: ignore[no-untyped-def]
    return request.getfixturevalue(f"{request.param}_client")
