"""The Metal dialect: the MSL a student reads beside the seed's debug log.

Contract: `MslTarget().compile(kernel)` (registered as "msl" in `compiler/targets.py`) is the
C-family emitter (`emitter.py`) given `METAL`, and prints Metal Shading Language in the shape
CubeCL's Metal compiler prints in seed 000 — the same entry name as the WGSL target, so the two
views of one KernelId line up:

    #include <metal_stdlib>
    using namespace metal;
    typedef unsigned int uint32_t; ...               (the fixed-width typedef prelude)
    struct alignas(16) float_4 { float i_0; float i_1; float i_2; float i_3; };
    struct info_st {
        float scalars_f32[1];uint32_t static_meta[2];
    };
    [[max_total_threads_per_threadgroup(4)]] [[kernel]] void saxpy_f_f32_n_4_<hash8>(
        device float_4 const* const v1 [[buffer(0)]], device float_4 * const v2 [[buffer(1)]],
        constant info_st const* const v40, uint3 const threadgroups_per_grid_v41 [[...]], ...)

Why a target that never runs here: seed 000 teaches through this text; the wgpu runtime runs the
WGSL of the same IR. `tests/metal_shim/` lets `g++ -fsyntax-only` check every generated kernel for
syntax and C++ types — not Metal semantics (address spaces, SIMD-group rules), see `docs/msl.md`.

Traps:
- one deliberate word of difference from the seed: the info reference is
  `constant info_st const& info_vN = *vM;` (the seed omits `const`; Metal accepts both, and C++,
  where `constant` is an empty macro, only the `const` form);
- the info block's counts come from `compiler/info.py` (the layout the runtime packs), not from
  CubeCL's padding (the seed prints `scalars_f32[2]` for one scalar);
- integer edge cases the IR defines (x / 0, i32 MIN / -1, shifts by >= 32, i32 overflow) are
  plain C++ operators here, as CubeCL writes them: undefined on Metal, and so are accesses past
  an array's end (no bounds tests: the seed's lines stay the seed's). This text is for reading
  (`defined_integer_edges` and `bounds_tests` are off); the targets that run follow `OPS` to the
  letter;
- builtins are kernel parameters with attributes, declared only when read, in the seed's order.
"""

from __future__ import annotations

from cubelab.compiler.cpp.dialect import Dialect
from cubelab.compiler.cpp.emitter import CEmitter, CTarget, prelude
from cubelab.compiler.spelling import MATH_SAME
from cubelab.ir.core import KernelDefinition, Op
from cubelab.ir.types import Elem

_RELAXED = "memory_order_relaxed"
# IR builtin -> (Metal attribute, component or None for a scalar attribute)
_BUILTINS: dict[str, tuple[str, int | None]] = {
    "num_workgroups_x": ("threadgroups_per_grid", 0),
    "num_workgroups_y": ("threadgroups_per_grid", 1),
    "num_workgroups_z": ("threadgroups_per_grid", 2),
    "local_invocation_index": ("thread_index_in_threadgroup", None),
    "workgroup_id_x": ("threadgroup_position_in_grid", 0),
    "workgroup_id_y": ("threadgroup_position_in_grid", 1),
    "workgroup_id_z": ("threadgroup_position_in_grid", 2),
    "local_invocation_id_x": ("thread_position_in_threadgroup", 0),
    "local_invocation_id_y": ("thread_position_in_threadgroup", 1),
    "local_invocation_id_z": ("thread_position_in_threadgroup", 2),
    "subgroup_size": ("threads_per_simdgroup", None),
    "subgroup_invocation_id": ("thread_index_in_simdgroup", None),
}
# Parameter order of the builtins: the seed's three first, in the seed's order.
_BUILTIN_ORDER = (
    "threadgroups_per_grid", "thread_index_in_threadgroup", "threadgroup_position_in_grid",
    "thread_position_in_threadgroup", "threads_per_simdgroup", "thread_index_in_simdgroup",
)
_SCALAR_BUILTINS = {"thread_index_in_threadgroup", "threads_per_simdgroup",
                    "thread_index_in_simdgroup"}


