"""Static analyses of one KernelDefinition that make the CPU plan fast — all computed once, when
the plan is built, never per launch.

- (index values as polynomials — ABSOLUTE_POS, its clamp, affine global indices — live in
  `indices.py`.)
- `liveness`: pure values nothing effectful needs are never computed (CheckedIo's clamps whose
  only use is an index the slice fast path replaces, for one).
- `uniform_ops`: values equal for every unit of a launch and depending only on its scalars,
  lengths and grid; the plan computes them once per launch signature.
- `view_loads`: which loads of a buffer the kernel writes may still return a view of memory
  instead of a copy (saxpy's `y[i]`). Which buffers it writes, and what an op does to a buffer,
  is `cubelab.ir.analysis` (the one home of that rule, shared with the server and the targets).
- `free_ids`: what a compacted branch must see from outside it.

The trap: every analysis here must be *conservative* — a value wrongly called uniform, dead or
lane-equal is a silently wrong kernel. When in doubt, an op is not pure and a value is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from cubelab.ir import analysis as ir_analysis
from cubelab.ir.analysis import Effect, is_pure  # purity: the IR layer's one rule
from cubelab.ir.core import Block, KernelDefinition, Op, Value
from cubelab.ir.types import Array, Atomic, Elem, Pointer, Ty

# -- liveness ----------------------------------------------------------------------------------


class _Ref:
    """A value id standing in for an operand (liveness only)."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id




def value_count(definition: KernelDefinition) -> int:
    """The size of a chunk's value table: one slot per SSA id up to the largest in use."""
    return max(ir_analysis.max_value_id(definition), 0) + 1


def liveness(definition: KernelDefinition, lane_ids: set[int],
             lane_min: dict[int, int]) -> set[int]:
    """Ids of the values some effectful op needs (directly or through pure ops)."""
    needed: set[int] = set()
    ops = list(definition.walk())
    changed = True
    while changed:
        changed = False
        for op in ops:
            live = not is_pure(op) or any(r.id in needed for r in op.results)
            if not live:
                continue
            if op.results and op.results[0].id in lane_ids:
                continue  # computed from the lane number directly, operands not needed
            operands: list[Value | _Ref] = list(op.operands)
            if op.name == "memory.index" and operands[1].id in lane_min:
                # the index step clamps the lane number itself when it must
                operands[1] = _Ref(lane_min[operands[1].id])
            for o in operands:
                if o.id not in needed:
                    needed.add(o.id)
                    changed = True
    return needed


# -- launch-uniform values ----------------------------------------------------------------------
def _value_ops(definition: KernelDefinition, needed: set[int] | None) -> Iterator[tuple[Op, int]]:
    """(op, result id) of each region-free op with one typed result that `needed` keeps (None:
    every one), in program order: the candidates of both value analyses below."""
    for op in definition.walk():
        if len(op.results) != 1 or op.regions or not isinstance(op.results[0].type, Ty):
            continue
        r = op.results[0].id
        if needed is None or r in needed:
            yield op, r


def uniform_ops(definition: KernelDefinition, needed: set[int] | None,
                lane_ids: set[int]) -> list[Op]:
    """The ops whose one result is the same for every unit of a launch, in program order."""
    buffer_ids = {b.value.id for b in definition.buffers}
    uniform: set[int] = set()
    out: list[Op] = []
    for op, r in _value_ops(definition, needed):
        name = op.name
        if name in ("arith.constant", "info.scalar", "buffer.len", "tensor.rank",
                    "tensor.len") or (
                name == "builtin.read" and (op.attrs.get("name", "").startswith(
                    "num_workgroups_") or op.attrs.get("name") == "subgroup_size")):
            ok = all(o.id in uniform or o.id in buffer_ids for o in op.operands)
        elif name.startswith(("arith.", "math.", "vector.")) and r not in lane_ids:
            ok = bool(op.operands) and all(o.id in uniform for o in op.operands)
        else:
            ok = False
        if ok:
            uniform.add(r)
            out.append(op)
    return out


