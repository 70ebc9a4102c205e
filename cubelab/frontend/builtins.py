"""Positions and sizes a kernel can read (and, with subgroups, PLANE_DIM / UNIT_POS_PLANE). Each is computed from the primitive builtins
(`workgroup_id`, `num_workgroups`, `local_invocation_index`, `local_invocation_id`) and the
compile-time cube dim, with the seed's formulas:

    CUBE_POS     = CUBE_POS_Z * (CUBE_COUNT_X * CUBE_COUNT_Y) + CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X
    ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS            (CUBE_DIM = x * y * z, a constant)
    ABSOLUTE_POS_X = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X    (and _Y, _Z)
"""

from cubelab.frontend.values import Builtin

ABSOLUTE_POS = Builtin("ABSOLUTE_POS")
ABSOLUTE_POS_X = Builtin("ABSOLUTE_POS_X")
ABSOLUTE_POS_Y = Builtin("ABSOLUTE_POS_Y")
ABSOLUTE_POS_Z = Builtin("ABSOLUTE_POS_Z")
UNIT_POS = Builtin("UNIT_POS")
UNIT_POS_X = Builtin("UNIT_POS_X")
UNIT_POS_Y = Builtin("UNIT_POS_Y")
UNIT_POS_Z = Builtin("UNIT_POS_Z")
CUBE_POS = Builtin("CUBE_POS")
CUBE_POS_X = Builtin("CUBE_POS_X")
CUBE_POS_Y = Builtin("CUBE_POS_Y")
CUBE_POS_Z = Builtin("CUBE_POS_Z")
CUBE_DIM = Builtin("CUBE_DIM")
CUBE_DIM_X = Builtin("CUBE_DIM_X")
CUBE_DIM_Y = Builtin("CUBE_DIM_Y")
CUBE_DIM_Z = Builtin("CUBE_DIM_Z")
CUBE_COUNT = Builtin("CUBE_COUNT")
CUBE_COUNT_X = Builtin("CUBE_COUNT_X")
CUBE_COUNT_Y = Builtin("CUBE_COUNT_Y")
CUBE_COUNT_Z = Builtin("CUBE_COUNT_Z")
# Plane (subgroup) builtins: need the adapter's `subgroup` feature.
PLANE_DIM = Builtin("PLANE_DIM")  # units per plane (the subgroup size)
UNIT_POS_PLANE = Builtin("UNIT_POS_PLANE")  # this unit's lane in its plane

__all__ = [name for name in dir() if name.isupper()]
