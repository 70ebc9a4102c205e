"""The real-browser test of the chapters and capstones this course gained with its three tracks
(compiler 10–11, performance 12–13, plane ops 14, the cubelab puzzles 15, and each part's
capstone): JupyterLab opens each as committed, runs every cell, and the DOM shows what a student
sees — no traceback, every exercise's view saying "not answered yet" — plus what each chapter is
about: chapter 12's roofline widget holds its four kernels, chapter 13's access map colours the
stride-16 read red and its roofline holds the matmul's three steps, every figure of the puzzles
loads beside its question, and a compiler-track prediction is answered wrong, then right (the
number from a real run of this student's variant). A screenshot of each goes to
`artifacts/browser/` — what the closing note of the tracks' issue cites.

One browser serves every notebook (`test_jupyterlab.py`'s lab fixture and helpers); the
notebooks and figures are copied into the lab's folder. Skips without a browser, except in CI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from test_jupyterlab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, lab, run_all  # noqa: F401

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NEW = ["10_compiler_write_a_pass", "11_compiler_lower_an_op", "capstone_compiler",
       "12_performance_launch_and_bandwidth", "13_performance_memory_access",
       "capstone_performance", "14_plane_ops_and_reductions", "15_puzzles_cubelab",
       "capstone_kernels", "capstone_runtime"]

# every <img> of rendered markdown that points at a committed figure, and whether it loaded
FIGURES = """() => [...document.querySelectorAll('.jp-RenderedMarkdown img')]
  .filter(i => i.getAttribute('src').includes('figures/'))
  .map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))"""


@pytest.fixture(scope="module")
def browser(lab):  # type: ignore[no-untyped-def]  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _place(work: Path, stem: str) -> tuple[int, int]:
    """The notebook (and the figures it shows) into the lab's folder: (code cells, exercises)."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    shutil.copy(path, work / path.name)
    if not (work / "figures").exists():
        shutil.copytree(NOTEBOOKS / "figures", work / "figures")
    nb = json.loads(path.read_text())
    code = sum(1 for c in nb["cells"] if c["cell_type"] == "code")
    checks = sum(1 for c in nb["cells"]
                 if c.get("metadata", {}).get("cubelab", {}).get("role") == "check")
    return code, checks


def _answer_wrong_then_right(page, key: str) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    import cubelab.exercises as ex
    from cubelab import Device

    right = ex.get(key)._truth(Device.cpu().client())
    view = page.locator(".cubelab-exercise", has=page.locator(
        f".cubelab-exercise-result[data-key='{key}']"))
    box = view.locator(".cubelab-exercise-answer input")
    verdict = view.locator(".cubelab-exercise-result")
    box.fill(str(right + 1))
    view.locator("button.cubelab-exercise-check").click()
    expect(verdict).to_have_attribute("data-status", "wrong", timeout=30_000)
    box.fill(str(right))
    view.locator("button.cubelab-exercise-check").click()
    expect(verdict).to_have_attribute("data-status", "correct", timeout=30_000)
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(ARTIFACTS / f"{key}.png"))


def _roofline_holds(page, kernels: list[str], stem: str) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    roof = page.locator(".cubelab-roofline").last
    expect(roof.locator("tr.cl-roofline-row")).to_have_count(len(kernels), timeout=30_000)
    for name in kernels:
        expect(roof.locator("tr.cl-roofline-row", has_text=name)).to_have_count(1)
    expect(roof.locator(".cubelab-roofline-chart svg")).to_have_count(1)
    roof.scroll_into_view_if_needed()
    roof.screenshot(path=str(ARTIFACTS / f"{stem}_roofline.png"))


@pytest.mark.parametrize("stem", NEW)
def test_a_new_chapter_runs_in_jupyterlab_as_a_student_meets_it(lab, browser, stem):  # noqa: F811
    from playwright.sync_api import expect

    base, token, work = lab
    code_cells, exercises = _place(work, stem)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    try:
        # a workspace of its own, reset: JupyterLab would otherwise reopen the notebooks of the
        # tests before and "Run All" could run one of those
        page.goto(f"{base}/lab/workspaces/{stem}/tree/{stem}.ipynb?reset&token={token}")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        run_all(page, code_cells, timeout_ms=300_000)
        expect(page.locator(".jp-OutputArea-output", has_text="Traceback")).to_have_count(0)
        expect(page.locator(".cubelab-exercise-result[data-status='unanswered']")) \
            .to_have_count(exercises, timeout=30_000)
        if stem.startswith("12_"):
            _roofline_holds(page, ["copy", "scale_add", "poly4", "poly64"], stem)
        elif stem.startswith("13_"):
            amap = page.locator(".cubelab-access-map").first
            red = amap.locator("g.cost-line[data-array='x'][data-kind='read']")
            expect(red).to_have_count(1, timeout=30_000)
            assert float(red.get_attribute("data-badness")) == 1.0  # stride 16: 8× the sectors
            amap.scroll_into_view_if_needed()
            amap.screenshot(path=str(ARTIFACTS / f"{stem}_access_map.png"))
            _roofline_holds(page, ["naive", "tiled t=8", "tiled t=16"], stem)
        elif stem.startswith("15_"):
            page.wait_for_function(f"() => ({FIGURES})().every(f => f.ok)", timeout=30_000)
            assert len(page.evaluate(FIGURES)) == 24
        elif stem.startswith("10_"):
            _answer_wrong_then_right(page, "ch10.muls_in_ir")
        elif stem.startswith("11_"):
            _answer_wrong_then_right(page, "ch11.components_in_c")
        first = page.locator(".jp-Cell", has=page.locator(".cubelab-exercise-result")).first
        first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"{stem}.png"))
        page.evaluate("window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"{stem}_failure.png"), full_page=True)
        raise
    finally:
        page.close()
