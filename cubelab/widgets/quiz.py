"""Quiz: displays an `Exercise`, takes the student's answer, runs the launches for real and
reveals the count, the compile log lines and why each KernelId was new.

`quiz.check(3)` does what the button does, so a notebook executed headless (CI) can check an
answer without a click. Runs on the kernel's main thread (a click handler, or the cell).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from cubelab.exercises import HOW_MANY_COMPILES, Exercise, Verdict
from cubelab.inspect.highlight import to_html
from cubelab.inspect.views import table_css
from cubelab.widgets._live import View, inline_markdown

__all__ = ["Quiz"]


class Quiz(View):
    css_class = "cubelab-quiz"

    def __init__(self, exercise: Exercise = HOW_MANY_COMPILES, client: Any = None) -> None:
        self.exercise = exercise
        self.client = client
        self.verdict: Verdict | None = None
        self.answer = W.IntText(value=0, description="answer", layout=W.Layout(width="12em"))
        self.button = W.Button(description="Check (runs the launches)", button_style="primary",
                               layout=W.Layout(width="16em"))
        self.button.on_click(lambda _b: self.check(self.answer.value))
        self.result = W.HTML()
        self.result.add_class("cubelab-quiz-result")
        head = W.HTML(f'<div class="cubelab-code"><style>{table_css()}</style>'
                      f'<div class="cl-title">{inline_markdown(exercise.title)}</div>'
                      f'<p class="cl-question">{inline_markdown(exercise.question)}</p></div>'
                      + to_html(exercise.code, "python"))
        self._mount(head, W.HBox([self.answer, self.button]), self.result)

    def check(self, answer: Any) -> Verdict:
        self.answer.value = int(answer) if isinstance(answer, (int, float)) else self.answer.value
        self.result.value = '<div class="cubelab-code cl-muted">running the launches…</div>'
        v = self.verdict = self.exercise.check(answer, self._client())
        self.result.value = self._result_html(v)
        return v

    def _client(self) -> Any:
        if self.client is None:
            from cubelab.runtime.device import Device

            self.client = Device.default().client()
        return self.client

    @staticmethod
    def _result_html(v: Verdict) -> str:
        cls = "cl-state-clean" if v.correct else "cl-state-failed"
        if v.report is None:  # a wrong answer: the run's counts would be the answer
            hint = f"<div class='cl-hint'><b>Hint:</b> {inline_markdown(v.hint)}</div>" \
                if v.hint else ""
            return (f'<div class="cubelab-code"><div class="cl-title {cls} cl-verdict" '
                    f'data-correct="{str(v.correct).lower()}">{inline_markdown(v.message)}</div>'
                    f"{hint}</div>")
        rows = "".join(f"<tr><td>{i}</td><td><code>{html.escape(line)}</code></td>"
                       f"<td>{html.escape(why)}</td></tr>"
                       for i, (line, why) in enumerate(zip(v.report.log, v.report.why), 1))
        return (f'<div class="cubelab-code"><div class="cl-title {cls} cl-verdict" '
                f'data-correct="{str(v.correct).lower()}">{inline_markdown(v.message)}</div>'
                f"<div>compiles: <b class='cl-quiz-compiles'>{v.report.compiles}</b> · cache "
                f"hits: <b>{v.report.hits}</b>{Quiz._failures(v)}</div>"
                '<table class="cl-table"><thead><tr><th>#</th><th>compile log</th><th>why a new '
                f"KernelId</th></tr></thead><tbody>{rows}</tbody></table></div>")

    @staticmethod
    def _failures(v: Verdict) -> str:
        r = v.report
        if not (r.failed or r.skipped):
            return ""
        return (f" · failed: <b>{html.escape(', '.join(r.failed) or 'none')}</b> · skipped: "
                f"<b class='cl-quiz-skipped'>{html.escape(', '.join(r.skipped) or 'none')}</b>")
