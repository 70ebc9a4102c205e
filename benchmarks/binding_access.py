"""What declaring every buffer `read_write` costs: the same saxpy pass with `x` bound read-only
(`var<storage, read>`, a `read-only-storage` layout entry) and read-write (`read_write`,
`storage`), through raw wgpu-py, interleaved rounds, best of each.

cubelab declares every buffer binding `read_write` because pooled slices of one page may be
bound by one dispatch both as a `Slice` and as a `SliceMut`, and WebGPU refuses a buffer in
both usages at once (docs/runtime.md, "Memory"). A driver may use a read-only binding for a
cheaper load path (a non-coherent cache); this measures whether it does here.

    python benchmarks/binding_access.py [--rounds 7] [--reps 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import table

UNITS = 256
WGSL = """
@group(0) @binding(0) var<storage, {mode}> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {{
    let i = g.x + g.y * n.x * 256u;
    if (i < arrayLength(&y)) {{ y[i] = 2.0 * x[i] + y[i]; }}
}}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    limits = adapter.limits
    device = adapter.request_device_sync(required_limits={
        "max-storage-buffer-binding-size": limits["max-storage-buffer-binding-size"],
        "max-buffer-size": limits["max-buffer-size"]})
    U, T = wgpu.BufferUsage, wgpu.BufferBindingType
    cap = min(limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]) // 4
    sizes = [n for n in (1 << 20, 1 << 24, 1 << 26) if n <= cap]
    pipes = {}
    for mode, ty in (("read", T.read_only_storage), ("read_write", T.storage)):
        bgl = device.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": ty}},
            {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE,
             "buffer": {"type": T.storage}}])
        module = device.create_shader_module(code=WGSL.format(mode=mode))
        pipe = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[bgl]),
            compute={"module": module, "entry_point": "main"})
        pipes[mode] = (pipe, bgl)
    rows = []
    for n in sizes:
        x = device.create_buffer_with_data(data=np.ones(n, np.float32).tobytes(), usage=U.STORAGE)
        y = device.create_buffer_with_data(data=np.ones(n, np.float32).tobytes(),
                                           usage=U.STORAGE | U.COPY_SRC)
        cubes = n // 4 // UNITS
        grid = (min(cubes, 65535), -(-cubes // 65535), 1)
        best = {}
        for _ in range(args.rounds):
            for mode, (pipe, bgl) in pipes.items():
                group = device.create_bind_group(layout=bgl, entries=[
                    {"binding": 0, "resource": {"buffer": x, "offset": 0, "size": x.size}},
                    {"binding": 1, "resource": {"buffer": y, "offset": 0, "size": y.size}}])
                enc = device.create_command_encoder()
                p = enc.begin_compute_pass()
                p.set_pipeline(pipe)
                p.set_bind_group(0, group)
                for _ in range(args.reps):
                    p.dispatch_workgroups(*grid)
                p.end()
                device.queue.read_buffer(y, 0, 4)  # idle before timing
                t0 = time.perf_counter()
                device.queue.submit([enc.finish()])
                device.queue.read_buffer(y, 0, 4)
                t = (time.perf_counter() - t0) / args.reps
                best[mode] = min(best.get(mode, t), t)
        gbs = {m: 3 * n * 4 / t / 1e9 for m, t in best.items()}
        rows.append([f"{n // (1 << 20)}M f32", f"{best['read'] * 1e3:.3f}",
                     f"{best['read_write'] * 1e3:.3f}", f"{gbs['read']:.1f}",
                     f"{gbs['read_write']:.1f}", f"{best['read_write'] / best['read']:.2f}"])
    print(table(f"binding_access — saxpy pass, x read vs read_write, {adapter.info['device']}",
                ["size", "read ms", "read_write ms", "read GB/s", "read_write GB/s",
                 "read_write / read"], rows))


if __name__ == "__main__":
    main()
