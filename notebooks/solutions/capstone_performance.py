# Solutions for notebooks/capstone_performance.ipynb — one section per graded step.

# %% exercise: capstone_performance.softmax_naive
@cube(launch=True)
def softmax_naive(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    row = ABSOLUTE_POS
    if row < rows:                                  # the last cube has units without a row
        m = f32(-3.0e38)
        for c in range(cols):
            m = f32.max(m, x[row * cols + c])       # 1. the row's max
        total = f32(0.0)
        for c in range(cols):
            total += f32.exp(x[row * cols + c] - m)  # 2. the sum of exp(x - max)
        for c in range(cols):
            out[row * cols + c] = f32.exp(x[row * cols + c] - m) / total   # 3. normalise

answer = softmax_naive

# %% exercise: capstone_performance.naive_sectors
v = cubelab.exercises.get("capstone_performance.naive_sectors").variant
accesses = 4                        # three reads of x and one write of out per item
answer = v.rows * v.cols * accesses * 32    # units cols * 4 >= 32 bytes apart: a sector each

# %% exercise: capstone_performance.naive_flops
v = cubelab.exercises.get("capstone_performance.naive_flops").variant
per_item = 1 + 3 + 3                # max | subtract, exp, add | subtract, exp, divide
answer = v.rows * v.cols * per_item

# %% exercise: capstone_performance.softmax_coalesced
@cube(launch=True)
def softmax_cube(x: Slice[f32], out: SliceMut[f32], cols: u32):
    sm = SharedMemory[f32](256)
    row = CUBE_POS
    per = cols // 256
    m = f32(-3.0e38)
    for k in range(per):
        m = f32.max(m, x[row * cols + k * 256 + UNIT_POS])    # neighbours read neighbours
    sm[UNIT_POS] = m
    sync_cube()
    for k in unroll(range(8)):
        s = u32(1) << u32(k)
        i = u32(2) * s * UNIT_POS
        if i < 256:
            sm[i] = f32.max(sm[i], sm[i + s])
        sync_cube()
    m = sm[0]
    sync_cube()
    total = f32(0.0)
    for k in range(per):
        total += f32.exp(x[row * cols + k * 256 + UNIT_POS] - m)
    sm[UNIT_POS] = total
    sync_cube()
    for k in unroll(range(8)):
        s = u32(1) << u32(k)
        i = u32(2) * s * UNIT_POS
        if i < 256:
            sm[i] = sm[i] + sm[i + s]
        sync_cube()
    total = sm[0]
    for k in range(per):
        c = row * cols + k * 256 + UNIT_POS
        out[c] = f32.exp(x[c] - m) / total

answer = softmax_cube

# %% exercise: capstone_performance.softmax_conflict_free
@cube(launch=True)
def softmax_cube(x: Slice[f32], out: SliceMut[f32], cols: u32):
    sm = SharedMemory[f32](256)
    row = CUBE_POS
    per = cols // 256
    m = f32(-3.0e38)
    for k in range(per):
        m = f32.max(m, x[row * cols + k * 256 + UNIT_POS])
    sm[UNIT_POS] = m
    sync_cube()
    for k in unroll(range(8)):
        s = u32(128) >> u32(k)                      # sequential addressing: 128, 64, ... 1
        if UNIT_POS < s:
            sm[UNIT_POS] = f32.max(sm[UNIT_POS], sm[UNIT_POS + s])
        sync_cube()
    m = sm[0]
    sync_cube()                                     # everyone has read the max before sm[0] changes
    total = f32(0.0)
    for k in range(per):
        total += f32.exp(x[row * cols + k * 256 + UNIT_POS] - m)
    sm[UNIT_POS] = total
    sync_cube()
    for k in unroll(range(8)):
        s = u32(128) >> u32(k)
        if UNIT_POS < s:
            sm[UNIT_POS] = sm[UNIT_POS] + sm[UNIT_POS + s]
        sync_cube()
    total = sm[0]
    for k in range(per):
        c = row * cols + k * 256 + UNIT_POS
        out[c] = f32.exp(x[c] - m) / total

answer = softmax_cube
