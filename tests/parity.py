"""What the CubeCL parity tests (`tests/test_cubecl_parity_*.py`) share: buffers in and out, and
CubeCL's own comparison of floats.

Those tests take their inputs and expected outputs from tracel-ai/cubecl's
`crates/cubecl-core/src/runtime_tests/` (read as the reference for what each feature must do; the
kernels and checks are cubelab's own). CubeCL compares floats with `assert_equals_approx`:
`|actual - expected| < epsilon`, or both NaN, or both infinite with one sign — `approx` is that
rule, so a parity test is exactly as strict as CubeCL's and no looser.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab import BufferArg
from cubelab.prelude import f32, i32, u32

KINDS = {np.dtype(np.float32): f32, np.dtype(np.uint32): u32, np.dtype(np.int32): i32}


def buf(client: Any, values: Any, dtype: Any = np.float32) -> BufferArg:
    """A buffer holding `values` as `dtype` (a numpy dtype), with its length in items."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=dtype))
    return BufferArg.from_raw_parts(client.create_from_slice(KINDS[arr.dtype].as_bytes(arr)),
                                    arr.size)


def empty(client: Any, n: int, dtype: Any = np.float32) -> BufferArg:
    return buf(client, np.zeros(n, dtype), dtype)


def read(client: Any, b: BufferArg, dtype: Any = np.float32) -> np.ndarray[Any, Any]:
    return KINDS[np.dtype(dtype)].from_bytes(client.read_one(b.handle))[: b.length]


def approx(actual: Any, expected: Any, epsilon: float) -> None:
    """CubeCL's `assert_equals_approx`: within epsilon, or both NaN, or the same infinity."""
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    assert a.shape == e.shape, (a, e)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(a - e) < epsilon) | (np.isnan(a) & np.isnan(e)) | \
            (np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e)))
    assert ok.all(), f"differ beyond {epsilon} at {np.flatnonzero(~ok).tolist()}:\n" \
                     f"actual   {a.tolist()}\nexpected {e.tolist()}"
