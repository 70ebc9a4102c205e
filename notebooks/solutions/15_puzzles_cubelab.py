# Solutions to notebooks/15_puzzles_cubelab.ipynb — one section per puzzle, the full answer cell.
# The tests run each section on its own (after the notebooks' imports, with `client` bound) and
# require every check to pass on both runtimes. Students: try first; the checks say what your
# run did, and the hints come one tier at a time.

# %% exercise: puzzles_cubelab.cache_twice
from cubelab.exercises.puzzle_programs import *

@cube(launch=True)
def affine(x: Slice[f32], out: SliceMut[f32], a: f32, relu: Comptime[bool]):
    # `a` is data (one pipeline for every value); `relu` removes code, so it stays compiled in
    if ABSOLUTE_POS < out.len():
        v = x[ABSOLUTE_POS] * a
        if relu:
            v = max(v, f32(0.0))
        out[ABSOLUTE_POS] = v

answer = affine

# %% exercise: puzzles_cubelab.cache_one_pipeline
def geometry(n):
    # the cube dim is in the KernelId, the cube count is not: fix the first, grow the second
    units = 64
    return CubeCount.Static((n + units - 1) // units), CubeDim.new_1d(units)

answer = geometry

# %% exercise: puzzles_cubelab.cache_warm_up
from cubelab.exercises.puzzle_programs import *

def warm_up(client, x, out, out2):
    # one launch per KernelId the work uses; a dry run compiles them and dispatches nothing
    with dry_run():
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        inc.launch(client, ONE, EIGHT, arg(out))
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)

answer = warm_up

# %% exercise: puzzles_cubelab.autotune_key
def key(x, out, n):
    # CubeCL's anchor: sizes up to the same power of two share one search
    return 1 << (n - 1).bit_length()

answer = key

# %% exercise: puzzles_cubelab.comptime_branch
@cube(launch=True)
def activate(x: Slice[f32], out: SliceMut[f32], kind: Comptime[int]):
    # Python picks the side while the kernel is expanded: only it reaches the IR
    v = x[ABSOLUTE_POS]
    if kind == 0:
        out[ABSOLUTE_POS] = max(v, f32(0.0))
    elif kind == 1:
        out[ABSOLUTE_POS] = abs(v)
    else:
        out[ABSOLUTE_POS] = v * v

answer = activate

# %% exercise: puzzles_cubelab.unroll_poly
@cube(launch=True)
def poly(x: Slice[f32], c: Slice[f32], out: SliceMut[f32], degree: Comptime[int]):
    v = x[ABSOLUTE_POS]
    acc = f32(0.0)
    for k in unroll(range(degree)):   # expanded once per k: straight-line code, c[0], c[1], ...
        acc = acc * v + c[k]
    out[ABSOLUTE_POS] = acc

answer = poly

# %% exercise: puzzles_cubelab.expand_panic
v = cubelab.exercises.get("puzzles_cubelab.expand_panic").variant
# the panicking launch fails `a` (on the device thread: `launch` and `sync` stay quiet); a
# launch reading a failed buffer is skipped and fails its output too
failed = {"a"}
for out, src in zip("bc", v.wiring):
    if src in failed:
        failed.add(out)
answer = {f"read_{name}" for name in failed}

# %% exercise: puzzles_cubelab.generic_kernel
T = Numeric.generic("T")

@cube(launch=True)
def triple(x: Slice[T], out: SliceMut[T]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * T.new(3)

answer = triple

# %% exercise: puzzles_cubelab.fewest_relaunches
from cubelab.exercises.puzzle_programs import *

def repair(client, x, a, b, c, d, e):
    # failed: a (the root), b (read a), d (read b); c and e are clean — leave them alone
    double.launch(client, ONE, EIGHT, arg(x), arg(a))
    scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
    add2.launch(client, ONE, EIGHT, arg(b), arg(c), arg(d))

answer = repair

# %% exercise: puzzles_cubelab.which_reads_raise
v = cubelab.exercises.get("puzzles_cubelab.which_reads_raise").variant
# repair: the relaunch repairs a, but b was skipped before it; inc reads a, so it is skipped and
# a stays failed (and b with it); a dry run writes nothing, so it repairs nothing
answer = {"repair": {"read_b"}, "inc": {"read_a", "read_b"}, "dry": {"read_a"}}[v.program]

# %% exercise: puzzles_cubelab.precompile_clean
from cubelab.exercises.puzzle_programs import *

def precompile(client, x, out, out2):
    scratch = client.empty(32)   # a failing candidate's outputs: nobody reads them
    with dry_run():
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)
        too_big.launch(client, ONE, EIGHT, arg(x), arg(scratch))

answer = precompile

# %% exercise: puzzles_cubelab.replay_compiles
v = cubelab.exercises.get("puzzles_cubelab.replay_compiles").variant
# one compile per distinct KernelId (scale in cubes of 4 is a KernelId of its own); the window
# hits the cache for what the warm-up compiled; replays compile nothing
answer = len(set(v.warm) | set(v.window))

# %% exercise: puzzles_cubelab.stream_split
def stream_of(launch):
    # the a-chain shares `a`, the b-chain shares `b`: one stream per chain
    return 1 if launch.startswith("a") else 2

answer = stream_of

# %% exercise: puzzles_cubelab.capture_fresh_inputs
from cubelab.exercises.puzzle_programs import *

def record(client, x, y):
    t = client.empty(8 * 4)   # no host data: fine before (or inside) the window
    client.start_capture()
    scale.launch(client, ONE, EIGHT, arg(x), arg(t), 2.0)
    inc.launch(client, ONE, EIGHT, arg(t))
    scale.launch(client, ONE, EIGHT, arg(t), arg(y), 3.0)
    return client.stop_capture()

