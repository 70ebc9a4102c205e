"""A module wgpu refuses is reported with the WGSL line and the Python kernel line it came from."""

import re

import pytest

from cubelab import CompileError
from cubelab import inspect as ci
from cubelab.prelude import CubeDim, f32
from cubelab.runtime.server import PipelineEntry
from tests.fixtures.kernels import saxpy


def test_a_naga_error_names_the_wgsl_line_and_the_kernel_line(wgpu_client):
    k = ci.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))
    c = ci.compiled(k)
    lines = c.wgsl.source.splitlines()
    n = next(i for i, ln in enumerate(lines) if " * " in ln and "vec4<f32>" in ln)
    # Corrupt the multiply (it came from kernel line `y[...] = Vector.new(...) * x[...] + ...`).
    lines[n] = re.sub(r"= (\w+) \* (\w+);", r"= \1 * true;", lines[n])
    c.wgsl.source = "\n".join(lines) + "\n"
    definition = k.define()
    entry = PipelineEntry(k.id(), k.entry, c.wgsl, definition)
    server = wgpu_client.device.server
    with pytest.raises(CompileError) as info:
        wgpu_client.device.runner.call(server.build_pipeline, entry)
    text = str(info.value)
    assert f"WGSL line {n + 1}: {lines[n].strip()}" in text
    assert re.search(r"from kernel line \S+kernels\.py:13:\d+: y\[ABSOLUTE_POS\] = Vector\.new",
                     text), text
    assert "naga says:" in text
