"""Passes that run between `define()` and codegen, and the manager that records them.

`CheckedIo` is the pass behind `launch` (ExecutionMode.Checked): every index op marked `checked`
gets its index clamped to `len - 1`, the documented intent of CubeCL's `checked_index`. A
zero-length view has no item to clamp to, so every access through a clamped pointer also runs
under `if len != 0` (reads give zero, writes are dropped): such a view is never touched.

Seed 000 found that in CubeCL 0.11.3 the pass never fires on global buffers: it matches index ops
whose base *is* a runtime array, while a global buffer's value is a *pointer to* a runtime array.
`CheckedIo(rule="cubecl-0.11.3")` keeps that matching rule and is the default (DESIGN §7), so
the seed's out-of-bounds rows come out as printed; `rule="fixed"` is the documented intent, the
named alternative a notebook switches to in order to show what clamping changes. The manager keeps a snapshot
of the IR text after every pass for the inspector's "Passes" view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from cubelab.errors import hinted
from cubelab.ir.analysis import max_value_id
from cubelab.ir.core import Block, KernelDefinition, Op, Value
from cubelab.ir.printer import print_kernel
from cubelab.ir.types import BOOL, U32, Pointer, RuntimeArray

CheckedIoRule = Literal["fixed", "cubecl-0.11.3"]

# The seed's rule is the default (DESIGN §7, "seed defaults"): a student who types seed 000's
# out-of-bounds experiment gets the seed's rows, and `launch` teaches "write your own guard" as
# 0.11.3 does. The clamp CubeCL intends is the named alternative,
# `client.set_compilation_options(checked_io="fixed")`, which the bounds chapter contrasts.
DEFAULT_CHECKED_IO: CheckedIoRule = "cubecl-0.11.3"


@runtime_checkable
class Pass(Protocol):
    """A compilation pass: `run` takes a `KernelDefinition` after `define()` (and the passes
    before it) and returns the definition the next pass — and then every target — reads: the
    same object changed in place, or a new one. `name` is what `inspect.passes` and the
    inspector's Passes tab call it. The built-in passes (`CheckedIo`, `LoopGuard`) have this
    shape, and so does a student's pass given to `client.set_compilation_options(
    extra_passes=[...])` (re-exported as `cubelab.compiler.Pass`; the IR a pass touches is
    documented in `docs/architecture.md`, "How to add a pass")."""

    name: str

    def run(self, definition: KernelDefinition) -> KernelDefinition: ...


class _Ids:
    """Fresh value ids for ops a pass inserts (continuing after the kernel's largest id)."""

    def __init__(self, kernel: KernelDefinition) -> None:
        self.next = max_value_id(kernel) + 1

    def value(self, ty) -> Value:  # type: ignore[no-untyped-def]
        v = Value(self.next, ty)
        self.next += 1
        return v


@dataclass
class CheckedIo:
    rule: CheckedIoRule = DEFAULT_CHECKED_IO
    name: str = "checked-io"
    rewritten: int = 0

    def matches(self, op: Op) -> bool:
        if op.name != "memory.index" or not op.attrs.get("checked"):
            return False
        base_ty = op.operands[0].type
        if self.rule == "cubecl-0.11.3":
            # 0.11.3: `is_runtime_array(base)` — a global buffer is Pointer(RuntimeArray), so no.
            return isinstance(base_ty, RuntimeArray)
        return isinstance(base_ty, Pointer) and isinstance(base_ty.pointee, RuntimeArray)

    # whether the last run rewrote anything (the manager then skips printing its "after")
    changed: bool = True

    def run(self, kernel: KernelDefinition) -> KernelDefinition:
        ids = _Ids(kernel)
        nonempty: dict[int, Value] = {}
        before = self.rewritten
        self._block(kernel.body, ids, nonempty)
        self.changed = self.rewritten != before
        if nonempty:
            declared: list[Op] = []
            self._guard_accesses(kernel.body, ids, nonempty, declared)
            kernel.body.ops[0:0] = declared
        return kernel

    def _block(self, block: Block, ids: _Ids, nonempty: dict[int, Value]) -> None:
        out: list[Op] = []
        for op in block.ops:
            for region in op.regions:
                self._block(region, ids, nonempty)
            if self.matches(op):
                base, index = op.operands
                length = ids.value(U32)
                one = ids.value(U32)
                last = ids.value(U32)
                clamped = ids.value(U32)
                zero = ids.value(U32)
                some = ids.value(BOOL)
                out.append(Op("buffer.len", [base], [length], {}, [], op.loc))
                out.append(Op("arith.constant", [], [one], {"value": 1}, [], op.loc))
                out.append(Op("arith.sub", [length, one], [last], {}, [], op.loc))
                out.append(Op("arith.min", [index, last], [clamped], {}, [], op.loc))
                out.append(Op("arith.constant", [], [zero], {"value": 0}, [], op.loc))
                out.append(Op("arith.cmp", [length, zero], [some], {"pred": "ne"}, [], op.loc))
                op.operands = [base, clamped]
                op.attrs = {**op.attrs, "checked": False, "clamped": True}
                nonempty[op.result.id] = some
                self.rewritten += 1
            out.append(op)
        block.ops[:] = out

    def _guard_accesses(self, block: Block, ids: _Ids, nonempty: dict[int, Value],
                        declared: list[Op]) -> None:
        """A zero-length view has no item `len - 1` to clamp to (`len - 1` wraps to 2^32 - 1):
        every access through a clamped pointer runs under `if len != 0`, so such a view is never
        touched — a read gives zero (the value of a fresh local), a write or atomic is dropped."""
        out: list[Op] = []
        for op in block.ops:
            for region in op.regions:
                self._guard_accesses(region, ids, nonempty, declared)
            some = nonempty.get(op.operands[0].id) if op.operands else None
            if some is None or op.name == "memory.index":
                out.append(op)
                continue
            if not op.results:
                out.append(Op("scf.if", [some], [], {}, [Block([op]), Block()], op.loc))
                continue
            (r,) = op.results
            slot = ids.value(Pointer(r.type, "function"))
            inner = ids.value(r.type)
            declared.append(Op("var.declare", [], [slot], {}, [], op.loc))
            op.results = [inner]
            store = Op("memory.store", [slot, inner], [], {}, [], op.loc)
            out.append(Op("scf.if", [some], [], {}, [Block([op, store]), Block()], op.loc))
            out.append(Op("memory.load", [slot], [r], {}, [], op.loc))
        block.ops[:] = out


# The loop budget of a checked launch (DESIGN §2, "no kernel is ever silently wrong"): at most
# this many loop iterations per unit, all loops of the kernel together. 2^28 (≈ 2.7 × 10^8) lets
# a long but finite loop (10^8 iterations) run as written; a runaway one ends after 2^28
# iterations instead of keeping the GPU busy for every later process. Measured on an H200
# (`benchmarks/loop_guard.py`): a serial 10^8-iteration loop takes 3.5 s guarded (2.8 s not), and
# a runaway over 132 × 256 units took 32 s to end under 2^30 — 8 s under this budget.
DEFAULT_LOOP_BUDGET = 1 << 28

# Status codes a guarded kernel writes (the largest wins; `guard` is the loop's index in
# `KernelDefinition.guarded_loops`): the budget ran out, or the driver ended the loop itself
# (lavapipe stops every loop after 65 535 iterations, silently).
GUARD_BUDGET = 2 << 24
GUARD_DRIVER = 1 << 24


@dataclass
class LoopGuard:
    """Marks every runtime loop (`scf.for`, `scf.while`) with a `guard` index and gives the
    kernel its loop budget; the targets then count iterations per unit and check how each loop
    ended (`compiler/wgsl.py` `op_scf_*`, the CPU runtime's loop steps).

    Contract: a guarded loop may end only through its condition; if the unit's budget runs out
    it stops every loop and the launch fails on its written buffers, naming the loop's line;
    if the *driver* ended it (no condition said so), the launch fails saying so. The trap it
    exists for: lavapipe silently stops every loop after 65 535 iterations, and a real GPU never
    stops an infinite one. Only checked launches (`launch`) are guarded, as CubeCL's checks are;
    `launch_unchecked` runs the loops as written."""

    budget: int = DEFAULT_LOOP_BUDGET
    name: str = "loop-guard"

    changed: bool = True  # whether the last run marked a loop (see CheckedIo.changed)

    def run(self, kernel: KernelDefinition) -> KernelDefinition:
        loops = [op for op in kernel.walk() if op.name in ("scf.for", "scf.while")]
        for i, op in enumerate(loops):
            op.attrs = {**op.attrs, "guard": i}
        kernel.guarded_loops = loops
        kernel.loop_budget = self.budget if loops else None
        self.changed = bool(loops)
        return kernel


# LoopUnroll's measure of what a copy of a loop body costs lavapipe to compile, in units of one
# plain op, measured on its LLVM (`benchmarks/long_loops.py`): a global or shared load or atomic
# ≈ 70 plain ops, a store whose index is tested (`bounds_tests`: a branch per copy) ≈ 270, an
# untested store ≈ 70, an `if` ≈ 8. The budget keeps one unrolled loop at ≈ 0.3 s of compile
# there; the factor is at most 256 for a `for` (65 535 × 256 ≈ 1.7 × 10^7 iterations per unit —
# an arithmetic body such as an LCG step gets all of it) and 16 for a `while`, whose copies each
# test the condition (a `while` compiles far slower per copy: an LCG step ×85 took ≈ 2 s).
UNROLL_BUDGET = 2048
UNROLL_MAX = 256
UNROLL_MAX_WHILE = 16
_COST_MEMORY, _COST_TESTED_STORE, _COST_BRANCH = 64, 256, 8
# A loop whose comptime bounds run it at most this many times is left alone.
UNROLL_SHORT = 4096
_UNIFORM_OPS = ("sync.", "plane.")  # a loop holding these stays as written (uniform control flow)


@dataclass
class LoopUnroll:
    """On a device whose driver ends loops by itself (`driver_loop_limit`: lavapipe stops every
    loop of a unit once all of them together ran 65 535 iterations), marks each runtime loop
    with `unroll = K`: the targets then run K iterations per trip of the loop (`compiler/
    wgsl.py`), so the driver counts one step where K ran, and a correct loop of up to
    `driver_loop_limit × K` iterations per unit runs to its end. The meaning of the program does
    not change: `unroll` is how to spell the loop, and a target may ignore it.

    Contract: K is chosen per loop from what its body costs to compile (`UNROLL_BUDGET`, the
    op costs above, `UNROLL_MAX`, `UNROLL_MAX_WHILE`); a loop holding a barrier or plane op
    keeps K = 1 (its copies would need uniform control flow), as does a loop whose comptime
    bounds run it at most `UNROLL_SHORT` times. The loop guard still counts every iteration and
    still says when the driver cut a loop — past the larger cap. The trap: the driver's count
    is per unit for all loops together, so nested loops share it; an outer loop whose body is
    already costly stays at K = 1 and counts one step per trip."""

    driver_loop_limit: int = 65535
    name: str = "loop-unroll"

    # whether the last run marked any loop (the manager then skips printing its "after")
    changed: bool = True

    def run(self, kernel: KernelDefinition) -> KernelDefinition:
        from cubelab.ir.analysis import bounds_tests

        self._tested = set(bounds_tests(kernel))
        self._marked = 0
        self._block(kernel.body, {})
        self.changed = self._marked > 0
        return kernel

    def _cost(self, op: Op) -> int:
        if op.name in ("memory.load", "memory.store", "sync.uniform_load") or \
                op.name.startswith("atomic."):
            ptr = op.operands[0]
            if getattr(ptr.type, "space", "function") == "function":
                return 1  # a local: a register once LLVM is done with it
            if op.name == "memory.store" and ptr.id in self._tested:
                return _COST_TESTED_STORE
            return _COST_MEMORY
        return _COST_BRANCH if op.name in ("scf.if", "scf.switch") else 1

    def _block(self, block: Block, consts: dict[int, int]) -> int:
        """Mark the loops in `block`; return what it costs (loops as unrolled)."""
        size = 0
        for op in block.ops:
            if op.name == "arith.constant" and isinstance(op.attrs.get("value"), int):
                consts[op.result.id] = int(op.attrs["value"])
            inner = sum(self._block(region, consts) for region in op.regions)
            if op.name in ("scf.for", "scf.while"):
                k = self._factor(op, inner, consts)
                if k > 1:
                    op.attrs = {**op.attrs, "unroll": k}
                    self._marked += 1
                inner *= k
            size += self._cost(op) + inner
        return size

    def _factor(self, op: Op, size: int, consts: dict[int, int]) -> int:
        if any(o.name.startswith(_UNIFORM_OPS) for region in op.regions for o in region.walk()):
            return 1
        if op.name == "scf.for" and all(v.id in consts for v in op.operands):
            start, end, step = (consts[v.id] for v in op.operands)
            if step > 0 and (end - start) // step <= UNROLL_SHORT:
                return 1
        top = UNROLL_MAX if op.name == "scf.for" else UNROLL_MAX_WHILE
        return min(top, UNROLL_BUDGET // max(size, 1))


def loop_guard_message(kernel: KernelDefinition, guard: int, driver: bool, budget: int | None,
                       device: str = "") -> str:
    """What a tripped loop guard says, on every runtime: the kernel, the loop's line with a
    caret, and what to do instead."""
    from cubelab.errors import caret_block

    loops = kernel.guarded_loops
    op = loops[guard] if 0 <= guard < len(loops) else None
    loc = op.loc if op is not None else None
    where, shown = "", ""
    if loc is not None:
        where = f" at {loc}"
        i = loc.line - kernel.first_line
        text = kernel.source_lines[i] if 0 <= i < len(kernel.source_lines) else None
        shown = caret_block(loc.file, loc.line, loc.col, text)
        shown = f"\n{shown}" if shown else ""
    if driver:
        k = int(op.attrs.get("unroll", 1)) if op is not None else 1
        steps = f" (unrolled x{k} here: {65535 * k} iterations)" if k > 1 else ""
        return (f"kernel `{kernel.name}`: the driver{f' ({device})' if device else ''} stopped "
                f"the loop{where} before its condition ended it, so the results would have been "
                "silently truncated (lavapipe ends a unit's loops after 65 535 steps in all"
                f"{steps}){shown}\n  hint: run it on the CPU runtime (Device.cpu()) or a real "
                "GPU, split the loop over more units or launches, or write it as a `for` over a "
                f"runtime range (cubelab unrolls those up to x{UNROLL_MAX}, a `while` up to "
                f"x{UNROLL_MAX_WHILE})")
    return (f"kernel `{kernel.name}`: the loop{where} ran more than {budget} iterations (the "
            f"loop budget of a checked launch, all loops of a unit together); it looks infinite"
            f"{shown}\n  hint: check its bounds and that its condition can become false; if it "
            "really needs more, raise the budget with "
            "client.set_compilation_options(loop_budget=N) (None turns the guard off)")


@dataclass
class PassRecord:
    name: str
    before: str
    after: str
    changed: bool


@dataclass
class PassManager:
    """Runs passes in order, recording each one's before/after IR for the inspector. Passes
    from index `checked_from` on are *extra* (a student's): each is run under guard — an
    exception, a result that is not a definition, or IR the verifier (`ir/verify.py`) refuses
    becomes a `PassError` naming the pass — so a broken pass is reported as that, never as a
    crash in a target's code generation."""

    passes: list[Pass] = field(default_factory=list)
    checked_from: int | None = None

    def apply(self, kernel: KernelDefinition, record: bool = False,
              before: str | None = None) -> tuple[KernelDefinition, list[PassRecord]]:
        """Run the passes in order: the definition after the last one (a pass may return a new
        one) and, with `record`, each one's IR text before and after it. `before`: the
        kernel's text as it comes in, when the caller printed it already. A pass's "after" is
        the next one's "before", so n passes print n + 1 times, not 2n (printing is most of
        what recording costs on a big unrolled kernel)."""
        records: list[PassRecord] = []
        text = before
        for i, p in enumerate(self.passes):
            if record and text is None:
                text = print_kernel(kernel)
            if self.checked_from is not None and i >= self.checked_from:
                kernel = _run_checked(p, kernel)
            else:
                kernel = p.run(kernel)
            if record:
                assert text is not None
                # a built-in pass says when it changed nothing: its "after" is its "before"
                # (an extra pass is never taken at its word: its "after" is printed)
                built_in = self.checked_from is None or i < self.checked_from
                unchanged = built_in and getattr(p, "changed", True) is False
                after = text if unchanged else print_kernel(kernel)
                records.append(PassRecord(p.name, text, after, text != after))
                text = after
        return kernel, records

    def run(self, kernel: KernelDefinition, record: bool = False,
            before: str | None = None) -> list[PassRecord]:
        """`apply` for passes that change `kernel` in place (the built-in ones): the records."""
        return self.apply(kernel, record, before)[1]


def _run_checked(p: Pass, kernel: KernelDefinition) -> KernelDefinition:
    from cubelab.errors import PassError
    from cubelab.ir.verify import verify

    name = getattr(p, "name", type(p).__name__)
    try:
        out = p.run(kernel)
    except Exception as exc:  # noqa: BLE001 - a student's pass: say whose error it is
        raise PassError(hinted(f"pass `{name}` raised {type(exc).__name__}: {exc} (while "
                               f"compiling kernel `{kernel.name}`)",
                               "the traceback's last frame is in your pass; "
                               "`cubelab.inspect.passes(...)` shows the IR it was given"
                               )) from exc
    if not isinstance(out, KernelDefinition):
        raise PassError(hinted(f"pass `{name}` returned {type(out).__name__} instead of the "
                               "kernel definition", "a pass's `run(definition)` returns the "
                               "definition (the same one, changed, or a new one)"))
    problems = verify(out)
    if problems:
        shown = "\n".join(f"  - {p}" for p in problems[:8])
        more = f"\n  ... and {len(problems) - 8} more" if len(problems) > 8 else ""
        raise PassError(f"pass `{name}` left kernel `{out.name}` with IR that is not "
                        f"well formed:\n{shown}{more}\n  hint: `cubelab.inspect.passes(...)` "
                        "shows the IR before it; every operand must be defined above its use "
                        "and types must agree (ir/verify.py)")
    return out
