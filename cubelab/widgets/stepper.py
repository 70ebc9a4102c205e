"""Stepper: walk a CPU-runtime trace (`cubelab.inspect.trace`) op by op, forwards and backwards.

The current op is highlighted in the IR and its kernel line in the source; the values panel
shows the op's result and operands for the selected unit, and what every other traced unit
computed at the same kernel line — divergence made visible (a unit that skipped a branch has no
step there). A trace is plain data produced before the widget exists, so the Stepper needs no
events and no UI thread: buttons run on the kernel's main thread.
"""

from __future__ import annotations

import html
import re
from typing import Any

import ipywidgets as W

from cubelab.errors import hinted
from cubelab.inspect.highlight import to_html
from cubelab.inspect.trace import Trace, TraceStep
from cubelab.inspect.views import table_css
from cubelab.widgets._live import View

__all__ = ["Stepper"]

_COMMENT = re.compile(r"\s*//.*$")


def _ir_index(ir: str) -> dict[str, int]:
    """IR op text (as a trace step prints it) → its 1-based line in the IR listing."""
    out: dict[str, int] = {}
    for n, line in enumerate(ir.splitlines(), 1):
        key = _COMMENT.sub("", line).rstrip(" {").strip()
        out.setdefault(key, n)
    return out


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return str(v)


