"""The CUDA dialect: CUDA C++ in the shape CubeCL's `cubecl-cpp` CUDA dialect prints.

Contract: `CudaTarget().compile(kernel)` (registered as "cuda" in `compiler/targets.py`) is the
C-family emitter (`emitter.py`) given `CUDA`. The source is written for NVRTC — no `#include`, so
no host header NVRTC lacks; everything it uses (`blockIdx`, `__syncthreads`, `atomicAdd`,
`__shfl_sync`, `sqrtf`, `__float2int_rz`) is built into NVRTC — and has one entry:

    typedef unsigned int uint32_t; ...               (the typedef prelude, as on Metal)
    struct __align__(16) float_4 { float i_0; float i_1; float i_2; float i_3; };
    struct info_st {
        float scalars_f32[1];uint32_t static_meta[2];
    };
    extern "C" __global__ void __launch_bounds__(4) saxpy_f_f32_n_4_<hash8>(
        float_4 const* __restrict__ const v1, float_4 * const v2,
        info_st const info_v41[, uint32_t * const guard_status])

What a runtime passes (the launch ABI): one device pointer per buffer argument, in binding order;
then the info block, the bytes `compiler/info.py`'s `InfoLayout.pack` makes (the same bytes wgpu
binds) — by value when the kernel has no tensors, else as a device pointer (`dynamic_meta`
follows the struct, so its size is known only at launch); then, when the kernel was compiled
with the loop guard (`KernelDefinition.loop_budget` is not None), a pointer to one u32 status word,
zero before the launch, read after it as WGSL's `guard_status` is (`ir/passes.py` GUARD_BUDGET).
`extern "C"` keeps the entry's name unmangled, so `cuModuleGetFunction(entry)` finds it. The grid
is the cube count, the block the cube dim.

Why the defined forms (`defined_integer_edges`, `loop_guard`, `bounds_tests`): this source runs,
and the runtimes never disagree — x / 0, i32 MIN / -1, i32 overflow, out-of-range float→int casts
and pow of a negative base are spelled as the IR defines them (OPS), where plain C++ would be
undefined or differ from the CPU runtime; an index that may be out of range (2^30 items and past
included) is tested before the access — a load gives 0, a store or atomic is dropped — where a
GPU would fault or touch a neighbour's memory (no robust access in CUDA).

Traps:
- plane ops work over the *active* units (`__activemask()`), as the IR says; the helpers below
  are emitted only into kernels that use them. A reduction over a full warp is a butterfly; over
  a partial one (a cube smaller than 32 units, a divergent branch) it visits every active lane
  in order, so no lane reads an inactive one. A shuffle is computed by every unit before the
  range test picks (a unit skipping `__shfl_*_sync` would break the others' exchange);
- `debug_print` is a comment, as on Metal: the CPU runtime prints (the compile's notice says so);
- lanes are numbered by the unit's linear index in its cube, as CUDA forms warps.
"""

from __future__ import annotations

from cubelab.compiler.cpp.dialect import Dialect
from cubelab.compiler.cpp.emitter import CEmitter, CTarget, prelude
from cubelab.compiler.spelling import MATH_SAME
from cubelab.ir.core import KernelDefinition, Op
from cubelab.ir.types import Elem

_AXES = ("x", "y", "z")
_BITCAST = {(Elem.F32, Elem.U32): "__float_as_uint({})", (Elem.F32, Elem.I32): "__float_as_int({})",
            (Elem.U32, Elem.F32): "__uint_as_float({})", (Elem.I32, Elem.F32): "__int_as_float({})"}
