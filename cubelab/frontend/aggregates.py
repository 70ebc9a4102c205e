"""User structs and enums: CubeCL's `#[derive(CubeType, CubeLaunch)]` in Python.

    @cube_type                              @cube_type             @cube_type(runtime_variants=True)
    class Particle:                         class Shape:           class Op:
        pos: Vector[f32, 2]                     class Circle:          class Add:
        mass: f32                                   r: f32                 pass
        data: SliceMut[f32]  # launch only      class Rect:            class Scale:
        tag: Comptime[str]   # in the KernelId      w: f32                 by: f32
                                                    h: f32

The contract. A struct is an ordered set of annotated fields: runtime values (`f32`, `u32`,
`Vector[...]`, a generic `F`), buffers (`Slice`/`SliceMut`/`Tensor`..., bound at launch only, as
CubeCL's `Box<[f32]>` field), `Comptime[T]` (a Python value, folded, part of the KernelId) and
other cube types. An enum's variants are its nested classes, each a struct (CubeCL's `A(i32,
u32)` is `class A: x: i32; y: u32` — Python has no tuple variants, and `__match_args__` makes
`case E.A(x, y):` positional all the same). There is no new IR type: a struct *is* its fields.

- In a kernel, building one (`Particle(pos, 1.0, ...)`, keywords too) gives an instance of the
  user's own class whose runtime fields are mutable locals (`LocalVar`, one per field), so
  `p.mass = 2.0` is a store, a struct assigned in a runtime `if` merges field by field, and a
  helper that receives it writes the caller's fields (Python passes objects, as CubeCL's `&mut`).
  Binding a name aliases (`q = p`); a name assigned in a branch or loop holds its own copy,
  stored field-wise.
- A default enum's variant is comptime (CubeCL's default): an enum value in a kernel is simply
  the variant's instance, so Python's own `match` (with the user's class patterns, or-patterns,
  tuples of enums) picks the arm at expansion and binds the runtime payload.
- A `runtime_variants=True` enum keeps its variant at run time: a `RuntimeEnum` value is a u32
  tag plus one slot per variant's field (a union as plain values; the slots of the variants
  it is not hold zero). `match` on it is an `scf.switch` on the tag (`matching.py`), each arm
  bound to its variant's slots. Its payloads hold runtime values only (no buffers, no comptime).
- At launch a host instance is flattened into bindings, scalars and its part of the KernelId:
  `aggregate_launch.py`.

The trap: a kernel instance is an object of the user's class holding expand-time values. Its
fields are `_Field` locals, which refuse `==` (a pattern such as `case E.A(1, y):` would
otherwise compare a local with 1 at expansion and silently never match): runtime payload values
are tested in a guard.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from cubelab.errors import hinted
from cubelab.frontend.operands import (
    KERNEL_VALUES,
    Pos,
    const,
    describe,
    error,
    is_py,
    read,
    store_local,
    ty_of,
    value,
)
from cubelab.frontend.types import (
    BufferSpec,
    ComptimeSpec,
    GenericScalar,
    ScalarKind,
    VectorSpec,
    bool_,
    from_type_param,
)
from cubelab.frontend.values import RV, LocalVar
from cubelab.ir.scope import Scope
from cubelab.ir.types import U32, Pointer, Ty

_KERNEL = "__cube_kernel__"  # in a kernel instance's __dict__: it holds expand-time values
_FRESH = "__cube_fresh__"  # built and not yet bound to a name (binding it needs no copy)


@dataclass(frozen=True)
class Field:
    name: str
    spec: Any
    kind: str  # "value" | "buffer" | "comptime" | "aggregate"


class StructInfo:
    """A struct's fields, in order (or one enum variant's payload)."""

    def __init__(self, cls: type, fields: list[Field], enum: "EnumInfo | None" = None,
                 index: int = 0) -> None:
        self.cls, self.fields, self.enum, self.index = cls, fields, enum, index
        self.name = cls.__qualname__
        self.by_name = {f.name: f for f in fields}


class EnumInfo:
    def __init__(self, cls: type, runtime: bool) -> None:
        self.cls, self.runtime = cls, runtime
        self.name = cls.__qualname__
        self.variants: list[type] = []


class _Field(LocalVar):
    """A runtime field's local. `==` is refused: see the module docstring's trap."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise TypeError(hinted(f"`{self.name}` is a runtime value: a pattern cannot compare it "
                               "at expansion", "bind it (`case E.A(x, y):`) and test it in a "
                               "guard (`case E.A(x, y) if x == 1:`) or in the arm"))

    __hash__ = object.__hash__


