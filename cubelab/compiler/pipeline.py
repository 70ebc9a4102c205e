"""The compile pipeline, written once: defined IR → passes → target(s), after the device checks.

Contract: `compile_definition(definition, mode, options, run=..., show=..., limits=...)` is the
one path from a `KernelDefinition` fresh from `define()` to generated source. The runtime
server's compile (`runtime/server.py`) and every inspector view (`inspect.compiled`, `ir`,
`passes`, `wgsl`, `msl`, the widgets' previews) call it, so what the inspector shows is by
construction what a launch compiles — `tests/test_inspect_matches_server.py` pins it byte for
byte for every core and zoo kernel. Its parts, each the one home of its rule:

- `select_passes(mode, options, limits)`: which passes run (CheckedIo, with the server's rule,
  and the loop guard for `ExecutionMode.Checked`; then the options' `extra_passes`, every mode,
  each checked by the IR verifier; LoopUnroll on a device whose driver caps loops); the options
  themselves, checked, are `compiler/options.py`'s;
- `check_cube_dim` / `check_definition`: the device limits a kernel must fit (units per cube,
  adapter features, shared memory), read from the properties the caller's device reports —
  the CPU runtime passes its own, not a default;
- the targets: `run` must succeed (its error is the compile's); each `show`n target that fails
  is recorded in `Compilation.failures` and rendered as a comment by `shown_sources()`.

`define()` itself stays with the caller: the server times it and turns a panicking expansion into
the seed's `ExpansionPanicked`; the inspector lets the error through. Nothing here runs a kernel.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterator, Protocol, Sequence

from cubelab.compiler.base import CompiledSource, Target, failure_comment
from cubelab.compiler.options import CompilationOptions
from cubelab.errors import FeatureError, ResourceError, hinted
from cubelab.ir.analysis import all_ops
from cubelab.ir.core import KernelDefinition, Loc
from cubelab.ir.passes import CheckedIo, LoopGuard, LoopUnroll, PassManager, PassRecord
from cubelab.ir.printer import print_kernel, print_kernel_mapped


class ExecutionMode(Enum):
    """`launch` compiles Checked (the CheckedIo pass runs), `launch_unchecked` Unchecked. Part
    of the KernelId (`runtime/kernel_id.py`), defined here because it selects the passes."""

    Checked = "Checked"
    Unchecked = "Unchecked"


def select_passes(mode: ExecutionMode, options: CompilationOptions,
                  limits: "Limits | None" = None) -> PassManager:
    """The passes a kernel compiled in `mode` goes through (the one pass-selection rule): for a
    checked launch CheckedIo, then the loop guard unless it is off; on a device whose driver
    ends loops by itself (`driver_loop_limit`: lavapipe), LoopUnroll, so a correct long loop
    runs to its end there; then, for every launch, the options' `extra_passes` in order —
    each checked by the IR verifier after it runs (a loop a student's pass keeps keeps its
    `unroll`)."""
    passes: list = []
    if mode is ExecutionMode.Checked:
        passes.append(CheckedIo(options.checked_io))
        if options.loop_budget is not None:
            passes.append(LoopGuard(options.loop_budget))
    cap = getattr(limits, "driver_loop_limit", None)
    if cap is not None:
        passes.append(LoopUnroll(cap))
    builtin = len(passes)
    passes.extend(options.extra_passes)
    return PassManager(passes, checked_from=builtin)


class Limits(Protocol):
    """What the checks read from a device's properties (`runtime.properties.DeviceProperties`)."""

    features: frozenset[str]
    max_units_per_cube: int
    max_cube_dim: tuple[int, int, int]
    max_shared_memory: int
    driver_loop_limit: int | None  # read with getattr: a Limits may predate it


def cube_dim_fits(cube_dim: tuple[int, int, int], limits: Limits) -> bool:
    """Whether a cube of this shape runs on the device: 1.. units per cube, and per axis."""
    units = cube_dim[0] * cube_dim[1] * cube_dim[2]
    return (min(cube_dim) >= 1 and units <= limits.max_units_per_cube
            and all(d <= m for d, m in zip(cube_dim, limits.max_cube_dim)))


def check_cube_dim(cube_dim: tuple[int, int, int], limits: Limits | None) -> None:
    """Refuse a cube the device cannot run (units per cube, per axis). Cheap: runs before
    `define()`. (The calling thread refuses it first, as a LaunchError, when a launch comes
    through the frontend: `runtime/kernel_launcher.py`.)"""
    if limits is None or cube_dim_fits(cube_dim, limits):
        return
    units = cube_dim[0] * cube_dim[1] * cube_dim[2]
    raise ResourceError(hinted(
        f"cube dim {cube_dim} has {units} units; the device allows at most "
        f"{limits.max_units_per_cube} units per cube and {limits.max_cube_dim} per axis",
        "use fewer units per cube and more cubes (CubeCount)"))


