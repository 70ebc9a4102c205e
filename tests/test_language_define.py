"""Run-time element types (seed 000's last step of "one `expand` for every type"): burn's custom
kernels choose the element type from a tensor's dtype at run time with CubeCL's `#[define(F)]
_dtype: ElemType`; cubelab's `Define[T]` argument is that, on both runtimes. The launch passes
`f32`, `i32`, `u32` or a numpy dtype; the KernelId shows the choice; one `expand` serves all."""

from __future__ import annotations

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, LaunchError
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

T = Numeric.generic("T")
F = Float.generic("F")


@cube(launch=True)
def add_one(x: Slice[T], out: SliceMut[T], dtype: Define[T]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + T.new(1)


def _arg(client, arr):
    kind = {np.dtype(np.float32): f32, np.dtype(np.int32): i32, np.dtype(np.uint32): u32}
    return BufferArg.from_raw_parts(client.create_from_slice(kind[arr.dtype].as_bytes(arr)),
                                    arr.size)


def test_one_expand_serves_the_element_type_a_launch_value_chooses(client):
    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        for dt in (np.float32, np.int32, np.uint32):
            arr = np.arange(8).astype(dt)
            out = _arg(client, np.zeros(8, dt))
            add_one.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), _arg(client, arr),
                           out, arr.dtype)
            got = np.frombuffer(client.read_one(out.handle), dt)
            np.testing.assert_array_equal(got, arr + 1)
        # a type object or its name choose the same: no new compile
        arr = np.arange(8, dtype=np.float32)
        add_one.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), _arg(client, arr),
                       _arg(client, arr), f32)
    kids = [e.kernel_id for e in rec.of(ev.CompileFinished)]
    assert [k.type.rsplit("::", 1)[-1] for k in kids] == ["AddOne<f32>", "AddOne<i32>",
                                                          "AddOne<u32>"]
    assert [k.info.get("dtype") for k in kids] == [f32, i32, u32]
    assert "dtype: f32," in kids[0].debug()
    assert len({e.entry for e in rec.of(ev.CompileFinished)}) == 3


def test_the_chosen_type_must_be_one_the_generic_takes():
    @cube(launch=True)
    def halve(x: SliceMut[F], dtype: Define[F]):
        x[ABSOLUTE_POS] = x[ABSOLUTE_POS] / F.new(2.0)

    from cubelab import Device

    client = Device.cpu().client()
    x = BufferArg.from_raw_parts(client.create_from_slice(i32.as_bytes(np.ones(4, np.int32))), 4)
    with pytest.raises(LaunchError, match=r"`dtype` chooses the element type F \(a Float\), "
                                          r"got .*int32(.|\n)*hint: pass f32"):
        halve.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), x, np.int32)


def test_the_inspector_takes_the_type_as_for_any_generic():
    from cubelab import inspect as ci

    k = ci.instance(add_one, u32, cube_dim=CubeDim.new_1d(8))
    assert k.id().info.get("dtype") is u32
    assert "array<u32>" in ci.wgsl(k)
