# Solutions to notebooks/03_kernel_id_and_cache.ipynb: one section per exercise.

# %% exercise: ch03.four_launches
answer = 3

# %% exercise: ch03.diff_unchecked
answer = "mode"

# %% exercise: ch03.diff_cube_count
answer = "none"

# %% exercise: ch03.diff_width
answer = "cube_dim, n"
