"""The seed-000 kernels, written as a student would (tests import them from here)."""

from cubelab.prelude import *

F = Float.generic("F")
N = Size.generic("N")


@cube(launch=True)
def saxpy(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):
    """y = a * x + y, one vector of N floats per unit."""
    if ABSOLUTE_POS < x.len():
        y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]


@cube(launch=True, launch_unchecked=True)
def add(x: Slice[F], y: Slice[F], out: SliceMut[F], relu: Comptime[bool]):
    """out = x + y with no bounds guard of our own; `relu` is decided at compile time."""
    v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]
    if relu:
        out[ABSOLUTE_POS] = F.max(v, F.new(0.0))
    else:
        out[ABSOLUTE_POS] = v


@cube(launch=True)
def topology(output: SliceMut[u32]):
    output[ABSOLUTE_POS] = ABSOLUTE_POS
