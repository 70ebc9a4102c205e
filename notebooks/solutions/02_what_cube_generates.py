# Solutions to notebooks/02_what_cube_generates.ipynb — one section per exercise, the full answer
# cell. Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch02.threads_of_a_launch
v = cubelab.exercises.get("ch02.threads_of_a_launch").variant
# only the registration runs where `launch` is called; the cache, define/expand and the
# dispatch belong to the device thread
answer = ["calling" if step == "register" else "device" for step in v.order]

# %% exercise: ch02.which_launches_expand
v = cubelab.exercises.get("ch02.which_launches_expand").variant
seen, answer = set(), []
for i, (width, a) in enumerate(v.program, 1):
    key = width                     # the width sets n and the cube dim; the scalar a is data
    if key not in seen:
        seen.add(key)
        answer.append(i)

# %% exercise: ch02.if_ops
v = cubelab.exercises.get("ch02.if_ops").variant
# A, B, C per kernel: runtime conditions become scf.if; a Comptime one is decided in Python and
# an `if` inside a dropped branch never reaches the IR
answer = [{"A", "C"}, {"B"}, {"A", "B"}][v.program]

# %% exercise: ch02.generic_scale
F = Float.generic("F")

@cube(launch=True)
def scale(a: f32, x: Slice[F], out: SliceMut[F]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = F.cast_from(a) * x[ABSOLUTE_POS]

answer = scale