# -- unit-only values ---------------------------------------------------------------------------
def unit_only_ops(definition: KernelDefinition, needed: set[int] | None,
                  lane_ids: set[int]) -> set[int]:
    """Ids of the arith/math/vector results computed from UNIT_POS-like builtins and nothing
    per-lane else: if every other operand is uniform *at run time* (a constant, a scalar, a
    loop counter like the `s` of a tree reduction), the result is the same array for every full
    chunk of a launch (`UNIT_POS < s`, `ty * tile + j`) and the plan memoizes it per chunk
    shape (`Plan._unit_memo`). Only a candidate set: the run-time check decides."""
    unit: set[int] = set()
    for op, r in _value_ops(definition, needed):
        name = op.name
        if name == "builtin.read":
            if op.attrs.get("name", "").startswith("local_invocation_"):
                unit.add(r)
        elif name.startswith(("arith.", "math.", "vector.")) and r not in lane_ids and \
                any(o.id in unit for o in op.operands):
            unit.add(r)
    return unit


def unit_static_ops(definition: KernelDefinition, needed: set[int] | None, lane_ids: set[int],
                    uniform: set[int]) -> list[Op]:
    """The ops, in program order, whose result depends only on the units' positions in their
    cube and on launch-uniform values (`uniform_ops`): UNIT_POS_X/Y/Z themselves, `ty * tile +
    j` of an unrolled loop, `UNIT_POS + 1`. Unlike `unit_only_ops` no operand may change inside
    the launch (a loop counter), so the plan computes them once per chunk shape and launch
    signature, before any block runs, wherever they sit in the kernel (`Plan._hoisted`)."""
    unit: set[int] = set()
    out: list[Op] = []
    for op, r in _value_ops(definition, needed):
        name = op.name
        if name == "builtin.read":
            ok = op.attrs.get("name", "").startswith("local_invocation_")
        else:
            ok = name.startswith(("arith.", "math.", "vector.")) and r not in lane_ids and \
                r not in uniform and any(o.id in unit for o in op.operands) and \
                all(o.id in unit or o.id in uniform for o in op.operands)
        if ok:
            unit.add(r)
            out.append(op)
    return out


def array_bytes(definition: KernelDefinition) -> tuple[int, int]:
    """(shared-memory bytes per cube, local-array bytes per unit) the kernel declares."""
    shared = local = 0
    for op in definition.walk():
        if op.name not in ("shared.declare", "var.declare"):
            continue
        ptr = op.results[0].type
        arr = getattr(ptr, "pointee", None)
        if not isinstance(arr, Array):
            continue
        item = arr.item.value_ty if isinstance(arr.item, Atomic) else arr.item
        size = arr.length * 4 * item.width
        if op.name == "shared.declare":
            shared += size
        else:
            local += size
    return shared, local


