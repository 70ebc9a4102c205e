# Solutions to notebooks/01_first_kernels.ipynb: one section per exercise, the solved answer cell.

# %% exercise: ch01.cube_of_each_unit
answer = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]

# %% exercise: ch01.units_in_a_launch
answer = 48

# %% exercise: ch01.fix_the_index
@cube(launch=True)
def double_it(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0

answer = double_it

# %% exercise: ch01.warm_up
@cube(launch=True)
def add_ten(x: Slice[f32], out: SliceMut[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + 10.0

answer = add_ten