# The plane helpers: a kernel that uses a plane op gets these, once, after the structs.
_PLANE_HELPERS = """\
// plane (warp) operations over the active units, in lane order (the IR's plane.* ops)
__device__ __forceinline__ uint32_t plane_lane() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
}
struct plane_sum { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct plane_prod { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct plane_min { template <class T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
struct plane_max { template <class T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T, class F> __device__ T plane_reduce(T x, F f) {
    uint32_t const mask = __activemask();
    if (mask == 0xffffffffu) {
        for (int offset = 16; offset > 0; offset /= 2) { x = f(x, __shfl_xor_sync(mask, x, offset)); }
        return x;
    }
    int const first = __ffs(mask) - 1;
    T acc = __shfl_sync(mask, x, first);
    for (int lane = first + 1; lane < 32; ++lane) {
        T const y = __shfl_sync(mask, x, lane);
        if ((mask >> lane) & 1u) { acc = f(acc, y); }
    }
    return acc;
}
template <class T, class F> __device__ T plane_scan(T x, T acc, F f, bool inclusive) {
    uint32_t const mask = __activemask();
    uint32_t const me = plane_lane();
    for (uint32_t lane = 0; lane < 32u; ++lane) {
        T const y = __shfl_sync(mask, x, lane);
        if (((mask >> lane) & 1u) && (lane < me || (inclusive && lane == me))) { acc = f(acc, y); }
    }
    return acc;
}
template <class T> __device__ T plane_shuffle_xor(T x, uint32_t n) {
    T const got = __shfl_xor_sync(__activemask(), x, n);
    return (plane_lane() ^ n) < 32u ? got : x;
}
template <class T> __device__ T plane_shuffle_up(T x, uint32_t n) {
    T const got = __shfl_up_sync(__activemask(), x, n);
    return plane_lane() >= n ? got : x;
}
template <class T> __device__ T plane_shuffle_down(T x, uint32_t n) {
    T const got = __shfl_down_sync(__activemask(), x, n);
    return n < 32u - plane_lane() ? got : x;
}"""