def shared_memory_bytes(definition: KernelDefinition) -> int:
    """Bytes of cube-shared memory the kernel declares, all declarations together."""
    total = 0
    for op in all_ops(definition):
        if op.name == "shared.declare":
            arr: Any = op.result.type.pointee  # type: ignore[union-attr]
            total += arr.length * arr.item.size
    return total


def check_definition(definition: KernelDefinition, limits: Limits | None,
                     device: str = "this device") -> None:
    """Refuse a kernel that needs an adapter feature the device lacks (plane ops need
    "subgroup"), or more shared memory than a cube has."""
    have = limits.features if limits is not None else frozenset()
    missing = sorted(set(definition.required_features) - set(have))
    if missing:
        raise FeatureError(hinted(
            f"kernel `{definition.name}` uses plane (subgroup) operations, which need the "
            f"adapter feature(s) {missing}; this device ({device}) lacks them",
            "rewrite the reduction with SharedMemory and sync_cube(), or run on an adapter "
            "with subgroups"))
    limit = getattr(limits, "max_shared_memory", None)
    if limit is None:
        return
    total = shared_memory_bytes(definition)
    if total > limit:
        raise ResourceError(hinted(
            f"kernel `{definition.name}` declares {total} bytes of shared memory; a cube on "
            f"this device has {limit}", "use smaller tiles"))


@dataclass
class Compilation:
    """One KernelDefinition through the pipeline. `definition` is the IR after the passes."""

    definition: KernelDefinition
    expanded_ir: str  # the IR text before any pass
    passes: list[PassRecord]
    sources: dict[str, CompiledSource]  # by target name: the run target and the shown ones
    failures: dict[str, BaseException] = field(default_factory=dict)  # shown targets that failed
    passes_s: float = 0.0
    codegen_s: float = 0.0

    @property
    def ir(self) -> str:
        """The IR text after the passes (what the targets read): the last pass's "after", or
        the expanded IR when no pass ran — printed once, not again."""
        return self.passes[-1].after if self.passes else self.expanded_ir

    def ir_mapped(self) -> tuple[str, dict[int, Loc]]:
        """The IR text after the passes and its line map (printed line -> kernel `Loc`)."""
        return print_kernel_mapped(self.definition)

    def shown_sources(self, run: str) -> dict[str, str]:
        """Every target's text except `run`'s, a failed one as a comment saying why."""
        out = {name: s.source for name, s in self.sources.items() if name != run}
        for name, exc in self.failures.items():
            out[name] = failure_comment(name, self.definition.entry, exc)
        return out


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cycle collector off while a kernel is built. Expansion and codegen allocate
    tens of thousands of small objects that all stay alive, so the collector's full passes
    walk an ever larger heap for nothing: 10-15 % of a big unrolled kernel's compile
    (`benchmarks/compile_time.py`). Nested use keeps the state it found."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_definition(definition: KernelDefinition, mode: ExecutionMode,
                       options: CompilationOptions | None = None, *, run: Target | None,
                       show: Sequence[Target] = (), limits: Limits | None = None,
                       device: str = "this device", check: bool = False,
                       record: bool = True) -> Compilation:
    """Check, run the passes (recording each one's before/after IR), generate `run`'s source
    (its error propagates) and each `show`n target's (its error is recorded, never raised).

    `check`: apply `check_definition` against `limits` (the server does; a preview without a
    device does not). `record=False` skips the IR texts (`expanded_ir`, the pass records):
    the server's choice when nobody listens for them — printing a big kernel three times is
    a third of its compile."""
    if check:
        check_definition(definition, limits, device)
    t0 = time.perf_counter()
    expanded_ir = print_kernel(definition) if record else ""
    definition, records = select_passes(mode, options or CompilationOptions(), limits).apply(
        definition, record=record, before=expanded_ir if record else None)
    t1 = time.perf_counter()
    sources: dict[str, CompiledSource] = {}
    if run is not None:
        sources[run.name] = run.compile(definition)
    failures: dict[str, BaseException] = {}
    for target in show:
        try:
            sources[target.name] = target.compile(definition)
        except Exception as exc:  # noqa: BLE001 - a shown target never fails the compile
            failures[target.name] = exc
    t2 = time.perf_counter()
    return Compilation(definition, expanded_ir, records, sources, failures, t1 - t0, t2 - t1)
