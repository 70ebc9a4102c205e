"""Lists in a kernel: CubeCL's `Sequence`, a comptime-length list of runtime values.

    acc = [f32(0.0)] * 4            vals = []
    for k in unroll(range(4)):      for k in unroll(range(3)):
        acc[k] += x[4 * i + k]          vals.append(x[i + k])
    out[i] = acc[0] + acc[3]        for v in vals: ...

The contract. A Python list bound to a kernel name becomes a `Sequence`: its length is known at
expansion (it grows by `append` while the kernel is expanded, never at run time), and each item
that is a runtime value lives in a mutable local of its own, so `vals[k] = y` (k comptime) is a
store that any later read sees — also inside a runtime `if` or loop, which a rebinding of an SSA
value could not express. Items that are Python values (`[0.0] * 4`, `[1, 2]`) stay Python until
a runtime value is stored into them. Reading `vals[k]` loads the item; `for v in vals` is
unrolled (one expansion per item, each read when its iteration starts); `len(vals)` and
`vals.len()` are Python ints; `vals[a:b]` is a Python list of the items' current values.

The traps, each refused with a caret:
- a runtime index `vals[i]`: the items are separate locals, there is no array to index (use an
  `Array[T](n)`, which is one);
- `vals.append(x)` inside a runtime `if`/loop that the list was created outside of: the append
  happens at expansion, once, whatever the branch does at run time;
- storing a runtime value, inside such a branch, into an item that still holds a Python value:
  its local would start inside the branch (write `[f32(0.0)] * 4`, typed, instead of `[0.0] * 4`).
"""

from __future__ import annotations

from typing import Any, Sequence as Seq

from cubelab.frontend.operands import (
    KERNEL_VALUES,
    default_ty,
    describe,
    error,
    is_py,
    read,
    store_local,
    ty_of,
)
from cubelab.frontend.values import RV, LocalVar
from cubelab.ir.scope import Scope


class Sequence:
    """A comptime-length list of items: `LocalVar`s for runtime values, Python values as they
    are (see the module docstring)."""

    def __init__(self, name: str, items: list[Any], depth: int) -> None:
        self.name = name
        self.items = items
        self.depth = depth  # runtime regions around the place the list was made

    def __len__(self) -> int:
        return len(self.items)

    # Plain Python use (inside `comptime(...)` or a plain Python helper), as the list it was:
    # Python-valued items read as themselves; a runtime item is its local, which comptime(...)
    # refuses with the name.
    def __getitem__(self, k: Any) -> Any:
        return self.items[k]

    def __iter__(self) -> Any:
        return iter(self.items)

    def __repr__(self) -> str:
        return f"Sequence({self.name}, {len(self.items)} items)"


def _runtime_depth(s: Scope) -> int:
    """How many runtime regions (branches, loop bodies, guards) enclose the insertion point."""
    return sum(1 for frame in s.flow for region in frame.regions if region.runtime)


def _local(s: Scope, x: Any, name: str) -> Any:
    """An item for `x`: a runtime value gets a local of its own; anything else stays."""
    x = read(s, x)
    if not isinstance(x, RV):
        return x
    var = LocalVar(s.declare_var(ty_of(x.v), name), name)
    store_local(s, var, x)
    return var


def make(s: Scope, items: Seq[Any], name: str) -> Sequence:
    """A list bound to the kernel name `name` (`vals = []`, `acc = [f32(0.0)] * 4`)."""
    seq = Sequence(name, [], _runtime_depth(s))
    seq.items = [_local(s, x, f"{name}_{k}") for k, x in enumerate(items)]
    return seq


def _position(s: Scope, seq: Sequence, idx: Any) -> int:
    idx = read(s, idx)
    if isinstance(idx, KERNEL_VALUES):
        raise error(s, f"a runtime index into the list `{seq.name}`",
                    "a list's items are separate locals, indexed by comptime ints (vals[0], or "
                    "unroll the loop); for a runtime index use an Array[T](n)")
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise error(s, f"the list `{seq.name}` is indexed by an int, got {describe(idx)}",
                    "a list's items are separate locals: index it with a comptime int, or "
                    "use an Array[T](n) for a runtime index")
    if not -len(seq.items) <= idx < len(seq.items):
        raise error(s, f"index {idx} is outside the list `{seq.name}` of {len(seq.items)} items",
                    f"indices run from 0 to {len(seq.items) - 1} (negative ones count from the "
                    "end)")
    return idx % len(seq.items)


def get(s: Scope, seq: Sequence, idx: Any) -> Any:
    if isinstance(idx, slice):
        return [read(s, x) for x in seq.items[idx]]
    return read(s, seq.items[_position(s, seq, idx)])


def put(s: Scope, seq: Sequence, idx: Any, x: Any) -> None:
    k = _position(s, seq, idx)
    current = seq.items[k]
    if isinstance(current, LocalVar):
        store_local(s, current, x)
        return
    x = read(s, x)
    if not isinstance(x, RV) or not is_py(current):
        seq.items[k] = x  # a Python value replaces a Python value, as in Python
        return
    if _runtime_depth(s) > seq.depth:
        raise error(s, f"`{seq.name}[{k}]` holds the Python value {current!r}; a runtime value "
                    "stored into it inside a runtime branch or loop would start its local there",
                    f"start the list with typed values, e.g. `{seq.name} = "
                    f"[{default_ty(current).elem.value}(...)] * n`")
    seq.items[k] = _local(s, x, f"{seq.name}_{k}")


def method(s: Scope, seq: Sequence, name: str, args: Seq[Any]) -> Any:
    """`vals.append(x)`, `vals.len()` (CubeCL's `push`/`len` under Python's names too)."""
    if name in ("append", "push") and len(args) == 1:
        if _runtime_depth(s) > seq.depth:
            raise error(s, f"`{seq.name}.{name}(...)` inside a runtime branch or loop",
                        "a list grows at expansion, once, whatever the branch does at run time: "
                        "append outside the runtime `if`/loop (in an unrolled loop is fine), or "
                        "assign an item that exists: vals[k] = x")
        seq.items.append(_local(s, args[0], f"{seq.name}_{len(seq.items)}"))
        return None
    if name == "len" and not args:
        return len(seq.items)
    raise error(s, f"`.{name}(...)` is not a list method in a kernel",
                "available: append(x) (or push), len(); index with comptime ints")


__all__ = ["Sequence", "get", "make", "method", "put"]
