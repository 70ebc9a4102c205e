"""Launches, caches and keeps the books: seed 001's runtime, with one server per device kind.

Contract (DESIGN §1): the runtime receives kernel objects that satisfy `kernel_id.CubeKernel` —
they give their `id()` (the `KernelId`, the cache key) cheaply on any thread and `define()`
their IR on the device thread on a cache miss — and never imports the frontend. Its launch
interface, which the frontend's generated `launch` uses as CubeCL's macro output uses
cubecl-runtime, is `client.Client`, `kernel_id.KernelId` and `kernel_launcher.KernelLauncher`
(with `launch_args`: the cube count and bound buffers and scalars of one launch).

Where things are: `device.py` (Device, the device thread), `client.py` (the calling thread's
gates), `server.py` (the bookkeeping every backend shares: compile through
`compiler.pipeline`, the KernelId cache, failure ledger, streams, dry runs, capture),
`wgpu/` and `cpu/` (the backends), `events.py` (every observable fact, published on one bus per
client: views and the debug log are subscribers), `buffer_io.py` (the write-set fallback chain,
first link from `ir.analysis`), `execute_scope.py` (failure as per-buffer state).

This package imports only `cubelab.ir`, `cubelab.compiler` and `cubelab.errors` from cubelab,
and never IPython, ipywidgets or rich (`tests/test_layers.py`). Importing it requests no
adapter: the wgpu backend is imported when a wgpu device is first made.
"""
