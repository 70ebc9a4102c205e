"""debug_print: lines come back with unit coordinates on the CPU runtime; wgpu refuses it."""

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
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


def test_debug_print_on_wgpu_is_a_clear_not_supported_failure(wgpu_client):
    with wgpu_client.events.record(ev.CompileFailed) as rec:
        out = _launch(wgpu_client)
        try:
            wgpu_client.read_one(out)
            raise AssertionError("reading the output of a refused kernel must raise")
        except Exception as exc:  # noqa: BLE001 - BufferFailure naming the cause
            message = str(exc)
    assert "debug_print" in message and "not supported on the wgpu runtime" in message
    assert "Device.cpu()" in message
    (failed,) = rec.of(ev.CompileFailed)
    assert "WGSL has no printf" in str(failed.error)


def test_debug_print_outside_a_block_prints_when_the_launch_has_run(cpu_client, capsys):
    _launch(cpu_client)
    cpu_client.sync()
    assert capsys.readouterr().out.splitlines() == [
        "[cube (0, 0, 0) unit (1, 0, 0) | pos 1] x[1] = 1.5",
        "[cube (1, 0, 0) unit (0, 0, 0) | pos 2] x[2] = 2.5"]
