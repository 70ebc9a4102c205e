"""Seed 000's quiz: four launches of `add`, three compiles; and the out-of-bounds experiment."""

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.ir.passes import DEFAULT_CHECKED_IO, CheckedIo
from cubelab.prelude import f32
from cubelab.compiler.pipeline import CompilationOptions
from cubelab.runtime import events as ev
from tests.fixtures.kernels import add

X = np.array([1, -2, 3, -4, 5, -6], dtype=np.float32)
Y = np.full(6, 0.5, dtype=np.float32)


def run_add(client, checked, relu, x=X, y=Y, out_len=6):
    xh = client.create_from_slice(f32.as_bytes(x))
    yh = client.create_from_slice(f32.as_bytes(y))
    out = client.create_from_slice(f32.as_bytes(np.zeros(out_len, dtype=np.float32)))
    launcher = add.launch if checked else add.launch_unchecked
    launcher[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(8),
                  BufferArg.from_raw_parts(xh, len(x)), BufferArg.from_raw_parts(yh, len(y)),
                  BufferArg.from_raw_parts(out, out_len), relu)
    return f32.from_bytes(client.read_one(out))


def test_quiz_four_launches_compile_three_times(client):
    client.clear_cache()
    with client.events.record(ev.CompileFinished, ev.CacheHit) as rec:
        r1 = run_add(client, True, False)
        r2 = run_add(client, False, False)
        r3 = run_add(client, True, True)
        r4 = run_add(client, True, False)
    compiles = rec.of(ev.CompileFinished)
    hits = rec.of(ev.CacheHit)
    assert len(compiles) == 3
    assert [c.kernel_id.mode.value for c in compiles] == ["Checked", "Unchecked", "Checked"]
    assert [c.kernel_id.info.get("relu") for c in compiles] == [False, False, True]
    assert len(hits) == 1 and hits[0].entry == compiles[0].entry
    assert len({c.entry for c in compiles}) == 3
    np.testing.assert_array_equal(r1, [1.5, -1.5, 3.5, -3.5, 5.5, -5.5])
    np.testing.assert_array_equal(r2, [1.5, -1.5, 3.5, -3.5, 5.5, -5.5])
    np.testing.assert_array_equal(r3, [1.5, 0.0, 3.5, 0.0, 5.5, 0.0])
    np.testing.assert_array_equal(r4, r1)
    # the IR after passes is what every runtime runs (WGSL `max(`, the CPU runtime's arith.max)
    assert "arith.max" in compiles[2].ir and "arith.max" not in compiles[0].ir


OOB_X = np.arange(1, 7, dtype=np.float32)
OOB_Y = np.arange(10, 70, 10, dtype=np.float32)


@pytest.fixture
def fixed_checked_io(client):
    client.set_compilation_options(checked_io="fixed")
    yield client
    client.set_compilation_options(checked_io=DEFAULT_CHECKED_IO)


def test_the_seeds_0_11_3_rule_is_the_default_checked_io():
    assert DEFAULT_CHECKED_IO == "cubecl-0.11.3"
    assert CompilationOptions().checked_io == CheckedIo().rule == DEFAULT_CHECKED_IO


def test_oob_with_default_settings_reads_zero_in_both_modes_as_the_seed_prints(client):
    with client.events.record(ev.CompileFinished) as rec:
        checked = run_add(client, True, False, OOB_X, OOB_Y, out_len=8)
        unchecked = run_add(client, False, False, OOB_X, OOB_Y, out_len=8)
    expect = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]
    np.testing.assert_array_equal(checked, expect)
    np.testing.assert_array_equal(unchecked, expect)
    for c in rec.of(ev.CompileFinished):
        assert "arith.min" not in c.ir


def test_oob_with_the_fixed_checked_io_clamps_to_len_minus_one(fixed_checked_io):
    client = fixed_checked_io
    with client.events.record(ev.CompileFinished) as rec:
        checked = run_add(client, True, False, OOB_X, OOB_Y, out_len=8)
        unchecked = run_add(client, False, False, OOB_X, OOB_Y, out_len=8)
    np.testing.assert_array_equal(checked, [11, 22, 33, 44, 55, 66, 66, 66])
    np.testing.assert_array_equal(unchecked, [11, 22, 33, 44, 55, 66, 0, 0])
    irs = {c.kernel_id.mode.value: c.ir for c in rec.of(ev.CompileFinished)}
    assert "arith.min" in irs["Checked"]
    assert "arith.min" not in irs["Unchecked"]
