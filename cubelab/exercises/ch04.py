"""Chapter 4 · Reading IR, WGSL and MSL (seed 000, "looking at the generated MSL"): what the
passes changed, what saxpy's MSL is made of, and a bug found by reading generated code."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from cubelab.exercises import register
from cubelab.exercises.kinds import CountExercise, KernelExercise, ValueExercise
from cubelab.exercises.seed000 import add, saxpy
from cubelab.ir.passes import DEFAULT_CHECKED_IO
from cubelab.prelude import *  # noqa: F403
from cubelab.runtime import events as ev


def _compile_saxpy(client: Any) -> Any:
    """Launch saxpy (width 4) on a cleared cache and return the CompileFinished event."""
    client.clear_cache()
    with client.events.record(ev.CompileFinished) as rec:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))  # noqa: F405
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))  # noqa: F405
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0,  # noqa: F405
                          BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))  # noqa
        client.read_one(y)
        client.sync()
    done, = rec.of(ev.CompileFinished)
    return done


def _checked_io_changed(client: Any) -> bool:
    return any(before != after for name, before, after in _compile_saxpy(client).passes
               if name == "checked-io")


CHECKED_IO_BY_DEFAULT = ValueExercise(
    "ch04.checked_io_by_default", "Does CheckedIo change anything?",
    "saxpy is launched with `launch` (ExecutionMode.Checked), so the `CheckedIo` pass runs on its "
    "IR. With cubelab's default settings, does that pass change the IR? Answer True or False.",
    "The pass matches an index whose base *is* a runtime array (CubeCL 0.11.3's rule, cubelab's "
    "default); a global buffer's value is a *pointer to* a runtime array. Compare the pass's "
    "before and after in `inspect.passes`.",
    (True,),
    value=_checked_io_changed,
    explanation="Under the seed's rule the pass never fires on global buffers: before and after "
    "are the same text, and launch and launch_unchecked compile to the same code.",
)


def _add_fixed(client: Any) -> None:
    client.set_compilation_options(checked_io="fixed")
    try:
        x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))  # noqa: F405
        out = client.empty(32)
        add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8),  # noqa: F405
                        BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(x, 8),  # noqa
                        BufferArg.from_raw_parts(out, 8), False)  # noqa: F405
        client.read_one(out)
    finally:
        client.set_compilation_options(checked_io=DEFAULT_CHECKED_IO)


CLAMPS_WHEN_FIXED = CountExercise(
    "ch04.clamps_when_fixed", "How many clamps does the fixed rule add?",
    "With `client.set_compilation_options(checked_io=\"fixed\")`, `add` (relu = False) is "
    "launched with `launch`. How many `min(index, len - 1)` clamps (`arith.min` ops) does the "
    "CheckedIo pass put into its IR?",
    "The fixed rule rewrites every checked index into a global buffer — reads and writes alike "
    "(CubeCL's `index` and `index_mut` are both checked). Count the accesses in `add`'s body.",
    (2, 0, 6),
    code="client.set_compilation_options(checked_io=\"fixed\")\n"
    "add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), x, x, out, False)",
    launches=[_add_fixed],
    count=lambda r: sum(e.ir.count("arith.min") for e in r.events
                        if isinstance(e, ev.CompileFinished)),
    what="clamps",
    explanation="x[i], y[i] and out[i]: two reads and one write, each clamped.",
)


def _msl_vector_type(client: Any) -> str:
    msl = _compile_saxpy(client).extra_sources["msl"]
    m = re.search(r"struct\s+alignas\(\d+\)\s+(\w+)", msl)
    return m.group(1) if m else ""


MSL_VECTOR_TYPE = ValueExercise(
    "ch04.msl_vector_type", "What does Vector[f32, 4] become in MSL?",
    "saxpy is compiled with `vector_size = 4`. In the generated MSL, what is the name of the type "
    "that `Vector[f32, 4]` becomes? (Answer with the name as a string.)",
    "Read the MSL's first struct: CubeCL's Metal backend does not use Metal's native `float4` "
    "but its own aligned struct, and does the arithmetic component by component.",
    ("float4", "vec4<f32>"),
    value=_msl_vector_type,
    explanation="`struct alignas(16) float_4 { float i_0; ... }`, read component by component "
    "(`v20.i_0` ... `i_3`), as in the seed.",
)


def _shift_inputs() -> dict[str, np.ndarray]:
    return {"x": np.arange(1, 9, dtype=np.float32) * 10,
            "out": np.full(8, -1.0, dtype=np.float32)}


def _launch_shift(kernel: Any, client: Any, h: dict[str, Any]) -> None:
    kernel.launch(client, CubeCount.Static(2), CubeDim.new_1d(4),  # noqa: F405
                  BufferArg.from_raw_parts(h["x"], 8),  # noqa: F405
                  BufferArg.from_raw_parts(h["out"], 8))  # noqa: F405


@cube(launch=True)  # noqa: F405
def copy_template(x: Slice[f32], out: SliceMut[f32]):  # noqa: F405
    """The chapter's broken copy: its index is one too far."""
    if ABSOLUTE_POS < x.len():  # noqa: F405
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 1]  # noqa: F405


FIX_THE_COPY = KernelExercise(
    "ch04.fix_the_copy", "Read the IR, fix the copy",
    "`copy` should copy the 8 items of `x` into `out` (two cubes of four units). Its output is "
    "shifted and ends in 0. Find the bug in its IR or WGSL and fix the kernel.",
    "In the IR, follow the value that indexes `x`: it is ABSOLUTE_POS plus one. The last unit "
    "then reads past the end of x, which wgpu answers with 0.",
    (copy_template,),
    inputs=_shift_inputs, spec=lambda b: {"out": b["x"].copy()}, launch=_launch_shift,
)

register(CHECKED_IO_BY_DEFAULT, CLAMPS_WHEN_FIXED, MSL_VECTOR_TYPE, FIX_THE_COPY)
