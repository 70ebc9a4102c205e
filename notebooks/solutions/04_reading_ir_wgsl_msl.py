# Solutions to notebooks/04_reading_ir_wgsl_msl.ipynb — one section per exercise, the full answer
# cell. Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch04.which_clamp
v = cubelab.exercises.get("ch04.which_clamp").variant
# only the fixed rule matches a global buffer, and only `launch` marks indices checked
answer = {"ABCD"[i] for i, (rule, checked) in enumerate(v.order) if rule == "fixed" and checked}

# %% exercise: ch04.clamps_when_fixed
from cubelab.exercises.ch04 import CLAMP_KERNELS
v = cubelab.exercises.get("ch04.clamps_when_fixed").variant
kernel, _, reads, writes = CLAMP_KERNELS[v.kernel]
answer = reads + writes      # one clamp per index op: every read and every write

# %% exercise: ch04.msl_cube_dim
v = cubelab.exercises.get("ch04.msl_cube_dim").variant
answer = v.dim[0] * v.dim[1]   # CUBE_DIM, all axes multiplied; the count is read at run time

# %% exercise: ch04.fix_the_copy
@cube(launch=True)
def copy(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]

answer = copy
