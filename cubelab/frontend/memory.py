"""Memory in kernels: buffers, tensors, local arrays, shared memory, sub-slices and atomics.

Every way of reaching an element ends in one `memory.index` op on a pointer to an array:

- a global buffer or tensor argument (`Pointer(RuntimeArray, "global")`, checked in `launch`
  mode: CheckedIo clamps it);
- a local `Array[T](n)` (`var.declare` of `Array(item, n)`: a unit-private, zero-initialised
  array) or a `SharedMemory[T](n)` (`shared.declare`: one array per cube, `var<workgroup>`);
- a sub-slice `x[a:b]`, which is no IR object at all: it is (base, start, length) at expand time
  and its index `i` becomes `start + i` on the base, so targets need nothing for it.

Multi-indices `t[i, j]` are flattened here, before `memory.index`: a tensor through its strides
(`i * stride(0) + j * stride(1)`, so a transposed view reads right), a comptime-shaped
`SharedMemory[f32]((3, 3))` / `Array[f32]((2, 3, 4))` row-major. An array's index count is
checked at expansion (its shape is comptime); a tensor's rank is a launch value, so `t[i, j]` on
a tensor of rank 3 is not caught (it reads with the first two strides, as CubeCL's would).

Element types that are atomic (`Atomic[u32]`) are never loaded or stored plainly; `hist[b]`
gives an `AtomicRef` whose methods emit `atomic.*` ops (`fetch_add` returns the old value).

The traps. Array lengths must be comptime: WGSL sizes `var<workgroup>` and function arrays at
pipeline creation, so `SharedMemory[f32](n)` with a runtime `n` is refused with a hint. Arrays
are declared once, at the top of the kernel, wherever the statement is written — an `Array`
created inside a loop is the *same* storage on every iteration (not re-zeroed).
"""

from __future__ import annotations

from typing import Any, Sequence

from cubelab.frontend.operands import (
    KERNEL_VALUES,
    Pos,
    const,
    describe,
    error,
    index_value,
    is_py,
    item_value,
    meet,
    read,
    spec_written,
    store_local,
    ty_of,
    value,
    written_of,
)
from cubelab.frontend import sequences
from cubelab.frontend.operators import binop
from cubelab.frontend.types import ArrayKind, ScalarKind
from cubelab.frontend.values import RV, ArrayRef, AtomicRef, BufferRef, LocalVar, SliceView
from cubelab.runtime.properties import DEFAULT_MAX_SHARED_MEMORY
from cubelab.ir.core import Op, Value
from cubelab.ir.scope import Scope
from cubelab.ir.types import U32, Array, Atomic, Elem, Pointer, RuntimeArray, Ty


# A single shared declaration over the default limit is refused here, where the caret can point
# at it; the limit itself is the runtime's (`runtime/properties.py`), read from one place.
MAX_SHARED_BYTES = DEFAULT_MAX_SHARED_MEMORY
# A local array larger than this is almost surely a mistake (it lives in registers/stack).
MAX_LOCAL_ITEMS = 65536

Indexable = BufferRef | ArrayRef | SliceView


def new_array(s: Scope, kind: ArrayKind, args: Sequence[Any]) -> ArrayRef:
    what = repr(kind)
    if len(args) != 1:
        raise error(s, f"{what}(length) takes one comptime length",
                    f"write {what}[f32](n) with one Python int n (or a shape tuple)")
    n = read(s, args[0])
    shape: tuple[int, ...] = ()
    if isinstance(n, tuple):  # SharedMemory[f32]((rows, cols)): a comptime shape, row-major
        dims = [read(s, d) for d in n]
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                               for d in dims):
            raise error(s, f"{what}({n!r}): a shape is a tuple of positive comptime ints",
                        "write e.g. (16, 16)")
        shape = tuple(dims)
        n = 1
        for d in shape:
            n *= d
    if not isinstance(n, int) or isinstance(n, bool):
        hint = ("the length must be known at expansion: a Python int, a Comptime[int] "
                "argument or comptime(expr); for a size that depends on the launch, pass it "
                "as Comptime")
        if kind.shared:
            raise error(s, f"shared memory with a runtime length ({describe(n)})", hint)
        raise error(s, f"a local Array with a runtime length ({describe(n)})", hint)
    if n <= 0:
        raise error(s, f"{what}({n}): the length must be positive",
                    "give it at least one item")
    item = kind.item_ty(s)
    if kind.shared:
        size = n * item.size
        # One array over WebGPU's default limit is refused here, at its line; the total of all
        # arrays against the device's own limit is checked when the kernel is compiled
        # (`compiler.pipeline.check_definition`)
        if size > MAX_SHARED_BYTES:
            raise error(s, f"{what}({n}) needs {size} bytes of shared memory; a cube has "
                            f"{MAX_SHARED_BYTES}", "use a smaller tile")
        ptr = s.new_value(Pointer(Array(item, n), "shared"), "shared")
        op = Op("shared.declare", [], [ptr], {"name": f"shared_{ptr.id}"}, [], s.loc)
        s.hoist(op)  # declared at the top, like var.declare
        return ArrayRef(ptr, "shared memory", n, shape, spec_written(kind.item))
    if n > MAX_LOCAL_ITEMS:
        raise error(s, f"{what}({n}) is too large for a unit's local memory",
                        "use shared memory or a global buffer")
    ptr = s.declare_var(Array(item, n), "array")  # type: ignore[arg-type]
    return ArrayRef(ptr, "local array", n, shape, spec_written(kind.item))


