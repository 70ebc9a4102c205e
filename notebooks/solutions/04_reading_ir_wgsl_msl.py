# Solutions to notebooks/04_reading_ir_wgsl_msl.ipynb: one section per exercise.

# %% exercise: ch04.checked_io_by_default
answer = False

# %% exercise: ch04.clamps_when_fixed
answer = 3

# %% exercise: ch04.msl_vector_type
answer = "float_4"

# %% exercise: ch04.fix_the_copy
@cube(launch=True)
def copy(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]

answer = copy
