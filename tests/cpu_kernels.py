"""Kernels for the CPU runtime's tests (divergence, barriers, shared memory, atomics, printing)."""

from cubelab.prelude import *

F = Float.generic("F")


@cube(launch=True)
def shout(x: Slice[f32], out: SliceMut[f32]):
    """Units 1 and 2 print their value; everyone copies."""
    if ABSOLUTE_POS >= 1 and ABSOLUTE_POS < 3:
        debug_print("x[{}] = {}", ABSOLUTE_POS, x[ABSOLUTE_POS])
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@cube(launch=True)
def barrier_in_a_branch(out: SliceMut[u32]):
    """A sync_cube() that only the first half of each cube reaches: undefined on a GPU."""
    if UNIT_POS < 2:
        sync_cube()
    out[ABSOLUTE_POS] = UNIT_POS


@cube(launch=True)
def off_by_one(x: Slice[f32], out: SliceMut[f32]):
    """Reads x[ABSOLUTE_POS - 1]: unit 0 asks for item 4294967295 (u32 wrap), never x[-1]."""
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS - 1]


@cube(launch_unchecked=True)
def write_past_the_end(out: SliceMut[f32]):
    out[ABSOLUTE_POS] = f32(1.0)


@cube(launch=True)
def i32_ops(a: Slice[i32], b: Slice[i32], q: SliceMut[i32], r: SliceMut[i32],
            w: SliceMut[i32], s: SliceMut[i32]):
    """Division truncates toward zero, x // 0 == x, x % 0 == 0; arithmetic wraps."""
    i = ABSOLUTE_POS
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    w[i] = a[i] * b[i] + a[i]
    s[i] = (a[i] << u32(b[i])) ^ (a[i] >> u32(b[i]))


@cube(launch=True)
def u32_ops(a: Slice[u32], b: Slice[u32], q: SliceMut[u32], r: SliceMut[u32],
            w: SliceMut[u32], s: SliceMut[u32]):
    i = ABSOLUTE_POS
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    w[i] = a[i] * b[i] + a[i]
    s[i] = (a[i] << b[i]) ^ (a[i] >> b[i])


@cube(launch=True)
def f32_ops(a: Slice[f32], b: Slice[f32], rem: SliceMut[f32], math: SliceMut[f32],
            to_int: SliceMut[i32]):
    i = ABSOLUTE_POS
    rem[i] = a[i] % b[i]
    math[i] = sqrt(abs(a[i])) * exp(b[i] * f32(0.125)) + f32(0.1) * a[i]
    to_int[i] = i32(a[i] / b[i])


@cube(launch=True)
def collatz(n: Slice[u32], steps: SliceMut[u32]):
    """A per-unit while loop with a data-dependent trip count and a break."""
    x = n[ABSOLUTE_POS]
    k = u32(0)
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        k += 1
        if k >= 100:
            break
    steps[ABSOLUTE_POS] = k


@cube(launch=True)
def early_return(x: Slice[f32], out: SliceMut[f32]):
    if x[ABSOLUTE_POS] < 0.0:
        out[ABSOLUTE_POS] = f32(-1.0)
        return
    out[ABSOLUTE_POS] = sqrt(x[ABSOLUTE_POS])


@cube(launch=True)
def skip_multiples_of_three(out: SliceMut[u32]):
    """A loop whose bound differs per unit, with a per-unit continue."""
    acc = u32(0)
    for i in range(ABSOLUTE_POS + 1):
        if i % 3 == 0:
            continue
        acc += i
    out[ABSOLUTE_POS] = acc


@cube(launch=True)
def block_sum(x: Slice[f32], out: SliceMut[f32]):
    """Tree reduction of each cube's 256 values in shared memory."""
    sm = SharedMemory[f32](256)
    sm[UNIT_POS] = x[ABSOLUTE_POS]
    sync_cube()
    s = u32(128)
    while s > 0:
        if UNIT_POS < s:
            sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]
        sync_cube()
        s = s // 2
    if UNIT_POS == 0:
        out[CUBE_POS] = sm[0]


@cube(launch=True)
def histogram(x: Slice[u32], hist: SliceMut[Atomic[u32]], old: SliceMut[u32],
              top: SliceMut[Atomic[u32]]):
    b = x[ABSOLUTE_POS] % 16
    old[ABSOLUTE_POS] = hist[b].fetch_add(u32(1))
    top[0].fetch_max(x[ABSOLUTE_POS])


@cube(launch=True)
def barrier_in_a_uniform_branch(out: SliceMut[u32]):
    """Every unit of cube 0 reaches the barrier, no unit of cube 1 does: uniform per cube."""
    if CUBE_POS < 1:
        sync_cube()
    out[ABSOLUTE_POS] = UNIT_POS


@cube(launch=True)
def plane_ops(x: Slice[u32], out: SliceMut[u32]):
    """Six plane (subgroup) results per unit; the last only over the units with an even value."""
    i = ABSOLUTE_POS
    v = x[i]
    base = i * 6
    out[base] = plane_sum(v)
    out[base + 1] = plane_max(v)
    out[base + 2] = u32(plane_any(v > 900))
    out[base + 3] = plane_broadcast(v, u32(0))
    out[base + 4] = PLANE_DIM
    if v % 2 == 0:
        out[base + 5] = plane_sum(v)


@cube(launch=True)
def spin(out: SliceMut[u32]):
    """Never ends: x stays odd, so it is never 0 (a GPU would hang)."""
    x = u32(1)
    while x != 0:
        x += 2
    out[ABSOLUTE_POS] = x


@cube(launch=True)
def read_then_clear(y: SliceMut[f32], out: SliceMut[f32]):
    """The value read must survive the write that follows it (no view of y may leak)."""
    v = y[ABSOLUTE_POS]
    y[ABSOLUTE_POS] = f32(0.0)
    out[ABSOLUTE_POS] = v + f32(1.0)


@cube(launch=True)
def math_zoo(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    """Every math function of the language, 12 results per unit."""
    i = ABSOLUTE_POS
    x = a[i]
    y = b[i]
    o = i * 12
    out[o] = sin(x)
    out[o + 1] = cos(x)
    out[o + 2] = tan(x)
    out[o + 3] = tanh(x)
    out[o + 4] = floor(x)
    out[o + 5] = ceil(x)
    out[o + 6] = round(x)
    out[o + 7] = log(abs(x) + f32(1.0))
    out[o + 8] = erf(x)
    out[o + 9] = pow(abs(x), y)
    out[o + 10] = clamp(x, f32(-1.0), f32(1.0))
    out[o + 11] = select(x > y, fma(x, y, f32(1.0)), max(x, y))


@cube(launch=True)
def odd_histogram(x: Slice[u32], hist: SliceMut[Atomic[u32]], old: SliceMut[u32]):
    """Atomics under divergence: only units holding an odd value count it."""
    v = x[ABSOLUTE_POS]
    if v % 2 == 1:
        old[ABSOLUTE_POS] = hist[v % 16].fetch_add(u32(1))


@cube(launch_unchecked=True)
def odd_units_copy(x: Slice[f32], out: SliceMut[f32]):
    """Odd units copy x (unchecked: units past x's end read out of bounds inside the branch)."""
    if ABSOLUTE_POS % 2 == 1:
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 1.0