class Cuda(Dialect):
    name, label = "cuda", "CUDA C++"
    align = "__align__({})"
    shared_decl = "__shared__"
    defined_integer_edges = True
    loop_guard = True
    bounds_tests = True
    float_rem, fma = "fmodf", "fmaf"
    math = {**{fn: f"{fn}f({{}})" for fn in MATH_SAME if fn != "abs"},
            **{fn: f"{fn}f({{}})" for fn in ("trunc", "sinh", "cosh", "asin", "acos", "atan",
                                             "asinh", "acosh", "atanh")},
            "abs": "fabsf({})", "round": "rintf({})",  # half to even
            "inverse_sqrt": "rsqrtf({})", "count_ones": "__popc({})",
            "reverse_bits": "__brev({})", "leading_zeros": "__clz({})",
            "trailing_zeros": "({0} == 0 ? 32 : __ffs({0}) - 1)", "is_nan": "isnan({})",
            "is_inf": "isinf({})"}
    plane_broadcast = "__shfl_sync(__activemask(), {}, {})"
    shared_zero_comment = ("// CUDA's __shared__ memory starts undefined; the IR's (as WGSL's) "
                           "starts at zero.")

    def __init__(self) -> None:
        nan = self.float_bits(0x7FC00000)
        # the IR's pow is NaN for a negative base (OPS: WGSL's exp2(y * log2(x))), C's is not
        self.math_binary = {"pow": f"({{0}} < 0.0f ? {nan} : powf({{0}}, {{1}}))",
                            "atan2": "atan2f({}, {})"}

    def float_bits(self, bits: int) -> str:
        return f"__uint_as_float({bits}u)"

    def cast(self, source: Elem, target: Elem) -> str:
        # CUDA's round-toward-zero conversions saturate and take NaN to 0: the IR's f32 -> int
        if source is Elem.F32 and target is Elem.I32:
            return "__float2int_rz({})"
        if source is Elem.F32 and target is Elem.U32:
            return "__float2uint_rz({})"
        return super().cast(source, target)

    def bitcast(self, source: Elem, target: Elem) -> str:
        return _BITCAST.get((source, target), f"{self.scalar[target]}({{}})")

    def min_max(self, kind: str, elem: Elem) -> str:
        return f"f{kind}f" if elem is Elem.F32 else kind

    def math_unary(self, fn: str, elem: Elem) -> str | None:
        if fn == "abs" and elem is not Elem.F32:
            return "abs({})" if elem is Elem.I32 else "{}"  # abs of a u32 is the value
        return self.math.get(fn)

    def builtin(self, e: CEmitter, name: str) -> str | None:
        axis = name[-1]
        if name.startswith("workgroup_id_"):
            return f"blockIdx.{axis}"
        if name.startswith("num_workgroups_"):
            return f"gridDim.{axis}"
        if name.startswith("local_invocation_id_"):
            return f"threadIdx.{axis}"
        if name == "local_invocation_index":
            return self.unit_index(e)
        if name == "subgroup_size":
            return "uint32_t(warpSize)"
        if name == "subgroup_invocation_id":
            return f"({self.unit_index(e)} & 31u)"
        return None

    def unit_index(self, e: CEmitter) -> str:
        x, y, z = e.kernel.cube_dim
        if y == z == 1:
            return "threadIdx.x"
        return f"(threadIdx.x + {x}u * (threadIdx.y + {y}u * threadIdx.z))"

    def barrier(self, kind: str) -> str:
        # __syncthreads() orders shared and global memory alike for the block
        return "__syncthreads();"

    def atomic_load(self, address: str, ty: str) -> str:
        return f"*(volatile {ty}*)({address})"

    def atomic_store(self, address: str, value: str) -> str:
        return f"atomicExch({address}, {value})"

    def atomic_rmw(self, kind: str, address: str, value: str) -> str:
        fn = "atomicExch" if kind == "swap" else f"atomic{kind.capitalize()}"
        return f"{fn}({address}, {value})"

    def atomic_cas(self, e: CEmitter, op: Op, address: str, expected: str, new: str) -> None:
        e.let(op, f"atomicCAS({address}, {expected}, {new})")

    def plane_reduce(self, kind: str) -> str:
        return f"plane_reduce({{}}, plane_{kind}())"

    def plane_vote(self, kind: str) -> str:
        return f"bool(__{kind}_sync(__activemask(), {{}}))"

    def plane_scan(self, kind: str, inclusive: bool) -> str:
        identity = "0" if kind == "sum" else "1"
        # the accumulator starts at the operation's identity, in the operand's type
        return (f"plane_scan({{0}}, decltype({{0}})({identity}), plane_{kind}(), "
                f"{'true' if inclusive else 'false'})")

    def plane_ballot(self, e: CEmitter, op: Op) -> None:
        # one 32-lane warp: the IR's vec4<u32> mask has only its first word
        mask = f"__ballot_sync(__activemask(), {e.value(op.operands[0])})"
        e.components(op, [mask, "0u", "0u", "0u"])

    def plane_shuffle(self, e: CEmitter, kind: str) -> str:
        return f"plane_shuffle_{kind}({{}}, {{}})"

    def plane_elect(self, e: CEmitter) -> str:
        return "plane_lane() == uint32_t(__ffs(__activemask()) - 1)"

    def head(self, e: CEmitter, kernel: KernelDefinition) -> list[str]:
        head = prelude(e, "long")
        if any(op.name.startswith("plane.") for op in kernel.walk()):
            head += _PLANE_HELPERS.splitlines()
        params = []
        for b in kernel.buffers:
            ty = e.type(b.item)
            params.append(f"{ty} const* __restrict__ const {b.value.name}"
                          if b.value.id in e.const_buffers else f"{ty} * const {b.value.name}")
        # The info block by value where it has a fixed size: the launch copies its bytes into
        # the parameter space, so the kernel reads scalars and lengths without a memory load
        # (measured on the H200: a 64 M saxpy 191.6 µs by value vs 194.1 µs through a pointer,
        # CuPy 187.3). Tensor metadata (`dynamic_meta`) follows the struct at a size known only
        # at launch, so a kernel with tensors takes a pointer. The runtime reads which from
        # this signature (runtime/cuda/server.py `_pointer_param`).
        by_value = not e.info.has_dynamic_meta
        params.append(f"info_st const {e.info_ref}" if by_value
                      else f"info_st const* __restrict__ const {e.info_ptr}")
        if e.guarded:
            params.append("uint32_t * const guard_status")
        x, y, z = kernel.cube_dim
        head.append(f'extern "C" __global__ void __launch_bounds__({x * y * z}) '
                    f"{kernel.entry}({', '.join(params)}) {{")
        if not by_value:
            head.append(f"uint32_t const* const {e.dyn_meta} = "
                        f"reinterpret_cast<uint32_t const*>({e.info_ptr} + 1);")
            head.append(f"info_st const& {e.info_ref} = *{e.info_ptr};")
        if e.guarded:
            head.append("uint32_t guard_n = 0u; // loop iterations this unit has run "
                        "(the loop guard)")
        return head

    def notices(self, kernel: KernelDefinition, e: CEmitter) -> tuple[str, ...]:
        if not e.dropped_prints:
            return ()
        known = sorted({n for n in e.dropped_prints if n is not None})
        where = f" (line {', '.join(map(str, known))})" if known else ""
        return (f"kernel `{kernel.name}`: debug_print{where} prints nothing in the CUDA "
                "target — the call is a comment there. Launch it on the CPU runtime "
                "(Device.cpu().client()) to see each unit's line.",)


CUDA = Cuda()


class CudaTarget(CTarget):
    """The "cuda" target: shown beside every compile (a CUDA runtime runs it through NVRTC)."""

    dialect, lexer = CUDA, "cuda"


__all__ = ["CUDA", "Cuda", "CudaTarget"]