# -- loads that may stay views ------------------------------------------------------------------
def view_loads(definition: KernelDefinition, written: set[int]) -> set[int]:
    """Loads of a *written* buffer that may still return a view of its memory (by id(op)):
    every use of the value (and of views of it) comes before the first op of the same
    block that writes that buffer, and the value never lands in a local variable. saxpy's
    `y[i]` is one: read, added, and only then stored. Saves a copy per load."""
    origin: dict[int, int] = {b.value.id: b.index for b in definition.buffers}
    producer: dict[int, Op] = {}
    where: dict[int, tuple[Block, int]] = {}  # id(op) -> (its block, its index there)
    parent: dict[int, Op] = {}  # id(op) -> the op whose region holds it

    def index_block(block: Block, owner: Op | None) -> None:
        for i, op in enumerate(block.ops):
            where[id(op)] = (block, i)
            if owner is not None:
                parent[id(op)] = owner
            for r in op.results:
                producer[r.id] = op
            for reg in op.regions:
                index_block(reg, op)

    index_block(definition.body, None)
    ops = list(definition.walk())
    for op in ops:
        if ir_analysis.effect_of(op) is Effect.DERIVE and op.operands[0].id in origin:
            origin[op.result.id] = origin[op.operands[0].id]

    def writes(op: Op, b: int) -> bool:
        return any(ir_analysis.effect_of(o) in (Effect.WRITE, Effect.READ_WRITE)
                   and origin.get(o.operands[0].id) == b for o in op.walk())

    def position_in(op: Op, block: Block) -> int | None:
        cur: Op | None = op
        while cur is not None:
            blk, i = where[id(cur)]
            if blk is block:
                return i
            cur = parent.get(id(cur))
        return None

    safe: set[int] = set()
    for load in ops:
        if load.name != "memory.load":
            continue
        b = origin.get(load.operands[0].id)
        if b is None or b not in written:
            continue
        block, i = where[id(load)]
        alias = {load.result.id}
        uses: list[Op] = []
        ok = True
        for op in ops:
            if not any(o.id in alias for o in op.operands):
                continue
            uses.append(op)
            if op.name in ("vector.extract", "vector.splat", "arith.cast") and op.results:
                alias.add(op.result.id)
            if op.name == "memory.store" and op.operands[1].id in alias:
                ptr = producer.get(op.operands[0].id)
                if ptr is None or ptr.name != "memory.index":
                    ok = False  # into a local variable: it would outlive the buffer's data
        if not ok:
            continue
        first_write = next((k for k in range(i + 1, len(block.ops))
                            if writes(block.ops[k], b)), len(block.ops))
        last_use = max((position_in(u, block) or len(block.ops) for u in uses), default=i)
        if last_use < first_write:
            safe.add(id(load))
    return safe


# -- shared-memory loads read where they are used -----------------------------------------------
# binary ops whose step can take a shared-memory load as a strided view (`steps.arith._binary`)
VIEW_CONSUMERS = frozenset({"arith.add", "arith.sub", "arith.mul", "arith.div", "arith.min",
                            "arith.max", "arith.bitand", "arith.bitor", "arith.bitxor"})


def _inert(op: Op) -> bool:
    """May stand between such a load and its use: writes no memory and runs no region (a pure
    op, or another load)."""
    return is_pure(op) or op.name == "memory.load"


def use_counts(definition: KernelDefinition) -> dict[int, int]:
    """How many operands name each value id, over the whole kernel."""
    uses: dict[int, int] = {}
    for op in definition.walk():
        for o in op.operands:
            uses[o.id] = uses.get(o.id, 0) + 1
    return uses


def view_shared_loads(definition: KernelDefinition) -> set[int]:
    """Result ids of shared-memory loads of scalars whose one use is a binary op of
    `VIEW_CONSUMERS` later in the same block, with nothing in between that could write memory:
    the load may hand that op a view of each cube's row (`steps.memory.CubeView`) instead of a
    copy, since the row cannot change before the op reads it (`sm[u] + sm[u + s]`: no copies)."""
    uses = use_counts(definition)
    out: set[int] = set()

    def visit(block: Block) -> None:
        for i, op in enumerate(block.ops):
            for reg in op.regions:
                visit(reg)
            if op.name != "memory.load" or uses.get(op.result.id) != 1:
                continue
            ptr = op.operands[0].type
            if not (isinstance(ptr, Pointer) and ptr.space == "shared"
                    and isinstance(ptr.pointee, Ty) and ptr.pointee.width == 1):
                continue
            r = op.result.id
            for later in block.ops[i + 1:]:
                if any(o.id == r for o in later.operands):
                    if later.name in VIEW_CONSUMERS:
                        out.add(r)
                    break
                if later.regions or not _inert(later):
                    break

    visit(definition.body)
    return out