def _pointee_array(base: BufferRef | ArrayRef) -> Array | RuntimeArray:
    v = base.v if isinstance(base, BufferRef) else base.ptr
    assert isinstance(v.type, Pointer)
    arr = v.type.pointee
    assert isinstance(arr, (Array, RuntimeArray))
    return arr


def element_ptr(s: Scope, obj: Indexable, idx: Any) -> tuple[Value, Ty | Atomic]:
    """A pointer to element `idx` of a buffer, array or sub-slice, and its item type."""
    if isinstance(idx, tuple):
        idx = RV(flat_index(s, obj, idx))
    if isinstance(obj, SliceView):
        i = index_value(s, idx)
        shifted = s.emit("arith.add", [obj.start, i], U32)
        return element_ptr(s, obj.base, RV(shifted))
    if isinstance(obj, ArrayRef):
        _refuse_comptime_out_of_range(s, obj, read(s, idx), obj.length, "")
    i = index_value(s, idx)
    arr = _pointee_array(obj)
    item = arr.item
    if isinstance(obj, BufferRef):
        ptr = s.emit("memory.index", [obj.v, i], Pointer(item, "global", obj.writable),
                     checked=True)
    else:
        space = obj.ptr.type.space  # type: ignore[union-attr]
        ptr = s.emit("memory.index", [obj.ptr, i], Pointer(item, space))
    return ptr, item


def _refuse_comptime_out_of_range(s: Scope, obj: ArrayRef, i: Any, n: int, axis: str) -> None:
    """A comptime index past a local or shared array's end is a mistake found at expansion,
    not an access that reads 0 at run time (a runtime one does: docs/language.md)."""
    if is_py(i) and not isinstance(i, bool) and isinstance(i, int) and i >= n:
        shape = f" of shape {obj.shape}" if obj.shape else f" of {obj.length} items"
        raise error(s, f"index {i}{axis} is out of range for the {obj.name}{shape}",
                    f"indices{axis} run from 0 to {n - 1}")


def flat_index(s: Scope, obj: Indexable, idx: tuple[Any, ...]) -> Value:
    """The flat u32 index of `obj[i, j, ...]` (see the module docstring)."""
    n = len(idx)
    if isinstance(obj, BufferRef) and obj.tensor:
        s.tensor_indexing.setdefault(obj.v.id, {}).setdefault(n, s.loc)
        flat: Value | None = None
        for axis, i in enumerate(idx):
            stride = s.emit("tensor.stride", [obj.v, const(s, axis, U32)], U32)
            term = s.emit("arith.mul", [index_value(s, i), stride], U32)
            flat = term if flat is None else s.emit("arith.add", [flat, term], U32)
        assert flat is not None
        return flat
    if isinstance(obj, ArrayRef) and obj.shape:
        if n != len(obj.shape):
            raise error(s, f"{n} indices into the {obj.name} of shape {obj.shape}",
                        f"give one index per axis: {len(obj.shape)} of them")
        for axis, (i, d) in enumerate(zip(idx, obj.shape)):
            _refuse_comptime_out_of_range(s, obj, read(s, i), d, f" on axis {axis}")
        flat = index_value(s, idx[0])
        for i, d in zip(idx[1:], obj.shape[1:]):
            flat = s.emit("arith.add", [s.emit("arith.mul", [flat, const(s, d, U32)], U32),
                                        index_value(s, i)], U32)
        return flat
    if n == 1:
        return index_value(s, idx[0])
    what = "a Slice" if isinstance(obj, BufferRef) else f"the {obj.name}"
    raise error(s, f"{n} indices into {what}, which is one-dimensional",
                "index it with one flat index, or declare a Tensor / a shaped "
                "SharedMemory[f32]((rows, cols)) for t[i, j]")


