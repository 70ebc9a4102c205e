"""Chapter 4 · Reading the IR, WGSL and MSL (CubeCL's chapter on `#[cube]` kernels: looking at the
generated MSL): which compiles the CheckedIo pass changes, how many clamps the fixed rule adds,
what a compiled MSL line says about the launch, and a bug found by reading generated code.

Every exercise has variants (`students.py`); the kernel exercise runs on two sizes.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from cubelab.exercises import Misconception, variants
from cubelab.exercises.kinds import Geometry, KernelExercise, ValueExercise
from cubelab.exercises.seed000 import add, saxpy
from cubelab.ir.passes import DEFAULT_CHECKED_IO
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev

F = Float.generic("F")  # noqa: F405


def _compile(client: Any, launch: Any, rule: str = DEFAULT_CHECKED_IO) -> Any:
    """Run `launch(client)` on a cleared cache under a CheckedIo rule (the client's rule is put
    back after) and return its CompileFinished event."""
    before = client.device.server.options.checked_io
    if rule != before:
        client.set_compilation_options(checked_io=rule)
    try:
        client.clear_cache()
        with client.events.record(ev.CompileFinished) as rec:
            launch(client)
            client.sync()
    finally:
        if rule != before:
            client.set_compilation_options(checked_io=before)
    done, = rec.of(ev.CompileFinished)
    return done


def _clamps(done: Any) -> int:
    """How many `arith.min` clamps the checked-io pass added to a compile's IR."""
    return sum(after.count("arith.min") - before.count("arith.min")
               for name, before, after in done.passes if name == "checked-io")


# -- 4.1 which compiles does CheckedIo change? -----------------------------------------------------

def _add(checked: bool) -> Any:
    def launch(client: Any) -> None:
        x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))  # noqa: F405
        out = client.empty(32)
        (add.launch if checked else add.launch_unchecked)[f32](
            client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
            BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(x, 8),  # noqa: F405
            BufferArg.from_raw_parts(out, 8), False)  # noqa: F405
    return launch


COMPILES = {("cubecl-0.11.3", True): "the default rule, `launch`",
            ("cubecl-0.11.3", False): "the default rule, `launch_unchecked`",
            ("fixed", True): "`checked_io=\"fixed\"`, `launch`",
            ("fixed", False): "`checked_io=\"fixed\"`, `launch_unchecked`"}
ORDERS = [list(COMPILES)[i:] + list(COMPILES)[:i] for i in range(4)]


def _changed(client: Any, order: list[tuple[str, bool]]) -> set[str]:
    return {"ABCD"[i] for i, (rule, checked) in enumerate(order)
            if _clamps(_compile(client, _add(checked), rule)) > 0}


@variants("ch04.which_clamp", [dict(order=o) for o in ORDERS])
def _which_clamp(v: Any) -> ValueExercise:
    rows = "\n".join(f"- **{'ABCD'[i]}** — {COMPILES[c]}" for i, c in enumerate(v.order))
    label = {c: "ABCD"[i] for i, c in enumerate(v.order)}
    return ValueExercise(
        "ch04.which_clamp", "Which compiles does CheckedIo change?",
        "CubeCL's `add` (no bounds guard of its own) is compiled four times — under cubelab's "
        "default CheckedIo rule (CubeCL 0.11.3's) and under `checked_io=\"fixed\"`, each with "
        f"`launch` and with `launch_unchecked` — labelled in your order:\n\n{rows}\n\nIn which "
        "compiles does the CheckedIo pass clamp an index (`min(index, len - 1)`)? Answer with a "
        "set of labels, e.g. `{\"A\"}`, or `set()` for none.",
        "The pass only rewrites index ops marked *checked*, and only `launch` (ExecutionMode."
        "Checked) marks them. Under 0.11.3's rule it also needs the index's base to *be* a "
        "runtime array — but a global buffer is a *pointer to* one, so that rule never fires on "
        "a buffer. The fixed rule drops that condition.",
        nudge="Two conditions must both hold for a clamp: which launcher marks indices as "
        "checked, and which rule matches a global buffer?",
        worked="A worked step on another kernel: saxpy, with `launch` under the fixed rule, gets "
        "three clamps (x[i], y[i] read, y[i] written); the same under the default rule gets "
        "none, because its index base is a pointer to the array, not the array.",
        misconceptions=[
            Misconception("launch always clamps", lambda v: {
                "ABCD"[i] for i, (rule, checked) in enumerate(v.order) if checked},
                "That has `launch` clamp under every rule. Under CubeCL 0.11.3's rule (the "
                "default here) the pass never matches a global buffer: its base is a pointer."),
            Misconception("nothing ever clamps", set(),
                          "That has the pass never fire. Under the fixed rule it clamps every "
                          "checked index — and `launch` marks them checked."),
        ],
        code="add.launch[f32](client, one, CubeDim.new_1d(8), x, x, out, False)          "
        "# Checked\nadd.launch_unchecked[f32](client, one, CubeDim.new_1d(8), x, x, out, False)"
        "  # Unchecked\nclient.set_compilation_options(checked_io=\"fixed\")   # or the default",
        value=lambda c: _changed(c, v.order),
        explanation=f"Only {label[('fixed', True)]}: the fixed rule, with `launch`.",
    )


