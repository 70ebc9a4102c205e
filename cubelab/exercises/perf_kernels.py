"""Kernels, helpers and instrument rules of the performance chapters' exercises (ch12, ch13,
the performance capstone). The kernels are the ones the notebooks define in their cells, written
the same way, so an exercise's run is the program the student read.

- ch12: `scale_add` (the runtime comparison's kernel), `copy` (f32, one item a unit), `poly`
  (Horner's rule in `degree` fused multiply-adds: flops grow, bytes do not), `stencil` (a
  (2·radius + 1)-point sum: requested bytes grow, compulsory bytes do not);
- ch13: `strided_read` (stride as a scalar: sectors per plane-instruction), `shared_strided`
  (a shared read at a stride: bank-conflict ways), `matmul_tiled` (the tile side `t` a
  Comptime value, so every tile size is its own KernelId);
- `coalesced`, `conflict_free`: the rules a kernel exercise adds (`KernelExercise.checks`):
  every global line 100% efficient, every shared line without a bank conflict;
- `upload`, `read_f32`: host arrays in, floats out.

What the exercises check with is counted, never timed (wall time is noisy on a loaded machine
and differs per device): `cubelab.inspect.work` (bytes and flops of a recorded run),
`AccessMap.transactions` / `coalescing()` (32-byte sectors), `AccessMap.bank_conflicts` /
`conflicts()` (ways), the runtime's events (`Flushed`, `CompileFinished`). A count that depends
on how units are grouped into planes is made with `PLANE` (32) units a plane, as an NVIDIA GPU
groups them, so the answer is the same on every machine — lavapipe's planes are 8 wide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.prelude import *  # noqa: F403

PLANE = 32  # units per plane in every count an exercise asks for (NVIDIA's warp)


@cube(launch=True)  # noqa: F405
def scale_add(a: f32, x: Slice[f32], y: SliceMut[f32]):  # noqa: F405
    """y = a·x + y, in place: every launch adds a·x once more."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        y[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def copy(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """out = x, one f32 a unit."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def poly(x: Slice[f32], out: SliceMut[f32], degree: Comptime[int]):  # noqa: F405
    """A polynomial of `degree` by Horner's rule: one fused multiply-add per degree."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        v = x[i]
        acc = f32(1.0)  # noqa: F405
        for _ in unroll(range(degree)):  # noqa: F405
            acc = fma(acc, v, f32(0.5))  # noqa: F405
        out[i] = acc


@cube(launch=True)  # noqa: F405
def stencil(x: Slice[f32], out: SliceMut[f32], radius: Comptime[int]):  # noqa: F405
    """out[i] = x[i - radius] + ... + x[i + radius], where the whole window is inside x."""
    i = ABSOLUTE_POS  # noqa: F405
    if i >= radius and i + radius < x.len():
        acc = f32(0.0)  # noqa: F405
        for k in unroll(range(2 * radius + 1)):  # noqa: F405
            acc += x[i + k - radius]
        out[i] = acc


@cube(launch=True)  # noqa: F405
def strided_read(x: Slice[f32], out: SliceMut[f32], stride: u32):  # noqa: F405
    """Unit i reads x[i · stride]."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < out.len():
        out[i] = x[i * stride]


@cube(launch=True)  # noqa: F405
def shared_strided(out: SliceMut[f32], stride: u32):  # noqa: F405
    """Each unit fills sm[UNIT_POS], then reads sm[(UNIT_POS · stride) mod 1024]."""
    sm = SharedMemory[f32](1024)  # noqa: F405
    sm[UNIT_POS] = f32.cast_from(UNIT_POS)  # noqa: F405
    sync_cube()  # noqa: F405
    out[ABSOLUTE_POS] = sm[(UNIT_POS * stride) % 1024]  # noqa: F405


@cube(launch=True)  # noqa: F405
def matmul_tiled(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], n: u32,  # noqa: F405
                 t: Comptime[int]):  # noqa: F405
    """t × t tiles of a and b through shared memory (n a multiple of t, a t × t cube)."""
    ta = SharedMemory[f32](t * t)  # noqa: F405
    tb = SharedMemory[f32](t * t)  # noqa: F405
    tx = UNIT_POS_X  # noqa: F405
    ty = UNIT_POS_Y  # noqa: F405
    row = CUBE_POS_Y * t + ty  # noqa: F405
    col = CUBE_POS_X * t + tx  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for s in range(n // t):
        ta[ty * t + tx] = a[row * n + s * t + tx]
        tb[ty * t + tx] = b[(s * t + ty) * n + col]
        sync_cube()  # noqa: F405
        for k in unroll(range(t)):  # noqa: F405
            acc += ta[ty * t + k] * tb[k * t + tx]
        sync_cube()  # noqa: F405
    c[row * n + col] = acc


# -- rules a kernel exercise checks with (`KernelExercise.checks`: (access map, case) -> why) --

def coalesced(m: Any, case: Any) -> str | None:
    """Every global access line uses every byte of the sectors it touches (32-unit planes)."""
    for row in m.coalescing():
        if row.efficiency < 1.0:
            return (f"line {row.line} {'reads' if row.kind == 'read' else 'writes'} "
                    f"`{row.array}` at {row.efficiency:.0%} efficiency "
                    f"({row.sectors_per_instruction:.0f} sectors per plane-instruction where "
                    f"{row.ideal / max(1, row.instructions):.0f} would do)")
    return None


def conflict_free(m: Any, case: Any) -> str | None:
    """No shared-memory access line needs more passes than its words could (32 banks)."""
    for row in m.conflicts():
        if row.worst > row.ideal:
            return (f"line {row.line} {'reads' if row.kind == 'read' else 'writes'} shared "
                    f"`{row.array}` with a {row.worst}-way bank conflict")
    return None


def upload(client: Any, values: Any) -> Any:
    """A handle holding `values` as f32."""
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))  # noqa


def read_f32(client: Any, handle: Any) -> np.ndarray:
    return f32.from_bytes(client.read_one(handle))  # noqa: F405


def arg(handle: Any, n: int) -> Any:
    return BufferArg.from_raw_parts(handle, n)  # noqa: F405