class Metal(Dialect):
    name, label = "msl", "MSL"
    space = {"global": "device", "shared": "threadgroup", "function": "thread"}
    shared_decl = "threadgroup"
    math = {**{fn: f"{fn}({{}})" for fn in MATH_SAME}, "round": "rint({})",  # half to even
            **{fn: f"{fn}({{}})" for fn in ("trunc", "sinh", "cosh", "asin", "acos", "atan",
                                            "asinh", "acosh", "atanh", "reverse_bits")},
            "inverse_sqrt": "rsqrt({})", "count_ones": "popcount({})",
            "leading_zeros": "clz({})", "trailing_zeros": "ctz({})", "is_nan": "isnan({})",
            "is_inf": "isinf({})"}
    math_binary = {"pow": "pow({}, {})", "atan2": "atan2({}, {})"}
    plane_broadcast = "simd_shuffle({}, ushort({}))"
    shared_zero_comment = ("// Metal's threadgroup memory starts undefined; the IR's (as WGSL's) "
                           "starts at zero.")

    def float_bits(self, bits: int) -> str:
        return f"as_type<float>({bits}u)"

    def bitcast(self, source: Elem, target: Elem) -> str:
        return f"as_type<{self.scalar[target]}>({{}})"

    def builtin(self, e: CEmitter, name: str) -> str | None:
        if name not in _BUILTINS:
            return None
        attr, index = _BUILTINS[name]
        param = e.builtin(attr)
        return f"uint32_t({param})" if index is None else f"{param}[{index}]"

    def unit_index(self, e: CEmitter) -> str:
        return f"uint32_t({e.builtin('thread_index_in_threadgroup')})"

    def barrier(self, kind: str) -> str:
        flags = "mem_threadgroup" if kind == "cube" else "mem_device"
        return f"threadgroup_barrier(mem_flags::{flags});"

    def atomic_type(self, scalar: str) -> str:
        return f"atomic<{scalar}>"

    def atomic_load(self, address: str, ty: str) -> str:
        return f"atomic_load_explicit({address}, {_RELAXED})"

    def atomic_store(self, address: str, value: str) -> str:
        return f"atomic_store_explicit({address}, {value}, {_RELAXED})"

    def atomic_rmw(self, kind: str, address: str, value: str) -> str:
        fn = "atomic_exchange_explicit" if kind == "swap" else f"atomic_fetch_{kind}_explicit"
        return f"{fn}({address}, {value}, {_RELAXED})"

    def atomic_cas(self, e: CEmitter, op: Op, address: str, expected: str, new: str) -> None:
        # Metal writes the old value into `expected` when the exchange fails and leaves it
        # (equal to the old value) when it succeeds: either way it ends up holding the old value.
        old = e.fresh()
        e.line(f"{e.type(op.result.type)} {old} = {expected};")
        e.line(f"atomic_compare_exchange_weak_explicit({address}, &{old}, {new}, {_RELAXED}, "
               f"{_RELAXED});")
        e.let(op, old)

    def plane_reduce(self, kind: str) -> str:
        return "simd_product({})" if kind == "prod" else f"simd_{kind}({{}})"

    def plane_vote(self, kind: str) -> str:
        return f"simd_{kind}({{}})"

    def plane_scan(self, kind: str, inclusive: bool) -> str:
        return (f"simd_prefix_{'inclusive' if inclusive else 'exclusive'}_"
                f"{'sum' if kind == 'sum' else 'product'}({{}})")

    def plane_ballot(self, e: CEmitter, op: Op) -> None:
        # simd_ballot gives a simd_vote (64 bits, one per lane): split into the IR's vec4<u32>
        bits = e.fresh()
        e.line(f"uint64_t const {bits} = uint64_t(simd_ballot({e.value(op.operands[0])}));")
        e.components(op, [f"uint32_t({bits})", f"uint32_t({bits} >> 32)", "0u", "0u"])

    def plane_shuffle(self, e: CEmitter, kind: str) -> str:
        return f"simd_shuffle_{kind}({{}}, ushort({{}}))"

    def plane_elect(self, e: CEmitter) -> str:
        return "simd_is_first()"

    def head(self, e: CEmitter, kernel: KernelDefinition) -> list[str]:
        head = ["#include <metal_stdlib>", "using namespace metal;", *prelude(e, "long")]
        params = []
        for b in kernel.buffers:
            const = b.value.id in e.const_buffers
            params.append(f"{e.pointer_type('global', b.item, const)} {b.value.name} "
                          f"[[buffer({b.index})]]")
        params.append(f"constant info_st const* const {e.info_ptr}")
        for attr in sorted(e.builtins, key=_BUILTIN_ORDER.index):
            ty = "uint32_t" if attr in _SCALAR_BUILTINS else "uint3"
            params.append(f"{ty} const {e.builtins[attr]} [[{attr}]]")
        x, y, z = kernel.cube_dim
        head.append(f"[[max_total_threads_per_threadgroup({x * y * z})]] [[kernel]] void "
                    f"{kernel.entry}({', '.join(params)}) {{")
        head.append(f"constant uint32_t const* const {e.dyn_meta} = "
                    f"reinterpret_cast<constant uint32_t const*>({e.info_ptr} + 1);")
        head.append(f"constant info_st const& {e.info_ref} = *{e.info_ptr};")
        return head


METAL = Metal()


class MslTarget(CTarget):
    """The "msl" target: shown beside every compile; nothing here runs Metal."""

    dialect, lexer = METAL, "cpp"
