# Solutions for notebooks/12_performance_launch_and_bandwidth.ipynb — one section per exercise.
# Each computes the answer of the student's own variant from its parameters, showing the reasoning.

# %% exercise: ch12.command_buffers
v = cubelab.exercises.get("ch12.command_buffers").variant
full, rest = divmod(v.launches, v.max_tasks)   # a command buffer per full queue ...
answer = [v.max_tasks] * full + ([rest] if rest else [])   # ... and the read sends the rest

# %% exercise: ch12.profiled_submissions
v = cubelab.exercises.get("ch12.profiled_submissions").variant
batched = -(-v.batched // v.max_tasks)   # full queues, and one for the rest (ceil)
answer = v.profiled + batched            # every profiled launch is a submission of its own

# %% exercise: ch12.bytes_requested
v = cubelab.exercises.get("ch12.bytes_requested").variant
active = v.n - 2 * v.radius                  # units whose whole window is inside x
per_unit = (2 * v.radius + 1) * 4 + 4        # the window's loads and one store, 4 bytes each
answer = active * per_unit

# %% exercise: ch12.flops_counted
v = cubelab.exercises.get("ch12.flops_counted").variant
answer = v.n * v.degree * 2                  # n units pass the guard; an fma is 2 flops

# %% exercise: ch12.memory_bound
v = cubelab.exercises.get("ch12.memory_bound").variant
ridge = v.gflops / v.gbps                    # flops per byte where the roof bends
intensity = {"copy": 0 / 8, "scale_add": 2 / 12,          # flops per item / bytes per item
             "poly4": 8 / 8, "poly16": 32 / 8, "poly64": 128 / 8}
answer = {name for name, i in intensity.items() if i < ridge}

# %% exercise: ch12.wide_copy
@cube(launch=True)
def copy_wide(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i]

answer = copy_wide

# %% exercise: ch12.accumulated
v = cubelab.exercises.get("ch12.accumulated").variant
launches = v.repeats + 1                     # the warm-up launch added a·x too
answer = 1 + launches * v.a * v.item         # x[item] = item, y started at one
