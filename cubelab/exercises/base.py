"""What every exercise is: a key, a question, and a `check` that runs the real thing.

    ex = cubelab.exercises.get("ch03.kernel_id_diff")
    r = ex.check(answer)          # Result: .status "unanswered" | "wrong" | "correct", .hint, ...
    ex.show(answer)               # the same check, rendered in a notebook (never raises)

The contract the chapters, the tests and the classroom tools rely on (docs/exercises.md):

- `answer is ...` (Ellipsis, the blank answer cell) is "unanswered" and runs nothing, so a
  notebook executed unattended shows "not answered yet" and never a pass.
- A check never compares with a stored answer key where a real run can decide: each kind
  (`kinds.py`) launches kernels and decides from the events and buffers of that run.
- A wrong answer comes back with a `hint` that points at the concept, not at the number.
- `check` raises only for a broken exercise, never for a wrong or unanswered answer; `show`
  never raises at all (a student's odd answer must not stop a notebook run unattended).
- The client: the one given, else the CPU runtime when `CUBELAB_GRADING=1` (graders run
  headless and identically everywhere), else `Device.default()` (which honours `CUBELAB_DEVICE`).

The trap: `show` returns the `Result`, whose notebook display asks `cubelab.widgets.exercise`
for a widget when ipywidgets is importable. That is the one place this package names the
presentation layer, and only by module name inside IPython's display hook — nothing here
imports IPython or ipywidgets, so `import cubelab.exercises` stays light.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

__all__ = ["Exercise", "Result", "Status", "grading_client", "results", "UNANSWERED_MESSAGE"]

Status = Literal["unanswered", "wrong", "correct"]
UNANSWERED_MESSAGE = "replace `...` in the answer cell and run it again."

# The last result of each key checked in this process (tests read it after running a notebook).
_last: dict[str, "Result"] = {}


def results() -> dict[str, str]:
    """{exercise key: status of its last check in this process}."""
    return {k: r.status for k, r in _last.items()}


def grading_client(client: Any = None) -> Any:
    """The client a check runs on (see the module docstring)."""
    if client is not None:
        return client
    from cubelab.runtime.device import Device

    if os.environ.get("CUBELAB_GRADING") == "1":
        return Device.cpu().client()
    return Device.default().client()


@dataclass
class Result:
    """The verdict on one answer. `expected` and `report` carry what the real run did (shown
    once the answer is right; a wrong answer gets the `hint`, not the number)."""

    status: Status
    message: str
    hint: str = ""
    answer: Any = None
    expected: Any = None
    report: Any = None
    details: str = ""  # plain text: a mismatch table, an out-of-bounds report ...
    # the student's own kernel failed to compile or run: `details` is that error (caret and its
    # hint), and it is the verdict — no exercise hint on top, it would point elsewhere
    error: BaseException | None = field(default=None, repr=False, compare=False)
    key: str = ""
    exercise: Any = field(default=None, repr=False, compare=False)
    client: Any = field(default=None, repr=False, compare=False)

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        out = [f"[{self.status}] {self.key}: {self.message}".rstrip(" :")]
        if self.hint:
            out.append(f"hint: {self.hint}")
        if self.details:
            out.append(self.details)
        return "\n".join(out)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    _LABEL: ClassVar[dict[str, str]] = {"unanswered": "not answered yet", "wrong": "not yet",
                                       "correct": "correct"}
    _CLASS: ClassVar[dict[str, str]] = {"unanswered": "cl-muted", "wrong": "cl-state-failed",
                                       "correct": "cl-state-clean"}

    def _repr_html_(self) -> str:
        from cubelab.inspect.views import inline_markdown

        hint = (f'<div class="cl-hint"><b>Hint:</b> {inline_markdown(self.hint)}</div>'
                if self.hint else "")
        message = self.message.strip().rstrip(":")
        verdict = html.escape(self._LABEL[self.status]) + (
            f": {inline_markdown(message)}" if message else "")
        details = (f"<pre class='cl-details'>{html.escape(self.details)}</pre>"
                   if self.details else "")
        return (f'<div class="cubelab-code cubelab-exercise-result" '
                f'data-key="{html.escape(self.key)}" data-status="{self.status}">'
                f'<div class="cl-title {self._CLASS[self.status]} cl-verdict" '
                f'data-correct="{str(self.correct).lower()}">'
                f"{verdict}</div>"
                f"{hint}{details}</div>")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        try:
            from cubelab.widgets.exercise import ExerciseView
        except ImportError:  # ipywidgets missing: the static verdict is still the whole answer
            display({"text/html": self._repr_html_(), "text/plain": str(self)}, raw=True)
            return
        # the widget for a live front end, the verdict as HTML and text for everything else
        # (a notebook rendered on GitHub, nbconvert, a terminal front end)
        bundle = dict(ExerciseView(self).widget._repr_mimebundle_())
        bundle.update({"text/plain": str(self), "text/html": self._repr_html_()})
        display(bundle, raw=True)


@dataclass
class Exercise:
    """One exercise. Kinds (`kinds.py`) implement `_check(answer, client) -> Result`."""

    key: str
    title: str
    question: str
    hint: str = ""  # why a wrong answer is wrong: the concept to look at again
    # answers that must be rejected (the tests feed each one and require "wrong" with a hint)
    wrong: tuple[Any, ...] = ()

    #: whether the answer is a value a widget can take as text (counts, names), or code
    takes_text: ClassVar[bool] = True

    def check(self, answer: Any, client: Any = None) -> Result:
        """Decide `answer` against a real run on `client` (see `grading_client`)."""
        if answer is Ellipsis:
            r = Result("unanswered", UNANSWERED_MESSAGE, answer=answer)
        else:
            client = grading_client(client)
            r = self._check(answer, client)
            r.client = client
            if r.status == "wrong" and not r.hint and r.error is None:
                r.hint = self.hint
        r.key, r.exercise = self.key, self
        _last[self.key] = r
        return r

    def show(self, answer: Any, client: Any = None) -> Result:
        """`check`, for a notebook's check cell: the returned Result renders itself (a widget to
        try another answer where the answer is a value). Never raises: an exercise that breaks
        is reported as a wrong answer with what went wrong."""
        try:
            return self.check(answer, client)
        except Exception as exc:  # noqa: BLE001 - the cell must finish; say what happened
            r = Result("wrong", f"the check could not run: {type(exc).__name__}: {exc}",
                       self.hint, answer, key=self.key, exercise=self)
            _last[self.key] = r
            return r

    def parse(self, text: str) -> Any:
        """An answer typed into the widget's text box, as `check` takes it: kept as written,
        read in its obvious forms (`answer_text.read`); `answer_text.Unreadable` (saying how
        to write it) for text that is no answer at all. `...` for an empty box."""
        from cubelab.exercises.answer_text import read

        return read(text)

    def _check(self, answer: Any, client: Any) -> Result:
        raise NotImplementedError

    def _wrong(self, answer: Any, message: str, hint: str = "", **kw: Any) -> Result:
        return Result("wrong", message, hint or self.hint, answer, **kw)

    def _right(self, answer: Any, message: str, **kw: Any) -> Result:
        return Result("correct", message, "", answer, **kw)
