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
A loop pays even less: each bound launcher keeps its last few checked launches by value
(`launch_memo.py`), so a launch whose arguments are equal to one of them — the very same
objects, or new `BufferArg`s of the same handles and lengths built in the call, as the README's
loop does — skips the checks and hands the runtime that launch's `KernelInstance` and `Bindings`
again; one whose only change is a scalar's value gets new scalars and nothing else. That is
exact, not a guess: launch arguments are immutable values, equal arguments check the same,
handles are still gated by the client on every launch (a freed one is refused), and the memo
holds handles and bindings weakly, so it never keeps a buffer alive.
"""

from __future__ import annotations

import struct
import weakref
from typing import TYPE_CHECKING, Any

from cubelab.errors import CubeError, LaunchError, api_boundary, hinted, leave_boundary
from cubelab.frontend import aggregate_launch
from cubelab.frontend.launch_memo import (
    BUFFER,
    MEMO_SIZE,
    OTHER,
    SAME,
    SCALAR,
    TENSOR,
    VALUE,
    Memo,
    comparer,
)
from cubelab.frontend.instance import KernelInstance
from cubelab.frontend.types import (GenericScalar, GenericSize, ScalarKind, bool_, f32,
                                    scalar_kind_of, u32)
from cubelab.runtime.handle import BufferArg, ScalarArg, TensorArg
from cubelab.runtime.kernel_id import CubeDim, ExecutionMode
from cubelab.runtime.kernel_launcher import KernelLauncher, check_cube_dim
from cubelab.runtime.launch_args import Bindings, BufferBinding, CubeCount, SharedPrepared

if TYPE_CHECKING:
    from cubelab.frontend.kernel import CubeFunction


_F32 = struct.Struct("<f")


def _f32_round(v: Any, name: str, kernel: str) -> float:
    """A Python number as the f32 the kernel will see (infinities and NaN pass through)."""
    try:
        return _F32.unpack(_F32.pack(float(v)))[0]  # type: ignore[no-any-return]
    except OverflowError:
        raise LaunchError(hinted(f"launch of `{kernel}`: argument `{name}` = {v!r} does not fit "
                                 "in f32 (|x| > 3.4e38)",
                                 "pass float('inf') if that is what you mean")) from None


def _scalar_bytes(kind: ScalarKind, v: Any, name: str, kernel: str) -> Any:
    if isinstance(v, ScalarArg):
        v = v.value
    if hasattr(v, "item") and not isinstance(v, (int, float, bool)):
        v = v.item()  # numpy scalars
    if kind is bool_:
        if not isinstance(v, (bool, int)):
            raise LaunchError(hinted(f"launch of `{kernel}`: argument `{name}` is bool, got {v!r}",
                                     "pass True or False"))
        return bool(v)
    if kind is f32:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise LaunchError(hinted(f"launch of `{kernel}`: argument `{name}` is f32, got {v!r}",
                                     "pass a Python float or int (or a numpy float32)"))
        return _f32_round(v, name, kernel)
    if not isinstance(v, int) or isinstance(v, bool):
        raise LaunchError(hinted(f"launch of `{kernel}`: argument `{name}` is {kind}, got {v!r}",
                                 f"pass a Python int that fits in {kind}"))
    lo, hi = (0, 2**32 - 1) if kind is u32 else (-(2**31), 2**31 - 1)
    if not lo <= v <= hi:
        raise LaunchError(hinted(f"launch of `{kernel}`: argument `{name}` = {v} does not fit "
                                 f"in {kind}", "u32 holds 0 .. 4294967295, i32 -2147483648 .. "
                                 "2147483647: pass a value in range, or change the kernel's type"))
    return v


def _binding(kernel: str, mode: ExecutionMode, pname: str, spec: Any, width: int,
             a: Any) -> BufferBinding:
    """A buffer argument (`BufferArg` for a Slice, `TensorArg` for a Tensor), checked."""
    if spec.tensor:
        if not isinstance(a, TensorArg):
            raise LaunchError(hinted(
                f"launch of `{kernel}`: argument `{pname}` is a {spec!r}, got "
                f"{type(a).__name__}", "pass TensorArg.from_raw_parts(handle, shape, strides)"))
        items = a.length // width
        if a.extent > items and mode is ExecutionMode.Checked:
            raise LaunchError(_past_the_end(kernel, pname, a, items, width))
        return BufferBinding(a.handle, items, spec.writable, pname, a.shape, a.strides)
    if not isinstance(a, BufferArg):
        raise LaunchError(hinted(
            f"launch of `{kernel}`: argument `{pname}` is a {spec!r}, got {type(a).__name__}",
            "pass BufferArg.from_raw_parts(handle, length)"))
    length = a.length
    if length % width:
        raise LaunchError(hinted(
            f"launch of `{kernel}`: argument `{pname}` has length {length}, which "
            f"the vector size {width} does not divide",
            "pad the buffer or pick a vector size that divides it"))
    return BufferBinding(a.handle, length // width, spec.writable, pname)


def _past_the_end(kernel: str, pname: str, t: TensorArg, items: int, width: int) -> str:
    """The refusal of a checked launch whose tensor's shape reaches past its handle."""
    unit = f"vec{width} items" if width > 1 else "items"
    return hinted(f"launch of `{kernel}`: tensor `{pname}` has shape {t.shape} and strides "
                  f"{t.strides}, which reach item {t.extent - 1}, but its handle holds {items} "
                  f"{unit}. A checked launch refuses metadata that points past the buffer",
                  "fix the shape or strides, or use launch_unchecked (reads past the end then "
                  "follow the runtime's out-of-bounds rules)")


