"""The kernel zoo (see `kernels.py`) and `ZOO`: one compile-time instance of each kernel.

`ZOO` is a list of `(name, KernelInstance)` built with `cubelab.inspect.instance(...)`, with the
cube dims and comptime arguments the tests launch with, so `benchmarks/compile_time.py` can time
expand + passes + WGSL for each without launching anything.
"""

from __future__ import annotations

from typing import Any

from cubelab import CubeDim
from cubelab.frontend.kernel import KernelInstance
from cubelab.inspect import instance
from cubelab.prelude import f32

from . import kernels as k

BLOCK = 64
TILE = 8
BINS = 32
HORNER = (1.0, -0.5, 0.25, 2.0, -1.0, 0.125)  # degree 5


def _zoo() -> list[tuple[str, Any]]:
    d1 = CubeDim.new_1d(BLOCK)
    return [
        ("gelu", instance(k.gelu, f32, cube_dim=d1)),
        ("block_sum", instance(k.block_sum, cube_dim=d1, comptime=(BLOCK,))),
        ("sum_all", instance(k.sum_all, cube_dim=d1, comptime=(BLOCK,))),
        ("scan_block", instance(k.scan_block, cube_dim=d1, comptime=(BLOCK,))),
        ("add_block_offsets", instance(k.add_block_offsets, cube_dim=d1)),
        ("matmul", instance(k.matmul, cube_dim=CubeDim.new_2d(TILE, TILE), comptime=(TILE,))),
        ("strided_copy_2d", instance(k.strided_copy_2d, cube_dim=CubeDim.new_2d(8, 8))),
        ("histogram", instance(k.histogram, cube_dim=d1, comptime=(BINS,))),
        ("stencil3", instance(k.stencil3, cube_dim=d1, comptime=(BLOCK,))),
        ("softmax_rows", instance(k.softmax_rows, cube_dim=d1, comptime=(BLOCK,))),
        ("collatz_steps", instance(k.collatz_steps, cube_dim=d1)),
        ("safe_sqrt", instance(k.safe_sqrt, cube_dim=d1)),
        ("polyval", instance(k.polyval, cube_dim=d1, comptime=(HORNER,))),
        ("neighbour_sum", instance(k.neighbour_sum, cube_dim=d1, comptime=(BLOCK,))),
        ("bit_tricks", instance(k.bit_tricks, cube_dim=d1)),
        ("conv2d_3x3", instance(k.conv2d_3x3, cube_dim=CubeDim.new_2d(8, 8))),
        ("morton_bits", instance(k.morton_bits, cube_dim=d1)),
        ("plane_scan", instance(k.plane_scan, cube_dim=d1)),
        ("tiny_vm", instance(k.tiny_vm, cube_dim=d1)),
        ("shape_area", instance(k.shape_area, cube_dim=d1)),
        # the big unrolled ones (compile time linear in ops): 36 bitonic stages, the 16×16
        # tile of `matmul` (16 multiply-adds unrolled per tile), a 64-step serial scan
        ("bitonic_sort", instance(k.bitonic_sort, cube_dim=CubeDim.new_1d(256),
                                  comptime=(256,))),
        ("matmul_16x16", instance(k.matmul, cube_dim=CubeDim.new_2d(16, 16), comptime=(16,))),
        ("scan_unrolled", instance(k.scan_unrolled, cube_dim=d1, comptime=(64,))),
    ]


ZOO: list[tuple[str, KernelInstance]] = _zoo()
