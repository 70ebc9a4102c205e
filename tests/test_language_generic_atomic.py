"""`Atomic[I]` with `I = Int.generic("I")`, bound at launch like `Slice[F]` (`k.launch[u32]`,
`k.launch[i32]`): CubeCL's `atomic.rs` kernels (`kernel_atomic_int<I: Int>` and the numeric ops
at vector size 1) with its inputs and expected values, on both element types. Also in shared
memory (`SharedMemory[Atomic[I]](n)`)."""

from __future__ import annotations

import enum

import numpy as np
import pytest

from cubelab import CubeCount, CubeDim
from cubelab.errors import KernelTypeError
from cubelab.inspect import instance, wgsl
from cubelab.prelude import *  # noqa: F403
from tests.test_language_semantics import read, up

I = Int.generic("I")  # noqa: E741


class Op(enum.Enum):
    LOAD = "load"
    STORE = "store"
    SWAP = "swap"
    ADD = "add"
    SUB = "sub"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    CAS = "cas"


@cube(launch=True)
def atomic_op(input: Slice[I], atomics: SliceMut[Atomic[I]], output: SliceMut[I],
              op: Comptime[Op]):
    if UNIT_POS == 0:
        match op:
            case Op.LOAD:
                output[0] = atomics[0].load()
            case Op.STORE:
                atomics[0].store(input[0])
            case Op.SWAP:
                atomics[0].swap(I.from_int(5))
            case Op.ADD:
                atomics[0].fetch_add(I.from_int(5))
            case Op.SUB:
                atomics[0].fetch_sub(I.from_int(5))
            case Op.MIN:
                atomics[0].fetch_min(I.from_int(5))
            case Op.MAX:
                atomics[0].fetch_max(I.from_int(5))
            case Op.AND:
                atomics[0].fetch_and(I.from_int(0b0110))
            case Op.OR:
                atomics[0].fetch_or(I.from_int(0b0110))
            case Op.XOR:
                atomics[0].fetch_xor(I.from_int(0b0110))
            case Op.CAS:
                output[0] = atomics[0].compare_exchange_weak(I.from_int(12), I.from_int(5))


# CubeCL's expectations: numeric ops start from 12 with input 5, integer ops from 0b1010
NUMERIC = {Op.LOAD: 12, Op.STORE: 5, Op.SWAP: 5, Op.ADD: 17, Op.SUB: 7, Op.MIN: 5, Op.MAX: 12}
INTEGER = {Op.AND: 0b0010, Op.OR: 0b1110, Op.XOR: 0b1100, Op.CAS: 0b1010}


@pytest.mark.parametrize("kind", [u32, i32], ids=["u32", "i32"])
@pytest.mark.parametrize("op", list(Op), ids=[o.value for o in Op])
def test_generic_atomic_binds_to_the_launch_type_with_cubecl_results(client, kind, op):
    start = 12 if op in NUMERIC else 0b1010
    atomics = up(client, np.array([start], kind.dtype))
    output = up(client, np.array([0], kind.dtype))
    atomic_op.launch[kind](client, CubeCount.Static(1), CubeDim.new_1d(1),
                           up(client, np.array([5], kind.dtype)), atomics, output, op)
    if op is Op.LOAD:
        assert read(client, output, kind).tolist() == [12]
    else:
        assert read(client, atomics, kind).tolist() == [{**NUMERIC, **INTEGER}[op]]
    if op is Op.CAS:  # the old value; 10 != 12, so nothing was exchanged
        assert read(client, output, kind).tolist() == [0b1010]


@cube(launch=True)
def shared_count(x: Slice[u32], out: SliceMut[I]):
    counts = SharedMemory[Atomic[I]](4)
    counts[x[UNIT_POS] % u32(4)].fetch_add(I.new(1))
    sync_cube()
    if UNIT_POS < 4:
        out[UNIT_POS] = counts[UNIT_POS].load()


@pytest.mark.parametrize("kind", [u32, i32], ids=["u32", "i32"])
def test_generic_atomic_shared_memory(client, kind):
    xs = np.array([0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 7, 5], np.uint32)
    out = up(client, np.zeros(4, kind.dtype))
    shared_count.launch[kind](client, CubeCount.Static(1), CubeDim.new_1d(12), up(client, xs),
                              out)
    assert read(client, out, kind).tolist() == np.bincount(xs % 4, minlength=4).tolist()


def test_each_binding_is_its_own_kernel_with_its_atomic_type():
    u = wgsl(instance(shared_count, u32, cube_dim=CubeDim.new_1d(4)))
    s = wgsl(instance(shared_count, i32, cube_dim=CubeDim.new_1d(4)))
    assert "array<atomic<u32>, 4>" in u and "array<atomic<i32>, 4>" in s


def test_a_float_generic_is_refused_in_atomic():
    F = Float.generic("F")
    with pytest.raises(KernelTypeError) as info:
        Atomic[F]
    assert "Atomic[...] holds u32 or i32" in str(info.value)
