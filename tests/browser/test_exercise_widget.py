"""The real-browser test of a chapter's exercise: JupyterLab opens chapter 1 as committed, runs
every cell, and a student answers exercise 1.2 through its widget — types into the answer box,
clicks "Check" — and sees the real run accept it. Then JupyterLab saves the chapter, and the
checkout's git filter (nbstripout, as `scripts/setup.sh` configures it) turns the saved file
back into exactly the committed one: a student's run and save leaves `git status` clean, so a
`git pull` of the teacher's next update is never refused.

It reuses `test_jupyterlab.py`'s JupyterLab fixture and helpers (same recipe: Debian chromium
through Playwright, JupyterLab in its own process group, throw-away settings) and uploads the
chapter through the contents API. Skips without a browser, except in CI where that fails.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

from test_jupyterlab import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, lab,  # noqa: F401
                             open_notebook, run_all)

CHAPTER = Path(__file__).resolve().parents[2] / "notebooks" / "01_first_kernels.ipynb"
KEY = "ch01.units_in_a_launch"


def _committed(path: Path) -> str:
    root = path.parents[1]
    rel = path.relative_to(root).as_posix()
    return subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel}"], capture_output=True,
                          text=True, check=True, timeout=60).stdout


def _through_the_git_filter(saved: Path) -> str:
    """`saved` as `git add` would store it: nbstripout as `scripts/setup.sh` configures the
    filter (`--keep-id` and the keys of `scripts/nbstripout-extra-keys`). Built here from the
    same file rather than read from `.git/config`, which every checkout of this repository
    shares and the last set-up to run has written."""
    import sys

    root = CHAPTER.parents[1]
    keys = " ".join(ln.strip() for ln in (root / "scripts" / "nbstripout-extra-keys")
                    .read_text().splitlines() if ln.strip() and not ln.startswith("#"))
    out = subprocess.run([sys.executable, "-m", "nbstripout", "--keep-id", "--extra-keys", keys],
                         input=saved.read_text(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _upload(base: str, token: str) -> int:
    """Put the chapter into the server's root; return its number of code cells."""
    nb = json.loads(CHAPTER.read_text())
    body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
    req = urllib.request.Request(f"{base}/api/contents/{CHAPTER.name}?token={token}", data=body,
                                 method="PUT", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30):
        pass
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code")


def _numbers() -> tuple[str, str]:
    """A wrong and the right answer for this student's variant of the exercise (the JupyterLab
    process runs as the same user, so it asks the same variant), from a real run."""
    import cubelab.exercises as ex
    from cubelab import Device

    right = ex.get(KEY)._truth(Device.cpu().client())
    return str(right + 1), str(right)


def test_a_student_answers_a_chapter_exercise_through_its_widget(lab):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    base, token, work = lab
    wrong, right = _numbers()
    code_cells = _upload(base, token)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        try:
            open_notebook(page, base, token, CHAPTER.name)
            run_all(page, code_cells)
            expect(page.locator(".jp-OutputArea-output", has_text="Traceback")).to_have_count(0)

            # as committed, every exercise says "not answered yet"
            views = page.locator(".cubelab-exercise")
            expect(views).to_have_count(4, timeout=30_000)
            expect(page.locator(".cubelab-exercise-result[data-status='unanswered']")) \
                .to_have_count(4)

            view = page.locator(".cubelab-exercise", has=page.locator(
                f".cubelab-exercise-result[data-key='{KEY}']"))
            box = view.locator(".cubelab-exercise-answer input")
            check = view.locator("button.cubelab-exercise-check")

            # a wrong answer first: rejected, with a hint
            box.fill(wrong)
            check.click()
            verdict = view.locator(".cubelab-exercise-result")
            expect(verdict).to_have_attribute("data-status", "wrong", timeout=30_000)
            expect(verdict).to_contain_text("Hint")

            # then the right one: the check launches count_units for real and accepts it
            box.fill(right)
            check.click()
            expect(verdict).to_have_attribute("data-status", "correct", timeout=30_000)
            expect(verdict).to_contain_text(right)
            expect(box).to_have_value(right)  # the box keeps what was typed
            view.screenshot(path=str(ARTIFACTS / "exercise_widget_correct.png"))

            # run, answered, saved: what git would store is the committed chapter, unchanged
            page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
            saved = work / CHAPTER.name
            page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model"
                                   ".dirty", timeout=30_000)
            assert '"output_type"' in saved.read_text()  # saved with its outputs
            stored, committed = _through_the_git_filter(saved), _committed(CHAPTER)
            if stored != committed:
                import difflib

                diff = "".join(difflib.unified_diff(committed.splitlines(True),
                                                    stored.splitlines(True), n=1))
                raise AssertionError(f"a saved chapter differs from the committed one:\n{diff}")
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "exercise_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
