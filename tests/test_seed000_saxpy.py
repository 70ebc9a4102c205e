"""Seed 000's first experiment: saxpy through the whole pipeline, on wgpu."""

import re

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from tests.fixtures.kernels import saxpy


def run_saxpy(client, a=2.0):
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, a,
                      BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    return f32.from_bytes(client.read_one(y))


def test_saxpy_prints_1_3_5_to_31(client):
    assert client.name() in ("wgpu<wgsl>", "cpu<numpy>", "cuda<cpp>")
    np.testing.assert_array_equal(run_saxpy(client), np.arange(1, 32, 2, dtype=np.float32))


def test_saxpy_kernel_id_shows_n_4_and_a_unit(client):
    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        run_saxpy(client)
    (done,) = rec.of(ev.CompileFinished)
    text = done.kernel_id.debug()
    assert "info: SaxpyInfo {\n        n: 4,\n        a: (),\n" in text
    assert "x: BufferCompilationArg {\n            inplace: None,\n        }," in text
    assert "mode: Checked," in text
    assert "cube_dim: Dim3 {\n        x: 4,\n        y: 1,\n        z: 1,\n    }," in text
    assert done.kernel_id.type.endswith("saxpy::Saxpy<f32>")
    assert re.fullmatch(r"saxpy_f_f32_n_4_[0-9a-f]{8}", done.entry)
    if done.target == "wgsl":
        assert f"fn {done.entry}(" in done.source
        assert "@compute @workgroup_size(4, 1, 1)" in done.source
    elif done.target == "cuda":  # what NVRTC compiled
        assert f'extern "C" __global__ void __launch_bounds__(4) {done.entry}(' in done.source
    else:  # the CPU runtime's "source" is the IR it interprets
        assert done.source.startswith(f"kernel @{done.entry}(")
        assert "cube_dim(4, 1, 1)" in done.source


def test_changing_a_does_not_recompile(client):
    client.clear_cache()
    with client.events.record(ev.CompileStarted, ev.CacheHit) as rec:
        y1 = run_saxpy(client, 2.0)
        y2 = run_saxpy(client, 3.0)
    assert len(rec.of(ev.CompileStarted)) == 1
    assert len(rec.of(ev.CacheHit)) == 1
    np.testing.assert_array_equal(y2, 3.0 * np.arange(16, dtype=np.float32) + 1.0)
    assert not np.array_equal(y1, y2)


def test_a_new_vector_width_is_a_new_kernel_id(client):
    client.clear_cache()
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.zeros(16, dtype=np.float32)))
    with client.events.record(ev.CompileFinished) as rec:
        for n in (1, 2, 4):
            saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(16 // n), n,
                              1.0, BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
        out = f32.from_bytes(client.read_one(y))
    entries = [e.entry for e in rec.of(ev.CompileFinished)]
    assert [e.split("_")[4] for e in entries] == ["1", "2", "4"]
    assert len(set(entries)) == 3
    np.testing.assert_array_equal(out, 3 * np.arange(16, dtype=np.float32))


def test_cube_count_is_not_part_of_the_kernel_id(client):
    client.clear_cache()
    x = client.create_from_slice(f32.as_bytes(np.arange(64, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.zeros(64, dtype=np.float32)))
    with client.events.record(ev.CompileStarted) as rec:
        for count in (1, 2, 4):
            saxpy.launch[f32](client, CubeCount.Static(count, 1, 1), CubeDim.new_1d(4), 4, 1.0,
                              BufferArg.from_raw_parts(x, 64), BufferArg.from_raw_parts(y, 64))
        out = f32.from_bytes(client.read_one(y))
    assert len(rec.of(ev.CompileStarted)) == 1
    # 1 cube covers 16 floats, 2 cover 32, 4 cover all 64: element i was added (#launches it saw)
    expect = np.arange(64, dtype=np.float32) * np.repeat([3, 2, 1, 1], 16)
    np.testing.assert_array_equal(out, expect)
