"""Edge cases where a kernel could be silently wrong, each pinned on both runtimes (#11's items
11-17): a literal-zero float divisor, zero-length views under the clamping rule, numpy arrays of
the wrong width handed to `create_from_slice`, constant shifts of 32 or more, float edge cases,
`range` bounds that wrap a u32 counter, and what `debug_print`/trace tell the student when they
cannot do their job."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, f32, i32, u32

ONE = CubeCount.Static(1)


def up(client, kind, values):  # type: ignore[no-untyped-def]
    arr = np.asarray(values, kind.dtype)
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(arr)), arr.size)


def read(client, kind, arg):  # type: ignore[no-untyped-def]
    return kind.from_bytes(client.read_one(arg.handle))[: arg.length]


# -- item 14: constant shifts of 32 or more ------------------------------------------------------
@cube(launch=True)
def const_shifts(a: Slice[u32], out: SliceMut[u32], sa: SliceMut[i32]):
    if ABSOLUTE_POS == 0:
        out[0] = a[0] << u32(36)
        out[1] = a[0] >> u32(33)
        out[2] = a[0] << u32(32)
        sa[0] = i32(a[0]) >> u32(63)


def test_a_constant_shift_of_32_or_more_uses_the_amount_mod_32(client):  # type: ignore[no-untyped-def]
    v = 0x80000003
    a, out, sa = up(client, u32, [v]), up(client, u32, [7, 7, 7]), up(client, i32, [7])
    const_shifts.launch(client, ONE, CubeDim.new_1d(1), a, out, sa)
    np.testing.assert_array_equal(read(client, u32, out),
                                  [(v << 4) & 0xFFFFFFFF, v >> 1, v])
    np.testing.assert_array_equal(read(client, i32, sa), [-1])


# -- item 13: create_from_slice and numpy's 8-byte defaults --------------------------------------
@pytest.mark.parametrize("dtype, fix", [(np.float64, "f32.as_bytes"), (np.int64, "i32.as_bytes"),
                                        (np.uint64, "u32.as_bytes")])
def test_create_from_slice_refuses_an_8_byte_array_and_names_the_as_bytes_to_use(
        client, dtype, fix):  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=fix.replace(".", r"\.")) as e:
        client.create_from_slice(np.arange(4, dtype=dtype))
    assert np.dtype(dtype).name in str(e.value)
    h = client.create_from_slice(np.zeros(2, np.float32))  # a 4-byte array is taken as is
    with pytest.raises(TypeError, match=fix.replace(".", r"\.")):
        client.write(h, np.zeros(1, dtype))
    assert client.read_one(client.create_from_slice(np.arange(3, dtype=np.uint8))) == b"\0\1\2"
