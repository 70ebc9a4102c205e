"""The IR verifier: is this a well-formed kernel? Run after every student pass.

Contract: `verify(definition)` returns a list of problems, each one sentence naming the op and
its kernel line (empty: well formed). It checks what a pass most easily breaks and a target would
otherwise crash on, deep in codegen, with a message about the target instead of the pass:
- every op is one of `ir.core.OPS`;
- every operand is defined before it is used, in a block that encloses the use (a kernel
  argument, an earlier op of this block or an enclosing one, or an enclosing region's argument):
  no dangling values, nothing used from a sibling branch;
- every value is defined once;
- types agree where the op's meaning (OPS) says they must: elementwise arithmetic takes and
  gives one type, a comparison gives bools of the operands' width, a select's condition is bool,
  a constant's value is of its type and in its range (u32: 0 … 2**32 - 1, i32: -2**31 …
  2**31 - 1: integer arithmetic wraps, so a folded sum must too), a shift keeps its left
  operand's type (i32 or u32) and shifts by a u32 of the same width, a cast keeps the width, a load gives the
  pointee, a store stores it, an `if` tests one bool, a `for` counts in one integer type, a
  plug-in op (`ir/plugins.py`) takes its arity of operands of its result's type.

Why a verifier and not trust: `extra_passes` are student code (`cubelab.compiler.Pass`); a
constant-folding pass that replaces `%v3 = arith.add %v1, %v2 : u32` by an f32 constant, or
deletes an op whose value is still used, should be told "pass `fold` made `%v3` a f32 where u32
is expected at line 7", not "KeyError: 41" from the WGSL emitter.

Trap: it checks structure and the type rules above, not meaning — a pass that folds `2 + 3` to
`6` passes here; the runs that compare targets with numpy catch that.
"""

from __future__ import annotations

from cubelab.ir.core import OPS, Block, KernelDefinition, Op
from cubelab.ir.plugins import plugin_op
from cubelab.ir.types import Elem, Pointer, Ty

_SAME_TYPE = {"arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.min",
              "arith.max", "arith.bitand", "arith.bitor", "arith.bitxor", "arith.and",
              "arith.or", "arith.neg", "arith.not", "arith.bitnot", "math.fma"}


