"""The kernel zoo: the kernels a GPU course teaches, written in cubelab's kernel language.

Each kernel is small, commented like course material, and launched by `tests/zoo/test_zoo.py`
against a numpy reference on every runtime. `tests/zoo/__init__.py` lists one compiled instance
of each (`ZOO`) for the compile-time benchmark.
"""

from cubelab.prelude import *  # noqa: F403

F = Float.generic("F")  # noqa: F405


# -- 1. elementwise on vectors: gelu (the CubeCL example) -------------------------------------
@cube(launch=True)  # noqa: F405
def gelu(x: Slice[Vector[F, 4]], out: SliceMut[Vector[F, 4]]):  # noqa: F405
    """out = x · Φ(x), four floats per unit; erf is the documented polynomial."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        v = x[i]
        out[i] = v * 0.5 * (1.0 + erf(v / sqrt(2.0)))  # noqa: F405


# -- 2. block reduction in shared memory ------------------------------------------------------
@cube  # noqa: F405
def tree_sum(sh: SliceMut[f32], u: u32, block: Comptime[int]):  # noqa: F405
    """Sum `sh[0..block)` into `sh[0]` by halving; every unit of the cube must call it."""
    for k in unroll(range(block.bit_length() - 1)):  # noqa: F405
        half = comptime(block >> (k + 1))  # noqa: F405
        if u < half:
            sh[u] += sh[u + half]
        sync_cube()  # noqa: F405


@cube(launch=True)  # noqa: F405
def block_sum(x: Slice[f32], partial: SliceMut[f32], block: Comptime[int]):  # noqa: F405
    """partial[cube] = sum of the cube's slice of x (one block of `block` units)."""
    sh = SharedMemory[f32](block)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    v = f32(0.0)  # noqa: F405
    if i < x.len():
        v = x[i]
    sh[u] = v
    sync_cube()  # noqa: F405
    tree_sum(sh, u, block)
    if u == 0:
        partial[CUBE_POS] = sh[0]  # noqa: F405


# -- 3. two-pass full sum: pass 2 is one cube striding over the partials ------------------------
@cube(launch=True)  # noqa: F405
def sum_all(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):  # noqa: F405
    """out[0] = sum(x) with a single cube: each unit sums a strided range, then a tree."""
    sh = SharedMemory[f32](block)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for j in range(u, x.len(), CUBE_DIM):  # noqa: F405
        acc += x[j]
    sh[u] = acc
    sync_cube()  # noqa: F405
    tree_sum(sh, u, block)
    if u == 0:
        out[0] = sh[0]


# -- 4. Hillis–Steele inclusive scan (per block, then block offsets) --------------------------
@cube(launch=True)  # noqa: F405
def scan_block(x: Slice[f32], out: SliceMut[f32], totals: SliceMut[f32],  # noqa: F405
               block: Comptime[int]):  # noqa: F405
    """out = inclusive scan of each block of x; totals[cube] = the block's sum."""
    buf = SharedMemory[f32](block)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    v = f32(0.0)  # noqa: F405
    if i < x.len():
        v = x[i]
    buf[u] = v
    sync_cube()  # noqa: F405
    for k in unroll(range(block.bit_length() - 1)):  # noqa: F405
        offset = comptime(1 << k)  # noqa: F405
        t = f32(0.0)  # noqa: F405
        if u >= offset:
            t = buf[u - offset]
        sync_cube()  # every read of this step happens before any write
        buf[u] += t
        sync_cube()  # noqa: F405
    if i < out.len():
        out[i] = buf[u]
    if u == block - 1:
        totals[CUBE_POS] = buf[u]  # noqa: F405


@cube(launch=True)  # noqa: F405
def add_block_offsets(out: SliceMut[f32], scanned_totals: Slice[f32]):  # noqa: F405
    """out[i] += sum of all earlier blocks (the inclusive scan of the totals, shifted)."""
    i = ABSOLUTE_POS  # noqa: F405
    c = CUBE_POS  # noqa: F405
    if i < out.len() and c > 0:
        out[i] += scanned_totals[c - 1]