# -- declaring ---------------------------------------------------------------------------------
def struct_info(x: Any) -> StructInfo | None:
    cls = x if isinstance(x, type) else type(x)
    return cls.__dict__.get("__cube_struct__")


def enum_info(x: Any) -> EnumInfo | None:
    cls = x if isinstance(x, type) else type(x)
    for c in cls.__mro__:
        got = c.__dict__.get("__cube_enum__")
        if got is not None:
            return got  # type: ignore[no-any-return]
    return None


def is_cube_type(x: Any) -> bool:
    return isinstance(x, type) and (struct_info(x) is not None or enum_info(x) is not None)


def cube_type(cls: type | None = None, *, runtime_variants: bool = False) -> Any:
    """Make a class a cube type: a struct (annotated fields) or an enum (nested classes, its
    variants). `@cube_type(runtime_variants=True)` keeps an enum's variant at run time
    (CubeCL's `#[cube(runtime_variants)]`)."""
    # string annotations (`from __future__ import annotations`) may name the defining
    # function's locals: resolve them in the caller's namespace too
    caller = sys._getframe(1)
    env = {**caller.f_globals, **caller.f_locals}

    def wrap(c: type) -> type:
        nested = [v for v in c.__dict__.values()
                  if isinstance(v, type) and v.__qualname__ == f"{c.__qualname__}.{v.__name__}"]
        if nested:
            return _make_enum(c, nested, runtime_variants, env)
        if runtime_variants:
            raise TypeError(hinted(f"@cube_type(runtime_variants=True) is for enums, and "
                                   f"`{c.__name__}` has no variants (nested classes)",
                                   "drop runtime_variants=True for a struct, or nest a class "
                                   "per variant"))
        _make_struct(c, env)
        return c
    return wrap(cls) if cls is not None else wrap


def _resolve_annotations(c: type, caller: dict[str, Any]) -> dict[str, Any]:
    raw = dict(c.__dict__.get("__annotations__", {}))
    module = sys.modules.get(c.__module__)
    env = {**(vars(module) if module is not None else {}), **caller}
    out: dict[str, Any] = {}
    for name, ann in raw.items():
        if isinstance(ann, str):
            try:
                ann = eval(ann, env, dict(c.__dict__))  # noqa: S307 - the user's annotation
            except Exception as exc:  # noqa: BLE001
                raise TypeError(hinted(f"cannot resolve the annotation of "
                                       f"`{c.__qualname__}.{name}`: {exc}",
                                       "import or define the type before the class")) from None
        out[name] = ann
    return out


def _field(owner: str, name: str, ann: Any) -> Field:
    ann = from_type_param(ann)
    if ann is bool:
        ann = bool_
    if isinstance(ann, (ScalarKind, GenericScalar, VectorSpec)):
        return Field(name, ann, "value")
    if isinstance(ann, BufferSpec):
        return Field(name, ann, "buffer")
    if isinstance(ann, ComptimeSpec):
        return Field(name, ann, "comptime")
    if is_cube_type(ann):
        return Field(name, ann, "aggregate")
    raise TypeError(hinted(f"field `{owner}.{name}` has a type a cube type cannot hold: {ann!r}",
                           "use f32/i32/u32/bool, Vector[...], Slice[...]/SliceMut[...]/"
                           "Tensor[...], Comptime[T] or another @cube_type"))


def _make_struct(c: type, env: dict[str, Any], enum: EnumInfo | None = None,
                 index: int = 0) -> StructInfo:
    fields = [_field(c.__qualname__, n, a) for n, a in _resolve_annotations(c, env).items()]
    info = StructInfo(c, fields, enum, index)
    c.__cube_struct__ = info  # type: ignore[attr-defined]
    c.__match_args__ = tuple(f.name for f in fields)  # type: ignore[attr-defined]
    c.__init__ = _host_init  # type: ignore[assignment, method-assign]
    c.__repr__ = _repr  # type: ignore[assignment, method-assign]
    c.__eq__ = _eq  # type: ignore[assignment, method-assign]
    c.__hash__ = _hash  # type: ignore[assignment, method-assign]
    return info


