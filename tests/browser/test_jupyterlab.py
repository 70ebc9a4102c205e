"""The real-browser test: JupyterLab on localhost, headless Debian Chromium driven by Playwright.

It writes a notebook that displays a CacheMonitor, a BufferBoard and a `%%cube` inspector, runs
all cells in JupyterLab, and asserts in the DOM what a student would see: the inspector's WGSL
tab (after clicking it), the cache monitor's counts after the seed's quiz (3 compiles, 1 hit),
and the buffer board's failed and skipped rows with their root cause — all updated live from the
UI thread, not by re-running a cell. It also checks the launch timeline's hops and
clicks the Stepper's "forward" button; then it switches JupyterLab to its dark theme and checks
the highlighting follows it. Layout is asserted as a student would see it: no text cut or clipped
(errors and hints whole, cell labels naming their own cell), one row per generated line when a
kernel line is picked, one row per launch, the stepper's current op on screen at the end of a
trace, singular counts ("1 cache hit") and rows of one kernel told apart. The Roofline widget
shows its chart (matplotlib's SVG), a row per kernel and the picked kernel's report. Screenshots of each view go to `artifacts/browser/` (git-ignored).

Recipe (docs/jupyter.md): Debian's `chromium` through Playwright's `executable_path` (Playwright
never downloads a browser here), JupyterLab started in its own process group on a free port with
a random token and throw-away settings/workspace dirs, `windowingMode: none` so every cell is in
the DOM. Without chromium or playwright the test skips — except in CI (CI=true or
CUBELAB_EXPECT_WGPU=1), where a missing browser FAILS.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CUBELAB_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-quic"]

CELLS = [
    "%load_ext cubelab",
    "import numpy as np\n"
    "from cubelab import Device, BufferArg, CubeCount, CubeDim\n"
    "from cubelab.prelude import f32\n"
    "from cubelab.widgets import CacheMonitor, BufferBoard\n"
    "client = Device.default().client()\n"
    "client.clear_cache()\n"
    "monitor = CacheMonitor(client)\n"
    "monitor",
    "board = BufferBoard(client)\nboard",
    "from cubelab.widgets import LaunchTimeline\ntimeline = LaunchTimeline(client, last=8)\n"
    "timeline",
    "%%cube --show source,ir,wgsl,msl\n"
    "from cubelab.prelude import *\n"
    "\n"
    "def boom(n):\n"
    "    raise ValueError('boom during expansion')\n"
    "\n"
    "@cube(launch=True)\n"
    "def double(x: SliceMut[f32]):\n"
    "    x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0\n"
    "\n"
    "@cube(launch=True)\n"
    "def broken(out: SliceMut[f32], n: Comptime[int]):  # fails at launch, for any n\n"
    "    out[ABSOLUTE_POS] = f32(comptime(boom(n)))\n"
    "\n"
    "@cube(launch=True)\n"
    "def copy(x: Slice[f32], out: SliceMut[f32]):\n"
    "    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]",
    "a = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))\n"
    "b = client.create_from_slice(f32.as_bytes(np.zeros(4, dtype=np.float32)))\n"
    "broken.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(a, 4),\n"
    "              1)\n"
    "copy.launch(client, CubeCount.Static(1), CubeDim.new_1d(4), BufferArg.from_raw_parts(a, 4),\n"
    "            BufferArg.from_raw_parts(b, 4))\n"
    "try:\n"
    "    client.read_one(b)\n"
    "except Exception as exc:\n"
    "    print('read failed as expected:', type(exc).__name__)\n"
    "print('failure chain ran')",
    "from cubelab.exercises import HOW_MANY_COMPILES\n"
    "monitor.reset()  # count only the quiz's launches\n"
    "report = HOW_MANY_COMPILES.run(client)\n"
    "print('compiles', report.compiles, 'hits', report.hits)",
    "from cubelab import inspect\nfrom cubelab.widgets import Stepper\n"
    "v = client.create_from_slice(f32.as_bytes(np.arange(4, dtype=np.float32)))\n"
    "t = inspect.trace(double.launch, client, CubeCount.Static(1), CubeDim.new_1d(4),\n"
    "                  BufferArg.from_raw_parts(v, 4), units=[2])\n"
    "stepper = Stepper(t)\nstepper",
    "from cubelab.widgets import Roofline\n"
    "from tests.fixtures.cost_kernels import saxpy\n"
    "cpu = Device.cpu().client()  # its peaks take a fraction of a second to measure\n"
    "xs = cpu.create_from_slice(f32.as_bytes(np.ones(16384, dtype=np.float32)))\n"
    "ys = cpu.create_from_slice(f32.as_bytes(np.ones(16384, dtype=np.float32)))\n"
    "r = inspect.roofline(saxpy.launch, cpu, CubeCount.Static(64), CubeDim.new_1d(256), 2.0,\n"
    "                     BufferArg.from_raw_parts(xs, 16384), BufferArg.from_raw_parts(ys, 16384),\n"
    "                     repeats=3)\n"
    "Roofline(r)",
    "print('done')",
]


# `commands.execute` returns a promise that settles only when every cell has run, so it is not
# awaited; before it, wait until the notebook's kernel is connected and idle (a "run all" sent
# earlier is silently dropped).
RUN_ALL = """async (timeoutMs) => {
  const app = window.jupyterapp;
  const nb = app.shell.currentWidget;
  await nb.context.ready;
  await nb.sessionContext.ready;
  const t0 = Date.now();
  for (;;) {
    const k = nb.sessionContext.session && nb.sessionContext.session.kernel;
    if (k && k.status === 'idle' && k.connectionStatus === 'connected') break;
    if (Date.now() - t0 > timeoutMs) throw new Error('the kernel never became idle');
    await new Promise(r => setTimeout(r, 100));
  }
  app.shell.activateById(nb.id);
  app.commands.execute('notebook:run-all-cells');
}"""

ALL_RAN = """(n) => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .map(e => e.textContent.trim());
  return prompts.length === n && prompts.every(p => /^\\[\\d+\\]:$/.test(p));
}"""


# Every generated line of a code pane is its own row: as many distinct row tops as line spans,
# none taller than a line (a highlighted line once became an inline-block that shared a row).
ONE_ROW_PER_LINE = """(pane) => {
  const spans = [...pane.querySelectorAll('pre > span[id]')];
  const box = s => { const r = document.createRange(); r.selectNodeContents(s);
                     return r.getBoundingClientRect(); };
  const tops = new Set(spans.map(s => Math.round(box(s).top)));
  const lh = parseFloat(getComputedStyle(pane.querySelector('pre')).lineHeight);
  const tallest = Math.max(...spans.map(s => box(s).height));
  return {lines: spans.length, distinct_tops: tops.size, line_height: lh, tallest: tallest,
          highlighted: pane.querySelectorAll('.hll').length};
}"""

# Text a view cannot show: table cells, messages and keys whose content is wider than their box.
CLIPPED = """(view) => [...view.querySelectorAll('td, .cl-msg, .cl-key, summary, .cubelab-code')]
  .filter(e => e.getClientRects().length && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.slice(0, 80))"""

# How many text lines tall each launch row is (a row of a launch that went through).
ROW_LINES = """(view) => [...view.querySelectorAll("tr.cl-launch[data-status='dispatched']")]
  .map(r => {
    const td = r.querySelector('td'), probe = document.createElement('div');
    probe.textContent = 'X';  // a block of one line: as tall as the cell's line height
    td.appendChild(probe);
    const line = probe.getBoundingClientRect().height;
    probe.remove();
    return r.getBoundingClientRect().height / line;
  })"""


def open_notebook(page, base: str, token: str, name: str) -> None:  # type: ignore[no-untyped-def]
    """Open notebook `name` of the lab in `page` and wait until its cells are in the DOM."""
    page.goto(f"{base}/lab/tree/{name}?token={token}")
    page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


def run_all(page, code_cells: int, timeout_ms: int = 180_000) -> None:  # type: ignore[no-untyped-def]
    """Run every cell of the open notebook and wait until all `code_cells` have run."""
    page.evaluate(RUN_ALL, 60_000)
    page.wait_for_function(ALL_RAN, arg=code_cells, timeout=timeout_ms)


def _require_browser() -> None:
    ci = os.environ.get("CI", "").lower() in ("1", "true") or \
        os.environ.get("CUBELAB_EXPECT_WGPU") == "1"
    missing = []
    if not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"chromium at {CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install -e '.[test]')")
    if missing:
        message = "the real-browser test needs " + " and ".join(missing)
        if ci:
            pytest.fail(message + " — in CI a missing browser fails, never skips")
        pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


def _settings(root: Path) -> Path:
    settings = root / "settings"
    for ext, name, value in [
        ("@jupyterlab/notebook-extension", "tracker", {"windowingMode": "none"}),
        ("@jupyterlab/apputils-extension", "notification",
         {"fetchNews": "false", "checkForUpdates": False}),
    ]:
        d = settings / ext
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.jupyterlab-settings").write_text(json.dumps(value))
    return settings


@pytest.fixture(scope="module")
def lab(tmp_path_factory):  # type: ignore[no-untyped-def]
    _require_browser()
    from cubelab.lab import lab_command

    root = tmp_path_factory.mktemp("lab")
    work = root / "work"
    work.mkdir()
    _notebook(work / "views.ipynb")
    (work / "solutions").mkdir()  # a student's lab keeps it out of view
    (work / "solutions" / "01_first_kernels.py").write_text("# the answers\n")
    port, token = _free_port(), secrets.token_hex(16)
    # the student's lab, as `bash scripts/lab.sh` and `cubelab lab` start it — in this venv,
    # where the test extra has installed nbgrader (its UI must still be off)
    cmd, env = lab_command(work, teacher=False)
    env.update(JUPYTER_CONFIG_DIR=str(root / "config"),
               JUPYTER_RUNTIME_DIR=str(root / "runtime"), CUBELAB_DEVICE="",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                           os.environ.get("PYTHONPATH", "")]))
    cmd = [c for c in cmd if c != "--allow-root"] + [
           "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}",
           f"--LabApp.user_settings_dir={_settings(root)}",
           f"--LabApp.workspaces_dir={root / 'workspaces'}", "--LabApp.expose_app_in_browser=True",
           "--ServerApp.allow_root=True", "--LabApp.extension_manager=readonly",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(root / "lab.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("jupyter lab did not start:\n"
                                + (root / "lab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield base, token, work
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # only the group we started
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_jupyterlab_renders_the_inspector_cache_monitor_and_buffer_board(lab):
    from playwright.sync_api import expect, sync_playwright

    base, token, _ = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        try:
            open_notebook(page, base, token, "views.ipynb")

            # a student's lab: nbgrader's menu, "Create Assignment" sidebar and "Validate"
            # button are off — though this venv has nbgrader's extension installed — and the
            # solutions folder is not in the file browser
            assert (Path(sys.prefix) / "share/jupyter/labextensions/@jupyter/nbgrader").is_dir()
            assert page.evaluate(
                "window.jupyterapp.listPlugins().filter(p => p.includes('nbgrader'))") == []
            expect(page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader")).to_have_count(0)
            expect(page.locator(".jp-Toolbar >> text=Validate")).to_have_count(0)
            expect(page.locator(".jp-DirListing-itemName", has_text="views.ipynb")) \
                .to_be_visible(timeout=30_000)
            expect(page.locator(".jp-DirListing-itemName", has_text="solutions")) \
                .to_have_count(0)

            page.evaluate(RUN_ALL, 60_000)
            try:
                page.wait_for_function(ALL_RAN, arg=len(CELLS), timeout=120_000)
            except Exception:
                errors = page.locator(".jp-OutputArea-output", has_text="Error").all_inner_texts()
                raise AssertionError(f"not every cell ran; errors shown: {errors}") from None
            expect(page.locator(".jp-RenderedText", has_text="compiles 3 hits 1")).to_be_visible()
            expect(page.locator(".jp-OutputArea-output", has_text="Traceback")).to_have_count(0)

            # cache monitor: the quiz's 3 compiles and 1 hit, pushed by the UI thread
            monitor = page.locator(".cubelab-cache-monitor")
            expect(monitor.locator(".cl-total-compiles")).to_have_attribute(
                "data-compiles", "3", timeout=20_000)
            expect(monitor.locator(".cl-total-hits")).to_have_attribute("data-hits", "1")
            expect(monitor.locator("tr.cl-row")).to_have_count(3)
            expect(monitor).to_contain_text("execution mode changed")
            expect(monitor.locator(".cl-total-hits")).to_have_text("1 cache hit")
            for key in ("Checked · relu: false", "Unchecked · relu: false",
                        "Checked · relu: true"):
                expect(monitor.locator(".cl-key", has_text=re.compile(f"^{re.escape(key)}$"))
                       ).to_have_count(1)
            expect(monitor).not_to_contain_text("s ago")
            assert monitor.evaluate(CLIPPED) == [], monitor.evaluate(CLIPPED)
            monitor.screenshot(path=str(ARTIFACTS / "cache_monitor.png"))

            # buffer board: the failed input and the skipped output, each naming the root cause
            board = page.locator(".cubelab-buffer-board")
            expect(board.locator("tr[data-state='failed']")).to_have_count(1, timeout=20_000)
            skipped = board.locator("tr[data-state='skipped']")
            expect(skipped).to_have_count(1)
            expect(skipped).to_contain_text("root cause: Broken")
            # the whole error, hint included, never cut mid-word or clipped by the table
            expect(skipped).to_contain_text(
                "hint: only Python values and Comptime[...] arguments are known before launch")
            expect(skipped).to_contain_text("Cell In[5], line 13")
            assert board.evaluate(CLIPPED) == [], board.evaluate(CLIPPED)
            board.screenshot(path=str(ARTIFACTS / "buffer_board.png"))

            # the launch timeline: each launch's two hops, the quiz's last one a cache hit
            timeline = page.locator(".cubelab-launch-timeline")
            expect(timeline.locator("tr.cl-launch[data-status='dispatched']").first).to_be_visible(
                timeout=20_000)
            expect(timeline).to_contain_text("cache hit")
            expect(timeline).to_contain_text("skip: tainted-input")
            timeline.screenshot(path=str(ARTIFACTS / "launch_timeline.png"))
            expect(timeline).to_contain_text(  # a failure's first line whole, the rest a click away
                "could not be evaluated in Python: ValueError('boom during expansion')")
            assert timeline.evaluate(CLIPPED) == [], timeline.evaluate(CLIPPED)
            # a launch that went through is one row of text, not four
            heights = timeline.evaluate(ROW_LINES)
            assert heights and max(heights) < 2, heights

            # the stepper: a real click on "forward" moves to the next op of unit 2
            stepper = page.locator(".cubelab-stepper")
            values = stepper.locator(".cubelab-stepper-values")
            expect(values).to_contain_text("unit 2 · step 1 of")
            stepper.locator("button", has_text="forward").click()
            expect(values).to_contain_text("unit 2 · step 2 of", timeout=10_000)
            # late in the trace the current op is still inside the IR pane, on screen
            slider_steps = stepper.locator(".cubelab-stepper-values").inner_text()
            last = int(slider_steps.split(" of ", 1)[1].split()[0])
            for _ in range(last - 3):
                stepper.locator("button", has_text="forward").click()
            expect(values).to_contain_text(f"step {last - 1} of", timeout=20_000)
            ir_pane = stepper.locator(".cubelab-stepper-ir")
            current = ir_pane.locator(".hll")
            expect(current).to_have_count(1)
            pane_box, op_box = ir_pane.bounding_box(), current.bounding_box()
            assert pane_box and op_box and pane_box["height"] < 900, pane_box
            assert pane_box["y"] <= op_box["y"] <= pane_box["y"] + pane_box["height"], \
                (pane_box, op_box)
            stepper.screenshot(path=str(ARTIFACTS / "stepper.png"))

            # the roofline widget: the chart (matplotlib's SVG, with the kernel in its legend),
            # a row per kernel and the picked kernel's report
            roof = page.locator(".cubelab-roofline")
            expect(roof.locator(".cubelab-roofline-chart svg")).to_have_count(1, timeout=20_000)
            expect(roof.locator(".cubelab-roofline-chart svg")).to_contain_text("saxpy")
            expect(roof.locator("tr.cl-roofline-row")).to_have_count(1)
            expect(roof.locator("tr.cl-roofline-row")).to_contain_text("saxpy")
            expect(roof.locator(".cubelab-roofline-details")).to_contain_text(
                "roofline of `saxpy`")
            chart = roof.locator(".cubelab-roofline-chart svg").bounding_box()
            assert chart and chart["width"] > 300 and chart["height"] > 200, chart
            assert roof.evaluate(CLIPPED) == [], roof.evaluate(CLIPPED)
            roof.screenshot(path=str(ARTIFACTS / "roofline.png"))

            # the inspector of the %%cube cell: click its WGSL tab, see generated WGSL
            inspector = page.locator(".cubelab-kernel-inspector").first
            inspector.locator(".lm-TabBar-tab", has_text="WGSL").click()
            wgsl = inspector.locator(".cubelab-tab-wgsl")
            expect(wgsl).to_be_visible()
            expect(wgsl).to_contain_text("@compute")
            expect(wgsl).to_contain_text("fn double_")
            inspector.screenshot(path=str(ARTIFACTS / "kernel_inspector_wgsl_light.png"))

            # the %%cube cell (the fifth) names itself, not the next cell
            expect(inspector).to_contain_text("Cell In[5], line")

            # a kernel line picked: every generated line it became keeps its own row
            inspector.locator(".cubelab-kernel-lines select").select_option(
                label="9: x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * 2.0")
            expect(wgsl.locator(".hll").first).to_be_visible(timeout=10_000)
            rows = wgsl.evaluate(ONE_ROW_PER_LINE)
            assert rows["highlighted"] >= 2, rows
            assert rows["distinct_tops"] == rows["lines"], rows
            assert rows["tallest"] < 2 * rows["line_height"], rows
            inspector.screenshot(path=str(ARTIFACTS / "kernel_inspector_line_picked.png"))

            # the highlighting follows JupyterLab's theme (CSS variables, not fixed colours)
            keyword = wgsl.locator(".cubelab-code .k, .cubelab-code .kd").first
            light = keyword.evaluate("e => getComputedStyle(e).color")
            page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', "
                          "{theme: 'JupyterLab Dark'})")
            page.wait_for_function("document.body.dataset.jpThemeLight === 'false'",
                                   timeout=30_000)
            expect(keyword).not_to_have_css("color", light, timeout=10_000)
            inspector.screenshot(path=str(ARTIFACTS / "kernel_inspector_wgsl_dark.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
