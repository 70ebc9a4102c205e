"""IR → target source, and the one compile pipeline every consumer runs.

Contract: `compiler.pipeline.compile_definition` takes a `KernelDefinition` fresh from
`define()` through the passes (`select_passes`, the one rule for which passes run) to the
targets, after the device checks (`check_cube_dim`, `check_definition`, reading the limits from
the device's properties). The runtime server's compile and every inspector view call it, so what
the inspector previews is by construction what a launch compiles. `TARGETS` names every code
generator (`compiler/targets.py`: adding a target is one module and one line there).

This layer imports only `cubelab.ir` and `cubelab.errors`: it never runs anything, and knows no
device beyond the properties handed to it.
"""

from cubelab.compiler.base import CodegenError, CompiledSource, Target
from cubelab.compiler.targets import TARGETS, shown_targets

__all__ = ["CodegenError", "CompiledSource", "TARGETS", "Target", "shown_targets"]
