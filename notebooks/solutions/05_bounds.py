# Solutions to notebooks/05_bounds.ipynb — one section per exercise, the full answer cell.
# Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch05.default_zeros
p = cubelab.exercises.get("ch05.default_zeros").variant.p
# nothing clamps under CubeCL 0.11.3's rule: units n.. read 0 from x and y; out ends at m
answer = list(range(p.n, min(p.m, p.units)))

# %% exercise: ch05.fixed_rows
p = cubelab.exercises.get("ch05.fixed_rows").variant.p
# launch: clamped to the last item, never 0; launch_unchecked: never clamped, reads 0
answer = ([], list(range(p.n, min(p.m, p.units))))

# %% exercise: ch05.add_the_guard
@cube(launch=True)
def add6(x: Slice[f32], y: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]

answer = add6

# %% exercise: ch05.fix_the_oob
@cube(launch=True)
def reverse(x: Slice[f32], out: SliceMut[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[x.len() - 1 - i]

answer = reverse
