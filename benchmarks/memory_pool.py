"""Allocation cost: pooled vs fresh, on both runtimes.

Three ways to get `n` bytes on a device, each timed from the calling thread (so each includes
the hand-off to the device thread, as every allocation does):

- **pooled**: `client.empty(n)` right after a buffer of that size was dropped — the slice (or
  exclusive page) comes back from the pool;
- **new page**: `client.empty(n)` after `memory_cleanup()` gave every free page back — the pool
  must ask the driver for a page first (8 MiB for a sliced request);
- **driver buffer**: one driver allocation of exactly `n` bytes, freed again (`alloc_page`
  then `free_page` on the device thread) — what every allocation cost before the pool.

`create_from_slice` is timed pooled vs driver buffer too: there the write of the bytes is part
of both. Ratios < 1 mean pooling is cheaper. Best of `--rounds` rounds of `--reps` allocations.

    python benchmarks/memory_pool.py [--reps 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np
from _common import best_of, table

from cubelab import Device

SIZES = [(4 << 10, "4 KiB"), (1 << 20, "1 MiB"), (16 << 20, "16 MiB")]


def per_alloc(reps: int, step: Callable[[], float]) -> Callable[[], float]:
    def run() -> float:
        return sum(step() for _ in range(reps)) / reps
    return run


def measure(client: Any, reps: int, rounds: int) -> list[list[str]]:
    server, runner = client.device.server, client.device.runner
    align = client.properties().memory_alignment
    rows = []
    for n, label in SIZES:
        data = np.ones(n // 4, dtype=np.float32).tobytes()
        r = max(5, reps if n < (8 << 20) else reps // 10)

        def pooled() -> float:
            t0 = time.perf_counter()
            h = client.empty(n)
            t = time.perf_counter() - t0
            del h
            return t

        def new_page() -> float:
            client.memory_cleanup()
            t0 = time.perf_counter()
            h = client.empty(n)
            t = time.perf_counter() - t0
            del h
            return t

        def driver() -> float:
            size = max(align, -(-n // align) * align)
            t0 = time.perf_counter()
            page = runner.call(server.alloc_page, size)
            t = time.perf_counter() - t0
            runner.call(server.free_page, page)
            return t

        def pooled_write() -> float:
            t0 = time.perf_counter()
            h = client.create_from_slice(data)
            t = time.perf_counter() - t0
            del h
            return t

        def driver_write() -> float:
            size = max(align, -(-n // align) * align)
            t0 = time.perf_counter()
            page = runner.call(_alloc_and_write, server, size, data)
            t = time.perf_counter() - t0
            runner.call(server.free_page, page)
            return t

        for step in (pooled, new_page, driver, pooled_write, driver_write, pooled):
            for _ in range(3):  # warm up: the driver's first touch of a page is not the cost
                step()
        # from here on the pool holds one free slice / page of this size
        p = best_of(per_alloc(r, pooled), rounds)
        f = best_of(per_alloc(r, new_page), rounds)
        d = best_of(per_alloc(r, driver), rounds)
        pw = best_of(per_alloc(r, pooled_write), rounds)
        dw = best_of(per_alloc(r, driver_write), rounds)
        rows.append([label, f"{p * 1e6:.1f}", f"{f * 1e6:.1f}", f"{d * 1e6:.1f}",
                     f"{p / d:.2f}", f"{pw * 1e6:.1f}", f"{dw * 1e6:.1f}", f"{pw / dw:.2f}"])
    client.memory_cleanup()
    return rows


def _alloc_and_write(server: Any, size: int, data: bytes) -> Any:
    page = server.alloc_page(size)
    if isinstance(page, np.ndarray):
        page[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    else:
        server.queue.write_buffer(page, 0, data)
    return page


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    header = ["size", "pooled empty µs", "new-page empty µs", "driver buffer µs",
              "pooled / driver", "pooled create µs", "driver create µs", "pooled / driver"]
    for kind in ("wgpu", "cpu"):
        try:
            client = getattr(Device, kind)().client()
        except Exception as exc:  # noqa: BLE001 - a machine without wgpu still measures cpu
            print(f"## memory_pool — {kind}: unavailable ({exc})\n")
            continue
        rows = measure(client, args.reps, args.rounds)
        print(table(f"memory_pool — allocation cost, {client.name()} "
                    f"({client.properties().adapter})", header, rows))
        print()
    print("(pooled: the slice of a buffer just dropped; new page: after memory_cleanup(); "
          "driver buffer: one driver allocation of exactly that size, as before the pool)")


if __name__ == "__main__":
    main()
