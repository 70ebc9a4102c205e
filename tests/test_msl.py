"""The MSL target: the seed's shape, line for line where the seed shows it, and every kernel
accepted by a real C++ compiler against the Metal shim (`tests/metal_shim/`).

The shim checks syntax and C++ types, not Metal semantics (docs/msl.md). A missing compiler is
a failure, never a skip: the set-up script installs g++.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import cubelab.inspect as ci
from cubelab.compiler.cpp import emitter as emitter_mod
from cubelab.compiler.cpp.emitter import C_OPS
from cubelab.compiler.cpp.metal import METAL, MslTarget
from cubelab.compiler.pipeline import ExecutionMode, compile_definition
from cubelab.compiler.targets import TARGETS
from cubelab.ir import (
    BOOL,
    F32,
    I32,
    OPS,
    U32,
    BufferParam,
    CheckedIo,
    KernelDefinition,
    PassManager,
    Pointer,
    RuntimeArray,
    ScalarParam,
    Scope,
)
from cubelab.ir.core import MATH_BINARY_FNS, MATH_UNARY_FNS, Block
from cubelab.ir.types import Array, Atomic, Elem, Ty
from cubelab.prelude import CubeDim, f32
from tests.fixtures.kernels import add, saxpy, topology

SHIM = Path(__file__).parent / "metal_shim"
# -Werror=attributes makes a misspelt [[attribute]] an error: the shim defines the real ones as
# empty macros. Unused values are normal in generated code (dynamic_meta, extracted components).
CXX_FLAGS = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-variable",
             "-Wno-unused-but-set-variable", "-Werror", "-I", str(SHIM), "-x", "c++"]


# -- helpers ------------------------------------------------------------------------------------
def compile_msl(d: KernelDefinition) -> Any:
    """The "msl" target: the C-family emitter given the Metal dialect."""
    return MslTarget().compile(d)


def definition(k: Any, rule: str = "fixed") -> KernelDefinition:
    """What a server compiles: define, then the passes of the instance's execution mode."""
    d = k.define()
    PassManager([CheckedIo(rule)] if k.mode.name == "Checked" else []).run(d)  # type: ignore[arg-type]
    return d


def msl_of(k: Any, rule: str = "fixed") -> str:
    return compile_msl(definition(k, rule)).source


def saxpy4(checked: bool = True) -> Any:
    return ci.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4), checked=checked)


def add_k(relu: bool, checked: bool = True) -> Any:
    return ci.instance(add, f32, cube_dim=CubeDim.new_1d(8), comptime=(relu,), checked=checked)


def cxx() -> str:
    for name in (os.environ.get("CXX"), "g++", "clang++"):
        if name and shutil.which(name):
            return name
    pytest.fail("no C++ compiler (g++ or clang++) to check the generated MSL: run "
                "scripts/setup.sh, or apt-get install g++")


