"""`@cube_type` values at launch: what CubeCL's `#[derive(CubeLaunch)]` generates.

The contract. A host instance of a struct or enum (`aggregates.py`) is launch data, flattened in
field order — the one order `flatten` (calling thread, every launch) and `define_arg` (device
thread, a cache miss) both walk:

- a buffer field is a binding (named `arg.field`: what the access map and the buffer board show);
- a value field is an info-block scalar (of a concrete type: f32, i32, u32, bool);
- a `Comptime` field, and a default enum's variant, make up the argument's *key*, its part of
  the KernelId, shown as CubeCL's `JobCompilationArg { data: BufferCompilationArg { .. },
  scale: (), mode: square }` (`compilation_arg`; `key_from_compilation_arg` reads it back for
  the inspector's `instance_from_id`);
- a runtime-variants enum is its u32 tag, then every variant's fields (zero for those it is
  not): one kernel serves every variant.

The trap: both walks must agree, field by field, or a scalar lands in another's slot. They share
the field order of `StructInfo.fields` and nothing else; `tests/test_cubecl_parity_types.py`
launches each shape (struct, nested struct, default and runtime enums, buffer payloads).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from cubelab.errors import LaunchError, hinted
from cubelab.frontend.aggregates import (
    RuntimeEnum,
    StructInfo,
    enum_info,
    instance,
    is_host_instance,
    field_label,
    new_field,
    struct_info,
)
from cubelab.frontend.operands import store_local
from cubelab.frontend.types import BufferSpec, ScalarKind, VectorSpec, u32
from cubelab.frontend.values import BufferRef
from cubelab.ir.scope import Scope
from cubelab.ir.types import U32, Ty
from cubelab.runtime.kernel_id import BUFFER_COMPILATION_ARG, SCALAR_COMPILATION_ARG, DebugStruct

Leaf = tuple[str, str, Any, Any]  # ("buffer" | "scalar", label, spec, host value)


def generics_of(cls: type, seen: set[int] | None = None) -> Iterator[Any]:
    """The generics a cube type's fields name (bound at launch as the signature's are)."""
    seen = seen if seen is not None else set()
    if id(cls) in seen:
        return
    seen.add(id(cls))
    e = enum_info(cls)
    infos = [struct_info(v) for v in e.variants] if e is not None and struct_info(cls) is None \
        else [struct_info(cls)]
    for info in infos:
        assert info is not None
        for f in info.fields:
            if f.kind == "buffer":
                yield f.spec.elem_spec
                yield f.spec.width_spec
            elif f.kind == "value":
                yield f.spec.elem if isinstance(f.spec, VectorSpec) else f.spec
            elif f.kind == "aggregate":
                yield from generics_of(f.spec, seen)


def flatten(cls: type, host: Any, kernel: str, label: str) -> tuple[Any, list[Leaf]]:
    """A host instance as launch data: its comptime key (part of the KernelId) and its leaves
    (buffers and scalars, in field order). Mistakes name the kernel, argument and field."""
    leaves: list[Leaf] = []
    key = _flatten(cls, host, kernel, label, leaves)
    return key, leaves


def _flatten(cls: type, host: Any, kernel: str, label: str, leaves: list[Leaf]) -> Any:
    e = enum_info(cls)
    what = cls.__qualname__
    if not isinstance(host, cls) or not is_host_instance(host):
        variants = ", ".join(f"{what}.{v.__name__}(...)" for v in e.variants) \
            if e is not None else ""
        want = f"one of its variants ({variants})" \
            if e is not None and struct_info(cls) is None else f"{what}(...)"
        raise LaunchError(hinted(f"launch of `{kernel}`: argument `{label}` is a {what}, got "
                                 f"{type(host).__name__} {host!r}", f"pass {want}"))
    info = struct_info(host)
    assert info is not None
    if e is not None and e.runtime:
        leaves.append(("scalar", field_label(label, "tag"), u32, info.index))
        for k, v in enumerate(e.variants):
            if k == info.index:
                _fields(info, host, kernel, label, leaves)
            else:
                _zero_leaves(v, field_label(label, v.__name__), leaves, kernel)
        return ("runtime",)
    key = _fields(info, host, kernel, label, leaves)
    return (info.index, key) if e is not None else key


def _fields(info: StructInfo, host: Any, kernel: str, label: str, leaves: list[Leaf]) -> Any:
    key: list[Any] = []
    for f in info.fields:
        where = field_label(label, f.name)
        if f.name not in host.__dict__:
            raise LaunchError(hinted(
                f"launch of `{kernel}`: argument `{label}` ({info.name}) has no value for its "
                f"field `{f.name}`",
                f"set it, e.g. {info.name}({', '.join(x.name + '=...' for x in info.fields)})"))
        x = host.__dict__[f.name]
        if f.kind == "buffer":
            leaves.append(("buffer", where, f.spec, x))
        elif f.kind == "value":
            leaves.append(("scalar", where, _launch_scalar(f.spec, where, kernel, "struct"), x))
        elif f.kind == "comptime":
            try:
                hash(x)
            except TypeError:
                raise LaunchError(hinted(f"launch of `{kernel}`: Comptime field `{where}` must "
                                         f"be hashable (it is part of the KernelId), got {x!r}",
                                         "use an int, float, bool, str or a tuple of them")
                                  ) from None
            key.append(x)
        else:
            key.append(_flatten(f.spec, x, kernel, where, leaves))
    return tuple(key)


def _launch_scalar(spec: Any, where: str, kernel: str, what: str) -> ScalarKind:
    """A value field's type as a launch passes it: a concrete scalar type, or the error."""
    if not isinstance(spec, ScalarKind):
        raise LaunchError(hinted(
            f"launch of `{kernel}`: field `{where}` is {spec!r}; a launch passes scalars of a "
            "concrete type (f32, i32, u32, bool)",
            f"declare the field so, or build the {what} inside the kernel"))
    return spec