# -- 5. tiled matmul with shared-memory tiles --------------------------------------------------
@cube(launch=True)  # noqa: F405
def matmul(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], m: u32, k: u32, n: u32,  # noqa: F405
           tile: Comptime[int]):  # noqa: F405
    """c (m×n) = a (m×k) @ b (k×n), row-major; one tile×tile block of c per cube."""
    a_tile = SharedMemory[f32](tile * tile)  # noqa: F405
    b_tile = SharedMemory[f32](tile * tile)  # noqa: F405
    tx = UNIT_POS_X  # noqa: F405
    ty = UNIT_POS_Y  # noqa: F405
    row = ABSOLUTE_POS_Y  # noqa: F405
    col = ABSOLUTE_POS_X  # noqa: F405
    acc = f32(0.0)  # noqa: F405
    for t0 in range(0, k, tile):
        ak = t0 + tx
        bk = t0 + ty
        av = f32(0.0)  # noqa: F405
        if row < m and ak < k:
            av = a[row * k + ak]
        bv = f32(0.0)  # noqa: F405
        if bk < k and col < n:
            bv = b[bk * n + col]
        a_tile[ty * tile + tx] = av
        b_tile[ty * tile + tx] = bv
        sync_cube()  # noqa: F405
        for j in unroll(range(tile)):  # noqa: F405
            acc += a_tile[ty * tile + j] * b_tile[j * tile + tx]
        sync_cube()  # noqa: F405
    if row < m and col < n:
        c[row * n + col] = acc


# -- 6. transpose through tensor strides -------------------------------------------------------
@cube(launch=True)  # noqa: F405
def strided_copy_2d(src: Tensor[f32], dst: TensorMut[f32]):  # noqa: F405
    """dst[r, c] = src[r, c] for any strides: launched on a transposed *view* of a matrix (its
    strides swapped), it writes the transpose contiguously."""
    r = ABSOLUTE_POS_Y  # noqa: F405
    c = ABSOLUTE_POS_X  # noqa: F405
    if r < dst.shape(0) and c < dst.shape(1):
        dst[r * dst.stride(0) + c * dst.stride(1)] = src[r * src.stride(0) + c * src.stride(1)]


# -- 7. histogram with atomics (shared per cube, then global) ----------------------------------
@cube(launch=True)  # noqa: F405
def histogram(x: Slice[u32], hist: SliceMut[Atomic[u32]], bins: Comptime[int]):  # noqa: F405
    """hist[x[i] % bins] += 1: counted first in a per-cube shared histogram."""
    local = SharedMemory[Atomic[u32]](bins)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    for b in range(u, bins, CUBE_DIM):  # noqa: F405
        local[b].store(u32(0))  # noqa: F405
    sync_cube()  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        local[x[i] % bins].fetch_add(u32(1))  # noqa: F405
    sync_cube()  # noqa: F405
    for b in range(u, bins, CUBE_DIM):  # noqa: F405
        count = local[b].load()
        if count > 0:
            hist[b].fetch_add(count)


# -- 8. 1-D stencil with a halo in shared memory -----------------------------------------------
@cube(launch=True)  # noqa: F405
def stencil3(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):  # noqa: F405
    """out[i] = (x[i-1] + x[i] + x[i+1]) / 3, zero outside x; each cube loads its block plus
    one halo cell on each side."""
    tile = SharedMemory[f32](block + 2)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    n = x.len()
    v = f32(0.0)  # noqa: F405
    if i < n:
        v = x[i]
    tile[u + 1] = v
    if u == 0:
        left = f32(0.0)  # noqa: F405
        if i > 0 and i - 1 < n:
            left = x[i - 1]
        tile[0] = left
    if u == block - 1:
        right = f32(0.0)  # noqa: F405
        if i + 1 < n:
            right = x[i + 1]
        tile[block + 1] = right
    sync_cube()  # noqa: F405
    if i < n:
        out[i] = (tile[u] + tile[u + 1] + tile[u + 2]) / 3.0


