"""Reading the course: chapter notebooks, their exercise cells and their solutions.

The convention (docs/exercises.md): an exercise is three consecutive cells whose metadata is
`{"cubelab": {"exercise": key, "role": "question" | "answer" | "check"}}`; the answer cell ends
with `answer = ...`; `notebooks/solutions/<stem>.py` holds one section per exercise, opened by
`# %% exercise: <key>`, with the solved source of that answer cell. Everything here is found by
globbing, so a new chapter is picked up without editing the tests.
"""

from __future__ import annotations

import json
import linecache
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
CHAPTERS = sorted(NOTEBOOKS.glob("*.ipynb"))
ROLES = ("question", "answer", "check")
RESULTS_MARK = "CUBELAB-EXERCISE-RESULTS "
# what a solution section may assume besides itself: the notebooks' first-cell imports
SOLUTION_PRELUDE = "import numpy as np\nimport cubelab\nfrom cubelab.prelude import *\n"


# What a chapter must print when it runs as committed (the "must show"): text each
# chapter's outputs contain, on both runtimes. A chapter not listed has no such line.
MUST_SHOW: dict[str, list[str]] = {
    # the comptime `if` stays a plain Python `if` in the expanded source; the runtime one is IR
    "02_what_cube_generates": ["    if relu:\n", "__cl.if_(__s, __cl.cmp(__s, 'lt', ABSOLUTE_POS"],
    # the four steps of the runnable example: silent compile failure, check reports it, relaunch
    # repairs, dry run
    "07_failure_is_buffer_state": ["1. launch returned None", "2. check([out]) raised",
                                   "3. relaunch", "4. under dry_run"],
    # a sync after every launch is a command buffer each; the three runtimes agree
    "12_performance_launch_and_bandwidth": ["200 command buffer(s) for 200 dispatches",
                                            "wgpu  gives what ten launches give: True",
                                            "cpu   gives what ten launches give: True"],
    # a tile's column is 32-way, padded to 33 it is free; a new tuner key compiles nothing
    "13_performance_memory_access": ["stride 32: the read is 32-way",
                                     "stride 33: the read is 1-way",
                                     "n = 32: 1 search(es), 0 compiles, 3 launches skipped",
                                     "n = 64: 0 search(es), 0 compiles"],
    "capstone_performance": ["right: True", "moves 8.00× the requested bytes"],
    # a pass that changes nothing proves out on every runtime; one that changes results does not
    "10_compiler_write_a_pass": ["op-census: same results", "double-the-integers: DIFFERENT"],
    # each missing part names its call; the op proved against numpy; a new spelling clears
    "11_compiler_lower_an_op": ["TARGETS['wgsl'].lower('student.softplus'",
                                "cpu_step('student.softplus'", "soft4: max error",
                                "cleared  the wgsl spelling of IR op `student.softplus` changed"],
    # the fused op declared, and the product a fusion pass would take in a softmax's last loop
    "capstone_compiler": ["exp_scale(x, s) = exp(x) * s", "fusable: %v"],
}


@dataclass(frozen=True)
class SeedOutput:
    """An output the CubeCL chapters print, as a chapter prints it by default.

    `lines` are regular expressions, each matched against one printed line, in order (with other
    lines between them unless `block`, where they are consecutive). A regex stands where
    cubelab's text must differ from the Rust chapter's (a hash, a module path, a time); the
    differences are listed in docs/exercises.md, "What the chapters print"."""

    what: str
    lines: tuple[str, ...]
    block: bool = False

    def find(self, text: str) -> str | None:
        """None when the output is there; else the first line pattern not found."""
        printed = text.splitlines()
        start = 0
        for i, pattern in enumerate(self.lines):
            rx = re.compile(pattern)
            for j in range(start, len(printed)):
                if rx.fullmatch(printed[j]):
                    if self.block and i and j != start:
                        return f"{pattern!r} (not right after the line before it)"
                    start = j + 1
                    break
                if self.block and i:
                    return f"{pattern!r} (not right after the line before it)"
            else:
                return pattern
        return None


