"""Differential fuzz of the two runtimes: random kernels on wgpu and on the CPU runtime must give
the same values (#28: "the runtimes never disagree").

    python benchmarks/runtime_fuzz.py [--seeds LO:HI] [--show N]

Each kernel (`kernel_source(seed)`) is 2 cubes of 64 units over inputs `x` (f32: zeros of both
signs, infinities, NaN among moderate values), `k` (u32: small ints, zeros and values at or past
2^30) and writes every unit's `out[i]` (f32) and `outu[i]` (u32) — no two units write one item,
so no result depends on a race. Its body draws, at random, from the places where the runtimes
used to disagree:

- global reads and writes through indices at or past 2^30 items (`FAR + i`, `2^31 + i`,
  `2^32 - 1 - i`, an index read from `k`), unguarded, under `if i < x.len()`, and under the
  checked launch's clamp (`checked_io="fixed"` for a quarter of the kernels);
- a local `Array` and a `SharedMemory` (1-D and 2-D) read and written at runtime indices inside
  and past their ends, writes only to the unit's own items or far out (dropped), reads after a
  barrier;
- zero divisors the driver can prove: `x / f32(0.0)`, a vector by a splat of zero, `x / a[j]` of a
  fresh local `Array`, `x % f32(0.0)`, `x % inf`, integer `// 0` and `% 0`;
- plain arithmetic, min/max, select, comparisons, saturating float→int casts, shifts.

The verdict per kernel compares every output item: u32 exactly; f32 by class (both NaN, or both
the same infinity) and otherwise within 1e-4 relative + 1e-3 absolute (lavapipe may reassociate
float additions and fuse multiply-adds — docs/language.md "Floats" — which the CPU runtime does
not; no operation here is a transcendental, whose last bits differ by design). An error must be
the same error (class and first line) on both. Exit status 1 when a kernel disagrees; the
disagreeing kernels' sources are printed (`--show`).
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import ROOT  # noqa: F401 - puts the repository on sys.path

UNITS, CUBES = 64, 2
N = UNITS * CUBES
# indices at or past 2^30 items: the first three are past the end for every unit (so a write
# through them races with nothing), the others wrap or read `k` (reads only)
FARS = ["u32(1073741824) + i", "u32(2147483648) + i", "u32(4294967295) - i",
        "u32(1073741824) * (i + u32(1))", "k[i]", "k[i] + u32(1073741824)"]


EDGES = 4  # per unit: the items of `edge` that hold one zero-divisor result each


def kernel_source(seed: int) -> tuple[str, str, tuple[bool, bool]]:
    """(name, source, (fixed rule?, checked launch?)) of the random kernel `seed`."""
    r = random.Random(seed)
    name = f"fuzz{seed}"
    body: list[str] = ["    i = ABSOLUTE_POS", "    u = UNIT_POS", "    acc = f32(0.0)",
                       "    accu = u32(0)"]
    la = r.choice([4, 6, 8])
    body.append(f"    a = Array[f32]({la})")
    uses_shared = r.random() < 0.5
    rows = r.choice([1, 2])
    if uses_shared:
        body.append(f"    s = SharedMemory[f32](({rows}, {UNITS}))" if rows == 2
                    else f"    s = SharedMemory[f32]({UNITS})")
        body.append(f"    s[{'u32(0), ' if rows == 2 else ''}u] = x[i] + f32(1.0)")
        body.append("    sync_cube()")
    edges = 0

    def fval() -> str:
        return r.choice(["x[i]", "x[i] * f32(0.5)", "acc", "f32(2.5)", "f32(i)", "-x[i]",
                         "f32(k[i] & u32(7))"])

    def uval() -> str:
        return r.choice(["k[i]", "accu", "i", "u32(3)", "k[i] >> u32(3)", "u * u32(5)"])

    def edge(expr: str) -> None:
        # a zero-divisor result goes to an item of its own: its IEEE class is what both runtimes
        # must agree on (arithmetic *on* an inf or NaN is WGSL's to fold: docs/language.md)
        nonlocal edges
        if edges < EDGES:
            body.append(f"    edge[i * u32({EDGES}) + u32({edges})] = {expr}")
            edges += 1

    for _ in range(r.randint(2, 8)):
        kind = r.choice(["far_read", "far_read", "far_write", "guarded", "local", "local",
                         "shared", "div", "div", "rem", "idiv", "arith", "cast", "vector"])
        if kind == "far_read":
            body.append(f"    acc += x[{r.choice(FARS)}]")
        elif kind == "far_write":
            body.append(f"    out[{r.choice(FARS[:3])}] = {fval()}")
        elif kind == "guarded":
            idx = r.choice(["i", "i + u32(1)", "i * u32(2)", f"u32({N - 1}) - i"])
            body += [f"    if {idx} < x.len():", f"        acc += x[{idx}] * f32(0.25)"]
        elif kind == "local":
            idx = r.choice([f"u32({r.randrange(la)})", f"u % u32({la})", f"u + u32({la - 2})",
                            f"k[i] % u32({la + 3})", "k[i]", f"u32({la - 1}) + (u & u32(3))"])
            if r.random() < 0.5:
                body.append(f"    a[{idx}] = {fval()}")
            body.append(f"    acc += a[{r.choice([idx, f'u32({r.randrange(la)})'])}]")
        elif kind == "shared" and uses_shared:
            row = "u32(1), " if rows == 2 else ""
            idx = r.choice([f"(u + u32({r.randrange(1, 8)})) % u32({UNITS})",
                            f"u + u32({r.randrange(1, 70)})", "k[i]", f"u32({UNITS})", "u"])
            if r.random() < 0.5:  # a write only to this unit's own item, or far past the end
                target = r.choice(["u", "u + u32(4096)", "k[i] + u32(1073741824)"])
                body += ["    sync_cube()", f"    s[{row}{target}] = {fval()}", "    sync_cube()"]
            body.append(f"    acc += s[{row}{idx}]")
        elif kind == "div":
            edge(r.choice([f"{fval()} / f32(0.0)", f"{fval()} / f32(-0.0)",
                           f"{fval()} / a[u32({r.randrange(la)})]",
                           f"{fval()} / (x[i] - x[i])", f"f32(0.0) / a[u32({r.randrange(la)})]"]))
            body.append(f"    acc += {fval()} / (abs(x[i]) + f32(1.0))")
        elif kind == "rem":
            edge(r.choice([f"{fval()} % f32(0.0)", f"{fval()} % a[u32({r.randrange(la)})]",
                           f"{fval()} % f32(float('inf'))", f"f32(float('inf')) % {fval()}"]))
            body.append(f"    acc += {fval()} % f32(2.5)")
        elif kind == "idiv":
            body.append(r.choice([f"    accu += {uval()} // u32(0)", f"    accu += {uval()} % u32(0)",
                                  f"    accu += {uval()} // (k[i] & u32(3))",
                                  f"    accu ^= {uval()} % (k[i] | u32(1))"]))
        elif kind == "arith":
            op = r.choice(["+", "-", "*"])
            body.append(r.choice([f"    acc = acc {op} {fval()} * f32(0.125)",
                                  f"    acc = max(acc, {fval()})", f"    acc = min(acc, {fval()})",
                                  f"    accu = accu {op} {uval()}",
                                  f"    accu = accu ^ ({uval()} << (k[i] & u32(31)))",
                                  f"    acc = select({fval()} > {fval()}, acc, {fval()})"]))
        elif kind == "cast":
            body.append(r.choice(["    accu += u32(acc)", "    accu += u32(i32(acc))",
                                  "    accu += u32(x[i] * f32(1e10))"]))
        else:  # a vector divided by a splat of zero, or by a fresh Array's item
            j = r.randrange(4)
            edge(r.choice([
                f"(Vector[f32, 4].new(x[i]) / Vector[f32, 4].new(f32(0.0)))[{j}]",
                f"(Vector[f32, 4].new(x[i]) / Vector[f32, 4].new(a[u32({r.randrange(la)})]))[{j}]",
                f"(Vector[f32, 4].new(x[i]) % Vector[f32, 4].new(f32(0.0)))[{j}]"]))
    body += ["    out[i] = acc", "    outu[i] = accu"]
    fixed = r.random() < 0.25
    checked = r.random() < 0.7 or fixed
    launch = "launch=True" if checked else "launch_unchecked=True"
    src = (f"@cube({launch})\ndef {name}(x: Slice[f32], k: Slice[u32], out: SliceMut[f32], "
           f"outu: SliceMut[u32], edge: SliceMut[f32]):\n" + "\n".join(body) + "\n")
    return name, src, (fixed, checked)


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2028)
    x = rng.uniform(-100, 100, N).astype(np.float32)
    x[::9], x[4::13] = 0.0, -0.0  # finite: arithmetic on inf and NaN is WGSL's to fold
    k = rng.integers(0, 64, N).astype(np.uint32)
    k[::5] = 0
    k[3::7] = rng.integers(2**30, 2**32 - 1, len(k[3::7]), dtype=np.uint64).astype(np.uint32)
    return x, k


def write_module(seeds: range, path: Path) -> dict[str, tuple[int, tuple[bool, bool]]]:
    parts = ["from cubelab.prelude import *\n"]
    meta: dict[str, tuple[int, tuple[bool, bool]]] = {}
    for seed in seeds:
        name, source, how = kernel_source(seed)
        parts.append(source)
        meta[name] = (seed, how)
    path.write_text("\n".join(parts))
    return meta


def run_one(client: Any, kernel: Any, how: tuple[bool, bool], x: np.ndarray,
            k: np.ndarray) -> Any:
    from cubelab import BufferArg, CubeCount, CubeDim
    from cubelab.prelude import f32, u32

    fixed, checked = how
    rule = "fixed" if fixed else "cubecl-0.11.3"
    if client.compilation_options().checked_io != rule:
        client.set_compilation_options(checked_io=rule)
    xb = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(x)), N)
    kb = BufferArg.from_raw_parts(client.create_from_slice(u32.as_bytes(k)), N)
    out = client.create_from_slice(f32.as_bytes(np.full(N, 7, np.float32)))
    outu = client.create_from_slice(u32.as_bytes(np.full(N, 7, np.uint32)))
    edge = client.create_from_slice(f32.as_bytes(np.full(N * EDGES, 7, np.float32)))
    launch = kernel.launch if checked else kernel.launch_unchecked
    try:
        launch(client, CubeCount.Static(CUBES), CubeDim.new_1d(UNITS), xb, kb,
               BufferArg.from_raw_parts(out, N), BufferArg.from_raw_parts(outu, N),
               BufferArg.from_raw_parts(edge, N * EDGES))
        return (np.concatenate([f32.from_bytes(client.read_one(out)),
                                f32.from_bytes(client.read_one(edge))]),
                u32.from_bytes(client.read_one(outu)).copy())
    except Exception as exc:  # noqa: BLE001 - an error is a result to compare, too
        cause = getattr(exc, "cause", exc)
        return f"{type(cause).__name__}: {str(cause).splitlines()[0][:160]}"


def agree(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    (fa, ua), (fb, ub) = a, b
    if not np.array_equal(ua, ub):
        return False
    nan = np.isnan(fa) & np.isnan(fb)
    inf = np.isinf(fa) | np.isinf(fb)
    same_inf = inf & (fa == fb)
    finite = ~np.isnan(fa) & ~np.isnan(fb) & ~inf
    close = np.isclose(fa, fb, rtol=1e-4, atol=1e-3) & finite
    return bool(np.all(nan | same_inf | close))


def main() -> None:
    from cubelab import Device

    lo, hi = (int(v) for v in (sys.argv[sys.argv.index("--seeds") + 1].split(":")
                              if "--seeds" in sys.argv else ("0", "5000")))
    show = int(sys.argv[sys.argv.index("--show") + 1]) if "--show" in sys.argv else 5
    path = Path(tempfile.mkdtemp(prefix="cubelab-runtime-fuzz-")) / "fuzz_kernels.py"
    meta = write_module(range(lo, hi), path)
    spec = importlib.util.spec_from_file_location("fuzz_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    wgpu, cpu = Device.wgpu().client(), Device.cpu().client()
    x, k = inputs()
    differ: list[tuple[str, Any, Any]] = []
    errors = 0
    t0 = time.perf_counter()
    for n, (name, (seed, how)) in enumerate(meta.items(), 1):
        kernel = getattr(module, name)
        got_w, got_c = run_one(wgpu, kernel, how, x, k), run_one(cpu, kernel, how, x, k)
        errors += isinstance(got_c, str)
        if not agree(got_w, got_c):
            differ.append((name, got_w, got_c))
        if n % 500 == 0:
            print(f"  {n} kernels, {len(differ)} disagree ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
            wgpu.clear_cache()
            cpu.clear_cache()
    for c in (wgpu, cpu):
        c.set_compilation_options(checked_io="cubecl-0.11.3")
    print(f"{len(meta)} kernels (seeds {lo}:{hi}) on {wgpu.properties().adapter} and the CPU "
          f"runtime: {len(differ)} disagree, {errors} raise the same error on both; "
          f"{time.perf_counter() - t0:.0f} s")
    for name, w, c in differ[:show]:
        seed = meta[name][0]
        print(f"\n--- {name} (fixed rule, checked: {meta[name][1]})\n{kernel_source(seed)[1]}")
        for label, got in (("wgpu", w), ("cpu", c)):
            print(f"  {label}: {got if isinstance(got, str) else (got[0][:8], got[1][:8])}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
