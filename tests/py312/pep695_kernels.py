"""saxpy with PEP 695 type parameters (only importable on Python >= 3.12)."""

from cubelab.prelude import *


@cube(launch=True)
def saxpy695[F: Float, N: Size](a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):
    if ABSOLUTE_POS < x.len():
        y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]
