"""A semester of re-run cells keeps the kernel process's memory bounded (#28), on both runtimes.

A student re-runs a cell that defines a kernel, launches it and reads the result, again and
again, editing the kernel between runs: every edit is a new KernelId. Each compiled kernel the
server keeps holds its IR, its sources and the backend's pipeline (measured ≈ 160 KB per kernel
on lavapipe, ≈ 43 KB on the CPU runtime), so the unbounded pipeline cache grew by that per edit
for the life of the process. It is capped (`Server.pipeline_cache_size`, default 256; the kernel
compiled longest ago is dropped, `CacheEvicted`). The test runs with a small cap and a smaller
count than a semester: the cache never holds more than the cap, no evicted entry stays alive,
and after warm-up the resident memory grows by at most 5 MiB per 1 000 re-runs in its best
window (a one-off jump of the allocator is not growth). The cells are compiled under their own
file names and registered in `linecache` as ipykernel does (by the cell's source), and dropped
from it after the run: the lines of a cell are IPython's to keep, not cubelab's."""

from __future__ import annotations

import gc
import linecache
import os

import pytest

from cubelab.runtime import events as ev
from cubelab.runtime.server import PipelineEntry, Server

CELL = """
import numpy as np
from cubelab.prelude import *
from cubelab import BufferArg, CubeCount, CubeDim

@cube(launch=True)
def scale(x: Slice[f32], y: SliceMut[f32], a: f32):
    if ABSOLUTE_POS < x.len():
        y[ABSOLUTE_POS] = x[ABSOLUTE_POS] * a + f32({k})

x = client.create_from_slice(f32.as_bytes(np.arange(64, dtype=np.float32)))
y = client.empty(256)
scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(64), BufferArg.from_raw_parts(x, 64),
             BufferArg.from_raw_parts(y, 64), 2.0)
assert f32.from_bytes(client.read_one(y))[3] == 6.0 + {k}
"""
CAP = 8


def rerun(client, k: int) -> None:  # type: ignore[no-untyped-def]
    src = CELL.format(k=k)
    name = f"/tmp/ipykernel_cubelab_semester/{abs(hash(src))}.py"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    try:
        exec(compile(src, name, "exec"), {"client": client})  # noqa: S102 - the test's own cell
    finally:
        linecache.cache.pop(name, None)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.fixture
def small_cache(client):  # type: ignore[no-untyped-def]
    server = client.device.server
    saved, server.pipeline_cache_size = server.pipeline_cache_size, CAP
    yield server
    server.pipeline_cache_size = saved


def test_a_semester_of_edited_reruns_keeps_the_cache_and_the_memory_bounded(client, small_cache):  # type: ignore[no-untyped-def]
    with client.events.record(ev.CacheEvicted) as evicted:
        for k in range(4 * CAP):  # warm-up: the cache fills, the allocator settles
            rerun(client, k)
        windows = []
        k = 4 * CAP
        for _ in range(3):
            gc.collect()
            client.sync()
            before = rss_mib()
            for _ in range(60):
                rerun(client, k)
                k += 1
            gc.collect()
            client.sync()
            windows.append(rss_mib() - before)
            assert len(small_cache.pipelines) <= CAP
    assert len(evicted.of(ev.CacheEvicted)) >= k - CAP
    objects = gc.get_objects()
    cached = {id(e) for o in objects if isinstance(o, Server) for e in o.pipelines.values()}
    stale = [o for o in objects if isinstance(o, PipelineEntry) and id(o) not in cached]
    assert len(stale) <= 2, f"{len(stale)} evicted kernels still alive"  # the last launch's
    assert min(windows) <= 60 * 5 / 1000, windows  # <= 5 MiB per 1 000 re-runs


def test_an_evicted_kernel_compiles_again_and_is_right(client, small_cache):  # type: ignore[no-untyped-def]
    with client.events.record(ev.CompileFinished) as compiled:
        for k in range(CAP + 2):
            rerun(client, k)
        rerun(client, 0)  # the first one was evicted: it compiles again, and is right
    assert len(compiled.of(ev.CompileFinished)) == CAP + 3
