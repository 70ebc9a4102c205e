"""Write notebooks/15_puzzles_cubelab.ipynb and its figures from puzzles_cubelab.py.

    .venv/bin/python scripts/puzzles_cubelab_notebook.py          # notebook and figures
    .venv/bin/python scripts/puzzles_cubelab_notebook.py --figures  # figures only

The puzzles' text lives once, in the module (each puzzle's question, story and figure caption);
this script lays it out as the notebook — the opening, one section per category, three cells
per puzzle (question, answer, check) — and draws each figure with `AccessMap.to_svg()` into
notebooks/figures/puzzles_cubelab/. tests/test_puzzles.py holds the committed notebook and
figures to what this script writes, so edit the module, then run this.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cubelab.exercises as ex  # noqa: E402
from cubelab.exercises import puzzles_cubelab as pc  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "15_puzzles_cubelab.ipynb"
FIGURES = ROOT / "notebooks" / pc.FIGURE_DIR

OPENING = """\
# 15 · Puzzles only cubelab can pose

**Follows:** both of CubeCL's chapters this course is built on — the one on `#[cube]` kernels
(expansion, comptime values, the KernelId and the pipeline cache) and the one on launch and
execution (failure as a state of buffers, dry runs, streams, capture, autotune) — and the plane
ops and cost instruments of chapters 13–14. For the Rust:
[CubeCL on GitHub](https://github.com/tracel-ai/cubecl) ([`cubecl-runtime`](https://github.com/tracel-ai/cubecl/tree/main/crates/cubecl-runtime)
holds the cache, the streams and the tuner).

**You will learn** to *use* what the chapters showed, one small program at a time:

