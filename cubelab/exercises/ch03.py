"""Chapter 3 · KernelId and the pipeline cache (seed 000, "one function, several kernels" and the
quiz's answer): what is in the key, what is not, and predicting what a launch changes."""

from __future__ import annotations

from typing import Any

import numpy as np

from cubelab.exercises import _COMPILE_HINT, register
from cubelab.exercises.kinds import CountExercise, KernelIdDiffExercise
from cubelab.exercises.seed000 import add, saxpy
from cubelab.exercises.seed_quizzes import _run_add
from cubelab.prelude import BufferArg, CubeCount, CubeDim, f32

FOUR_LAUNCHES = CountExercise(
    "ch03.four_launches", "One add, four launches: how many compiles?",
    "`run_add(checked, relu)` launches the seed's `add` once on 6 elements with 8 units; "
    "`checked` picks `launch` or `launch_unchecked`. On a cleared cache the program calls "
    "(True, False), (False, False), (True, True), (True, False). How many times does "
    "`[START_KERNEL_COMPILATION]` appear in the debug log?",
    _COMPILE_HINT,
    (4, 2, 1),
    code="run_add(checked=True,  relu=False)\nrun_add(checked=False, relu=False)\n"
    "run_add(checked=True,  relu=True)\nrun_add(checked=True,  relu=False)\n",
    launches=[_run_add(True, False), _run_add(False, False), _run_add(True, True),
              _run_add(True, False)],
    explanation="Launch 2 changes the mode, launch 3 the Comptime `relu`; launch 4 has launch "
    "1's KernelId and reuses its pipeline.",
)


def _add(checked: bool = True, relu: bool = False, cubes: int = 1, fill: float = 1.0) -> Any:
    def launch(client: Any) -> None:
        x = client.create_from_slice(f32.as_bytes(np.full(8 * cubes, fill, np.float32)))
        out = client.empty(32 * cubes)
        launcher = add.launch if checked else add.launch_unchecked
        launcher[f32](client, CubeCount.Static(cubes), CubeDim.new_1d(8),
                      BufferArg.from_raw_parts(x, 8 * cubes),
                      BufferArg.from_raw_parts(x, 8 * cubes),
                      BufferArg.from_raw_parts(out, 8 * cubes), relu)
    return launch


DIFF_UNCHECKED = KernelIdDiffExercise(
    "ch03.diff_unchecked", "launch versus launch_unchecked",
    "`add.launch[f32](...)` and then the same call as `add.launch_unchecked[f32](...)`, same "
    "buffers, same `relu`. Which KernelId fields differ?",
    "launch and launch_unchecked generate the same code (under the seed's CheckedIo rule) but "
    "hand a different execution mode to the kernel's settings.",
    ("none", "mode, relu", "cube_dim"),
    code="add.launch[f32](client, one, CubeDim.new_1d(8), x, y, out, False)\n"
    "add.launch_unchecked[f32](client, one, CubeDim.new_1d(8), x, y, out, False)",
    first=_add(True), second=_add(False),
    explanation="The execution mode is a field of the key, so the unchecked launch compiles "
    "again even though its source is the same.",
)

DIFF_CUBE_COUNT = KernelIdDiffExercise(
    "ch03.diff_cube_count", "More cubes, other data",
    "`add` is launched with `CubeCount.Static(1)` on 8 items of 1.0, then with "
    "`CubeCount.Static(4)` on 32 items of 7.0 (same CubeDim, mode and `relu`). Which KernelId "
    "fields differ? (Answer \"none\" if none.)",
    "The KernelId holds what is compiled into the kernel. The number of cubes is a dispatch "
    "parameter and the data lives in buffers: neither is compiled in.",
    ("cube_count", "cube_dim", "cube_count, x"),
    code="add.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), x8, x8, out8, False)\n"
    "add.launch[f32](client, CubeCount.Static(4), CubeDim.new_1d(8), x32, x32, out32, False)",
    first=_add(cubes=1, fill=1.0), second=_add(cubes=4, fill=7.0),
    explanation="Same KernelId: the second launch is a cache hit on the first one's pipeline.",
)


def _saxpy(width: int) -> Any:
    def launch(client: Any) -> None:
        x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.ones(16, dtype=np.float32)))
        saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(16 // width), width, 2.0,
                          BufferArg.from_raw_parts(x, 16), BufferArg.from_raw_parts(y, 16))
    return launch


DIFF_WIDTH = KernelIdDiffExercise(
    "ch03.diff_width", "Another vector width",
    "saxpy over 16 floats with `vector_size = 4` and `CubeDim.new_1d(4)`, then with "
    "`vector_size = 2` and `CubeDim.new_1d(8)` (one unit per vector). Which KernelId fields "
    "differ?",
    "Look at everything that changed in the launch call and ask, for each, whether it is "
    "compiled into the kernel: the width becomes the Info's `n`, the units per cube become "
    "`@workgroup_size`.",
    ("n", "cube_dim", "vector_size"),
    code="saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(4), 4, 2.0, x, y)\n"
    "saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), 2, 2.0, x, y)",
    first=_saxpy(4), second=_saxpy(2),
    explanation="Two fields: `cube_dim` (4 → 8) and the Info's `n` (4 → 2).",
)

register(FOUR_LAUNCHES, DIFF_UNCHECKED, DIFF_CUBE_COUNT, DIFF_WIDTH)
