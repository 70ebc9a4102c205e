"""`cubelab demo`: seed 000's experiments in a terminal — saxpy, the quiz (with the cache table
and why each compile happened), and the out-of-bounds rows under both CheckedIo rules.

Every number printed comes from running the kernels, on wgpu when an adapter exists (lavapipe
counts) or on the CPU runtime.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _oob_rows(client: Any) -> list[tuple[str, str, str]]:
    from cubelab.exercises.seed000 import add
    from cubelab.ir.passes import DEFAULT_CHECKED_IO
    from cubelab.prelude import BufferArg, CubeCount, CubeDim, f32

    x = np.arange(1, 7, dtype=np.float32)
    y = np.arange(10, 70, 10, dtype=np.float32)
    rows = []
    for rule in ("cubecl-0.11.3", "fixed"):
        client.set_compilation_options(checked_io=rule)
        for checked in (True, False):
            xh, yh = client.create_from_slice(f32.as_bytes(x)), client.create_from_slice(f32.as_bytes(y))
            out = client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
            launcher = add.launch if checked else add.launch_unchecked
            launcher[f32](client, CubeCount.Static(1), CubeDim.new_1d(8),
                          BufferArg.from_raw_parts(xh, 6), BufferArg.from_raw_parts(yh, 6),
                          BufferArg.from_raw_parts(out, 8), False)
            vals = f32.from_bytes(client.read_one(out)).tolist()
            rows.append((rule, f"checked={str(checked).lower()}",
                         "[" + ", ".join(f"{v:g}" for v in vals) + "]"))
    client.set_compilation_options(checked_io=DEFAULT_CHECKED_IO)
    return rows


def run_demo(out: Callable[[Any], None], device: str | None = None) -> None:
    from cubelab import inspect as I
    from cubelab.exercises import HOW_MANY_COMPILES
    from cubelab.exercises.seed000 import saxpy
    from cubelab.inspect.live import plural
    from cubelab.inspect.views import CodeView, NoteView, TableView
    from cubelab.prelude import BufferArg, CubeCount, CubeDim, Device, f32

    dev = {"cpu": Device.cpu, "wgpu": Device.wgpu}.get(device or "", Device.default)()
    client = dev.client()
    out(NoteView([f"device = {dev!r}, runtime = {client.name()!r}"], title="cubelab demo — seed 000"))

    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, 2.0,
                      BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    ys = f32.from_bytes(client.read_one(y)).tolist()
    out(NoteView([f"saxpy y = [{', '.join(f'{v:g}' for v in ys)}]"], title="1. saxpy"))
    out(CodeView(I.expanded(saxpy), "python", title="2. what @cube generated: saxpy.expand"))

    out(CodeView(HOW_MANY_COMPILES.code, "python",
                 title=f"3. {HOW_MANY_COMPILES.title}"))
    with I.CacheStats(client.events) as stats:
        report = HOW_MANY_COMPILES.run(client)
        snap = stats.snapshot()
    out(I.view(snap))
    out(TableView(["#", "compile log", "why a new KernelId"],
                  [(i, line, why) for i, (line, why) in enumerate(zip(report.log, report.why), 1)],
                  title=f"answer: {plural(report.compiles, 'compile')}, "
                        f"{plural(report.hits, 'cache hit')}"))

    out(TableView(["CheckedIo rule", "launch", "out (x, y: 6 items; out: 8; 8 units)"],
                  _oob_rows(client),
                  title="4. out of bounds: units 6 and 7 read x[6], x[7]",
                  note="cubecl-0.11.3: the pass never fires on global buffers, both modes read 0; "
                       "fixed: checked launches clamp to len-1 (66)"))
