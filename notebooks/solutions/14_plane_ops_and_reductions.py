# Solutions to notebooks/14_plane_ops_and_reductions.ipynb — one section per exercise, the full
# answer cell. A plane's answer depends on the device, so each solution measures PLANE_DIM with a
# one-unit kernel (as the chapter does) and computes from the student's own variant.

# %% exercise: ch14.planes
v = cubelab.exercises.get("ch14.planes").variant

@cube(launch=True)
def width_of(out: SliceMut[u32]):
    out[0] = PLANE_DIM

w = client.create_from_slice(bytes(4))
width_of.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(w, 1))
P = int(u32.from_bytes(client.read_one(w))[0])
answer = -(-v.units // P)   # a ceiling division: the last plane may be partial

# %% exercise: ch14.scan
v = cubelab.exercises.get("ch14.scan").variant

@cube(launch=True)
def width_of(out: SliceMut[u32]):
    out[0] = PLANE_DIM

w = client.create_from_slice(bytes(4))
width_of.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(w, 1))
P = int(u32.from_bytes(client.read_one(w))[0])
first = v.unit // P * P                 # lane 0 of the unit's plane
answer = float(v.x[first:v.unit].sum())  # the lanes before it, in its own plane

# %% exercise: ch14.ballot
v = cubelab.exercises.get("ch14.ballot").variant

@cube(launch=True)
def width_of(out: SliceMut[u32]):
    out[0] = PLANE_DIM

w = client.create_from_slice(bytes(4))
width_of.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(w, 1))
P = int(u32.from_bytes(client.read_one(w))[0])
answer = sum(1 << lane for lane in range(min(P, 32)) if v.x[lane] > 0)   # unit 0's plane

# %% exercise: ch14.tree_phases
v = cubelab.exercises.get("ch14.tree_phases").variant
halvings = v.units.bit_length() - 1    # log2 of a power of two
answer = 1 + halvings + 1              # the load, one phase per halving, unit 0's write

# %% exercise: ch14.block_sum
@cube(launch=True)
def block_sum(x: Slice[f32], out: SliceMut[f32]):
    sm = SharedMemory[f32](256)
    s = plane_sum(x[ABSOLUTE_POS])
    if UNIT_POS_PLANE == 0:
        sm[UNIT_POS // PLANE_DIM] = s          # one total per plane
    sync_cube()
    if UNIT_POS == 0:
        t = f32(0.0)
        for p in range((CUBE_DIM + PLANE_DIM - 1) // PLANE_DIM):   # a partial plane too
            t += sm[p]
        out[CUBE_POS] = t

answer = block_sum

# %% exercise: ch14.conflicts
v = cubelab.exercises.get("ch14.conflicts").variant

@cube(launch=True)
def width_of(out: SliceMut[u32]):
    out[0] = PLANE_DIM

w = client.create_from_slice(bytes(4))
width_of.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(w, 1))
P = int(u32.from_bytes(client.read_one(w))[0])
worst, s = 1, 1
while s < v.units:                       # each step: the reads sm[index + s], the write sm[index]
    active = [u for u in range(v.units) if 2 * s * u < v.units]
    for first in range(0, len(active), P):    # the active units of one plane
        for words in ({2 * s * u for u in active[first:first + P]},
                      {2 * s * u + s for u in active[first:first + P]}):
            per_bank = {}
            for word in words:
                per_bank[word % 32] = per_bank.get(word % 32, 0) + 1
            worst = max(worst, max(per_bank.values()))
    s *= 2
answer = worst

# %% exercise: ch14.diverged
v = cubelab.exercises.get("ch14.diverged").variant

@cube(launch=True)
def width_of(out: SliceMut[u32]):
    out[0] = PLANE_DIM

w = client.create_from_slice(bytes(4))
width_of.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(w, 1))
P = int(u32.from_bytes(client.read_one(w))[0])
answer = len([u for u in range(min(P, 32)) if u % v.k == 0])   # the lanes of unit 0's plane inside