class Launcher:
    """`kernel.launch` / `kernel.launch_unchecked`: index with the generic types, then call."""

    def __init__(self, fn: CubeFunction, mode: ExecutionMode) -> None:
        self.fn = fn
        self.mode = mode
        self._bound: dict[tuple[Any, ...], BoundLauncher] = {}

    def __getitem__(self, types: Any) -> "BoundLauncher":
        # `saxpy.launch[f32]` is often written inside the loop: one dict lookup, keyed on the
        # types as written (f32, or (f32, i32)); the first time, `_bind`
        bound = self._bound.get(types)
        return bound if bound is not None else self._bind(types)

    @api_boundary
    def _bind(self, types: Any) -> "BoundLauncher":
        key = types if isinstance(types, tuple) else (types,)
        bound = self._bound.get(key)
        if bound is None:
            bound = BoundLauncher(self.fn, self.mode, key)
            self._bound[key] = bound
        self._bound[types] = bound
        return bound

    def __call__(self, *args: Any) -> None:
        # a kernel without generic types: `saxpy.launch(...)`
        bound = self._bound.get(())
        try:
            (bound if bound is not None else self._bind(()))(*args)
        except CubeError as exc:  # this frame is cubelab's too: the boundary inline, as below
            leave_boundary(exc)
            raise

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
            return LaunchError(hinted(f"`{name}` is a @cube helper: it has no `{self.which}`",
                                      "it is inlined into the kernels that call it: call it "
                                      "from a @cube(launch=True) kernel and launch that"))
        return LaunchError(hinted(f"`{name}` has no `{self.which}`: its decorator did not ask "
                                  "for one", f"write @cube({self.which}=True) (both: "
                                  "@cube(launch=True, launch_unchecked=True))"))

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
        # a generic bound by a `Define[T]` argument takes its type from that argument's value
        defined = {p.spec.generic.name for p in fn.params if p.kind == "define"}
        self.type_order = [g.name for g in fn.generics if isinstance(g, GenericScalar)]
        type_generics = [g for g in fn.generics
                         if isinstance(g, GenericScalar) and g.name not in defined]
        self.size_generics = [g for g in fn.generics if isinstance(g, GenericSize)]
        if len(types) != len(type_generics):
            want = ", ".join(g.name for g in type_generics) or "none"
            example = f"{name}.launch[{', '.join('f32' for _ in type_generics)}](...)" \
                if type_generics else f"{name}.launch(...)"
            raise LaunchError(hinted(f"`{name}` has generic types [{want}] but was given "
                                     f"{len(types)}", f"write {example}"))
        self.types: dict[str, ScalarKind] = {}
        for g, t in zip(type_generics, types):
            if not isinstance(t, ScalarKind) or not g.accepts(t):
                raise LaunchError(hinted(f"`{name}`: generic {g.name} is a {g.family}, got {t!r}",
                                         f"pass a {g.family} type, e.g. f32 for a Float, u32 "
                                         "for an Int"))
            self.types[g.name] = t
        self._kernels: dict[tuple[Any, ...], KernelInstance] = {}
        self._buffer_params = [p for p in fn.params if p.kind == "buffer"]
        self._plan: list[tuple[Any, ...]] | None = None  # built at the first launch (see _build_plan)
        # (cube_dim, id(properties)) -> properties, for dims already checked against the limits
        self._dims_ok: dict[tuple[CubeDim, int], Any] = {}
        # the last few checked launches, most recent first (`launch_memo.py`); `_kinds` says
        # what each positional argument is, None when the memo is off (a @cube_type argument)
        self._memos: list[Memo] = []
        self._kinds: tuple[int, ...] | None = None
        self._compare: Any = None  # launch_memo.comparer(_kinds)
        self._buffer_pos: tuple[int, ...] = ()  # argument position of each binding, in order
        # per runtime scalar: (argument position, name, kind, elem), for `_pack_scalars`
        self._scalar_steps: tuple[tuple[int, str, Any, str], ...] = ()
        self._scalar_keys: tuple[tuple[int, int], ...] = ()

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
            elif p.kind == "define":
                plan.append(("define", p, p.name, p.spec.generic))
            else:
                plan.append((p.kind, p, p.name))
        self._plan = plan
        nsz = len(self.size_generics)
        kinds: list[int] = [VALUE] * nsz
        for step in plan:
            if step[0] == "buffer":
                kinds.append(TENSOR if step[6] else BUFFER)
            elif step[0] == "scalar":
                kinds.append(SCALAR)
            elif step[0] == "comptime":
                kinds.append(VALUE)
            else:  # an aggregate: flattened into a varying number of bindings — no memo
                self._kinds = None
                return plan
        self._kinds = tuple(kinds)
        self._compare = comparer(self._kinds)
        self._buffer_pos = tuple(i for i, k in enumerate(kinds) if k in (BUFFER, TENSOR))
        self._scalar_steps = tuple((nsz + i, step[2], step[3], step[4])
                                   for i, step in enumerate(plan) if step[0] == "scalar")
        at, scalar_keys = 0, []  # (argument position, index in a memo's keys) per scalar
        for pos, kind in enumerate(kinds):
            if kind == SCALAR:
                scalar_keys.append((pos, at))
            at += 2 if kind == BUFFER else 3 if kind == TENSOR else 1
        self._scalar_keys = tuple(scalar_keys)
        return plan

    def __call__(self, client: Any, cube_count: Any, cube_dim: Any, *args: Any) -> None:
        __tracebackhide__ = True  # noqa: F841 - an entry point (errors.api_boundary, inline)
        try:
            if type(cube_count) is CubeCount:
                ids = tuple(map(id, args))
                for memo in self._memos:
                    if memo.client is client and (memo.cube_dim is cube_dim
                                                  or memo.cube_dim == cube_dim):
                        state = memo.state  # one read: see launch_memo.Memo
                        same = SAME if state[0] == ids else self._compare(args, state[1])
                        if same == SAME:
                            bindings = state[3]()
                            if bindings is not None:
                                client.launch(memo.kernel, cube_count, bindings)
                                return
                        if same != OTHER:
                            self._relaunch(memo, state, client, cube_count, args, same)
                            return
            self._launch(client, cube_count, cube_dim, args)
        except CubeError as exc:
            leave_boundary(exc)
            raise

    def _relaunch(self, memo: Memo, state: tuple[Any, ...], client: Any,
                  cube_count: CubeCount, args: tuple[Any, ...], same: int) -> None:
        """A launch equal to `memo`'s (as of `state`) but for new `Bindings`: its last ones are
        gone (no queued launch holds them), or a scalar's value changed (`same` is SCALARS).
        The buffers are the memo's (the handles of `args`), the scalars are packed afresh if
        they changed."""
        ids, keys, scalars, ref = state
        if same != SAME:
            scalars = self._pack_scalars(args)
            keys = list(keys)
            for pos, at in self._scalar_keys:
                keys[at] = args[pos]
            keys = tuple(keys)
            ids = None  # the ids were the first launch's: its scalar objects are not these
        old = ref()
        if old is not None:
            # the same handles, lengths and names: the buffers list (never mutated) and what
            # both threads derived from it alone (`Bindings.prepared`, `.checked`, `.family`)
            # are shared
            family = old.family
            if family is None:
                family = old.family = SharedPrepared()
            bindings = Bindings(old.buffers, scalars, old.prepared, old.checked, None, family)
        else:
            bindings = Bindings([BufferBinding(args[pos].handle, items, writable, name, shape,
                                               strides)
                                 for pos, items, writable, name, shape, strides in memo.buffers],
                                scalars)
        client.launch(memo.kernel, cube_count, bindings)
        # the memo is this launch now (only once it passed the client's gates), in one step
        memo.state = (ids, keys, scalars, weakref.ref(bindings))

    def _pack_scalars(self, args: tuple[Any, ...]) -> dict[str, list[Any]]:
        """The runtime scalars of `args` (a memo's launch with new scalar values), checked and
        converted as `_launch` does."""
        name = self.fn.__name__
        scalars: dict[str, list[Any]] = {}
        for pos, pname, skind, elem in self._scalar_steps:
            a = args[pos]
            v = (_f32_round(a, pname, name) if skind is f32 and type(a) is float
                 else _scalar_bytes(skind, a, pname, name))
            group = scalars.get(elem)
            if group is None:
                scalars[elem] = [v]
            else:
                group.append(v)
        return scalars

    def _launch(self, client: Any, cube_count: Any, cube_dim: Any,
                args: tuple[Any, ...]) -> None:
        """The full check of a launch the memo does not know."""
        fn = self.fn
        name = fn.__name__
        fn.check_names()
        if isinstance(client, (CubeCount, CubeDim)) or not hasattr(client, "launch"):
            raise LaunchError(hinted(
                f"launch of `{name}`: the first argument is the client "
                f"(client = Device.default().client()), got {client!r}",
                f"write {name}.launch[...](client, cube_count, cube_dim, ...)"))
        if not isinstance(cube_count, CubeCount):
            raise LaunchError(hinted(f"launch of `{name}`: the second argument is the cube "
                                     f"count, got {cube_count!r}",
                                     "pass CubeCount.Static(x, y, z) (or CubeCount.Dynamic)"))
        if not isinstance(cube_dim, CubeDim):
            raise LaunchError(hinted(f"launch of `{name}`: the third argument is the cube "
                                     f"dim, got {cube_dim!r}",
                                     "pass CubeDim.new_1d(n) (or new_2d / new_3d)"))
        plan = self._plan or self._build_plan()
        size_generics = self.size_generics
        nsz = len(size_generics)
        if len(args) != nsz + len(plan):
            names = [f"{g.name.lower()} (vector size)" for g in size_generics]
            names += [p.name for p in fn.params]
            raise LaunchError(hinted(
                f"launch of `{name}` takes client, cube_count, cube_dim and {nsz + len(plan)} "
                f"more argument(s) ({', '.join(names)}), got {len(args)}",
                "pass one value per kernel argument, in the signature's order"))
        size_of: dict[str, int] = {}
        if nsz:
            sizes = args[:nsz]
            for g, v in zip(size_generics, sizes):
                if v not in (1, 2, 4) or isinstance(v, bool):
                    raise LaunchError(hinted(f"launch of `{name}`: vector size {g.name} must "
                                             f"be 1, 2 or 4, got {v!r}",
                                             "pick 1, 2 or 4 (WGSL vectors hold 2 to 4 items)"))
                size_of[g.name] = v
            args = args[nsz:]
        else:
            sizes = ()
        props = client.properties()
        if self._dims_ok.get((cube_dim, id(props))) is not props:
            self._check_dim(name, cube_dim, props)
        types = self.types
        if self.type_order and len(types) != len(self.type_order):
            types = self._defined_types(name, plan, args)
        launcher = KernelLauncher()
        # KernelLauncher.register_buffer without a Python frame per argument (the cache-hit path)
        register_buffer = launcher.buffers.append
        scalars = launcher.scalars
        comptimes: list[Any] = []
        views = False  # a buffer view (`handle.offset_start(n)`) among the arguments
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
                    if a.handle.offset:
                        views = True
                    continue
                if not isinstance(a, BufferArg) or a.length % width:
                    _binding(name, self.mode, pname, p.spec, width, a)  # raises
                register_buffer(BufferBinding(a.handle, a.length // width, writable, pname))
                if a.handle.offset:
                    views = True
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
            elif kind == "define":
                comptimes.append(types[step[3].name])  # the type it chose (checked above)
            elif kind == "comptime":
                try:
                    hash(a)
                except TypeError:
                    raise LaunchError(hinted(
                        f"launch of `{name}`: Comptime argument `{step[2]}` must be hashable "
                        f"(it is part of the KernelId), got {a!r}",
                        "pass an int, float, bool, str or a tuple of them")) from None
                comptimes.append(a)
            else:
                raise LaunchError(hinted(f"launch of `{name}`: argument `{step[2]}` has no "
                                         "launchable type",
                                         "annotate it with a scalar type, Slice[...], "
                                         "Tensor[...], Comptime[...] or a @cube_type"))
        alignment = self._views(name, launcher, plan, size_of, props) if views else 0
        key = (cube_dim, tuple(sizes), tuple(comptimes), alignment)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = KernelInstance(self.fn, self.mode, cube_dim, dict(types), size_of,
                                    tuple(comptimes), alignment)
            self._kernels[key] = kernel
        bindings = launcher.launch(client, kernel, cube_count, name)
        if self._kinds is not None:  # keep it for the next launch with equal arguments
            try:
                memo = Memo(client, cube_dim, self._kinds, tuple(sizes) + args, kernel,
                            bindings, self._buffer_pos)
            except TypeError:  # a stand-in client took a buffer without a Handle: no memo
                return
            memos = self._memos
            memos.insert(0, memo)
            del memos[MEMO_SIZE:]

    def _views(self, name: str, launcher: KernelLauncher, plan: list[tuple[Any, ...]],
               size_of: dict[str, int], props: Any) -> int:
        """A launch with buffer views (seed 001's `(kernel_id, alignment)` key): the alignment
        of their offsets — the lowest set bit of every view's offset, folded, at most the
        device's binding alignment `A` — and, when it is below `A` (some view starts where a
        buffer cannot be bound), the launch of a kernel compiled for it: each slice is bound
        from its offset rounded down to `A` (runtime's `binding_start`), with the items before
        the view added to its length and their count appended as a hidden u32 scalar, which
        the kernel skips (`KernelInstance.define`). Returns the alignment in the key: 0 when
        every view is bound where it starts (the kernel is the usual one)."""
        bind = props.memory_alignment
        align = bind
        buffers = launcher.buffers
        for b in buffers:
            off = b.handle.offset
            if off:
                align = min(align, off & -off)
        if align >= bind:
            return 0
        steps = [st for st in plan if st[0] == "buffer"]
        hidden = []
        for i, (b, st) in enumerate(zip(buffers, steps)):
            skip = b.handle.offset % bind
            if st[6]:  # a tensor is bound whole, with its strides: it cannot skip
                if skip:
                    raise LaunchError(hinted(
                        f"launch of `{name}`: tensor `{b.name}` is a view starting "
                        f"{b.handle.offset} bytes into its buffer, not a multiple of this "
                        f"device's binding alignment ({bind} bytes)",
                        f"start tensor views at a multiple of {bind}, or pass it as a Slice"))
                continue
            width = st[3] if st[3] is not None else size_of[st[4]]
            item = 4 * width
            if skip % item:
                raise LaunchError(hinted(
                    f"launch of `{name}`: `{b.name}` is a view starting {b.handle.offset} bytes "
                    f"into its buffer, which is not a whole number of its {item}-byte items",
                    f"start views of vec{width} items at multiples of {item} bytes"))
            buffers[i] = BufferBinding(b.handle, b.items + skip // item, b.writable, b.name,
                                       b.shape, b.strides)
            hidden.append(skip // item)
        launcher.scalars.setdefault("u32", []).extend(hidden)
        return align

    def _defined_types(self, name: str, plan: list[tuple[Any, ...]],
                       args: tuple[Any, ...]) -> dict[str, ScalarKind]:
        """The launch's element types: those given as `launch[...]` and those the `Define[T]`
        arguments choose (CubeCL's `#[define(T)]`), in the kernel's generic order."""
        chosen = dict(self.types)
        for step, a in zip(plan, args):
            if step[0] != "define":
                continue
            g = step[3]
            kind = scalar_kind_of(a)
            if kind is None or not g.accepts(kind):
                want = "f32, i32 or u32" if g.family == "Numeric" else \
                    ("f32" if g.family == "Float" else "i32 or u32")
                raise LaunchError(hinted(
                    f"launch of `{name}`: argument `{step[2]}` chooses the element type {g.name} "
                    f"(a {g.family}), got {a!r}", f"pass {want} (or the numpy dtype, e.g. "
                    "x.dtype)"))
            chosen[g.name] = kind
        return {n: chosen[n] for n in self.type_order}

    def _check_dim(self, name: str, cube_dim: CubeDim, props: Any) -> None:
        check_cube_dim(name, cube_dim, props)
        self._dims_ok[(cube_dim, id(props))] = props  # holds props: its id stays unique