- the **cache**: make launches compile exactly as often as you mean (what is compiled in, what
  is data; a warm-up that runs nothing; a tuner's key);
- **expansion**: what Python decides while a kernel is built, and what reaches the device; where
  a panic during expansion is reported;
- **failure as buffer state**: which reads raise, how few launches repair a tainted chain, a
  precompile that taints nothing;
- **streams and capture**: which streams must wait for each other, what a replay compiles, a
  graph that sees fresh inputs;
- **plane ops**: reductions, scans, votes and shuffles whose answer depends on your device's
  plane width;
- **cost**: coalesced reads and writes, and shared memory without bank conflicts, measured on
  your device's planes.

**Time:** about 2½ hours for all 24; each puzzle stands alone, so pick a category.

Puzzles 1–14 and 20–24 are ones a puzzle set that only compares output values cannot pose: their
checks read what the runtime reports — compiles, dispatches, failures, stream alignments, the
compiled IR, the access map's sectors and bank conflicts. Puzzles 15–19 (plane ops) could be
posed elsewhere; here their answers come from your device.

**How a puzzle works.** Each gives a **spec** (what must happen), a **template** in the answer
cell — the first attempt a student writes, or a kernel with a blank — with `# FILL ME IN` where
your change goes, a **fixed program or geometry** (you do not choose it), and a **check** that
runs the real thing: it clears the cache, runs the program with your answer in it, and reads
the events, the IR, the buffers and the access map. Replace `answer = ...` with your function
or kernel (or, for puzzles 7, 10, 12 and 19, with a value) and run the check cell. A wrong
answer is told what *its* run did — never what would pass — and one more tier of hint each
time: a nudge, the concept, then a worked step on another program.

Beside each puzzle is an **access map** — what each unit of a kernel touched, drawn by
`AccessMap.to_svg()` — of the puzzle's first attempt (or of a kernel its program launches).
Draw your own with `cubelab.exercises.get(KEY).access_map(your_kernel)` for the kernel puzzles,
or `cubelab.inspect.access_map(...)` for any launch."""

SETUP = """\
import numpy as np
import cubelab
import cubelab.exercises
from cubelab import inspect
from cubelab.prelude import *
from cubelab.exercises.puzzle_programs import *   # the kernels and helpers the programs use

client = Device.default().client()

@cube(launch=True)
def plane_width(out: SliceMut[u32]):
    out[0] = PLANE_DIM

width = client.create_from_slice(bytes(4))
plane_width.launch(client, CubeCount.Static(1), CubeDim.new_1d(1), BufferArg.from_raw_parts(width, 1))
print("runtime:", client.name(), "| units per plane:", int(u32.from_bytes(client.read_one(width))[0]))"""

KERNELS = """\
The programs launch a few small kernels (`cubelab/exercises/puzzle_programs.py`); here they are,
so you can read what each does. `floats(client, values)` makes an f32 buffer, `arg(h, n=8)` its
`BufferArg`, `ONE` is `CubeCount.Static(1)` and `EIGHT` is `CubeDim.new_1d(8)`."""

KERNELS_CODE = """\
for k in (add_ten, double, add2, scale, inc, neg, pick, too_big):
    print(inspect.source(k))"""

SECTIONS = {
    "cache": ("The cache", "A launch compiles when its KernelId is new (chapter 3). These puzzles "
              "turn that around: make a program compile exactly as often as you mean."),
    "expansion": ("Expansion", "A kernel is a Python function that *builds* the IR (chapter 2): "
                  "whatever Python decides while it runs never reaches the device — and "
                  "whatever Python raises is reported on the device thread."),
    "failure": ("Failure is buffer state", "A failed launch returns nothing and raises nothing: "
                "its failure lives on the buffers it would have written (chapter 7)."),
    "streams": ("Streams and capture", "Streams are inferred to depend on each other through "
                "buffers, and a capture window records launches for replay (chapter 8)."),
    "plane": ("Plane ops", "A plane is PLANE_DIM consecutive units that run in lockstep "
              "(chapter 14). Your device decides PLANE_DIM — the set-up cell printed it."),
    "cost": ("Cost", "The access map's instruments count 32-byte sectors per plane-instruction "
             "and shared-memory bank conflicts (chapter 13), at your device's plane width."),
}

CLOSING = """\
## What the puzzles covered

| # | puzzle | category | what only cubelab can check |
|---|---|---|---|
{rows}

Every check above ran your program for real on this notebook's runtime; a grader runs the same
checks on the CPU runtime (`cubelab course build`)."""


def _tag(cell: nbformat.NotebookNode, key: str, role: str) -> nbformat.NotebookNode:
    cell.metadata["cubelab"] = {"exercise": key, "role": role}
    return cell


def build() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                  "name": "python3"}, "language_info": {"name": "python"}}
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md(OPENING), code(SETUP), md(KERNELS), code(KERNELS_CODE)]
    section = None
    rows = []
    for n, key in enumerate(pc.ORDER, 1):
        info = pc.INFO[key]
        e = ex.get(key)
        if info.category != section:
            section = info.category
            title, text = SECTIONS[section]
            cells.append(md(f"## {title}\n\n{text}"))
        if isinstance(e, (pc.KernelPuzzle, pc.ProgramPuzzle)):
            cells.append(_tag(md(e.question), key, "question"))
            cells.append(_tag(code(e.template.rstrip("\n")), key, "answer"))
        else:
            cells.append(md(f"{info.story}\n\n{info.image}"))
            cells.append(_tag(code(f'cubelab.exercises.get("{key}").ask()'), key, "question"))
            cells.append(_tag(code("answer = ..."), key, "answer"))
        cells.append(_tag(code(f'cubelab.exercises.get("{key}").show(answer)'), key, "check"))
        only = info.only_cubelab or ("— (a warp-puzzle set could pose it; the answer is your "
                                     "device's)")
        rows.append(f"| {n} | {e.title.split(' · ', 1)[1]} | {info.category} | {only} |")
    cells.append(md(CLOSING.format(rows="\n".join(rows))))
    for i, cell in enumerate(cells):  # stable ids: a rebuild changes only what changed
        meta = cell.metadata.get("cubelab")
        cell.id = f"{meta['exercise'].split('.')[1]}-{meta['role']}" if meta else f"cell-{i}"
    nb.cells = cells
    return nb


def main(argv: list[str]) -> None:
    written = pc.write_all_figures(FIGURES)
    print(f"{len(written)} figures in {FIGURES.relative_to(ROOT)}")
    if "--figures" in argv:
        return
    nb = build()
    nbformat.validator.normalize(nb)
    NOTEBOOK.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}: {len(nb.cells)} cells")


if __name__ == "__main__":
    main(sys.argv[1:])
