"""Differential fuzz of the CPU runtime: random shared-memory kernels, result bits compared with a
baseline checkout's CPU runtime (issue #17: the speed work must not change one value).

    python benchmarks/cpu_fuzz.py [--seeds LO:HI] [--base COMMIT]

Each kernel (`kernel_source`) is a cube of 256 units (1-D) or 16×16 (2-D), or 64 units, over 72
cubes run in chunks of 8 192 lanes (two full chunks and a short one: the memo, the hoisted values
and the unmemoized path all run). It writes shared memory through an injective unit pattern
(UNIT_POS, a reversal, `(u * 5 + 3) % 256`, a transpose, `u + 1` with a halo) and then mixes, at
random: reads through slices, strided and broadcast patterns and permutations, an unrolled loop,
an unrolled dot product (run cube-minor as one step: `steps.accumulate`, forced on for the fuzz's
32-cube chunks), a read of x through an affine index (a strided view, or 0 past its end),
branches on unit-only, per-lane and per-value conditions (some compacted), a
tree reduction, and a value read before its item is overwritten between barriers. No kernel
races. The input holds zeros of both signs, infinities and NaNs among normal floats. The baseline
(default 7aac876, the code before the speed work) runs in a subprocess from a `git worktree`
checkout; the result bytes of every kernel must be equal (a sign of zero counts). Default 2 000
kernels, a few minutes on an idle core. Exit status 1 when a kernel differs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "7aac876"


def kernel_source(seed: int) -> tuple[str, str, str]:
    """(name, source, shape) of the random kernel `seed`."""
    r = random.Random(seed)
    shape = r.choice(["1d256", "1d64", "2d16"])
    U = 64 if shape == "1d64" else 256
    pad = r.choice([0, 2])
    S = U + pad
    name = f"k{seed}"
    lines = [f"@cube(launch=True)\ndef {name}(x: Slice[f32], out: SliceMut[f32]):",
             f"    sm = SharedMemory[f32]({S})", "    u = UNIT_POS"]
    inj = ["u", f"{U - 1} - u", f"(u * 5 + 3) % {U}"] + (["u + 1"] if pad else [])
    reads = [f"u // 2", f"(u + 3) % {U}", str(r.randrange(S)), f"(u * 3) % {U}"]
    reads += ["u + 2", "u + 1"] if pad else []
    if shape == "2d16":
        lines += ["    tx = UNIT_POS_X", "    ty = UNIT_POS_Y"]
        inj += ["tx * 16 + ty", "ty * 16 + tx"]
        reads += ["ty * 16 + 3", "5 * 16 + tx", "tx * 16 + 7"]
    reads += inj
    if pad:
        lines += [f"    if u < {pad}:", f"        sm[{U} + u] = x[ABSOLUTE_POS] * 0.5"]
    value = r.choice(["x[ABSOLUTE_POS]", "x[ABSOLUTE_POS] * 2.0", "x[ABSOLUTE_POS] + 1.5"])
    lines += [f"    sm[{r.choice(inj)}] = {value}", "    sync_cube()", "    acc = f32(0.0)"]
    for _ in range(r.randint(1, 4)):
        kind = r.choice(["pair", "loop", "cond", "cond_x", "tree", "rewrite", "dot", "global"])
        a, b, op = r.choice(reads), r.choice(reads), r.choice(["+", "-", "*"])
        if kind == "pair":
            lines.append(f"    acc = acc + sm[{a}] {op} sm[{b}]")
        elif kind == "loop":
            lines += [f"    for j in range({r.choice([2, 4])}):",
                      f"        acc += sm[(u + j) % {U}] {op} sm[{b}]"]
        elif kind == "dot":  # an unrolled dot product: one cube-minor step (`steps.accumulate`)
            k = r.choice([2, 4, 8])
            dots = [f"(u + j) % {U}", f"(u * 3 + j) % {U}", "j", f"j * 2 + {r.randrange(8)}"]
            if shape == "2d16":
                dots += ["ty * 16 + j", "j * 16 + tx", "tx * 16 + j", "j * 16 + ty"]
            a, b = r.choice(dots), r.choice(dots)
            term = r.choice([f"acc += sm[{a}] * sm[{b}]", f"acc = sm[{a}] * sm[{b}] + acc"])
            lines += [f"    for j in unroll(range({k})):", f"        {term}"]
        elif kind == "global":  # an affine index into x (a strided view), maybe past its end
            unit = r.choice(["UNIT_POS", "u * 2", "UNIT_POS_X * 16 + UNIT_POS_Y"] if shape == "2d16"
                            else ["UNIT_POS", "u * 2", f"{U - 1} - u"])
            lines.append(f"    acc += x[CUBE_POS * {r.choice([0, 1, U, 3 * U])} + {unit}"
                         f" + {r.choice([0, 5, U])}]")
        elif kind == "cond":
            cond = r.choice([f"u < {r.randrange(1, U)}", "u % 2 == 0", f"u == {r.randrange(U)}",
                             f"u > {r.randrange(U)}", f"ABSOLUTE_POS < {r.randrange(1, 20000)}"])
            lines += [f"    if {cond}:", f"        acc = acc * 2.0 + sm[{a}] {op} sm[{b}]"]
            if r.random() < 0.5:
                lines += ["    else:", f"        acc = acc - sm[{b}]"]
        elif kind == "cond_x":
            lines += ["    if x[ABSOLUTE_POS] > 0.0:", f"        acc = acc + sm[{a}]"]
        elif kind == "tree":
            lines += ["    sync_cube()", f"    s = u32({U // 2})", "    while s > 0:",
                      "        if u < s:", "            sm[u] = sm[u] + sm[u + s]",
                      "        sync_cube()", "        s = s // 2", "    acc = acc + sm[0] + sm[u]"]
        else:  # a value read, its item overwritten between barriers, then the value used
            lines += ["    sync_cube()", f"    t = sm[{a}]", "    sync_cube()",
                      f"    sm[{r.choice(inj)}] = acc", "    sync_cube()",
                      f"    acc = t {op} sm[{b}]"]
    lines.append("    out[ABSOLUTE_POS] = acc")
    return name, "\n".join(lines) + "\n", shape


def write_module(seeds: range, path: Path) -> None:
    parts = ["from cubelab.prelude import *\n\nSHAPES = {}\n"]
    for seed in seeds:
        name, source, shape = kernel_source(seed)
        parts += [source, f"SHAPES[{name!r}] = {shape!r}\n"]
    path.write_text("\n".join(parts))


def run_module(path: str) -> dict[str, str]:
    """kernel name -> sha1 of its output (or the error), on this process's cubelab."""
    import numpy as np

    import cubelab
    from cubelab import BufferArg, CubeCount, CubeDim, Device
    from cubelab.prelude import f32
    from cubelab.runtime.cpu import lanes, plan

    lanes.CHUNK_LANES = plan.CHUNK_LANES = 8192
    try:  # chunks of 32 cubes: let the unrolled dot products run cube-minor anyway
        from cubelab.runtime.cpu.steps import accumulate
        accumulate.CUBE_MINOR_MIN = 1  # type: ignore[attr-defined]
    except ImportError:  # a baseline before it
        pass
    spec = importlib.util.spec_from_file_location("cpu_fuzz_kernels", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    client = Device.cpu().client()
    out: dict[str, str] = {"_from": cubelab.__file__}
    for name, shape in module.SHAPES.items():
        units, cubes = (64 if shape == "1d64" else 256), 72
        n = units * cubes
        xs = np.random.default_rng(7).standard_normal(n).astype(np.float32)
        # zeros of both signs (a product's sign of zero), infinities and NaN among them
        xs[::7], xs[3::11], xs[5::997], xs[9::1499], xs[11::2003] = 0.0, -0.0, np.inf, -np.inf, \
            np.nan
        x = BufferArg.from_raw_parts(client.create_from_slice(f32.as_bytes(xs)), n)
        y = client.empty(4 * n)
        dim = CubeDim.new_2d(16, 16) if shape == "2d16" else CubeDim.new_1d(units)
        try:
            getattr(module, name).launch(client, CubeCount.Static(cubes), dim, x,
                                         BufferArg.from_raw_parts(y, n))
            out[name] = hashlib.sha1(bytes(client.read_one(y))).hexdigest()
        except Exception as exc:  # noqa: BLE001  (an error is a result to compare, too)
            out[name] = f"ERR {type(exc).__name__}: {str(exc)[:200]}"
    return out


def in_checkout(where: Path, path: Path) -> dict[str, str]:
    done = subprocess.run([sys.executable, __file__, "--worker", str(where), str(path)],
                          capture_output=True, text=True, cwd=where)
    if done.returncode:
        raise SystemExit(f"run in {where} failed: {done.stderr.strip()[-500:]}")
    got: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    if not got.pop("_from").startswith(str(where)):
        raise SystemExit(f"the run in {where} imported another cubelab")
    return got


def main() -> None:
    if "--worker" in sys.argv:
        where, path = sys.argv[sys.argv.index("--worker") + 1:][:2]
        sys.path.insert(0, where)
        print(json.dumps(run_module(path)))
        return
    lo, hi = (int(v) for v in (sys.argv[sys.argv.index("--seeds") + 1].split(":")
                              if "--seeds" in sys.argv else ("0", "2000")))
    commit = sys.argv[sys.argv.index("--base") + 1] if "--base" in sys.argv else BASE
    base = Path(tempfile.gettempdir()) / f"cubelab-base-{commit}"
    if not base.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), commit],
                       check=True, capture_output=True)
    path = Path(tempfile.mkdtemp(prefix="cubelab-fuzz-")) / "kernels.py"
    write_module(range(lo, hi), path)
    want, got = in_checkout(base, path), in_checkout(ROOT, path)
    differ = [k for k in want if want[k] != got.get(k)]
    errors = [k for k, v in got.items() if v.startswith("ERR")]
    print(f"{len(want)} kernels (seeds {lo}:{hi}) against {commit}: {len(differ)} differ, "
          f"{len(errors)} raise here ({sum(v.startswith('ERR') for v in want.values())} there)")
    for k in differ[:20]:
        print(f"  {k}: {want[k][:60]} | {got.get(k, '')[:60]}\n{kernel_source(int(k[1:]))[1]}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
