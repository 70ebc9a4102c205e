"""Every widget and printed report, readable at 1280 px in JupyterLab's light and dark themes.

One notebook shows each view a student meets — CacheMonitor, BufferBoard, LaunchTimeline (with
a gated launch), MemoryBoard, a `%%cube` KernelInspector with a long kernel line, AccessMap (a
race), Stepper, an exercise's answer box and a kernel answer that does not compile, the Quiz —
and two printed reports (a KernelId explained, the `%cubelab oob on` report). In a 1280×900
Chromium window (the file browser open), in the light theme and then the dark one, each view is
photographed (`artifacts/browser/theme-<view>-<theme>.png`) and must have:

- nothing clipped: no text wider than its box, no view wider than the output area;
- no white panel in the dark theme and no text the eye cannot read: every piece of text keeps a
  contrast of at least 3:1 (WCAG's floor for large text and UI) against what it is drawn on,
  and the access map's drawing takes the theme's background;
- printed reports never wrapped: each printed line takes one line on screen.

It uses `test_jupyterlab.py`'s recipe and fixture (its own JupyterLab for this module).
"""

from __future__ import annotations

import pytest

from test_jupyterlab import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, lab,  # noqa: F401
                             open_notebook, run_all)

CELLS = [
    "%load_ext cubelab",
    "import numpy as np\n"
    "import cubelab.exercises as ex\n"
    "from cubelab import inspect\n"
    "from cubelab.prelude import *\n"
    "from cubelab.widgets import (CacheMonitor, BufferBoard, LaunchTimeline, MemoryBoard,\n"
    "                             Stepper, AccessMap, Quiz)\n"
    "client = Device.default().client()\n"
    "client.clear_cache()\n"
    "CacheMonitor(client)",
    "BufferBoard(client)",
    "LaunchTimeline(client, last=6)",
    "MemoryBoard(client)",
    "%%cube --show source,ir,wgsl\n"
    "@cube(launch=True)\n"
    "def scale_every_item(x: Slice[f32], out: SliceMut[f32], factor: f32):\n"
    "    if ABSOLUTE_POS < out.len():\n"
    "        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * factor + x[ABSOLUTE_POS] * factor * factor"
    " - x[ABSOLUTE_POS]\n",
    "def boom(n):\n"
    "    raise ValueError('boom while building the kernel')\n"
    "\n"
    "@cube(launch=True)\n"
    "def broken(out: SliceMut[f32], n: Comptime[int]):\n"
    "    out[ABSOLUTE_POS] = f32(comptime(boom(n)))\n"
    "\n"
    "xs = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))\n"
    "scaled = client.empty(16 * 4)\n"
    "failed = client.empty(16 * 4)\n"
    "args = (BufferArg.from_raw_parts(xs, 16), BufferArg.from_raw_parts(scaled, 16), 2.0)\n"
    "scale_every_item.launch(client, CubeCount.Static(4), CubeDim.new_1d(4), *args)\n"
    "scale_every_item.launch(client, CubeCount.Static(0), CubeDim.new_1d(4), *args)  # gated\n"
    "broken.launch(client, CubeCount.Static(4), CubeDim.new_1d(4),\n"
    "              BufferArg.from_raw_parts(failed, 16), 1)\n"
    "client.sync()",
    "@cube(launch=True)\n"
    "def block_sum(x: Slice[f32], out: SliceMut[f32]):\n"
    "    sm = SharedMemory[f32](8)\n"
    "    sm[UNIT_POS] = x[ABSOLUTE_POS]\n"
    "    if UNIT_POS == 0:  # no sync_cube() before reading the others' items: a race\n"
    "        acc = f32(0.0)\n"
    "        for i in range(8):\n"
    "            acc += sm[i]\n"
    "        out[CUBE_POS] = acc\n"
    "\n"
    "sums = client.empty(2 * 4)\n"
    "AccessMap(inspect.access_map(block_sum.launch, client, CubeCount.Static(2),\n"
    "                             CubeDim.new_1d(8), BufferArg.from_raw_parts(xs, 16),\n"
    "                             BufferArg.from_raw_parts(sums, 2)))",
    "Stepper(inspect.trace(scale_every_item.launch, client, CubeCount.Static(4),\n"
    "                      CubeDim.new_1d(4), *args, units=[5]))",
    "ex.get('ch01.cube_of_each_unit').show([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3])",
    "@cube(launch=True)\n"
    "def halve(x: Slice[f32], out: SliceMut[f32]):\n"
    "    if ABSOLUTE_POS < x.len():\n"
    "        out[ABSOLUTE_POS] = x[ABSOLUTE_POS / 2]\n"
    "\n"
    "def run_halve(k, c, h):\n"
    "    k.launch(c, CubeCount.Static(1), CubeDim.new_1d(8),\n"
    "             BufferArg.from_raw_parts(h['x'], 8), BufferArg.from_raw_parts(h['out'], 8))\n"
    "\n"
    "ex.KernelExercise('demo.halve', 'Read every other item', 'out[i] = x[i // 2]',\n"
    "                  'the exercise hint', inputs=lambda: {'x': np.arange(8, dtype=np.float32),\n"
    "                  'out': np.zeros(8, dtype=np.float32)},\n"
    "                  spec=lambda b: {'out': b['x'][np.arange(8) // 2]},\n"
    "                  launch=run_halve).show(halve, client)",
    "Quiz()",
    "print(inspect.view(inspect.instance(scale_every_item, cube_dim=CubeDim.new_1d(4)).id()))",
    "%cubelab oob on",
    "@cube(launch=True)\n"
    "def shifted(x: Slice[f32], out: SliceMut[f32]):\n"
    "    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 14]\n"
    "\n"
    "shifted.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),\n"
    "               BufferArg.from_raw_parts(xs, 16), BufferArg.from_raw_parts(sums, 2))\n"
    "client.sync()",
]