def _make_enum(c: type, nested: list[type], runtime: bool, env: dict[str, Any]) -> type:
    info = EnumInfo(c, runtime)
    c.__cube_enum__ = info  # type: ignore[attr-defined]
    c.__init__ = _enum_init  # type: ignore[assignment, method-assign]
    for k, v in enumerate(nested):
        ns = {key: val for key, val in v.__dict__.items() if key not in ("__dict__", "__weakref__")}
        ns["__qualname__"] = f"{c.__qualname__}.{v.__name__}"
        variant = type(v.__name__, (c,), ns)
        vinfo = _make_struct(variant, env, info, k)
        if runtime:
            for f in vinfo.fields:
                if f.kind in ("buffer", "comptime") or (
                        f.kind == "aggregate" and not _runtime_only(f.spec)):
                    raise TypeError(hinted(
                        f"`{vinfo.name}.{f.name}`: a runtime-variants enum's payload holds "
                        "runtime values only (its variant is chosen at run time, and a buffer "
                        "or a comptime value cannot be)",
                        "drop runtime_variants=True to make the variant comptime"))
        setattr(c, v.__name__, variant)
        info.variants.append(variant)
    return c


def _runtime_only(cls: type) -> bool:
    si = struct_info(cls)
    if si is None:
        return False
    return all(f.kind == "value" or (f.kind == "aggregate" and _runtime_only(f.spec))
               for f in si.fields)


def signature(cls: type) -> str:
    """A cube type's declaration as text (fields, their types, variants, nested types): part of
    the origin of every kernel that names it, so a re-run notebook cell that changes a field's
    type makes a new KernelId instead of reusing a pipeline built for the old layout."""
    e = enum_info(cls)
    if e is not None and struct_info(cls) is None:
        kind = "enum(runtime_variants)" if e.runtime else "enum"
        return f"{kind} {e.name} {{{'; '.join(signature(v) for v in e.variants)}}}"
    info = struct_info(cls)
    assert info is not None
    fields = ", ".join(f"{f.name}: {signature(f.spec) if f.kind == 'aggregate' else repr(f.spec)}"
                       for f in info.fields)
    return f"{info.name}({fields})"


def _host_init(self: Any, *args: Any, **kwargs: Any) -> None:
    info = struct_info(self)
    assert info is not None
    values, problem = _bind(info, args, kwargs)
    if values is None:
        raise TypeError(hinted(problem, _fields_hint(info)))
    for f, v in values.items():
        object.__setattr__(self, f, v)


def _enum_init(self: Any, *args: Any, **kwargs: Any) -> None:
    e = enum_info(self)
    assert e is not None
    names = ", ".join(f"{e.name}.{v.__name__}(...)" for v in e.variants)
    raise TypeError(hinted(f"`{e.name}` is an enum", f"build one of its variants ({names})"))


def _fields_hint(info: StructInfo) -> str:
    return ("name each field once: positionally, in declaration order, or by keyword "
            f"({', '.join(f.name for f in info.fields) or 'no fields'})")


