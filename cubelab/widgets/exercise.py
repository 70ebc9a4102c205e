"""ExerciseView: a chapter exercise's verdict, with a box to try another answer.

`exercise.show(answer)` returns a `Result`; inside Jupyter its display hook builds this view.
For exercises whose answer is a value (a count, field names, buffer names) the view has a text
box and a "Check" button that run the real check again — the box starts with the answer cell's
value, empty while it is `...`. For kernel exercises the answer is code, edited in the cell
above, so the view shows the verdict and its details only.

`view.submit("3")` does what typing and clicking do (tests, and headless runs). Clicks arrive
on the kernel's main thread; a check runs launches there, as the answer cell would.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.exercises.base import Result
from cubelab.inspect.views import table_css
from cubelab.widgets._live import View

__all__ = ["ExerciseView"]


class ExerciseView(View):
    css_class = "cubelab-exercise"

    def __init__(self, result: Result) -> None:
        self.result = result
        self.exercise = result.exercise
        self.verdict = W.HTML(self._verdict_html(result))
        self.verdict.add_class("cubelab-exercise-verdict")
        parts: list[W.Widget] = [self.verdict]
        self.answer: W.Text | None = None
        self.button: W.Button | None = None
        if self.exercise is not None and self.exercise.takes_text:
            blank = result.answer is Ellipsis or result.answer is None
            start = "" if blank else _text(result.answer)
            self.answer = W.Text(value=start, placeholder="your answer",
                                 description="answer", layout=W.Layout(width="22em"))
            self.answer.add_class("cubelab-exercise-answer")
            self.button = W.Button(description="Check (runs it for real)",
                                   button_style="primary", layout=W.Layout(width="16em"))
            self.button.add_class("cubelab-exercise-check")
            self.button.on_click(lambda _b: self.submit(self.answer.value if self.answer else ""))
            parts.append(W.HBox([self.answer, self.button]))
        self._mount(*parts)

    def submit(self, text: str) -> Result:
        """Check the answer typed as `text` (what the button does)."""
        ex = self.exercise
        answer = ex.parse(text) if text.strip() else ...
        self.verdict.value = '<div class="cubelab-code cl-muted">running it…</div>'
        self.result = ex.show(answer, self.result.client)
        self.verdict.value = self._verdict_html(self.result)
        return self.result

    @staticmethod
    def _verdict_html(r: Result) -> str:
        title = ""
        if r.exercise is not None:
            title = f'<div class="cl-muted">{html.escape(r.exercise.title)}</div>'
        return f'<div class="cubelab-code"><style>{table_css()}</style>{title}</div>' \
            + r._repr_html_()

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        return self._root._repr_mimebundle_(**kw)


def _text(answer: Any) -> str:
    if isinstance(answer, (set, frozenset, list, tuple)):
        return ", ".join(sorted(str(a) for a in answer))
    return str(answer)
