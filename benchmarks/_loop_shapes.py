"""The loops students write, as benchmark cases: the same launches written two ways, and the
three other shapes of the course's loops.

- **hoisted**: every argument built once, before the loop (`count`, `dim`, `BufferArg`s), the
  bound launcher too (`launch = saxpy.launch[f32]`);
- **fresh**: the README's idiom, everything built in the call, every launch:
  `saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, 2.0,
  BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))`;
- **ping-pong**: one kernel whose buffers swap roles every launch (`a → b`, then `b → a`);
- **two kernels**: two kernels alternating on the same buffers (`scale a → b`, then `inc b`);
- **scalar**: the fresh idiom with a scalar that changes every launch (`a = float(i)`, `i`
  counting on across rounds: no value comes twice);
- **view**: the fresh idiom on a 16-float view of two large handles (what a loop over one big
  allocation launches).

Every shape but the first builds its arguments in the call. `measure` times them in interleaved
rounds (each round runs every shape once, starting with another one each round, so a busy
machine slows all of them alike) and keeps the best round of each: wall time and the process's
CPU time (every thread: cubelab's two and the driver's), per launch.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32

Shape = tuple[str, str, Callable[[int], None]]


def shapes(client: Any, big_bytes: int = 64 << 20) -> list[Shape]:
    """(key, label, go) per shape; `go(n)` issues n launches (no sync)."""
    from tests.fixtures.kernels import saxpy
    from tests.fixtures.seed001_kernels import inc, scale

    def floats(values: Any) -> Any:
        return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))

    x, y = floats(np.arange(16)), floats(np.ones(16))
    a, b = floats(np.ones(16)), floats(np.zeros(16))
    bx, by = client.zeros(big_bytes), client.zeros(big_bytes)
    count, dim = CubeCount.Static(1, 1, 1), CubeDim.new_1d(4)
    xa, ya = BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16)
    launch = saxpy.launch[f32]
    raw = BufferArg.from_raw_parts

    def hoisted(n: int) -> None:
        for _ in range(n):
            launch(client, count, dim, 4, 2.0, xa, ya)

    def fresh(n: int) -> None:
        for _ in range(n):
            saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, 2.0,
                              BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))

    def ping_pong(n: int) -> None:
        for _ in range(n // 2):
            scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(16), raw(a, 16),
                         raw(b, 16), 2.0)
            scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(16), raw(b, 16),
                         raw(a, 16), 0.5)

    def two_kernels(n: int) -> None:
        for _ in range(n // 2):
            scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(16), raw(a, 16),
                         raw(b, 16), 2.0)
            inc.launch(client, CubeCount.Static(1), CubeDim.new_1d(16), raw(b, 16))

    values = itertools.count()

    def scalar(n: int) -> None:  # a value no launch had before (no cache can hold them all)
        for i in itertools.islice(values, n):
            saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4,
                              float(i), BufferArg.from_raw_parts(x, 16),
                              BufferArg.from_raw_parts(y, 16))

    def view(n: int) -> None:
        for _ in range(n):
            saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, 2.0,
                              BufferArg.from_raw_parts(bx, 16), BufferArg.from_raw_parts(by, 16))

    mib = big_bytes >> 20
    return [
        ("hoisted", "saxpy(16), arguments built once before the loop", hoisted),
        ("fresh", "saxpy(16), arguments built in the call (the README's loop)", fresh),
        ("ping-pong", "scale a → b, then b → a (arguments in the call)", ping_pong),
        ("two kernels", "scale a → b, then inc b (arguments in the call)", two_kernels),
        ("scalar", "saxpy(16) with a = float(i), a new value every launch (in the call)",
         scalar),
        ("view", f"saxpy on 16-float views of two {mib} MiB handles (arguments in the call)",
         view),
    ]


def measure(client: Any, cases: list[Shape], n: int, rounds: int) -> dict[str, tuple[float, float]]:
    """key -> (wall s, process CPU s) per launch, each the best of `rounds` interleaved rounds
    of `n` launches and one sync."""
    for _, _, go in cases:  # compile, and let every cache see each shape once
        go(4)
    client.sync()
    best = {key: (float("inf"), float("inf")) for key, _, _ in cases}
    for r in range(rounds):
        # each round starts with another shape: none always runs right after the sync that
        # ends a round, or first
        for key, _, go in cases[r % len(cases):] + cases[:r % len(cases)]:
            t0, c0 = time.perf_counter(), time.process_time()
            go(n)
            client.sync()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            w, c = best[key]
            best[key] = (min(w, wall / n), min(c, cpu / n))
    return best
