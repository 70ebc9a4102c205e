"""`cubelab cost FILE::KERNEL ...`: what a kernel's memory accesses cost, printed in a terminal.

    cubelab cost kernels.py::saxpy --count 4 --cube-dim 256 --arg a=2.0
    cubelab cost kernels.py::transpose --count 4,4 --cube-dim 16,16 --len x=4096 --len out=4096
    cubelab cost kernels.py::saxpy --types f32 --sizes 4 --count 16 --cube-dim 64 --arg a=2 --roofline

The launch is built from the kernel's own signature: every buffer gets `--len NAME=ITEMS` items
(default: one per unit of the launch), inputs (read-only buffers) hold 0, 1, 2, … (wrapped at
251, so an index read from them stays small) and outputs zeros; a tensor is contiguous, shaped by
`--shape NAME=ROWS,COLS` (default: one dimension); every scalar needs `--arg NAME=VALUE`
(cubelab does not guess a kernel's parameters); Comptime values come from `--comptime` in
order. The launch runs on the CPU runtime (`--device wgpu` runs it there and re-runs it on the
CPU runtime to record, with the adapter's plane width) through `inspect.access_map`, which
prints what it found (races, out-of-bounds) and the coalescing and bank-conflict tables;
`--roofline` also times it on the device and prints its roofline (no chart in a terminal).
"""

from __future__ import annotations

from cubelab.errors import hinted
import argparse
from typing import Any

import numpy as np

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register `cubelab cost` on the CLI's sub-command parsers."""
    p = sub.add_parser("cost", help="what a kernel's accesses cost: coalescing, bank conflicts "
                                    "(and --roofline)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("kernel", help="FILE::KERNEL, e.g. kernels.py::saxpy")
    p.add_argument("--types", default="", help="element types of the generics, e.g. f32")
    p.add_argument("--sizes", default="", help="vector widths of the Size generics, e.g. 4")
    p.add_argument("--comptime", default="", help="Comptime argument values, e.g. true")
    p.add_argument("--count", default="1", help="cubes: X or X,Y or X,Y,Z (default 1)")
    p.add_argument("--cube-dim", default="32", help="units per cube: X or X,Y or X,Y,Z "
                                                    "(default 32)")
    p.add_argument("--len", action="append", default=[], metavar="NAME=ITEMS",
                   help="items of a buffer (default: one per unit); repeat for each buffer")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1",
                   help="shape of a tensor argument (contiguous)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a scalar argument; repeat for each")
    p.add_argument("--plane-width", type=int, default=None,
                   help="units per plane (default: the device's; 32 on the CPU runtime)")
    p.add_argument("--device", choices=["cpu", "wgpu"], default="cpu")
    p.add_argument("--unchecked", action="store_true", help="as launch_unchecked")
    p.add_argument("--checked-io", default="cubecl-0.11.3", choices=["cubecl-0.11.3", "fixed"],
                   help="the CheckedIo matching rule (default: the seed's 0.11.3 rule)")
    p.add_argument("--roofline", action="store_true",
                   help="also time the launch on the device and print its roofline")
    p.set_defaults(fn=_cmd_cost)


def _dims(text: str, what: str) -> tuple[int, int, int]:
    try:
        parts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 3 or any(x < 1 for x in parts):
        raise SystemExit(hinted(f"cubelab cost: {what} must be X, X,Y or X,Y,Z positive "
                                f"integers, got {text!r}", "e.g. 4 or 16,16"))
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise SystemExit(hinted(f"cubelab cost: {what} takes NAME=VALUE, got {item!r}",
                                    "e.g. n=1024"))
        out[name.strip()] = value.strip()
    return out


