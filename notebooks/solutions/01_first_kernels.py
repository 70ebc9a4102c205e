# Solutions to notebooks/01_first_kernels.ipynb — one section per exercise, the full answer cell.
# Exercises with variants compute the answer from the student's own numbers (`.variant`).

# %% exercise: ch01.cube_of_each_unit
v = cubelab.exercises.get("ch01.cube_of_each_unit").variant
# every unit of cube c has CUBE_POS c; a cube holds `units` units
answer = [c for c in range(v.cubes) for _ in range(v.units)]

# %% exercise: ch01.units_in_a_launch
v = cubelab.exercises.get("ch01.units_in_a_launch").variant
cubes = v.count[0] * v.count[1] * v.count[2]
answer = cubes * v.dim[0] * v.dim[1]

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