def _bind(info: StructInfo, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Positional and keyword arguments to field values, or None and what is wrong (missing,
    unknown or repeated fields): the caller refuses it its own way, with `_fields_hint`."""
    names = [f.name for f in info.fields]
    if len(args) > len(names):
        return None, (f"{info.name}(...) takes {len(names)} field(s) "
                      f"({', '.join(names) or 'none'}), got {len(args)}")
    got = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in info.by_name:
            return None, f"{info.name} has no field `{k}` (its fields: {', '.join(names) or 'none'})"
        if k in got:
            return None, f"{info.name}(...) got the field `{k}` twice"
        got[k] = v
    for n in names:
        if n not in got:
            return None, f"{info.name}(...) is missing the field `{n}`"
    return {n: got[n] for n in names}, ""


def _repr(self: Any) -> str:
    info = struct_info(self)
    assert info is not None
    if self.__dict__.get(_KERNEL):
        return f"the struct {info.name} (in a kernel)"
    inner = ", ".join(f"{f.name}={self.__dict__.get(f.name, '<missing>')!r}" for f in info.fields)
    return f"{info.name}({inner})"


def _eq(self: Any, other: Any) -> bool:
    if type(self) is not type(other) or self.__dict__.get(_KERNEL):
        return self is other
    return bool(self.__dict__ == other.__dict__)


def _hash(self: Any) -> int:
    if self.__dict__.get(_KERNEL):
        return id(self)
    info = struct_info(self)
    assert info is not None
    return hash((type(self), tuple(self.__dict__.get(f.name) for f in info.fields)))


# -- kernel values -----------------------------------------------------------------------------
@dataclass(eq=False)
class RuntimeEnum:
    """A value of a runtime-variants enum in a kernel: the tag and every variant's payload."""

    __cube_kernel__ = True  # a kernel value (operands.describe names it by its repr)
    info: EnumInfo
    tag: LocalVar  # u32: the variant's index
    payloads: list[Any]  # one kernel instance per variant, in declaration order
    fresh: bool = True

    def __repr__(self) -> str:
        return f"the runtime enum {self.info.name} (in a kernel)"


def is_host_instance(x: Any) -> bool:
    """A host (launch) instance of a cube type, built by the user's own call."""
    return struct_info(x) is not None and not isinstance(x, type) and \
        not x.__dict__.get(_KERNEL)


def is_kernel_instance(x: Any) -> bool:
    return struct_info(x) is not None and not isinstance(x, type) and \
        bool(x.__dict__.get(_KERNEL))


def is_aggregate_value(x: Any) -> bool:
    return isinstance(x, RuntimeEnum) or is_kernel_instance(x)


def instance(cls: type, fields: dict[str, Any], fresh: bool = True) -> Any:
    """A kernel instance of `cls` holding `fields` (expand-time values)."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    obj.__dict__[_KERNEL] = True
    obj.__dict__[_FRESH] = fresh
    return obj


def field_label(name: str, field: str) -> str:
    return f"{name}.{field}" if name else field


def _value_ty(s: Scope, spec: Any) -> Ty:
    if isinstance(spec, VectorSpec):
        return spec.resolve(s)
    return Ty(spec.resolve(s).elem)


def new_field(s: Scope, ty: Ty, label: str) -> _Field:
    return _Field(s.declare_var(ty, label), label)


def _store_field(s: Scope, var: LocalVar, x: Any, owner: str, fname: str) -> None:
    """`owner.fname = x`: a literal takes the field's type; another type is refused."""
    ptr = var.ptr.type
    assert isinstance(ptr, Pointer) and isinstance(ptr.pointee, Ty)
    want = ptr.pointee
    x = read(s, x)
    if not isinstance(x, RV) and not is_py(x):
        raise error(s, f"the field `{fname}` of {owner} is {want}, got {describe(x)}",
                    f"give it a {want} value")
    v = value(s, x, want.with_width(1))
    got = ty_of(v)
    if got.elem is not want.elem or got.width not in (1, want.width):
        raise error(s, f"the field `{fname}` of {owner} is {want}, assigned {got}",
                    f"cast the value: {want.elem.value}(...) (F.cast_from(...) if generic)")
    store_local(s, var, RV(v))


def construct(s: Scope, cls: type, args: list[Any], kwargs: dict[str, Any], at: Pos) -> Any:
    """`P(a, b)` / `P(x=a, y=b)` / `E.A(x, y)` inside a kernel."""
    s.at(*at)
    e = enum_info(cls)
    info = struct_info(cls)
    if info is None:
        assert e is not None
        names = ", ".join(f"{e.name}.{v.__name__}(...)" for v in e.variants)
        raise error(s, f"`{e.name}` is an enum: build one of its variants", names, at)

    values, problem = _bind(info, tuple(args), kwargs)
    if values is None:
        raise error(s, problem, _fields_hint(info), at)
    obj = _build(s, info, values, at)
    if e is not None and e.runtime:
        return _runtime_enum(s, e, info.index, obj)
    return obj


def _build(s: Scope, info: StructInfo, values: dict[str, Any], at: Pos) -> Any:
    label = info.name.rsplit(".", 1)[-1].lower()
    fields: dict[str, Any] = {}
    for f in info.fields:
        x = values[f.name]
        if f.kind == "buffer":
            raise error(s, f"{info.name} has the buffer field `{f.name}`, which only a launch "
                        "can bind: a struct holding a buffer cannot be built inside a kernel",
                        f"pass a {info.name} as a launch argument (its `{f.name}` a BufferArg) "
                        "and hand that struct on; or build a struct without the buffer", at)
        if f.kind == "comptime":
            if isinstance(x, KERNEL_VALUES) or is_aggregate_value(x):
                raise error(s, f"the field `{f.name}` of {info.name} is {f.spec!r}, known "
                            f"while the kernel is built, but got {describe(read(s, x))}",
                            "pass a Python value or comptime(...)", at)
            fields[f.name] = x
        elif f.kind == "aggregate":
            fields[f.name] = _own(s, f.spec, read(s, x), field_label(label, f.name),
                                  f"the field `{f.name}` of {info.name}")
        else:
            var = new_field(s, _value_ty(s, f.spec), field_label(label, f.name))
            _store_field(s, var, x, info.name, f.name)
            fields[f.name] = var
    return instance(info.cls, fields)


def _own(s: Scope, cls: type, x: Any, label: str, what: str) -> Any:
    """`x` as a value of the cube type `cls` that no one else holds: a fresh value is taken as
    it is, anything else copied into new storage."""
    if not _is_of(cls, x):
        raise error(s, f"{what} is a {cls.__qualname__}, got {describe(x)}",
                    f"build one: {cls.__qualname__}(...)")
    if _fresh(x):
        _set_fresh(x, False)
        return x
    dest = storage_like(s, x, label)
    copy_into(s, dest, x, label)
    return dest


def _is_of(cls: type, x: Any) -> bool:
    if isinstance(x, RuntimeEnum):
        return x.info.cls is cls
    return is_kernel_instance(x) and isinstance(x, cls)


def _fresh(x: Any) -> bool:
    return x.fresh if isinstance(x, RuntimeEnum) else bool(x.__dict__.get(_FRESH))


def _set_fresh(x: Any, fresh: bool) -> None:
    if isinstance(x, RuntimeEnum):
        x.fresh = fresh
    else:
        x.__dict__[_FRESH] = fresh


def storage_like(s: Scope, like: Any, label: str) -> Any:
    """New storage shaped as `like` (a kernel value), to copy it into: every runtime field a
    new local, comptime and buffer fields shared."""
    if isinstance(like, RuntimeEnum):
        tag = new_field(s, U32, field_label(label, "tag"))
        return RuntimeEnum(like.info, tag, [storage_like(s, p, label) for p in like.payloads],
                           fresh=False)
    info = struct_info(like)
    assert info is not None
    fields: dict[str, Any] = {}
    for f in info.fields:
        cur = like.__dict__[f.name]
        if f.kind == "value":
            ptr = cur.ptr.type
            assert isinstance(ptr, Pointer) and isinstance(ptr.pointee, Ty)
            fields[f.name] = new_field(s, ptr.pointee, field_label(label, f.name))
        elif f.kind == "aggregate":
            fields[f.name] = storage_like(s, cur, field_label(label, f.name))
        else:
            fields[f.name] = cur
    return instance(type(like), fields, fresh=False)


def _zero_payload(s: Scope, variant: type, label: str) -> Any:
    """A variant's payload with every runtime field zero (a runtime enum's other slots)."""
    info = struct_info(variant)
    assert info is not None
    fields: dict[str, Any] = {}
    for f in info.fields:
        if f.kind == "value":
            ty = _value_ty(s, f.spec)
            var = new_field(s, ty, field_label(label, f.name))
            store_local(s, var, RV(const(s, 0, ty)))
            fields[f.name] = var
        else:
            assert f.kind == "aggregate"
            sub = struct_info(f.spec)
            if sub is None:
                raise error(s, f"`{info.name}.{f.name}`: an enum inside a runtime-variants "
                            "enum's payload is not supported", "use a struct payload")
            fields[f.name] = _zero_payload(s, f.spec, field_label(label, f.name))
    return instance(variant, fields, fresh=False)


def _runtime_enum(s: Scope, e: EnumInfo, index: int, payload: Any) -> RuntimeEnum:
    label = e.name.rsplit(".", 1)[-1].lower()
    tag = new_field(s, U32, field_label(label, "tag"))
    store_local(s, tag, RV(const(s, index, U32)))
    payloads = [payload if k == index else
                _zero_payload(s, v, field_label(label, v.__name__.lower()))
                for k, v in enumerate(e.variants)]
    _set_fresh(payload, False)
    return RuntimeEnum(e, tag, payloads)


def copy_into(s: Scope, dest: Any, src: Any, label: str) -> None:
    """`dest = src` field by field (a struct local re-assigned, in a branch or a loop)."""
    if isinstance(dest, RuntimeEnum):
        if not isinstance(src, RuntimeEnum) or src.info is not dest.info:
            raise error(s, f"`{label}` holds a {dest.info.name} but is assigned {describe(src)}",
                        "a local keeps its first type")
        store_local(s, dest.tag, read(s, src.tag))
        for d, x in zip(dest.payloads, src.payloads):
            copy_into(s, d, x, label)
        return
    info = struct_info(dest)
    assert info is not None
    if not is_kernel_instance(src) or type(src) is not type(dest):
        raise error(s, f"`{label}` holds a {info.name} but is assigned {describe(src)}",
                    "a local keeps its first type (an enum's variant, which is comptime, too: "
                    "use @cube_type(runtime_variants=True) to choose the variant at run time)")
    for f in info.fields:
        d, x = dest.__dict__[f.name], src.__dict__[f.name]
        if f.kind == "value":
            store_local(s, d, read(s, x))
        elif f.kind == "aggregate":
            copy_into(s, d, x, field_label(label, f.name))
        elif f.kind == "comptime":
            if not (d is x or d == x):
                raise error(s, f"`{label}.{f.name}` is a Comptime field fixed when the struct "
                            f"was first built ({d!r}); it cannot become {x!r}",
                            "build a new struct under another name")
        elif d is not x:
            raise error(s, f"`{label}.{f.name}` is a buffer field bound at launch; it cannot "
                        "be re-bound to another buffer", "use another name for the other struct")


def bind(s: Scope, current: Any, x: Any, name: str, mutable: bool) -> Any:
    """`name = x` where either side is a struct or enum value (variables.assign)."""
    if is_aggregate_value(current):
        copy_into(s, current, x, name)
        return current
    if not mutable or _fresh(x):
        _set_fresh(x, False)
        return x
    dest = storage_like(s, x, name)
    copy_into(s, dest, x, name)
    return dest


# -- fields ------------------------------------------------------------------------------------
def get_field(s: Scope, obj: Any, name: str) -> Any:
    if isinstance(obj, RuntimeEnum):
        raise error(s, f"`.{name}` on {obj!r}: its variant is known only at run time",
                    f"match it first: `case {obj.info.name}.Variant(x):` binds the payload")
    info = struct_info(obj)
    assert info is not None
    f = info.by_name.get(name)
    if f is None:
        method = getattr(type(obj), name, None)
        if method is not None and callable(method):
            return _Bound(obj, method)
        raise error(s, f"{info.name} has no field `{name}`",
                    f"its fields: {', '.join(x.name for x in info.fields) or 'none'}")
    x = obj.__dict__[name]
    return read(s, x) if f.kind == "value" else x


@dataclass(frozen=True)
class _Bound:
    """`p.method` of a struct: calling it calls the class's `@cube` function with `p` first."""

    obj: Any
    fn: Any

    def _expand_call(self, s: Scope, *args: Any) -> Any:
        expand = getattr(self.fn, "_expand_call", None)
        if expand is None:
            raise error(s, f"`{getattr(self.fn, '__name__', self.fn)}` of a cube type is not a "
                        "@cube function", "decorate the method with @cube")
        return expand(s, self.obj, *args)


def set_field(s: Scope, obj: Any, name: str, x: Any, at: Pos) -> None:
    """`p.name = x`."""
    s.at(*at)
    if not is_aggregate_value(obj):
        raise error(s, f"cannot assign `.{name}` of {describe(obj)}",
                    "assign to a local name, buffer[index] or a field of a @cube_type struct")
    if isinstance(obj, RuntimeEnum):
        get_field(s, obj, name)  # raises, with the hint
    info = struct_info(obj)
    assert info is not None
    f = info.by_name.get(name)
    if f is None:
        raise error(s, f"{info.name} has no field `{name}`",
                    f"its fields: {', '.join(x.name for x in info.fields) or 'none'}")
    if f.kind == "comptime":
        raise error(s, f"`{name}` is a Comptime field of {info.name}, fixed when it is built",
                    f"build a new {info.name}(...)")
    if f.kind == "buffer":
        raise error(s, f"`{name}` is a buffer field of {info.name}, bound at launch",
                    f"write its items instead: `.{name}[i] = v`")
    if f.kind == "aggregate":
        copy_into(s, obj.__dict__[name], read(s, x), name)
        return
    _store_field(s, obj.__dict__[name], x, info.name, name)


__all__ = ["RuntimeEnum", "cube_type", "is_aggregate_value", "is_cube_type"]
