# Solutions to notebooks/03_kernel_id_and_cache.ipynb — one section per exercise, the full answer
# cell. Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch03.four_launches
v = cubelab.exercises.get("ch03.four_launches").variant
# mode (checked) and the Comptime relu are KernelId fields; the data is not
answer = len(set(v.program))

# %% exercise: ch03.which_fields
v = cubelab.exercises.get("ch03.which_fields").variant
# per pair: what changed that is compiled in (cube_dim; the Info's width n) — the cube count,
# the data and the scalar's value never are
answer = ["cube_dim", "n, cube_dim", "none", "n"][v.index]

# %% exercise: ch03.which_compile
v = cubelab.exercises.get("ch03.which_compile").variant
seen, answer = set(), []
for i, (kind, p) in enumerate(v.program, 1):
    if kind == "add":
        key = ("add", p["checked"], p["relu"])               # mode, relu; cube dim is always 8
    else:
        key = ("saxpy", p["width"], p["units"])              # n, cube_dim; not a, not the count
    if key not in seen:
        seen.add(key)
        answer.append(i)