def view_results(definition: KernelDefinition, views: set[int]) -> set[int]:
    """Result ids of `VIEW_CONSUMERS` scalar ops with an operand among `views` (shared loads
    read in place, or such results themselves) whose one use is again a `VIEW_CONSUMERS` op
    later in the same block: the op may hand its result on in the views' shape, as a
    `CubeView` of its own fresh buffer (`steps.arith.on_views`), so a chain like
    `(sm[u] + sm[u + 1] + sm[u + 2]) / 3` never turns its partial sums back into lane order.
    Only within a block: a branch compacts its lane arrays, which a view is not."""
    uses = use_counts(definition)
    out: set[int] = set()

    def visit(block: Block) -> None:
        for i, op in enumerate(block.ops):
            for reg in op.regions:
                visit(reg)
            if op.name not in VIEW_CONSUMERS or len(op.results) != 1 or \
                    not any(o.id in views or o.id in out for o in op.operands):
                continue
            t = op.results[0].type
            r = op.results[0].id
            if not (isinstance(t, Ty) and t.width == 1) or uses.get(r) != 1:
                continue
            user = next((later for later in block.ops[i + 1:]
                         if any(o.id == r for o in later.operands)), None)
            if user is not None and user.name in VIEW_CONSUMERS:
                out.add(r)

    visit(definition.body)
    return out


# -- results computed into the buffer that stores them ----------------------------------------
IN_PLACE_OPS = frozenset({"arith.add", "arith.sub", "arith.mul", "arith.div"})


def stored_in_place(block: Block, i: int, uses: dict[int, int]) -> bool:
    """Whether `block.ops[i]` is an f32 add/sub/mul/div whose one use is the store right after
    the `memory.index` of a global buffer that follows it (`out[i] = a / b`): the plan may
    compute it straight into the buffer when that pointer is a slice (`steps.memory.in_place`).
    Nothing runs between the three ops, so computing the value after the index is the same."""
    ops = block.ops
    if i + 2 >= len(ops):
        return False
    op, ix, st = ops[i], ops[i + 1], ops[i + 2]
    ty = op.results[0].type if len(op.results) == 1 else None
    ptr = ix.results[0].type if ix.name == "memory.index" else None
    return (op.name in IN_PLACE_OPS and isinstance(ty, Ty) and ty.elem is Elem.F32
            and isinstance(ptr, Pointer) and ptr.space == "global"
            and st.name == "memory.store" and uses.get(op.results[0].id) == 1
            and uses.get(ix.results[0].id) == 1 and st.operands[0].id == ix.results[0].id
            and st.operands[1].id == op.results[0].id)


# -- unrolled dot products -----------------------------------------------------------------------
@dataclass(frozen=True)
class Accumulation:
    """A run of `acc += sm1[i] * sm2[j]` terms on one f32 local (an unrolled dot product, the
    tiled matmul's inner loop). Each term is two shared `memory.index`, their two loads, a
    `mul`, the local's load, an `add` and the store back, plus any integer arithmetic computing
    its indices. `ops` are the block indices of the ops the run replaces, `prelude` those of the
    index arithmetic and `memory.index` ops (in block order: they run first), each term is
    (pointer id of the mul's lhs, of its rhs, whether the add reads the local first: `acc + p`,
    else `p + acc`), and `bases` the ids of the shared arrays the two pointers index, per term;
    `indices` the ids of every index the pointers are made from."""

    var: int
    ops: tuple[int, ...]
    prelude: tuple[int, ...]
    terms: tuple[tuple[int, int, bool], ...]
    bases: tuple[tuple[int, int], ...]
    indices: tuple[int, ...]


_TERM_OPS = ["arith.add", "arith.mul", "memory.index", "memory.index", "memory.load",
             "memory.load", "memory.load", "memory.store"]
_MAX_TERM = 24  # ops of one term, index arithmetic included


def _f32_scalar(t: object) -> bool:
    return isinstance(t, Ty) and t.elem is Elem.F32 and t.width == 1


