"""A roofline of a launch: bytes and flops counted from a recorded run, time profiled on the
client's device, peaks measured there with cubelab kernels (`cubelab.inspect.roofline`,
`device_peaks`). No timing is asserted — only what is counted, what is derived from it, and
that the chart renders; the peaks are measured once per client (module fixtures)."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.inspect.roofline import Roofline
from cubelab.prelude import f32
from tests.fixtures.cost_kernels import matmul_naive, matmul_tiled, saxpy

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def peaks(client):
    return inspect.device_peaks(client)  # measured on the first use of each client, then cached


def saxpy_roofline(client, n, repeats=3, **kw):
    x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(n, dtype=np.float32)))
    r = inspect.roofline(saxpy.launch, client, CubeCount.Static(n // 256), CubeDim.new_1d(256),
                         2.0, BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(y, n),
                         repeats=repeats, **kw)
    return r, y


def test_device_peaks_measure_a_curve_a_plateau_and_are_cached_per_client(client, peaks):
    assert peaks.gbps > 0 and peaks.gflops > 0 and peaks.launch_seconds > 0
    sizes = [p.bytes for p in peaks.curve]
    assert sizes == sorted(sizes) and len(sizes) >= 3 and sizes[0] == 64 << 10
    assert all(p.gbps == pytest.approx(p.bytes / p.seconds / 1e9) for p in peaks.curve)
    assert peaks.ridge == pytest.approx(peaks.gflops / peaks.gbps)
    assert inspect.device_peaks(client) is peaks  # measured once
    assert "bandwidth plateau" in str(peaks) and peaks.to_dict()["curve"]


def test_saxpy_moves_12n_bytes_does_2n_flops_and_is_memory_bound(client, peaks):
    n = 64 * 256  # 64 cubes: every one counted
    r, y = saxpy_roofline(client, n)
    assert isinstance(r, Roofline) and r.kernel == "saxpy"
    assert (r.bytes, r.flops) == (12 * n, 2 * n)
    assert r.cubes_counted == r.cubes_total == 64
    assert r.intensity == pytest.approx(1 / 6)
    assert r.bound == ("memory" if r.intensity < r.ridge else "compute")
    if client.name().startswith("wgpu"):
        # lavapipe's ridge is 10-40 flop/byte: saxpy's 1/6 is far below it. (The CPU runtime's
        # ridge is 0.15-0.7 — numpy's arithmetic streams memory too — so saxpy sits at it, and
        # which side a measurement puts it on is the measurement's: docs/cost.md)
        assert r.bound == "memory"
    assert (r.peak_gbps, r.peak_gflops) == (peaks.gbps, peaks.gflops)
    assert r.achieved_gbps == pytest.approx(r.bytes / r.seconds / 1e9)
    assert r.attainable_gflops == pytest.approx(min(r.peak_gflops, r.intensity * r.peak_gbps))
    assert r.sector_bytes == r.bytes == r.compulsory_bytes  # coalesced, each buffer once
    assert len(r.samples) == 3 and r.seconds == sorted(r.samples)[1]
    # timed 4 times, yet y is what it was: a roofline leaves the buffers alone
    assert f32.from_bytes(client.read_one(y)).tolist() == [1.0] * n


def test_a_large_launch_is_counted_on_a_sample_of_cubes_and_scaled(client, peaks):
    n = 128 * 256
    r, _ = saxpy_roofline(client, n, sample_cubes=16, peaks=peaks)
    assert (r.cubes_counted, r.cubes_total) == (16, 128)
    assert (r.bytes, r.flops) == (12 * n, 2 * n)  # alike cubes: the estimate is exact
    assert any("16 of 128 cubes" in note for note in r.notes())


def matmul(client, kernel, n, peaks):
    a = client.create_from_slice(f32.as_bytes(np.ones(n * n, dtype=np.float32)))
    b = client.create_from_slice(f32.as_bytes(np.ones(n * n, dtype=np.float32)))
    c = client.empty(4 * n * n)
    return inspect.roofline(kernel.launch, client, CubeCount.Static(n // 16, n // 16),
                            CubeDim.new_2d(16, 16), BufferArg.from_raw_parts(a, n * n),
                            BufferArg.from_raw_parts(b, n * n), BufferArg.from_raw_parts(c, n * n),
                            n, repeats=2, peaks=peaks, label=kernel.__name__)


def test_tiling_a_matmul_keeps_its_flops_and_cuts_its_bytes(client, peaks):
    n = 32
    naive, tiled = matmul(client, matmul_naive, n, peaks), matmul(client, matmul_tiled, n, peaks)
    assert naive.flops == tiled.flops == 2 * n ** 3
    assert naive.bytes == 4 * (2 * n ** 3 + n * n)  # a row and a column per output
    assert tiled.bytes == 4 * (2 * n ** 3 // 16 + n * n)  # each input element once per tile
    assert tiled.intensity > 10 * naive.intensity
    assert naive.compulsory_bytes == tiled.compulsory_bytes == 3 * 4 * n * n
    chart = inspect.roofline_chart(naive, tiled, title="naive vs tiled")
    svg = chart.to_svg()
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    text = "".join(root.itertext())
    assert "matmul_naive" in text and "matmul_tiled" in text and "naive vs tiled" in text
    html = chart._repr_html_()
    assert "<svg" in html and "matmul_tiled" in html and "of roof" in html
    assert "matmul_naive" in str(chart)


def test_a_roofline_renders_alone_and_refuses_what_it_cannot_count(cpu_client):
    r, _ = saxpy_roofline(cpu_client, 4 * 256, peaks=inspect.device_peaks(cpu_client))
    root = ET.fromstring(r.to_svg())
    assert root.tag == f"{SVG}svg" and "saxpy" in "".join(root.itertext())
    assert "<svg" in r._repr_html_() and r.to_dict()["bound"] in ("memory", "compute")
    with pytest.raises(ValueError, match="repeats"):
        saxpy_roofline(cpu_client, 256, peaks=inspect.device_peaks(cpu_client), repeats=0)
    peaks = inspect.device_peaks(cpu_client)
    assert ET.fromstring(peaks.to_svg()).tag == f"{SVG}svg"


def test_the_roofline_widget_charts_lists_and_details_its_kernels(cpu_client):
    from cubelab.widgets import Roofline as RooflineWidget

    peaks = inspect.device_peaks(cpu_client)
    naive = matmul(cpu_client, matmul_naive, 32, peaks)
    tiled = matmul(cpu_client, matmul_tiled, 32, peaks)
    w = RooflineWidget(naive)
    assert "<svg" in w.chart.value and "matmul_naive" in w.table.value
    w.add(tiled)
    m = w.model()
    assert m["kernels"] == ["matmul_naive", "matmul_tiled"] and m["picked"] == 1
    assert "roofline of `matmul_tiled`" in w.details.value
    w.picker.value = 0
    assert "roofline of `matmul_naive`" in w.details.value
    assert w.table.value.count('class="cl-roofline-row"') == 2
    with pytest.raises(TypeError):
        RooflineWidget()


def test_work_counts_without_timing_and_the_roofline_is_built_on_it(client, peaks):
    from cubelab.inspect.roofline import bound_of

    n = 8 * 256
    x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(n, dtype=np.float32)))
    args = (2.0, BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(y, n))
    w = inspect.work(saxpy.launch, client, CubeCount.Static(8), CubeDim.new_1d(256), *args)
    assert (w.kernel, w.bytes, w.flops, w.sector_bytes, w.compulsory_bytes) == \
        ("saxpy", 12 * n, 2 * n, 12 * n, 12 * n)
    assert w.intensity == pytest.approx(1 / 6) and (w.cubes_counted, w.cubes_total) == (8, 8)
    assert w.bound(peaks) == bound_of(w.intensity, peaks.ridge)
    assert bound_of(0.1, 1.0) == "memory" and bound_of(1.0, 1.0) == "compute"
    assert f32.from_bytes(client.read_one(y)).tolist() == [1.0] * n
    r = inspect.roofline(saxpy.launch, client, CubeCount.Static(8), CubeDim.new_1d(256), *args,
                         repeats=1, peaks=peaks)
    assert (r.bytes, r.flops, r.sector_bytes, r.compulsory_bytes) == \
        (w.bytes, w.flops, w.sector_bytes, w.compulsory_bytes)


def test_the_flops_device_peaks_divides_by_are_the_flops_inspect_work_counts(cpu_client):
    """`_fma_throughput` divides by units × (steps × 32 + 17): four vec4 chains, an FMA (2
    flops) a lane a step. It held 4× too many while the chains were scalars (`Vector.new(x)`
    alone is the scalar x), so every device's compute roof was 4× too high (the H200's through
    CUDA read 234 TFLOP/s, 3.5× its FP32 peak). The instrument counts what runs."""
    from cubelab.inspect.peak_kernels import fma_chains

    out = cpu_client.empty(64 * 16)
    for steps in (2, 3):
        w = inspect.work(fma_chains.launch_unchecked, cpu_client, CubeCount.Static(1),
                         CubeDim.new_1d(64), 1.0, steps, BufferArg.from_raw_parts(out, 4 * 64))
        assert w.flops == 64 * (steps * 32 + 5 + 12)
