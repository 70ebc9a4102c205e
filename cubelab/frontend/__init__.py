"""The `@cube` frontend: Python kernels → generated `expand` → IR (see `kernel.py`)."""

from cubelab.frontend.kernel import CubeFunction, KernelInstance, cube

__all__ = ["CubeFunction", "KernelInstance", "cube"]
