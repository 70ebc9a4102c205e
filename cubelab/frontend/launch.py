"""`kernel.launch[...]` and `kernel.launch_unchecked[...]`: what a `@cube(launch=True)` kernel's
generated `launch` does on the calling thread, every call.

Index with the generic types (`saxpy.launch[f32]`), then call with the client, cube count, cube
dim, vector sizes and arguments. Each argument is checked against the kernel's signature (a
mistake is a LaunchError naming the argument and what to pass instead) and registered on the
runtime's `KernelLauncher` (a `@cube_type` struct or enum flattened into its fields first:
`aggregate_launch.py`); the `KernelInstance` of this compile-time signature is found (or
built, once) and submitted. No IR is built here: that is `define()`, on a cache miss only.

The trap: this is the hot path of a cache-hit launch (a few µs of Python). The per-parameter
work is resolved once per bound launcher (`_build_plan`), and nothing here walks specs per call.
A loop that launches with the very same argument objects each time (`for _ in range(n):
saxpy.launch[f32](client, count, dim, 4, a, xa, ya)`) pays even less: once the same arguments
come twice in a row, the checked result (`KernelInstance` and `Bindings`) is kept
(`_Repeat`) and handed over again while the arguments stay the same objects. That is exact, not
a guess: launch arguments are immutable (`BufferArg`, `TensorArg`, `ScalarArg`; numbers,
strings), so the same objects check the same; handles are still gated by the client on every
launch (a freed one is refused); and the kept arguments are held weakly, so the memo never keeps
a buffer alive.
"""

from __future__ import annotations

import itertools
import struct
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.errors import LaunchError, api_boundary
from cubelab.frontend import aggregate_launch
from cubelab.frontend.instance import KernelInstance
from cubelab.frontend.types import GenericScalar, GenericSize, ScalarKind, bool_, f32, u32
from cubelab.runtime.handle import BufferArg, ScalarArg, TensorArg
from cubelab.runtime.kernel_id import CubeDim, ExecutionMode
from cubelab.runtime.kernel_launcher import KernelLauncher, check_cube_dim
from cubelab.runtime.launch_args import BufferBinding, CubeCount

if TYPE_CHECKING:
    from cubelab.frontend.kernel import CubeFunction


_F32 = struct.Struct("<f")


def _f32_round(v: Any, name: str, kernel: str) -> float:
    """A Python number as the f32 the kernel will see (infinities and NaN pass through)."""
    try:
        return _F32.unpack(_F32.pack(float(v)))[0]  # type: ignore[no-any-return]
    except OverflowError:
        raise LaunchError(f"launch of `{kernel}`: argument `{name}` = {v!r} does not fit in f32 "
                          "(|x| > 3.4e38); pass float('inf') if that is what you mean") from None


def _scalar_bytes(kind: ScalarKind, v: Any, name: str, kernel: str) -> Any:
    if isinstance(v, ScalarArg):
        v = v.value
    if hasattr(v, "item") and not isinstance(v, (int, float, bool)):
        v = v.item()  # numpy scalars
    if kind is bool_:
        if not isinstance(v, (bool, int)):
            raise LaunchError(f"launch of `{kernel}`: argument `{name}` is bool, got {v!r}")
        return bool(v)
    if kind is f32:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise LaunchError(f"launch of `{kernel}`: argument `{name}` is f32, got {v!r}")
        return _f32_round(v, name, kernel)
    if not isinstance(v, int) or isinstance(v, bool):
        raise LaunchError(f"launch of `{kernel}`: argument `{name}` is {kind}, got {v!r}")
    lo, hi = (0, 2**32 - 1) if kind is u32 else (-(2**31), 2**31 - 1)
    if not lo <= v <= hi:
        raise LaunchError(f"launch of `{kernel}`: argument `{name}` = {v} does not fit in {kind}")
    return v