# -- 9. softmax per row: one cube per row ------------------------------------------------------
@cube(launch=True)  # noqa: F405
def softmax_rows(x: Slice[f32], out: SliceMut[f32], cols: u32,  # noqa: F405
                 block: Comptime[int]):  # noqa: F405
    """out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), cube r for row r."""
    sh = SharedMemory[f32](block)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    base = CUBE_POS * cols  # noqa: F405
    row_max = f32(-3.0e38)  # noqa: F405
    for j in range(u, cols, CUBE_DIM):  # noqa: F405
        row_max = max(row_max, x[base + j])
    sh[u] = row_max
    sync_cube()  # noqa: F405
    for k in unroll(range(block.bit_length() - 1)):  # noqa: F405
        half = comptime(block >> (k + 1))  # noqa: F405
        if u < half:
            sh[u] = max(sh[u], sh[u + half])
        sync_cube()  # noqa: F405
    m = sh[0]
    sync_cube()  # everyone has read the max before sh is reused
    total = f32(0.0)  # noqa: F405
    for j in range(u, cols, CUBE_DIM):  # noqa: F405
        total += exp(x[base + j] - m)  # noqa: F405
    sh[u] = total
    sync_cube()  # noqa: F405
    tree_sum(sh, u, block)
    denom = sh[0]
    for j in range(u, cols, CUBE_DIM):  # noqa: F405
        out[base + j] = exp(x[base + j] - m) / denom  # noqa: F405


# -- 10. a loop with break and continue: Collatz step counts -----------------------------------
@cube(launch=True)  # noqa: F405
def collatz_steps(x: Slice[u32], out: SliceMut[u32], limit: u32):  # noqa: F405
    """out[i] = steps for x[i] to reach 1 (n even: n // 2, odd: 3n + 1), or `limit` if it takes
    longer."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        n = x[i]
        steps = u32(0)  # noqa: F405
        while n > 1:
            if steps == limit:
                break
            steps += 1
            if n % 2 == 0:
                n = n // 2
                continue
            n = 3 * n + 1
        out[i] = steps


# -- 11. early return ---------------------------------------------------------------------------
@cube(launch=True)  # noqa: F405
def safe_sqrt(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """out[i] = sqrt(x[i]) for x >= 0, -1 for negatives; units past the end return at once."""
    i = ABSOLUTE_POS  # noqa: F405
    if i >= x.len():
        return
    v = x[i]
    if v < 0.0:
        out[i] = -1.0
        return
    out[i] = sqrt(v)  # noqa: F405


# -- 12. a helper with a comptime degree, unrolled: Horner's rule ------------------------------
@cube  # noqa: F405
def horner(x: f32, coeffs: Comptime[tuple]):  # noqa: F405
    """c0 + c1·x + ... + cd·x^d, evaluated as (((cd·x + c_{d-1})·x + ...)·x + c0)."""
    acc = f32(coeffs[len(coeffs) - 1])  # noqa: F405
    for k in unroll(range(len(coeffs) - 2, -1, -1)):  # noqa: F405
        acc = acc * x + coeffs[k]
    return acc


@cube(launch=True)  # noqa: F405
def polyval(x: Slice[f32], out: SliceMut[f32], coeffs: Comptime[tuple]):  # noqa: F405
    """out[i] = p(x[i]) for the polynomial with the given (comptime) coefficients."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = horner(x[i], coeffs)


# -- 13. sync_cube makes a neighbour's shared write visible ------------------------------------
@cube(launch=True)  # noqa: F405
def neighbour_sum(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):  # noqa: F405
    """out[i] = x[i-1] + x[i] within each cube (the first unit of a cube adds 0): the value of
    the left neighbour is read from shared memory after the barrier."""
    buf = SharedMemory[f32](block)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    v = f32(0.0)  # noqa: F405
    if i < x.len():
        v = x[i]
    buf[u] = v
    sync_cube()  # noqa: F405
    left = f32(0.0)  # noqa: F405
    if u > 0:
        left = buf[u - 1]
    if i < x.len():
        out[i] = left + buf[u]


# -- 14. integer bit tricks: popcount and bit reverse ------------------------------------------
@cube(launch=True)  # noqa: F405
def bit_tricks(x: Slice[u32], pop: SliceMut[u32], rev: SliceMut[u32]):  # noqa: F405
    """pop[i] = number of set bits of x[i] (SWAR), rev[i] = x[i] with its 32 bits reversed."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        v = x[i]
        c = v - ((v >> 1) & 0x55555555)
        c = (c & 0x33333333) + ((c >> 2) & 0x33333333)
        c = (((c + (c >> 4)) & 0x0F0F0F0F) * 0x01010101) >> 24
        pop[i] = c
        r = u32(0)  # noqa: F405
        for b in unroll(range(32)):  # noqa: F405
            r = r | (((v >> b) & 1) << (31 - b))
        rev[i] = r
