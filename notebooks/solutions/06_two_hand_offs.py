# Solutions to notebooks/06_two_hand_offs.ipynb — one section per exercise, the full answer cell.
# Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch06.threads
v = cubelab.exercises.get("ch06.threads").variant
answer = v.workers + 2        # the main thread, each worker, and the one device thread

# %% exercise: ch06.zero_dim_compiles
v = cubelab.exercises.get("ch06.zero_dim_compiles").variant
seen, answer = set(), []
for i, (count, dim) in enumerate(v.program, 1):
    if 0 in count:
        continue              # gate one: never reaches the device thread
    if dim not in seen:       # the cube dim is in the KernelId, the count is not
        seen.add(dim)
        answer.append(i)

# %% exercise: ch06.dry_run_dispatches
v = cubelab.exercises.get("ch06.dry_run_dispatches").variant
# a skipped launch compiles (and caches) but does not dispatch
answer = (len(set(v.dry) | set(v.real)), len(v.real))

# %% exercise: ch06.real_run_threads
v = cubelab.exercises.get("ch06.real_run_threads").variant
main, worker_first, helper, worker_second = v.labels
answer = {worker_first, worker_second}   # only the thread holding the RealRun executes
