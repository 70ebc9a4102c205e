"""The CPU runtime implements the whole IR vocabulary (a new op in OPS fails here until it does)."""

from cubelab.ir.core import OPS
from cubelab.runtime.cpu.steps import BUILDERS


def test_every_op_in_OPS_has_a_cpu_implementation():
    missing = sorted(set(OPS) - set(BUILDERS))
    assert not missing, f"ops in ir.core.OPS the CPU runtime cannot run: {missing}"
