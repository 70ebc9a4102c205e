"""`from cubelab.prelude import *` — everything a kernel file needs, named as in CubeCL."""

from cubelab.frontend.builtins import *  # noqa: F403
from cubelab.frontend.builtins import __all__ as _builtins_all
from cubelab.frontend.debug_print import debug_print
from cubelab.frontend.flow import unroll
from cubelab.frontend.aggregates import cube_type
from cubelab.frontend.kernel import cube
from cubelab.frontend.library import (
    intrinsic,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    count_ones,
    dot,
    exp_m1,
    find_first_set,
    hypot,
    inverse_sqrt,
    is_inf,
    is_nan,
    leading_zeros,
    magnitude,
    mul_hi,
    normalize,
    powi,
    recip,
    reverse_bits,
    rhypot,
    saturating_add,
    saturating_sub,
    sinh,
    to_degrees,
    to_radians,
    trailing_zeros,
    trunc,
    vector_sum,
    ceil,
    clamp,
    cos,
    erf,
    exp,
    floor,
    fma,
    log,
    plane_all,
    plane_any,
    plane_broadcast,
    plane_ballot,
    plane_elect,
    plane_exclusive_prod,
    plane_exclusive_sum,
    plane_inclusive_prod,
    plane_inclusive_sum,
    plane_prod,
    plane_shuffle,
    plane_shuffle_down,
    plane_shuffle_up,
    plane_shuffle_xor,
    plane_max,
    plane_min,
    plane_sum,
    select,
    sin,
    sqrt,
    sync_cube,
    sync_storage,
    workgroup_uniform_load,
    workgroup_uniform_load_atomic,
    device_properties,
    tan,
    tanh,
)
from cubelab.frontend.types import (
    Array,
    Atomic,
    Comptime,
    Define,
    Float,
    Int,
    Numeric,
    Size,
    Slice,
    SliceMut,
    SharedMemory,
    Tensor,
    TensorMut,
    Vector,
    bool_,
    f32,
    i32,
    u32,
)
from cubelab.runtime.device import Device
from cubelab.runtime.dry_run import dry_run, real_run
from cubelab.runtime.streams import stream
from cubelab.runtime.handle import BufferArg, ScalarArg, TensorArg
from cubelab.runtime.kernel_id import CubeDim, ExecutionMode
from cubelab.runtime.launch_args import CubeCount


def comptime(value):  # type: ignore[no-untyped-def]
    """Inside a kernel, `comptime(expr)` evaluates `expr` in Python during expansion (the value
    becomes a literal in the IR). Outside a kernel it is the identity."""
    return value


__all__ = [
    *_builtins_all, "intrinsic", "cube", "cube_type", "comptime", "debug_print", "unroll", "exp", "log", "sqrt", "sin",
    "cos", "tan", "tanh", "erf", "floor", "ceil", "clamp", "fma", "select", "sync_cube",
    "sync_storage", "workgroup_uniform_load", "workgroup_uniform_load_atomic", "device_properties", "plane_sum", "plane_min", "plane_max", "plane_all", "plane_any",
    "plane_broadcast", "plane_elect", "plane_prod", "plane_inclusive_sum",
    "plane_exclusive_sum", "plane_inclusive_prod", "plane_exclusive_prod", "plane_ballot",
    "plane_shuffle", "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "trunc", "inverse_sqrt", "recip", "exp_m1", "to_degrees", "to_radians", "is_nan",
    "is_inf", "atan2", "hypot", "rhypot", "powi", "count_ones", "reverse_bits",
    "leading_zeros", "trailing_zeros", "find_first_set", "saturating_add", "saturating_sub",
    "mul_hi", "vector_sum", "dot", "magnitude", "normalize", "Array", "Atomic", "SharedMemory", "Tensor",
    "TensorMut", "TensorArg", "Comptime", "Define", "Float", "Int", "Numeric", "Size",
    "Slice", "SliceMut", "Vector", "bool_", "f32", "i32", "u32", "Device", "BufferArg",
    "ScalarArg", "CubeCount", "CubeDim", "ExecutionMode", "dry_run", "real_run", "stream",
]
