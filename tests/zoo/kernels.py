"""The kernel zoo: the kernels a GPU course teaches, written in cubelab's kernel language.

Each kernel is small, commented like course material, and launched by `tests/zoo/test_zoo.py`
against a numpy reference on every runtime. `tests/zoo/__init__.py` lists one compiled instance
of each (`ZOO`) for the compile-time benchmark.
"""

from cubelab.prelude import *  # noqa: F403

F = Float.generic("F")


# -- 1. elementwise on vectors: gelu (the CubeCL example) -------------------------------------
@cube(launch=True)
def gelu(x: Slice[Vector[F, 4]], out: SliceMut[Vector[F, 4]]):
    """out = x · Φ(x), four floats per unit; erf is the documented polynomial."""
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        out[i] = v * 0.5 * (1.0 + erf(v / sqrt(2.0)))


# -- 2. block reduction in shared memory ------------------------------------------------------
@cube
def tree_sum(sh: SliceMut[f32], u: u32, block: Comptime[int]):
    """Sum `sh[0..block)` into `sh[0]` by halving; every unit of the cube must call it."""
    for k in unroll(range(block.bit_length() - 1)):
        half = comptime(block >> (k + 1))
        if u < half:
            sh[u] += sh[u + half]
        sync_cube()


@cube(launch=True)
def block_sum(x: Slice[f32], partial: SliceMut[f32], block: Comptime[int]):
    """partial[cube] = sum of the cube's slice of x (one block of `block` units)."""
    sh = SharedMemory[f32](block)
    u = UNIT_POS
    i = ABSOLUTE_POS
    v = f32(0.0)
    if i < x.len():
        v = x[i]
    sh[u] = v
    sync_cube()
    tree_sum(sh, u, block)
    if u == 0:
        partial[CUBE_POS] = sh[0]


# -- 3. two-pass full sum: pass 2 is one cube striding over the partials ------------------------
@cube(launch=True)
def sum_all(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):
    """out[0] = sum(x) with a single cube: each unit sums a strided range, then a tree."""
    sh = SharedMemory[f32](block)
    u = UNIT_POS
    acc = f32(0.0)
    for j in range(u, x.len(), CUBE_DIM):
        acc += x[j]
    sh[u] = acc
    sync_cube()
    tree_sum(sh, u, block)
    if u == 0:
        out[0] = sh[0]


# -- 4. Hillis–Steele inclusive scan (per block, then block offsets) --------------------------
@cube(launch=True)
def scan_block(x: Slice[f32], out: SliceMut[f32], totals: SliceMut[f32],
               block: Comptime[int]):
    """out = inclusive scan of each block of x; totals[cube] = the block's sum."""
    buf = SharedMemory[f32](block)
    u = UNIT_POS
    i = ABSOLUTE_POS
    v = f32(0.0)
    if i < x.len():
        v = x[i]
    buf[u] = v
    sync_cube()
    for k in unroll(range(block.bit_length() - 1)):
        offset = comptime(1 << k)
        t = f32(0.0)
        if u >= offset:
            t = buf[u - offset]
        sync_cube()  # every read of this step happens before any write
        buf[u] += t
        sync_cube()
    if i < out.len():
        out[i] = buf[u]
    if u == block - 1:
        totals[CUBE_POS] = buf[u]


@cube(launch=True)
def add_block_offsets(out: SliceMut[f32], scanned_totals: Slice[f32]):
    """out[i] += sum of all earlier blocks (the inclusive scan of the totals, shifted)."""
    i = ABSOLUTE_POS
    c = CUBE_POS
    if i < out.len() and c > 0:
        out[i] += scanned_totals[c - 1]


# -- 5. tiled matmul with shared-memory tiles --------------------------------------------------
@cube(launch=True)
def matmul(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], m: u32, k: u32, n: u32,
           tile: Comptime[int]):
    """c (m×n) = a (m×k) @ b (k×n), row-major; one tile×tile block of c per cube."""
    a_tile = SharedMemory[f32](tile * tile)
    b_tile = SharedMemory[f32](tile * tile)
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    row = ABSOLUTE_POS_Y
    col = ABSOLUTE_POS_X
    acc = f32(0.0)
    for t0 in range(0, k, tile):
        ak = t0 + tx
        bk = t0 + ty
        av = f32(0.0)
        if row < m and ak < k:
            av = a[row * k + ak]
        bv = f32(0.0)
        if bk < k and col < n:
            bv = b[bk * n + col]
        a_tile[ty * tile + tx] = av
        b_tile[ty * tile + tx] = bv
        sync_cube()
        for j in unroll(range(tile)):
            acc += a_tile[ty * tile + j] * b_tile[j * tile + tx]
        sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


