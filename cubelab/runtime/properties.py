"""What a client reports about its device. Limits are WebGPU's defaults on every runtime, so a
kernel that launches on one runtime launches on the other, and a launch over a limit is refused
the same way everywhere. The two memory limits are lavapipe's (the wgpu server reads its
adapter's instead): the CPU runtime refuses what lavapipe refuses, so a program that works on one
works on the other."""

from __future__ import annotations

from dataclasses import dataclass, field


# WebGPU's default maxComputeWorkgroupStorageSize: bytes of shared memory a cube may declare
# where the device says nothing else (the frontend refuses one larger declaration at once, with a
# caret; the compile pipeline checks a kernel's total against the device's own limit).
DEFAULT_MAX_SHARED_MEMORY = 16384


@dataclass(frozen=True)
class DeviceProperties:
    adapter: str = "?"
    backend: str = "?"
    adapter_type: str = "?"
    features: frozenset[str] = field(default_factory=frozenset)
    max_units_per_cube: int = 256
    max_cube_dim: tuple[int, int, int] = (256, 256, 64)
    max_cubes_per_dim: int = 65535
    max_shared_memory: int = DEFAULT_MAX_SHARED_MEMORY
    max_storage_buffers: int = 8
    # offsets and sizes of pooled slices are multiples of this (on wgpu the adapter's
    # min_storage_buffer_offset_alignment, since a slice is bound at its offset; 256 is
    # WebGPU's default, and what the CPU runtime uses)
    memory_alignment: int = 256
    # the smallest and largest plane (subgroup) the adapter says it may run — CubeCL's
    # `hardware.plane_size_min/max`, read by a kernel through `device_properties()`. A bound,
    # not the width a launch gets: lavapipe reports 4..128 and runs 8 (`PLANE_DIM` says which);
    # the CPU runtime's planes are 32 wide
    plane_size_min: int = 32
    plane_size_max: int = 32
    # the largest buffer one allocation may make, and the most bytes one launch may bind per
    # buffer argument (a slice's declared items, a tensor's whole handle); None: no limit
    max_buffer_size: int | None = 2**31 - 1
    max_binding_size: int | None = 2**27
    # The loop iterations one unit may run, all loops together, before the *driver* ends them
    # without a word (lavapipe: 65 535; None: no such cap). The compile pipeline unrolls loops
    # where there is one (`ir/passes.py` LoopUnroll), so a correct long loop still runs to its
    # end; the loop guard still says when the cap cut one.
    driver_loop_limit: int | None = None

    @property
    def has_subgroups(self) -> bool:
        return "subgroup" in self.features

    @property
    def hardware(self) -> "DeviceProperties":
        """CubeCL groups the limits under `properties.hardware`; cubelab's are one flat record,
        so `device_properties().hardware.plane_size_min` reads as CubeCL's does."""
        return self


def allocation_refusal(size: int, properties: DeviceProperties | None,
                       device: str) -> str | None:
    """Why an allocation of `size` bytes is over the device's buffer limit, or None. (The one
    home of the rule: the server refuses with it, and the client asks first, so a refusal that
    no garbage collection can change is not retried.)"""
    limit = getattr(properties, "max_buffer_size", None)
    if limit is None or size <= limit:
        return None
    return (f"cannot allocate {size} bytes on {device}: a buffer holds at most {limit} bytes "
            f"on this device (max_buffer_size, {limit / 2**30:.1f} GiB)\n  hint: split the data "
            "over several buffers, each within the limit (and each launch binds at most "
            f"{getattr(properties, 'max_binding_size', None)} bytes of one)")
