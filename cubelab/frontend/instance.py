"""`KernelInstance`: one launch's compile-time arguments — the seed's `Saxpy<F>` + `SaxpyInfo<F>`.

It is what the runtime receives as a `CubeKernel`: `id()` is the KernelId (computed once, at
construction, so a cache-hit launch pays nothing for it) and `define()` builds the IR — IR values
for every argument, then the kernel's generated `expand` — on the device thread, on a cache miss.
`launch` (`launch.py`) builds one per distinct compile-time signature and reuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cubelab.errors import CubeError, KernelSourceError
from cubelab.frontend import aggregate_launch
from cubelab.frontend.operands import spec_written
from cubelab.frontend.types import BufferSpec, GenericScalar, ScalarKind, u32
from cubelab.frontend.values import RV, BufferRef, SliceView
from cubelab.ir.core import BufferParam, KernelDefinition, ScalarParam
from cubelab.ir.scope import Scope
from cubelab.ir.types import U32, Pointer, RuntimeArray
from cubelab.runtime.kernel_id import (
    BUFFER_COMPILATION_ARG,
    SCALAR_COMPILATION_ARG,
    AddressType,
    CubeDim,
    DebugStruct,
    ExecutionMode,
    KernelId,
)
from cubelab.runtime.properties import DeviceProperties

if TYPE_CHECKING:
    from cubelab.frontend.kernel import CubeFunction


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p) or name



class KernelInstance:
    """One launch's compile-time arguments (the seed's `Saxpy<F>` + `SaxpyInfo<F>`)."""

    def __init__(self, fn: CubeFunction, mode: ExecutionMode, cube_dim: CubeDim,
                 types: dict[str, ScalarKind], sizes: dict[str, int],
                 comptimes: tuple[Any, ...], alignment: int = 0) -> None:
        self.fn = fn
        # 0, or the alignment of the launch's buffer views when one starts off the device's
        # binding alignment: each slice argument is then the view of its binding that starts
        # a hidden offset in (`define`; frontend/launch.py computes the offsets)
        self.alignment = alignment
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
            elif p.kind == "aggregate":
                fields.append((p.name, aggregate_launch.compilation_arg(p.spec, next(it))))
            else:
                fields.append((p.name, next(it)))
        self.info = DebugStruct(f"{self.name}Info", tuple(fields))
        self._id = KernelId(type_name, AddressType.U32, cube_dim, mode, self.info,
                            fn.origin(), alignment)
        parts = [fn.__name__]
        for g in fn.generics:
            value = types[g.name] if isinstance(g, GenericScalar) else sizes[g.name]
            parts.append(f"{g.name.lower()}_{value}")
        self.entry = "_".join(parts) + f"_{self._id.hash8}"
        tag = "_".join(repr(t) for t in types.values())
        self.profile_tag = f"{tag}_{self._id.hash8}" if tag else self._id.hash8

    def id(self) -> KernelId:
        return self._id

    def fingerprint(self) -> str:
        """Everything this kernel's expansion reads besides the KernelId (its globals' values,
        its helpers'): the frontend's part of the persistent store's key."""
        return self.fn.fingerprint()

    def define(self, properties: DeviceProperties | None = None) -> KernelDefinition:
        """The IR of this KernelId, built by the kernel's `expand`. `properties`: the compiling
        device's (what `device_properties()` reads; the defaults for a preview without one)."""
        fn = self.fn
        scope = Scope(types={**self.types, **self.sizes, "__cube_dim__": self.cube_dim.as_tuple()},
                      file=fn.file, kernel_name=fn.__name__)
        scope.device_properties = properties if properties is not None else DeviceProperties()
        args: list[Any] = []
        buffers: list[BufferParam] = []
        scalars: list[ScalarParam] = []
        per_elem: dict[str, int] = {}
        comptimes = iter(self.comptimes)

        def new_buffer(name: str, spec: BufferSpec) -> BufferRef:
            item = spec.item_ty(scope)
            v = scope.new_value(Pointer(RuntimeArray(item), "global", spec.writable), name)
            buffers.append(BufferParam(  # type: ignore[arg-type]
                name, len(buffers), item, spec.writable, v, tensor=spec.tensor))
            return BufferRef(v, name, spec.writable, spec.tensor, spec_written(spec.elem_spec))

        def new_scalar(name: str, kind: ScalarKind) -> RV:
            elem = kind.elem.value
            idx = per_elem.get(elem, 0)
            per_elem[elem] = idx + 1
            scalars.append(ScalarParam(name, elem, idx))
            return RV(scope.emit_prologue(("scalar", name), "info.scalar", [], kind.ty,
                                          elem=elem, index=idx), w=(False, elem))

        views: list[tuple[int, BufferRef]] = []  # (argument position, its binding)
        for p in fn.params:
            scope.at(p.lineno, p.col)
            if p.kind == "buffer" and self.alignment and not p.spec.tensor:
                views.append((len(args), new_buffer(p.name, p.spec)))
                args.append(None)  # the view of its binding, made below
            elif p.kind == "buffer":
                args.append(new_buffer(p.name, p.spec))
            elif p.kind == "scalar":
                args.append(new_scalar(p.name, p.spec))
            elif p.kind == "aggregate":  # flattened in the order launch registered it
                args.append(aggregate_launch.define_arg(scope, p.spec, next(comptimes), p.name,
                                                  new_buffer, new_scalar))
            else:
                args.append(next(comptimes))
        # A launch with unaligned buffer views (frontend/launch.py): each slice's binding starts
        # at its view's offset rounded down to the binding alignment, and a hidden u32 scalar
        # (after the kernel's own) says how many items in the view starts; the argument the
        # body sees is the rest of the binding, a sub-slice, so len(), indexing and the bounds
        # rules are those of `x[a:]`.
        for position, buf in views:
            offset = new_scalar(f"{buf.name} view offset", u32).v
            length = scope.emit_prologue(("view len", buf.name), "buffer.len", [buf.v], U32)
            rest = scope.emit_prologue(("view rest", buf.name), "arith.sub", [length, offset],
                                       U32)
            args[position] = SliceView(buf, offset, rest, buf.writable, buf.name)
        scope.loc = None
        try:
            fn.expand_fn()(scope, *args)
        except (CubeError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - Python itself failed on a line of the kernel
            raise _python_failed(scope, exc) from exc
        return KernelDefinition(
            name=fn.__name__, entry=self.entry, cube_dim=self.cube_dim.as_tuple(),
            buffers=buffers, scalars=scalars, body=scope.root, source_file=fn.file,
            source_lines=fn.source.splitlines(), first_line=fn.first_line,
            required_features=set(scope.features), tensor_indexing=scope.tensor_indexing,
        )

    def __repr__(self) -> str:
        return f"<Kernel {self.entry}>"


def _python_failed(scope: Scope, exc: Exception) -> KernelSourceError:
    """Plain Python raised while a kernel was being expanded — `i32(7 // 0)` computes `7 // 0`
    on Python ints, at expansion. Name the kernel line being expanded (the seed would call it an
    expansion panic) instead of a bare exception with no place."""
    loc = scope.loc
    line, col = (loc.line, loc.col) if loc is not None else (0, 0)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return KernelSourceError(
        scope.kernel_name, scope.file, line, col,
        f"Python raised {what} while expanding this line (the expansion panicked)",
        "this part runs as plain Python when the kernel is built (its operands are Python "
        "values, not kernel values): fix the values, or compute it in the kernel from "
        "typed values such as i32(7)")