def _term(block: Block, at: list[int], uses: dict[int, int]
          ) -> tuple[int, tuple[int, int, bool], list[int], tuple[Op, Op]] | None:
    """(local id, term, block indices of its prelude, its two `memory.index` ops) if the ops at
    `at` — ending with the store to the local — are one dot-product term."""
    ops = [block.ops[i] for i in at]
    store = ops[-1]
    var, s = store.operands
    vt = var.type
    if not (isinstance(vt, Pointer) and vt.space == "function" and _f32_scalar(vt.pointee)):
        return None
    by_result = {op.results[0].id: (i, op) for i, op in zip(at, ops) if op.results}
    add = by_result.get(s.id, (0, None))[1]
    if add is None or add.name != "arith.add" or not _f32_scalar(add.results[0].type):
        return None
    lhs, rhs = (by_result.get(o.id, (0, None))[1] for o in add.operands)
    acc_first = lhs is not None and lhs.name == "memory.load" and lhs.operands[0].id == var.id
    acc, mul = (lhs, rhs) if acc_first else (rhs, lhs)
    if acc is None or mul is None or acc.name != "memory.load" or \
            acc.operands[0].id != var.id or mul.name != "arith.mul" or \
            not _f32_scalar(mul.results[0].type):
        return None
    pointers: list[int] = []
    index_ops: list[Op] = []
    core = [store, add, acc, mul]
    for o in mul.operands:
        load = by_result.get(o.id, (0, None))[1]
        if load is None or load.name != "memory.load":
            return None
        ix = by_result.get(load.operands[0].id, (0, None))[1]
        ptr = ix.results[0].type if ix is not None and ix.name == "memory.index" else None
        if not (isinstance(ptr, Pointer) and ptr.space == "shared" and _f32_scalar(ptr.pointee)):
            return None
        pointers.append(ix.results[0].id)
        index_ops.append(ix)
        core += [load, ix]
    if len({id(op) for op in core}) != 8:
        return None  # `x * x`: one load used twice
    prelude: list[int] = []
    inside = {r.id for op in ops for r in op.results}
    for i, op in zip(at, ops):
        if op.name == "memory.index" and any(op is c for c in core):
            prelude.append(i)
        elif not any(op is c for c in core):
            # index arithmetic: pure integer ops whose values only this term's ops use
            t = op.results[0].type if len(op.results) == 1 else None
            if op.regions or not op.name.startswith("arith.") or not is_pure(op) or \
                    not isinstance(t, Ty) or t.elem not in (Elem.U32, Elem.I32):
                return None
            prelude.append(i)
    # every value is used by this term alone (once, for the core's): nothing else sees it
    used_inside: dict[int, int] = {}
    for op in ops:
        for o in op.operands:
            if o.id in inside:
                used_inside[o.id] = used_inside.get(o.id, 0) + 1
    for op in ops[:-1]:
        r = op.results[0].id
        if uses.get(r) != used_inside.get(r) or \
                any(op is c for c in core) and uses.get(r) != 1:
            return None
    return var.id, (pointers[0], pointers[1], acc_first), prelude, (index_ops[0], index_ops[1])


def accumulations(block: Block, active: list[int], uses: dict[int, int]) -> list[Accumulation]:
    """The runs of at least two consecutive dot-product terms on one local in `block`, where
    `active` lists the block indices of the ops the plan runs (index arithmetic the plan hoists
    is not among them). A run only reads shared memory and writes its one local, so the plan
    may run it as one step (`steps.accumulate`): per lane the same f32 products and sums, in the
    same order, as the ops one by one."""
    out: list[Accumulation] = []
    k = 0
    while k < len(active):
        terms: list[tuple[tuple[int, int, bool], list[int], tuple[Op, Op]]] = []
        var = None
        j = k
        while True:
            # a term ends at the first store; it has the 8 core ops and maybe index arithmetic
            end = next((e for e in range(j, min(j + _MAX_TERM, len(active)))
                        if block.ops[active[e]].name == "memory.store"), None)
            if end is None or end - j + 1 < len(_TERM_OPS):
                break
            names = sorted(block.ops[i].name for i in active[j:end + 1]
                           if not block.ops[i].name.startswith("arith.")
                           or block.ops[i].name in ("arith.add", "arith.mul")
                           and _f32_scalar(block.ops[i].results[0].type))
            found = _term(block, active[j:end + 1], uses) if names == _TERM_OPS else None
            if found is None or var is not None and found[0] != var:
                break
            var = found[0]
            terms.append((found[1], found[2], found[3]))
            j = end + 1
        if len(terms) >= 2 and var is not None:
            out.append(Accumulation(
                var, tuple(active[k:j]), tuple(i for _, pre, _ in terms for i in pre),
                tuple(t for t, _, _ in terms),
                tuple((ix.operands[0].id, iy.operands[0].id) for _, _, (ix, iy) in terms),
                tuple(ix.operands[1].id for _, _, pair in terms for ix in pair)))
            k = j
        else:
            k += 1
    return out


