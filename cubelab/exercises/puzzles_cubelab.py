"""Puzzles only cubelab can pose (notebooks/15_puzzles_cubelab.ipynb), and five on plane ops.

Twenty-four puzzles in the format of `puzzles.py` — a spec, a template with a blank, a fixed
geometry or program, a check that runs the real thing — about what a GPU puzzle set that only
compares output values cannot see: the pipeline cache (compiles counted from the runtime's
events), expansion (what the compiled IR still holds; a panic while a kernel is built),
failure as buffer state (which buffers carry it, how few relaunches repair them), streams and
capture (which streams had to wait, what a replay compiles), plane ops (whose results differ per
device: 8 lanes on lavapipe, 32 on the CPU runtime and on NVIDIA GPUs), and cost (coalescing
efficiency and bank conflicts, measured by the access map's instruments on the device's planes).

Each puzzle is declared with its tiered hints (a nudge, the concept, a worked step on another
program — never the puzzle's own answer), its wrong answers (the first attempt a student writes,
and what each misconception writes), and a `PuzzleInfo`: its category, why only cubelab can pose
it (empty for the plane puzzles, which a warp-puzzle set could pose), and its figure — the
access map of the first attempt (or of the kernel the program launches), committed as
`notebooks/figures/puzzles_cubelab/<name>.svg` by `write_all_figures`.

Why this module is long (~1700 lines): it is data — twenty-four puzzles' stories, templates,
programs and hints, each a screen of text — and splitting it by category would scatter the one
list the notebook, the figures and the tests iterate. The machinery is in `puzzle_kinds.py`, the
kernels the programs launch in `puzzle_programs.py`.
"""

from __future__ import annotations

import linecache
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cubelab.errors import BufferFailure, hinted
from cubelab.exercises import register, variants
from cubelab.exercises.base import Misconception
from cubelab.exercises.kinds import CallsExercise, CountExercise, ValueExercise
from cubelab.exercises.puzzle_kinds import (KernelPuzzle, ProgramPuzzle, Rule, Trial,
                                            buffers_match, coalesced, compiles, conflict_free,
                                            dispatches, has_op, no_op, phases_at_most)
from cubelab.exercises.puzzle_programs import (EIGHT, ONE, add2, add_ten, arg, double, floats,
                                               inc, neg, pick, read, scale, too_big)
from cubelab.exercises import puzzle_programs
from cubelab.exercises.puzzles import Limits
from cubelab.prelude import CubeCount, CubeDim
from cubelab.runtime import events as ev

__all__ = ["INFO", "PuzzleInfo", "ORDER", "write_all_figures", "puzzle_names"]

PREFIX = "puzzles_cubelab"
FIGURE_DIR = "figures/puzzles_cubelab"


@dataclass(frozen=True)
class PuzzleInfo:
    """What the notebook, the figures and the tests know about one puzzle besides its check."""

    key: str
    category: str  # cache | expansion | failure | streams | plane | cost
    only_cubelab: str  # why no other puzzle set can pose it; "" where one could
    figure: Callable[[Any], Any]  # CPU client -> the AccessMap drawn beside the question
    caption: str  # what the figure shows
    story: str = ""  # for a puzzle whose answer is a value: the markdown above its `.ask()`

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]

    @property
    def image(self) -> str:
        return (f"![the access map of {self.name}]({FIGURE_DIR}/{self.name}.svg)\n\n"
                f"*{self.caption}* (drawn by `AccessMap.to_svg()`)")


INFO: dict[str, PuzzleInfo] = {}
ORDER: list[str] = []  # the notebook's order


def _info(key: str, category: str, only: str, figure: Callable[[Any], Any], caption: str,
          story: str = "") -> None:
    """Record a registered puzzle's figure and category; a kernel or program puzzle's question
    is its description with the rules the run is held to and the figure under it."""
    from cubelab.exercises import EXERCISES

    info = INFO[key] = PuzzleInfo(key, category, only, figure, caption, story)
    ORDER.append(key)
    ex = EXERCISES[key]
    if isinstance(ex, KernelPuzzle):
        rules = "; ".join(r.says for r in ex.rules)
        ex.question = (ex.statement() + (f"\n\nChecked on the run, too: {rules}." if rules
                                         else "") + "\n\n" + info.image)
    elif isinstance(ex, ProgramPuzzle):
        ex.question = ex.describe() + "\n\n" + info.image


def puzzle_names() -> list[str]:
    return [INFO[k].name for k in ORDER]


def _define(key: str, source: str) -> dict[str, Any]:
    """Run a template's (or a wrong answer's) source as a notebook cell would, with the
    notebook's imports; its names. Registered in linecache so `@cube` can read its source."""
    text = ("import numpy as np\nfrom cubelab.prelude import *\n"
            "from cubelab.exercises.puzzle_programs import *\n" + textwrap.dedent(source))
    filename = f"<puzzle {key}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": f"puzzle_{key.replace('.', '_')}"}
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - our own puzzle text
    return ns


def _answer_of(key: str, source: str, name: str) -> Any:
    return _define(key, source)[name]


def _template(source: str) -> str:
    return textwrap.dedent(source).strip("\n") + "\n\nanswer = ...\n"


def _f(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def _cpu_map(launcher: Any, client: Any, count: Any, dim: Any, *args: Any) -> Any:
    from cubelab.inspect import access_map

    return access_map(launcher, client, count, dim, *args, plane_width=32)


def _program_figure(kernel: Any, count: Any, dim: Any, *arrays: np.ndarray,
                    scalars: tuple[Any, ...] = ()) -> Callable[[Any], Any]:
    """The figure of a program puzzle: one launch of a kernel its program makes."""
    def draw(client: Any) -> Any:
        args = [arg(floats(client, a), a.size) for a in arrays]
        return _cpu_map(kernel.launch, client, count, dim, *args, *scalars)
    return draw


def _kernel_figure(key: str) -> Callable[[Any], Any]:
    return lambda client: get_puzzle(key).first_try_map()


def get_puzzle(key: str) -> Any:
    from cubelab.exercises import get

    return get(key)


# =================================================================================================
# The cache
# =================================================================================================

_X16 = _f(np.arange(16) - 8)
_AFFINE_LAUNCHES = ((2.0, False), (3.0, False), (5.0, True), (7.0, True))


def _play_affine(answer: Any, client: Any, trial: Trial) -> None:
    x, out = floats(client, _X16), floats(client, np.zeros(16))
    for i, (a, relu) in enumerate(_AFFINE_LAUNCHES):
        answer.launch(client, CubeCount.Static(2), CubeDim.new_1d(8), arg(x, 16),
                      arg(out, 16), a, relu)
        trial.read(f"out after launch {i + 1}", out)


def _affine_spec(t: Trial) -> dict[str, np.ndarray]:
    return {f"out after launch {i + 1}": np.maximum(a * _X16, 0) if relu else a * _X16
            for i, (a, relu) in enumerate(_AFFINE_LAUNCHES)}


_AFFINE_FIRST = """
@cube(launch=True)
def affine(x: Slice[f32], out: SliceMut[f32], a: Comptime[float], relu: Comptime[bool]):
    # FILL ME IN: the signature decides what is compiled in; the body may stay as it is
    if ABSOLUTE_POS < out.len():
        v = x[ABSOLUTE_POS] * f32(a)
        if relu:
            v = max(v, f32(0.0))
        out[ABSOLUTE_POS] = v
"""

_AFFINE_ALL_RUNTIME = """
@cube(launch=True)
def affine(x: Slice[f32], out: SliceMut[f32], a: f32, relu: u32):
    if ABSOLUTE_POS < out.len():
        v = x[ABSOLUTE_POS] * a
        if relu != u32(0):
            v = max(v, f32(0.0))
        out[ABSOLUTE_POS] = v
"""

_key = f"{PREFIX}.cache_twice"
register(ProgramPuzzle(
    _key, "1 · Four launches, two compiles", "",
    "A `Comptime` argument is part of the KernelId: every new value of it compiles a new "
    "pipeline. A runtime scalar (`a: f32`) is data the launch hands over: one pipeline serves "
    "every value. Compile in only what removes code from the kernel.",
    (_answer_of(_key, _AFFINE_FIRST, "affine"), _answer_of(_key, _AFFINE_ALL_RUNTIME, "affine")),
    nudge="Of `a` and `relu`, which one changes what the compiled code *is*, and which only "
    "changes a number the code reads?",
    worked="Another kernel: `clip(x, out, lo: Comptime[float], mode: Comptime[str])` launched "
    "with (lo, mode) = (0, \"a\"), (1, \"a\"), (0, \"b\") compiles 3 times; with `lo: f32` it "
    "compiles twice, once per mode.",
    story="`affine` computes `out = a · x`, then a ReLU when `relu` is true. The program below "
    "launches it four times; as written it compiles **four** pipelines. Change the signature so "
    "the four launches compile **exactly twice** — and still give the right values. The check "
    "clears the cache, runs the program and counts `CompileFinished` events.",
    template=_template(_AFFINE_FIRST), play=_play_affine, expects="kernel",
    rules=(buffers_match(_affine_spec), compiles(2)),
    program="x = floats(client, np.arange(16) - 8)        # -8 ... 7\n"
    "out = floats(client, np.zeros(16))\n"
    "for a, relu in [(2.0, False), (3.0, False), (5.0, True), (7.0, True)]:\n"
    "    answer.launch(client, CubeCount.Static(2), CubeDim.new_1d(8), arg(x, 16), "
    "arg(out, 16), a, relu)\n    read(client, out)",
))
_info(_key, "cache", "the check counts compiles from the runtime's cache events on a cleared "
      "cache: a puzzle set that only compares outputs cannot see a pipeline",
      _program_figure(add_ten, ONE, EIGHT, _X16[:8], np.zeros(8, np.float32)),
      "One launch of an elementwise kernel: every unit reads its item and writes its item. All "
      "four launches touch the same cells; what differs is what is compiled in")


_SIZES = (24, 100, 256, 200)


def _play_geometry(answer: Any, client: Any, trial: Trial) -> None:
    for n in _SIZES:
        x, out = floats(client, np.arange(n)), floats(client, np.zeros(n))
        count, dim = answer(n)
        add_ten.launch(client, count, dim, arg(x, n), arg(out, n))
        trial.read(f"out ({n} items)", out)


def _whole_planes(t: Trial) -> str | None:
    units_per_cube = sorted({e.kernel_id.cube_dim.num_units for e in t.events
                             if isinstance(e, ev.LaunchIssued)})
    for units in units_per_cube:
        if units % 32:
            return f"a launch used cubes of {units} unit{'s' * (units != 1)}."
    return None


_GEOMETRY_FIRST = """
def geometry(n):
    # FILL ME IN: one cube of n units compiles once per n; choose a geometry that does not
    return CubeCount.Static(1), CubeDim.new_1d(n)
"""

_GEOMETRY_ONE_UNIT = """
def geometry(n):
    return CubeCount.Static(n), CubeDim.new_1d(1)
"""

_key = f"{PREFIX}.cache_one_pipeline"
register(ProgramPuzzle(
    _key, "2 · Four sizes, one pipeline", "",
    "`cube_dim` is compiled into the kernel (WGSL's `@workgroup_size`); the cube count is only "
    "a dispatch parameter. Fix the units per cube and let the number of cubes grow with n: "
    "⌈n / units⌉ cubes — the kernel's guard idles the spare units of the last cube.",
    (_answer_of(_key, _GEOMETRY_FIRST, "geometry"), _answer_of(_key, _GEOMETRY_ONE_UNIT,
                                                                "geometry")),
    nudge="Which of the two, the cube count or the cube dim, is a field of the KernelId?",
    worked="For n = 10 with cubes of 4 units: `CubeCount.Static(3)`, `CubeDim.new_1d(4)` — "
    "12 units; units 10 and 11 fail the guard `ABSOLUTE_POS < out.len()`.",
    story="`add_ten` (guarded: `if ABSOLUTE_POS < out.len()`) runs on four arrays of 24, 100, "
    "256 and 200 items, with the geometry your `geometry(n)` returns. One cube of `n` units "
    "compiles four pipelines. Make the four launches compile **once**, with cubes of whole "
    "planes — a multiple of 32 units (a warp on NVIDIA; whole planes on every device here).",
    template=_template(_GEOMETRY_FIRST), play=_play_geometry, params=("n",),
    rules=(buffers_match(lambda t: {f"out ({n} items)": np.arange(n) + 10.0 for n in _SIZES}),
           compiles(1), Rule("cubes of a multiple of 32 units", _whole_planes)),
    program="for n in (24, 100, 256, 200):\n"
    "    x, out = floats(client, np.arange(n)), floats(client, np.zeros(n))\n"
    "    count, dim = answer(n)\n"
    "    add_ten.launch(client, count, dim, arg(x, n), arg(out, n))",
))
_info(_key, "cache", "the check counts pipelines from the cache's events: which geometry "
      "compiles once is invisible to a check of values",
      _program_figure(add_ten, ONE, CubeDim.new_1d(32), _f(np.arange(24)),
                      np.zeros(24, np.float32)),
      "`add_ten` on 24 items in one cube of 32 units: units 24 to 31 fail the guard and touch "
      "nothing")


def _play_warm_up(answer: Any, client: Any, trial: Trial) -> None:
    x = floats(client, range(8))
    out, out2 = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    with trial.watch("warm-up"):
        answer(client, x, out, out2)
    client.write(x, _f(np.arange(8) + 10).tobytes())
    with trial.watch("work"):
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        inc.launch(client, ONE, EIGHT, arg(out))
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x),
                     arg(out2), 3.0)
    trial.read("out", out)
    trial.read("out2", out2)


