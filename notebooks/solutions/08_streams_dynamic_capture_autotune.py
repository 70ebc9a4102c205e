# Solutions to notebooks/08_streams_dynamic_capture_autotune.ipynb — one section per exercise.

# %% exercise: ch08.max_tasks_flushes
answer = 2

# %% exercise: ch08.dynamic_zero
answer = 0

# %% exercise: ch08.capture_refusals
answer = "read_one, sync, sync_buffers, profile, write"

# %% exercise: ch08.replay_compiles
answer = 2

# %% exercise: ch08.autotune_compiles
answer = 3

# %% exercise: ch08.guards_nest
answer = 3

# %% exercise: ch08.zero_reaches_device
answer = 1

# %% exercise: ch08.precompile_taints
answer = "out, scratch"
