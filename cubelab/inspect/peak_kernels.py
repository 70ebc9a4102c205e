"""The kernels `cubelab.inspect.peaks` measures a device with — ordinary cubelab kernels, so what
they measure is what a student's kernel can reach on the same runtime, through the same path.

- `stream_copy`: one `vec4<f32>` per unit from `x` to `out` (16 bytes read, 16 written): the
  widest coalesced access cubelab has, so the bandwidth curve is the memory system's best case.
- `fma_chains`: four independent `vec4` FMA chains per unit, `steps` times (32 flops a step): a
  float-throughput ceiling that needs no memory at all (one store at the end keeps it alive;
  each unit starts from its own value, so no runtime can compute the chains once for all).
- `plane_dim`: writes `PLANE_DIM`, the plane (subgroup) size the device runs a kernel with.
"""

from cubelab.prelude import (
    ABSOLUTE_POS,
    PLANE_DIM,
    UNIT_POS,
    Slice,
    SliceMut,
    Vector,
    cube,
    f32,
    fma,
    u32,
)


@cube(launch=True, launch_unchecked=True)
def stream_copy(x: Slice[Vector[f32, 4]], out: SliceMut[Vector[f32, 4]]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i]


@cube(launch=True, launch_unchecked=True)
def fma_chains(seed: f32, steps: u32, out: SliceMut[Vector[f32, 4]]):
    # each unit starts from its own value: a chain every unit computed alike would be one
    # chain to a runtime that computes a launch-uniform value once (the CPU runtime does)
    # The width is written where each vector starts: `Vector.new(x)` alone is the scalar x
    # until it meets a vector (docs/language.md), and fma of scalars is a quarter of the flops
    # counted below (device_peaks said 4x the H200's FP32 peak before this was written so).
    s = seed + f32.cast_from(UNIT_POS) * f32(0.001)
    a = Vector[f32, 4].new(s)
    b = Vector[f32, 4].new(s + f32(1.0))
    c = Vector[f32, 4].new(s + f32(2.0))
    d = Vector[f32, 4].new(s + f32(3.0))
    m = Vector[f32, 4].new(f32(0.999))
    k = Vector[f32, 4].new(f32(0.001))
    for _ in range(steps):
        a = fma(a, m, k)
        b = fma(b, m, k)
        c = fma(c, m, k)
        d = fma(d, m, k)
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a + b + c + d


@cube(launch=True)
def plane_dim(out: SliceMut[u32]):
    if UNIT_POS == 0:
        out[0] = PLANE_DIM