# -- 6. transpose through tensor strides -------------------------------------------------------
@cube(launch=True)
def strided_copy_2d(src: Tensor[f32], dst: TensorMut[f32]):
    """dst[r, c] = src[r, c] for any strides: launched on a transposed *view* of a matrix (its
    strides swapped), it writes the transpose contiguously."""
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < dst.shape(0) and c < dst.shape(1):
        dst[r * dst.stride(0) + c * dst.stride(1)] = src[r * src.stride(0) + c * src.stride(1)]


# -- 7. histogram with atomics (shared per cube, then global) ----------------------------------
@cube(launch=True)
def histogram(x: Slice[u32], hist: SliceMut[Atomic[u32]], bins: Comptime[int]):
    """hist[x[i] % bins] += 1: counted first in a per-cube shared histogram."""
    local = SharedMemory[Atomic[u32]](bins)
    u = UNIT_POS
    for b in range(u, bins, CUBE_DIM):
        local[b].store(u32(0))
    sync_cube()
    i = ABSOLUTE_POS
    if i < x.len():
        local[x[i] % bins].fetch_add(u32(1))
    sync_cube()
    for b in range(u, bins, CUBE_DIM):
        count = local[b].load()
        if count > 0:
            hist[b].fetch_add(count)


# -- 8. 1-D stencil with a halo in shared memory -----------------------------------------------
@cube(launch=True)
def stencil3(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):
    """out[i] = (x[i-1] + x[i] + x[i+1]) / 3, zero outside x; each cube loads its block plus
    one halo cell on each side."""
    tile = SharedMemory[f32](block + 2)
    u = UNIT_POS
    i = ABSOLUTE_POS
    n = x.len()
    v = f32(0.0)
    if i < n:
        v = x[i]
    tile[u + 1] = v
    if u == 0:
        left = f32(0.0)
        if i > 0 and i - 1 < n:
            left = x[i - 1]
        tile[0] = left
    if u == block - 1:
        right = f32(0.0)
        if i + 1 < n:
            right = x[i + 1]
        tile[block + 1] = right
    sync_cube()
    if i < n:
        out[i] = (tile[u] + tile[u + 1] + tile[u + 2]) / 3.0


# -- 9. softmax per row: one cube per row ------------------------------------------------------
@cube(launch=True)
def softmax_rows(x: Slice[f32], out: SliceMut[f32], cols: u32,
                 block: Comptime[int]):
    """out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), cube r for row r."""
    sh = SharedMemory[f32](block)
    u = UNIT_POS
    base = CUBE_POS * cols
    row_max = f32(-3.0e38)
    for j in range(u, cols, CUBE_DIM):
        row_max = max(row_max, x[base + j])
    sh[u] = row_max
    sync_cube()
    for k in unroll(range(block.bit_length() - 1)):
        half = comptime(block >> (k + 1))
        if u < half:
            sh[u] = max(sh[u], sh[u + half])
        sync_cube()
    m = sh[0]
    sync_cube()  # everyone has read the max before sh is reused
    total = f32(0.0)
    for j in range(u, cols, CUBE_DIM):
        total += exp(x[base + j] - m)
    sh[u] = total
    sync_cube()
    tree_sum(sh, u, block)
    denom = sh[0]
    for j in range(u, cols, CUBE_DIM):
        out[base + j] = exp(x[base + j] - m) / denom


# -- 10. a loop with break and continue: Collatz step counts -----------------------------------
@cube(launch=True)
def collatz_steps(x: Slice[u32], out: SliceMut[u32], limit: u32):
    """out[i] = steps for x[i] to reach 1 (n even: n // 2, odd: 3n + 1), or `limit` if it takes
    longer."""
    i = ABSOLUTE_POS
    if i < x.len():
        n = x[i]
        steps = u32(0)
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
@cube(launch=True)
def safe_sqrt(x: Slice[f32], out: SliceMut[f32]):
    """out[i] = sqrt(x[i]) for x >= 0, -1 for negatives; units past the end return at once."""
    i = ABSOLUTE_POS
    if i >= x.len():
        return
    v = x[i]
    if v < 0.0:
        out[i] = -1.0
        return
    out[i] = sqrt(v)


