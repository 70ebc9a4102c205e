"""`@cube`: what the decorator produces, mirroring the seed's table.

| item                        | role                                                  | runs        |
|-----------------------------|-------------------------------------------------------|-------------|
| the original function       | kept for introspection; calling it is an error        | never       |
| `saxpy.expand(scope, ...)`  | generated code registering IR ops (see `rewrite.py`)  | device thread, first compile of a KernelId |
| `saxpy.Kernel` / `Info`     | one launch's compile-time arguments                   | built by `launch` |
| `Kernel.id()`               | the KernelId (cache key)                              | cache lookup |
| `Kernel.define()`           | IR values per argument, then `expand`                 | cache miss only |
| `saxpy.launch[...]`         | registers runtime arguments, builds the Kernel, submits | calling thread, every call |

`launch` builds no IR: it checks and packs the arguments, finds (or builds, once per distinct
compile-time signature) the `Kernel` object, and hands it to `client.launch`.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import struct
import sys
import textwrap
import typing
from dataclasses import dataclass
from typing import Any, Callable

from cubelab.errors import KernelSourceError, LaunchError
from cubelab.frontend import ops
from cubelab.frontend.rewrite import ParamInfo, Rewritten, rewrite
from cubelab.frontend.types import (
    BufferSpec,
    ComptimeSpec,
    GenericScalar,
    GenericSize,
    ScalarKind,
    VectorSpec,
    bool_,
    from_type_param,
    f32,
    i32,
    u32,
)
from cubelab.frontend.values import RV, BufferRef
from cubelab.ir.core import BufferParam, KernelDefinition, ScalarParam
from cubelab.ir.scope import Scope
from cubelab.ir.types import Pointer, RuntimeArray
from cubelab.runtime.handle import BufferArg, ScalarArg, TensorArg
from cubelab.runtime.kernel import (
    BUFFER_COMPILATION_ARG,
    SCALAR_COMPILATION_ARG,
    AddressType,
    BufferBinding,
    Bindings,
    CubeCount,
    CubeDim,
    DebugStruct,
    ExecutionMode,
    KernelId,
)

_PY_SCALARS = {bool: bool_}


@dataclass
class Param:
    name: str
    kind: str  # "buffer" | "scalar" | "comptime"
    spec: Any
    lineno: int
    col: int


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p) or name


def _type_var_spec(tv: Any) -> Any:
    """PEP 695 `def k[F: Float, N: Size](...)`: map each TypeVar to a cubelab generic."""
    from cubelab.frontend.types import Float, Int, Size

    bound = getattr(tv, "__bound__", None)
    if bound is Float or bound is Int:
        return GenericScalar(tv.__name__, bound.name)
    if bound is Size:
        return GenericSize(tv.__name__)
    return None


class CubeFunction:
    """A `@cube` function: a helper (inlined where it is called) or a kernel with launchers."""

    def __init__(self, fn: Callable[..., Any], launch: bool, launch_unchecked: bool) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.is_kernel = launch or launch_unchecked
        self.file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        self.first_line = fn.__code__.co_firstlineno
        src_lines, start = inspect.getsourcelines(fn)
        self.source = "".join(src_lines)
        self.first_line = start
        file_lines = linecache.getlines(self.file)
        self.file_lines = file_lines if file_lines else [""] * (start - 1) + src_lines
        self._type_vars = {tv.__name__: _type_var_spec(tv)
                           for tv in getattr(fn, "__type_params__", ())}
        fn_node = self._parse()
        self.params = self._params(fn_node)
        readonly = {p.name for p in self.params
                    if p.kind == "buffer" and not p.spec.writable}
        self.rewritten: Rewritten = rewrite(fn_node, fn.__name__, self.file, self.file_lines,
                                            readonly, not self.is_kernel)
        self._make = self._compile_expand()
        self.generics = self._collect_generics()
        self._names_checked = False
        self.launch = _Launcher(self, ExecutionMode.Checked) if launch else None
        self.launch_unchecked = (_Launcher(self, ExecutionMode.Unchecked)
                                 if launch_unchecked else None)
        self.Kernel = KernelInstance

    # -- decoration-time work -----------------------------------------------------------------
    def _parse(self) -> ast.FunctionDef:
        text = textwrap.dedent(self.source)
        indent = len(self.source) - len(self.source.lstrip(" \t")) if self.source[:1] in " \t" \
            else 0
        tree = ast.parse(text)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise TypeError("@cube decorates functions")
        ast.increment_lineno(node, self.first_line - 1)
        if indent:
            for sub in ast.walk(node):
                if hasattr(sub, "col_offset"):
                    sub.col_offset += indent  # type: ignore[attr-defined]
                    if getattr(sub, "end_col_offset", None) is not None:
                        sub.end_col_offset += indent  # type: ignore[attr-defined]
        node.decorator_list = []
        return node

    def _error(self, lineno: int, col: int, message: str, hint: str = "") -> KernelSourceError:
        line = self.file_lines[lineno - 1] if 0 < lineno <= len(self.file_lines) else None
        return KernelSourceError(self.__name__, self.file, lineno, col, message, hint, line)

    def _annotation(self, p: ast.arg) -> Any:
        try:
            hints = typing.get_type_hints(self.fn, include_extras=True)
        except Exception:  # noqa: BLE001 - fall back to raw annotations
            hints = dict(getattr(self.fn, "__annotations__", {}))
        ann = hints.get(p.arg, self.fn.__annotations__.get(p.arg))
        if isinstance(ann, str):
            try:
                ann = eval(ann, self.fn.__globals__, dict(self._type_vars))  # noqa: S307
            except Exception as exc:  # noqa: BLE001
                raise self._error(p.lineno, p.col_offset,
                                  f"cannot resolve the annotation of `{p.arg}`: {exc}") from None
        return ann

    def _params(self, node: ast.FunctionDef) -> list[Param]:
        out: list[Param] = []
        for p in node.args.args:
            if p.annotation is None:
                if self.is_kernel:
                    raise self._error(
                        p.lineno, p.col_offset,
                        f"kernel argument `{p.arg}` has no type annotation",
                        f"annotate it, e.g. `{p.arg}: Slice[f32]`, `{p.arg}: f32` or "
                        f"`{p.arg}: Comptime[bool]`",
                    )
                out.append(Param(p.arg, "any", None, p.lineno, p.col_offset))
                continue
            ann = self._annotation(p)
            ann = self._map_typevars(ann)
            if isinstance(ann, ComptimeSpec):
                out.append(Param(p.arg, "comptime", ann, p.lineno, p.col_offset))
            elif isinstance(ann, BufferSpec):
                out.append(Param(p.arg, "buffer", ann, p.lineno, p.col_offset))
            elif isinstance(ann, ScalarKind) or ann in _PY_SCALARS:
                out.append(Param(p.arg, "scalar", _PY_SCALARS.get(ann, ann), p.lineno,
                                 p.col_offset))
            elif isinstance(ann, (GenericScalar, VectorSpec)):
                if self.is_kernel:
                    raise self._error(
                        p.lineno, p.col_offset,
                        f"scalar argument `{p.arg}` has the generic type {ann!r}",
                        "scalar arguments need a concrete type (as in CubeCL): write "
                        f"`{p.arg}: f32` and convert inside with F.cast_from({p.arg})",
                    )
                out.append(Param(p.arg, "any", ann, p.lineno, p.col_offset))
            elif ann in (int, float):
                raise self._error(p.lineno, p.col_offset,
                                  f"`{p.arg}: {ann.__name__}` is a Python type",
                                  "use a kernel type: f32, i32 or u32 (or Comptime[int])")
            else:
                raise self._error(p.lineno, p.col_offset,
                                  f"`{p.arg}` has an annotation cubelab does not know: {ann!r}",
                                  "use Slice[T], SliceMut[T], f32/i32/u32/bool or Comptime[T]")
        return out

    def _map_typevars(self, ann: Any) -> Any:
        if not self._type_vars:
            return ann
        tv = getattr(ann, "__name__", None)
        if isinstance(ann, typing.TypeVar) and tv in self._type_vars:
            return self._type_vars[tv]
        return ann

    def _collect_generics(self) -> list[GenericScalar | GenericSize]:
        found: list[GenericScalar | GenericSize] = []

        def add(g: Any) -> None:
            if isinstance(g, (GenericScalar, GenericSize)) and all(g.name != f.name
                                                                   for f in found):
                found.append(g)

        for tv in self._type_vars.values():
            add(tv)
        for p in self.params:
            if p.kind == "buffer":
                add(p.spec.elem_spec)
                add(p.spec.width_spec)
        return found

    def _compile_expand(self) -> Callable[..., Any]:
        free = list(self.fn.__code__.co_freevars)
        body = textwrap.indent(self.rewritten.source, "    ")
        src = f"def __make(__cl{''.join(', ' + f for f in free)}):\n{body}\n    return expand\n"
        filename = f"<cubelab expand {self.__name__}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        code = compile(src, filename, "exec")
        namespace: dict[str, Any] = {}
        exec(code, self.fn.__globals__, namespace)  # noqa: S102 - our own generated source
        return namespace["__make"]  # type: ignore[no-any-return]

    def origin(self) -> str:
        """Digest of this function's source and of the @cube helpers it names (see KernelId)."""
        import hashlib

        seen: set[int] = set()
        parts: list[str] = []

        def visit(f: "CubeFunction") -> None:
            if id(f) in seen:
                return
            seen.add(id(f))
            parts.append(f.source)
            for name in f.rewritten.free_names:
                g = f.fn.__globals__.get(name)
                if isinstance(g, CubeFunction):
                    visit(g)

        visit(self)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    # -- name check on the calling thread, once ----------------------------------------------
    def check_names(self) -> None:
        if self._names_checked:
            return
        import builtins as _b

        closure = set(self.fn.__code__.co_freevars)
        for name, (line, col) in self.rewritten.free_names.items():
            if name in closure or name in self.fn.__globals__ or hasattr(_b, name):
                continue
            if name in self._type_vars:
                continue
            raise self._error(line, col, f"unknown name `{name}`",
                              "define it at module level (or import it) before launching, or "
                              "pass it as an argument")
        self._names_checked = True

    # -- expansion ----------------------------------------------------------------------------
    def expand_fn(self) -> Callable[..., Any]:
        # PEP 695 type parameters reach the body as closure cells holding TypeVars: hand the
        # expansion the cubelab generics they stand for.
        cells = [from_type_param(c.cell_contents) for c in (self.fn.__closure__ or ())]
        scope_globals = self._make(ops, *cells)
        return scope_globals  # type: ignore[no-any-return]

    @property
    def expand_source(self) -> str:
        return self.rewritten.source

    def _expand_call(self, s: Scope, *args: Any) -> Any:
        """Called from another kernel: inline this helper's expansion at the call site."""
        if len(args) != len(self.params):
            raise ops.error(s, f"`{self.__name__}` takes {len(self.params)} arguments, got "
                            f"{len(args)}")
        if self.__name__ in s.call_stack:
            raise ops.error(s, f"`{self.__name__}` calls itself (recursion)",
                            "kernels cannot recurse; write a loop")
        self.check_names()
        for p, a in zip(self.params, args):
            if p.kind == "comptime" and isinstance(a, ops._KERNEL_VALUES):
                raise ops.error(s, f"argument `{p.name}` of `{self.__name__}` is Comptime but "
                                "got a runtime value", "pass a Python value or comptime(...)")
        saved_file, saved_kernel = s.file, s.kernel_name
        s.call_stack.append(self.__name__)
        s.file = self.file
        try:
            return self.expand_fn()(s, *args)
        finally:
            s.call_stack.pop()
            s.file = saved_file

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"`{self.__name__}` is a @cube function: kernels are launched, not called "
            f"({self.__name__}.launch[...](client, cube_count, cube_dim, ...)); helpers are "
            "called from inside other kernels"
        )

    def __repr__(self) -> str:
        kind = "kernel" if self.is_kernel else "helper"
        return f"<@cube {kind} {self.__name__}>"


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


