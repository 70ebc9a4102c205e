"""The seed-000 kernels, as the chapter writes them (the exercises, the demo and notebooks use
these; `tests/fixtures/kernels.py` keeps its own copies so the core tests do not depend on this package)."""

from cubelab.prelude import *  # noqa: F403

F = Float.generic("F")  # noqa: F405
N = Size.generic("N")  # noqa: F405


@cube(launch=True)  # noqa: F405
def saxpy(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):  # noqa: F405
    """y = a * x + y, one vector of N floats per unit."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa


@cube(launch=True, launch_unchecked=True)  # noqa: F405
def add(x: Slice[F], y: Slice[F], out: SliceMut[F], relu: Comptime[bool]):  # noqa: F405
    """out = x + y with no bounds guard of our own; `relu` is decided when the kernel is compiled."""
    v = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405
    if relu:
        out[ABSOLUTE_POS] = F.max(v, F.new(0.0))  # noqa: F405
    else:
        out[ABSOLUTE_POS] = v  # noqa: F405