_HASH = r"[0-9a-f]{8}"
_TIME = r"[\d.]+(µs|ms|s) *"
_MOD = r"[\w:]+"  # the kernel's module path: `__main__`, `cubelab::exercises::seed000`
SEED_OUTPUTS: dict[str, list[SeedOutput]] = {
    "01_first_kernels": [
        SeedOutput("the device and runtime line", (
            r"device = Device\.(wgpu|cpu)\(#\d+\), runtime = '(wgpu<wgsl>|cpu<numpy>)'",)),
        SeedOutput("saxpy's result", (
            re.escape("saxpy y = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0, 19.0, 21.0, "
                      "23.0, 25.0, 27.0, 29.0, 31.0]"),)),
    ],
    "02_what_cube_generates": [
        SeedOutput("the items the macro generates (cargo expand)", (
            re.escape("def saxpy(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):"),
            r".*`mod saxpy`.*", r".*`type F = DynamicScalar<_F>`.*",
            r".*`type N = DynamicSize<_N>`.*", r"    def expand\(__s, a, x, y\): \.\.\.",
            r".*`struct Saxpy<\.\.>`.*", r".*`struct SaxpyInfo<\.\.>`.*", r".*`Saxpy::new`.*",
            r".*`KernelMetadata::id`.*", r".*`CubeKernel::define`.*", r".*`pub fn launch`.*",
            re.escape("    saxpy.launch[F](client, cube_count, cube_dim, n, a, x, y)"))),
        SeedOutput("expand: the body as IR-building calls", (
            r"def expand\(__s, a, x, y\):",
            r"    __cl\.if_\(__s, __cl\.cmp\(__s, 'lt', ABSOLUTE_POS, .*")),
        SeedOutput("a scalar of a generic type is refused (`F: LaunchArg` is not satisfied)", (
            r".*scalar argument `a` has the generic type .*",)),
        SeedOutput("the generated launch", (
            re.escape("def launch(client, cube_count, cube_dim, n, a, x, y):"),
            re.escape("    settings = KernelSettings(cube_dim, ExecutionMode.Checked, "
                      "AddressType.U32)"),
            re.escape("    launcher = KernelLauncher()"), r"    # register_type: .*",
            r"    types\['F'\] = F", r"    # register_size: .*", r"    sizes\['N'\] = n",
            r"    launcher\.register_scalar\('f32', a\)", r"    # declare_io\(ReadOnly\).*",
            r"    launcher\.register_buffer\(x\)", r"    # declare_io\(ReadWrite\).*",
            r"    launcher\.register_buffer\(y\)", r"    # Saxpy::new: .*",
            r"    kernel = Saxpy\(settings, types, sizes, comptimes\)",
            re.escape("    # kernel.info = SaxpyInfo { n: n, a: (), x: BufferCompilationArg, "
                      "y: BufferCompilationArg }"),
            r"    # client\.launch: .*", re.escape("    launcher.launch(client, kernel, cube_count)"))),
    ],
    "03_kernel_id_and_cache": [
        SeedOutput("the quiz's answer: the count, then each compile's lines and results", (
            "3",
            rf"name: {_MOD}::add::Add<f32>", "    mode: Checked,", "        relu: false,",
            rf"\[\[max_total_threads_per_threadgroup\(8\)\]\] \[\[kernel\]\] void add_f_f32_{_HASH}",
            rf"\| {_TIME}\| Add \| f32_{_HASH}",
            re.escape("add checked=true relu=false out = [1.5, -1.5, 3.5, -3.5, 5.5, -5.5]"),
            rf"name: {_MOD}::add::Add<f32>", "    mode: Unchecked,", "        relu: false,",
            rf"\[\[max_total_threads_per_threadgroup\(8\)\]\] \[\[kernel\]\] void add_f_f32_{_HASH}",
            rf"\| {_TIME}\| Add \| f32_{_HASH}",
            re.escape("add checked=false relu=false out = [1.5, -1.5, 3.5, -3.5, 5.5, -5.5]"),
            rf"name: {_MOD}::add::Add<f32>", "    mode: Checked,", "        relu: true,",
            rf"\[\[max_total_threads_per_threadgroup\(8\)\]\] \[\[kernel\]\] void add_f_f32_{_HASH}",
            rf"\| {_TIME}\| Add \| f32_{_HASH}",
            re.escape("add checked=true relu=true out = [1.5, 0.0, 3.5, 0.0, 5.5, 0.0]"),
            rf"\| {_TIME}\| Add \| f32_{_HASH}",
            re.escape("add checked=true relu=false out = [1.5, -1.5, 3.5, -3.5, 5.5, -5.5]")),
            block=True),
        SeedOutput("warm profile lines next to the cold one", (
            r"three more launches of launch 4's KernelId \(warm\):",
            rf"\| {_TIME}\| Add \| f32_{_HASH}", rf"\| {_TIME}\| Add \| f32_{_HASH}",
            rf"\| {_TIME}\| Add \| f32_{_HASH}"), block=True),
    ],
    "04_reading_ir_wgsl_msl": [
        SeedOutput("the debug log's whole compile block for saxpy, in MSL", (
            r"\[START_KERNEL_COMPILATION\]", rf"name: {_MOD}::saxpy::Saxpy<f32>",
            r"id: KernelId \{", rf"    type: {_MOD}::saxpy::Saxpy<f32>,", "    address_type: U32,",
            r"    cube_dim: Dim3 \{", "        x: 4,", "        y: 1,", "        z: 1,", "    },",
            "    mode: Checked,", r"    info: SaxpyInfo \{", "        n: 4,",
            r"        a: \(\),", r"        x: BufferCompilationArg \{", "            inplace: None,",
            "        },", r"        y: BufferCompilationArg \{", "            inplace: None,",
            "        },", "    },", "}", "source:", "```msl", "#include <metal_stdlib>",
            "using namespace metal;",
            re.escape("struct alignas(16) float_4 { float i_0; float i_1; float i_2; float i_3; };"),
            r"struct info_st \{", re.escape("    float scalars_f32[1];uint32_t static_meta[2];"),
            r"\[\[max_total_threads_per_threadgroup\(4\)\]\] \[\[kernel\]\] void "
            rf"saxpy_f_f32_n_4_{_HASH}\(device float_4 const\* const v\d+ \[\[buffer\(0\)\]\], .*",
            r"constant info_st const& info_v\d+ = \*v\d+;",
            r"float const v\d+ = info_v\d+\.scalars_f32\[0\];",
            r"uint32_t const v\d+ = info_v\d+\.static_meta\[0\];",
            r"if\(v\d+\) \{", r"float_4 const v\d+ = float_4\{v\d+, v\d+, v\d+, v\d+\};",
            "return;", "```", r"\[END_KERNEL_COMPILATION\]",
            rf"\| {_TIME}\| Saxpy \| f32_{_HASH}")),
    ],
    "08_streams_dynamic_capture_autotune": [
        SeedOutput("the stream alignment log line (`Binding on {} is shared on {}`)", (
            r"log cubelab\.streams: Binding on \d+ is shared on \d+",)),
    ],
    "05_bounds": [
        SeedOutput("launch's MSL body, the same as launch_unchecked's, with no clamp", (
            r"device float const\* const v\d+ = &v\d+\[v\d+\];", r"float const v\d+ = \*v\d+;",
            r"device float const\* const v\d+ = &v\d+\[v\d+\];", r"float const v\d+ = \*v\d+;",
            r"float const v\d+ = v\d+ \+ v\d+;", r"device float \* const v\d+ = &v\d+\[v\d+\];",
            r"\*v\d+ = v\d+;"), block=True),
        SeedOutput("the out-of-bounds rows, default settings", (
            re.escape("oob checked=true out = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]"),
            re.escape("oob checked=false out = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 0.0, 0.0]")),
            block=True),
    ],
}