def load(s: Scope, obj: Indexable, idx: Any) -> Any:
    ptr, item = element_ptr(s, obj, idx)
    if isinstance(item, Atomic):
        return AtomicRef(ptr, _name(obj))
    return RV(s.emit("memory.load", [ptr], item), w=written_of(obj))


def store(s: Scope, obj: Indexable, idx: Any, x: Any, at: Pos) -> None:
    name = _name(obj)
    if not obj.writable:
        raise error(s, f"`{name}` is read-only (Slice / Tensor); it cannot be assigned",
                        f"declare it SliceMut[...] / TensorMut[...] to write to it")
    item = _item(obj)
    if isinstance(item, Atomic):
        raise error(s, f"`{name}` holds atomics; plain assignment is not atomic",
                        f"write `{name}[i].store(v)` (or fetch_add, swap, ...)")
    meet(s, "=", written_of(obj), written_of(read(s, x)))  # `out[i] = a`: F = f32 is refused too
    v = item_value(s, x, item)
    s.at(*at)
    ptr, _ = element_ptr(s, obj, idx)
    s.register("memory.store", [ptr, v])


def _item(obj: Indexable) -> Ty | Atomic:
    if isinstance(obj, SliceView):
        return _item(obj.base)
    return _pointee_array(obj).item


def _name(obj: Indexable) -> str:
    return obj.name


def length(s: Scope, obj: Indexable) -> RV:
    if isinstance(obj, SliceView):
        return RV(obj.length)
    if isinstance(obj, ArrayRef):
        return RV(const(s, obj.length, U32))
    return RV(s.emit("buffer.len", [obj.v], U32))


def subslice(s: Scope, obj: Any, lower: Any, upper: Any, at: Pos) -> Any:
    """`x[a:b]` (either bound may be left out): a view with its own `len()`."""
    s.at(*at)
    obj = read(s, obj)
    if isinstance(obj, sequences.Sequence):
        return sequences.get(s, obj, slice(read(s, lower), read(s, upper)))
    if not isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        raise error(s, f"{describe(obj)} cannot be sliced",
                        "slice a buffer, tensor, array or another slice: x[a:b]")
    start = index_value(s, 0 if lower is None else lower)
    end = length(s, obj).v if upper is None else index_value(s, upper)
    n = s.emit("arith.sub", [end, start], U32)
    if isinstance(obj, SliceView):
        start = s.emit("arith.add", [obj.start, start], U32)
        base = obj.base
    else:
        base = obj
    return SliceView(base, start, n, obj.writable, f"{obj.name}[a:b]")


# -- methods -----------------------------------------------------------------------------------
_RMW = {"fetch_add": "add", "fetch_sub": "sub", "fetch_min": "min", "fetch_max": "max",
        "fetch_and": "and", "fetch_or": "or", "fetch_xor": "xor", "swap": "swap"}


def atomic_method(s: Scope, ref: AtomicRef, name: str, args: Sequence[Any]) -> Any:
    ptr_ty = ref.ptr.type
    assert isinstance(ptr_ty, Pointer) and isinstance(ptr_ty.pointee, Atomic)
    ty = ptr_ty.pointee.value_ty

    def arg(x: Any) -> Value:
        v = value(s, x, ty)
        if ty_of(v) != ty:
            raise error(s, f"`{name}` on an atomic {ty} got a {ty_of(v)}",
                            f"cast: {ty.elem.value}(x)")
        return v

    if name == "load" and not args:
        return RV(s.emit("atomic.load", [ref.ptr], ty))
    if name == "store" and len(args) == 1:
        s.register("atomic.store", [ref.ptr, arg(args[0])])
        return None
    if name in _RMW and len(args) == 1:
        return RV(s.emit("atomic.rmw", [ref.ptr, arg(args[0])], ty, kind=_RMW[name]))
    if name == "compare_exchange_weak" and len(args) == 2:
        return RV(s.emit("atomic.cas", [ref.ptr, arg(args[0]), arg(args[1])], ty))
    raise error(s, f"`.{name}(...)` with {len(args)} argument(s) is not an atomic method",
                    "available: load(), store(v), swap(v), fetch_add/sub/min/max/and/or/xor(v), "
                    "compare_exchange_weak(expected, new)")


