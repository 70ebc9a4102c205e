"""`KernelLauncher`: one launch's runtime arguments, registered one by one, then submitted.

The seed's `KernelLauncher` is what a `#[cube(launch)]` kernel's generated `launch` fills in:
it registers each buffer and scalar argument, and `launch(client, kernel, cube_count)` hands
the kernel object (its `id()` is the cache key) with the bound arguments to the client. The
frontend's `launch` (`frontend/launch.py`) checks each argument against the kernel's signature
first; what is checked here is what the *runtime* owns on the calling thread: the cube dim
against the device's limits (`check_cube_dim`, one of the seed's gates), and a buffer bound
both read-only and writable (WebGPU refuses such a dispatch).

Cost matters: this is on every cache-hit launch, so registering is a list append.
"""

from __future__ import annotations

from typing import Any

from cubelab.compiler.pipeline import Limits, cube_dim_fits
from cubelab.errors import LaunchError, hinted
from cubelab.runtime.kernel_id import CubeDim, CubeKernel
from cubelab.runtime.launch_args import Bindings, BufferBinding, CubeCount

__all__ = ["KernelLauncher", "check_aliasing", "check_cube_dim"]


class KernelLauncher:
    """The runtime arguments of one launch, in binding order, then `launch`."""

    __slots__ = ("buffers", "scalars")

    def __init__(self) -> None:
        self.buffers: list[BufferBinding] = []
        self.scalars: dict[str, list[Any]] = {}  # elem ("f32", ...) -> values in order

    def register_buffer(self, binding: BufferBinding) -> None:
        self.buffers.append(binding)

    def register_scalar(self, elem: str, value: Any) -> None:
        group = self.scalars.get(elem)
        if group is None:
            self.scalars[elem] = [value]
        else:
            group.append(value)

    def launch(self, client: Any, kernel: CubeKernel, cube_count: CubeCount,
               kernel_name: str) -> Bindings:
        """Submit: the client runs the seed's remaining gates and hands it to the device.
        Returns the bindings submitted (the frontend may hand them over again for a launch with
        the very same arguments)."""
        buffers = self.buffers
        if len(buffers) > 1 and len({b.handle.id for b in buffers}) != len(buffers):
            check_aliasing(kernel_name, buffers)
        bindings = Bindings(buffers, self.scalars)
        client.launch(kernel, cube_count, bindings)
        return bindings


def check_aliasing(kernel: str, buffers: list[BufferBinding]) -> None:
    """WebGPU refuses a dispatch that binds one buffer both read-only and writable."""
    seen: dict[int, BufferBinding] = {}
    for b in buffers:
        other = seen.get(b.handle.id)
        if other is not None and other.writable != b.writable:
            ro, rw = (other, b) if b.writable else (b, other)
            raise LaunchError(hinted(
                f"launch of `{kernel}`: the same buffer is bound as `{ro.name}` (read-only) and "
                f"`{rw.name}` (writable); a dispatch cannot read a buffer through one binding "
                "while writing it through another", "use a separate output buffer"))
        seen[b.handle.id] = b


def check_cube_dim(kernel: str, cube_dim: CubeDim, limits: Limits) -> None:
    """The calling thread's gate: a cube dim the device cannot run is refused before anything
    is queued (the same limits the compile checks, `compiler.pipeline.cube_dim_fits`)."""
    dims = cube_dim.as_tuple()
    if not cube_dim_fits(dims, limits):
        raise LaunchError(hinted(
            f"launch of `{kernel}`: cube dim {dims} has {cube_dim.num_units} "
            f"units; the device allows 1..{limits.max_units_per_cube} units per cube and at "
            f"most {limits.max_cube_dim} per axis",
            "use fewer units per cube and more cubes (CubeCount)"))
