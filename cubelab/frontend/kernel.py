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
import builtins as _b
import hashlib
import inspect
import linecache
import sys
import textwrap
import typing
from dataclasses import dataclass
from typing import Any, Callable

from cubelab.errors import KernelCallError, KernelSourceError, api_boundary, hinted
from cubelab.frontend import aggregate_launch, aggregates, fingerprint, ops
from cubelab.frontend.operands import KERNEL_VALUES, error
from cubelab.frontend.instance import KernelInstance
from cubelab.frontend.launch import Launcher, NoLauncher
from cubelab.frontend.rewrite import Rewritten, rewrite
from cubelab.frontend.types import (
    ArrayKind,
    BufferSpec,
    ComptimeSpec,
    DefineSpec,
    GenericScalar,
    GenericSize,
    ScalarKind,
    VectorSpec,
    Float,
    Int,
    Size,
    bool_,
    from_type_param,
)
from cubelab.ir.scope import Scope
from cubelab.runtime.kernel_id import ExecutionMode

__all__ = ["CubeFunction", "KernelInstance", "cube"]

_PY_SCALARS = {bool: bool_}


@dataclass
class Param:
    name: str
    # "buffer" | "scalar" | "comptime" | "define" (Define[T]: binds T at launch) | "aggregate"
    # (a @cube_type) | "any" (helpers)
    kind: str
    spec: Any
    lineno: int
    col: int


def _type_var_spec(tv: Any) -> Any:
    """PEP 695 `def k[F: Float, N: Size](...)`: map each TypeVar to a cubelab generic."""
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
        try:
            src_lines, start = inspect.getsourcelines(fn)
        except OSError:
            # The plain Python prompt and `python -c` keep no source; cubelab expands the
            # kernel's source (as #[cube] expands its tokens), so it cannot go on.
            raise KernelSourceError(
                fn.__name__, self.file, self.first_line, 0,
                "cubelab cannot read this function's source (the plain Python prompt and "
                "`python -c` keep none), and a kernel is built from its source",
                "define it in a .py file, a notebook cell or a `%%cube` cell (IPython's "
                "prompt keeps the source too)", source_line="") from None
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
        self.check_names_at_decoration()
        self.launch: Any = (Launcher(self, ExecutionMode.Checked) if launch
                            else NoLauncher(self, "launch"))
        self.launch_unchecked: Any = (Launcher(self, ExecutionMode.Unchecked) if launch_unchecked
                                      else NoLauncher(self, "launch_unchecked"))
        self.Kernel = KernelInstance

    # -- decoration-time work -----------------------------------------------------------------
    def _parse(self) -> ast.FunctionDef:
        text = textwrap.dedent(self.source)
        indent = len(self.source) - len(self.source.lstrip(" \t")) if self.source[:1] in " \t" \
            else 0
        tree = ast.parse(text)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise TypeError(hinted("@cube decorates functions",
                                   "put @cube(launch=True) right above a `def`"))
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
                                  f"cannot resolve the annotation of `{p.arg}`: {exc}",
                                  "import or define the type before the kernel (from "
                                  "cubelab.prelude import *)") from None
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
            elif isinstance(ann, DefineSpec):
                # the launch's value binds the generic (launch.py); a helper gets the type
                out.append(Param(p.arg, "define" if self.is_kernel else "any", ann, p.lineno,
                                 p.col_offset))
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
            elif isinstance(ann, ArrayKind) and not self.is_kernel:
                # a helper taking the caller's local or shared array (CubeCL's `&mut Array<T>`):
                # the array itself is passed, so the helper's writes are the caller's
                out.append(Param(p.arg, "any", ann, p.lineno, p.col_offset))
            elif aggregates.is_cube_type(ann):
                # a @cube_type struct or enum: a launch argument flattened into its fields
                out.append(Param(p.arg, "aggregate" if self.is_kernel else "any", ann,
                                 p.lineno, p.col_offset))
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
            elif p.kind == "aggregate":
                for g in aggregate_launch.generics_of(p.spec):
                    add(g)
            elif p.kind == "define":
                add(p.spec.generic)
        # a generic named only in the body (`for k in unroll(range(N))`, `F.new(0.0)`) is bound
        # at launch too, after those of the signature
        for name in self.rewritten.free_names:
            add(self.fn.__globals__.get(name))
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
        seen: set[int] = set()
        parts: list[str] = []

        def visit(f: "CubeFunction") -> None:
            if id(f) in seen:
                return
            seen.add(id(f))
            parts.append(f.source)
            # the @cube_type classes it takes or builds: their layout is compiled in
            types = [p.spec for p in f.params if aggregates.is_cube_type(p.spec)]
            for name in f.rewritten.free_names:
                g = f.fn.__globals__.get(name)
                if isinstance(g, CubeFunction):
                    visit(g)
                elif aggregates.is_cube_type(g):
                    types.append(g)
            parts.extend(aggregates.signature(t) for t in types)

        visit(self)
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
        DEFINED_AT[digest] = (self.file, self.first_line)
        return digest

    def fingerprint(self) -> str:
        """`origin()` plus the values of the globals this kernel and its helpers read, as one
        digest: the frontend's part of the persistent store's key (`frontend/fingerprint.py`).
        Read when a kernel is compiled, never per launch."""
        seen: dict[int, str] = {}

        def of(f: Any) -> str | None:
            if not isinstance(f, CubeFunction):
                return None
            if id(f) in seen:
                return seen[id(f)]
            seen[id(f)] = "(recursive)"
            parts = [f.source]
            closure = dict(zip(f.fn.__code__.co_freevars,
                               (c.cell_contents for c in f.fn.__closure__ or ())))
            for name in sorted(f.rewritten.free_names):
                if name in closure:
                    v = closure[name]
                elif name in f.fn.__globals__:
                    v = f.fn.__globals__[name]
                else:
                    v = getattr(_b, name, None)
                parts.append(f"{name}={fingerprint.value_text(v, of)}")
            seen[id(f)] = fingerprint.digest(parts)
            return seen[id(f)]

        return fingerprint.digest([self.origin(), of(self) or ""])

    # -- name checks: at decoration for typos, at the first launch for the rest ---------------
    def _unresolved(self) -> list[tuple[str, int, int]]:
        import builtins as _b

        closure = set(self.fn.__code__.co_freevars)
        return [(name, line, col) for name, (line, col) in self.rewritten.free_names.items()
                if not (name in closure or name in self.fn.__globals__ or hasattr(_b, name)
                        or name in self._type_vars)]

    def _unknown_name(self, name: str, line: int, col: int) -> KernelSourceError:
        import builtins as _b
        import difflib

        known = [*self.fn.__globals__, *self.fn.__code__.co_freevars, *self._type_vars,
                 *(n for n in dir(_b) if not n.startswith("_"))]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = (f"did you mean `{close[0]}`? " if close else "") + \
            "define it (or import it) before the kernel, or pass it as an argument"
        return self._error(line, col, f"unknown name `{name}`", hint)

    def check_names_at_decoration(self) -> None:
        """A name that is bound nowhere — not in the kernel's globals, the builtins, its
        closure, nor anywhere in the file or cell that defines it — can only be a typo: refuse
        it now, so the cell holding the typo is the one that fails. A name the file binds later
        (a helper defined below the kernel that calls it) waits for the first launch."""
        unresolved = self._unresolved()
        if not unresolved:
            self._names_checked = True
            return
        bound = _names_bound_in("".join(self.file_lines))
        if bound is None:
            return  # the file does not parse on its own (an exec'd string): wait for launch
        for name, line, col in unresolved:
            if name not in bound:
                raise self._unknown_name(name, line, col)

    def check_names(self) -> None:
        """On the calling thread, once, before the first launch or inlining."""
        if self._names_checked:
            return
        for name, line, col in self._unresolved():
            raise self._unknown_name(name, line, col)
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
            raise error(s, f"`{self.__name__}` takes {len(self.params)} arguments, got "
                            f"{len(args)}", "pass one value per parameter, in order")
        if self.__name__ in s.call_stack:
            raise error(s, f"`{self.__name__}` calls itself (recursion)",
                            "kernels cannot recurse; write a loop")
        self.check_names()
        for p, a in zip(self.params, args):
            if p.kind == "comptime" and isinstance(a, KERNEL_VALUES):
                raise error(s, f"argument `{p.name}` of `{self.__name__}` is Comptime but "
                                "got a runtime value", "pass a Python value or comptime(...)")
        saved_file, saved_kernel = s.file, s.kernel_name
        s.call_stack.append(self.__name__)
        s.file = self.file
        try:
            return self.expand_fn()(s, *args)
        finally:
            s.call_stack.pop()
            s.file = saved_file

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self.__name__
        if self.is_kernel:
            how = "launch" if isinstance(self.launch, Launcher) else "launch_unchecked"
            raise KernelCallError(hinted(
                f"`{name}` is a @cube kernel: kernels are launched, not called",
                f"write {name}.{how}[...](client, cube_count, cube_dim, ...)"))
        raise KernelCallError(hinted(
            f"`{name}` is a @cube helper: it runs only inside a kernel, where calling "
            f"`{name}(...)` inlines it",
            "to run it on its own, call it from a @cube(launch=True) kernel and launch that"))

    def __repr__(self) -> str:
        kind = "kernel" if self.is_kernel else "helper"
        return f"<@cube {kind} {self.__name__}>"