# -- 12. a helper with a comptime degree, unrolled: Horner's rule ------------------------------
@cube
def horner(x: f32, coeffs: Comptime[tuple]):
    """c0 + c1·x + ... + cd·x^d, evaluated as (((cd·x + c_{d-1})·x + ...)·x + c0)."""
    acc = f32(coeffs[len(coeffs) - 1])
    for k in unroll(range(len(coeffs) - 2, -1, -1)):
        acc = acc * x + coeffs[k]
    return acc


@cube(launch=True)
def polyval(x: Slice[f32], out: SliceMut[f32], coeffs: Comptime[tuple]):
    """out[i] = p(x[i]) for the polynomial with the given (comptime) coefficients."""
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = horner(x[i], coeffs)


# -- 13. sync_cube makes a neighbour's shared write visible ------------------------------------
@cube(launch=True)
def neighbour_sum(x: Slice[f32], out: SliceMut[f32], block: Comptime[int]):
    """out[i] = x[i-1] + x[i] within each cube (the first unit of a cube adds 0): the value of
    the left neighbour is read from shared memory after the barrier."""
    buf = SharedMemory[f32](block)
    u = UNIT_POS
    i = ABSOLUTE_POS
    v = f32(0.0)
    if i < x.len():
        v = x[i]
    buf[u] = v
    sync_cube()
    left = f32(0.0)
    if u > 0:
        left = buf[u - 1]
    if i < x.len():
        out[i] = left + buf[u]


# -- 14. integer bit tricks: popcount and bit reverse ------------------------------------------
@cube(launch=True)
def bit_tricks(x: Slice[u32], pop: SliceMut[u32], rev: SliceMut[u32]):
    """pop[i] = number of set bits of x[i] (SWAR), rev[i] = x[i] with its 32 bits reversed."""
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        c = v - ((v >> 1) & 0x55555555)
        c = (c & 0x33333333) + ((c >> 2) & 0x33333333)
        c = (((c + (c >> 4)) & 0x0F0F0F0F) * 0x01010101) >> 24
        pop[i] = c
        r = u32(0)
        for b in unroll(range(32)):
            r = r | (((v >> b) & 1) << (31 - b))
        rev[i] = r