def compile_under_shim(sources: dict[str, str], tmp: Path, jobs: int = 2) -> None:
    """`g++ -fsyntax-only` every source, in `jobs` parallel invocations of many files each."""
    files = []
    for i, (name, text) in enumerate(sources.items()):
        f = tmp / f"{i:03d}_{re.sub(r'[^A-Za-z0-9_]+', '_', name)}.metal"
        f.write_text(text)
        files.append(f)
    compiler = cxx()
    chunks = [files[i::jobs] for i in range(jobs) if files[i::jobs]]
    procs = [subprocess.Popen([compiler, *CXX_FLAGS, *map(str, chunk)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for chunk in chunks]
    failures = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            failures.append(out)
    assert not failures, "\n".join(failures)


_NAME = re.compile(r"(?<![A-Za-z0-9])v(\d+)\b")


def assert_lines_in_order(expected: list[str], got: list[str], bind: dict[str, str],
                          ordered: bool = True) -> None:
    """Each expected line occurs in `got` (in order if `ordered`), up to the names of values:
    a name `vN` of the expected text stands for one generated name, the same one every time."""
    pos = 0
    for line in expected:
        names = _NAME.findall(line)
        pattern = re.compile(_NAME.sub(r"v(\\d+)", re.escape(line).replace(r"\ ", " ")))
        for j in range(pos if ordered else 0, len(got)):
            m = pattern.fullmatch(got[j])
            if not m:
                continue
            trial = dict(bind)
            ok = True
            for seed_name, ours in zip(names, m.groups()):
                if trial.setdefault(seed_name, ours) != ours:
                    ok = False
            if ok and len(set(trial.values())) == len(trial):
                bind.update(trial)
                pos = j + 1
                break
        else:
            pytest.fail(f"seed line not found{' in order' if ordered else ''}: {line!r}\n"
                        f"bindings so far: {bind}\ngenerated:\n" + "\n".join(got))


# The seed's saxpy MSL (seed 000, "看生成的 MSL"), verbatim but for the elided lines.
SEED_SAXPY_HEAD = """\
#include <metal_stdlib>
using namespace metal;
struct alignas(16) float_4 { float i_0; float i_1; float i_2; float i_3; };

struct info_st {
    float scalars_f32[2];uint32_t static_meta[2];
};
[[max_total_threads_per_threadgroup(64)]] [[kernel]] void saxpy_f_f32_n_4_daf77f4d(device float_4 const* const v2 [[buffer(0)]], device float_4 * const v6 [[buffer(1)]], constant info_st const* const v33, uint3 const threadgroups_per_grid_v166 [[threadgroups_per_grid]], uint32_t const thread_index_in_threadgroup_v167 [[thread_index_in_threadgroup]], uint3 const threadgroup_position_in_grid_v168 [[threadgroup_position_in_grid]]) {
constant uint32_t const* const dynamic_meta_v35 = reinterpret_cast<constant uint32_t const*>(v33 + 1);
constant info_st& info_v34 = *v33;"""
SEED_SAXPY_READS = """\
float const v36 = info_v34.scalars_f32[0];
uint32_t const v37 = info_v34.static_meta[0];
uint32_t const v169 = threadgroup_position_in_grid_v168[2];"""
SEED_SAXPY_BODY = """\
uint32_t const v162 = 4;
uint32_t const v85 = v82 * v162;
uint32_t const v87 = uint32_t(thread_index_in_threadgroup_v167);
uint32_t const v88 = v85 + v87;
bool const v12 = v88 < v37;
if(v12) {
device float_4 const* const v18 = &v2[v88];
float_4 const v19 = *v18;
float const v41 = v19.i_0;
float const v42 = v36 * v41;
float const v63 = v26.i_3;
float const v64 = v51 + v63;
float_4 const v65 = float_4{v55, v58, v61, v64};
*v25 = v65;
}
return;
}"""


def seed_as_cubelab_prints_it(text: str, entry: str) -> list[str]:
    """The four documented differences (docs/msl.md), applied to the seed's text."""
    text = text.replace("saxpy_f_f32_n_4_daf77f4d", entry)  # cubelab's own hash
    # cube_dim (4, 1, 1): cubelab prints the real units per cube; the seed's CubeCL printed 64
    text = text.replace("max_total_threads_per_threadgroup(64)", "max_total_threads_per_threadgroup(4)")
    # the shared info layout packs one f32 for one scalar; CubeCL padded the group to 2
    text = text.replace("float scalars_f32[2];", "float scalars_f32[1];")
    # `const` so that C++ (the shim) accepts what Metal accepts either way
    text = text.replace("constant info_st& ", "constant info_st const& ")
    return text.splitlines()


# -- the seed's shape ---------------------------------------------------------------------------
def test_saxpy_msl_has_the_seeds_lines_in_the_seeds_order():
    # CubeCL 0.11.3's CheckedIo never fired on global buffers, so that is the MSL the seed shows.
    src = msl_of(saxpy4(), rule="cubecl-0.11.3")
    got = src.splitlines()
    entry = saxpy4().define().entry
    bind: dict[str, str] = {}
    assert_lines_in_order(seed_as_cubelab_prints_it(SEED_SAXPY_HEAD, entry), got, bind)
    # the seed reads its scalar and x.len() up front; cubelab's IR reads x.len() at the `if`
    assert_lines_in_order(seed_as_cubelab_prints_it(SEED_SAXPY_READS, entry), got, bind,
                          ordered=False)
    assert_lines_in_order(seed_as_cubelab_prints_it(SEED_SAXPY_BODY, entry), got, bind)
    assert got[:2] == ["#include <metal_stdlib>", "using namespace metal;"]
    assert "typedef unsigned int uint32_t;" in got and "float4" not in src


# The seed's add (relu = false), identical for launch and launch_unchecked in CubeCL 0.11.3.
SEED_ADD_BODY = """\
device float const* const v17 = &v1[v60];
float const v18 = *v17;
device float const* const v23 = &v5[v60];
float const v24 = *v23;
float const v25 = v18 + v24;
device float * const v30 = &v9[v60];
*v30 = v25;"""


@pytest.mark.parametrize("checked", [False, True])
def test_add_msl_has_the_seeds_lines_for_launch_and_launch_unchecked(checked):
    src = msl_of(add_k(False, checked), rule="cubecl-0.11.3")
    assert_lines_in_order(SEED_ADD_BODY.splitlines(), src.splitlines(), {})
    assert re.search(r"^\[\[max_total_threads_per_threadgroup\(8\)\]\] \[\[kernel\]\] void "
                     r"add_f_f32_[0-9a-f]{8}\(", src, re.M)
    # with relu the seed's MSL gains `max(v25, v26)`: the sum against the literal 0
    relu = msl_of(add_k(True, checked), rule="cubecl-0.11.3").splitlines()
    bind: dict[str, str] = {}
    assert_lines_in_order(["float const v26 = 0.0f;"], relu, bind)  # the IR hoists literals
    assert_lines_in_order(["float const v25 = v18 + v24;", "float const v27 = max(v25, v26);"],
                          relu, bind)


def test_saxpy_entry_is_the_wgsl_entry_of_the_same_kernel_id():
    c = ci.compiled(saxpy4())
    assert c.wgsl.entry == compile_msl(definition(saxpy4())).entry
    assert f"void {c.wgsl.entry}(" in ci.msl(saxpy4())


def test_saxpy_vector_arithmetic_is_written_per_component_with_the_scalar_broadcast():
    got = msl_of(saxpy4()).splitlines()
    a = next(re.fullmatch(r"float const (v\d+) = info_v\d+\.scalars_f32\[0\];", ln)
             for ln in got if "scalars_f32[0]" in ln).group(1)  # type: ignore[union-attr]
    for i in range(4):
        assert any(re.fullmatch(rf"float const v\d+ = v\d+\.i_{i};", ln) for ln in got)
    muls = [ln for ln in got if re.fullmatch(rf"float const v\d+ = {a} \* v\d+;", ln)]
    adds = [ln for ln in got if re.fullmatch(r"float const v\d+ = v\d+ \+ v\d+;", ln)]
    assert len(muls) == 4 and len(adds) == 4
    # x load, y load, result; under the fixed rule each load is read through the local that its
    # `len != 0` guard fills, so each appears twice
    assert sum(1 for ln in got if ln.startswith("float_4 const ")) == 5


def test_add_with_relu_contains_max_and_without_relu_does_not():
    assert re.search(r"= max\(v\d+, v\d+\);", msl_of(add_k(True)))
    assert "max(" not in msl_of(add_k(False))


def _strip_clamps(src: str) -> str:
    """Remove the fixed CheckedIo's `min(index, len - 1)` lines and its `if (len != 0)` guard
    around each access (a read goes through a zero-initialised local), and index with the raw
    index."""
    lines = src.splitlines()
    defs = {m.group(1): m.group(2) for ln in lines
            if (m := re.fullmatch(r"(?:uint32_t|bool) const (v\d+) = (.*);", ln))}
    clamp = {}
    for name, expr in defs.items():
        m = re.fullmatch(r"min\((v\d+), (v\d+)\)", expr)
        if m and re.fullmatch(r"(v\d+) - (v\d+)", defs.get(m.group(2), "")):
            last, one = re.fullmatch(r"(v\d+) - (v\d+)", defs[m.group(2)]).groups()  # type: ignore[union-attr]
            assert defs[one] == "1" and ".static_meta[" in defs[last]
            clamp[name] = (m.group(1), {name, m.group(2), last, one})
    guards = {}
    for name, expr in defs.items():
        m = re.fullmatch(r"(v\d+) != (v\d+)", expr)
        if m and ".static_meta[" in defs.get(m.group(1), "") and defs.get(m.group(2)) == "0":
            guards[name] = {name, m.group(2)}
    drop = set().union(*(names for _, names in clamp.values()), *guards.values())
    out: list[str] = []
    slots: dict[str, str] = {}  # zero-initialised local -> the guarded read stored in it
    depth = 0  # inside a guard's `if`
    for ln in lines:
        m = re.fullmatch(r"(?:uint32_t|bool) const (v\d+) = .*;", ln)
        if m and m.group(1) in drop:
            continue
        if re.fullmatch(r"\w+ l\d+ = \{\};", ln):
            continue
        if (m := re.fullmatch(r"if\((v\d+)\) \{", ln)) and m.group(1) in guards:
            depth += 1
            continue
        if depth and ln == "}":
            depth -= 1
            continue
        if depth and (m := re.fullmatch(r"(l\d+) = (v\d+);", ln)):
            read = out.pop()
            slots[m.group(1)] = re.fullmatch(rf".* const {m.group(2)} = (.*);", read).group(1)  # type: ignore[union-attr]
            continue
        if (m := re.fullmatch(r"(.* const v\d+) = (l\d+);", ln)) and m.group(2) in slots:
            ln = f"{m.group(1)} = {slots[m.group(2)]};"
        for name, (raw, _) in clamp.items():
            ln = ln.replace(f"[{name}]", f"[{raw}]")
        out.append(ln)
    return "\n".join(out) + "\n"


def _canonical(src: str) -> str:
    """Rename values in order of first appearance and hide the entry's hash."""
    names: dict[str, str] = {}
    src = re.sub(r"(_f_f32)_[0-9a-f]{8}\(", r"\1_HASH(", src)
    return _NAME.sub(lambda m: "v" + names.setdefault(m.group(0), str(len(names))), src)


@pytest.mark.parametrize("relu", [False, True])
def test_checked_and_unchecked_add_differ_only_by_the_min_clamp_and_its_empty_view_guard(relu):
    checked, unchecked = msl_of(add_k(relu, True)), msl_of(add_k(relu, False))
    assert checked.count("= min(") == 3 and "min(" not in unchecked
    assert checked.count("if(") == 3 and "if(" not in unchecked  # one `len != 0` guard per access
    assert _canonical(_strip_clamps(checked)) == _canonical(unchecked)


def test_with_cubecl_0_11_3_checked_and_unchecked_add_are_the_same_but_for_the_hash():
    """The seed: 'apart from the entry's hash ... line for line the same, neither has a min'."""
    checked = msl_of(add_k(False, True), rule="cubecl-0.11.3")
    unchecked = msl_of(add_k(False, False))
    assert checked != unchecked and "min(" not in checked
    hide = re.compile(r"add_f_f32_[0-9a-f]{8}")
    assert hide.sub("ENTRY", checked) == hide.sub("ENTRY", unchecked)


def test_a_buffer_the_kernel_only_reads_is_device_const_and_a_written_one_is_not():
    src = msl_of(add_k(False))
    assert re.search(r"device float const\* const v\d+ \[\[buffer\(0\)\]\], "
                     r"device float const\* const v\d+ \[\[buffer\(1\)\]\], "
                     r"device float \* const v\d+ \[\[buffer\(2\)\]\]", src)


def test_only_the_builtins_a_kernel_reads_are_parameters():
    src = msl_of(ci.instance(topology, cube_dim=CubeDim.new_2d(2, 2)))
    assert "[[max_total_threads_per_threadgroup(4)]] [[kernel]]" in src
    for attr in ("threadgroups_per_grid", "thread_index_in_threadgroup",
                 "threadgroup_position_in_grid"):
        assert f"[[{attr}]]" in src
    assert "[[thread_position_in_grid]]" not in src


def test_float_literals_are_the_shortest_digits_that_read_back_as_the_same_f32():
    import struct

    msl_literal = METAL.literal
    assert msl_literal(0.1, Elem.F32) == "0.1f"
    assert msl_literal(0.32759109139442444, Elem.F32) == "0.3275911f"  # erf's A&S constant
    assert msl_literal(2.0, Elem.F32) == "2.0f"
    assert msl_literal(float("inf"), Elem.F32) == "as_type<float>(2139095040u)"
    for bits in (0x00000001, 0x3DCCCCCD, 0x7F7FFFFF, 0xFF7FFFFF, 0x80000000, 0x4B800001):
        f = struct.unpack("<f", struct.pack("<I", bits))[0]
        text = msl_literal(f, Elem.F32)
        assert struct.pack("<f", float(text[:-1])) == struct.pack("<I", bits), (bits, text)
    assert msl_literal(2**32 - 1, Elem.U32) == "4294967295u"
    assert msl_literal(-(2**31), Elem.I32) == "(-2147483647 - 1)"


# -- every op, every kernel, through a real compiler -------------------------------------------
def test_every_op_in_the_ir_vocabulary_has_an_msl_lowering():
    missing = sorted(set(OPS) - set(C_OPS))
    assert not missing, f"ops in ir.core.OPS with no C-family lowering: {missing}"
    for name in C_OPS:
        assert callable(getattr(emitter_mod.CEmitter, "op_" + name.replace(".", "_"), None)), name


def every_op_kernel() -> KernelDefinition:
    """One hand-built kernel that uses every op of OPS at least once, with vectors where an op
    takes them — so the shim checks each lowering, whatever the frontend exposes yet."""
    s = Scope(file="every_op.py", kernel_name="every_op")
    v4 = Ty(Elem.F32, 4)
    b4 = Ty(Elem.BOOL, 4)
    x = s.new_value(Pointer(RuntimeArray(v4), "global", False), "x")
    out = s.new_value(Pointer(RuntimeArray(v4), "global", True), "out")
    t = s.new_value(Pointer(RuntimeArray(F32), "global", False), "t")
    hist = s.new_value(Pointer(RuntimeArray(Atomic(Elem.U32)), "global", True), "hist")
    a = s.emit("info.scalar", [], F32, elem="f32", index=0)
    flag = s.emit("info.scalar", [], BOOL, elem="bool", index=0)
    names = ["workgroup_id_x", "workgroup_id_y", "workgroup_id_z", "num_workgroups_x",
             "num_workgroups_y", "num_workgroups_z", "local_invocation_index",
             "local_invocation_id_x", "local_invocation_id_y", "local_invocation_id_z",
             "subgroup_size", "subgroup_invocation_id"]
    bi = {n: s.emit("builtin.read", [], U32, name=n) for n in names}
    i = bi["local_invocation_index"]
    one = s.emit("arith.constant", [], U32, value=1)
    n = s.emit("buffer.len", [x], U32)
    p = s.emit("memory.index", [x, i], Pointer(v4, "global", False), checked=False)
    xv = s.emit("memory.load", [p], v4)
    av = s.emit("vector.splat", [a], v4)
    r = xv
    for name in ("arith.add", "arith.sub", "arith.mul", "arith.div", "arith.rem", "arith.min",
                 "arith.max"):
        r = s.emit(name, [r, av], v4)
    r = s.emit("arith.neg", [r], v4)
    for fn in MATH_UNARY_FNS:  # every math function, each on the kind of value it takes
        if fn in ("count_ones", "reverse_bits", "leading_zeros", "trailing_zeros"):
            iv = s.emit("arith.cast", [r], Ty(Elem.I32, 4))
            s.emit("math.unary", [iv], Ty(Elem.I32, 4), fn=fn)
            s.emit("math.unary", [s.emit("arith.cast", [a], U32)], U32, fn=fn)
        elif fn in ("is_nan", "is_inf"):
            s.emit("math.unary", [r], b4, fn=fn)
            s.emit("math.unary", [a], BOOL, fn=fn)
        else:
            r = s.emit("math.unary", [r], v4, fn=fn)
    for fn in MATH_BINARY_FNS:
        r = s.emit("math.binary", [r, av], v4, fn=fn)
    r = s.emit("math.fma", [r, av, xv], v4)
    c = s.emit("arith.cmp", [r, av], b4, pred="lt")
    c2 = s.emit("arith.cmp", [xv, av], b4, pred="ge")
    c = s.emit("arith.and", [c, c2], b4)
    c = s.emit("arith.or", [c, c2], b4)
    c = s.emit("arith.not", [c], b4)
    r = s.emit("arith.select", [c, r, xv], v4)
    r = s.emit("arith.select", [flag, r, xv], v4)
    e0 = s.emit("vector.extract", [s.emit("vector.insert", [r, a], v4, index=2)], F32, index=2)
    ii = s.emit("arith.cast", [e0], I32)
    ii = s.emit("math.unary", [ii], I32, fn="abs")
    u = s.emit("arith.cast", [ii], U32)
    for name in ("arith.bitand", "arith.bitor", "arith.bitxor", "arith.shl", "arith.shr"):
        u = s.emit(name, [u, one], U32)
    u = s.emit("arith.bitnot", [u], U32)
    rank = s.emit("tensor.rank", [t], U32)
    dim = s.emit("tensor.shape", [t, s.emit("arith.constant", [], U32, value=0)], U32)
    stride = s.emit("tensor.stride", [t, rank], U32)
    u = s.emit("arith.add", [u, s.emit("arith.mul", [dim, stride], U32)], U32)
    u = s.emit("arith.add", [u, s.emit("tensor.len", [t], U32)], U32)
    local = s.declare_var(Array(F32, 4), "acc")
    lp = s.emit("memory.index", [local, one], Pointer(F32, "function"))
    s.register("memory.store", [lp, e0])
    scalar_var = s.declare_var(v4, "vacc")
    s.register("memory.store", [scalar_var, r])
    sh = s.emit("shared.declare", [], Pointer(Array(F32, 16), "shared"), name="tile")
    shp = s.emit("memory.index", [sh, i], Pointer(F32, "shared"))
    s.register("memory.store", [shp, s.emit("memory.load", [lp], F32)])
    s.register("sync.cube", [])
    s.emit("sync.uniform_load", [shp], F32)
    s.register("debug.print", [a], None, format="a = {}", args=(None,))
    s.register("sync.storage", [])
    hp = s.emit("memory.index", [hist, u], Pointer(Atomic(Elem.U32), "global"))
    old = s.emit("atomic.load", [hp], U32)
    s.register("atomic.store", [hp, old])
    for kind in ("add", "sub", "min", "max", "and", "or", "xor", "swap"):
        old = s.emit("atomic.rmw", [hp, one], U32, kind=kind)
    old = s.emit("atomic.cas", [hp, old, one], U32)
    shared_hist = s.emit("shared.declare", [], Pointer(Array(Atomic(Elem.I32), 8), "shared"),
                         name="counts")
    shh = s.emit("memory.index", [shared_hist, one], Pointer(Atomic(Elem.I32), "shared"))
    s.emit("atomic.rmw", [shh, ii], I32, kind="max")
    red = s.emit("plane.reduce", [e0], F32, kind="sum")
    s.emit("plane.reduce", [r], v4, kind="max")
    s.emit("plane.vote", [flag], BOOL, kind="all")
    s.emit("plane.broadcast", [red, bi["subgroup_invocation_id"]], F32)
    elect = s.emit("plane.elect", [], BOOL)
    s.emit("plane.reduce", [e0], F32, kind="prod")
    for inclusive in (True, False):
        s.emit("plane.scan", [red], F32, kind="sum", inclusive=inclusive)
        s.emit("plane.scan", [r], v4, kind="prod", inclusive=inclusive)
    s.emit("plane.ballot", [flag], Ty(Elem.U32, 4))
    for kind in ("xor", "up", "down"):
        s.emit("plane.shuffle", [r, one], v4, kind=kind)
    # every attribute value and operand type each op takes, so every spelling is checked, not
    # one per op (naga for WGSL, g++ against the shim for MSL)
    u4 = s.emit("arith.cast", [r], Ty(Elem.U32, 4))
    i4 = s.emit("arith.cast", [r], Ty(Elem.I32, 4))
    i_one = s.emit("arith.cast", [one], I32)
    u4_x = s.emit("arith.cast", [xv], Ty(Elem.U32, 4))
    i4_x = s.emit("arith.cast", [xv], Ty(Elem.I32, 4))
    for pred in ("lt", "le", "gt", "ge", "eq", "ne"):
        for lhs, rhs, ty in ((xv, av, b4), (u, one, BOOL), (ii, i_one, BOOL), (u4, u4_x, b4),
                             (i4, i4_x, b4), (e0, a, BOOL)):
            s.emit("arith.cmp", [lhs, rhs], ty, pred=pred)
    scalars = {F32: e0, I32: ii, U32: u, BOOL: flag}
    for src, val in scalars.items():
        for dst in scalars:
            if dst != src:
                s.emit("arith.cast", [val], dst)
    for src in (r, u4, i4, c):
        for elem in (Elem.F32, Elem.I32, Elem.U32, Elem.BOOL):
            if src.type.elem is not elem:
                s.emit("arith.cast", [src], Ty(elem, 4))
    for fn in ("abs", "count_ones", "reverse_bits", "leading_zeros", "trailing_zeros"):
        s.emit("math.unary", [i4], Ty(Elem.I32, 4), fn=fn)
        s.emit("math.unary", [ii], I32, fn=fn)
        if fn != "abs":
            s.emit("math.unary", [u4], Ty(Elem.U32, 4), fn=fn)
    for kind in ("sum", "prod", "min", "max"):
        for val in (e0, ii, u, r, u4, i4):
            s.emit("plane.reduce", [val], val.type, kind=kind)
    for kind in ("all", "any"):
        s.emit("plane.vote", [flag], BOOL, kind=kind)
    for val in (e0, ii, u, r, u4, i4):
        s.emit("plane.broadcast", [val, one], val.type)
        for inclusive in (True, False):
            for kind in ("sum", "prod"):
                s.emit("plane.scan", [val], val.type, kind=kind, inclusive=inclusive)
        for kind in ("xor", "up", "down"):
            s.emit("plane.shuffle", [val, one], val.type, kind=kind)
    s.emit("arith.bitcast", [e0], U32)
    s.emit("arith.bitcast", [u4], v4)
    s.emit("arith.bitcast", [i4], Ty(Elem.U32, 4))
    s.emit("arith.bitcast", [u], I32)
    s.emit("vector.extract_at", [r, u], F32)
    s.emit("vector.extract_at", [u4, one], U32)
    s.emit("vector.insert_at", [r, u, e0], v4)
    s.emit("vector.insert_at", [u4, one, u], Ty(Elem.U32, 4))
    for kind in ("add", "sub", "min", "max", "and", "or", "xor", "swap"):
        s.emit("atomic.rmw", [shh, ii], I32, kind=kind)
    s.emit("atomic.cas", [shh, ii, ii], I32)
    s.register("debug.print", [e0, r], format="e0 = {}, r = {}, n = {}\n", args=[None, None, 3])
    # if / else
    op = s.register("scf.if", [elect])
    then_b, else_b = Block(), Block()
    op.regions = [then_b, else_b]
    with s.child(then_b):
        q = s.emit("memory.index", [out, i], Pointer(v4, "global", True), checked=False)
        s.register("memory.store", [q, r])  # r exists only as components: built here
    with s.child(else_b):
        q = s.emit("memory.index", [out, n], Pointer(v4, "global", True), checked=False)
        s.register("memory.store", [q, s.emit("memory.load", [scalar_var], v4)])
    # switch: two cases (one of two values) and a default
    op = s.register("scf.switch", [n], cases=((1, 2), (7,)))
    op.regions = [Block(), Block(), Block()]
    with s.child(op.regions[1]):
        q = s.emit("memory.index", [out, n], Pointer(v4, "global", True), checked=False)
        s.register("memory.store", [q, r])
    # for
    zero = s.emit("arith.constant", [], U32, value=0)
    op = s.register("scf.for", [zero, n, one])
    body = Block(args=[s.new_value(U32, "k")])
    op.regions = [body]
    with s.child(body):
        s.emit("arith.add", [body.args[0], u], U32)
    # while with its condition region
    op = s.register("scf.while", [])
    cond_b, loop_b = Block(), Block()
    op.regions = [cond_b, loop_b]
    with s.child(cond_b):
        go = s.emit("arith.cmp", [old, n], BOOL, pred="lt")
        s.register("scf.condition", [go])
    with s.child(loop_b):
        s.emit("arith.cast", [go], F32)
    return KernelDefinition(
        "every_op", "every_op_0badc0de", (16, 1, 1),
        [BufferParam("x", 0, v4, False, x), BufferParam("out", 1, v4, True, out),
         BufferParam("t", 2, F32, False, t, tensor=True),
         BufferParam("hist", 3, Atomic(Elem.U32), True, hist)],
        [ScalarParam("a", "f32", 0), ScalarParam("flag", "bool", 0)], s.root)


def test_the_every_op_kernel_really_uses_every_op():
    used = {op.name for op in every_op_kernel().walk()}
    assert set(OPS) <= used, sorted(set(OPS) - used)


def core_kernels() -> dict[str, Any]:
    ks: dict[str, Any] = {}
    for width in (1, 2, 4):
        for checked in (True, False):
            ks[f"saxpy<f32,{width}> checked={checked}"] = ci.instance(
                saxpy, f32, sizes=(width,), cube_dim=CubeDim.new_1d(4), checked=checked)
    for relu in (False, True):
        for checked in (True, False):
            ks[f"add relu={relu} checked={checked}"] = add_k(relu, checked)
    ks["topology"] = ci.instance(topology, cube_dim=CubeDim.new_2d(2, 2))
    return ks


def runtime_test_kernels() -> dict[str, Any]:
    """Every kernel of the runtime tests' kernel modules that expands (a kernel written to fail
    expansion, like seed 001's `bad_widths`, has no IR and so no MSL), at default arguments."""
    from tests.fixtures import cpu_kernels
    from tests.fixtures import seed001_kernels
    from cubelab.frontend.kernel import CubeFunction

    ks: dict[str, Any] = {}
    for module in (seed001_kernels, cpu_kernels):
        for name, fn in vars(module).items():
            if not isinstance(fn, CubeFunction) or not fn.is_kernel:
                continue
            k = ci.default_instance(fn, CubeDim.new_1d(32))
            try:
                k.define()
            except Exception:  # noqa: BLE001 - written to fail expansion: nothing to compile
                continue
            ks[f"{module.__name__}.{name}"] = k
    return ks


def aggregate_kernels() -> dict[str, Any]:
    """Kernels with @cube_type structs and enums (their fields are plain values in the IR)."""
    from tests.fixtures import aggregate_kernels

    return {f"aggregates {name}": k for name, k in aggregate_kernels.instances().items()}


def zoo_kernels() -> dict[str, Any]:
    """tests/zoo's ZOO, a list of (name, KernelInstance), once it exists."""
    try:
        from tests.zoo import ZOO  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        if exc.name != "zoo":
            raise
        return {}
    return {f"zoo {name}": k for name, k in ZOO}


def test_every_core_and_zoo_kernel_and_every_op_compiles_under_the_metal_shim(tmp_path):
    kernels = {**core_kernels(), **runtime_test_kernels(), **zoo_kernels(),
               **aggregate_kernels()}
    assert len(runtime_test_kernels()) >= 15
    sources = {name: msl_of(k) for name, k in kernels.items()}
    sources["every_op"] = compile_msl(every_op_kernel()).source
    sources["saxpy cubecl-0.11.3"] = msl_of(saxpy4(), rule="cubecl-0.11.3")
    for name, src in sources.items():
        assert not src.startswith("// MSL code generation failed"), (name, src)
    compile_under_shim(sources, tmp_path)


def test_msl_and_wgsl_of_every_kernel_share_the_entry_and_read_the_same_info_fields():
    """The two views line up: same entry name, same scalar and metadata slots of info_st."""
    from cubelab.compiler.wgsl import compile_wgsl

    fields = re.compile(r"info(?:_v\d+)?\.(scalars_\w+|static_meta)\[(\d+)\]")
    for name, k in {**core_kernels(), **runtime_test_kernels(), **zoo_kernels(),
                    **aggregate_kernels()}.items():
        d = definition(k)
        m = compile_msl(d)
        w = compile_wgsl(d)
        assert m.entry == w.entry == d.entry, name
        # the WGSL's bounds tests (`v3 < info.static_meta[1]`, docs/language.md) also read
        # lengths; the MSL, in the seed's shape, has none (`Dialect.bounds_tests`)
        tests = re.compile(r"v\d+ < info\.static_meta\[\d+\]")
        assert set(fields.findall(m.source)) == set(fields.findall(tests.sub("", w.source))), name


def test_the_shim_rejects_a_store_through_a_read_only_buffer(tmp_path):
    """The shim is a real check: flip the store in `add` onto the const input `x`."""
    src = msl_of(add_k(False, False))
    x = re.search(r"device float const\* const (v\d+) \[\[buffer\(0\)\]\]", src).group(1)  # type: ignore[union-attr]
    store = re.search(r"device float \* const (v\d+) = &(v\d+)\[", src)
    assert store
    bad = src.replace(f"device float * const {store.group(1)} = &{store.group(2)}[",
                      f"device float * const {store.group(1)} = &{x}[")
    with pytest.raises(AssertionError, match="const"):
        compile_under_shim({"bad": bad}, tmp_path, jobs=1)


def test_the_shim_rejects_an_attribute_metal_does_not_have(tmp_path):
    bad = msl_of(add_k(False)).replace("[[kernel]]", "[[kernal]]")
    with pytest.raises(AssertionError, match="kernal"):
        compile_under_shim({"bad": bad}, tmp_path, jobs=1)


def test_shared_memory_is_declared_at_kernel_scope_and_zeroed_before_use():
    src = compile_msl(every_op_kernel()).source
    lines = src.splitlines()
    decl = lines.index(next(ln for ln in lines if ln.startswith("threadgroup float ")))
    barrier = lines.index("threadgroup_barrier(mem_flags::mem_threadgroup);")
    assert decl < barrier
    assert re.search(r"threadgroup atomic<int32_t> s\d+\[8\];", src)
    assert re.search(r"atomic_store_explicit\(&s\d+\[v\d+\], int32_t\(0\), memory_order_relaxed\);",
                     src)


def test_atomics_barriers_and_plane_ops_use_the_metal_names():
    src = compile_msl(every_op_kernel()).source
    for needle in ("atomic_fetch_add_explicit(", "atomic_exchange_explicit(",
                   "atomic_compare_exchange_weak_explicit(", "atomic_load_explicit(",
                   "threadgroup_barrier(mem_flags::mem_device);", "simd_sum(", "simd_max(",
                   "simd_all(", "simd_shuffle(", "simd_is_first()", "[[threads_per_simdgroup]]",
                   "[[thread_index_in_simdgroup]]", "device atomic<uint32_t> * const",
                   "while(true) {", "{ break; }",
                   '// debug_print("e0 = {}, r = {}, n = {}\\n", v'):
        assert needle in src, needle


def test_tensor_metadata_is_read_from_the_dynamic_metadata_after_info_st():
    src = compile_msl(every_op_kernel()).source
    assert "dynamic_meta" not in src.split("struct info_st {")[1].split("};")[0]
    assert re.search(r"= dynamic_meta_v\d+\[info_v\d+\.static_meta\[5\] \+ v\d+\];", src)
    assert re.search(r"= info_v\d+\.static_meta\[4\];", src)


def test_the_line_map_points_generated_lines_back_at_the_kernel_lines_wgsl_names():
    d = definition(saxpy4())
    m, w = compile_msl(d), ci.compiled(saxpy4()).wgsl

    def loc_of(src: Any, starts: str, holds: str = "") -> Any:
        n = next(i for i, ln in enumerate(src.source.splitlines(), 1)
                 if ln.strip().startswith(starts) and holds in ln)
        return src.loc_of_line(n)

    assert loc_of(m, "if(") is not None
    assert loc_of(m, "if(") == loc_of(w, "if ")
    # the WGSL store runs under its bounds test: `if v16 < info.static_meta[1] { (*v26) = v25; }`
    assert loc_of(m, "*v") == loc_of(w, "if v", "{ (*v")


# -- beside WGSL in every view ----------------------------------------------------------------
def test_inspect_msl_and_compiled_carry_the_msl():
    text = ci.msl(saxpy4())
    assert "struct alignas(16) float_4" in text
    assert ci.compiled(saxpy4()).msl == text
    assert ci.msl(add_k(False), checked_io="fixed") != ci.msl(add_k(False))


def test_an_msl_codegen_error_becomes_a_comment_not_an_exception(monkeypatch):
    def boom(kernel: KernelDefinition) -> Any:
        raise RuntimeError("no Metal for you\nsecond line")

    monkeypatch.setattr(MslTarget, "compile", lambda self, k: boom(k))
    c = compile_definition(definition(saxpy4()), ExecutionMode.Unchecked, run=None,
                           show=[TARGETS["msl"]])
    text = c.shown_sources("wgsl")["msl"]
    assert text.startswith("// MSL code generation failed for `saxpy_f_f32_n_4_")
    assert "RuntimeError: no Metal for you" in text and "second line" not in text


def test_a_launch_publishes_the_msl_beside_the_wgsl_and_survives_an_msl_failure(client,
                                                                                monkeypatch):
    import numpy as np

    from cubelab import BufferArg, CubeCount
    from cubelab.runtime import events as ev

    def launch() -> Any:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
        saxpy.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(4), 4, 2.0,
                          BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
        return f32.from_bytes(client.read_one(y))

    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        out = launch()
    (done,) = rec.of(ev.CompileFinished)
    assert f"void {done.entry}(" in done.extra_sources["msl"]
    assert list(out) == [1 + 2 * i for i in range(16)]

    def boom(kernel: KernelDefinition) -> Any:
        raise RuntimeError("broken MSL target")

    monkeypatch.setattr(MslTarget, "compile", lambda self, k: boom(k))
    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        out = launch()
    (done,) = rec.of(ev.CompileFinished)
    assert done.extra_sources["msl"].startswith("// MSL code generation failed")
    assert list(out) == [1 + 2 * i for i in range(16)]
    client.clear_cache()


def test_the_debug_log_prints_msl_when_the_debug_target_is_msl(client, capsys):
    import numpy as np

    from cubelab import BufferArg, CubeCount
    from cubelab.runtime.debug_log import DebugLog

    client.clear_cache()
    unsubscribe = client.events.subscribe(DebugLog("stdout", "msl"))
    try:
        h = [client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
             for _ in range(3)]
        add.launch[f32](client, CubeCount.Static(1, 1, 1), CubeDim.new_1d(8),
                        *[BufferArg.from_raw_parts(b, 8) for b in h], True)
        client.read_one(h[2])
    finally:
        unsubscribe()
    log = capsys.readouterr().out
    block = log.split("[START_KERNEL_COMPILATION]")[1].split("[END_KERNEL_COMPILATION]")[0]
    assert "source:\n```msl\n#include <metal_stdlib>" in block
    assert re.search(r"\[\[max_total_threads_per_threadgroup\(8\)\]\] \[\[kernel\]\] void "
                     r"add_f_f32_[0-9a-f]{8}\(", block)
    assert "max(" in block and "@compute" not in block