def _names_bound_in(text: str) -> set[str] | None:
    """The global names a file or cell binds at its top level (assignments, defs, classes,
    imports, loop targets; not the locals of its functions), or None when it does not parse on
    its own. A star import adds nothing here: it ran before the decorator, so its names are
    already in the kernel's globals."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        # a notebook cell may hold IPython syntax (`%%cube`, `%time`, `!ls`): blank those lines
        lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in text.split("\n")]
        try:
            tree = ast.parse("\n".join(lines))
        except (SyntaxError, ValueError):
            return None
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.Global):
            names.update(node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names


# KernelId.origin (a source digest) → where that source was last defined (file, first line):
# views tell apart ids that differ only by their source — a kernel defined again in another
# cell — by naming the place ("defined at Cell In[9], line 2") instead of a hash.
DEFINED_AT: dict[str, tuple[str, int]] = {}


@api_boundary
def cube(fn: Callable[..., Any] | None = None, *, launch: bool = False,
         launch_unchecked: bool = False) -> Any:
    """Turn a Python function into a cubelab kernel (`launch=True`) or helper.

        @cube(launch=True, launch_unchecked=True)
        def add(x: Slice[F], y: Slice[F], out: SliceMut[F], relu: Comptime[bool]): ...
    """
    if fn is not None:
        return _decorate(fn, launch, launch_unchecked)

    @api_boundary  # `@cube(...)` calls this from the student's line: no cubelab frame above it
    def wrap(f: Callable[..., Any]) -> CubeFunction:
        return _decorate(f, launch, launch_unchecked)

    return wrap


@api_boundary
def _decorate(fn: Callable[..., Any], launch: bool, launch_unchecked: bool) -> CubeFunction:
    return CubeFunction(fn, launch, launch_unchecked)


if sys.version_info < (3, 11):  # pragma: no cover
    raise ImportError(hinted("cubelab needs Python >= 3.11",
                             "run it with python3.11 or newer (bash scripts/lab.sh sets up one)"))
