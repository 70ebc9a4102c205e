"""cubelab — learn how a GPU kernel compiler and runtime work, CubeCL-style, from Python.

The public surface is this module and `cubelab.prelude`; everything else may change.
`import cubelab` is light: no IPython, ipywidgets or rich, and no adapter is requested until a
device is asked for.
"""

from cubelab.errors import (
    BufferFailure,
    CaptureError,
    CompileError,
    CubeError,
    DeviceError,
    KernelSourceError,
    LaunchError,
    ReleasedHandleError,
    ResourceError,
)
from cubelab.frontend.kernel import cube
from cubelab.runtime.device import Device
from cubelab.runtime.dry_run import LaunchMode, dry_run, real_run
from cubelab.runtime.streams import stream
from cubelab.runtime.handle import BufferArg, Handle, ScalarArg, TensorArg
from cubelab.runtime.kernel_id import CubeDim, ExecutionMode, KernelId
from cubelab.runtime.launch_args import CubeCount

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]
    """`%load_ext cubelab`: registers `%%cube` and `%cubelab` (IPython is imported only here)."""
    from cubelab.magic import load

    load(ipython)


__all__ = [
    "BufferFailure", "CompileError", "CubeError", "DeviceError", "KernelSourceError",
    "LaunchError", "cube", "Device", "BufferArg", "Handle", "ScalarArg", "CubeCount", "CubeDim",
    "ExecutionMode", "KernelId", "__version__", "CaptureError", "ResourceError", "LaunchMode",
    "dry_run", "real_run", "stream", "TensorArg", "ReleasedHandleError",
]