# -- 4.2 how many clamps does the fixed rule add? (numeric) -------------------------------------

@cube(launch=True)  # noqa: F405
def sum4(x: Slice[F], y: Slice[F], z: Slice[F], w: Slice[F], out: SliceMut[F]):  # noqa: F405
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS] + z[ABSOLUTE_POS] + w[ABSOLUTE_POS]  # noqa


@cube(launch=True)  # noqa: F405
def sum_and_product(x: Slice[F], y: Slice[F], s: SliceMut[F], p: SliceMut[F]):  # noqa: F405
    s[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS]  # noqa: F405
    p[ABSOLUTE_POS] = x[ABSOLUTE_POS] * y[ABSOLUTE_POS]  # noqa: F405


@cube(launch=True)  # noqa: F405
def blur3(x: Slice[F], out: SliceMut[F], edge: SliceMut[F]):  # noqa: F405
    i = ABSOLUTE_POS  # noqa: F405
    out[i] = x[i] + x[i + 1] + x[i + 2]
    edge[i] = x[i + 2] - x[i]


CLAMP_KERNELS = [(sum4, 5, 4, 1), (sum_and_product, 6, 4, 2), (blur3, 7, 5, 2)]


def _launch_kernel(kernel: Any) -> Any:
    def launch(client: Any) -> None:
        args = []
        for p in kernel.params:
            h = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))  # noqa
            args.append(BufferArg.from_raw_parts(h, 16))  # noqa: F405
        kernel.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), *args)  # noqa: F405
    return launch


@variants("ch04.clamps_when_fixed", [dict(kernel=i) for i in range(len(CLAMP_KERNELS))])
def _clamps_when_fixed(v: Any) -> ValueExercise:
    kernel, _, reads, writes = CLAMP_KERNELS[v.kernel]
    import inspect as _inspect
    import textwrap

    source = textwrap.dedent(_inspect.getsource(kernel.fn)).replace("  # noqa: F405", "") \
        .replace("  # noqa", "")
    return ValueExercise(
        "ch04.clamps_when_fixed", "How many clamps does the fixed rule add?",
        "With `client.set_compilation_options(checked_io=\"fixed\")`, your kernel (below) is "
        "launched with `launch`. How many `min(index, len - 1)` clamps (`arith.min` ops) does the "
        "CheckedIo pass put into its IR?",
        "The fixed rule rewrites every checked index into a global buffer, reads and writes "
        "alike (CubeCL's `index` and `index_mut` are both checked): one clamp per indexing "
        "expression in the body, even where two of them index the same item.",
        nudge="Count the places in the body where a buffer is indexed, on both sides of `=`.",
        worked="A worked step on another kernel: `out[i] = x[i] * x[i]` indexes three times — "
        "x[i] twice (two separate index ops, though they read the same item) and out[i] once: "
        "three clamps.",
        misconceptions=[
            Misconception("only reads are clamped", reads,
                          "That clamps only the reads. A write through `out[i] = ...` is a "
                          "checked index too (CubeCL's `index_mut`)."),
            Misconception("only writes are clamped", writes,
                          "That clamps only the writes. Reads are checked indices too (CubeCL's "
                          "`index`), and a read past the end is what a clamp is for."),
        ],
        code=f"client.set_compilation_options(checked_io=\"fixed\")\n\n{source.rstrip()}\n\n"
        f"{kernel.__name__}.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), ...)",
        value=lambda c: _clamps(_compile(c, _launch_kernel(kernel), "fixed")),
        explanation="One clamp per checked index op.",
    )


# -- 4.3 what a line of the MSL says about the launch (numeric) --------------------------------------

def _saxpy_2d(dim: tuple[int, int]) -> Any:
    def launch(client: Any) -> None:
        n = 4 * dim[0] * dim[1]
        x = client.create_from_slice(f32.as_bytes(np.arange(n, dtype=np.float32)))  # noqa: F405
        y = client.create_from_slice(f32.as_bytes(np.ones(n, dtype=np.float32)))  # noqa: F405
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_2d(*dim), 4, 2.0,  # noqa: F405
                          BufferArg.from_raw_parts(x, n), BufferArg.from_raw_parts(y, n))  # noqa
    return launch


