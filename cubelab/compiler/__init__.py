"""IR → target source, and the one compile pipeline every consumer runs.

Contract: `compiler.pipeline.compile_definition` takes a `KernelDefinition` fresh from
`define()` through the passes (`select_passes`, the one rule for which passes run) to the
targets, after the device checks (`check_cube_dim`, `check_definition`, reading the limits from
the device's properties). The runtime server's compile and every inspector view call it, so what
the inspector previews is by construction what a launch compiles. `TARGETS` names every code
generator (`compiler/targets.py`: adding a target is one module and one line there).
`CompilationOptions` (checked at construction) and `options_key` are `compiler/options.py`'s;
`Pass` is the public pass protocol (`ir/passes.py`): a student's pass, given to
`client.set_compilation_options(extra_passes=[...])`, has the built-in passes' shape.

This layer imports only `cubelab.ir` and `cubelab.errors`: it never runs anything, and knows no
device beyond the properties handed to it.
"""

from cubelab.compiler.base import CodegenError, CompiledSource, Target
from cubelab.compiler.options import CompilationOptions, options_key, pass_identity
from cubelab.compiler.targets import TARGETS, shown_targets
from cubelab.ir.passes import Pass

__all__ = ["CodegenError", "CompilationOptions", "CompiledSource", "Pass", "TARGETS", "Target",
           "options_key", "pass_identity", "shown_targets"]