answer = record

# %% exercise: puzzles_cubelab.plane_total
@cube(launch=True)
def cube_total(a: Slice[f32], out: SliceMut[f32]):
    partial = SharedMemory[f32](64)   # room for one total per plane
    u = UNIT_POS
    s = plane_sum(a[ABSOLUTE_POS])
    if UNIT_POS_PLANE == 0:
        partial[u // PLANE_DIM] = s
    sync_cube()
    if u == 0:
        total = f32(0.0)
        for p in range((CUBE_DIM + PLANE_DIM - 1) // PLANE_DIM):
            total += partial[p]
        out[0] = total

answer = cube_total

# %% exercise: puzzles_cubelab.plane_scan
@cube(launch=True)
def cube_scan(a: Slice[f32], out: SliceMut[f32]):
    totals = SharedMemory[f32](32)   # room for one total per plane
    u = UNIT_POS
    s = plane_inclusive_sum(a[ABSOLUTE_POS])
    if UNIT_POS_PLANE == PLANE_DIM - 1 or u == CUBE_DIM - 1:
        totals[u // PLANE_DIM] = s      # the last lane of a plane holds its total
    sync_cube()
    for p in range(u // PLANE_DIM):
        s += totals[p]
    out[ABSOLUTE_POS] = s

answer = cube_scan

# %% exercise: puzzles_cubelab.ballot_count
@cube(launch=True)
def vote_count(a: Slice[f32], out: SliceMut[f32]):
    counts = SharedMemory[u32](32)   # room for one count per plane
    u = UNIT_POS
    b = plane_ballot(a[ABSOLUTE_POS] > f32(0.0))
    if UNIT_POS_PLANE == 0:
        counts[u // PLANE_DIM] = count_ones(b[0]) + count_ones(b[1]) + count_ones(b[2]) \
            + count_ones(b[3])
    sync_cube()
    if u == 0:
        total = u32(0)
        for p in range((CUBE_DIM + PLANE_DIM - 1) // PLANE_DIM):
            total += counts[p]
        out[CUBE_POS] = f32(total)

answer = vote_count

# %% exercise: puzzles_cubelab.shuffle_butterfly
@cube(launch=True)
def plane_sums(a: Slice[f32], out: SliceMut[f32]):
    v = a[ABSOLUTE_POS]
    mask = PLANE_DIM // 2
    while mask > 0:
        v += plane_shuffle_xor(v, mask)   # add the lane whose index differs in this bit
        mask = mask // 2
    out[ABSOLUTE_POS] = v

answer = plane_sums

# %% exercise: puzzles_cubelab.plane_divergence
v = cubelab.exercises.get("puzzles_cubelab.plane_divergence").variant

@cube(launch=True)
def plane_width(out: SliceMut[u32]):
    out[0] = PLANE_DIM

width_buffer = client.create_from_slice(bytes(4))
plane_width.launch(client, CubeCount.Static(1), CubeDim.new_1d(1),
                   BufferArg.from_raw_parts(width_buffer, 1))
P = int(u32.from_bytes(client.read_one(width_buffer))[0])
first = v.unit // P * P                        # the unit's plane: units first ... first + P - 1
active = [u for u in range(first, first + P) if u % v.k == 0]
answer = float(sum(active)) if v.unit % v.k == 0 else -1.0   # x[u] == u

# %% exercise: puzzles_cubelab.coalesce_walk
@cube(launch=True)
def total(x: Slice[f32], out: SliceMut[f32]):
    sums = SharedMemory[f32](32)
    u = UNIT_POS
    acc = f32(0.0)
    for j in range(8):
        acc += x[j * 32 + u]         # a plane reads 32 consecutive items per step
    sums[u] = acc
    sync_cube()
    if u == 0:
        t = f32(0.0)
        for k in range(32):
            t += sums[k]
        out[0] = t

answer = total

# %% exercise: puzzles_cubelab.transpose_tile
@cube(launch=True)
def transpose(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](16 * 16)
    col = UNIT_POS_X
    row = UNIT_POS_Y
    tile[row * 16 + col] = a[row * 16 + col]     # read row by row
    sync_cube()
    out[row * 16 + col] = tile[col * 16 + row]   # write row by row, from the tile's column

answer = transpose

# %% exercise: puzzles_cubelab.padded_tile
@cube(launch=True)
def transpose32(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](32 * 33)      # a pitch of 33: a column steps one bank per row
    x = UNIT_POS_X
    for j in range(4):
        y = UNIT_POS_Y + j * 8
        tile[y * 33 + x] = a[y * 32 + x]
    sync_cube()
    for j in range(4):
        y = UNIT_POS_Y + j * 8
        out[y * 32 + x] = tile[x * 33 + y]

answer = transpose32

# %% exercise: puzzles_cubelab.tree_addressing
@cube(launch=True)
def tree_sum(x: Slice[f32], out: SliceMut[f32]):
    sm = SharedMemory[f32](64)
    u = UNIT_POS
    sm[u] = x[u]
    sync_cube()
    h = CUBE_DIM // 2
    while h > 0:
        if u < h:
            sm[u] += sm[u + h]     # consecutive units, consecutive words
        sync_cube()
        h = h // 2
    if u == 0:
        out[0] = sm[0]

answer = tree_sum

# %% exercise: puzzles_cubelab.stage_pairs
@cube(launch=True)
def norms(p: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](64)
    i = ABSOLUTE_POS
    u = UNIT_POS
    base = CUBE_POS * 64
    tile[u] = p[base + u]              # two reads of 32 consecutive numbers
    tile[u + 32] = p[base + 32 + u]
    sync_cube()
    px = tile[2 * u]
    py = tile[2 * u + 1]
    out[i] = px * px + py * py

answer = norms