def printed(nb: Any) -> str:
    """Everything the notebook's cells printed or displayed as text, each output on lines of its
    own."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                text = o.get("text", "")
            elif "data" in o:
                text = o["data"].get("text/plain", "")
            else:
                continue
            text = "".join(text) if isinstance(text, list) else text
            out.append(text if text.endswith("\n") else text + "\n")
    return "".join(out)


@dataclass
class ExerciseCells:
    key: str
    cells: list[int]  # indices of the question, answer and check cells


def exercise_cells(nb: Any, name: str = "") -> list[ExerciseCells]:
    """The notebook's exercises, after checking each is three consecutive cells in order."""
    found: dict[str, dict[str, int]] = {}
    order: list[str] = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("cubelab", {})
        if "exercise" not in meta:
            continue
        key, role = meta["exercise"], meta.get("role")
        assert role in ROLES, f"{name} cell {i}: role {role!r} is not one of {ROLES}"
        roles = found.setdefault(key, {})
        assert role not in roles, f"{name}: {key} has two {role} cells"
        roles[role] = i
        if key not in order:
            order.append(key)
    out = []
    for key in order:
        roles = found[key]
        assert set(roles) == set(ROLES), f"{name}: {key} has cells {sorted(roles)}"
        idx = [roles[r] for r in ROLES]
        assert idx == list(range(idx[0], idx[0] + 3)), \
            f"{name}: {key}'s question, answer and check cells must be consecutive: {idx}"
        q, a, c = (nb.cells[i] for i in idx)
        assert a.cell_type == "code" and c.cell_type == "code", key
        # the question: markdown, or (an exercise with variants) a code cell that asks it with
        # this student's numbers
        assert q.cell_type == "markdown" or (
            re.fullmatch(rf"""cubelab\.exercises\.get\(["']{re.escape(key)}["']\)\.ask\(\)""",
                         q.source.strip())), \
            f"{name}: {key}'s question cell is markdown or exactly `...get({key!r}).ask()`"
        last = [ln for ln in a.source.strip().splitlines() if ln.strip()][-1]
        assert re.fullmatch(r"answer\s*=\s*\.\.\.\s*(#.*)?", last.strip()), \
            f"{name}: {key}'s answer cell must end with a blank `answer = ...`, not {last!r}"
        assert f'"{key}"' in c.source or f"'{key}'" in c.source, \
            f"{name}: {key}'s check cell does not name its exercise"
        out.append(ExerciseCells(key, idx))
    return out


