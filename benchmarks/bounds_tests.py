"""What the explicit bounds tests cost (#28): the same kernel's WGSL with and without them.

Every access whose index may be out of range is tested in the WGSL (`ir/analysis.py`
`bounds_tests`, `compiler/wgsl.py`): a load becomes `select(T(), *p, i < len)`, a store
`if i < len { ... }` — the robust-access rule spelled out, because lavapipe computes a byte
offset in 32 bits (an index at or past 2^30 items wrapped back into the buffer) and CUDA has no
robust access at all. This runs two kernels through raw wgpu-py in the same process, each as
cubelab generates it and with the tests stripped from the text, interleaved:

- `saxpy` as the course writes it, `if ABSOLUTE_POS < x.len():` around the body — the read of
  `x` is proven in range by the guard, so only `y`'s read and write are tested;
- `saxpy_bare`, the same body with no guard: all three accesses tested (CubeCount exact, so no
  unit is out of range and both texts compute the same values).

    python benchmarks/bounds_tests.py [--items 16M] [--reps 20] [--rounds 5]

It prints µs per launch and the ratio tested / stripped (1.00 = free).
"""

from __future__ import annotations

import argparse
import math
import re

import numpy as np
from _common import RawWgpu, table

from cubelab import CubeDim
from cubelab import inspect as ci
from cubelab.prelude import ABSOLUTE_POS, Float, Size, Slice, SliceMut, Vector, cube, f32

F = Float.generic("F")
N = Size.generic("N")
UNITS = 256


@cube(launch=True)
def saxpy_bare(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):
    y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]


def strip_tests(wgsl: str) -> str:
    """The same WGSL with every bounds test taken out (the text cubelab emitted before #28)."""
    wgsl = re.sub(r"select\(([^()]*)\(\), (\(\*v\d+\)), v\d+ < [^)]*\)", r"\2", wgsl)
    return re.sub(r"if v\d+ < [^{]*\{ (.*) \}$", r"\1", wgsl, flags=re.M)


def main() -> None:
    from bandwidth import grid, parse_items

    from tests.fixtures.kernels import saxpy

    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=parse_items, default=None,
                    help="vec4 items (default 1M on a CPU adapter, 16M on a GPU)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    raw = RawWgpu()
    adapter = raw.adapter.info
    cpu_adapter = "cpu" in str(adapter.get("adapter_type", "")).lower() or \
        "llvmpipe" in str(adapter.get("device", "")).lower()
    items = args.items or ((1 << 20) if cpu_adapter else (16 << 20))
    floats = items * 4
    rx = raw.buffer(f32.as_bytes(np.arange(floats, dtype=np.float32) % 1024))
    ry = raw.buffer(f32.as_bytes(np.ones(floats, dtype=np.float32)))
    rows = []
    for kernel in (saxpy, saxpy_bare):
        comp = ci.compiled(ci.instance(kernel, f32, sizes=(4,), cube_dim=CubeDim.new_1d(UNITS)))
        tested = comp.wgsl.source
        stripped = strip_tests(tested)
        n_tests = tested.count(" < info.static_meta")
        assert " < info.static_meta" not in stripped.replace("< info.static_meta[0];", "")
        info = raw.buffer(comp.wgsl.info.pack({"f32": [1.0]}, [items, items]))
        count = grid(items)
        assert count[0] * count[1] * UNITS == items or kernel is saxpy, "saxpy_bare needs an exact grid"
        pipes = {}
        for label, text in (("tested", tested), ("stripped", stripped)):
            pipes[label] = raw.pipeline(text, comp.wgsl.entry, [(rx, False), (ry, True), (info, False)])

        def run(label: str) -> float:
            return raw.per_launch(*pipes[label], count, args.reps, ry)

        best = {"tested": math.inf, "stripped": math.inf}
        for _ in range(args.rounds):
            for label in best:
                best[label] = min(best[label], run(label))
        rows.append([kernel.__name__, str(n_tests), f"{best['stripped'] * 1e6:.1f}",
                     f"{best['tested'] * 1e6:.1f}", f"{best['tested'] / best['stripped']:.2f}"])
    print(table(f"bounds tests — saxpy on {items} vec4<f32>, {args.reps} launches, best of "
                f"{args.rounds}, {raw.adapter.info['device']}",
                ["kernel", "tests", "stripped µs", "tested µs", "tested / stripped"], rows))


if __name__ == "__main__":
    main()
