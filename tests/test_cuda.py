"""The CUDA target: CUDA C++ in the shape CubeCL's CUDA dialect prints, from the same C-family
emitter as MSL, for every op and every kernel — accepted by a real C++ compiler against the CUDA
shim (`tests/cuda_shim/`), and by `nvcc` where this machine has it.

The shim checks syntax and C++ types, not CUDA semantics; running the source is the CUDA
runtime's (NVRTC's) job. A missing g++ is a failure, never a skip: the set-up installs it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import cubelab.inspect as ci
from cubelab.compiler.cpp.cuda import CUDA, CudaTarget
from cubelab.compiler.cpp.dialect import check_math_table
from cubelab.compiler.cpp.metal import METAL
from cubelab.compiler.targets import TARGETS
from cubelab.ir import CheckedIo, PassManager
from cubelab.ir.core import MATH_UNARY_FNS
from cubelab.ir.passes import LoopGuard
from cubelab.prelude import CubeDim, f32
from tests.fixtures.kernels import add, saxpy
from tests.test_msl import (aggregate_kernels, core_kernels, cxx, every_op_kernel,
                            runtime_test_kernels, zoo_kernels)

SHIM = Path(__file__).parent / "cuda_shim" / "cuda_shim.h"
CXX_FLAGS = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-variable",
             "-Wno-unused-but-set-variable", "-Werror", "-include", str(SHIM), "-x", "c++"]


def cuda_of(k: Any, guard: bool = True) -> str:
    """What a CUDA server would compile: define, then the checked passes (the loop guard too,
    so its counting is checked) for a checked instance."""
    d = k.define()
    checked = k.mode.name == "Checked"
    PassManager([CheckedIo("fixed"), *([LoopGuard()] if guard else [])] if checked else []).run(d)
    return CudaTarget().compile(d).source


def compile_under_shim(sources: dict[str, str], tmp: Path) -> None:
    files = []
    for i, (name, text) in enumerate(sources.items()):
        f = tmp / f"{i:03d}_{re.sub(r'[^A-Za-z0-9_]+', '_', name)}.cu"
        f.write_text(text)
        files.append(str(f))
    p = subprocess.run([cxx(), *CXX_FLAGS, *files], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def saxpy4() -> Any:
    return ci.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))


# -- the shape ----------------------------------------------------------------------------------
def test_cuda_is_a_registered_target_shown_beside_every_compile():
    assert TARGETS["cuda"].name == "cuda" and TARGETS["cuda"].shown_only
    assert "cuda" in ci.compiled(saxpy4()).sources


def test_saxpy_is_an_extern_c_global_entry_named_as_the_wgsl_entry():
    src = cuda_of(saxpy4())
    entry = ci.compiled(saxpy4()).wgsl.entry
    assert re.search(rf'^extern "C" __global__ void __launch_bounds__\(4\) {entry}\('
                     r"float_4 const\* __restrict__ const v\d+, float_4 \* const v\d+, "
                     r"info_st const info_v\d+\) \{$", src, re.M)
    assert "struct __align__(16) float_4 { float i_0; float i_1; float i_2; float i_3; };" in src
    assert "struct info_st {" in src and "#include" not in src
    assert "blockIdx.x" in src and "threadIdx.x" in src and "gridDim.x" in src


def test_every_op_uses_the_cuda_names_for_barriers_atomics_shared_memory_and_planes():
    src = CudaTarget().compile(every_op_kernel()).source
    for needle in ("__syncthreads();", "__shared__ float s", "__shared__ int32_t s",
                   "atomicAdd(", "atomicExch(", "atomicCAS(", "atomicMax(", "__shfl_xor_sync(",
                   "__shfl_sync(", "__ballot_sync(", "__all_sync(", "plane_reduce(",
                   "plane_scan(", "__float2int_rz(", "__float_as_uint(", "fminf(", "rintf(",
                   "// debug_print("):
        assert needle in src, needle
    assert "atomic<" not in src and "simd_" not in src and "threadgroup" not in src


def test_the_integer_edges_the_ir_defines_are_spelled_out_not_left_to_cpp():
    """This source runs: x / 0 == x and x % 0 == 0 (OPS), i32 arithmetic wraps through u32."""
    from tests.fixtures.cpu_kernels import i32_ops

    src = cuda_of(ci.default_instance(i32_ops, CubeDim.new_1d(32)))
    assert re.search(r"= \((v\d+) == 0 \|\| \((v\d+) == \(-2147483647 - 1\) && \1 == -1\) "
                     r"\? \2 : \2 / \1\);", src)
    assert re.search(r"= \((v\d+) == 0 \|\| \1 == -1 \? 0 : v\d+ % \1\);", src)
    assert re.search(r"= int32_t\(uint32_t\(v\d+\) [-+*] uint32_t\(v\d+\)\);", src)
    assert not METAL.defined_integer_edges  # the Metal text is for reading: CubeCL's operators


def test_a_guarded_kernel_takes_the_status_word_and_counts_iterations():
    from tests.fixtures.cpu_kernels import collatz

    k = ci.default_instance(collatz, CubeDim.new_1d(32))
    guarded, plain = cuda_of(k), cuda_of(k, guard=False)
    assert "uint32_t * const guard_status) {" in guarded and "guard_n += 1u;" in guarded
    assert "atomicMax(guard_status, " in guarded
    assert "guard_status" not in plain


def test_every_math_table_is_keyed_by_exactly_the_irs_math_functions():
    """One key per `MATH_UNARY_FNS` entry in every target and the CPU runtime: none missing,
    none unreachable (the tables once held 16 keys no kernel could reach)."""
    from cubelab.compiler import wgsl
    from cubelab.runtime.cpu.semantics import MATH

    for dialect in (METAL, CUDA):
        assert check_math_table(dialect) == [], dialect.name
        assert set(dialect.math) == set(MATH_UNARY_FNS), dialect.name
    assert set(wgsl._MATH) | set(wgsl._FLOAT_CLASS) == set(MATH_UNARY_FNS)
    assert set(MATH) == set(MATH_UNARY_FNS)


# -- every op, every kernel, through a real compiler -------------------------------------------
def test_every_core_and_zoo_kernel_and_every_op_compiles_under_the_cuda_shim(tmp_path):
    kernels = {**core_kernels(), **runtime_test_kernels(), **zoo_kernels(),
               **aggregate_kernels()}
    sources = {name: cuda_of(k) for name, k in kernels.items()}
    sources["every_op"] = CudaTarget().compile(every_op_kernel()).source
    for name, src in sources.items():
        assert "code generation failed" not in src, (name, src)
    compile_under_shim(sources, tmp_path)


def test_the_cuda_shim_rejects_a_store_through_a_read_only_buffer(tmp_path):
    src = cuda_of(ci.instance(add, f32, cube_dim=CubeDim.new_1d(8), comptime=(False,),
                              checked=False))
    x = re.search(r"float const\* __restrict__ const (v\d+), ", src).group(1)  # type: ignore[union-attr]
    store = re.search(r"float \* const (v\d+) = &(v\d+)\[", src)
    assert store
    bad = src.replace(f"float * const {store.group(1)} = &{store.group(2)}[",
                      f"float * const {store.group(1)} = &{x}[")
    with pytest.raises(AssertionError, match="const"):
        compile_under_shim({"bad": bad}, tmp_path)


def test_nvcc_accepts_the_every_op_kernel_where_this_machine_has_nvcc(tmp_path):
    """The real compiler, where present (CI does not depend on it: no nvcc, no check)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this machine; the shim test above still checks every kernel")
    f = tmp_path / "every_op.cu"
    f.write_text(CudaTarget().compile(every_op_kernel()).source)
    p = subprocess.run([nvcc, "-arch=sm_90", "--ptx", "-o", str(tmp_path / "every_op.ptx"),
                        str(f)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_msl_of_the_every_op_kernel_is_unchanged_byte_for_byte():
    """The Metal dialect prints what the old standalone MSL emitter printed, word for word
    (f32 literals follow the one rule of `compiler/spelling.py`; `docs/msl.md`). Regenerate
    `tests/fixtures/every_op.metal` only for a deliberate change of the MSL text."""
    from tests.test_msl import compile_msl

    golden = (Path(__file__).parent / "fixtures" / "every_op.metal").read_text()
    assert compile_msl(every_op_kernel()).source == golden


def test_the_info_block_goes_by_value_unless_tensor_metadata_follows_it():
    # by value, the kernel reads its scalars and lengths from the parameter space (no load);
    # a tensor's shape and strides follow the struct at a size known only at launch
    from tests.zoo.kernels import strided_copy_2d

    assert re.search(r"info_st const info_v\d+\) \{$", cuda_of(saxpy4()), re.M)
    src = cuda_of(ci.instance(strided_copy_2d, cube_dim=CubeDim.new_2d(4, 4)))
    assert re.search(r"info_st const\* __restrict__ const v\d+\) \{$", src, re.M)
    assert re.search(r"uint32_t const\* const dynamic_meta_v\d+ = ", src)
