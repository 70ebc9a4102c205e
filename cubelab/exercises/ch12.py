"""Chapter 12 · Performance I: launch overhead, batching, bandwidth and the roofline.

Every answer is counted, never timed: how many dispatches each command buffer carries and how
many command buffers a program submits (the runtime's `Flushed` events, on a device held busy so
that no idle flush can split a batch — `launching.busy_device`), the bytes and flops a launch asks
for (`cubelab.inspect.work`: a recorded run on the CPU runtime), which side of a roof a kernel
falls on (its counted intensity against the variant's device), what a wide copy's accesses look
like (`AccessMap.transactions`), and what an in-place kernel leaves after a benchmark's repeats.
Wall time is what the chapter *shows* the student; it is never what a check compares.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import Geometry, KernelExercise, ValueExercise
from cubelab.exercises.launching import EIGHT, ONE, busy_device, inc
from cubelab.exercises.perf_kernels import (arg, copy, poly, read_f32, scale_add, stencil,
                                            upload)
from cubelab.inspect.peaks import DevicePeaks
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _warm(client: Any) -> Any:
    """An 8-item buffer `inc` has run on once (compiled, synced): the loops below count only
    their own submissions."""
    y = upload(client, np.zeros(8))
    inc.launch(client, ONE, EIGHT, arg(y, 8))
    client.sync()
    return y


# -- 12.1 what each command buffer carries ----------------------------------------------------------

def _command_buffers(client: Any, launches: int, max_tasks: int) -> list[int]:
    y = _warm(client)
    old = client.max_tasks
    with client.events.record(ev.Flushed) as rec:
        client.set_max_tasks(max_tasks)
        try:
            with busy_device(client):
                for _ in range(launches):
                    inc.launch(client, ONE, EIGHT, arg(y, 8))
            client.read_one(y)
        finally:
            client.set_max_tasks(old)
    return [e.dispatches for e in rec.of(ev.Flushed)]


@variants("ch12.command_buffers", [dict(launches=10, max_tasks=4), dict(launches=13, max_tasks=3),
                                   dict(launches=11, max_tasks=6)])
def _command_buffers_exercise(v: Any) -> ValueExercise:
    n, m = v.launches, v.max_tasks
    return ValueExercise(
        "ch12.command_buffers", "What does each command buffer carry?",
        f"`client.set_max_tasks({m})`, then {n} launches of `inc` queued while the device "
        "thread is busy with earlier work, then a read of `y`. Each flush encodes the queued "
        "dispatches into one command buffer and submits it (`Flushed(dispatches=...)`). How "
        "many dispatches does each command buffer carry, in order? Answer with a list, "
        "e.g. `[2, 2, 1]`.",
        "A launch is registered on its stream's queue; when the queue holds max_tasks tasks, "
        "the stream is executed on the spot: one command buffer with all of them. Whatever is "
        "left when the loop ends waits until something needs it — the read, a sync, or the "
        "device thread running out of work — and then leaves as one more command buffer.",
        nudge="Follow the queue launch by launch: when does it reach max_tasks, and what is "
        "still in it after the last launch?",
        worked="A worked step on another program: max_tasks 5 and 12 launches: the 5th and "
        "the 10th launch each fill the queue (two command buffers of 5); 2 are left, and the "
        "read sends them: [5, 5, 2].",
        misconceptions=[
            Misconception("every launch is its own submission", lambda v: [1] * v.launches,
                          "That is what a sync after every launch does, not a loop that "
                          "launches and reads once: a stream collects its launches and "
                          "submits them together."),
            Misconception("the whole loop is one command buffer", lambda v: [v.launches],
                          "A queue never grows past max_tasks: reaching it executes the "
                          "stream there and then."),
            Misconception("the leftover is never sent",
                          lambda v: [v.max_tasks] * (v.launches // v.max_tasks),
                          "The launches after the last full queue are not lost: the read "
                          "needs `y`, so it sends them first."),
        ],
        code=f"client.set_max_tasks({m})\n"
        "with busy_device(client):          # the device thread is busy: everything queues\n"
        f"    for _ in range({n}):\n"
        "        inc.launch(client, one, eight, y)\n"
        "client.read_one(y)",
        value=lambda c: _command_buffers(c, n, m),
        explanation="One command buffer per full queue, and one for the rest when the read "
        "needed it. Fewer, fuller command buffers are the point of a stream: each submission "
        "costs the driver a fixed price, whatever it carries.",
    )


# -- 12.2 profiling takes the batching away -------------------------------------------------------

def _profiled(client: Any, profiled: int, batched: int, max_tasks: int) -> int:
    y = _warm(client)
    old = client.max_tasks
    with client.events.record(ev.Flushed) as rec:
        client.set_max_tasks(max_tasks)
        try:
            with client.profile():
                for _ in range(profiled):
                    inc.launch(client, ONE, EIGHT, arg(y, 8))
            with busy_device(client):
                for _ in range(batched):
                    inc.launch(client, ONE, EIGHT, arg(y, 8))
            client.read_one(y)
        finally:
            client.set_max_tasks(old)
    return len(rec.of(ev.Flushed))


@variants("ch12.profiled_submissions", [dict(profiled=11, batched=12, max_tasks=8),
                                        dict(profiled=9, batched=40, max_tasks=8),
                                        dict(profiled=12, batched=20, max_tasks=4)])
def _profiled_exercise(v: Any) -> ValueExercise:
    p, q, m = v.profiled, v.batched, v.max_tasks
    return ValueExercise(
        "ch12.profiled_submissions", "How many submissions does profiling cost?",
        f"With `max_tasks = {m}`: {p} launches of `inc` inside `client.profile()`, then {q} "
        "more queued while the device thread is busy, then a read. How many command buffers "
        "are submitted in all (`Flushed` events)?",
        "To time a launch on the device, `client.profile()` makes every launch inside it "
        "blocking: it is encoded and submitted alone, and the device's timestamps bracket it. "
        "Outside the block, launches batch again: one command buffer per full queue, one for "
        "the rest.",
        code=f"client.set_max_tasks({m})\n"
        "with client.profile():\n"
        f"    for _ in range({p}):\n"
        "        inc.launch(client, one, eight, y)\n"
        "with busy_device(client):\n"
        f"    for _ in range({q}):\n"
        "        inc.launch(client, one, eight, y)\n"
        "client.read_one(y)",
        nudge="Count the two loops apart: what does profiling do to each launch, and how does "
        "the second loop leave?",
        worked="A worked step on another program: 2 profiled launches are 2 submissions; then "
        "10 batched launches with max_tasks 4 leave as 4 + 4 + 2, three more: 5 in all.",
        misconceptions=[
            Misconception("profiling batches too", lambda v: 1 + -(-v.batched // v.max_tasks),
                          "A profiled launch cannot share a command buffer: its time is read "
                          "from timestamps written around it alone."),
            Misconception("every launch is its own submission",
                          lambda v: v.profiled + v.batched,
                          "Only the profiled launches go alone; the others queue up to "
                          "max_tasks."),
        ],
        value=lambda c: _profiled(c, p, q, m),
        explanation="Each profiled launch is a submission of its own — so a profiled time "
        "includes what a submission costs, which is why a roofline of a tiny launch says it is "
        "launch-bound, and why a benchmark times many launches between two syncs.",
    )


# -- 12.3 the bytes a launch asks for -------------------------------------------------------------

def _stencil_work(client: Any, n: int, radius: int, cubes: int, units: int) -> Any:
    from cubelab.inspect import work

    x, out = upload(client, np.arange(n)), upload(client, np.zeros(n))
    return work(stencil.launch, client, CubeCount.Static(cubes),  # noqa: F405
                CubeDim.new_1d(units), arg(x, n), arg(out, n), radius)  # noqa: F405


@variants("ch12.bytes_requested", [dict(n=1000, radius=1, cubes=4, units=256),
                                   dict(n=600, radius=2, cubes=3, units=256),
                                   dict(n=800, radius=3, cubes=7, units=128)])
def _bytes_requested(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch12.bytes_requested", "How many bytes does the stencil ask for?",
        f"`stencil` with `radius = {v.radius}` on `x` of {v.n} f32 items, launched as "
        f"{v.cubes} cubes of {v.units} units. Each unit whose whole window "
        f"`x[i - {v.radius}] ... x[i + {v.radius}]` lies inside `x` reads the window and writes "
        "`out[i]`. How many bytes of global memory does the launch *request* (every load and "
        "store of every unit, 4 bytes each), as `cubelab.inspect.work` counts them?",
        "Requested bytes count every access an active unit makes, 4 bytes for an f32: a unit "
        "that reads 2·radius + 1 items and writes one asks for (2·radius + 2) × 4 bytes. Units "
        "whose guard is false ask for nothing. A value read by two units is requested twice, "
        "even if a cache serves the second.",
        nudge="Which units pass the guard, and how many loads and stores does one of them "
        "make?",
        worked="A worked step on another launch: radius 4 on 100 items: units 4 … 95 pass the "
        "guard (92 units); each reads 9 items and writes 1, 40 bytes: 92 × 40 = 3680 bytes.",
        misconceptions=[
            Misconception("every launched unit moves bytes",
                          lambda v: v.cubes * v.units * (2 * v.radius + 2) * 4,
                          "Units past the end of x, and the first and last `radius` items, "
                          "fail the guard and touch nothing."),
            Misconception("only loads are traffic",
                          lambda v: (v.n - 2 * v.radius) * (2 * v.radius + 1) * 4,
                          "The store to `out[i]` travels to memory too."),
            Misconception("each item moves once",
                          lambda v: 4 * v.n + 4 * (v.n - 2 * v.radius),
                          "That is the compulsory traffic — what a perfect cache would move "
                          "(`w.compulsory_bytes`). Requested bytes count each unit's own loads, "
                          "so neighbours that share a window item ask for it again."),
        ],
        code="@cube(launch=True)\n"
        "def stencil(x: Slice[f32], out: SliceMut[f32], radius: Comptime[int]):\n"
        "    i = ABSOLUTE_POS\n"
        "    if i >= radius and i + radius < x.len():\n"
        "        acc = f32(0.0)\n"
        "        for k in unroll(range(2 * radius + 1)):\n"
        "            acc += x[i + k - radius]\n"
        "        out[i] = acc\n\n"
        f"w = inspect.work(stencil.launch, client, CubeCount.Static({v.cubes}), "
        f"CubeDim.new_1d({v.units}), x, out, {v.radius})\nw.bytes",
        value=lambda c: _stencil_work(c, v.n, v.radius, v.cubes, v.units).bytes,
        explanation="Active units × (window + 1 store) × 4 bytes. Compare `w.compulsory_bytes`: "
        "the gap between them is what caches (or a tile in shared memory) can save.",
    )


# -- 12.4 the flops a launch executes -------------------------------------------------------------

def _poly_work(client: Any, n: int, degree: int, cubes: int, units: int) -> Any:
    from cubelab.inspect import work

    x, out = upload(client, np.linspace(0, 1, n)), upload(client, np.zeros(n))
    return work(poly.launch, client, CubeCount.Static(cubes), CubeDim.new_1d(units),  # noqa
                arg(x, n), arg(out, n), degree)


@variants("ch12.flops_counted", [dict(n=1000, degree=8, cubes=4, units=256),
                                 dict(n=700, degree=5, cubes=3, units=256),
                                 dict(n=300, degree=12, cubes=5, units=64)])
def _flops_counted(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch12.flops_counted", "How many flops does `poly` execute?",
        f"`poly` with `degree = {v.degree}` on {v.n} items, launched as {v.cubes} cubes of "
        f"{v.units} units. How many floating-point operations does the launch execute, as "
        "`cubelab.inspect.work` counts them (`w.flops`)?",
        "A roofline counts floating-point operations: an add, a multiply, a min … is one per "
        "component, a fused multiply-add `fma(a, b, c)` is two (a multiply and an add — that is "
        "how every GPU's peak GFLOP/s is quoted). Integer arithmetic (indices, the guard) and "
        "comparisons are not flops. Only units that pass the guard execute the loop.",
        nudge="How many `fma`s does one unit execute, what is one `fma` worth, and how many "
        "units execute them?",
        worked="A worked step on another launch: degree 3 on 50 items with one cube of 64 "
        "units: 50 units pass the guard, each makes 3 fmas of 2 flops: 50 × 6 = 300 flops.",
        misconceptions=[
            Misconception("an fma is one flop", lambda v: v.n * v.degree,
                          "An fma is one instruction, but two floating-point operations: a "
                          "multiply and an add."),
            Misconception("every launched unit computes",
                          lambda v: v.cubes * v.units * 2 * v.degree,
                          "Units past the end of x fail the guard and compute nothing."),
            Misconception("the index arithmetic counts", lambda v: v.n * (2 * v.degree + 1),
                          "The guard and the index are integer work: not floating-point "
                          "operations."),
        ],
        code="@cube(launch=True)\n"
        "def poly(x: Slice[f32], out: SliceMut[f32], degree: Comptime[int]):\n"
        "    i = ABSOLUTE_POS\n"
        "    if i < x.len():\n"
        "        v = x[i]\n"
        "        acc = f32(1.0)\n"
        "        for _ in unroll(range(degree)):\n"
        "            acc = fma(acc, v, f32(0.5))\n"
        "        out[i] = acc\n\n"
        f"w = inspect.work(poly.launch, client, CubeCount.Static({v.cubes}), "
        f"CubeDim.new_1d({v.units}), x, out, {v.degree})\nw.flops",
        value=lambda c: _poly_work(c, v.n, v.degree, v.cubes, v.units).flops,
        explanation="Items × degree × 2. Its bytes do not grow with the degree (8 per item), so "
        "its intensity — flops per byte — is degree / 4.",
    )


# -- 12.5 which kernels are memory-bound ------------------------------------------------------------

KERNELS = ("copy", "scale_add", "poly4", "poly16", "poly64")


def _intensities(client: Any) -> dict[str, float]:
    """Each kernel's counted flops per requested byte (one cube of 256 units, 256 items)."""
    from cubelab.inspect import work

    n = 256
    one, dim = CubeCount.Static(1), CubeDim.new_1d(n)  # noqa: F405
    x, out = upload(client, np.linspace(0, 1, n)), upload(client, np.zeros(n))
    found = {"copy": work(copy.launch, client, one, dim, arg(x, n), arg(out, n)),
             "scale_add": work(scale_add.launch, client, one, dim, 2.0, arg(x, n), arg(out, n))}
    for d in (4, 16, 64):
        found[f"poly{d}"] = work(poly.launch, client, one, dim, arg(x, n), arg(out, n), d)
    return {k: w.intensity for k, w in found.items()}