_WARM_FIRST = """
def warm_up(client, x, out, out2):
    # FILL ME IN: compile everything the work launches, and run none of it
    scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
"""

_WARM_MISSES_ONE = """
def warm_up(client, x, out, out2):
    with dry_run():
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        inc.launch(client, ONE, EIGHT, arg(out))
"""

_key = f"{PREFIX}.cache_warm_up"
register(ProgramPuzzle(
    _key, "3 · A warm-up that runs nothing", "",
    "A launch inside `with dry_run():` is compiled (or found in the cache) on the device thread "
    "exactly as it would run — the same KernelId — and then dispatches nothing and claims no "
    "buffer. To warm the cache, issue one launch of every KernelId the work uses: the same "
    "kernel, cube dim, mode and Comptime values; the data and the scalars do not matter.",
    (_answer_of(_key, _WARM_FIRST, "warm_up"), _answer_of(_key, _WARM_MISSES_ONE, "warm_up")),
    nudge="What does a launch inside `with dry_run():` do on the device thread, and what does "
    "it skip?",
    worked="A program that runs `neg` with cubes of 8 and of 16: `with dry_run(): neg.launch"
    "(..., CubeDim.new_1d(8), ...); neg.launch(..., CubeDim.new_1d(16), ...)` — two compiles "
    "now, none later, nothing dispatched.",
    story="The *work* below must not compile anything (think of a latency-critical loop). Write "
    "`warm_up` so that the work compiles **zero** times — and the warm-up itself **dispatches "
    "nothing** (it may not change `out` or `out2`, which the work fills).",
    template=_template(_WARM_FIRST), play=_play_warm_up, params=("client", "x", "out", "out2"),
    rules=(dispatches(0, "warm-up"), compiles(0, window="work"),
           buffers_match(lambda t: {"out": 2 * (np.arange(8) + 10.0) + 1,
                                    "out2": 3 * (np.arange(8) + 10.0)})),
    program="answer(client, x, out, out2)                  # the warm-up\n"
    "client.write(x, ...)                          # this run's data\n"
    "# the work:\n"
    "scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)\n"
    "inc.launch(client, ONE, EIGHT, arg(out))\n"
    "scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)",
))
_info(_key, "cache", "the check reads which launches were dispatched and which compiled from "
      "the runtime's events (`LaunchDispatched`, `CompileFinished`), window by window",
      _program_figure(scale, CubeCount.Static(2), CubeDim.new_1d(4),
                      _f(np.arange(8)), np.zeros(8, np.float32), scalars=(3.0,)),
      "The work's last launch, `scale` in 2 cubes of 4 units: a cube dim of its own, so a "
      "KernelId of its own")


_TUNE_SIZES = (100, 120, 1000, 1024)


