"""Kernels for the access-map, race, out-of-bounds and non-finite tests: the classic first-kernel
bugs (a missing barrier, a missing guard, a division by zero) and their correct twins."""

from cubelab.prelude import *


@cube(launch=True)
def tree_sum(x: Slice[f32], out: SliceMut[f32]):
    """Each cube sums its 8 values in shared memory, with a barrier after every step."""
    sm = SharedMemory[f32](8)
    sm[UNIT_POS] = x[ABSOLUTE_POS]
    sync_cube()
    s = u32(4)
    while s > 0:
        if UNIT_POS < s:
            sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]
        sync_cube()
        s = s // 2
    if UNIT_POS == 0:
        out[CUBE_POS] = sm[0]


@cube(launch=True)
def tree_sum_no_sync(x: Slice[f32], out: SliceMut[f32]):
    """The same sum with the barrier inside the loop forgotten: a race, invisible in the result."""
    sm = SharedMemory[f32](8)
    sm[UNIT_POS] = x[ABSOLUTE_POS]
    sync_cube()
    s = u32(4)
    while s > 0:
        if UNIT_POS < s:
            sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]
        s = s // 2
    if UNIT_POS == 0:
        out[CUBE_POS] = sm[0]


@cube(launch=True)
def histogram4(x: Slice[u32], hist: SliceMut[Atomic[u32]]):
    hist[x[ABSOLUTE_POS] % 4].fetch_add(u32(1))


@cube(launch=True)
def pairs_write_one(out: SliceMut[u32]):
    """Units 2k and 2k+1 both write out[k]: whichever runs last wins."""
    out[ABSOLUTE_POS // 2] = ABSOLUTE_POS


@cube(launch=True)
def map_no_guard(x: Slice[f32], out: SliceMut[f32]):
    """A map with its `if ABSOLUTE_POS < x.len()` guard removed."""
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + f32(10.0)


@cube(launch=True)
def conv3(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    """1-D convolution, width 3, 8 units per cube: each cube loads its 8 values and the 2 after
    them into shared memory, waits, then every unit reads its 3 neighbours from there."""
    sm = SharedMemory[f32](10)
    i = ABSOLUTE_POS
    if i < a.len():
        sm[UNIT_POS] = a[i]
    if UNIT_POS < 2:
        if i + 8 < a.len():
            sm[UNIT_POS + 8] = a[i + 8]
    sync_cube()
    if i < a.len():
        acc = f32(0.0)
        for k in unroll(range(3)):
            if i + k < a.len():
                acc += sm[UNIT_POS + k] * b[k]
        out[i] = acc


@cube(launch=True)
def divide_by_zero(x: Slice[f32], out: SliceMut[f32]):
    y = x[ABSOLUTE_POS] * f32(2.0)
    out[ABSOLUTE_POS] = y / f32(0.0)


@cube(launch=True)
def ten_accesses(x: Slice[f32], out: SliceMut[f32]):
    """~10 accesses per unit (the benchmark's recording workload): 4 global reads, a shared
    write, a barrier, 4 shared reads, a global write."""
    sm = SharedMemory[f32](256)
    i = ABSOLUTE_POS
    sm[UNIT_POS] = x[i] + x[(i + 1) % x.len()] + x[(i + 2) % x.len()] + x[(i + 3) % x.len()]
    sync_cube()
    acc = f32(0.0)
    for k in unroll(range(4)):
        acc += sm[(UNIT_POS + k) % 256]
    out[i] = acc


@cube(launch=True)
def conv3_no_edge_guard(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    """conv3 without `if i + k < a.len()`: the last units of the last cube read halo cells that
    no unit loaded (uninitialised shared memory: zero on WGSL, garbage on CUDA)."""
    sm = SharedMemory[f32](10)
    i = ABSOLUTE_POS
    if i < a.len():
        sm[UNIT_POS] = a[i]
    if UNIT_POS < 2:
        if i + 8 < a.len():
            sm[UNIT_POS + 8] = a[i + 8]
    sync_cube()
    if i < a.len():
        acc = f32(0.0)
        for k in unroll(range(3)):
            acc += sm[UNIT_POS + k] * b[k]
        out[i] = acc
