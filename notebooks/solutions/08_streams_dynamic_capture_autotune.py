# Solutions to notebooks/08_streams_dynamic_capture_autotune.ipynb — one section per exercise,
# the full answer cell. Exercises with variants compute the answer from the student's own
# numbers (`.variant`).

# %% exercise: ch08.max_tasks_flushes
v = cubelab.exercises.get("ch08.max_tasks_flushes").variant
answer = v.n // v.m            # a flush each time the queue fills; the rest leaves otherwise

# %% exercise: ch08.dynamic_count
v = cubelab.exercises.get("ch08.dynamic_count").variant
answer = list(range(v.cubes * 4))   # cubes of 4 units, read after the writer ran

# %% exercise: ch08.capture_refusals
v = cubelab.exercises.get("ch08.capture_refusals").variant
allowed = {"launch", "check"}       # kernel work, and the ledger: no bytes, no wait, no copy
answer = {str(i) for i, op in enumerate(v.order, 1) if op not in allowed}

# %% exercise: ch08.replay_dispatches
v = cubelab.exercises.get("ch08.replay_dispatches").variant
answer = v.launches * (1 + v.replays)   # the warm-up and each replay; the window only records

# %% exercise: ch08.autotune_compiles
v = cubelab.exercises.get("ch08.autotune_compiles").variant
searched = list(dict.fromkeys(v.calls))        # a new key searches; a known one reuses
kernel_ids = {("one cube", n) for n in searched} | {("cubes of 8",)}
answer = len(kernel_ids)                       # tile_sum never compiles

# %% exercise: ch08.zero_reaches_device
v = cubelab.exercises.get("ch08.zero_reaches_device").variant
# a static count with a zero is gated on the calling thread; every dynamic count crosses
answer = {i for i, count in enumerate(v.order, 1)
          if count.startswith("Dynamic") or count == "Static(2)"}

# %% exercise: ch08.precompile_taints
v = cubelab.exercises.get("ch08.precompile_taints").variant
answer = {"out", "scratch"}                    # the failed compile claims its declared outputs
if v.sweep == "repaired":
    answer = {"scratch"}                       # a pure-output write of out repairs it
elif v.sweep == "read_after":
    answer = {"out", "scratch", "y"}           # reading the failed out skips, failing y

# %% exercise: ch08.guards_nest
v = cubelab.exercises.get("ch08.guards_nest").variant

def dispatched(items, dry=0, real=0):
    out = set()
    for it in items:
        if isinstance(it, str):
            if dry == 0 or real > 0:           # Execute unless in a dry run with no RealRun
                out.add(it)
        else:
            guard, inner = it
            out |= dispatched(inner, dry + (guard == "dry"), real + (guard == "real"))
    return out

answer = dispatched(v.program)
