# Solutions to notebooks/05_bounds.ipynb — one section per exercise, the full answer cell.

# %% exercise: ch05.two_launchers
answer = "mode"

# %% exercise: ch05.default_rows
answer = 2

# %% exercise: ch05.fixed_rule_unchecked
answer = 2

# %% exercise: ch05.clamps
answer = 3

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
