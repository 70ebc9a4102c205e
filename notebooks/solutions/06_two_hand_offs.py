# Solutions to notebooks/06_two_hand_offs.ipynb — one section per exercise, the full answer cell.

# %% exercise: ch06.zero_dim_compiles
answer = 1

# %% exercise: ch06.dry_run_dispatches
answer = 2

# %% exercise: ch06.threads
answer = 2

# %% exercise: ch06.real_run_threads
answer = 2
