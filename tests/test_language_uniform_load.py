"""`workgroup_uniform_load(sm[i])`, on every runtime: a barrier, then one shared value every unit
of the cube gets — so it may gate control flow that holds a barrier (WGSL's
`workgroupUniformLoad`; MSL writes the barrier and a load; the CPU runtime checks the barrier as
`sync_cube`'s and loads). The cases and expected outputs are CubeCL's
(`runtime_tests/synchronization.rs`: the plain, the vector and the "synchronises on its own"
tests), on a 32 x 2 cube as CubeCL's 64-unit `new_2d(max / 2, 2)`."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.errors import KernelSourceError
from cubelab.inspect import instance
from cubelab.prelude import *  # noqa: F403

ONE = CubeCount.Static(1)
CUBE = CubeDim.new_2d(32, 2)


def empty(client, n, kind=u32):
    return BufferArg.from_raw_parts(client.create_from_slice(kind.as_bytes(np.zeros(n, kind.dtype))), n)


def read(client, b, kind=u32):
    return kind.from_bytes(client.read_one(b.handle))[: b.length]


@cube(launch=True)
def uniform_count(out: SliceMut[u32]):
    count = SharedMemory[u32](1)
    if UNIT_POS == 0:
        count[0] = u32(3)
    sync_cube()
    n = workgroup_uniform_load(count[0])
    if n > 0:
        sync_cube()  # a barrier under a branch on the uniform value: valid WGSL
    out[UNIT_POS] = n


def test_every_unit_gets_the_shared_value_and_may_branch_on_it_around_a_barrier(client):
    out = empty(client, 64)
    uniform_count.launch(client, ONE, CUBE, out)
    assert list(read(client, out)) == [3] * 64


@cube(launch=True)
def uniform_vector(out: SliceMut[Vector[f32, 4]]):
    smem = SharedMemory[Vector[f32, 4]](1)
    if UNIT_POS == 0:
        smem[0] = Vector.new(f32(7.0))
    sync_cube()
    out[UNIT_POS] = workgroup_uniform_load(smem[0])


def test_a_vector_is_loaded_whole(client):
    out = BufferArg.from_raw_parts(
        client.create_from_slice(f32.as_bytes(np.zeros(256, np.float32))), 256)
    uniform_vector.launch(client, ONE, CUBE, out)
    assert (f32.from_bytes(client.read_one(out.handle)) == 7.0).all()


@cube(launch=True)
def uniform_bound(out: SliceMut[u32]):
    bound = SharedMemory[u32](1)
    if UNIT_POS == 0:
        acc = u32(0)  # real work, so the bound is no constant
        i = u32(0)
        while i < 1024:
            acc += i % 3
            i += 1
        bound[0] = acc
    n = workgroup_uniform_load(bound[0])  # no sync_cube before it: the load is the barrier
    capped = min(n, u32(4096))
    total = u32(0)
    k = u32(0)
    while k < capped:
        total += k
        k += 1
    out[UNIT_POS] = total


def test_the_uniform_load_synchronises_on_its_own(client):
    acc = sum(i % 3 for i in range(1024))
    out = empty(client, 64)
    uniform_bound.launch(client, ONE, CUBE, out)
    assert list(read(client, out)) == [sum(range(min(acc, 4096)))] * 64


def test_it_is_one_op_in_wgsl_and_a_barrier_then_a_load_in_msl():
    import cubelab.inspect as ci

    inst = instance(uniform_count, cube_dim=CUBE)
    ops = [op.name for op in inst.define().walk()]
    assert ops.count("sync.uniform_load") == 1 and "memory.load" not in ops
    assert re.search(r"let (v\d+): u32 = workgroupUniformLoad\(&\(\*v\d+\)\);\n"
                     r"    let v\d+: bool = \1 > v\d+;", ci.wgsl(inst))
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
    assert re.search(rf"{re.escape(barrier)}\nthreadgroup uint32_t \* const (v\d+) = &s1\[v\d+\];\n"
                     rf"{re.escape(barrier)}\nuint32_t const v\d+ = \*\1;", ci.msl(inst))


@cube(launch=True)
def from_a_buffer(x: Slice[u32], out: SliceMut[u32]):
    out[UNIT_POS] = workgroup_uniform_load(x[0])


@cube(launch=True)
def from_a_value_read_earlier(out: SliceMut[u32]):
    sm = SharedMemory[u32](1)
    v = sm[0]
    w = v + u32(1)
    out[UNIT_POS] = workgroup_uniform_load(v) + w


@pytest.mark.parametrize("kernel", [from_a_buffer, from_a_value_read_earlier])
def test_anything_but_a_shared_item_read_in_place_is_refused_with_a_caret(kernel):
    with pytest.raises(KernelSourceError, match=r"workgroup_uniform_load takes an item of shared "
                                                r"memory(.|\n)*\^(.|\n)*workgroup_uniform_load\(sm\[i\]\)"):
        instance(kernel, cube_dim=CubeDim.new_1d(4)).define()


def test_the_access_map_puts_the_read_after_the_barrier_so_there_is_no_race(cpu_client):
    import cubelab.inspect as ci

    m = ci.access_map(uniform_bound.launch, cpu_client, ONE, CUBE, empty(cpu_client, 64))
    assert m.races == [] and "no race" in str(m)
    reads = [a for a in m.accesses if a.array == "bound" and a.kind == "read"]
    writes = [a for a in m.accesses if a.array == "bound" and a.kind == "write"]
    assert len(reads) == 64 and len(writes) == 1
    assert {a.phase for a in reads} == {w.phase + 1 for w in writes}
