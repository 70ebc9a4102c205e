# Solutions to notebooks/02_what_cube_generates.ipynb: one section per exercise.

# %% exercise: ch02.expand_thread
answer = "device"

# %% exercise: ch02.expands_for_five_launches
answer = 2

# %% exercise: ch02.if_ops_in_the_ir
answer = 1

# %% exercise: ch02.generic_scale
F = Float.generic("F")

@cube(launch=True)
def scale(a: f32, x: Slice[F], out: SliceMut[F]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = F.cast_from(a) * x[ABSOLUTE_POS]

answer = scale