def _zero_leaves(variant: type, label: str, leaves: list[Leaf], kernel: str) -> None:
    """The fields of a runtime enum's variant it is not: zero scalars."""
    info = struct_info(variant)
    assert info is not None
    for f in info.fields:
        where = field_label(label, f.name)
        if f.kind == "value":
            leaves.append(("scalar", where, _launch_scalar(f.spec, where, kernel, "enum"), 0))
        else:
            _zero_leaves(f.spec, where, leaves, kernel)


def compilation_arg(cls: type, key: Any) -> Any:
    """What an argument of a cube type shows in the KernelId (CubeCL's `...CompilationArg`)."""
    def struct(info: StructInfo, name: str, k: Any) -> DebugStruct:
        it = iter(k)
        out: list[tuple[str, Any]] = []
        for f in info.fields:
            if f.kind == "buffer":
                out.append((f.name, BUFFER_COMPILATION_ARG))
            elif f.kind == "value":
                out.append((f.name, SCALAR_COMPILATION_ARG))
            elif f.kind == "comptime":
                out.append((f.name, next(it)))
            else:
                out.append((f.name, compilation_arg(f.spec, next(it))))
        return DebugStruct(name, tuple(out))

    e = enum_info(cls)
    if e is not None and struct_info(cls) is None:
        base = f"{e.name}CompilationArg"
        if e.runtime:
            return DebugStruct(f"{base}::Runtime")
        index, payload = key
        v = struct_info(e.variants[index])
        assert v is not None
        return struct(v, f"{base}::{e.variants[index].__name__}", payload)
    info = struct_info(cls)
    assert info is not None
    return struct(info, f"{info.name}CompilationArg", key)


def define_arg(s: Scope, cls: type, key: Any, label: str,
               new_buffer: Callable[[str, BufferSpec], BufferRef],
               new_scalar: Callable[[str, ScalarKind], Any]) -> Any:
    """The kernel value of a launch argument of a cube type, its IR values made by the
    callbacks in the order `flatten` registered them."""
    e = enum_info(cls)
    if e is not None and struct_info(cls) is None:
        if e.runtime:
            tag = new_field(s, U32, field_label(label, "tag"))
            store_local(s, tag, new_scalar(field_label(label, "tag"), u32))
            payloads = [_define_runtime(s, v, field_label(label, v.__name__), new_scalar)
                        for v in e.variants]
            return RuntimeEnum(e, tag, payloads, fresh=False)
        index, payload = key
        return _define_struct(s, e.variants[index], payload, label, new_buffer, new_scalar)
    return _define_struct(s, cls, key, label, new_buffer, new_scalar)