def _memory_bound(client: Any, gbps: float, gflops: float) -> set[str]:
    from cubelab.inspect.roofline import bound_of

    ridge = DevicePeaks("the variant's device", gbps, gflops, 0.0).ridge
    return {k for k, i in _intensities(client).items() if bound_of(i, ridge) == "memory"}


@variants("ch12.memory_bound", [
    dict(device="a CPU interpreter", gbps=80.0, gflops=40.0),
    dict(device="an older GPU", gbps=900.0, gflops=1800.0),
    dict(device="an H200 GPU", gbps=4800.0, gflops=67000.0)])
def _memory_bound_exercise(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch12.memory_bound", "Which kernels are memory-bound?",
        f"Your device: **{v.device}** that moves {v.gbps:,.0f} GB/s and computes "
        f"{v.gflops:,.0f} GFLOP/s. Which of `copy`, `scale_add`, `poly4`, `poly16`, `poly64` "
        "(`poly` with degree 4, 16, 64) are memory-bound there? Answer with a set of their "
        "names, e.g. `{\"copy\", \"poly4\"}` — or `set()`. The check counts each kernel's flops and bytes "
        "(`inspect.work`) and places it under your device's roof.",
        "A kernel is memory-bound where its arithmetic intensity (flops per byte it moves) is "
        "below the device's ridge point, peak GFLOP/s ÷ peak GB/s: there the memory cannot feed "
        "the arithmetic fast enough, whatever the arithmetic is. The ridge is a property of "
        "the device, the intensity one of the kernel.",
        nudge="Work out two numbers: your device's ridge (flops per byte), and each kernel's "
        "intensity (its flops per item over its bytes per item).",
        worked="A worked step on another device and kernel: 2000 GB/s and 10 000 GFLOP/s give "
        "a ridge of 5 flop/byte; a kernel that reads 2 floats, writes 1 (12 bytes) and does 30 "
        "flops has intensity 2.5 < 5: memory-bound there.",
        misconceptions=[
            Misconception("every kernel that touches memory is memory-bound",
                          lambda v: set(KERNELS),
                          "A kernel that does enough arithmetic per byte waits for its ALUs, "
                          "not for memory: compare its intensity with the ridge."),
            Misconception("only a kernel without arithmetic is memory-bound", lambda v: {"copy"},
                          "A little arithmetic per byte does not make a kernel compute-bound: "
                          "`scale_add`'s 2 flops per 12 bytes is far below any ridge."),
            Misconception("none", lambda v: set(),
                          "A copy does no arithmetic at all: its time can only be memory's."),
        ],
        code="copy:      out[i] = x[i]\n"
        "scale_add: y[i] = a * x[i] + y[i]\n"
        "poly4 / poly16 / poly64: out[i] = Horner's rule in 4 / 16 / 64 fmas of x[i]",
        value=lambda c: _memory_bound(c, v.gbps, v.gflops),
        explanation="The ridge decides: copy (0 flop/byte) and scale_add (1/6) are memory-bound "
        "everywhere; poly's intensity is degree / 4, so it crosses the ridge at a degree that "
        "depends on the device.",
    )