VIEWS = {"cache-monitor": ".cubelab-cache-monitor", "buffer-board": ".cubelab-buffer-board",
         "launch-timeline": ".cubelab-launch-timeline", "memory-board": ".cubelab-memory-board",
         "kernel-inspector": ".cubelab-kernel-inspector", "access-map": ".cubelab-access-map",
         "stepper": ".cubelab-stepper", "exercise": ".cubelab-exercise >> nth=0",
         "kernel-verdict": ".cubelab-exercise >> nth=1", "quiz": ".cubelab-quiz"}

# Text wider than its box, and a view wider than the output area that holds it.
CLIPPED = """(view) => {
  const out = [];
  for (const e of view.querySelectorAll('td, th, pre, li, summary, .cl-msg, .cl-key, .cl-title,'
                                        + ' .widget-label, .cubelab-code')) {
    if (e.getClientRects().length && e.scrollWidth > e.clientWidth + 1
        && getComputedStyle(e).overflowX !== 'auto')
      out.push('clipped: ' + e.textContent.trim().slice(0, 60));
  }
  const area = view.closest('.jp-OutputArea-output');
  if (area && view.getBoundingClientRect().right > area.getBoundingClientRect().right + 1)
    out.push('the view is wider than the output area');
  return out;
}"""

# Every piece of HTML text against the colour it is drawn on (the nearest opaque background),
# with WCAG's contrast ratio; and in SVG drawings, text against the drawing's background.
CONTRAST = """(view) => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
                            return (x + 0.05) / (y + 0.05); };
  const bg = e => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e)
      .backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c; }
    return rgb(getComputedStyle(document.body).backgroundColor); };
  const bad = [];
  for (const e of view.querySelectorAll('*')) {
    if (e.closest('svg') || !e.getClientRects().length) continue;
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const r = ratio(rgb(getComputedStyle(e).color), bg(e));
    if (r < 3) bad.push(`${r.toFixed(2)} ${e.tagName}.${e.className}: `
                        + e.textContent.trim().slice(0, 40));
  }
  for (const svg of view.querySelectorAll('svg.cubelab-access-map')) {
    const back = rgb(getComputedStyle(svg.querySelector('rect.bg')).fill);
    for (const t of svg.querySelectorAll('text.ink, text.muted')) {
      const r = ratio(rgb(getComputedStyle(t).fill), back);
      if (r < 3) bad.push(`${r.toFixed(2)} svg text: ${t.textContent.slice(0, 40)}`);
    }
  }
  return bad;
}"""

# Large light panels (a white box in the dark theme): HTML backgrounds and the SVG's own.
LIGHT_PANELS = """(view) => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const light = c => c.length >= 3 && (c.length === 3 || c[3] > 0.5)
    && (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255 > 0.75;
  const out = [];
  for (const e of [view, ...view.querySelectorAll('div, table, td, pre, svg')]) {
    const box = e.getBoundingClientRect();
    if (box.width * box.height < 4000) continue;
    const fill = e.tagName.toLowerCase() === 'svg'
      ? getComputedStyle(e.querySelector('rect.bg') || e).fill
      : getComputedStyle(e).backgroundColor;
    if (light(rgb(fill))) out.push(`${e.tagName}.${e.className.baseVal ?? e.className}`);
  }
  return out;
}"""

# Printed text: as many lines on screen as the text has (none wrapped by the output area).
WRAPPED = """() => [...document.querySelectorAll('.jp-OutputArea-output .jp-RenderedText pre')]
  .map(pre => { const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
    const lh = parseFloat(getComputedStyle(pre).lineHeight);
    return {first: lines[0].slice(0, 60), lines: lines.length,
            shown: Math.round(pre.getBoundingClientRect().height / lh)}; })
  .filter(p => p.shown > p.lines)"""


def _notebook(path):  # type: ignore[no-untyped-def]
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, path)


def test_every_view_reads_whole_in_the_light_and_the_dark_theme(lab):  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    base, token, work = lab
    _notebook(work / "themes.ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            open_notebook(page, base, token, "themes.ipynb")
            run_all(page, len(CELLS), 240_000)
            expect(page.locator(".jp-OutputArea-output", has_text="Traceback")).to_have_count(0)
            for selector in VIEWS.values():
                expect(page.locator(selector).first).to_be_visible(timeout=30_000)
            expect(page.locator(".cubelab-buffer-board tr[data-state='skipped'], "
                                ".cubelab-buffer-board tr[data-state='failed']").first) \
                .to_be_visible(timeout=20_000)
            expect(page.locator(".jp-RenderedText", has_text="out-of-bounds accesses in")) \
                .to_be_visible()
            problems: dict[str, list[str]] = {}
            for theme in ("light", "dark"):
                if theme == "dark":
                    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme',"
                                  " {theme: 'JupyterLab Dark'})")
                    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'",
                                           timeout=30_000)
                    page.wait_for_timeout(500)
                for name, selector in VIEWS.items():
                    view = page.locator(selector).first
                    view.scroll_into_view_if_needed()
                    view.screenshot(path=str(ARTIFACTS / f"theme-{name}-{theme}.png"))
                    found = view.evaluate(CLIPPED) + view.evaluate(CONTRAST)
                    if theme == "dark":
                        found += [f"light panel {x}" for x in view.evaluate(LIGHT_PANELS)]
                    if found:
                        problems[f"{name} ({theme})"] = found
                wrapped = page.evaluate(WRAPPED)
                if wrapped:
                    problems[f"printed text ({theme})"] = [str(w) for w in wrapped]
            assert not problems, "\n".join(f"{k}: {v}" for k, v in problems.items())
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "themes_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