def _binding(kernel: str, mode: ExecutionMode, pname: str, spec: Any, width: int,
             a: Any) -> BufferBinding:
    """A buffer argument (`BufferArg` for a Slice, `TensorArg` for a Tensor), checked."""
    if spec.tensor:
        if not isinstance(a, TensorArg):
            raise LaunchError(
                f"launch of `{kernel}`: argument `{pname}` is a {spec!r}; pass "
                f"TensorArg.from_raw_parts(handle, shape, strides), got {type(a).__name__}")
        items = a.length // width
        if a.extent > items and mode is ExecutionMode.Checked:
            raise LaunchError(_past_the_end(kernel, pname, a, items, width))
        return BufferBinding(a.handle, items, spec.writable, pname, a.shape, a.strides)
    if not isinstance(a, BufferArg):
        raise LaunchError(
            f"launch of `{kernel}`: argument `{pname}` is a {spec!r}; pass "
            f"BufferArg.from_raw_parts(handle, length), got {type(a).__name__}")
    length = a.length
    if length % width:
        raise LaunchError(
            f"launch of `{kernel}`: argument `{pname}` has length {length}, which "
            f"the vector size {width} does not divide; pad the buffer or pick a "
            "vector size that divides it")
    return BufferBinding(a.handle, length // width, spec.writable, pname)


def _past_the_end(kernel: str, pname: str, t: TensorArg, items: int, width: int) -> str:
    """The refusal of a checked launch whose tensor's shape reaches past its handle."""
    unit = f"vec{width} items" if width > 1 else "items"
    return (f"launch of `{kernel}`: tensor `{pname}` has shape {t.shape} and strides "
            f"{t.strides}, which reach item {t.extent - 1}, but its handle holds {items} {unit}. "
            "A checked launch refuses metadata that points past the buffer; fix the shape or "
            "strides, or use launch_unchecked (reads past the end then follow the runtime's "
            "out-of-bounds rules)")


# Arguments that are values (immutable), so the same object always checks the same. Anything
# else (a tuple may hold a list, a user object may change) turns the repeat memo off.
_VALUE_TYPES = (int, float, bool, str, bytes, type(None), np.generic)
_HELD_WEAKLY = (BufferArg, TensorArg)
_repeats = itertools.count(1)


class _Repeat:
    """The last checked launch of a bound launcher, kept for the next launch with the very same
    argument objects: its `KernelInstance` and `Bindings` (the device thread keeps what it
    derives from those bindings on them: `server.PreparedLaunch`)."""

    __slots__ = ("serial", "client", "cube_dim", "ids", "values", "refs", "kernel", "bindings")

    def __init__(self, launcher: "BoundLauncher", client: Any, cube_dim: CubeDim,
                 args: tuple[Any, ...], ids: tuple[int, ...], kernel: KernelInstance,
                 bindings: Any) -> None:
        self.serial = serial = next(_repeats)

        def dead(_ref: Any, launcher: BoundLauncher = launcher, serial: int = serial) -> None:
            # An argument died: its id may be reused by a new object, so the memo goes first.
            kept = launcher._repeat
            if kept is not None and kept.serial == serial:
                launcher._repeat = None

        self.client, self.cube_dim, self.ids = client, cube_dim, ids
        # buffers weakly (the memo must not keep their handles alive), plain values strongly
        # (a live object's id cannot be reused)
        self.refs = [weakref.ref(a, dead) for a in args if isinstance(a, _HELD_WEAKLY)]
        self.values = [a for a in args if not isinstance(a, _HELD_WEAKLY)]
        self.kernel, self.bindings = kernel, bindings


class Launcher:
    """`kernel.launch` / `kernel.launch_unchecked`: index with the generic types, then call."""

    def __init__(self, fn: CubeFunction, mode: ExecutionMode) -> None:
        self.fn = fn
        self.mode = mode
        self._bound: dict[tuple[Any, ...], BoundLauncher] = {}

    @api_boundary
    def __getitem__(self, types: Any) -> "BoundLauncher":
        key = types if isinstance(types, tuple) else (types,)
        bound = self._bound.get(key)
        if bound is None:
            bound = BoundLauncher(self.fn, self.mode, key)
            self._bound[key] = bound
        return bound

    @api_boundary
    def __call__(self, *args: Any) -> None:
        bound = self._bound.get(())  # a kernel without generic types: `saxpy.launch(...)`
        return (bound if bound is not None else self[()])(*args)

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}.{'launch' if self.mode is ExecutionMode.Checked else 'launch_unchecked'}>"


class NoLauncher:
    """`kernel.launch_unchecked` (or `.launch`) on a kernel not declared with it: the decorator
    makes only the launchers it is asked for, as CubeCL's macro does."""

    def __init__(self, fn: CubeFunction, which: str) -> None:
        self.fn, self.which = fn, which

    def _refuse(self) -> LaunchError:
        name = self.fn.__name__
        if not self.fn.is_kernel:
            return LaunchError(f"`{name}` is a @cube helper: it has no `{self.which}`; it is "
                               "inlined into the kernels that call it")
        return LaunchError(f"`{name}` has no `{self.which}`: its decorator did not ask for one; "
                           f"write @cube({self.which}=True) (both: @cube(launch=True, "
                           "launch_unchecked=True))")

    @api_boundary
    def __getitem__(self, types: Any) -> Any:
        raise self._refuse()

    @api_boundary
    def __call__(self, *args: Any) -> Any:
        raise self._refuse()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}.{self.which}: not declared>"


