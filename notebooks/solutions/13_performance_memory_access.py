# Solutions for notebooks/13_performance_memory_access.ipynb — one section per exercise.
# Value answers are computed from the student's own variant, showing the reasoning.

# %% exercise: ch13.sectors_of_a_stride
v = cubelab.exercises.get("ch13.sectors_of_a_stride").variant
addresses = [4 * i * v.stride for i in range(32)]          # byte address of each unit's f32
answer = len({a // 32 for a in addresses})                 # distinct 32-byte sectors

# %% exercise: ch13.coalesce_it
@cube(launch=True)
def scale_rows(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    r = ABSOLUTE_POS_Y          # the slow unit axis picks the row ...
    c = ABSOLUTE_POS_X          # ... and the fast one the column: neighbours are neighbours
    if r < rows and c < cols:
        out[r * cols + c] = x[r * cols + c] * f32(2.0)

answer = scale_rows

# %% exercise: ch13.ways_of_a_stride
v = cubelab.exercises.get("ch13.ways_of_a_stride").variant
banks = {}
for unit in range(32):
    word = (unit * v.stride) % 1024
    banks.setdefault(word % 32, set()).add(word)
answer = max(len(words) for words in banks.values())     # the busiest bank's distinct words

# %% exercise: ch13.no_bank_conflict
@cube(launch=True)
def transpose(x: Slice[f32], out: SliceMut[f32], n: u32):
    tile = SharedMemory[f32](32 * 33)          # one spare word per row: a row stride of 33
    bx = CUBE_POS_X * 32
    by = CUBE_POS_Y * 32
    for j in unroll(range(4)):
        row = UNIT_POS_Y + j * 8
        tile[row * 33 + UNIT_POS_X] = x[(by + row) * n + bx + UNIT_POS_X]
    sync_cube()
    for j in unroll(range(4)):
        row = UNIT_POS_Y + j * 8
        out[(bx + row) * n + by + UNIT_POS_X] = tile[UNIT_POS_X * 33 + row]   # banks x + row

answer = transpose

# %% exercise: ch13.tiled_bytes
v = cubelab.exercises.get("ch13.tiled_bytes").variant
units = v.n * v.n
loads = 2 * (v.n // v.t)                       # one item of a and one of b per tile step
answer = units * (loads + 1) * 4               # and one store of c, 4 bytes each

# %% exercise: ch13.tile_the_matmul
@cube(launch=True)
def matmul8(a: Slice[f32], b: Slice[f32], c: SliceMut[f32], n: u32):
    ta = SharedMemory[f32](64)
    tb = SharedMemory[f32](64)
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    row = CUBE_POS_Y * 8 + ty
    col = CUBE_POS_X * 8 + tx
    acc = f32(0.0)
    for s in range(n // 8):
        ta[ty * 8 + tx] = a[row * n + s * 8 + tx]
        tb[ty * 8 + tx] = b[(s * 8 + ty) * n + col]
        sync_cube()                            # the tiles are full
        for k in unroll(range(8)):
            acc += ta[ty * 8 + k] * tb[k * 8 + tx]
        sync_cube()                            # everyone is done reading them
    c[row * n + col] = acc

answer = matmul8

# %% exercise: ch13.autotune_compiles
v = cubelab.exercises.get("ch13.autotune_compiles").variant
keys = list(dict.fromkeys(v.sizes))            # the distinct keys, in order: one search each
answer = 3 + (len(keys) - 1)                   # all three the first time, then only the
                                               # Comptime candidate's new KernelId

# %% exercise: ch13.autotune_winner
from cubelab.runtime.autotune import score

v = cubelab.exercises.get("ch13.autotune_winner").variant
names = ["cube_64", "cube_128", "cube_256", "cube_512"]     # the table's rows, in order
scores = {name: score(list(samples)) for name, samples in zip(names, v.table)}
answer = min(scores, key=scores.get)
