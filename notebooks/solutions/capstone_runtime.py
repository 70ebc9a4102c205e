# Solutions to notebooks/capstone_runtime.ipynb — one section per step, the full answer cell.
# Steps with variants compute the answer from the student's own program (`.variant`).

# %% exercise: capstone_runtime.stage
@cube(launch=True)
def scale_shift(x: Slice[f32], out: SliceMut[f32], a: f32, b: f32):
    if ABSOLUTE_POS < out.len():      # the batch's own length: any size, any geometry
        out[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + b

answer = scale_shift

# %% exercise: capstone_runtime.dispatched
v = cubelab.exercises.get("capstone_runtime.dispatched").variant
# a batch runs when the process is not in a dry run, or this thread holds a real run; the
# other thread's dry run counts (the depth is the process's)
ran = (v.warm_up != "dry") + sum(1 for b in range(1, 5) if v.batches.get(b, "real") in ("real", "dry+real"))
answer = 3 * ran

# %% exercise: capstone_runtime.failed
v = cubelab.exercises.get("capstone_runtime.failed").variant
failed = set()
reads = {1: "x", 2: "t", 3: "u"}
writes = {1: "t", 2: "u", 3: "y"}
for k in (1, 2, 3):                                   # batch 1
    if v.fails == k or reads[k] in failed:
        failed.add(writes[k])
second = {1: ("x2", "t"), 2: ("t", "u"), 3: ("u", "y2")}
for k in v.reruns:                                    # batch 2 reuses t and u
    src, dst = second[k]
    if src in failed:
        failed.add(dst)
    else:
        failed.discard(dst)                           # a pure output from clean inputs repairs
answer = failed or "none"

# %% exercise: capstone_runtime.two_streams
from cubelab.exercises.capstone_runtime import affine_p, relu

def run_two(client, xs, ys, params):
    for i, (x, y) in enumerate(zip(xs, ys), 1):
        p = client.create_from_slice(f32.as_bytes(params))   # a copy per stream: nothing shared
        t = client.empty(24 * 4)
        with stream(i):
            affine_p.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                            BufferArg.from_raw_parts(x, 24), BufferArg.from_raw_parts(p, 2),
                            BufferArg.from_raw_parts(t, 24))
            relu.launch(client, CubeCount.Static(2), CubeDim.new_1d(16),
                        BufferArg.from_raw_parts(t, 24), BufferArg.from_raw_parts(y, 24))

answer = run_two

# %% exercise: capstone_runtime.replay
from cubelab.exercises.capstone_runtime import run_batch

def record(client, x, y):
    t, u = client.empty(24 * 4), client.empty(24 * 4)   # no host data: fine before the window
    client.start_capture()
    run_batch(client, x, t, u, y)                      # recorded, not run
    return client.stop_capture()

answer = record