_INT_RANGE = {"u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1)}


def _where(op: Op) -> str:
    return f" at line {op.loc.line}" if op.loc is not None else ""


def _check_types(op: Op) -> list[str]:
    """The type rules of OPS this verifier knows, for one op."""
    res = op.results[0].type if len(op.results) == 1 else None
    ops = op.operands
    bad: list[str] = []

    def say(text: str) -> None:
        bad.append(f"`{op.name}`{_where(op)}: {text}")

    plugin = plugin_op(op.name)
    if plugin is not None:
        if len(ops) != plugin.arity or len(op.results) != 1:
            say(f"takes {plugin.arity} operand(s) and gives one value; here {len(ops)} and "
                f"{len(op.results)}")
        elif not isinstance(res, Ty) or res.elem is Elem.BOOL:
            say(f"gives {res}; a plug-in op gives a scalar or vector of f32, i32 or u32")
        for v in ops:
            if v.type != res:
                say(f"%{v.name} is {v.type} where {res} (the result's type) is expected")
    elif op.name in _SAME_TYPE:
        for v in ops:
            if v.type != res:
                say(f"%{v.name} is {v.type} where {res} (the result's type) is expected")
    elif op.name == "arith.cmp":
        if len(ops) == 2 and ops[0].type != ops[1].type:
            say(f"compares %{ops[0].name}: {ops[0].type} with %{ops[1].name}: {ops[1].type}")
        if isinstance(res, Ty) and isinstance(ops[0].type, Ty) and (
                res.elem.value != "bool" or res.width != ops[0].type.width):
            say(f"gives {res}; a comparison gives bools of the operands' width")
    elif op.name == "arith.select":
        cond, a, b = ops
        if not isinstance(cond.type, Ty) or cond.type.elem.value != "bool":
            say(f"its condition %{cond.name} is {cond.type}, not bool")
        for v in (a, b):
            if v.type != res:
                say(f"%{v.name} is {v.type} where {res} is expected")
    elif op.name == "arith.constant":
        value = op.attrs.get("value")
        if not isinstance(res, Ty) or res.width != 1:
            say(f"gives {res}; a constant is a scalar")
        elif res.elem.value == "bool" and not isinstance(value, bool):
            say(f"value {value!r} is not a bool, for a bool constant")
        elif res.elem.value in ("i32", "u32") and (isinstance(value, bool)
                                                   or not isinstance(value, int)):
            say(f"value {value!r} is not a whole number, for a {res} constant")
        elif res.elem.value in ("i32", "u32") and not _INT_RANGE[res.elem.value][0] <= value \
                <= _INT_RANGE[res.elem.value][1]:
            lo, hi = _INT_RANGE[res.elem.value]
            say(f"value {value} does not fit {res} ({lo} … {hi}): integer arithmetic wraps "
                "modulo 2**32, so a folded result must wrap too")
        elif res.elem.value == "f32" and (isinstance(value, bool)
                                          or not isinstance(value, (int, float))):
            say(f"value {value!r} is not a number, for an f32 constant")
    elif op.name in ("arith.shl", "arith.shr") and len(ops) == 2:
        value, amount = ops
        if value.type != res:
            say(f"%{value.name} is {value.type} where {res} (the result's type) is expected")
        if isinstance(res, Ty) and not res.elem.is_int:
            say(f"shifts a {res}; shifts take i32 or u32 values")
        elif isinstance(res, Ty) and amount.type != Ty(Elem.U32, res.width):
            say(f"shifts by %{amount.name}: {amount.type}; the amount is a u32"
                + (f" vector of width {res.width}" if res.width > 1 else ""))
    elif op.name in ("arith.cast", "arith.bitcast"):
        if isinstance(res, Ty) and isinstance(ops[0].type, Ty) and res.width != ops[0].type.width:
            say(f"changes the width: {ops[0].type} to {res}")
    elif op.name == "memory.load":
        ptr = ops[0].type
        if not isinstance(ptr, Pointer):
            say(f"loads through %{ops[0].name}, which is {ptr}, not a pointer")
        elif ptr.pointee != res:
            say(f"gives {res} from a pointer to {ptr.pointee}")
    elif op.name == "memory.store":
        ptr, value = ops
        if not isinstance(ptr.type, Pointer):
            say(f"stores through %{ptr.name}, which is {ptr.type}, not a pointer")
        elif ptr.type.pointee != value.type:
            say(f"stores %{value.name}: {value.type} behind a pointer to {ptr.type.pointee}")
    elif op.name == "scf.if":
        cond = ops[0] if ops else None
        if cond is None or not isinstance(cond.type, Ty) or cond.type != Ty(cond.type.elem) \
                or cond.type.elem.value != "bool":
            say("tests something that is not one bool")
    elif op.name == "scf.for":
        if len({v.type for v in ops}) != 1:
            say("its start, end and step are not of one type")
    return bad


def verify(kernel: KernelDefinition) -> list[str]:
    """Every problem of `kernel`'s IR this verifier knows (see the module's docstring)."""
    problems: list[str] = []
    defined: set[int] = set()  # ids defined anywhere so far (for "defined twice")

    def block(b: Block, visible: set[int]) -> set[int]:
        """Check `b`; return what is visible at its end (scf.while's body sees its
        condition's values)."""
        scope = set(visible) | {a.id for a in b.args}
        for a in b.args:
            if a.id in defined:
                problems.append(f"region argument %{a.name} is defined twice")
            defined.add(a.id)
        for op in b.ops:
            if op.name not in OPS:
                problems.append(f"`{op.name}`{_where(op)} is not an IR op (ir.core.OPS)")
                continue
            for v in op.operands:
                if v.id in scope:
                    continue
                if v.id in everywhere:
                    problems.append(f"`{op.name}`{_where(op)}: its operand %{v.name} is defined "
                                    "where this op cannot see it (later, or inside another "
                                    "branch)")
                else:
                    problems.append(f"`{op.name}`{_where(op)}: its operand %{v.name} is "
                                    "defined by no op the kernel still has (a dangling value)")
            problems.extend(_check_types(op))
            inner = scope
            for r in op.regions:
                seen = block(r, inner)
                inner = seen if op.name == "scf.while" else scope
            for v in op.results:
                if v.id in defined:
                    problems.append(f"`{op.name}`{_where(op)}: %{v.name} is defined twice")
                defined.add(v.id)
                scope.add(v.id)
        return scope

    args = {b.value.id for b in kernel.buffers}
    everywhere = set(args)
    for op in kernel.walk():
        everywhere.update(v.id for v in op.results)
        for r in op.regions:
            everywhere.update(a.id for a in r.args)
    defined |= args
    block(kernel.body, args)
    return problems
