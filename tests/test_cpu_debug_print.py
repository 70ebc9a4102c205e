"""debug_print: lines come back with unit coordinates on the CPU runtime; on wgpu the kernel runs
without them (WGSL has no printf, as CubeCL's WGSL backend) and the student is told once."""

import inspect
import warnings

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.errors import CompileNoticeWarning
from cubelab.prelude import ABSOLUTE_POS, Slice, SliceMut, cube, debug_print, f32
from cubelab.runtime import events as ev
from cubelab.runtime.cpu import DebugPrinted, launch_results
from tests.fixtures.cpu_kernels import shout


def _launch(client):
    x = client.create_from_slice(f32.as_bytes(np.array([0.5, 1.5, 2.5, 3.5], np.float32)))
    out = client.empty(16)
    shout.launch(client, CubeCount.Static(2), CubeDim.new_1d(2),
                 BufferArg.from_raw_parts(x, 4), BufferArg.from_raw_parts(out, 4))
    return out


def test_debug_print_lines_carry_unit_coordinates_and_reach_stdout(cpu_client, capsys):
    with cpu_client.events.record(DebugPrinted) as rec, launch_results(cpu_client) as r:
        out = _launch(cpu_client)
    cpu_client.sync()
    expect = ["[cube (0, 0, 0) unit (1, 0, 0) | pos 1] x[1] = 1.5",
              "[cube (1, 0, 0) unit (0, 0, 0) | pos 2] x[2] = 2.5"]
    assert r.prints == expect
    assert capsys.readouterr().out.splitlines() == expect
    (event,) = rec.of(DebugPrinted)
    assert list(event.lines) == expect and event.total == 2
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)), [0.5, 1.5, 2.5, 3.5])


@cube(launch=True)
def doubles_and_prints(x: Slice[f32], out: SliceMut[f32]):
    debug_print("x = {}", x[ABSOLUTE_POS])
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0


def _double(client):
    x = client.create_from_slice(f32.as_bytes(np.array([1.0, 2.5], np.float32)))
    out = client.empty(8)
    doubles_and_prints.launch(client, CubeCount.Static(1), CubeDim.new_1d(2),
                              BufferArg.from_raw_parts(x, 2), BufferArg.from_raw_parts(out, 2))
    return out


def test_debug_print_on_wgpu_runs_the_kernel_without_it_and_says_so_once(wgpu_client, capfd):
    src, start = inspect.getsourcelines(doubles_and_prints.__wrapped__)
    line = start + next(n for n, text in enumerate(src) if "debug_print(" in text)
    with wgpu_client.events.record(ev.CompileNotice) as rec:
        with pytest.warns(CompileNoticeWarning,
                          match=rf"kernel `doubles_and_prints`: debug_print \(line {line}\) prints "
                                r"nothing on the wgpu runtime — WGSL has no printf.*"
                                r"Device\.cpu\(\)\.client\(\)"):
            out = _double(wgpu_client)
            wgpu_client.sync()
        np.testing.assert_array_equal(f32.from_bytes(wgpu_client.read_one(out)), [2.0, 5.0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the second launch hits the cache: no second notice
            out = _double(wgpu_client)
            wgpu_client.sync()
    np.testing.assert_array_equal(f32.from_bytes(wgpu_client.read_one(out)), [2.0, 5.0])
    (notice,) = rec.of(ev.CompileNotice)
    assert notice.kernel == "DoublesAndPrints" and notice.target == "wgsl"
    assert "WGSL has no printf" in notice.message
    assert "x = " not in capfd.readouterr().out  # nothing printed


def test_the_same_kernel_prints_on_the_cpu_runtime(cpu_client, capfd):
    with launch_results(cpu_client) as r:
        out = _double(cpu_client)
    assert r.prints == ["[cube (0, 0, 0) unit (0, 0, 0) | pos 0] x = 1.0",
                        "[cube (0, 0, 0) unit (1, 0, 0) | pos 1] x = 2.5"]
    np.testing.assert_array_equal(f32.from_bytes(cpu_client.read_one(out)), [2.0, 5.0])


def test_debug_print_outside_a_block_prints_when_the_launch_has_run(cpu_client, capsys):
    _launch(cpu_client)
    cpu_client.sync()
    assert capsys.readouterr().out.splitlines() == [
        "[cube (0, 0, 0) unit (1, 0, 0) | pos 1] x[1] = 1.5",
        "[cube (1, 0, 0) unit (0, 0, 0) | pos 2] x[2] = 2.5"]
