"""ExerciseView: a chapter exercise's verdict, with a box to try another answer.

`exercise.show(answer)` returns a `Result`; inside Jupyter its display hook builds this view.
For exercises whose answer is a value (a count, field names, buffer names) the view has a text
box and a "Check" button that run the real check again — the box starts with the answer cell's
value, written as that cell's Python literal (`answer_text.as_text`: a list keeps its order), and
empty while it is `...`. For kernel exercises the answer is code, edited in the cell above, so
the view shows the verdict and its details only.

The box keeps what the student typed: nothing rewrites it, and "Check" grades exactly that text,
read in its obvious forms (`[0, 1, 2]`, `0 1 2`, `0, 1, 2`, `b, c`, quotes or not — the
exercise's `parse`). Text that is no answer at all (`[0, 1, 2` with a bracket left open) is not
graded: the verdict says it could not be read and how to write it, and no attempt is counted.

`view.submit("3")` does what typing and clicking do (tests, and headless runs). Clicks arrive
on the kernel's main thread; a check runs launches there, as the answer cell would.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.exercises.answer_text import Unreadable, as_text
from cubelab.exercises.base import Result
from cubelab.inspect.views import inline_markdown, table_css
from cubelab.widgets._live import View

__all__ = ["ExerciseView"]


class ExerciseView(View):
    css_class = "cubelab-exercise"

    def __init__(self, result: Result) -> None:
        self.result = result
        self.exercise = result.exercise
        self.unreadable = ""  # why the last text typed could not be read ("" when it could)
        self.verdict = W.HTML(self._verdict_html(result))
        self.verdict.add_class("cubelab-exercise-verdict")
        parts: list[W.Widget] = [self.verdict]
        self.answer: W.Text | None = None
        self.button: W.Button | None = None
        if self.exercise is not None and self.exercise.takes_text:
            self.answer = W.Text(value=as_text(result.answer), placeholder="your answer",
                                 description="answer",
                                 layout=W.Layout(width="auto", flex="1 1 24em", max_width="46em"))
            self.answer.add_class("cubelab-exercise-answer")
            self.button = W.Button(description="Check (runs it for real)",
                                   button_style="primary",
                                   layout=W.Layout(width="auto", flex="0 0 auto"))
            self.button.add_class("cubelab-exercise-check")
            self.button.on_click(lambda _b: self.submit(self.answer.value if self.answer else ""))
            parts.append(W.HBox([self.answer, self.button],
                                layout=W.Layout(flex_flow="row wrap", align_items="center")))
        self._mount(*parts)

    def submit(self, text: str) -> Result:
        """Check the answer typed as `text` (what the button does). The box is left as typed."""
        ex = self.exercise
        try:
            answer = ex.parse(text)
        except Unreadable as exc:
            self.unreadable = str(exc)
            self.verdict.value = self._unreadable_html(str(exc))
            return self.result
        self.unreadable = ""
        self.verdict.value = '<div class="cubelab-code cl-muted">running it…</div>'
        self.result = ex.show(answer, self.result.client)
        self.verdict.value = self._verdict_html(self.result)
        return self.result

    def model(self) -> dict[str, Any]:
        return {"status": self.result.status, "unreadable": self.unreadable,
                "text": self.answer.value if self.answer is not None else None}

    def _title(self) -> str:
        if self.exercise is None:
            return ""
        return f'<div class="cl-muted">{inline_markdown(self.exercise.title)}</div>'

    def _verdict_html(self, r: Result) -> str:
        return f'<div class="cubelab-code"><style>{table_css()}</style>{self._title()}</div>' \
            + r._repr_html_()

    def _unreadable_html(self, why: str) -> str:
        key = html.escape(self.exercise.key if self.exercise is not None else "")
        return (f'<div class="cubelab-code"><style>{table_css()}</style>{self._title()}</div>'
                f'<div class="cubelab-code cubelab-exercise-result" data-key="{key}" '
                'data-status="unreadable"><div class="cl-title cl-state-claimed cl-verdict" '
                f'data-correct="false">could not read your answer</div>'
                f'<div class="cl-hint">{inline_markdown(why)}</div></div>')

    def _repr_mimebundle_(self, **kw: Any) -> Any:
        return self._root._repr_mimebundle_(**kw)
