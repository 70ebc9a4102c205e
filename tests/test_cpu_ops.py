"""The CPU runtime implements the whole IR vocabulary (a new op in OPS fails here until it does),
and reads what an op does to memory from the one IR analysis."""

from cubelab.ir.analysis import written_buffers
from cubelab.ir.core import OPS
from cubelab.runtime.cpu.plan import Plan
from cubelab.runtime.cpu.steps import BUILDERS
from tests.fixtures.kernel_instances import core_and_zoo_instances


def test_every_op_in_OPS_has_a_cpu_implementation():
    missing = sorted(set(OPS) - set(BUILDERS))
    assert not missing, f"ops in ir.core.OPS the CPU runtime cannot run: {missing}"


def test_the_cpu_plan_takes_its_written_set_from_the_one_ir_analysis():
    """Which buffers a kernel writes decides which loads stay views and which bound buffers may
    share memory; the plan must agree with what the server claims (no op list of its own)."""
    for name, k in core_and_zoo_instances():
        d = k.define()
        assert Plan(d).written == written_buffers(d), name