def _check_aliasing(kernel: str, buffers: list[BufferBinding]) -> None:
    """WebGPU refuses a dispatch that binds one buffer both read-only and writable."""
    seen: dict[int, BufferBinding] = {}
    for b in buffers:
        other = seen.get(b.handle.id)
        if other is not None and other.writable != b.writable:
            ro, rw = (other, b) if b.writable else (b, other)
            raise LaunchError(
                f"launch of `{kernel}`: the same buffer is bound as `{ro.name}` (read-only) and "
                f"`{rw.name}` (writable); a dispatch cannot read a buffer through one binding "
                "while writing it through another. Use a separate output buffer."
            )
        seen[b.handle.id] = b


class _Launcher:
    """`kernel.launch` / `kernel.launch_unchecked`: index with the generic types, then call."""

    def __init__(self, fn: CubeFunction, mode: ExecutionMode) -> None:
        self.fn = fn
        self.mode = mode
        self._bound: dict[tuple[Any, ...], _BoundLauncher] = {}

    def __getitem__(self, types: Any) -> "_BoundLauncher":
        key = types if isinstance(types, tuple) else (types,)
        bound = self._bound.get(key)
        if bound is None:
            bound = _BoundLauncher(self.fn, self.mode, key)
            self._bound[key] = bound
        return bound

    def __call__(self, *args: Any) -> None:
        return self[()](*args)

    def __repr__(self) -> str:
        return f"<{self.fn.__name__}.{'launch' if self.mode is ExecutionMode.Checked else 'launch_unchecked'}>"