# -- value lifetimes ----------------------------------------------------------------------------
def last_uses(block: Block, kept: set[int], uses: dict[int, int]) -> dict[int, tuple[int, ...]]:
    """index of an op in `block` -> the values computed by ops of `block` whose last use is that
    op (or an op nested in it): the plan may drop them after it. Only values of this block all
    of whose uses (`uses`: id -> how many operands name it, in the whole kernel) are in it: one
    computed outside a loop body and used inside must live through every iteration. Never the
    operand of `scf.condition` (its loop reads it after the block) nor `kept` values (the plan
    binds them before the body runs, once)."""
    defined = {r.id for op in block.ops for r in op.results} - kept
    last: dict[int, int] = {}
    seen: dict[int, int] = {}
    for i, op in enumerate(block.ops):
        for inner in op.walk():
            if inner.name == "scf.condition":
                defined -= {o.id for o in inner.operands}
            for o in inner.operands:
                if o.id in defined:
                    last[o.id] = i
                    seen[o.id] = seen.get(o.id, 0) + 1
    defined -= {v for v, n in seen.items() if n != uses.get(v)}
    out: dict[int, list[int]] = {}
    for v, i in last.items():
        if v in defined:
            out.setdefault(i, []).append(v)
    return {i: tuple(vs) for i, vs in out.items()}


def branch_private_vars(definition: KernelDefinition) -> dict[int, frozenset[int]]:
    """id(region) of each `scf.if` branch outside every loop -> the locals (`var.declare`) that
    only that branch names: a compacted run of it need not merge what it wrote to them back into
    the chunk's lanes (`compaction.run_compacted`), since nothing after it reads them and it
    never runs again in this launch (`left` and `right` of a stencil's edge branches)."""
    total: dict[int, int] = {}
    for op in definition.walk():
        for o in op.operands:
            total[o.id] = total.get(o.id, 0) + 1
    declared = {op.results[0].id for op in definition.walk() if op.name == "var.declare"}
    out: dict[int, frozenset[int]] = {}

    def visit(block: Block, in_loop: bool) -> None:
        for op in block.ops:
            loop = in_loop or op.name in ("scf.for", "scf.while")
            for reg in op.regions:
                if op.name == "scf.if" and not in_loop:
                    inside: dict[int, int] = {}
                    for inner in reg.walk():
                        for o in inner.operands:
                            if o.id in declared:
                                inside[o.id] = inside.get(o.id, 0) + 1
                    out[id(reg)] = frozenset(v for v, n in inside.items() if n == total[v])
                visit(reg, loop)

    visit(definition.body, False)
    return out


# -- compaction ---------------------------------------------------------------------------------
def free_ids(blocks: list[Block], hoisted: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Ids used inside `blocks` but defined outside them (what a compacted branch must see);
    `hoisted` values count as defined outside wherever their op sits (the plan computes them
    before any block runs)."""
    used: list[int] = []
    defined: set[int] = set()
    for block in blocks:
        defined.update(a.id for a in block.args)
        for op in block.walk():
            for reg in op.regions:
                defined.update(a.id for a in reg.args)
            defined.update(r.id for r in op.results if r.id not in hoisted)
            used.extend(o.id for o in op.operands)
    seen: set[int] = set()
    out = []
    for i in used:
        if i not in defined and i not in seen:
            seen.add(i)
            out.append(i)
    return out
