# Solutions to notebooks/09_puzzles.ipynb — one section per puzzle, the full answer cell.
# The tests run the notebook with each answer cell replaced by its section and require every
# check to pass on both runtimes. Students: try first, the checks tell you what is wrong.

# %% exercise: puzzles.map
@cube(launch=True)
def add_ten(a: Slice[f32], out: SliceMut[f32]):
    i = UNIT_POS
    out[i] = a[i] + f32(10.0)

answer = add_ten

# %% exercise: puzzles.zip
@cube(launch=True)
def pair_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    i = UNIT_POS
    out[i] = a[i] + b[i]

answer = pair_sum

# %% exercise: puzzles.guard
@cube(launch=True)
def add_ten_guarded(a: Slice[f32], out: SliceMut[f32]):
    i = UNIT_POS
    if i < a.len():
        out[i] = a[i] + f32(10.0)

answer = add_ten_guarded

# %% exercise: puzzles.map_2d
@cube(launch=True)
def add_ten_2d(a: Slice[f32], out: SliceMut[f32], size: u32):
    col = UNIT_POS_X
    row = UNIT_POS_Y
    if row < size and col < size:
        out[row * size + col] = a[row * size + col] + f32(10.0)

answer = add_ten_2d

# %% exercise: puzzles.broadcast
@cube(launch=True)
def outer_sum(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], size: u32):
    col = UNIT_POS_X
    row = UNIT_POS_Y
    if row < size and col < size:
        out[row * size + col] = a[row] + b[col]

answer = outer_sum

# %% exercise: puzzles.blocks
@cube(launch=True)
def add_ten_blocks(a: Slice[f32], out: SliceMut[f32]):
    i = CUBE_POS * CUBE_DIM + UNIT_POS
    if i < a.len():
        out[i] = a[i] + f32(10.0)

answer = add_ten_blocks

# %% exercise: puzzles.blocks_2d
@cube(launch=True)
def add_ten_blocks_2d(a: Slice[f32], out: SliceMut[f32], size: u32):
    col = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X
    row = CUBE_POS_Y * CUBE_DIM_Y + UNIT_POS_Y
    if row < size and col < size:
        out[row * size + col] = a[row * size + col] + f32(10.0)

answer = add_ten_blocks_2d

# %% exercise: puzzles.shared
@cube(launch=True)
def rotate_add(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](4)
    u = UNIT_POS
    tile[u] = a[ABSOLUTE_POS]
    sync_cube()
    out[ABSOLUTE_POS] = tile[u] + tile[(u + 1) % 4]

answer = rotate_add

# %% exercise: puzzles.pooling
@cube(launch=True)
def window3(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](8)
    i = UNIT_POS
    tile[i] = a[i]
    sync_cube()
    acc = tile[i]
    if i >= 1:
        acc += tile[i - 1]
    if i >= 2:
        acc += tile[i - 2]
    out[i] = acc

answer = window3

# %% exercise: puzzles.dot
@cube(launch=True)
def dot(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    products = SharedMemory[f32](8)
    i = UNIT_POS
    products[i] = a[i] * b[i]
    sync_cube()
    if i == 0:
        acc = f32(0.0)
        for k in range(8):
            acc += products[k]
        out[0] = acc

answer = dot

# %% exercise: puzzles.conv1d
@cube(launch=True)
def conv1d(a: Slice[f32], b: Slice[f32], out: SliceMut[f32]):
    window = SharedMemory[f32](8 + 3)   # this cube's 8 items and the 3 after them
    taps = SharedMemory[f32](4)
    u = UNIT_POS
    i = ABSOLUTE_POS
    v = f32(0.0)
    if i < a.len():
        v = a[i]
    window[u] = v
    if u < 3:
        h = f32(0.0)
        if i + 8 < a.len():
            h = a[i + 8]
        window[u + 8] = h
    if u < 4:
        taps[u] = b[u]
    sync_cube()
    if i < out.len():
        acc = f32(0.0)
        for j in range(4):
            acc += window[u + j] * taps[j]
        out[i] = acc

answer = conv1d

# %% exercise: puzzles.prefix_sum
@cube(launch=True)
def running_total(a: Slice[f32], out: SliceMut[f32]):
    buf = SharedMemory[f32](8)
    u = UNIT_POS
    buf[u] = a[u]
    sync_cube()
    for k in unroll(range(3)):
        step = comptime(1 << k)
        t = f32(0.0)
        if u >= step:
            t = buf[u - step]
        sync_cube()   # every unit has read before anyone writes
        buf[u] += t
        sync_cube()
    out[u] = buf[u]

answer = running_total

# %% exercise: puzzles.axis_sum
@cube(launch=True)
def row_sums(a: Slice[f32], out: SliceMut[f32], cols: u32):
    buf = SharedMemory[f32](8)
    u = UNIT_POS
    row = CUBE_POS_Y
    v = f32(0.0)
    if u < cols:
        v = a[row * cols + u]
    buf[u] = v
    sync_cube()
    for k in unroll(range(3)):
        half = comptime(4 >> k)
        if u < half:
            buf[u] += buf[u + half]
        sync_cube()
    if u == 0:
        out[row] = buf[0]

answer = row_sums

# %% exercise: puzzles.matmul
@cube(launch=True)
def matmul(a: Slice[f32], b: Slice[f32], out: SliceMut[f32], size: u32):
    a_tile = SharedMemory[f32](16)
    b_tile = SharedMemory[f32](16)
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    row = ABSOLUTE_POS_Y
    col = ABSOLUTE_POS_X
    acc = f32(0.0)
    for t0 in range(0, size, 4):
        a_tile[ty * 4 + tx] = a[row * size + t0 + tx]
        b_tile[ty * 4 + tx] = b[(t0 + ty) * size + col]
        sync_cube()
        for k in range(4):
            acc += a_tile[ty * 4 + k] * b_tile[k * 4 + tx]
        sync_cube()
    out[row * size + col] = acc

answer = matmul