def buffer_method(s: Scope, obj: Indexable, name: str, args: Sequence[Any]) -> Any:
    if isinstance(obj, BufferRef) and obj.tensor:
        # CubeCL's two lengths (compiler/info.py): len() is the shape's product, buffer_len()
        # the items the handle holds — the one bounds clamps and sub-slices use.
        if name == "len" and not args:
            return RV(s.emit("tensor.len", [obj.v], U32))
        if name == "buffer_len" and not args:
            return length(s, obj)
        if name == "rank" and not args:
            return RV(s.emit("tensor.rank", [obj.v], U32))
        if name in ("shape", "stride") and len(args) == 1:
            axis = index_value(s, args[0])
            return RV(s.emit(f"tensor.{name}", [obj.v, axis], U32))
        if name == "coordinate" and len(args) == 2:
            # CubeCL's coordinate(index, dim): the index's position along `dim`
            index, axis = index_value(s, args[0]), index_value(s, args[1])
            stride = s.emit("tensor.stride", [obj.v, axis], U32)
            shape = s.emit("tensor.shape", [obj.v, axis], U32)
            return RV(s.emit("arith.rem", [s.emit("arith.div", [index, stride], U32), shape],
                             U32))
        raise error(s, f"`{obj.name}.{name}(...)` is not a tensor method",
                        "available: shape(d), stride(d), coordinate(i, d), rank(), len() (the "
                        "shape's product), buffer_len() (the items the handle holds)")
    if name == "len" and not args:
        return length(s, obj)
    raise error(s, f"`{_name(obj)}.{name}(...)` is not a method here",
                    "available: len() (tensors also have shape(d), stride(d), rank())")


def vector_component(s: Scope, v: Value, idx: Any) -> Any:
    """`v[k]`: a comptime k is `vector.extract`; a runtime u32 k is `vector.extract_at`
    (CubeCL's `extract_dynamic`; an index past the last component reads the last)."""
    ty = ty_of(v)
    idx = read(s, idx)
    if isinstance(idx, KERNEL_VALUES):
        return RV(s.emit("vector.extract_at", [v, index_value(s, idx)], Ty(ty.elem)))
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise error(s, "a vector component index must be an int (comptime) or a u32",
                        "write v[0] .. v[3], or v[i] with a u32 i")
    if not 0 <= idx < ty.width:
        raise error(s, f"component {idx} of a vector of width {ty.width}",
                    f"components run from 0 to {ty.width - 1}")
    if ty.width == 1:  # Vector[F, N] with N = 1 is the scalar itself
        return RV(v)
    return RV(s.emit("vector.extract", [v], Ty(ty.elem), index=idx))


def _splat_needs_width(s: Scope, var: LocalVar, ty: Ty, k: Any) -> Exception:
    """`v = Vector.new(x)` then `v[1] = y`: CubeCL's rustc infers `v`'s width from a later
    line; cubelab's expansion runs line by line, so `v` is the scalar it was made from (a
    splat widens only where it meets a vector). Point at the line that makes `v`, naming the
    width to write there — the launch's Size generic when there is one."""
    elem = next((n for n, t in s.types.items() if isinstance(t, ScalarKind)
                 and t.elem is ty.elem), ty.elem.value)
    need = 2 if isinstance(k, KERNEL_VALUES) else k + 1
    sizes = [(n, w) for n, w in s.types.items()
             if isinstance(w, int) and not isinstance(w, bool) and w >= need]
    if sizes:
        n, w = sizes[0]
        width, note = n, f" ({n} is {w} in this launch)"
    else:
        width, note = str(4 if need > 2 else 2), ""
    here = s.loc.line if s.loc else 0
    what = f"`{var.name}[{k}] = ...`" if not isinstance(k, KERNEL_VALUES) else \
        f"`{var.name}[i] = ...`"
    return error(
        s, f"`{var.name}` is a scalar here: `Vector.new(x)` has no width of its own (it widens "
        f"only where it meets a vector), so {what} at line {here} has no component to set",
        f"give it its width where it starts: `{var.name} = Vector[{elem}, {width}].new(...)`"
        f"{note}", at=var.from_splat)