def _define_struct(s: Scope, cls: type, key: Any, label: str,
                   new_buffer: Callable[[str, BufferSpec], BufferRef],
                   new_scalar: Callable[[str, ScalarKind], Any]) -> Any:
    info = struct_info(cls)
    assert info is not None
    it = iter(key)
    fields: dict[str, Any] = {}
    for f in info.fields:
        where = field_label(label, f.name)
        if f.kind == "buffer":
            fields[f.name] = new_buffer(where, f.spec)
        elif f.kind == "value":
            var = new_field(s, Ty(f.spec.elem), where)
            store_local(s, var, new_scalar(where, f.spec))
            fields[f.name] = var
        elif f.kind == "comptime":
            fields[f.name] = next(it)
        else:
            fields[f.name] = define_arg(s, f.spec, next(it), where, new_buffer, new_scalar)
    return instance(cls, fields, fresh=False)


def _define_runtime(s: Scope, variant: type, label: str,
                    new_scalar: Callable[[str, ScalarKind], Any]) -> Any:
    info = struct_info(variant)
    assert info is not None
    fields: dict[str, Any] = {}
    for f in info.fields:
        where = field_label(label, f.name)
        if f.kind == "value":
            var = new_field(s, Ty(f.spec.elem), where)
            store_local(s, var, new_scalar(where, f.spec))
            fields[f.name] = var
        else:
            fields[f.name] = _define_runtime(s, f.spec, where, new_scalar)
    return instance(variant, fields, fresh=False)


def key_of(cls: type, x: Any, kernel: str, label: str) -> Any:
    """The KernelId part of an argument of a cube type given as a host instance, or as the key
    itself (the inspector's `instance(...)`)."""
    if isinstance(x, cls):
        return flatten(cls, x, kernel, label)[0]
    return x


def default_key(cls: type, kernel: str, label: str) -> Any:
    """The key of an argument of a cube type before any launch (the inspector's default view):
    runtime fields have none; a default enum takes its first variant; a Comptime field has no
    default, so a TypeError says to pass an instance."""
    e = enum_info(cls)
    if e is not None and struct_info(cls) is None:
        if e.runtime:
            return ("runtime",)
        return (0, default_key(e.variants[0], kernel, label))
    info = struct_info(cls)
    assert info is not None
    key: list[Any] = []
    for f in info.fields:
        if f.kind == "comptime":
            raise TypeError(hinted(f"`{kernel}` has the argument `{label}` whose field "
                                   f"`{f.name}` is Comptime", "pass an instance "
                                   "(inspect.instance(..., comptime=(...)))"))
        if f.kind == "aggregate":
            key.append(default_key(f.spec, kernel, field_label(label, f.name)))
    return tuple(key)


def key_from_compilation_arg(cls: type, arg: Any) -> Any:
    """Invert `compilation_arg`: the key a KernelId's info field stands for."""
    e = enum_info(cls)
    if e is not None and struct_info(cls) is None:
        if e.runtime:
            return ("runtime",)
        variant = arg.name.rsplit("::", 1)[-1]
        index = [v.__name__ for v in e.variants].index(variant)
        return (index, key_from_compilation_arg(e.variants[index], arg))
    info = struct_info(cls)
    assert info is not None
    values = dict(arg.fields)
    return tuple(values[f.name] if f.kind == "comptime" else
                 key_from_compilation_arg(f.spec, values[f.name])
                 for f in info.fields if f.kind in ("comptime", "aggregate"))


def map_host(x: Any, fn: Callable[[Any], Any]) -> Any:
    """A host launch argument with `fn` applied to every field value of a cube type, nested ones
    included (the inspector re-runs a launch on CPU copies of its buffers); others: `fn(x)`."""
    if not is_host_instance(x):
        return fn(x)
    new = object.__new__(type(x))
    new.__dict__.update({k: map_host(v, fn) for k, v in x.__dict__.items()})
    return new


def host_values(x: Any) -> Iterator[Any]:
    """Every field value of a host argument of a cube type, nested ones included; else `x`."""
    if not is_host_instance(x):
        yield x
        return
    for v in x.__dict__.values():
        yield from host_values(v)
