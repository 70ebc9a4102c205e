"""The loop guard on a real device: what a runaway loop costs before it ends, and what the guard
costs a long but finite one.

Three rows, on the wgpu device (`--cpu` adds the CPU runtime with a smaller `--long`):

- **runaway** — an infinite `while` launched with `launch` (checked) over `--cubes` × 256 units
  under the default budget (2^28 iterations per unit): the seconds until `read_one` raises, what
  it raised (a `BufferFailure` whose cause is `LoopGuardError`, naming the loop's line), and
  whether saxpy on the same client is right afterwards.
- **long finite loop** — one unit runs `--long` (default 10^8) iterations of a u32 LCG; the
  result is compared with the jump-ahead computed on the host. Guarded (default budget) and
  unguarded (`launch_unchecked`) are timed in the same run: the ratio is the guard's cost.
  lavapipe ends every loop after 65 535 iterations, so there the guarded launch fails loudly
  (that is the guard's job) and the unguarded one is silently truncated.

    python benchmarks/loop_guard.py [--cubes 132] [--long 100000000] [--cpu]
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
from _common import table

from cubelab import BufferArg, BufferFailure, CubeCount, CubeDim, Device
from cubelab.errors import LoopGuardError
from cubelab.prelude import ABSOLUTE_POS, SliceMut, cube, f32, u32

from tests.fixtures.failing_kernels import forever
from tests.fixtures.kernels import saxpy

LCG_A, LCG_C = 1664525, 1013904223
MASK = (1 << 32) - 1


@cube(launch=True, launch_unchecked=True)
def lcg(out: SliceMut[u32], n: u32):
    if ABSOLUTE_POS == 0:
        x = u32(12345)
        for _ in range(n):
            x = x * u32(1664525) + u32(1013904223)
        out[0] = x


def lcg_host(seed: int, n: int) -> int:
    """x -> a x + c applied n times, by squaring the affine map (O(log n))."""
    a, c, ra, rc = LCG_A, LCG_C, 1, 0
    while n:
        if n & 1:
            ra, rc = (a * ra) & MASK, (a * rc + c) & MASK
        a, c = (a * a) & MASK, (a * c + c) & MASK
        n >>= 1
    return (ra * seed + rc) & MASK


def saxpy_right(client) -> bool:  # type: ignore[no-untyped-def]
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
    saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0,
                      BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    got = f32.from_bytes(client.read_one(y))
    return bool(np.array_equal(got, 2 * np.arange(16, dtype=np.float32) + 1))


def _where(exc: Exception) -> str:
    m = re.search(r"loop at (\S+?):(\d+):(\d+)", str(exc))
    return f", names the loop at {m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}" if m else ""


def run_runaway(client, cubes: int) -> list[str]:  # type: ignore[no-untyped-def]
    units = cubes * 256
    out = client.empty(4 * units)
    t0 = time.perf_counter()
    forever.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(256),
                   BufferArg.from_raw_parts(out, units))
    try:
        client.read_one(out)
        what = "returned normally (wrong: nothing stopped the loop)"
    except BufferFailure as exc:
        what = f"BufferFailure ({type(exc.cause).__name__}){_where(exc)}"
        if not isinstance(exc.cause, LoopGuardError):
            what += " — not the loop guard"
    seconds = time.perf_counter() - t0
    return [f"runaway, {cubes}×256 units", f"{seconds:.2f} s", what, str(saxpy_right(client))]


def run_long(client, n: int) -> list[list[str]]:  # type: ignore[no-untyped-def]
    want = lcg_host(12345, n)
    rows = []
    times: dict[str, float] = {}
    for mode in ("launch", "launch_unchecked"):
        out = client.empty(4)
        t0 = time.perf_counter()
        getattr(lcg, mode)(client, CubeCount.Static(1), CubeDim.new_1d(1),
                           BufferArg.from_raw_parts(out, 1), n)
        try:
            got = int(u32.from_bytes(client.read_one(out))[0])
            verdict = "right" if got == want else f"WRONG: {got} (want {want}): truncated"
        except BufferFailure as exc:
            verdict = f"failed loudly ({type(exc.cause).__name__}){_where(exc)}"
        times[mode] = time.perf_counter() - t0
        rows.append([f"{n:,} iterations, {mode}", f"{times[mode]:.3f} s", verdict, ""])
    rows.append(["guarded / unguarded", f"{times['launch'] / times['launch_unchecked']:.2f}×", "",
                 ""])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cubes", type=int, default=132)
    ap.add_argument("--long", type=int, default=100_000_000)
    ap.add_argument("--cpu", action="store_true", help="also the CPU runtime (--long / 1000)")
    args = ap.parse_args()
    devices = [("wgpu", Device.wgpu(), args.long)]
    if args.cpu:
        devices.append(("cpu", Device.cpu(), max(args.long // 1000, 70_000)))
    for label, device, n in devices:
        client = device.client()
        # warm: compile both kernels once (a first launch's time includes the driver's compile)
        run_long(client, 10)
        rows = [run_runaway(client, args.cubes if label == "wgpu" else 1)] + run_long(client, n)
        print(table(f"Loop guard — {client.name()}",
                    ["case", "wall", "outcome", "saxpy right after"], rows))
        print()


if __name__ == "__main__":
    main()
