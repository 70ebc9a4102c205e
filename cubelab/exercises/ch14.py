"""Chapter 14 · Plane ops and reductions (CubeCL's plane operations: `plane_sum`, the scans,
`plane_ballot`, the shuffles, and the units of a plane running as one).

A plane's answer depends on the device: its width is PLANE_DIM — 8 on a 256-bit lavapipe, 32 on
the CPU runtime and on NVIDIA GPUs — so every answer here is computed by running the kernel on
the student's own client (the variant picks the cube size, the data, the unit asked about), never
from a width written down. The reduction exercises read the access map of the run: its barrier
phases, and its bank conflicts at the device's plane width (`AccessMap.conflicts()`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import KernelExercise, ValueExercise
from cubelab.prelude import *  # noqa: F403

ONE = CubeCount.Static(1)  # noqa: F405


def _floats(client: Any, values: Any) -> Any:
    return client.create_from_slice(f32.as_bytes(np.asarray(values, np.float32)))  # noqa: F405


def _read(client: Any, h: Any, dtype: Any = np.float32) -> np.ndarray:
    return np.frombuffer(client.read_one(h), dtype=dtype).copy()


def _arg(h: Any, n: int) -> Any:
    return BufferArg.from_raw_parts(h, n)  # noqa: F405


# -- the chapter's kernels (the notebook defines the same ones in its cells) ----------------------

@cube(launch=True)  # noqa: F405
def plane_of(out: SliceMut[u32]):  # noqa: F405
    """Each unit writes the plane it belongs to."""
    out[ABSOLUTE_POS] = UNIT_POS // PLANE_DIM  # noqa: F405


@cube(launch=True)  # noqa: F405
def scans(x: Slice[f32], inclusive: SliceMut[f32], exclusive: SliceMut[f32]):  # noqa: F405
    inclusive[ABSOLUTE_POS] = plane_inclusive_sum(x[ABSOLUTE_POS])  # noqa: F405
    exclusive[ABSOLUTE_POS] = plane_exclusive_sum(x[ABSOLUTE_POS])  # noqa: F405


@cube(launch=True)  # noqa: F405
def votes(x: Slice[f32], mask: SliceMut[u32]):  # noqa: F405
    b = plane_ballot(x[ABSOLUTE_POS] > f32(0.0))  # noqa: F405
    mask[ABSOLUTE_POS] = b[0]


@cube(launch=True)  # noqa: F405
def tree_sum(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """A cube's sum in shared memory: each step the lower half adds the upper half."""
    sm = SharedMemory[f32](256)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    sm[u] = x[ABSOLUTE_POS]  # noqa: F405
    sync_cube()  # noqa: F405
    half = CUBE_DIM // 2  # noqa: F405
    while half > 0:
        if u < half:
            sm[u] += sm[u + half]
        sync_cube()  # noqa: F405
        half = half // 2
    if u == 0:
        out[CUBE_POS] = sm[0]  # noqa: F405