class _BoundLauncher:
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
            else:
                plan.append((p.kind, p, p.name))
        self._plan = plan
        return plan

    def __call__(self, client: Any, cube_count: Any, cube_dim: Any, *args: Any) -> None:
        fn = self.fn
        name = fn.__name__
        fn.check_names()
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
        buffers: list[BufferBinding] = []
        scalars: dict[str, list[Any]] = {}
        comptimes: list[Any] = []
        for step, a in zip(plan, args):
            kind = step[0]
            if kind == "buffer":
                _, p, pname, width, size_name, writable, tensor = step
                if width is None:
                    width = size_of[size_name]
                if tensor:
                    if not isinstance(a, TensorArg):
                        raise LaunchError(
                            f"launch of `{name}`: argument `{pname}` is a {p.spec!r}; pass "
                            f"TensorArg.from_raw_parts(handle, shape, strides), got "
                            f"{type(a).__name__}")
                    buffers.append(BufferBinding(a.handle, a.length // width, writable, pname,
                                                 a.shape, a.strides))
                    continue
                if not isinstance(a, BufferArg):
                    raise LaunchError(
                        f"launch of `{name}`: argument `{pname}` is a {p.spec!r}; pass "
                        f"BufferArg.from_raw_parts(handle, length), got {type(a).__name__}")
                length = a.length
                if length % width:
                    raise LaunchError(
                        f"launch of `{name}`: argument `{pname}` has length {length}, which "
                        f"the vector size {width} does not divide; pad the buffer or pick a "
                        "vector size that divides it")
                buffers.append(BufferBinding(a.handle, length // width, writable, pname))
            elif kind == "scalar":
                _, p, pname, skind, elem = step
                if skind is f32 and type(a) is float:
                    v = _f32_round(a, pname, name)
                else:
                    v = _scalar_bytes(skind, a, pname, name)
                group = scalars.get(elem)
                if group is None:
                    scalars[elem] = [v]
                else:
                    group.append(v)
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
        if len(buffers) > 1 and len({b.handle.id for b in buffers}) != len(buffers):
            _check_aliasing(name, buffers)
        key = (cube_dim, tuple(sizes), tuple(comptimes))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = KernelInstance(self.fn, self.mode, cube_dim, dict(self.types), size_of,
                                    tuple(comptimes))
            self._kernels[key] = kernel
        client.launch(kernel, cube_count, Bindings(buffers, scalars))

    def _check_dim(self, name: str, cube_dim: CubeDim, props: Any) -> None:
        dims = cube_dim.as_tuple()
        if cube_dim.num_units > props.max_units_per_cube or any(
                d > m for d, m in zip(dims, props.max_cube_dim)) or min(dims) < 1:
            raise LaunchError(
                f"launch of `{name}`: cube dim {dims} has {cube_dim.num_units} "
                f"units; the device allows 1..{props.max_units_per_cube} units per cube and at "
                f"most {props.max_cube_dim} per axis"
            )
        self._dims_ok[(cube_dim, id(props))] = props  # holds props: its id stays unique


class KernelInstance:
    """One launch's compile-time arguments (the seed's `Saxpy<F>` + `SaxpyInfo<F>`)."""

    def __init__(self, fn: CubeFunction, mode: ExecutionMode, cube_dim: CubeDim,
                 types: dict[str, ScalarKind], sizes: dict[str, int],
                 comptimes: tuple[Any, ...]) -> None:
        self.fn = fn
        self.mode = mode
        self.cube_dim = cube_dim
        self.types = types
        self.sizes = sizes
        self.comptimes = comptimes
        self.name = _camel(fn.__name__)
        module = (fn.fn.__module__ or "__main__").replace(".", "::")
        generics = ", ".join(repr(t) for t in types.values())
        type_name = f"{module}::{fn.__name__}::{self.name}" + (f"<{generics}>" if generics else "")
        fields: list[tuple[str, Any]] = [(k.lower(), v) for k, v in sizes.items()]
        it = iter(comptimes)
        for p in fn.params:
            if p.kind == "buffer":
                fields.append((p.name, BUFFER_COMPILATION_ARG))
            elif p.kind == "scalar":
                fields.append((p.name, SCALAR_COMPILATION_ARG))
            else:
                fields.append((p.name, next(it)))
        self.info = DebugStruct(f"{self.name}Info", tuple(fields))
        self._id = KernelId(type_name, AddressType.U32, cube_dim, mode, self.info,
                            fn.origin())
        parts = [fn.__name__]
        for g in fn.generics:
            value = types[g.name] if isinstance(g, GenericScalar) else sizes[g.name]
            parts.append(f"{g.name.lower()}_{value}")
        self.entry = "_".join(parts) + f"_{self._id.hash8}"
        tag = "_".join(repr(t) for t in types.values())
        self.profile_tag = f"{tag}_{self._id.hash8}" if tag else self._id.hash8

    def id(self) -> KernelId:
        return self._id

    def define(self) -> KernelDefinition:
        fn = self.fn
        scope = Scope(types={**self.types, **self.sizes, "__cube_dim__": self.cube_dim.as_tuple()},
                      file=fn.file, kernel_name=fn.__name__)
        args: list[Any] = []
        buffers: list[BufferParam] = []
        scalars: list[ScalarParam] = []
        per_elem: dict[str, int] = {}
        comptimes = iter(self.comptimes)
        for p in fn.params:
            scope.at(p.lineno, p.col)
            if p.kind == "buffer":
                item = p.spec.item_ty(scope)
                v = scope.new_value(Pointer(RuntimeArray(item), "global", p.spec.writable), p.name)
                buffers.append(BufferParam(  # type: ignore[arg-type]
                    p.name, len(buffers), item, p.spec.writable, v, tensor=p.spec.tensor))
                args.append(BufferRef(v, p.name, p.spec.writable, p.spec.tensor))
            elif p.kind == "scalar":
                elem = p.spec.elem.value
                idx = per_elem.get(elem, 0)
                per_elem[elem] = idx + 1
                scalars.append(ScalarParam(p.name, elem, idx))
                val = scope.emit_prologue(("scalar", p.name), "info.scalar", [], p.spec.ty,
                                          elem=elem, index=idx)
                args.append(RV(val))
            else:
                args.append(next(comptimes))
        scope.loc = None
        fn.expand_fn()(scope, *args)
        return KernelDefinition(
            name=fn.__name__, entry=self.entry, cube_dim=self.cube_dim.as_tuple(),
            buffers=buffers, scalars=scalars, body=scope.root, source_file=fn.file,
            source_lines=fn.source.splitlines(), first_line=fn.first_line,
            required_features=set(scope.features),
        )

    def __repr__(self) -> str:
        return f"<Kernel {self.entry}>"


def cube(fn: Callable[..., Any] | None = None, *, launch: bool = False,
         launch_unchecked: bool = False) -> Any:
    """Turn a Python function into a cubelab kernel (`launch=True`) or helper.

        @cube(launch=True, launch_unchecked=True)
        def add(x: Slice[F], y: Slice[F], out: SliceMut[F], relu: Comptime[bool]): ...
    """
    if fn is not None:
        return CubeFunction(fn, launch, launch_unchecked)

    def wrap(f: Callable[..., Any]) -> CubeFunction:
        return CubeFunction(f, launch, launch_unchecked)

    return wrap


if sys.version_info < (3, 11):  # pragma: no cover
    raise ImportError("cubelab needs Python >= 3.11")
