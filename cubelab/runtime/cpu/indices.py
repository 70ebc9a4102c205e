"""Symbolic index analyses of one KernelDefinition for the CPU plan (computed once per plan).

- `lane_values` / `lane_mins`: which u32 values are provably ABSOLUTE_POS (a small symbolic
  polynomial evaluation), and which are CheckedIo's `min(ABSOLUTE_POS, len - 1)`: an index equal
  to either loads and stores a slice instead of gathering.
- `affine_indices` (with `forwarded_loads`): global-memory indices that are affine in the units'
  and cubes' coordinates (`a[row * k + ak]`, followed through locals stored only once), which the
  memory steps read as a strided view of the buffer instead of a per-lane gather.

Split from `analysis.py` (the plan's other analyses) along this seam: everything here reasons
about index *values* as polynomials in the grid's symbols. The trap is the same as there: a value
wrongly called lane-equal or affine is a silently wrong kernel, so unknown ops end the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubelab.ir.core import Block, KernelDefinition, Op, Value
from cubelab.ir.types import Elem, Pointer, Ty

# -- symbolic "is this ABSOLUTE_POS?" analysis --------------------------------------------------
Poly = dict[tuple[str, ...], int]


def _padd(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}


def _pmul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            k = tuple(sorted(ka + kb))
            out[k] = out.get(k, 0) + va * vb
    return {k: v for k, v in out.items() if v}


_SYM = {"workgroup_id_x": "W0", "workgroup_id_y": "W1", "workgroup_id_z": "W2",
        "num_workgroups_x": "N0", "num_workgroups_y": "N1", "num_workgroups_z": "N2",
        "local_invocation_index": "U"}


def lane_mins(definition: KernelDefinition, lanes: set[int]) -> dict[int, int]:
    """`min(ABSOLUTE_POS, bound)` values (what CheckedIo makes of `x[ABSOLUTE_POS]`): id -> the
    bound's id. Where the bound covers the chunk, the index is the lane number again."""
    out: dict[int, int] = {}
    for op in definition.walk():
        if op.name == "arith.min" and op.results[0].type == Ty(Elem.U32):
            a, b = op.operands
            if a.id in lanes:
                out[op.result.id] = b.id
            elif b.id in lanes:
                out[op.result.id] = a.id
    return out


def lane_values(definition: KernelDefinition) -> set[int]:
    """Ids of u32 values provably equal to the lane's linear position (ABSOLUTE_POS): lanes are
    laid out cube-major, so ((W2*N1 + W1)*N0 + W0)*D + U is exactly the lane number."""
    d = definition.cube_dim[0] * definition.cube_dim[1] * definition.cube_dim[2]
    w: dict[str, Poly] = {k: {(k,): 1} for k in ("W0", "W1", "W2", "N0", "N1", "U")}
    cube = _padd(_pmul(_padd(_pmul(w["W2"], w["N1"]), w["W1"]), w["N0"]), w["W0"])
    lane = _padd(_pmul(cube, {(): d}), w["U"])
    polys: dict[int, Poly] = {}
    found: set[int] = set()
    for op in definition.walk():
        if not op.results or op.results[0].type != Ty(Elem.U32):
            continue
        r = op.results[0].id
        p: Poly | None = None
        if op.name == "builtin.read" and op.attrs.get("name") in _SYM:
            p = {(_SYM[op.attrs["name"]],): 1}
        elif op.name == "arith.constant":
            p = {(): int(op.attrs["value"])} if int(op.attrs["value"]) else {}
        elif op.name in ("arith.add", "arith.mul"):
            a, b = (polys.get(o.id) for o in op.operands)
            if a is not None and b is not None:
                p = _padd(a, b) if op.name == "arith.add" else _pmul(a, b)
        if p is not None:
            polys[r] = p
            if p == lane:
                found.add(r)
    return found


# -- global loads through an affine index --------------------------------------------------------
_LANE_SYM = {"local_invocation_id_x": "U0", "local_invocation_id_y": "U1",
             "local_invocation_id_z": "U2", "workgroup_id_x": "W0", "workgroup_id_y": "W1",
             "workgroup_id_z": "W2"}
LANE_SYMBOLS = ("W0", "W1", "W2", "U0", "U1", "U2")


@dataclass(frozen=True)
class AffineIndex:
    """An index that is `offset + sum(coefs[s] * s)` over the lane symbols `s` (a unit's and its
    cube's coordinates: "U0".."U2", "W0".."W2"), each coefficient and the offset a polynomial
    over values that should be the same for every lane ("v<id>": a scalar, a loop counter);
    `symbols` lists those value ids (the step checks they are one row at run time)."""

    offset: tuple[tuple[tuple[str, ...], int], ...]
    coefs: tuple[tuple[str, tuple[tuple[tuple[str, ...], int], ...]], ...]
    symbols: tuple[int, ...]