@cube(launch=True)  # noqa: F405
def interleaved_sum(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The same sum with the first tree everyone writes: unit u adds at index 2·s·u."""
    sm = SharedMemory[f32](256)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    sm[u] = x[ABSOLUTE_POS]  # noqa: F405
    sync_cube()  # noqa: F405
    s = u32(1)  # noqa: F405
    while s < CUBE_DIM:  # noqa: F405
        index = 2 * s * u
        if index < CUBE_DIM:  # noqa: F405
            sm[index] += sm[index + s]
        sync_cube()  # noqa: F405
        s *= 2
    if u == 0:
        out[CUBE_POS] = sm[0]  # noqa: F405


@cube(launch=True)  # noqa: F405
def active_lanes(out: SliceMut[u32], k: u32):  # noqa: F405
    """Inside a branch only some units of a plane run: plane_sum(1) counts them."""
    if UNIT_POS % k == 0:  # noqa: F405
        out[ABSOLUTE_POS] = plane_sum(u32(1))  # noqa: F405
    else:
        out[ABSOLUTE_POS] = u32(0)  # noqa: F405


# -- 14.1 how many planes -------------------------------------------------------------------------

def planes_in_a_cube(client: Any, units: int) -> int:
    out = client.create_from_slice(bytes(4 * units))
    plane_of.launch(client, ONE, CubeDim.new_1d(units), _arg(out, units))  # noqa: F405
    return int(_read(client, out, np.uint32).max()) + 1


@variants("ch14.planes", [dict(units=44), dict(units=100), dict(units=70)])
def _planes(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch14.planes", "How many planes in a cube?",
        f"A cube of {v.units} units runs on this notebook's device. Into how many planes does "
        "it fall? (The check launches `plane_of` with that cube on your device and counts the "
        "distinct planes its units report.)",
        "A plane is PLANE_DIM consecutive units of one cube. A cube that is not a multiple of "
        "the width ends with a partly filled plane whose missing lanes are inactive, so the "
        "count is a ceiling division: ⌈units / PLANE_DIM⌉ — with *your device's* PLANE_DIM.",
        nudge="What did the set-up cell print as PLANE_DIM, and what happens to the units left "
        "over after the last full plane?",
        worked="A cube of 20 units on planes of 8: units 0–7, 8–15 and 16–19 — three planes, the "
        "last with 4 active lanes.",
        misconceptions=[
            Misconception("NVIDIA's warp of 32, rounded down", lambda v: v.units // 32,
                          "The width is the device's, and a partial plane still counts."),
            Misconception("one plane per cube", 1, "A plane is at most PLANE_DIM units; a larger "
                          "cube is several planes.")],
        code=f"plane_of.launch(client, CubeCount.Static(1), CubeDim.new_1d({v.units}), out)",
        value=lambda c: planes_in_a_cube(c, v.units),
        explanation="⌈units / PLANE_DIM⌉: the last plane may be partial.")


# -- 14.2 what a scan gives one unit --------------------------------------------------------------

def scan_of(client: Any, xs: np.ndarray, unit: int, inclusive: bool) -> float:
    n = xs.size
    x, inc, exc = _floats(client, xs), _floats(client, np.zeros(n)), _floats(client, np.zeros(n))
    scans.launch(client, ONE, CubeDim.new_1d(n), _arg(x, n), _arg(inc, n), _arg(exc, n))  # noqa
    return float(_read(client, inc if inclusive else exc)[unit])


_SCAN_X = [((np.arange(48) * k + 1) % 10).astype(np.float32) for k in (3, 7, 9)]


@variants("ch14.scan", [dict(x=_SCAN_X[0], unit=43), dict(x=_SCAN_X[1], unit=45),
                        dict(x=_SCAN_X[2], unit=46)])
def _scan(v: Any) -> ValueExercise:
    xs = ", ".join(str(int(a)) for a in v.x)
    return ValueExercise(
        "ch14.scan", "What does an exclusive scan give one unit?",
        f"`scans` runs in one cube of 48 units with x = [{xs}]. What does "
        f"`plane_exclusive_sum(x[i])` give unit {v.unit}, on your device?",
        "A plane scan runs over the lanes of one plane, in lane order: the exclusive sum gives "
        "lane k the sum of lanes 0 … k − 1 *of its own plane* (0 to lane 0). The plane starts "
        "at the unit ⌊u / PLANE_DIM⌋ · PLANE_DIM, so the answer depends on your device's width.",
        nudge="Which unit is lane 0 of this unit's plane on your device?",
        worked="Planes of 4 and x = [1, 2, 3, 4, 5, 6, 7, 8]: unit 6 is lane 2 of the plane of "
        "units 4–7; its exclusive sum is x[4] + x[5] = 11.",
        misconceptions=[
            Misconception("the scan runs over the whole cube", lambda v: float(v.x[:v.unit].sum()),
                          "A plane op never sees another plane's lanes."),
            Misconception("the inclusive sum", lambda v: float(v.x[:v.unit + 1].sum()),
                          "Exclusive leaves the unit's own value out.")],
        code="x = [" + xs + "]\nscans.launch(client, CubeCount.Static(1), CubeDim.new_1d(48), "
        "x, inclusive, exclusive)",
        value=lambda c: scan_of(c, v.x, v.unit, False),
        explanation="The sum of the lanes before it, in its own plane.")


# -- 14.3 a ballot's mask -------------------------------------------------------------------------

def ballot_of(client: Any, xs: np.ndarray) -> int:
    n = xs.size
    x, mask = _floats(client, xs), client.create_from_slice(bytes(4 * n))
    votes.launch(client, ONE, CubeDim.new_1d(n), _arg(x, n), _arg(mask, n))  # noqa: F405
    return int(_read(client, mask, np.uint32)[0])


_VOTES = [np.array([1, -1, 2, 0, 3, -2, 5, 4, -1, 6, 7, -3, 0, 8, 9, 1] * 2, np.float32),
          np.array([-1, 2, -3, 4, 5, -6, 7, -8, 9, 10, -11, 12, 0, 14, -15, 16] * 2, np.float32),
          np.array([0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1] * 2, np.float32)]


@variants("ch14.ballot", [dict(x=x) for x in _VOTES])
def _ballot(v: Any) -> ValueExercise:
    xs = ", ".join(str(int(a)) for a in v.x)
    return ValueExercise(
        "ch14.ballot", "What does unit 0's ballot say?",
        f"`votes` runs in one cube of 32 units with x = [{xs}]. Each unit votes `x[i] > 0`. "
        "What is word 0 of unit 0's `plane_ballot`, as a number (bit k is lane k's vote), on "
        "your device?",
        "`plane_ballot(b)` gives every lane of a plane the same mask: bit k of word k // 32 is "
        "lane k's vote, for the lanes *of that plane*. On planes of 8 only bits 0–7 can be set; "
        "on planes of 32, all 32 bits of word 0.",
        nudge="How many lanes does unit 0's plane have on your device, and which of them vote "
        "yes?",
        worked="Planes of 4 voting [yes, no, yes, yes]: the mask is 1 + 4 + 8 = 13 (0b1101) on "
        "every lane of that plane.",
        misconceptions=[
            Misconception("a count of the votes", lambda v: int((v.x[:32] > 0).sum()),
                          "The ballot is a bit mask, not a count: `count_ones` would count it."),
            Misconception("unit 0's own vote", lambda v: int(v.x[0] > 0),
                          "Every lane receives the votes of its whole plane.")],
        code="x = [" + xs + "]\nvotes.launch(client, CubeCount.Static(1), CubeDim.new_1d(32), "
        "x, mask)",
        value=lambda c: ballot_of(c, v.x),
        explanation="Bit k is set where lane k of unit 0's plane voted yes.")


# -- 14.4 the tree's barrier phases ---------------------------------------------------------------

def tree_phases(units: int) -> int:
    from cubelab.inspect import access_map
    from cubelab.runtime.device import Device

    cpu = Device.cpu().client()
    x, out = _floats(cpu, np.ones(units)), _floats(cpu, np.zeros(1))
    m = access_map(tree_sum.launch, cpu, ONE, CubeDim.new_1d(units), _arg(x, units),  # noqa
                   _arg(out, 1))
    return m.phases


@variants("ch14.tree_phases", [dict(units=32), dict(units=128), dict(units=64)])
def _tree_phases(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch14.tree_phases", "How many phases does the tree take?",
        f"`tree_sum` runs in one cube of {v.units} units. Its access map splits the run into "
        "*phases*, one per stretch between barriers (`sync_cube()`) the units pass. How many "
        "phases does it show?",
        "Every `sync_cube()` a unit passes starts a new phase. The tree passes one after the "
        "load, then one per halving — log₂(units) halvings — and the last phase is unit 0 "
        "writing the result.",
        nudge="Count the barriers: one after the load, then one at the end of every pass of "
        "the `while` loop. How many passes for your cube?",
        worked="A cube of 16: one barrier after the load, halves 8, 4, 2, 1 each end with one — "
        "5 barriers, so 6 phases.",
        misconceptions=[
            Misconception("one phase per halving", lambda v: v.units.bit_length() - 1,
                          "The load has a barrier too, and the phases are the stretches between "
                          "barriers: one more than the barriers."),
            Misconception("one phase per barrier", lambda v: v.units.bit_length(),
                          "n barriers cut a run into n + 1 stretches.")],
        code=f"m = inspect.access_map(tree_sum.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d({v.units}), x, out)\nm.phases",
        value=lambda c: tree_phases(v.units),
        explanation="log₂(units) + 2: the load, one per halving, and unit 0's write.")


# -- 14.5 write the plane reduction ---------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def block_sum(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The template: the tree (many barriers)."""
    sm = SharedMemory[f32](256)  # noqa: F405
    u = UNIT_POS  # noqa: F405
    sm[u] = x[ABSOLUTE_POS]  # noqa: F405
    sync_cube()  # noqa: F405
    half = CUBE_DIM // 2  # noqa: F405
    while half > 0:
        if u < half:
            sm[u] += sm[u + half]
        sync_cube()  # noqa: F405
        half = half // 2
    if u == 0:
        out[CUBE_POS] = sm[0]  # noqa: F405


@cube(launch=True)  # noqa: F405
def block_sum_one_plane(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Assumes the cube is one plane: right on 32-wide planes for cubes of 32, wrong elsewhere."""
    s = plane_sum(x[ABSOLUTE_POS])  # noqa: F405
    if UNIT_POS == 0:  # noqa: F405
        out[CUBE_POS] = s  # noqa: F405


@cube(launch=True)  # noqa: F405
def block_sum_serial(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """One barrier, but unit 0 adds every item from shared memory itself."""
    sm = SharedMemory[f32](256)  # noqa: F405
    sm[UNIT_POS] = x[ABSOLUTE_POS]  # noqa: F405
    sync_cube()  # noqa: F405
    if UNIT_POS == 0:  # noqa: F405
        t = f32(0.0)  # noqa: F405
        for k in range(CUBE_DIM):  # noqa: F405
            t += sm[k]
        out[CUBE_POS] = t  # noqa: F405


_SUM_CASES = [(2, 64), (3, 40), (2, 96), (4, 24)]  # (cubes, units per cube)


def _sum_inputs(case: tuple[int, int]) -> dict[str, np.ndarray]:
    cubes, units = case
    x = (np.arange(cubes * units) % 7 - 3).astype(np.float32)
    return {"x": x, "out": np.full(cubes, -1.0, np.float32)}


def _sum_launch(kernel: Any, client: Any, h: dict[str, Any], case: tuple[int, int]) -> None:
    cubes, units = case
    kernel.launch(client, CubeCount.Static(cubes), CubeDim.new_1d(units),  # noqa: F405
                  _arg(h["x"], cubes * units), _arg(h["out"], cubes))


def _one_barrier(m: Any, case: Any) -> str | None:
    return None if m.phases <= 2 else (f"the units pass {m.phases - 1} barriers; the exercise "
                                       "allows one.")


def _few_shared_reads(m: Any, case: Any) -> str | None:
    top = max((s.shared_reads for s in m.scores), default=0)
    return None if top <= 16 else (f"one unit reads shared memory {top} times; a plane "
                                   "reduction needs one read per plane (at most 16 here).")


@variants("ch14.block_sum", [dict(yours=c) for c in _SUM_CASES[1:]])
def _block_sum(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch14.block_sum", "A cube's sum with one barrier",
        "`block_sum` writes each cube's sum into `out[CUBE_POS]`. The template is the tree: a "
        "barrier per halving. Rewrite it with `plane_sum`, passing **at most one** "
        "`sync_cube()`, with no unit reading shared memory more than 16 times. It runs on 2 "
        f"cubes of 64 units and on yours: {v.yours[0]} cubes of {v.yours[1]} units — and must "
        "be right for any plane width.",
        "Each plane adds its lanes with `plane_sum` at once; one unit per plane "
        "(`UNIT_POS_PLANE == 0`) stores the total at `sm[UNIT_POS // PLANE_DIM]`; after one "
        "`sync_cube()`, unit 0 adds the ⌈CUBE_DIM / PLANE_DIM⌉ totals — a partial last plane "
        "included.",
        (block_sum, block_sum_one_plane, block_sum_serial),
        nudge="How many planes does a cube have on your device, and how does unit 0 learn each "
        "plane's total?",
        worked="A cube of 12 units on planes of 8: two planes (8 + 4 lanes); units 0 and 8 store "
        "their plane's sum in sm[0] and sm[1]; after the barrier unit 0 adds the two.",
        inputs=_sum_inputs,
        spec=lambda b, case: {"out": b["x"].reshape(case[0], case[1]).sum(axis=1)},
        launch=_sum_launch, cases=[_SUM_CASES[0], v.yours],
        checks=(_one_barrier, _few_shared_reads))


# -- 14.6 bank conflicts of the first tree --------------------------------------------------------

def interleaved_worst_ways(client: Any, units: int) -> int:
    from cubelab.inspect import access_map

    x, out = _floats(client, np.ones(units)), _floats(client, np.zeros(1))
    m = access_map(interleaved_sum.launch, client, ONE, CubeDim.new_1d(units),  # noqa: F405
                   _arg(x, units), _arg(out, 1))
    return max(r.worst for r in m.conflicts())


@variants("ch14.conflicts", [dict(units=64), dict(units=128), dict(units=256)])
def _conflicts(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch14.conflicts", "How bad are the first tree's bank conflicts?",
        f"`interleaved_sum` runs in one cube of {v.units} units. What is the worst bank-conflict "
        "degree (`ways`) any of its shared-memory accesses reaches on your device's planes — "
        "the largest `worst ways` in `access_map(...).conflicts()`?",
        "Shared memory is 32 banks of 4-byte words; word w is in bank w mod 32. A plane's "
        "access needs as many passes as the most distinct words one bank must deliver. At step "
        "s the active units touch words 2·s·u apart: once the stride is a multiple of 32 "
        "words, every active unit of a plane lands in the same bank — at most a plane's "
        "units (your device's PLANE_DIM) access at once.",
        nudge="At each step s, which words do the active units of one plane touch, and how many "
        "of them share a bank?",
        worked="Planes of 4 units and 8 banks: at s = 2 units 0–3 touch words 0, 4, 8, 12 — "
        "banks 0, 4, 0, 4: 2-way.",
        misconceptions=[
            Misconception("no conflict", 1, "The stride 2·s grows each step; words of one plane "
                          "start to share banks."),
            Misconception("one pass per active unit", 32, "Only distinct words in one bank cost "
                          "passes, and at most a plane's units access at once.")],
        code=f"m = inspect.access_map(interleaved_sum.launch, client, CubeCount.Static(1), "
        f"CubeDim.new_1d({v.units}), x, out)\nm.conflicts()",
        value=lambda c: interleaved_worst_ways(c, v.units),
        explanation="The stride doubles each step until a plane's active words all share a "
        "few banks.")


# -- 14.7 divergence ------------------------------------------------------------------------------

def lanes_seen(client: Any, k: int) -> int:
    out = client.create_from_slice(bytes(4 * 32))
    active_lanes.launch(client, ONE, CubeDim.new_1d(32), _arg(out, 32), k)  # noqa: F405
    return int(_read(client, out, np.uint32)[0])


@variants("ch14.diverged", [dict(k=3), dict(k=4), dict(k=5)])
def _diverged(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch14.diverged", "How many lanes are still in the plane?",
        f"`active_lanes` runs in one cube of 32 units with k = {v.k}: only units with "
        "`UNIT_POS % k == 0` enter the branch, and there each adds `u32(1)` over its plane. "
        "What does unit 0 write, on your device?",
        "A plane op inside a branch runs over the lanes of the plane that entered it — the "
        "active lanes. `plane_sum(u32(1))` counts them: for unit 0 the multiples of k among "
        "units 0 … PLANE_DIM − 1.",
        nudge="Which units are in unit 0's plane on your device, and which of them are "
        "multiples of k?",
        worked="Planes of 8 and k = 2: unit 0's plane is units 0–7, of which 0, 2, 4, 6 enter: "
        "plane_sum(1) = 4.",
        misconceptions=[
            Misconception("every lane of the plane takes part", 32, "Lanes outside the branch "
                          "are inactive there: they add nothing."),
            Misconception("each unit counts itself", 1, "`plane_sum` adds the value of every "
                          "active lane of the plane, not the unit's own alone.")],
        code=f"active_lanes.launch(client, CubeCount.Static(1), CubeDim.new_1d(32), out, {v.k})",
        value=lambda c: lanes_seen(c, v.k),
        explanation="⌈PLANE_DIM / k⌉ lanes of unit 0's plane entered the branch.")