def _play_tuner(answer: Any, client: Any, trial: Trial) -> None:
    from cubelab.runtime.autotune import Tuner

    count, dim = CubeCount.Static, CubeDim.new_1d
    tuner = Tuner(client, "scale", key=answer, warmups=0, samples=1)

    @tuner.candidate
    def cubes_of_8(x: Any, out: Any, n: int) -> None:
        scale.launch(client, count(-(-n // 8)), dim(8), arg(x, n), arg(out, n), 2.0)

    @tuner.candidate
    def cubes_of_32(x: Any, out: Any, n: int) -> None:
        scale.launch(client, count(-(-n // 32)), dim(32), arg(x, n), arg(out, n), 2.0)

    for i, n in enumerate(_TUNE_SIZES, 1):
        x, out = floats(client, np.arange(n)), floats(client, np.zeros(n))
        with trial.watch(f"call {i}"):
            tuner(x, out, n)
        trial.read(f"out of call {i}", out)


def _searches_at(calls: tuple[int, ...]) -> Rule:
    def test(t: Trial) -> str | None:
        searched = tuple(i for i in range(1, len(_TUNE_SIZES) + 1)
                         if t.window(f"call {i}").of(ev.AutotuneStarted))
        if searched == calls:
            return None
        return ("the tuner searched at call" + ("s " if len(searched) != 1 else " ")
                + (", ".join(map(str, searched)) or "no call") + ".")
    return Rule(f"a search at calls {' and '.join(map(str, calls))} only (the others reuse a "
                "winner)", test)


_KEY_FIRST = """
def key(x, out, n):
    # FILL ME IN: which calls may share a winner?
    return n
"""

_key = f"{PREFIX}.autotune_key"
register(ProgramPuzzle(
    _key, "4 · Four calls, two searches", "",
    "A tuner searches when its key function returns a key it has not seen, and reuses the "
    "cached winner for a key it has. A key is a bucket of inputs that should share a winner — "
    "CubeCL anchors sizes to a power of two, so sizes of one magnitude share one search.",
    (_answer_of(_key, _KEY_FIRST, "key"), _answer_of(_key, "def key(x, out, n):\n    return 0\n",
                                                      "key")),
    nudge="When does a tuner search, and when does it reuse what it found?",
    worked="Sizes 30, 60 and 500: the key `n.bit_length()` gives 5, 6, 9 (three searches); the "
    "key `n > 100` gives False, False, True — two searches, 30 and 60 sharing the first.",
    story="A `Tuner` picks between two geometries of `scale` and is called for n = 100, 120, "
    "1000 and 1024. With the key `n` it searches four times (each search compiles and times "
    "both candidates). Write a key so that it searches at the **first and third** calls only: "
    "120 reuses 100's winner, 1024 reuses 1000's.",
    template=_template(_KEY_FIRST), play=_play_tuner, params=("x", "out", "n"),
    rules=(buffers_match(lambda t: {f"out of call {i}": 2.0 * np.arange(n)
                                    for i, n in enumerate(_TUNE_SIZES, 1)}),
           _searches_at((1, 3))),
    program="tuner = Tuner(client, \"scale\", key=answer, warmups=0, samples=1)\n"
    "# candidates: scale in cubes of 8 units, and in cubes of 32\n"
    "for n in (100, 120, 1000, 1024):\n"
    "    tuner(x_n, out_n, n)",
))
_info(_key, "cache", "the check counts the tuner's searches from its events "
      "(`AutotuneStarted`), call by call", _program_figure(
          scale, CubeCount.Static(4), CubeDim.new_1d(32), _f(np.arange(100)),
          np.zeros(100, np.float32), scalars=(2.0,)),
      "One candidate, `scale` in cubes of 32, on n = 100: 4 cubes, the last one's units 100 "
      "to 127 idle")


# =================================================================================================
# Expansion
# =================================================================================================

_ACT_X = _f([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5])


def _play_activate(answer: Any, client: Any, trial: Trial) -> None:
    x, out = floats(client, _ACT_X), floats(client, np.zeros(8))
    for kind in (0, 1, 2):
        answer.launch(client, ONE, EIGHT, arg(x), arg(out), kind)
        trial.read(f"out of kind {kind}", out)


_ACT_FIRST = """
@cube(launch=True)
def activate(x: Slice[f32], out: SliceMut[f32], kind: u32):
    # FILL ME IN: no branch (and no select) may reach the compiled code
    v = x[ABSOLUTE_POS]
    if kind == 0:
        out[ABSOLUTE_POS] = max(v, f32(0.0))
    elif kind == 1:
        out[ABSOLUTE_POS] = abs(v)
    else:
        out[ABSOLUTE_POS] = v * v
"""

_ACT_SELECT = """
@cube(launch=True)
def activate(x: Slice[f32], out: SliceMut[f32], kind: u32):
    v = x[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = select(kind == 0, max(v, f32(0.0)), select(kind == 1, abs(v), v * v))
"""

_key = f"{PREFIX}.comptime_branch"
register(ProgramPuzzle(
    _key, "5 · Branches that never reach the device", "",
    "An `if` on a runtime value becomes an `scf.if` in every pipeline, and `select` computes "
    "both sides. An `if` on a `Comptime` value is decided by Python while the kernel is "
    "expanded: only the taken side reaches the IR, and each value gets its own pipeline.",
    (_answer_of(_key, _ACT_FIRST, "activate"), _answer_of(_key, _ACT_SELECT, "activate")),
    nudge="Which value decides the branch, and when is that value known?",
    worked="`clip(x, out, mode: Comptime[str])` with `if mode == \"low\": ... else: ...`: the "
    "launch with mode \"low\" compiles a kernel holding only the first side — "
    "`inspect.ir` shows no `scf.if` in it.",
    story="`activate` applies one of three activations (0: ReLU, 1: absolute value, 2: square). "
    "The program launches it once per kind. Make every pipeline free of branches: the IR of "
    "each compile may hold no `scf.if`, `scf.switch` or `arith.select` (one cube of 8 units "
    "for 8 items: no guard is needed). The check reads the IR of every compile of the run.",
    template=_template(_ACT_FIRST), play=_play_activate, expects="kernel",
    rules=(buffers_match(lambda t: {"out of kind 0": np.maximum(_ACT_X, 0),
                                    "out of kind 1": np.abs(_ACT_X),
                                    "out of kind 2": _ACT_X * _ACT_X}),
           no_op(r"scf\.(if|switch)|arith\.select", "branch or select")),
    program="x = floats(client, [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5])\n"
    "for kind in (0, 1, 2):\n"
    "    answer.launch(client, ONE, EIGHT, arg(x), arg(out), kind)",
))
_info(_key, "expansion", "the check reads the IR each compile produced (`CompileFinished.ir`): "
      "what Python decided at expansion is visible only there",
      _program_figure(add_ten, ONE, EIGHT, _ACT_X, np.zeros(8, np.float32)),
      "Each unit reads one item and writes one: the branches change what a unit computes, not "
      "what it touches")


_POLY_X = _f([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
_POLY_C = _f([0.5, -1.0, 2.0, 0.25, 3.0])


def _play_poly(answer: Any, client: Any, trial: Trial) -> None:
    x, c, out = floats(client, _POLY_X), floats(client, _POLY_C), floats(client, np.zeros(8))
    for degree in (3, 5):
        answer.launch(client, ONE, EIGHT, arg(x), arg(c, 5), arg(out), degree)
        trial.read(f"out of degree {degree}", out)


def _horner(degree: int) -> np.ndarray:
    acc = np.zeros(8)
    for k in range(degree):
        acc = acc * _POLY_X + _POLY_C[k]
    return acc


_POLY_FIRST = """
@cube(launch=True)
def poly(x: Slice[f32], c: Slice[f32], out: SliceMut[f32], degree: Comptime[int]):
    # FILL ME IN: the device must see no loop
    v = x[ABSOLUTE_POS]
    acc = f32(0.0)
    for k in range(degree):
        acc = acc * v + c[k]
    out[ABSOLUTE_POS] = acc
"""

_key = f"{PREFIX}.unroll_poly"
register(ProgramPuzzle(
    _key, "6 · A loop the device never sees", "",
    "`range(n)` is a runtime loop even when `n` is a Python int: an `scf.for` with constant "
    "bounds. `unroll(range(n))` takes comptime bounds and expands the body once per iteration "
    "with the counter a Python int, so the IR holds the straight-line code and `c[k]` reads a "
    "constant index.",
    (_answer_of(_key, _POLY_FIRST, "poly"),),
    nudge="Which IR op is a loop, and what would the IR hold instead if Python ran the loop "
    "while the kernel was built?",
    worked="`for k in unroll(range(3)): acc += w[k]` expands to three adds reading `w[0]`, "
    "`w[1]`, `w[2]` — `inspect.ir` shows no `scf.for`.",
    story="`poly` evaluates the polynomial with coefficients `c[0] … c[degree-1]` (highest "
    "first, Horner's rule) at every `x`. `degree` is already `Comptime`, yet the compiled IR "
    "still holds a loop. Make the IR of both compiles (degree 3 and 5) free of loops.",
    template=_template(_POLY_FIRST), play=_play_poly, expects="kernel",
    rules=(buffers_match(lambda t: {"out of degree 3": _horner(3), "out of degree 5": _horner(5)}),
           no_op(r"scf\.(for|while|loop)", "loop")),
    program="x = floats(client, [-1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5])\n"
    "c = floats(client, [0.5, -1, 2, 0.25, 3])\n"
    "for degree in (3, 5):\n"
    "    answer.launch(client, ONE, EIGHT, arg(x), arg(c, 5), arg(out), degree)",
))
_info(_key, "expansion", "the check reads the compiled IR for loops: whether Python or the "
      "device ran a loop is invisible in the values", lambda client: _cpu_map(
          _answer_of(f"{PREFIX}.unroll_poly", _POLY_FIRST, "poly").launch, client, ONE, EIGHT,
          arg(floats(client, _POLY_X)), arg(floats(client, _POLY_C), 5),
          arg(floats(client, np.zeros(8))), 3),
      "The first attempt at degree 3: every unit reads its `x` and the same three "
      "coefficients, the same cells either way")


def _panic_scene(v: Any) -> Callable[[Any], dict[str, Callable[[], Any]]]:
    def calls(client: Any) -> dict[str, Callable[[], Any]]:
        x = floats(client, range(8))
        a, b, c = (floats(client, np.zeros(8)) for _ in range(3))
        bufs = {"x": x, "a": a, "b": b, "c": c}
        pick.launch(client, ONE, EIGHT, arg(x), arg(a), 3)
        for out, src in zip("bc", v.wiring):
            scale.launch(client, ONE, EIGHT, arg(bufs[src]), arg(bufs[out]), 2.0)
        return {"launch": lambda: pick.launch(client, ONE, EIGHT, arg(x), arg(a), 3),
                "sync": client.sync,
                "read_a": lambda: client.read_one(a),
                "read_b": lambda: client.read_one(b),
                "read_c": lambda: client.read_one(c)}
    return calls


def _panic_truth(v: Any) -> set[str]:
    failed = {"a"}
    for out, src in zip("bc", v.wiring):
        if src in failed:
            failed.add(out)
    return {f"read_{n}" for n in sorted(failed)}


@variants(f"{PREFIX}.expand_panic", [dict(wiring=("a", "x")), dict(wiring=("x", "a")),
                                     dict(wiring=("a", "b"))])
def _expand_panic(v: Any) -> CallsExercise:
    b_src, c_src = v.wiring
    return CallsExercise(
        f"{PREFIX}.expand_panic", "7 · An expansion panic: who reports it?",
        "`pick.launch(..., k=3)` asks for `weights[3]` of a table of three: Python raises "
        "while the kernel is expanded. Then `b = scale(" + b_src + ")` and `c = scale("
        + c_src + ")`. The program then makes five calls, in order: the same `pick` launch "
        "again (`launch`), `client.sync()` (`sync`), and a read of each of `a`, `b`, `c` "
        "(`read_a`, `read_b`, `read_c`). Which of them raise `BufferFailure`?",
        "Expansion runs on the device thread, on the cache miss of the first launch — the "
        "launch call has already returned. Python's error becomes the kernel's compile "
        "failure (a `KernelSourceError` with the line and a caret), stored on the buffers the "
        "launch would have written; a launch that reads one of them is skipped and its outputs "
        "carry the same root cause. `sync` answers for the device, not for launches.",
        (), nudge="On which thread does expansion run, and when has `launch` already returned?",
        worked="Another program: `too_big(x → p)` (its compile fails) then `neg(p → q)` and "
        "`neg(x → r)`: reads of `p` and `q` raise, naming `too_big`; `r` reads fine, and so "
        "does `sync`.",
        misconceptions=[
            Misconception("the launch call raises", lambda v: _panic_truth(v) | {"launch"},
                          "`launch` never raises for what happens on the device thread: "
                          "expansion ran there, after the call returned."),
            Misconception("only the panicking kernel's own output fails", {"read_a"},
                          "A launch that reads a failed buffer is skipped, and its outputs "
                          "carry the same root cause."),
            Misconception("sync reports failures", lambda v: _panic_truth(v) | {"sync"},
                          "`sync()` waits for the device and reports device faults; a launch's "
                          "failure lives on its buffers.")],
        code="pick.launch(client, ONE, EIGHT, arg(x), arg(a), 3)   # weights[3]: no such weight\n"
        f"scale.launch(client, ONE, EIGHT, arg({b_src}), arg(b), 2.0)\n"
        f"scale.launch(client, ONE, EIGHT, arg({c_src}), arg(c), 2.0)\n"
        "# then: launch (the same pick again), sync, read_a, read_b, read_c",
        calls=_panic_scene(v), error=BufferFailure,
        explanation="The error each read raised names `pick`'s line with a caret under "
        "`weights[k]`: the place of the panic travels with the failure.")


_info(f"{PREFIX}.expand_panic", "expansion", "the check asks the runtime which calls raise: "
      "where an expansion panic is reported is a fact of cubelab's (and CubeCL's) threading "
      "and failure model", lambda client: _cpu_map(
          pick.launch, client, ONE, EIGHT, arg(floats(client, range(8))),
          arg(floats(client, np.zeros(8))), 1),
      "`pick` with k = 1, a weight that exists: each unit reads `x[i]` and writes `a[i]`",
      story="### 7 · An expansion panic: who reports it?\n\n`pick` multiplies by one weight of "
      "a comptime table of three, chosen by `k: Comptime[int]`. With `k = 3` the lookup "
      "`weights[k]` makes Python raise `IndexError` — while the kernel is being *expanded*. "
      "CubeCL calls that an expansion panic. The question: after that launch and two more that "
      "depend (or not) on its output, which calls report it?")


_GEN_X = np.arange(8)


def _play_generic(answer: Any, client: Any, trial: Trial) -> None:
    from cubelab.prelude import f32, i32

    xf = client.create_from_slice(f32.as_bytes(_GEN_X.astype(np.float32) - 2.5))
    of = client.create_from_slice(bytes(32))
    xi = client.create_from_slice(i32.as_bytes(_GEN_X.astype(np.int32) - 3))
    oi = client.create_from_slice(bytes(32))
    answer.launch[f32](client, ONE, EIGHT, arg(xf), arg(of))
    answer.launch[i32](client, ONE, EIGHT, arg(xi), arg(oi))
    trial.read("out (f32)", of)
    trial.read("out (i32)", oi, np.int32)


_GEN_FIRST = """
@cube(launch=True)
def triple(x: Slice[f32], out: SliceMut[f32]):
    # FILL ME IN: one definition for f32 and i32 alike
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(3.0)
"""

_key = f"{PREFIX}.generic_kernel"
register(ProgramPuzzle(
    _key, "8 · One definition, two kernels", "",
    "A generic element type (`T = Numeric.generic(\"T\")`, then `Slice[T]`) is bound per "
    "launch by `kernel.launch[T]`: each binding is a kernel type of its own in the KernelId "
    "(`Triple<f32>`, `Triple<i32>`), expanded and compiled once. A constant of the generic "
    "type is `T.new(3)`.",
    (_answer_of(_key, _GEN_FIRST, "triple"),),
    nudge="What does `triple.launch[i32]` ask of the definition, and where is the element type "
    "written in it?",
    worked="`F = Float.generic(\"F\")` and `def half(x: Slice[F], out: SliceMut[F]): out[i] = "
    "x[i] * F.new(0.5)`: `half.launch[f32]` compiles `Half<f32>`; a second type would compile "
    "a second kernel from the same definition.",
    story="The program launches `triple` (out = 3 · x) on an `f32` array and on an `i32` "
    "array: `answer.launch[f32](...)`, then `answer.launch[i32](...)`. Write it once, generic "
    "over the element type; the check wants the right values for both and **exactly 2** "
    "compiles — one kernel per type, from one definition.",
    template=_template(_GEN_FIRST), play=_play_generic, expects="kernel",
    rules=(buffers_match(lambda t: {"out (f32)": 3 * (_GEN_X - 2.5),
                                    "out (i32)": 3 * (_GEN_X - 3)}), compiles(2)),
    program="answer.launch[f32](client, ONE, EIGHT, arg(x_f32), arg(out_f32))\n"
    "answer.launch[i32](client, ONE, EIGHT, arg(x_i32), arg(out_i32))",
))
_info(_key, "expansion", "the check counts the kernel types one generic definition compiled "
      "to (`CompileFinished` events, one KernelId per element type)",
      _program_figure(double, ONE, EIGHT, _f(_GEN_X), np.zeros(8, np.float32)),
      "An elementwise kernel: each unit reads and writes one item, whatever the element type")


# =================================================================================================
# Failure is buffer state
# =================================================================================================

_FX = np.arange(8, dtype=np.float32)
_CHAIN = ("a", "b", "c", "d", "e")


def _taint(client: Any) -> dict[str, Any]:
    """The tainted chain: `too_big` fails, and what reads its output is skipped."""
    x = floats(client, _FX)
    h = {n: floats(client, np.zeros(8)) for n in _CHAIN}
    too_big.launch(client, ONE, EIGHT, arg(x), arg(h["a"]))        # compile fails: a failed
    scale.launch(client, ONE, EIGHT, arg(h["a"]), arg(h["b"]), 2.0)  # reads a: skipped
    scale.launch(client, ONE, EIGHT, arg(x), arg(h["c"]), 3.0)       # c = 3x
    inc.launch(client, ONE, EIGHT, arg(h["c"]))                      # c = 3x + 1
    add2.launch(client, ONE, EIGHT, arg(h["b"]), arg(h["c"]), arg(h["d"]))  # reads b: skipped
    scale.launch(client, ONE, EIGHT, arg(x), arg(h["e"]), 5.0)       # e = 5x
    return {"x": x, **h}


def _failed_names(client: Any, bufs: dict[str, Any]) -> list[str]:
    out = []
    for name, h in bufs.items():
        try:
            client.check([h])
        except BufferFailure:
            out.append(name)
    return out


def _play_repair(answer: Any, client: Any, trial: Trial) -> None:
    bufs = _taint(client)
    client.sync()
    trial.notes["failed before"] = _failed_names(client, bufs)
    with trial.watch("repair"):
        answer(client, *bufs.values())
    trial.notes["failed after"] = _failed_names(client, bufs)
    for n in _CHAIN:
        if n not in trial.notes["failed after"]:
            trial.read(n, bufs[n])


def _all_clean(t: Trial) -> str | None:
    left = t.notes["failed after"]
    return None if not left else (f"{', '.join(left)} still carr{'ies' if len(left) == 1 else 'y'}"
                                  " the failure.")


def _fewest(t: Trial) -> str | None:
    made = len(t.window("repair").of(ev.LaunchIssued))
    need = len(t.notes["failed before"])
    return None if made <= need else (f"your repair made {made} launches; a repair with fewer "
                                      "exists.")


_REPAIR_FIRST = """
def repair(client, x, a, b, c, d, e):
    # FILL ME IN: relaunch what must be relaunched, and nothing else
    double.launch(client, ONE, EIGHT, arg(x), arg(a))
"""

_REPAIR_EVERYTHING = """
def repair(client, x, a, b, c, d, e):
    double.launch(client, ONE, EIGHT, arg(x), arg(a))
    scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
    scale.launch(client, ONE, EIGHT, arg(x), arg(c), 3.0)
    inc.launch(client, ONE, EIGHT, arg(c))
    add2.launch(client, ONE, EIGHT, arg(b), arg(c), arg(d))
    scale.launch(client, ONE, EIGHT, arg(x), arg(e), 5.0)
"""

_REPAIR_INC = """
def repair(client, x, a, b, c, d, e):
    scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
    double.launch(client, ONE, EIGHT, arg(x), arg(a))
    add2.launch(client, ONE, EIGHT, arg(b), arg(c), arg(d))
"""

_key = f"{PREFIX}.fewest_relaunches"
register(ProgramPuzzle(
    _key, "9 · Repair a tainted chain with the fewest launches", "",
    "A failed buffer is repaired by a launch that writes it as a pure output while everything "
    "it reads is clean; a launch that reads a failed buffer is skipped and repairs nothing. "
    "Repair from the root cause forward, in order — and leave clean buffers alone: relaunching "
    "one costs a launch, and a read-modify-write (`inc`) would change its value.",
    (_answer_of(_key, _REPAIR_FIRST, "repair"), _answer_of(_key, _REPAIR_EVERYTHING, "repair"),
     _answer_of(_key, _REPAIR_INC, "repair")),
    nudge="Which buffers carry the failure now (`client.check([h])` on each tells you), and "
    "which launch wrote each of them?",
    worked="Another chain: `too_big(x → p)`, `neg(p → q)`, `neg(x → r)`. `p` and `q` are "
    "failed, `r` is clean: `double(x → p)` then `neg(p → q)` — two launches, `r` untouched.",
    story="The program below ran with `too_big` in it, whose compile fails. Write `repair` so "
    "that afterwards **every buffer is clean** and holds what the program would have left had "
    "`too_big` computed `2 · x` (use `double`, which does) — with **the fewest launches**. The "
    "check counts the launches your `repair` issues against the number of buffers the failure "
    "reached (it asks the runtime: `client.check` on each).",
    template=_template(_REPAIR_FIRST), play=_play_repair,
    params=("client", "x", "a", "b", "c", "d", "e"),
    rules=(Rule("every buffer clean", _all_clean),
           buffers_match(lambda t: {"a": 2 * _FX, "b": 4 * _FX, "c": 3 * _FX + 1,
                                    "d": 7 * _FX + 1, "e": 5 * _FX}),
           Rule("the fewest launches", _fewest)),
    program="too_big.launch(client, ONE, EIGHT, arg(x), arg(a))          # its compile fails\n"
    "scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)\n"
    "scale.launch(client, ONE, EIGHT, arg(x), arg(c), 3.0)\n"
    "inc.launch(client, ONE, EIGHT, arg(c))\n"
    "add2.launch(client, ONE, EIGHT, arg(b), arg(c), arg(d))\n"
    "scale.launch(client, ONE, EIGHT, arg(x), arg(e), 5.0)\n"
    "answer(client, x, a, b, c, d, e)                            # your repair",
))
_info(_key, "failure", "the check asks the runtime which buffers carry a failure "
      "(`client.check`) and counts the repair's launches from its events — failure as buffer "
      "state is cubelab's (and CubeCL's) model",
      _program_figure(add2, ONE, EIGHT, _FX, _FX, np.zeros(8, np.float32)),
      "`add2(b, c → d)`: each unit reads `b[i]` and `c[i]` and writes `d[i]` — while `b` is "
      "failed, this launch is skipped and `d` inherits the failure")


def _reads_scene(v: Any) -> Callable[[Any], dict[str, Callable[[], Any]]]:
    from cubelab.prelude import dry_run

    def calls(client: Any) -> dict[str, Callable[[], Any]]:
        x = floats(client, _FX)
        a, b, c = (floats(client, np.zeros(8)) for _ in range(3))
        too_big.launch(client, ONE, EIGHT, arg(x), arg(a))
        if v.program == "repair":
            scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
            double.launch(client, ONE, EIGHT, arg(x), arg(a))
            scale.launch(client, ONE, EIGHT, arg(x), arg(c), 2.0)
        elif v.program == "inc":
            inc.launch(client, ONE, EIGHT, arg(a))
            scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)
            scale.launch(client, ONE, EIGHT, arg(x), arg(c), 2.0)
        else:  # a repair under a dry run
            with dry_run():
                double.launch(client, ONE, EIGHT, arg(x), arg(a))
            scale.launch(client, ONE, EIGHT, arg(x), arg(b), 2.0)
            scale.launch(client, ONE, EIGHT, arg(b), arg(c), 2.0)
        return {f"read_{n}": (lambda h=h: client.read_one(h))
                for n, h in (("a", a), ("b", b), ("c", c))}
    return calls


_READS_CODE = {
    "repair": "too_big.launch(client, ONE, EIGHT, arg(x), arg(a))    # compile fails\n"
              "scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)\n"
              "double.launch(client, ONE, EIGHT, arg(x), arg(a))\n"
              "scale.launch(client, ONE, EIGHT, arg(x), arg(c), 2.0)",
    "inc": "too_big.launch(client, ONE, EIGHT, arg(x), arg(a))    # compile fails\n"
           "inc.launch(client, ONE, EIGHT, arg(a))\n"
           "scale.launch(client, ONE, EIGHT, arg(a), arg(b), 2.0)\n"
           "scale.launch(client, ONE, EIGHT, arg(x), arg(c), 2.0)",
    "dry": "too_big.launch(client, ONE, EIGHT, arg(x), arg(a))    # compile fails\n"
           "with dry_run():\n    double.launch(client, ONE, EIGHT, arg(x), arg(a))\n"
           "scale.launch(client, ONE, EIGHT, arg(x), arg(b), 2.0)\n"
           "scale.launch(client, ONE, EIGHT, arg(b), arg(c), 2.0)",
}


@variants(f"{PREFIX}.which_reads_raise", [dict(program=p) for p in ("repair", "inc", "dry")])
def _which_reads_raise(v: Any) -> CallsExercise:
    return CallsExercise(
        f"{PREFIX}.which_reads_raise", "10 · Which reads raise?",
        "After the program below, `a`, `b` and `c` are read (`read_a`, `read_b`, `read_c`). "
        "Which reads raise `BufferFailure`? Answer with names, or `\"none\"`.",
        "A buffer stays failed until a launch writes it as a pure output with clean inputs. A "
        "read-modify-write (`inc`) reads the buffer, so it is skipped; a launch under a dry run "
        "is compiled and skipped, so it writes — and repairs — nothing; a relaunch repairs the "
        "buffer it writes, but not one a launch already skipped earlier.",
        ("read_a, read_b, read_c", "none"),
        nudge="Go launch by launch: does it read a failed buffer (then it is skipped), and "
        "does it really write (a dry run does not)?",
        worked="Another program: `too_big(x → p)`, `neg(p → q)`, `double(x → p)`: `p` is "
        "repaired by the relaunch, `q` stays failed — it was skipped before the repair, and "
        "nothing wrote it since.",
        code=_READS_CODE[v.program], calls=_reads_scene(v), error=BufferFailure,
        explanation="Each raising read names `too_big` as the root cause.")


_info(f"{PREFIX}.which_reads_raise", "failure", "the check makes each read on the real runtime "
      "after the program: which buffers carry a failure is runtime state, not output values",
      _program_figure(inc, ONE, EIGHT, _FX),
      "`inc`: each unit reads `a[i]` and writes it back — a read-modify-write, so it reads a "
      "failed buffer and is skipped",
      story="### 10 · Which reads raise?\n\nThe kernel `too_big` fails to compile. What comes "
      "after it decides which buffers still carry the failure when they are read: a repair, a "
      "read-modify-write, or a repair under a dry run.")


def _play_precompile(answer: Any, client: Any, trial: Trial) -> None:
    x = floats(client, _FX)
    out, out2 = floats(client, np.full(8, 7.0)), floats(client, np.full(8, 7.0))
    with trial.watch("precompile"):
        answer(client, x, out, out2)
    trial.notes["failed"] = _failed_names(client, {"out": out, "out2": out2})
    if trial.notes["failed"]:
        return
    trial.read("out before the work", out)
    with trial.watch("work"):
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x),
                     arg(out2), 3.0)
    trial.read("out", out)
    trial.read("out2", out2)


def _outputs_clean(t: Trial) -> str | None:
    left = t.notes["failed"]
    return None if not left else (f"after the precompile {', '.join(left)} carr"
                                  f"{'ies' if len(left) == 1 else 'y'} a failure.")


def _tried_the_failing_one(t: Trial) -> str | None:
    failed = t.window("precompile").of(ev.CompileFailed)
    return None if any(f.kernel == "TooBig" for f in failed) else (
        "`too_big` was never compiled in the precompile.")


_PRE_FIRST = """
def precompile(client, x, out, out2):
    # FILL ME IN: compile the three candidates, dispatch nothing, fail no buffer
    with dry_run():
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)
        too_big.launch(client, ONE, EIGHT, arg(x), arg(out))
"""

_PRE_SKIPS = """
def precompile(client, x, out, out2):
    with dry_run():
        scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)
        scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)
"""

_key = f"{PREFIX}.precompile_clean"
register(ProgramPuzzle(
    _key, "11 · Precompile without tainting", "",
    "The device thread compiles before it looks at the launch mode, so a compile failure "
    "claims the launch's declared outputs even under a dry run — and a dry-run launch writes "
    "nothing, so it cannot repair them. Give a candidate that may fail outputs nobody needs.",
    (_answer_of(_key, _PRE_FIRST, "precompile"), _answer_of(_key, _PRE_SKIPS, "precompile")),
    nudge="What does a compile failure do to the buffers of its launch — even in a dry run?",
    worked="A tuner precompiling `neg(x → y)` and a candidate `bad(x → y)` that cannot compile: "
    "`bad` into `y` leaves `y` failed; `bad` into `scratch = client.empty(32)` fails only "
    "`scratch`, which nobody reads.",
    story="Like a tuner's first pass, `precompile` must compile **three candidates** — `scale` "
    "in one cube of 8, `scale` in 2 cubes of 4, and `too_big` (whose compile fails: the tuner "
    "must find that out) — **dispatching nothing**. Afterwards `out` and `out2` must be clean "
    "and hold what they held, and the work must compile nothing.",
    template=_template(_PRE_FIRST), play=_play_precompile,
    params=("client", "x", "out", "out2"),
    rules=(Rule("`too_big` compiled (and failing) in the precompile", _tried_the_failing_one),
           dispatches(0, "precompile"), Rule("`out` and `out2` clean", _outputs_clean),
           buffers_match(lambda t: {"out before the work": np.full(8, 7.0), "out": 2 * _FX,
                                    "out2": 3 * _FX}),
           compiles(0, window="work")),
    program="answer(client, x, out, out2)        # out and out2 hold 7.0\n"
    "# the work:\n"
    "scale.launch(client, ONE, EIGHT, arg(x), arg(out), 2.0)\n"
    "scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), arg(out2), 3.0)",
))
_info(_key, "failure", "the check reads compile failures, dispatches and buffer states from "
      "the runtime: a dry run's claim on a buffer is invisible to a check of values",
      _program_figure(scale, ONE, EIGHT, _FX, np.zeros(8, np.float32), scalars=(2.0,)),
      "The first candidate, `scale` in one cube of 8: it reads `x` and writes `out`")


# =================================================================================================
# Streams and capture
# =================================================================================================

def _replay_program(v: Any) -> Callable[[Any], None]:
    kernels = {"scale": lambda c, x, y: scale.launch(c, ONE, EIGHT, arg(x), arg(y), 2.0),
               "scale4": lambda c, x, y: scale.launch(c, CubeCount.Static(2),
                                                      CubeDim.new_1d(4), arg(x), arg(y),
                                                      3.0),
               "inc": lambda c, x, y: inc.launch(c, ONE, EIGHT, arg(y)),
               "neg": lambda c, x, y: neg.launch(c, ONE, EIGHT, arg(x), arg(y))}

    def run(client: Any) -> None:
        x, y = floats(client, _FX), floats(client, np.zeros(8))
        for name in v.warm:
            kernels[name](client, x, y)
        client.sync()
        client.start_capture()
        for name in v.window:
            kernels[name](client, x, y)
        graph = client.stop_capture()
        for _ in range(v.replays):
            graph.replay()
        client.read_one(y)
    return run


_REPLAY_LINES = {"scale": "scale.launch(client, ONE, EIGHT, arg(x), arg(y), 2.0)",
                 "scale4": "scale.launch(client, CubeCount.Static(2), CubeDim.new_1d(4), arg(x), "
                           "arg(y), 3.0)",
                 "inc": "inc.launch(client, ONE, EIGHT, arg(y))",
                 "neg": "neg.launch(client, ONE, EIGHT, arg(x), arg(y))"}


def _replay_code(v: Any) -> str:
    lines = ["client.clear_cache()"]
    lines += [_REPLAY_LINES[n] + "      # warm-up" for n in v.warm]
    lines += ["client.start_capture()"] + [_REPLAY_LINES[n] for n in v.window]
    lines += ["graph = client.stop_capture()", f"for _ in range({v.replays}):",
              "    graph.replay()"]
    return "\n".join(lines)


_REPLAYS = [dict(warm=("scale",), window=("scale", "inc", "neg"), replays=3),
            dict(warm=(), window=("scale", "scale4", "inc", "neg", "inc"), replays=2),
            dict(warm=("scale", "inc"), window=("scale", "inc", "scale"), replays=4)]


@variants(f"{PREFIX}.replay_compiles", _REPLAYS)
def _replay_compiles(v: Any) -> CountExercise:
    distinct = len(set(v.warm) | set(v.window))
    return CountExercise(
        f"{PREFIX}.replay_compiles", "12 · What does a replay compile?",
        "On a cleared cache the program below warms up (or not), records a capture window, "
        f"and replays the graph {v.replays} times. How many compiles in all "
        "(`CompileFinished`)?",
        "Compiles are keyed by KernelId in every mode: a launch inside a capture window is "
        "compiled (or found in the cache) like any other and recorded; a replay re-encodes the "
        "recorded dispatches and compiles nothing.",
        (), nudge="Count KernelIds, not launches: which launches bring a KernelId the cache "
        "has not seen?",
        worked="Another program: warm up `neg`, capture `neg` and `scale` (cube of 8), replay "
        "5 times: 2 compiles — `neg` in the warm-up, `scale` in the window, none in 5 replays.",
        misconceptions=[
            Misconception("a replay compiles again", lambda v: distinct + v.replays * len(
                set(v.window)), "A replay re-encodes recorded dispatches: it compiles nothing."),
            Misconception("every launch compiles", lambda v: len(v.warm) + len(v.window),
                          "A launch compiles only when its KernelId is new — in a capture "
                          "window too: a KernelId compiled before is a cache hit.")],
        code=_replay_code(v), launches=[_replay_program(v)], what="compiles",
        explanation="One compile per distinct KernelId (the two geometries of `scale` are two); "
        "the replays reuse them all.")


_info(f"{PREFIX}.replay_compiles", "streams", "the check counts compiles from the cache's "
      "events around a real capture and its replays: a graph's compile behaviour has no output "
      "value", _program_figure(neg, ONE, EIGHT, _FX, np.zeros(8, np.float32)),
      "`neg`, one of the recorded launches: each unit reads `x[i]` and writes `y[i]`; a replay "
      "touches the same cells again",
      story="### 12 · What does a replay compile?\n\nA capture window records launches once; "
      "`graph.replay()` submits the recorded dispatches again. Your program mixes a warm-up, a "
      "window and replays.")


_STREAM_LAUNCHES = ("a1", "b1", "a2", "b2", "a3", "b3")


def _play_streams(answer: Any, client: Any, trial: Trial) -> None:
    from cubelab.prelude import stream

    x, y = floats(client, _FX), floats(client, 10 * _FX)
    a, a2, b, b2 = (floats(client, np.zeros(8)) for _ in range(4))
    work = {"a1": lambda: scale.launch(client, ONE, EIGHT, arg(x), arg(a), 2.0),
            "a2": lambda: inc.launch(client, ONE, EIGHT, arg(a)),
            "a3": lambda: scale.launch(client, ONE, EIGHT, arg(a), arg(a2), 3.0),
            "b1": lambda: scale.launch(client, ONE, EIGHT, arg(y), arg(b), 2.0),
            "b2": lambda: inc.launch(client, ONE, EIGHT, arg(b)),
            "b3": lambda: scale.launch(client, ONE, EIGHT, arg(b), arg(b2), 3.0)}
    used = []
    for name in _STREAM_LAUNCHES:
        sid = answer(name)
        used.append(sid)
        with stream(sid):
            work[name]()
    client.sync()
    trial.notes["streams"] = sorted(set(used))
    trial.read("a2", a2)
    trial.read("b2", b2)


def _two_streams(t: Trial) -> str | None:
    n = len(t.notes["streams"])
    return None if n >= 2 else "the launches ran on one stream."


def _no_sharing(t: Trial) -> str | None:
    shared = t.report.of(ev.StreamShared)
    if not shared:
        return None
    return (f"{len(shared)} binding{'s' * (len(shared) != 1)} crossed streams (`StreamShared`): "
            f"a stream had to flush for another {len(shared)} time"
            f"{'s' * (len(shared) != 1)}.")


_STREAMS_FIRST = """
def stream_of(launch):
    # FILL ME IN: launch is "a1", "a2", "a3", "b1", "b2" or "b3"; return a stream id (1, 2, ...)
    return 1
"""

_STREAMS_ALTERNATE = """
def stream_of(launch):
    return {"a1": 1, "b1": 2, "a2": 1, "b2": 2, "a3": 2, "b3": 1}[launch]
"""

_key = f"{PREFIX}.stream_split"
register(ProgramPuzzle(
    _key, "13 · Two streams that never wait for each other", "",
    "Streams are inferred to depend on each other through buffers: a launch whose buffer was "
    "last touched on another stream makes that stream flush first (`StreamShared`, the log "
    "line \"Binding on X is shared on Y\"). Launches that share buffers belong on one stream; "
    "independent chains can go on their own streams and never wait.",
    (_answer_of(_key, _STREAMS_FIRST, "stream_of"),
     _answer_of(_key, _STREAMS_ALTERNATE, "stream_of")),
    nudge="Which launches touch the same buffers? Draw the two chains.",
    worked="Another program: `p1: neg(x → p)`, `q1: neg(y → q)`, `p2: inc(p)`. `p1` and `p2` "
    "share `p`: one stream; `q1` touches only `x`'s neighbour `q`: another stream — zero "
    "`StreamShared`.",
    story="Six launches arrive interleaved, as two producers would issue them: `a1 b1 a2 b2 a3 "
    "b3`. The `a…` ones compute `a2 = 3 · (2x + 1)` through `a`; the `b…` ones the same from "
    "`y` through `b`. `stream_of(name)` picks each launch's stream (`with stream(id):`). Use "
    "**at least two streams**, with **no binding shared across streams** (zero `StreamShared` "
    "events) and the right values.",
    template=_template(_STREAMS_FIRST), play=_play_streams, params=("launch",),
    rules=(buffers_match(lambda t: {"a2": 3 * (2 * _FX + 1), "b2": 3 * (20 * _FX + 1)}),
           Rule("at least two streams", _two_streams),
           Rule("no binding shared across streams", _no_sharing)),
    program="a1: scale(x → a, 2.0)   a2: inc(a)   a3: scale(a → a2, 3.0)\n"
    "b1: scale(y → b, 2.0)   b2: inc(b)   b3: scale(b → b2, 3.0)\n"
    "for name in (\"a1\", \"b1\", \"a2\", \"b2\", \"a3\", \"b3\"):\n"
    "    with stream(answer(name)):\n"
    "        launch[name]()",
))
_info(_key, "streams", "the check counts the scheduler's cross-stream alignments "
      "(`StreamShared` events): stream dependencies leave no trace in the values",
      _program_figure(inc, ONE, EIGHT, _FX),
      "`a2: inc(a)`: it reads and writes `a`, the buffer `a1` wrote and `a3` reads — the "
      "three belong together")


def _play_capture(answer: Any, client: Any, trial: Trial) -> None:
    x, y = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    graph = answer(client, x, y)
    if not hasattr(graph, "replay"):
        raise TypeError(hinted(f"`record` returned {graph!r}, not the graph of `stop_capture()`",
                               "end `record` with `return client.stop_capture()`"))
    with trial.watch("replays"):
        for r in range(3):
            client.write(x, _f(_FX * (r + 1) - r).tobytes())
            graph.replay()
            trial.read(f"y after replay {r + 1}", y)


_CAP_FIRST = """
def record(client, x, y):
    # FILL ME IN: a graph computing y = 3 * (2x + 1) from whatever x holds at each replay
    client.start_capture()
    t = client.create_from_slice(f32.as_bytes(np.zeros(8, np.float32)))
    scale.launch(client, ONE, EIGHT, arg(x), arg(t), 2.0)
    inc.launch(client, ONE, EIGHT, arg(t))
    scale.launch(client, ONE, EIGHT, arg(t), arg(y), 3.0)
    return client.stop_capture()
"""

_CAP_NO_INC = """
def record(client, x, y):
    t = client.empty(32)
    client.start_capture()
    scale.launch(client, ONE, EIGHT, arg(x), arg(t), 2.0)
    scale.launch(client, ONE, EIGHT, arg(t), arg(y), 3.0)
    return client.stop_capture()
"""

_key = f"{PREFIX}.capture_fresh_inputs"
register(ProgramPuzzle(
    _key, "14 · A graph that sees fresh inputs", "",
    "A graph replays the recorded dispatches against the recorded buffers: new inputs are "
    "written into those same buffers between replays. Inside the window a host write — "
    "`client.write`, or `create_from_slice` (a new buffer *with data*) — dooms the capture, "
    "since a replay could not carry it; an allocation without data (`client.empty`) is fine.",
    (_answer_of(_key, _CAP_FIRST, "record"), _answer_of(_key, _CAP_NO_INC, "record")),
    nudge="What does `stop_capture` say about your window, and which call in it is not a "
    "launch?",
    worked="Recording `neg(x → y)` for fresh inputs: make `y` before the window, record "
    "`neg` alone, then for each input `client.write(x, data); graph.replay()` — `y` holds "
    "`-data` every time.",
    story="`record(client, x, y)` must return a graph (`client.stop_capture()`) whose replay "
    "computes `y = 3 · (2x + 1)` through a temporary buffer, from **whatever `x` holds when "
    "it is replayed**. The check replays it three times, writing new data into `x` before "
    "each replay.",
    template=_template(_CAP_FIRST), play=_play_capture, params=("client", "x", "y"),
    rules=(buffers_match(lambda t: {f"y after replay {r + 1}": 3 * (2 * (_FX * (r + 1) - r) + 1)
                                    for r in range(3)}),
           compiles(0, window="replays")),
    program="graph = answer(client, x, y)\n"
    "for r in range(3):\n"
    "    client.write(x, new_data[r])\n"
    "    graph.replay()\n"
    "    read(client, y)",
))
_info(_key, "streams", "the check runs a real capture and its replays: what a window refuses "
      "and what a replay reads are runtime rules with no output of their own",
      _program_figure(scale, ONE, EIGHT, _FX, np.zeros(8, np.float32), scalars=(2.0,)),
      "The first recorded launch, `scale(x → t)`: what it reads at a replay is whatever `x` "
      "holds then")


# =================================================================================================
# Plane ops (a warp-puzzle set could pose these five; their answers differ per device)
# =================================================================================================

def _kernel_puzzle(key: str, title: str, story: str, spec: Callable[..., np.ndarray],
                   inputs: dict[str, np.ndarray], out_size: int, args: tuple[str, ...],
                   count: tuple[int, int, int], dim: tuple[int, int, int], limits: Limits,
                   template: str, first: str, nudge: str, concept: str, worked: str,
                   rules: tuple[Rule, ...] = (), wrong: tuple[str, ...] = ()) -> KernelPuzzle:
    template_kernel = _kernel_of(key, template)
    first_kernel = _kernel_of(f"{key} first attempt", first)
    extra = tuple(_kernel_of(f"{key} wrong {i}", src) for i, src in enumerate(wrong))
    p = KernelPuzzle(key, title, "", concept,
                     (template_kernel, first_kernel) + extra, nudge=nudge, worked=worked,
                     story=story, spec_fn=spec, arrays=inputs, out_size=out_size, args=args,
                     count=count, dim=dim, limits=limits, template=template, rules=rules,
                     first_try=first_kernel)
    register(p)
    return p


def _kernel_of(key: str, source: str) -> Any:
    ns = _define(key, source)
    (kernel,) = [v for k, v in ns.items() if getattr(v, "is_kernel", False)
                 and k not in puzzle_programs.__all__]
    return kernel


def _kernel_template(header: str, lines: int) -> str:
    return (f"@cube(launch=True)\n{header}\n    # FILL ME IN (about {lines} lines)\n    pass\n\n"
            "answer = ...\n")


def cube_total_spec(a):
    return np.array([a.sum()])


_TOTAL_TREE = """
@cube(launch=True)
def cube_total(a: Slice[f32], out: SliceMut[f32]):
    partial = SharedMemory[f32](64)
    u = UNIT_POS
    partial[u] = a[ABSOLUTE_POS]
    sync_cube()
    half = CUBE_DIM // 2
    while half > 0:
        if u < half:
            partial[u] += partial[u + half]
        sync_cube()
        half = half // 2
    if u == 0:
        out[0] = partial[0]
"""

_key = f"{PREFIX}.plane_total"
_kernel_puzzle(
    _key, "15 · One cube, one sum, one barrier",
    "`out[0]` is the sum of 64 items, one cube of 64 units. The shared-memory tree (the "
    "figure) needs a barrier per halving: six. Planes add without barriers: `plane_sum` gives "
    "every unit its plane's total. Use it, and pass **at most one** `sync_cube()` — the kernel "
    "must be right for any plane width (the check measures yours).",
    cube_total_spec, {"a": _f(np.arange(64) % 7 - 3)}, 1, ("a", "out"), (1, 1, 1), (64, 1, 1),
    Limits(1, 1, 16, 1),
    _kernel_template("def cube_total(a: Slice[f32], out: SliceMut[f32]):\n"
                     "    partial = SharedMemory[f32](64)   # room for one total per plane\n"
                     "    u = UNIT_POS", 9),
    _TOTAL_TREE,
    "How many planes does the cube have on your device, and which unit of each knows its "
    "plane's total?",
    "`plane_sum(v)` gives every unit of a plane the plane's total. One unit per plane "
    "(`UNIT_POS_PLANE == 0`) stores it at `partial[UNIT_POS // PLANE_DIM]`; after one "
    "`sync_cube()` one unit adds the ⌈CUBE_DIM / PLANE_DIM⌉ partials.",
    "With cubes of 16 units and planes of 4: 4 planes; units 0, 4, 8, 12 store their plane's "
    "sum in partial[0..3]; after the barrier unit 0 adds 4 numbers.",
    rules=(has_op(r"plane\.reduce[^\n]*'sum'", "`plane_sum`"), phases_at_most(2)))
_info(_key, "plane", "", _kernel_figure(_key),
      "The first attempt, a shared-memory tree: seven phases (six barriers), half the units "
      "idle after each")


def cube_scan_spec(a):
    return np.cumsum(a.reshape(2, 32), axis=1).reshape(-1)


_SCAN_NAIVE = """
@cube(launch=True)
def cube_scan(a: Slice[f32], out: SliceMut[f32]):
    totals = SharedMemory[f32](32)
    u = UNIT_POS
    acc = f32(0.0)
    for k in range(u + 1):
        acc += a[CUBE_POS * CUBE_DIM + k]
    out[ABSOLUTE_POS] = acc
"""

_key = f"{PREFIX}.plane_scan"
_kernel_puzzle(
    _key, "16 · A cube's running total from its planes'",
    "`out` holds the running total of each cube of 32: `out[i] = a[c·32] + … + a[i]` in cube "
    "c. `plane_inclusive_sum` gives each unit the running total *of its plane* — all of it "
    "where a plane is 32 wide, only a quarter on lavapipe's planes of 8. Each unit reads its "
    "item once; add the totals of the earlier planes through shared memory, with one barrier.",
    cube_scan_spec, {"a": _f((np.arange(64) * 5) % 9 - 4)}, 64, ("a", "out"), (2, 1, 1),
    (32, 1, 1), Limits(1, 1, 32, 1),
    _kernel_template("def cube_scan(a: Slice[f32], out: SliceMut[f32]):\n"
                     "    totals = SharedMemory[f32](32)   # room for one total per plane\n"
                     "    u = UNIT_POS", 9),
    _SCAN_NAIVE,
    "What does `plane_inclusive_sum` leave in the last unit of each plane?",
    "The last unit of a plane holds the plane's total; it stores it at `totals[u // "
    "PLANE_DIM]`. After one `sync_cube()`, a unit of plane p adds `totals[0 … p-1]` to its "
    "own plane-running total.",
    "Planes of 4, a cube of 8, a = [1]*8: the plane scans give [1, 2, 3, 4, 1, 2, 3, 4]; "
    "totals = [4, 4]; plane 1 adds 4: [1, 2, 3, 4, 5, 6, 7, 8].",
    rules=(has_op(r"plane\.scan", "a plane scan"), phases_at_most(2)))
_info(_key, "plane", "", _kernel_figure(_key),
      "The first attempt: unit i re-reads every item before it from global memory — unit 31 "
      "reads 32")


def vote_count_spec(a):
    return (a.reshape(3, 32) > 0).sum(axis=1)


_VOTE_ATOMIC = """
@cube(launch=True)
def vote_count(a: Slice[f32], out: SliceMut[f32]):
    counts = SharedMemory[u32](32)
    u = UNIT_POS
    if u == 0:
        n = u32(0)
        for k in range(CUBE_DIM):
            if a[CUBE_POS * CUBE_DIM + k] > f32(0.0):
                n += u32(1)
        out[CUBE_POS] = f32(n)
"""

_key = f"{PREFIX}.ballot_count"
_kernel_puzzle(
    _key, "17 · Count the votes",
    "`out[c]` is how many items of cube c (32 units, 3 cubes) are positive. `plane_ballot(v > "
    "0)` gives every unit of a plane a bit mask of its plane's votes (a `Vector[u32, 4]`: bit k "
    "of word k // 32 is lane k's vote), and `count_ones` counts a word's bits. Combine the "
    "planes' counts through shared memory with one barrier; each unit reads its item once.",
    vote_count_spec, {"a": _f(np.sin(np.arange(96) * 1.7))}, 3, ("a", "out"), (3, 1, 1),
    (32, 1, 1), Limits(1, 1, 32, 1),
    _kernel_template("def vote_count(a: Slice[f32], out: SliceMut[f32]):\n"
                     "    counts = SharedMemory[u32](32)   # room for one count per plane\n"
                     "    u = UNIT_POS", 10),
    _VOTE_ATOMIC,
    "How does one unit learn how many lanes of its plane voted yes, without reading their "
    "items?",
    "`b = plane_ballot(a[i] > f32(0.0))`; `count_ones(b[0]) + … + count_ones(b[3])` is the "
    "plane's count (words 1–3 are 0 on planes of 32 or fewer). One unit per plane stores it; "
    "after `sync_cube()` one unit adds the counts and writes `out[CUBE_POS] = f32(total)`.",
    "Planes of 4 voting [yes, no, yes, yes]: the ballot's word 0 is 0b1101, `count_ones` "
    "gives 3.",
    rules=(has_op(r"plane\.ballot", "`plane_ballot`"), phases_at_most(2)))
_info(_key, "plane", "", _kernel_figure(_key),
      "The first attempt: unit 0 of each cube reads all 32 items itself")


def plane_sums_spec(a, plane):
    return np.repeat(a.reshape(-1, plane).sum(axis=1), plane)


_SHUF_SUM = """
@cube(launch=True)
def plane_sums(a: Slice[f32], out: SliceMut[f32]):
    out[ABSOLUTE_POS] = plane_sum(a[ABSOLUTE_POS])
"""

_key = f"{PREFIX}.shuffle_butterfly"
_kernel_puzzle(
    _key, "18 · A plane sum without plane_sum",
    "Every unit writes the total of **its plane** (`spec(a, plane)`: the check measures your "
    "device's plane width — the answer differs per device). `plane_sum` would do it in one "
    "op; here build it from shuffles: after log₂(PLANE_DIM) butterfly steps of "
    "`plane_shuffle_xor`, every lane holds the plane's total. No shared memory.",
    plane_sums_spec, {"a": _f(np.arange(64) % 11 - 5)}, 64, ("a", "out"), (2, 1, 1),
    (32, 1, 1), Limits(1, 1, 0, 0),
    _kernel_template("def plane_sums(a: Slice[f32], out: SliceMut[f32]):\n"
                     "    v = a[ABSOLUTE_POS]", 5),
    _SHUF_SUM,
    "If each lane adds the value of the lane whose index differs in one bit, how many lanes' "
    "values does each lane hold after one step? After two?",
    "`v += plane_shuffle_xor(v, mask)` for mask = PLANE_DIM / 2, …, 2, 1 (a runtime `while` "
    "loop: PLANE_DIM is a runtime value): each step doubles the lanes a value covers.",
    "Planes of 4, values [1, 2, 3, 4]: mask 2 gives [4, 6, 4, 6]; mask 1 gives [10, 10, 10, "
    "10].",
    rules=(no_op(r"plane\.reduce", "plane reduction (`plane_sum` and its kin)"),
           has_op(r"plane\.shuffle[^\n]*'xor'", "`plane_shuffle_xor`")))
_info(_key, "plane", "", _kernel_figure(_key),
      "The first attempt uses `plane_sum`: one read and one write per unit, no shared memory "
      "— its map is already the target; the check refuses the op itself")


def _diverged_kernel() -> Any:
    return _kernel_of(f"{PREFIX}.plane_divergence kernel", """
@cube(launch=True)
def diverged(x: Slice[f32], out: SliceMut[f32], k: u32):
    i = ABSOLUTE_POS
    if UNIT_POS % k == 0:
        out[i] = plane_sum(x[i])
    else:
        out[i] = f32(-1.0)
""")


_DIVERGED = None


def diverged_kernel() -> Any:
    global _DIVERGED
    if _DIVERGED is None:
        _DIVERGED = _diverged_kernel()
    return _DIVERGED


def _diverged_out(client: Any, k: int) -> np.ndarray:
    x = floats(client, np.arange(32))
    out = floats(client, np.zeros(32))
    diverged_kernel().launch(client, ONE, CubeDim.new_1d(32), arg(x, 32), arg(out, 32), k)
    return read(client, out)


def _active_sum_at_32(v: Any) -> float:
    """What unit `v.unit` would get if it received the sum of its plane's active lanes whether
    or not it is one of them (planes of 32: the CPU runtime's and NVIDIA's)."""
    return float(sum(u for u in range(32) if u % v.k == 0))


@variants(f"{PREFIX}.plane_divergence", [dict(k=2, unit=0), dict(k=3, unit=10),
                                         dict(k=4, unit=16)])
def _plane_divergence(v: Any) -> ValueExercise:
    return ValueExercise(
        f"{PREFIX}.plane_divergence", "19 · What does a diverged plane add up?",
        f"`diverged` is launched with one cube of 32 units, `x = [0, 1, …, 31]` and k = "
        f"{v.k}. What does unit {v.unit} write? (On *your* device: the check runs it there.)",
        "A plane op inside a branch runs over the units of the plane that took the branch — "
        "the active lanes — not over the whole plane, and not over the cube; a unit outside "
        "the branch takes no part and gets nothing. Which lanes form a plane depends on the "
        "device: PLANE_DIM consecutive units (8 on lavapipe, 32 on the CPU runtime and on "
        "NVIDIA GPUs).",
        (), nudge="Which units are in this unit's plane on your device, and which of them are "
        "inside the `if`?",
        worked="On planes of 4 with x = [0 … 7] and k = 2: unit 5 is in plane 1 (units 4–7); "
        "the active ones are 4 and 6; unit 5 is not one of them, so it writes -1.0 — unit 4 "
        "writes 4 + 6 = 10.",
        misconceptions=[
            Misconception("every lane of the plane takes part", 496.0,
                          "Only the lanes inside the branch take part in a plane op there."),
            Misconception("every unit receives the sum",
                          lambda v: -2.0 if v.unit % v.k == 0 else _active_sum_at_32(v),
                          "A unit that did not take the branch runs the other side: the plane "
                          "op is not its to receive.")],
        code="@cube(launch=True)\ndef diverged(x: Slice[f32], out: SliceMut[f32], k: u32):\n"
        "    i = ABSOLUTE_POS\n    if UNIT_POS % k == 0:\n        out[i] = plane_sum(x[i])\n"
        "    else:\n        out[i] = f32(-1.0)",
        value=lambda client: float(_diverged_out(client, v.k)[v.unit]),
        explanation="The sum over the active lanes of the unit's own plane (or -1.0 for a unit "
        "outside the branch).")


_info(f"{PREFIX}.plane_divergence", "plane", "", lambda client: _cpu_map(
          diverged_kernel().launch, client, ONE, CubeDim.new_1d(32),
          arg(floats(client, np.arange(32)), 32), arg(floats(client, np.zeros(32)), 32), 2),
      "`diverged` with k = 2 on the CPU runtime: every unit reads `x[i]` (the odd ones do not — "
      "they took the other branch) and writes `out[i]`",
      story="### 19 · What does a diverged plane add up?\n\nInside an `if`, only some units "
      "of a plane are active. What does `plane_sum` add then? The answer differs per device "
      "(measure your plane width first — `PLANE_DIM`, read by a one-unit kernel, as chapter 14 "
      "does).")


# =================================================================================================
# Cost: coalescing and bank conflicts, on the device's planes
# =================================================================================================

def total_spec(x):
    return np.array([x.sum()])


_WALK_FIRST = """
@cube(launch=True)
def total(x: Slice[f32], out: SliceMut[f32]):
    sums = SharedMemory[f32](32)
    u = UNIT_POS
    acc = f32(0.0)
    for j in range(8):
        acc += x[u * 8 + j]          # FILL ME IN: this walk
    sums[u] = acc
    sync_cube()
    if u == 0:
        t = f32(0.0)
        for k in range(32):
            t += sums[k]
        out[0] = t
"""

_key = f"{PREFIX}.coalesce_walk"
_kernel_puzzle(
    _key, "20 · Neighbours read neighbours",
    "32 units add up 256 items (8 each), then unit 0 adds the 32 partial sums. The template "
    "gives each unit a contiguous run of 8 — at each step of the loop a plane's units read "
    "items 8 apart, so every 32-byte sector serves one unit. Change the walk so every read of "
    "`x` is **100 % coalesced** on your device's planes (the access map's `coalescing()`).",
    total_spec, {"x": _f(np.arange(256) % 5)}, 1, ("x", "out"), (1, 1, 1), (32, 1, 1),
    Limits(8, 1, 32, 1), _template(_WALK_FIRST), _WALK_FIRST,
    "At one step j of the loop, which items do the units of one plane read, and how far apart "
    "are they?",
    "A plane's access is coalesced when consecutive units read consecutive items. Let step j "
    "read the j-th block of 32: unit u reads `x[j * 32 + u]`; the sum each unit ends with "
    "changes, the total does not.",
    "64 items, 16 units, 4 each: `x[u * 4 + j]` has a plane read items 4 apart (25 % at "
    "f32); `x[j * 16 + u]` reads 16 consecutive items per step (100 %).",
    rules=(coalesced(1.0, "x"),))
_info(_key, "cost", "the check measures coalescing on the student's own run with the access "
      "map's cost instruments (sectors per plane-instruction, at the device's plane width) — "
      "no value check sees it", _kernel_figure(_key),
      "The template's walk: unit u reads items 8u … 8u+7, one sector per unit per step")


def transpose16_spec(a):
    return a.reshape(16, 16).T.reshape(-1)


_T16_FIRST = """
@cube(launch=True)
def transpose(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](16 * 16)
    col = UNIT_POS_X
    row = UNIT_POS_Y
    # FILL ME IN: the write below is strided
    out[col * 16 + row] = a[row * 16 + col]
"""

_key = f"{PREFIX}.transpose_tile"
_kernel_puzzle(
    _key, "21 · A transpose without strided writes",
    "`out` is the transpose of the 16×16 matrix `a` (row-major), one cube of 16×16 units. The "
    "template reads `a` row by row — coalesced — but writes `out` down a column: neighbouring "
    "units write items 16 apart. Stage through the shared `tile` so that **both** the read "
    "and the write are 100 % coalesced.",
    transpose16_spec, {"a": _f(np.arange(256))}, 256, ("a", "out"), (1, 1, 1), (16, 16, 1),
    Limits(1, 1, 1, 1), _template(_T16_FIRST), _T16_FIRST,
    "In the write, which items do units (0, y), (1, y), (2, y) … write?",
    "Read row-wise into the tile (`tile[row * 16 + col] = a[row * 16 + col]`), `sync_cube()`, "
    "then let unit (col, row) write `out[row * 16 + col]` — consecutive in `col` — taking its "
    "value from the tile's transposed place, `tile[col * 16 + row]`.",
    "A 4×4 transpose: unit (x = 1, y = 2) writes `out[2 * 4 + 1]` = `a[1 * 4 + 2]`, which unit "
    "(x = 2, y = 1) loaded into `tile[1 * 4 + 2]`.",
    rules=(coalesced(1.0),))
_info(_key, "cost", "the check measures coalescing with the access map's cost instruments on "
      "the device's planes; the values of a strided and a coalesced transpose are the same",
      _kernel_figure(_key),
      "The template: `a` read row by row, `out` written column by column — one sector per "
      "unit")


def transpose32_spec(a):
    return a.reshape(32, 32).T.reshape(-1)


_T32_FIRST = """
@cube(launch=True)
def transpose32(a: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](32 * 32)      # FILL ME IN: this tile's layout
    x = UNIT_POS_X
    for j in range(4):
        y = UNIT_POS_Y + j * 8
        tile[y * 32 + x] = a[y * 32 + x]
    sync_cube()
    for j in range(4):
        y = UNIT_POS_Y + j * 8
        out[y * 32 + x] = tile[x * 32 + y]
"""

_key = f"{PREFIX}.padded_tile"
_kernel_puzzle(
    _key, "22 · Zero bank conflicts",
    "A 32×32 transpose through a tile, cubes of 32×8 units, 4 rows per unit. Both global "
    "accesses are coalesced already. But the tile is read down a column: `tile[x * 32 + y]` "
    "puts the words of a plane's units 32 apart — all in one of the 32 banks. Make every "
    "shared access **conflict-free** on your device's planes, keeping the global accesses "
    "coalesced.",
    transpose32_spec, {"a": _f(np.arange(1024))}, 1024, ("a", "out"), (1, 1, 1), (32, 8, 1),
    Limits(4, 4, 4, 4), _template(_T32_FIRST), _T32_FIRST,
    "Word w of shared memory lives in bank w mod 32. Which banks do `tile[x * 32 + y]` for "
    "x = 0, 1, 2 … fall in?",
    "Give each row of the tile one more word than it needs (a pitch of 33): element (r, c) at "
    "`r * 33 + c`. Going down a column then steps 33 words — one bank further each time.",
    "A 4-bank memory and a 4×4 tile: the column reads words 0, 4, 8, 12 — all bank 0, 4-way; "
    "with a pitch of 5 they are 0, 5, 10, 15 — banks 0, 1, 2, 3.",
    rules=(conflict_free(), coalesced(1.0)))
_info(_key, "cost", "the check measures bank conflicts with the access map's cost instruments "
      "(ways per plane-instruction, 32 banks) on the student's run", _kernel_figure(_key),
      "The template: the tile written by rows, read by columns — the read's words fall in one "
      "bank")


_HARRIS = """
@cube(launch=True)
def tree_sum(x: Slice[f32], out: SliceMut[f32]):
    sm = SharedMemory[f32](64)
    u = UNIT_POS
    sm[u] = x[u]
    sync_cube()
    s = u32(1)
    while s < CUBE_DIM:
        index = 2 * s * u          # FILL ME IN: this addressing
        if index < CUBE_DIM:
            sm[index] += sm[index + s]
        sync_cube()
        s *= 2
    if u == 0:
        out[0] = sm[0]
"""

_key = f"{PREFIX}.tree_addressing"
_kernel_puzzle(
    _key, "23 · A reduction tree without conflicts",
    "A shared-memory tree sums 64 items in one cube of 64 (no plane ops: this one is about "
    "shared memory). The template's addressing keeps the active units consecutive, but makes "
    "them touch words `2s` apart — 2-, 4-, 8-way bank conflicts as `s` grows. Re-address the "
    "tree so that **no shared access has a bank conflict**.",
    total_spec, {"x": _f(np.arange(64) % 9 - 4)}, 1, ("x", "out"), (1, 1, 1), (64, 1, 1),
    Limits(1, 1, 13, 7), _template(_HARRIS), _HARRIS,
    "At s = 4, which words do units 0, 1, 2, 3 touch, and which banks are they in?",
    "Sequential addressing: start with the half `h = CUBE_DIM / 2` and halve it; units "
    "`u < h` add `sm[u + h]` into `sm[u]`. Consecutive units then touch consecutive words — "
    "one bank each.",
    "8 items: h = 4 adds sm[4..7] into sm[0..3], h = 2 adds sm[2..3] into sm[0..1], h = 1 adds "
    "sm[1] into sm[0]: each step's units touch neighbouring words.",
    rules=(conflict_free(), no_op(r"plane\.\w+", "plane op")))
_info(_key, "cost", "the check measures bank conflicts with the access map's cost instruments "
      "on the student's run; both trees compute the same sum", _kernel_figure(_key),
      "The template's tree: each phase, the active units touch words 2s apart")


def norms_spec(p):
    pts = p.reshape(-1, 2)
    return (pts * pts).sum(axis=1)


_PAIRS_FIRST = """
@cube(launch=True)
def norms(p: Slice[f32], out: SliceMut[f32]):
    tile = SharedMemory[f32](64)
    i = ABSOLUTE_POS
    # FILL ME IN: each read below uses half of every sector it touches
    px = p[2 * i]
    py = p[2 * i + 1]
    out[i] = px * px + py * py
"""

_key = f"{PREFIX}.stage_pairs"
_kernel_puzzle(
    _key, "24 · Pairs, read in full sectors",
    "64 points stored as pairs `(x0, y0, x1, y1, …)`; `out[i] = x_i² + y_i²`, 2 cubes of 32. "
    "Reading `p[2i]` then `p[2i + 1]`, each instruction of a plane fetches every sector twice "
    "as wide as what it uses: 50 %. Stage the cube's 64 numbers through shared memory with "
    "reads that are **100 % coalesced**, then take each point from the tile.",
    norms_spec, {"p": _f(np.arange(128) % 13 - 6)}, 64, ("p", "out"), (2, 1, 1), (32, 1, 1),
    Limits(2, 1, 2, 2), _template(_PAIRS_FIRST), _PAIRS_FIRST,
    "Which 64 numbers does one cube need, and in how many consecutive runs of 32 can its units "
    "fetch them?",
    "Unit u loads `tile[u] = p[64 * CUBE_POS + u]` and `tile[u + 32] = p[64 * CUBE_POS + 32 + "
    "u]` (two fully coalesced reads), `sync_cube()`, then reads its point at `tile[2u]` and "
    "`tile[2u + 1]`.",
    "Points (x, y, z) of 3 numbers, 4 units: the cube's 12 numbers are loaded as 3 reads of 4 "
    "consecutive numbers; unit u then takes tile[3u], tile[3u + 1], tile[3u + 2].",
    rules=(coalesced(1.0, "p"),))
_info(_key, "cost", "the check measures coalescing with the access map's cost instruments; "
      "both layouts give the same values", _kernel_figure(_key),
      "The template: `p[2i]` and `p[2i + 1]` — each plane-instruction uses half of each "
      "sector")


# =================================================================================================

def write_all_figures(folder: Path | str) -> list[Path]:
    """Draw every puzzle's figure into `folder` (`notebooks/figures/puzzles_cubelab`)."""
    from cubelab.runtime.device import Device

    client = Device.cpu().client()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for key in ORDER:
        info = INFO[key]
        svg = info.figure(client).to_svg()
        path = folder / f"{info.name}.svg"
        path.write_text(svg if svg.endswith("\n") else svg + "\n", encoding="utf-8")
        out.append(path)
    return out