def set_component(s: Scope, var: LocalVar, idx: Any, x: Any) -> None:
    """`v[k] = x` on a local vector (CubeCL's `line[k] = x`): the local gets the vector with
    component k replaced — `vector.insert` for a comptime k, `vector.insert_at` for a runtime
    u32 k (CubeCL's `insert_dynamic`; an index past the end replaces nothing); a scalar is a
    vector of width 1 (`Vector[F, N]` with N = 1), so `s[0] = x` assigns it whole."""
    current = read(s, var)
    ty = ty_of(current.v)
    k = read(s, idx)
    if var.from_splat is not None and ty.width == 1 and (isinstance(k, KERNEL_VALUES)
                                                         or k != 0):
        raise _splat_needs_width(s, var, ty, k)
    if isinstance(k, KERNEL_VALUES) and ty.width > 1:
        at = index_value(s, k)
        item = value(s, x, Ty(ty.elem))
        if ty_of(item) != Ty(ty.elem):
            raise error(s, f"a component of `{var.name}` is a {ty.elem.value}, assigned a "
                        f"{ty_of(item)}", f"cast: {ty.elem.value}(...)")
        store_local(s, var, RV(s.emit("vector.insert_at", [current.v, at, item], ty)))
        return
    if not isinstance(k, int) or isinstance(k, bool):
        raise error(s, "a vector component index must be an int (comptime) or a u32",
                    "write v[0] .. v[3], or v[i] with a u32 i")
    if not 0 <= k < ty.width:
        raise error(s, f"component {k} of a vector of width {ty.width}",
                    f"components run from 0 to {ty.width - 1}")
    item = value(s, x, Ty(ty.elem))
    if ty_of(item) != Ty(ty.elem):
        raise error(s, f"component {k} of `{var.name}` is a {ty.elem.value}, assigned a "
                    f"{ty_of(item)}", f"cast: {ty.elem.value}(...)")
    if ty.width == 1:  # a scalar is a vector of width 1: `v[0] = x` assigns it whole
        store_local(s, var, RV(item))
        return
    store_local(s, var, RV(s.emit("vector.insert", [current.v, item], ty, index=k)))


# -- indexing (the `__cl` entry points) -----------------------------------------------------------
def getitem(s: Scope, obj: Any, idx: Any, at: Pos) -> Any:
    s.at(*at)
    obj = read(s, obj)
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        return load(s, obj, idx)
    if isinstance(obj, sequences.Sequence):
        return sequences.get(s, obj, idx)
    if isinstance(obj, RV) and (ty_of(obj.v).width > 1 or isinstance(read(s, idx), int)):
        return vector_component(s, obj.v, idx)  # a scalar is a vector of width 1 (`v[0]`)
    idx = read(s, idx)
    if not isinstance(obj, KERNEL_VALUES) and not isinstance(idx, KERNEL_VALUES) \
            and hasattr(obj, "__getitem__"):
        try:
            return obj[idx]  # comptime: a tuple, SharedMemory[f32], Vector[F, N], ...
        except (IndexError, KeyError, TypeError) as exc:
            raise error(s, f"{describe(obj)}[{idx!r}]: {exc}",
                        "index a list with a comptime int in range") from None
    raise error(s, f"{describe(obj)} cannot be indexed here",
                "index a buffer argument (Slice / SliceMut / Tensor), an Array, shared memory "
                "or a vector")


def setitem(s: Scope, obj: Any, idx: Any, x: Any, at: Pos) -> None:
    s.at(*at)
    if isinstance(obj, (BufferRef, ArrayRef, SliceView)):
        store(s, obj, idx, x, at)
        return
    if isinstance(obj, sequences.Sequence):
        sequences.put(s, obj, idx, x)
        return
    if isinstance(obj, LocalVar):
        set_component(s, obj, idx, x)
        return
    if isinstance(obj, RV) and ty_of(obj.v).width > 1:
        raise error(s, "a vector component can be assigned only in a local variable",
                    "copy the vector into a local first: `w = v`, `w[0] = x`, then store `w`")
    raise error(s, f"{describe(read(s, obj))} cannot be assigned by index",
                "assign into a SliceMut / TensorMut argument, an Array or shared memory")


def augsetitem(s: Scope, obj: Any, idx: Any, op: str, x: Any, at: Pos) -> None:
    current = getitem(s, obj, idx, at)
    setitem(s, obj, idx, binop(s, op, current, x, at), at)


__all__ = ["new_array", "load", "store", "subslice", "getitem", "setitem", "augsetitem",
           "atomic_method", "buffer_method", "set_component", "vector_component", "Elem"]