def _absolute_pos_constant(msl: str) -> int:
    """Read from MSL the constant `ABSOLUTE_POS = cube * C + thread_index` multiplies by."""
    defs = dict(re.findall(r"uint32_t const (v\d+) = (.+);", msl))
    tid = next(v for v, e in defs.items() if e.startswith("uint32_t(thread_index_in_threadgroup"))
    total = next(e for e in defs.values() if re.fullmatch(rf"v\d+ \+ {tid}", e))
    product = defs[total.split(" + ")[0]]
    const = product.split(" * ")[1]
    return int(defs[const])


@variants("ch04.msl_cube_dim", [dict(dim=(4, 2), count=3), dict(dim=(4, 4), count=2),
                                dict(dim=(8, 4), count=5)])
def _msl_cube_dim(v: Any) -> ValueExercise:
    return ValueExercise(
        "ch04.msl_cube_dim", "A constant in the MSL",
        f"saxpy (width 4) is launched with `CubeCount.Static({v.count})` and "
        f"`CubeDim.new_2d{v.dim}`. Metal has no builtin for `ABSOLUTE_POS`: the MSL computes the "
        "cube's linear position from `threadgroup_position_in_grid` and `threadgroups_per_grid`, "
        "multiplies it by a compile-time constant, and adds `thread_index_in_threadgroup`. What "
        "is that constant?",
        "ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS, and CUBE_DIM — the units of one cube, "
        "all axes multiplied — is a compile-time constant, because cube_dim is in the KernelId. "
        "The cube count is not compiled in: it is read at run time (threadgroups_per_grid).",
        nudge="Which of the launch's numbers are compiled into the kernel, and which does the "
        "kernel read at run time?",
        worked="A worked step on another launch: `CubeDim.new_1d(4)` (the chapter's saxpy) gives "
        "`uint32_t const v14 = 4;` and `v15 = v13 * v14`: cube position times 4 units, then plus "
        "the unit's index.",
        misconceptions=[
            Misconception("the constant is the cube count", lambda v: v.count,
                          "The cube count is not compiled in (it is not in the KernelId): the "
                          "kernel reads it from threadgroups_per_grid at run time."),
            Misconception("only the x axis counts", lambda v: v.dim[0],
                          "CUBE_DIM is the units of a whole cube: x times y (times z)."),
            Misconception("the vector width", 4,
                          "The width decides the element type (float_4), not the positions."),
        ],
        code=f"saxpy.launch[f32](client, CubeCount.Static({v.count}), CubeDim.new_2d{v.dim}, "
        "4, 2.0, x, y)",
        value=lambda c: _absolute_pos_constant(
            _compile(c, _saxpy_2d(v.dim)).extra_sources["msl"]),
        explanation="CUBE_DIM, compiled in.",
    )


# -- 4.4 read the IR, fix the copy -------------------------------------------------------------------

def _copy_inputs(g: Geometry) -> dict[str, np.ndarray]:
    return {"x": np.arange(1, g.n + 1, dtype=np.float32) * 10,
            "out": np.full(g.n, -1.0, dtype=np.float32)}


def _launch_copy(kernel: Any, client: Any, h: dict[str, Any], g: Geometry) -> None:
    g.launch(kernel.launch, client, h, "x", "out")


@cube(launch=True)  # noqa: F405
def copy_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The chapter's broken copy: its index is one too far."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 1]  # noqa: F405


@cube(launch=True)  # noqa: F405
def copy_guarded_twice(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """Keeps the shift and hides the read past the end: out is still shifted."""
    if ABSOLUTE_POS + 1 < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 1]  # noqa: F405


@variants("ch04.fix_the_copy", [dict(yours=c) for c in
                                (Geometry(13, 2, 8), Geometry(6, 3, 2), Geometry(20, 5, 4))])
def _fix_the_copy(v: Any) -> KernelExercise:
    return KernelExercise(
        "ch04.fix_the_copy", "Read the IR, fix the copy",
        "`copy` should copy every item of `x` into `out` (8 items, two cubes of four units; and "
        f"yours: {v.yours}). Its output is shifted and ends in 0. Find the bug in its IR or "
        "WGSL and fix the kernel.",
        "In the IR, follow the value that indexes `x`: it is ABSOLUTE_POS plus one. Every unit "
        "reads its neighbour's item, and the last one reads past the end of x, which wgpu "
        "answers with 0.",
        (copy_template, copy_guarded_twice),
        nudge="Print `inspect.ir(inspect.instance(copy, cube_dim=CubeDim.new_1d(4)))` and find "
        "the `memory.index` of `x`: which value is its index?",
        worked="A worked step on another kernel: in `negate`'s IR, `%v9 = memory.index %v1, %v8` "
        "with `%v8 = arith.add %v7, %c2` reads two items ahead of ABSOLUTE_POS (`%v7`); the "
        "`arith.add` is the line to fix.",
        cases=(Geometry(8, 2, 4), v.yours),
        inputs=_copy_inputs, spec=lambda b, c: {"out": b["x"].copy()}, launch=_launch_copy,
    )
