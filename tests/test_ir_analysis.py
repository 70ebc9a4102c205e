"""The one written/read-set analysis (`cubelab/ir/analysis.py`): every op declares its memory
effect, an undeclared op fails loudly, and every consumer (the runtime's write set, MSL's `const`
pointers) gets the same answer from it."""

import pytest

from cubelab.compiler.targets import TARGETS
from cubelab.ir import F32, U32, BufferParam, KernelDefinition, Pointer, RuntimeArray, Scope
from cubelab.ir.analysis import (
    EFFECTS,
    BufferIO,
    UnknownOpError,
    all_ops,
    buffer_io,
    max_value_id,
    written_buffers,
)
from cubelab.ir.core import OPS
from cubelab.ir.types import Atomic, Elem
from cubelab.runtime import buffer_io as runtime_buffer_io
from tests.fixtures.kernel_instances import core_and_zoo_instances


def test_every_ir_op_declares_its_memory_effect():
    assert set(EFFECTS) == set(OPS), sorted(set(EFFECTS) ^ set(OPS))


def _kernel(build) -> KernelDefinition:  # type: ignore[no-untyped-def]
    """Four buffers: x (read-only f32), out (f32), t (f32), hist (atomic u32); `build` adds ops."""
    s = Scope(file="hand.py", kernel_name="k")
    bufs = []
    for idx, (name, item, writable) in enumerate([
            ("x", F32, False), ("out", F32, True), ("t", F32, True),
            ("hist", Atomic(Elem.U32), True)]):
        v = s.new_value(Pointer(RuntimeArray(item), "global", writable), name)
        bufs.append(BufferParam(name, idx, item, writable, v))
    i = s.emit("builtin.read", [], U32, name="local_invocation_index")
    build(s, [b.value for b in bufs], i)
    return KernelDefinition("k", "k_00000000", (4, 1, 1), bufs, [], s.root)


def test_loads_read_stores_write_and_metadata_is_neither():
    def build(s, b, i):  # type: ignore[no-untyped-def]
        x, out, t, hist = b
        p = s.emit("memory.index", [x, i], Pointer(F32, "global", False))
        v = s.emit("memory.load", [p], F32)
        q = s.emit("memory.index", [out, i], Pointer(F32, "global", True))
        s.register("memory.store", [q, v])
        s.emit("buffer.len", [t], U32)
        h = s.emit("memory.index", [hist, i], Pointer(Atomic(Elem.U32), "global", True))
        s.emit("atomic.load", [h], U32)

    k = _kernel(build)
    assert buffer_io(k) == (BufferIO(True, False), BufferIO(False, True), BufferIO(False, False),
                            BufferIO(True, False))
    assert written_buffers(k) == {1}


def test_atomic_updates_read_and_write_through_derived_pointers():
    def build(s, b, i):  # type: ignore[no-untyped-def]
        hist = b[3]
        one = s.emit("arith.constant", [], U32, value=1)
        h = s.emit("memory.index", [hist, i], Pointer(Atomic(Elem.U32), "global", True))
        s.emit("atomic.rmw", [h, one], U32, kind="add")

    assert buffer_io(_kernel(build))[3] == BufferIO(True, True)


def test_an_op_with_no_declared_effect_fails_loudly_instead_of_counting_as_not_written():
    def build(s, b, i):  # type: ignore[no-untyped-def]
        q = s.emit("memory.index", [b[1], i], Pointer(F32, "global", True))
        s.register("memory.frobnicate", [q])

    k = _kernel(build)
    with pytest.raises(UnknownOpError, match="memory.frobnicate.*EFFECTS"):
        buffer_io(k)
    with pytest.raises(UnknownOpError):
        runtime_buffer_io.buffer_io(k)


def test_a_buffer_pointer_where_only_values_belong_counts_as_read_and_written():
    def build(s, b, i):  # type: ignore[no-untyped-def]
        s.emit("arith.select", [i, b[2], b[2]], b[2].type)

    assert buffer_io(_kernel(build))[2] == BufferIO(True, True)


def test_all_ops_is_program_order_and_max_value_id_covers_block_arguments():
    for _, k in core_and_zoo_instances():
        d = k.define()
        assert all_ops(d) == list(d.walk())
        ids = [b.value.id for b in d.buffers] + [v.id for op in d.walk() for v in op.results] + [
            a.id for op in d.walk() for r in op.regions for a in r.args]
        assert max_value_id(d) == max(ids)


def test_msl_makes_a_pointer_const_exactly_when_the_runtime_would_not_claim_the_buffer():
    for _, k in core_and_zoo_instances():
        d = k.define()
        io = runtime_buffer_io.buffer_io(d)
        assert io is not None
        src = TARGETS["msl"].compile(d).source
        head = src[src.index("[[kernel]]"):src.index("{", src.index("[[kernel]]"))]
        for b, use in zip(d.buffers, io):
            const = f"const* const {b.value.name} [[buffer(" in head
            assert const == (not (b.writable and use.writable)), (d.name, b.name, head)
