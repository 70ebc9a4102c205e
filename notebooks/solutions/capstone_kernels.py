# Solutions to notebooks/capstone_kernels.ipynb — one section per step, the full answer cell.
# Steps with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: capstone_kernels.softmax
@cube(launch=True)
def softmax_rows(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: u32):
    r = ABSOLUTE_POS
    if r < rows:                         # units past the last row touch nothing
        m = x[r * cols]
        for j in range(1, cols):
            m = max(m, x[r * cols + j])
        s = f32(0.0)
        for j in range(cols):
            s += exp(x[r * cols + j] - m)    # exp(x - max) <= 1: no overflow
        for j in range(cols):
            out[r * cols + j] = exp(x[r * cols + j] - m) / s

answer = softmax_rows

# %% exercise: capstone_kernels.unrolled
@cube(launch=True)
def softmax_fixed(x: Slice[f32], out: SliceMut[f32], rows: u32, cols: Comptime[int]):
    r = ABSOLUTE_POS
    if r < rows:
        m = x[r * cols]
        for j in unroll(range(1, cols)):     # expanded once per j: no loop reaches the IR
            m = max(m, x[r * cols + j])
        s = f32(0.0)
        for j in unroll(range(cols)):
            s += exp(x[r * cols + j] - m)
        for j in unroll(range(cols)):
            out[r * cols + j] = exp(x[r * cols + j] - m) / s

answer = softmax_fixed

# %% exercise: capstone_kernels.compiles
v = cubelab.exercises.get("capstone_kernels.compiles").variant
# the KernelId holds cols (comptime) and the cube dim (units); rows and the cube count are not
answer = len({(cols, units) for rows, cols, units in v.program})

# %% exercise: capstone_kernels.which_fields
v = cubelab.exercises.get("capstone_kernels.which_fields").variant
first, second = v.pair
answer = set()
if first["cols"] != second["cols"]:
    answer.add("cols")                                   # a comptime argument: Info
if first.get("units", 8) != second.get("units", 8):
    answer.add("cube_dim")
if first.get("checked", True) != second.get("checked", True):
    answer.add("mode")                                   # launch vs launch_unchecked
answer = answer or "none"                                # rows and the cube count never

# %% exercise: capstone_kernels.exp_ops
v = cubelab.exercises.get("capstone_kernels.exp_ops").variant
answer = 2 * v.cols   # one exp per item in the sum's loop, one in the write's: both unrolled