def solutions(stem: str) -> dict[str, str]:
    """{key: solved answer-cell source} from notebooks/solutions/<stem>.py."""
    path = SOLUTIONS / f"{stem}.py"
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    key = None
    lines: list[str] = []
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*%%\s*exercise:\s*(\S+)\s*$", line)
        if m:
            if key is not None:
                out[key] = "\n".join(lines).strip() + "\n"
            key, lines = m.group(1), []
        elif key is not None:
            lines.append(line)
    if key is not None:
        out[key] = "\n".join(lines).strip() + "\n"
    return out


def all_solutions() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(SOLUTIONS.glob("*.py")):
        out.update(solutions(path.stem))
    return out


def solved_answer(key: str, source: str, client: Any) -> Any:
    """Run a solution section on its own (with the notebooks' imports and `client`) and return
    its `answer`. The source goes into linecache under a name, as a notebook cell's does, so
    `@cube` can read the kernels it defines."""
    src = SOLUTION_PRELUDE + source
    filename = f"<solution {key}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": f"solution_{key.replace('.', '_')}", "client": client}
    exec(compile(src, filename, "exec"), ns)
    return ns["answer"]


def results_cell() -> str:
    return ("import json as _json, cubelab.exercises as _ex\n"
            f"print({RESULTS_MARK!r} + _json.dumps(_ex.results()))")


def read_results(nb: Any) -> dict[str, str]:
    for o in nb.cells[-1].get("outputs", []):
        if o.get("output_type") == "stream" and RESULTS_MARK in o.get("text", ""):
            return json.loads(o["text"].split(RESULTS_MARK, 1)[1])
    raise AssertionError("the results cell printed nothing")