def forwarded_loads(definition: KernelDefinition) -> dict[int, int]:
    """Loads of a scalar local that can only see one store: load id -> the stored value's id.
    The local has exactly one store in the kernel, and every load of it comes after that store
    in its block or inside an op after it (so in the same iteration of any loop around them,
    and under the store's mask or a narrower one)."""
    stores: dict[int, list[tuple[Block, int, Op]]] = {}
    loads: dict[int, list[tuple[list[tuple[Block, int]], Op]]] = {}
    declared = {op.results[0].id for op in definition.walk() if op.name == "var.declare"
                and isinstance(op.results[0].type, Pointer)
                and isinstance(op.results[0].type.pointee, Ty)}

    def visit(block: Block, path: list[tuple[Block, int]]) -> None:
        for i, op in enumerate(block.ops):
            if op.name == "memory.store" and op.operands[0].id in declared:
                stores.setdefault(op.operands[0].id, []).append((block, i, op))
            elif op.name == "memory.load" and op.operands[0].id in declared:
                loads.setdefault(op.operands[0].id, []).append((path + [(block, i)], op))
            for reg in op.regions:
                visit(reg, path + [(block, i)])

    visit(definition.body, [])
    out: dict[int, int] = {}
    for var, found in stores.items():
        if len(found) != 1:
            continue
        sblock, si, store = found[0]
        for path, load in loads.get(var, []):
            if any(b is sblock and i > si for b, i in path):
                out[load.results[0].id] = store.operands[1].id
    return out


def affine_indices(definition: KernelDefinition, lane_ids: set[int]) -> dict[int, AffineIndex]:
    """`memory.index` result id -> its index as an `AffineIndex`, for indices into a buffer
    argument that are affine in the lanes' coordinates (`row * k + t0 + tx` of a tiled matmul,
    seen through the locals it was stored in: `forwarded_loads`) and whose pointer only feeds
    loads in the same block: such a load reads a strided view of the buffer instead of
    gathering (`steps.memory`). ABSOLUTE_POS itself is left to its slice path."""
    forwarded = forwarded_loads(definition)
    buffers = {b.value.id for b in definition.buffers}
    polys: dict[int, Poly] = {}
    dx, dy, _ = definition.cube_dim
    unit_pos: Poly = _padd(_padd({("U0",): 1}, {("U1",): dx}), {("U2",): dx * dy})

    def poly(v: Value) -> Poly:
        p = polys.get(v.id)
        return p if p is not None else {(f"v{v.id}",): 1}

    users: dict[int, list[Op]] = {}
    where: dict[int, Block] = {}

    def visit(block: Block) -> None:
        for op in block.ops:
            for o in op.operands:
                users.setdefault(o.id, []).append(op)
            where[id(op)] = block
            for reg in op.regions:
                visit(reg)

    visit(definition.body)
    out: dict[int, AffineIndex] = {}
    for op in definition.walk():
        if len(op.results) != 1:
            continue
        r = op.results[0].id
        t = op.results[0].type
        if isinstance(t, Ty) and t.width == 1 and t.elem in (Elem.U32, Elem.I32):
            name = op.name
            if name == "builtin.read" and op.attrs.get("name") in _LANE_SYM:
                polys[r] = {(_LANE_SYM[op.attrs["name"]],): 1}
            elif name == "builtin.read" and op.attrs.get("name") == "local_invocation_index":
                polys[r] = unit_pos  # UNIT_POS = x + dx * (y + dy * z)
            elif name == "arith.constant":
                value = int(op.attrs["value"])
                polys[r] = {(): value} if value else {}
            elif name in ("arith.add", "arith.sub", "arith.mul"):
                a, b = (poly(o) for o in op.operands)
                if name == "arith.sub":
                    b = {k: -c for k, c in b.items()}
                polys[r] = _pmul(a, b) if name == "arith.mul" else _padd(a, b)
            elif name == "memory.load" and r in forwarded:
                src = forwarded[r]
                polys[r] = polys.get(src, {(f"v{src}",): 1})
            continue
        if op.name != "memory.index" or op.operands[0].id not in buffers or \
                op.operands[1].id in lane_ids:
            continue
        if not all(u.name == "memory.load" and where[id(u)] is where[id(op)]
                   for u in users.get(r, [])):
            continue
        p = poly(op.operands[1])
        coefs: dict[str, Poly] = {}
        offset: Poly = {}
        ok = True
        for mono, c in p.items():
            lanes = [x for x in mono if x in LANE_SYMBOLS]
            rest = tuple(x for x in mono if x not in LANE_SYMBOLS)
            if len(lanes) > 1:
                ok = False
                break
            if lanes:
                coefs[lanes[0]] = _padd(coefs.get(lanes[0], {}), {rest: c})
            else:
                offset = _padd(offset, {rest: c})
        if not ok or not coefs:
            continue
        symbols = sorted({int(x[1:]) for mono in p for x in mono if x.startswith("v")})

        def frozen_poly(q: Poly) -> tuple[tuple[tuple[str, ...], int], ...]:
            return tuple(sorted(q.items()))

        out[r] = AffineIndex(frozen_poly(offset),
                             tuple(sorted((s, frozen_poly(q)) for s, q in coefs.items())),
                             tuple(symbols))
    return out