# -- 15. 2-D convolution with t[i, j] ----------------------------------------------------------
@cube(launch=True)
def conv2d_3x3(img: Tensor[f32], w: Tensor[f32], out: TensorMut[f32]):
    """out[r, c] = sum over the 3x3 window of img[r + dr, c + dc] * w[dr, dc] ("valid": out is
    (rows - 2) x (cols - 2)); the weights go through a 3x3 shared tile, indexed [dr, dc]."""
    taps = SharedMemory[f32]((3, 3))
    if UNIT_POS < 9:
        taps[UNIT_POS // 3, UNIT_POS % 3] = w[UNIT_POS // 3, UNIT_POS % 3]
    sync_cube()
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < out.shape(0) and c < out.shape(1):
        acc = f32(0.0)
        for dr in unroll(range(3)):
            for dc in unroll(range(3)):
                acc += img[r + dr, c + dc] * taps[dr, dc]
        out[r, c] = acc


# -- 16. bit manipulation with the library: Morton (Z-order) codes -----------------------------
@cube(launch=True)
def morton_bits(x: Slice[u32], y: Slice[u32], code: SliceMut[u32], info: SliceMut[u32]):
    """code[i] = the bits of x[i] and y[i] (16 each) interleaved; info[3i..] = count_ones,
    leading_zeros and find_first_set of the code."""
    i = ABSOLUTE_POS
    if i < x.len():
        m = u32(0)
        for b in unroll(range(16)):
            m = m | (((x[i] >> b) & 1) << (2 * b)) | (((y[i] >> b) & 1) << (2 * b + 1))
        code[i] = m
        info[3 * i] = m.count_ones()
        info[3 * i + 1] = leading_zeros(m)
        info[3 * i + 2] = find_first_set(m)


# -- 17. warp-level scan: one plane_inclusive_sum per plane ------------------------------------
@cube(launch=True)
def plane_scan(x: Slice[f32], out: SliceMut[f32], plane_dim: SliceMut[u32]):
    """out[i] = the inclusive prefix sum of x over i's plane (PLANE_DIM consecutive units)."""
    i = ABSOLUTE_POS
    if i == 0:
        plane_dim[0] = PLANE_DIM
    if i < x.len():
        out[i] = plane_inclusive_sum(x[i])


# -- 18. a tiny interpreter: a runtime switch over opcodes, registers in a list ----------------
@cube(launch=True)
def tiny_vm(x: Slice[f32], code: Slice[u32], args: Slice[f32], out: SliceMut[f32]):
    """Each unit loads four items into registers and runs one program over them: opcode
    code[p] with operand args[p] — 0 add, 1 mul, 2 or 3 negate, 4 max, anything else a no-op.
    `match` on the runtime opcode is one `switch`; the registers are a list (CubeCL's
    Sequence) indexed by the unrolled k."""
    base = ABSOLUTE_POS * u32(4)
    if base + u32(3) < x.len():
        regs = []
        for k in unroll(range(4)):
            regs.append(x[base + k])
        for p in range(code.len()):
            a = args[p]
            match code[p]:
                case 0:
                    for k in unroll(range(4)):
                        regs[k] += a
                case 1:
                    for k in unroll(range(4)):
                        regs[k] *= a
                case 2 | 3:
                    for k in unroll(range(4)):
                        regs[k] = -regs[k]
                case 4:
                    for k in unroll(range(4)):
                        regs[k] = max(regs[k], a)
                case _:
                    pass
        for k in unroll(range(4)):
            out[base + k] = regs[k]


@cube_type(runtime_variants=True)
class Shape:
    """A shape whose kind is chosen per unit at run time: a u32 tag plus each variant's fields
    (docs/language.md, Structs and enums)."""

    class Circle:
        r: f32

    class Rect:
        w: f32
        h: f32


@cube
def shape_area_of(s: Shape) -> f32:
    match s:
        case Shape.Circle(r):
            return f32(3.14159265) * r * r
        case Shape.Rect(w, h):
            return w * h


@cube(launch=True)
def shape_area(kind: Slice[u32], a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    """out[i] = the area of circle a[i] (kind 0) or of rectangle a[i] × b[i] (otherwise): the
    shape is built in a runtime branch and matched with a `switch` on its tag."""
    i = ABSOLUTE_POS
    if i < out.len():
        if kind[i] == u32(0):
            s = Shape.Circle(a[i])
        else:
            s = Shape.Rect(a[i], b[i])
        out[i] = shape_area_of(s)


# -- 19. big unrolled kernels: what compile time must stay linear in ----------------------------
@cube(launch=True)
def bitonic_sort(x: Slice[f32], out: SliceMut[f32], n: Comptime[int]):
    """Sort each cube's `n` floats (n a power of two, one unit per item) in shared memory with a
    bitonic network: log2(n)·(log2(n) + 1)/2 compare-exchange stages (36 for n = 256), every
    stage unrolled at expansion, a barrier after each."""
    sh = SharedMemory[f32](n)
    u = UNIT_POS
    base = CUBE_POS * n
    sh[u] = x[base + u]
    sync_cube()
    for kk in unroll(range(1, n.bit_length())):
        size = comptime(1 << kk)                 # the length of the sequences being merged
        for jj in unroll(range(kk)):
            stride = comptime(size >> (jj + 1))  # the partner's distance in this stage
            partner = u ^ u32(stride)
            if partner > u:
                a = sh[u]
                b = sh[partner]
                ascending = (u & u32(size)) == 0
                if (a > b) == ascending:
                    sh[u] = b
                    sh[partner] = a
            sync_cube()
    out[base + u] = sh[u]


@cube(launch=True)
def scan_unrolled(x: Slice[f32], out: SliceMut[f32], steps: Comptime[int]):
    """Each unit scans its `steps` consecutive floats serially, every step unrolled (the
    64-step case is the compile-time benchmark's)."""
    base = ABSOLUTE_POS * steps
    if base + steps <= x.len():
        acc = f32(0.0)
        for i in unroll(range(steps)):
            acc += x[base + i]
            out[base + i] = acc