class Stepper(View):
    css_class = "cubelab-stepper"

    def __init__(self, trace: Trace) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(hinted("Stepper needs a trace",
                                   "make one with cubelab.inspect.trace(...)"))
        self.trace = trace
        self._ir_lines = _ir_index(trace.ir)
        self.back_button = W.Button(description="◀ back", layout=W.Layout(width="7em"))
        self.forward_button = W.Button(description="forward ▶", layout=W.Layout(width="7em"))
        self.position = W.IntSlider(min=1, max=max(1, len(trace)), value=trace.position + 1,
                                    description="step", continuous_update=False,
                                    layout=W.Layout(width="28em"))  # 1-based, as displayed
        self.unit = W.Dropdown(options=[(f"unit {u}", u) for u in trace.units], value=trace.unit,
                               description="unit", layout=W.Layout(width="12em"))
        self.source = W.HTML()
        self.source.add_class("cubelab-stepper-source")
        self.ir = W.HTML()
        self.ir.add_class("cubelab-stepper-ir")
        self.values = W.HTML()
        self.values.add_class("cubelab-stepper-values")
        self.back_button.on_click(lambda _b: self.back())
        self.forward_button.on_click(lambda _b: self.forward())
        self.position.observe(lambda c: self.goto(c["new"] - 1), names="value")
        self.unit.observe(lambda c: self.select(c["new"]), names="value")
        self._mount(
            W.HBox([self.back_button, self.forward_button, self.position, self.unit]),
            self.values,
            # side by side while both fit, one under the other when not: the executing line is
            # never cropped (the source pane also wraps a long line at its words)
            W.HBox([W.Box([self.source], layout=W.Layout(flex="1 1 30em", min_width="22em",
                                                         overflow="auto")),
                    W.Box([self.ir], layout=W.Layout(flex="1 1 30em", min_width="22em",
                                                     overflow="auto"))],
                   layout=W.Layout(flex_flow="row wrap")),
        )
        self.render()

    # -- navigation (what the buttons do) -----------------------------------------------------
    def forward(self, n: int = 1) -> TraceStep | None:
        return self.goto(self.trace.position + n)

    def back(self, n: int = 1) -> TraceStep | None:
        return self.goto(self.trace.position - n)

    def goto(self, position: int) -> TraceStep | None:
        step = self.trace.goto(position)
        self.render()
        return step

    def select(self, unit: int) -> TraceStep | None:
        step = self.trace.select(unit)
        self.render()
        return step

    # -- model and rendering ------------------------------------------------------------------
    def ir_line(self, step: TraceStep | None) -> int | None:
        return None if step is None else self._ir_lines.get(step.ir.strip())

    def model(self) -> dict[str, Any]:
        s = self.trace.current
        return {"unit": self.trace.unit, "position": self.trace.position, "steps": len(self.trace),
                "op": s.op if s else None, "value": s.value if s else None,
                "operands": list(s.operands) if s else [], "line": s.line if s else None,
                "ir_line": self.ir_line(s), "others": self._others(s)}

    def _others(self, s: TraceStep | None) -> dict[int, Any]:
        """What each traced unit computed for the same op (by its IR text), if it ran it."""
        if s is None:
            return {}
        out: dict[int, Any] = {}
        for u in self.trace.units:
            same = [t for t in self.trace.steps_of(u) if t.ir == s.ir]
            out[u] = same[0].value if same else "(did not run this op)"
        return out

    def render(self) -> None:
        t = self.trace
        s = t.current
        with self._root.hold_sync():
            if self.position.max != max(1, len(t)):
                self.position.max = max(1, len(t))
            if self.position.value != t.position + 1:
                self.position.value = t.position + 1
            if self.unit.value != t.unit:
                self.unit.value = t.unit
            self.back_button.disabled = t.position <= 0
            self.forward_button.disabled = t.position >= len(t) - 1
            rel = [s.line - t.first_line + 1] if s is not None and s.line else []
            gutter = {i: str(t.first_line + i - 1) for i in range(1, len(t.source_lines) + 1)}
            self.source.value = to_html("\n".join(t.source_lines), "python", hl_lines=rel,
                                        gutter=gutter, title=f"kernel `{t.kernel}`")
            self.ir.value = self._ir_html(self.ir_line(s))
            self.values.value = self._values_html(s)

    IR_WINDOW = 24  # IR lines shown; the current op stays in view at any kernel size

    def _ir_html(self, current: int | None) -> str:
        """The IR around the current op: a fixed window (no script can scroll a widget's HTML,
        so the pane moves with the op instead of growing past the screen)."""
        lines = self.trace.ir.splitlines()
        start = 0
        if len(lines) > self.IR_WINDOW:
            anchor = (current or 1) - 1
            start = min(max(0, anchor - self.IR_WINDOW // 3), len(lines) - self.IR_WINDOW)
        shown = lines[start:start + self.IR_WINDOW]
        gutter = {i: str(start + i) for i in range(1, len(shown) + 1)}
        hl = [current - start] if current and start < current <= start + len(shown) else []
        above = f"⋮ {start} lines above" if start else ""
        below = len(lines) - start - len(shown)
        title = "IR" + (f" — lines {start + 1}–{start + len(shown)} of {len(lines)}"
                        if len(shown) < len(lines) else "")
        body = to_html("\n".join(shown), "ir", hl_lines=hl, gutter=gutter, title=title)
        more = f'<div class="cubelab-code cl-muted">⋮ {below} lines below</div>' if below else ""
        less = f'<div class="cubelab-code cl-muted">{above}</div>' if above else ""
        return less + body + more

    def _values_html(self, s: TraceStep | None) -> str:
        t = self.trace
        if s is None:
            return '<div class="cubelab-code cl-muted">this unit executed no ops</div>'
        where = f"kernel line {s.line}: {html.escape(s.source)}" if s.line else "prologue"
        ops = "".join(f"<tr><td><code>%{html.escape(n)}</code></td><td>{html.escape(_show(v))}"
                      "</td></tr>" for n, v in s.operands)
        others = "".join(f"<tr><td>unit {u}</td><td>{html.escape(_show(v))}</td></tr>"
                         for u, v in self._others(s).items())
        note = f' <span class="cl-muted">({html.escape(s.note)})</span>' if s.note else ""
        value = "" if s.value is None else f" = <b class='cl-step-value'>{html.escape(_show(s.value))}</b>"
        return (f'<div class="cubelab-code"><style>{table_css()}</style>'
                f'<div class="cl-title">unit {t.unit} · step {s.index + 1} of {len(t)} · {where}</div>'
                f"<div><code>{html.escape(s.ir)}</code>{value}{note}</div>"
                '<div style="display:flex; gap:2em"><table class="cl-table"><thead><tr>'
                f"<th>operand</th><th>value</th></tr></thead><tbody>{ops}</tbody></table>"
                '<table class="cl-table"><thead><tr><th>traced unit</th><th>this op gave</th>'
                f"</tr></thead><tbody>{others}</tbody></table></div></div>")