class BoundLauncher:
    def __init__(self, fn: CubeFunction, mode: ExecutionMode, types: tuple[Any, ...]) -> None:
        self.fn, self.mode = fn, mode
        name = fn.__name__
        type_generics = [g for g in fn.generics if isinstance(g, GenericScalar)]
        self.size_generics = [g for g in fn.generics if isinstance(g, GenericSize)]
        if len(types) != len(type_generics):
            want = ", ".join(g.name for g in type_generics) or "none"
            example = f"{name}.launch[{', '.join('f32' for _ in type_generics)}](...)" \
                if type_generics else f"{name}.launch(...)"
            raise LaunchError(f"`{name}` has generic types [{want}] but was given "
                              f"{len(types)}: write {example}")
        self.types: dict[str, ScalarKind] = {}
        for g, t in zip(type_generics, types):
            if not isinstance(t, ScalarKind) or not g.accepts(t):
                raise LaunchError(f"`{name}`: generic {g.name} is a {g.family}, got {t!r}")
            self.types[g.name] = t
        self._kernels: dict[tuple[Any, ...], KernelInstance] = {}
        self._buffer_params = [p for p in fn.params if p.kind == "buffer"]
        self._plan: list[tuple[Any, ...]] | None = None  # built at the first launch (see _build_plan)
        # (cube_dim, id(properties)) -> properties, for dims already checked against the limits
        self._dims_ok: dict[tuple[CubeDim, int], Any] = {}
        self._repeat: _Repeat | None = None  # the last launch, if its arguments may repeat
        # the previous launch's (argument ids, client, cube dim): the same twice is a loop
        self._last: tuple[Any, ...] = ()

    def _build_plan(self) -> list[tuple[Any, ...]]:
        """Per parameter, what a launch checks and packs, resolved once: the launch path then
        reads tuples instead of walking specs (a cache-hit launch is a few µs of Python)."""
        plan: list[tuple[Any, ...]] = []
        for p in self.fn.params:
            if p.kind == "buffer":
                w = p.spec.width_spec
                plan.append(("buffer", p, p.name, w if isinstance(w, int) else None,
                             None if isinstance(w, int) else w.name, p.spec.writable,
                             p.spec.tensor))
            elif p.kind == "scalar":
                plan.append(("scalar", p, p.name, p.spec, p.spec.elem.value))
            elif p.kind == "aggregate":
                plan.append(("aggregate", p, p.name, p.spec))
            else:
                plan.append((p.kind, p, p.name))
        self._plan = plan
        return plan

    @api_boundary
    def __call__(self, client: Any, cube_count: Any, cube_dim: Any, *args: Any) -> None:
        ids = tuple(map(id, args))
        repeat = self._repeat
        if (repeat is not None and repeat.ids == ids and repeat.client is client
                and (repeat.cube_dim is cube_dim or repeat.cube_dim == cube_dim)
                and isinstance(cube_count, CubeCount)):
            # The very same arguments as a launch already checked (see the module docstring).
            client.launch(repeat.kernel, cube_count, repeat.bindings)
            return
        self._launch(client, cube_count, cube_dim, args, ids)

    def _launch(self, client: Any, cube_count: Any, cube_dim: Any, args: tuple[Any, ...],
                ids: tuple[int, ...]) -> None:
        fn = self.fn
        name = fn.__name__
        fn.check_names()
        if isinstance(client, (CubeCount, CubeDim)) or not hasattr(client, "launch"):
            raise LaunchError(
                f"launch of `{name}`: the first argument is the client "
                f"(client = Device.default().client()), got {client!r}; write "
                f"{name}.launch[...](client, cube_count, cube_dim, ...)")
        if not isinstance(cube_count, CubeCount):
            raise LaunchError(f"launch of `{name}`: the second argument is the cube count "
                              f"(CubeCount.Static(x, y, z)), got {cube_count!r}")
        if not isinstance(cube_dim, CubeDim):
            raise LaunchError(f"launch of `{name}`: the third argument is the cube dim "
                              f"(CubeDim.new_1d(n)), got {cube_dim!r}")
        plan = self._plan or self._build_plan()
        size_generics = self.size_generics
        nsz = len(size_generics)
        if len(args) != nsz + len(plan):
            names = [f"{g.name.lower()} (vector size)" for g in size_generics]
            names += [p.name for p in fn.params]
            raise LaunchError(
                f"launch of `{name}` takes client, cube_count, cube_dim and {nsz + len(plan)} "
                f"more argument(s) ({', '.join(names)}), got {len(args)}"
            )
        size_of: dict[str, int] = {}
        if nsz:
            sizes = args[:nsz]
            for g, v in zip(size_generics, sizes):
                if v not in (1, 2, 4) or isinstance(v, bool):
                    raise LaunchError(f"launch of `{name}`: vector size {g.name} must be 1, 2 "
                                      f"or 4, got {v!r}")
                size_of[g.name] = v
            args = args[nsz:]
        else:
            sizes = ()
        props = client.properties()
        if self._dims_ok.get((cube_dim, id(props))) is not props:
            self._check_dim(name, cube_dim, props)
        launcher = KernelLauncher()
        # KernelLauncher.register_buffer without a Python frame per argument (the cache-hit path)
        register_buffer = launcher.buffers.append
        scalars = launcher.scalars
        comptimes: list[Any] = []
        for step, a in zip(plan, args):
            kind = step[0]
            if kind == "buffer":
                _, p, pname, width, size_name, writable, tensor = step
                if width is None:
                    width = size_of[size_name]
                # the happy path inline (no Python frame per argument); `_binding` says why not
                if tensor:
                    if not isinstance(a, TensorArg) or (
                            a.extent > a.length // width and self.mode is ExecutionMode.Checked):
                        _binding(name, self.mode, pname, p.spec, width, a)  # raises
                    register_buffer(BufferBinding(a.handle, a.length // width, writable, pname,
                                                 a.shape, a.strides))
                    continue
                if not isinstance(a, BufferArg) or a.length % width:
                    _binding(name, self.mode, pname, p.spec, width, a)  # raises
                register_buffer(BufferBinding(a.handle, a.length // width, writable, pname))
            elif kind == "scalar":
                _, p, pname, skind, elem = step
                if skind is f32 and type(a) is float:
                    v = _f32_round(a, pname, name)
                else:
                    v = _scalar_bytes(skind, a, pname, name)
                group = scalars.get(elem)  # KernelLauncher.register_scalar, inlined
                if group is None:
                    scalars[elem] = [v]
                else:
                    group.append(v)
            elif kind == "aggregate":
                # a @cube_type struct or enum: its fields in order (aggregate_launch.flatten); the
                # comptime ones (and a default enum's variant) are its part of the KernelId
                key, leaves = aggregate_launch.flatten(step[3], a, name, step[2])
                for leaf, label, spec, x in leaves:
                    if leaf == "buffer":
                        w = spec.width_spec
                        register_buffer(_binding(name, self.mode, label, spec,
                                                 w if isinstance(w, int) else size_of[w.name], x))
                    else:
                        v = _scalar_bytes(spec, x, label, name)
                        scalars.setdefault(spec.elem.value, []).append(v)
                comptimes.append(key)
            elif kind == "comptime":
                try:
                    hash(a)
                except TypeError:
                    raise LaunchError(f"launch of `{name}`: Comptime argument `{step[2]}` must "
                                      f"be hashable (it is part of the KernelId), got {a!r}"
                                      ) from None
                comptimes.append(a)
            else:
                raise LaunchError(f"launch of `{name}`: argument `{step[2]}` has no launchable "
                                  "type")
        key = (cube_dim, tuple(sizes), tuple(comptimes))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = KernelInstance(self.fn, self.mode, cube_dim, dict(self.types), size_of,
                                    tuple(comptimes))
            self._kernels[key] = kernel
        bindings = launcher.launch(client, kernel, cube_count, name)
        # The same arguments twice in a row: a loop. Keep this launch for the next one.
        last = (ids, client, cube_dim)
        if last == self._last and all(isinstance(a, _VALUE_TYPES + _HELD_WEAKLY) for a in args):
            self._repeat = _Repeat(self, client, cube_dim, args, ids, kernel, bindings)
        self._last = last

    def _check_dim(self, name: str, cube_dim: CubeDim, props: Any) -> None:
        check_cube_dim(name, cube_dim, props)
        self._dims_ok[(cube_dim, id(props))] = props  # holds props: its id stays unique