def _cmd_cost(args: argparse.Namespace, out: Any) -> None:
    from cubelab import inspect as I
    from cubelab.cli import _literal, load_kernel
    from cubelab.frontend import types as T
    from cubelab.runtime.cpu.semantics import dtype_of
    from cubelab.runtime.device import Device
    from cubelab.runtime.handle import BufferArg, TensorArg
    from cubelab.runtime.kernel_id import CubeDim
    from cubelab.runtime.launch_args import CubeCount

    fn = load_kernel(args.kernel)
    if not fn.is_kernel:
        raise SystemExit(hinted(f"cubelab cost: `{fn.__name__}` is a helper (no launch=True)",
                                "name a kernel that calls it: a helper is inlined there"))
    by_name = {repr(t): t for t in vars(T).values() if isinstance(t, T.ScalarKind)}
    try:
        types = [by_name[t] for t in args.types.split(",") if t]
    except KeyError as exc:
        raise SystemExit(hinted(f"cubelab cost: unknown element type {exc}",
                                f"use {', '.join(by_name)}")) from None
    sizes = [int(s) for s in args.sizes.split(",") if s]
    comptime = [_literal(c) for c in args.comptime.split(",")] if args.comptime else []
    count = CubeCount.Static(*_dims(args.count, "--count"))
    dim = CubeDim(*_dims(args.cube_dim, "--cube-dim"))
    k = I.instance(fn, *types, sizes=tuple(sizes), cube_dim=dim, comptime=tuple(comptime),
                   checked=not args.unchecked)
    definition = k.define()
    buffers = {b.name: b for b in definition.buffers}
    lengths = {n: int(v) for n, v in _pairs(args.len, "--len").items()}
    shapes = {n: tuple(int(x) for x in v.split(",")) for n, v in
              _pairs(args.shape, "--shape").items()}
    scalars = _pairs(args.arg, "--arg")
    known = {p.name for p in fn.params}
    for name in [*lengths, *shapes, *scalars]:
        if name not in known:
            raise SystemExit(hinted(f"cubelab cost: `{fn.__name__}` has no argument `{name}`",
                                    f"its arguments: {', '.join(p.name for p in fn.params)}"))
    device = Device.cpu() if args.device == "cpu" else Device.wgpu()
    client = device.client()
    client.set_compilation_options(checked_io=args.checked_io)
    units = count.x * count.y * count.z * dim.num_units
    given = iter(comptime)
    launch_args: list[Any] = list(sizes)
    for p in fn.params:
        if p.kind == "buffer":
            b = buffers[p.name]
            item = getattr(b.item, "value_ty", b.item)
            width = getattr(item, "width", 1)
            shape = shapes.get(p.name)
            items = int(np.prod(shape)) if shape else lengths.get(p.name, units)
            dtype = dtype_of(item)
            data = np.zeros(items * width, dtype=dtype) if b.writable else \
                (np.arange(items * width) % 251).astype(dtype)
            handle = client.create_from_slice(data.tobytes())
            if b.tensor:
                shape = shape or (items,)
                strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
                launch_args.append(TensorArg.from_raw_parts(handle, shape, strides))
            else:
                launch_args.append(BufferArg.from_raw_parts(handle, items * width))
        elif p.kind == "scalar":
            if p.name not in scalars:
                raise SystemExit(hinted(f"cubelab cost: `{fn.__name__}` needs a value for its "
                                        f"scalar `{p.name}`", f"add --arg {p.name}=VALUE"))
            launch_args.append(_literal(scalars[p.name]))
        elif p.kind == "comptime":
            value = next(given, None)
            if value is None:
                raise SystemExit(hinted(f"cubelab cost: `{fn.__name__}` needs its Comptime "
                                        f"`{p.name}`", "give --comptime VALUE,... in signature "
                                        "order"))
            launch_args.append(value)
        else:
            raise SystemExit(hinted(f"cubelab cost: `{p.name}` is a @cube_type argument, which "
                                    "the command line cannot build",
                                    "call cubelab.inspect.access_map(...) from Python"))
    launcher = fn.launch_unchecked if args.unchecked else fn.launch
    if types:
        launcher = launcher[tuple(types)]
    m = I.access_map(launcher, client, count, dim, *launch_args, plane_width=args.plane_width)
    print(m.report())
    out(m.coalescing())
    out(m.conflicts())
    if args.roofline:
        print(I.roofline(launcher, client, count, dim, *launch_args).table())