# -- 12.6 a wide copy -----------------------------------------------------------------------------

@cube(launch=True)  # noqa: F405
def copy_wide_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The chapter's f32 copy, launched with a quarter as many units: it copies a quarter."""
    i = ABSOLUTE_POS  # noqa: F405
    if i < x.len():
        out[i] = x[i]


@cube(launch=True)  # noqa: F405
def copy_wide_four_loads(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Right values, four 4-byte accesses a unit at a stride of four items."""
    i = ABSOLUTE_POS  # noqa: F405
    if 4 * i < x.len():
        for k in unroll(range(4)):  # noqa: F405
            out[4 * i + k] = x[4 * i + k]


@cube(launch=True)  # noqa: F405
def copy_wide_four_strided(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Right values and coalesced, but still four 4-byte accesses a unit."""
    q = x.len() // 4
    i = ABSOLUTE_POS  # noqa: F405
    if i < q:
        for k in unroll(range(4)):  # noqa: F405
            out[i + k * q] = x[i + k * q]


def _wide_accesses(m: Any, case: Any) -> str | None:
    """Each unit's global access moves 16 bytes (one vec4), coalesced."""
    for t in m.transactions:
        if t.bytes != 16 * t.units:
            return (f"line {t.line} {t.kind}s `{t.array}` {t.bytes // t.units} bytes a unit "
                    "per access; the exercise asks for 16 — one `Vector[f32, 4]` load and one "
                    "store per unit")
    for row in m.coalescing():
        if row.efficiency < 1.0:
            return (f"line {row.line}'s {row.kind}s of `{row.array}` use {row.efficiency:.0%} "
                    "of the sectors they touch")
    return None


CHAPTER_COPY = Geometry(1024, 1, 256)  # floats; the kernel runs a quarter as many units
YOUR_COPIES = (Geometry(2048, 2, 256), Geometry(768, 3, 64), Geometry(512, 1, 128))


def _wide_inputs(g: Geometry) -> dict[str, np.ndarray]:
    return {"x": np.arange(g.n, dtype=np.float32) * 0.5, "out": np.full(g.n, -1.0, np.float32)}


def _wide_launch(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch, client, h, "x", "out")  # lengths in floats


@variants("ch12.wide_copy", [dict(yours=g) for g in YOUR_COPIES])
def _wide_copy(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch12.wide_copy", "A copy that moves 16 bytes a unit",
        "`copy_wide` must copy every float of `x` into `out` with a quarter as many units as "
        "floats: each unit moves **one `Vector[f32, 4]`** — one 16-byte load and one 16-byte "
        "store — as the bandwidth measurement's own copy does. It is launched with lengths in "
        "floats (`BufferArg.from_raw_parts(x, n)`), on 1024 floats with one cube of 256 units "
        f"and on yours ({v.yours}). The check compares `out` and reads every access's size and "
        "sectors from the access map.",
        "A `Slice[Vector[f32, 4]]` sees the same buffer as a quarter as many items of 16 bytes: "
        "`x.len()` counts vectors, `x[i]` loads floats 4i … 4i + 3 in one access. Change the "
        "parameter types; the body of a one-item-a-unit copy stays as it is.",
        (copy_wide_template, copy_wide_four_loads, copy_wide_four_strided),
        nudge="Look at the access map's transactions: how many bytes does one unit move in one "
        "access, and how many accesses does it make?",
        worked="A worked step on another kernel: a `double2` that doubles pairs declares "
        "`x: Slice[Vector[f32, 2]]`, so `x[i]` is floats 2i and 2i + 1 in one 8-byte load, and "
        "`x.len()` is half the float count.",
        cases=(CHAPTER_COPY, v.yours),
        inputs=_wide_inputs, spec=lambda b, case: {"out": b["x"].copy()}, launch=_wide_launch,
        checks=(_wide_accesses,),
    )


# -- 12.7 what a benchmark leaves in an in-place buffer ----------------------------------------------

def _accumulated(client: Any, a: float, repeats: int, index: int) -> float:
    n = 64
    x, y = upload(client, np.arange(n)), upload(client, np.ones(n))
    count, dim = CubeCount.Static(1), CubeDim.new_1d(n)  # noqa: F405
    scale_add.launch(client, count, dim, a, arg(x, n), arg(y, n))  # the warm-up: compiles
    client.sync()
    for _ in range(repeats):
        scale_add.launch(client, count, dim, a, arg(x, n), arg(y, n))
    return float(read_f32(client, y)[index])


@variants("ch12.accumulated", [dict(a=2.0, repeats=10, item=3), dict(a=0.5, repeats=20, item=6),
                               dict(a=3.0, repeats=5, item=2)])
def _accumulated_exercise(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch12.accumulated", "What does a benchmark leave in y?",
        f"The runtime comparison times `scale_add` (`y = a·x + y`) like this, with `a = {v.a}`, "
        f"`x[i] = i` and `y` all ones: one warm-up launch, then {v.repeats} timed launches, "
        f"and no reset in between. What is `y[{v.item}]` afterwards?",
        "`scale_add` updates `y` in place: every launch — the warm-up included — adds `a·x[i]` "
        "once more. A benchmark of an in-place kernel changes its own input, so two runtimes "
        "agree only when they ran the same launches from the same start; reset `y` (or compare "
        "with what that many launches give).",
        nudge="Count every launch that ran, and what each one adds to y[i].",
        worked="A worked step on another program: a = 4, x[1] = 1, y = 1, one warm-up and 2 "
        "timed launches: 1 + 3 × 4 × 1 = 13.",
        misconceptions=[
            Misconception("the warm-up does not count", lambda v: 1 + v.repeats * v.a * v.item,
                          "The warm-up launch ran for real: it compiled *and* updated y."),
            Misconception("a launch overwrites y", lambda v: 1 + v.a * v.item,
                          "`y[i] = a * x[i] + y[i]` reads y first: each launch adds to what the "
                          "last one left."),
        ],
        code="scale_add.launch(client, count, dim, a, x, y)      # warm-up (compiles)\n"
        "client.sync()\n"
        f"for _ in range({v.repeats}):\n"
        "    scale_add.launch(client, count, dim, a, x, y)  # timed\n"
        f"y[{v.item}]",
        value=lambda c: _accumulated(c, v.a, v.repeats, v.item),
        explanation="1 + (repeats + 1)·a·i: exact in f32 here, and the same on every runtime.",
    )
