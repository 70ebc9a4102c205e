"""The target registry: every code generator cubelab has, by name.

Adding a target is one module (a class with `name`, `shown_only`, `lexer` and
`compile(definition)`, see `compiler/base.py`'s `Target`) plus one line below; a C-family target
is one dialect module (`compiler/cpp/`: a `Dialect` subclass and its `Target`). Nothing else names
targets: the runtime runs the one its server was built for and renders every other target beside
it on each compile (the CompileFinished event's `extra_sources`, which the debug log and
the widgets read); the inspector, the CLI and the magics iterate this dict. A runtime that runs a
target of its own (the CPU runtime's IR text) keeps it in the runtime and does not list it here.
"""

from __future__ import annotations

from cubelab.compiler.base import Target
from cubelab.compiler.cpp.cuda import CudaTarget
from cubelab.compiler.cpp.metal import MslTarget
from cubelab.compiler.wgsl import WgslTarget

TARGETS: dict[str, Target] = {
    "wgsl": WgslTarget(),  # runs: wgpu validates (naga) and dispatches it
    "msl": MslTarget(),  # shown beside every compile; nothing here runs Metal
    "cuda": CudaTarget(),  # shown beside every compile; Device.cuda() runs it through NVRTC
}


def default_target() -> Target:
    """The target a preview without a device compiles as the one that runs: the first that is
    not shown-only (WGSL, which wgpu runs)."""
    return next(t for t in TARGETS.values() if not t.shown_only)


def shown_targets(running: str) -> list[Target]:
    """The targets rendered beside a compile whose runnable target is `running`: every other
    one (on the CPU runtime, whose target is its own IR, all of them), so each view has every
    target's text of what ran."""
    return [t for name, t in TARGETS.items() if name != running]
