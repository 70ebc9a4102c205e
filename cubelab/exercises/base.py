"""What every exercise is: a key, a question, and a `check` that runs the real thing.

    ex = cubelab.exercises.get("ch03.four_launches")   # this student's variant
    ex.ask()                      # the question, with this student's numbers
    r = ex.check(answer)          # Result: .status "unanswered" | "wrong" | "correct", .hint
    ex.show(answer)               # the same check, rendered in a notebook (never raises)

The contract the chapters, the tests and the classroom tools rely on (docs/exercises.md):

- `answer is ...` (Ellipsis, the blank answer cell) is "unanswered" and runs nothing, so a
  notebook executed unattended shows "not answered yet" and never a pass.
- A check never compares with a stored answer key where a real run can decide: each kind
  (`kinds.py`) launches kernels and decides from the events and buffers of that run — of the
  student's own variant (`variants.py`).
- **A result that is not "correct" carries nothing that holds or reveals the answer**: no
  expected value, no run report, nothing in its repr, HTML or text. What a wrong answer gets is
  a hint for *this attempt*: hints are tiered — a nudge, then the concept, then a worked step on
  a *different* example — one more level per wrong attempt, and the last is never the whole
  solution. A wrong answer that a known misconception predicts (`Misconception`) gets a hint
  that names the misconception first.
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
from typing import Any, ClassVar, Literal, Sequence

import numpy as np

__all__ = ["Exercise", "Result", "Status", "Misconception", "Question", "grading_client",
           "results", "same", "UNANSWERED_MESSAGE"]

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


def _plain(x: Any) -> Any:
    """numpy scalars and arrays as Python values, so answers compare by value."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def same(answer: Any, expected: Any) -> bool:
    """Whether `answer` says what `expected` says: numbers by value (a bool is not a number),
    words without regard to case or surrounding spaces, sequences item by item, sets and dicts
    as sets and dicts (any order). Never by truthiness."""
    answer, expected = _plain(answer), _plain(expected)
    if isinstance(expected, str):
        return isinstance(answer, str) and answer.strip().lower() == expected.strip().lower()
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and isinstance(expected, bool) and answer == expected
    if isinstance(expected, (int, float)):
        return isinstance(answer, (int, float)) and answer == expected
    if isinstance(expected, (set, frozenset)):
        if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)):
            return False
        items = [_plain(a) for a in answer]
        if len(set(map(_key, items))) != len(items) and not isinstance(answer, (set, frozenset)):
            return False  # a list that names one thing twice is not the set
        return {_key(a) for a in items} == {_key(e) for e in expected}
    if isinstance(expected, dict):
        if not isinstance(answer, dict):
            return False
        norm = {(k.strip().lower() if isinstance(k, str) else k): v for k, v in answer.items()}
        want = {(k.strip().lower() if isinstance(k, str) else k): v for k, v in expected.items()}
        return norm.keys() == want.keys() and all(same(norm[k], want[k]) for k in want)
    if isinstance(expected, (list, tuple)):
        if isinstance(answer, str) or not isinstance(answer, (list, tuple)):
            return False
        return len(answer) == len(expected) and all(same(a, e) for a, e in zip(answer, expected))
    return bool(answer == expected)


def _key(x: Any) -> Any:
    """A set member compared as the check compares it (words without case)."""
    return x.strip().lower() if isinstance(x, str) else x


@dataclass(frozen=True)
class Misconception:
    """A wrong answer that a misconception predicts, and the hint that names the misconception.

    `answer` is the answer the misconception predicts for the student's variant: a value, or a
    function of the `Variant` (`lambda v: v.launches - v.gated`)."""

    name: str  # the misconception, in a few words ("a skipped launch does nothing")
    answer: Any
    hint: str

    def predicts(self, variant: Any) -> Any:
        return self.answer(variant) if callable(self.answer) else self.answer


@dataclass(repr=False)
class Result:
    """The verdict on one answer.

    A correct result may carry what the run showed (`report`, `details`); a result that is not
    correct carries the answer as given, the message, this attempt's hint, and — for kernels —
    what the run of the *student's* kernel showed; never the expected answer."""

    status: Status
    message: str
    hint: str = ""
    answer: Any = None
    details: str = ""  # plain text: a mismatch table, an out-of-bounds report ...
    key: str = ""
    attempt: int = 0  # how many wrong attempts at this exercise so far, this one included
    level: int = 0  # which hint tier `hint` is (1 nudge, 2 concept, 3 worked step)
    report: Any = None  # what the run did: only on a correct result (it holds the answer)
    # the student's own kernel failed to compile or run: `details` is that error (caret and its
    # hint), and it is the verdict — no exercise hint on top, it would point elsewhere
    error: BaseException | None = field(default=None, compare=False)
    unreadable: bool = False  # the answer could not be read: not counted as an attempt
    exercise: Any = field(default=None, compare=False)
    client: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.status != "correct":
            self.report = None  # a report counts what the run did: it is the answer

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

    def __repr__(self) -> str:
        return f"Result({self.status!r}, key={self.key!r}, message={self.message!r})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    _LABEL: ClassVar[dict[str, str]] = {"unanswered": "not answered yet", "wrong": "not yet",
                                       "correct": "correct"}
    _CLASS: ClassVar[dict[str, str]] = {"unanswered": "cl-muted", "wrong": "cl-state-failed",
                                       "correct": "cl-state-clean"}

    def _repr_html_(self) -> str:
        from cubelab.inspect.views import inline_markdown

        tier = (f" <span class='cl-muted'>({self.level} of {self.exercise.hint_levels()})</span>"
                if self.level and self.exercise is not None else "")
        hint = (f'<div class="cl-hint"><b>Hint</b>{tier}: {inline_markdown(self.hint)}</div>'
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


class Question:
    """An exercise's question for one student, as a notebook shows it (markdown) and as text."""

    def __init__(self, exercise: "Exercise") -> None:
        self.exercise = exercise

    def markdown(self) -> str:
        ex = self.exercise
        head = f"**{ex.title}**"
        if ex.variant is not None:
            head += f" — your variant ({ex.variant.index + 1} of {ex.variant_count})"
        code = f"\n\n```python\n{ex.code.rstrip()}\n```" if getattr(ex, "code", "") else ""
        return f"{head}\n\n{ex.question}{code}"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return self.markdown()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.markdown())


@dataclass
class Exercise:
    """One exercise. Kinds (`kinds.py`) implement `_check(answer, client) -> Result` and
    `_truth(client)` (the answer a real run gives: for tests and teachers, never in a Result).

    Hints, in tiers: `nudge` (where to look), `hint` (the concept), `worked` (a worked step on a
    different example than the question's). `wrong` lists answers that must be rejected (a
    tuple, or a function of the variant); `misconceptions` the wrong answers a known
    misconception predicts, each with the hint that names it."""

    key: str
    title: str
    question: str
    hint: str = ""  # the concept to look at again
    wrong: Any = ()  # answers that must be rejected: a tuple, or variant -> tuple
    nudge: str = ""
    worked: str = ""
    misconceptions: Sequence[Misconception] = ()

    #: whether the answer is a value a widget can take as text (counts, names), or code
    takes_text: ClassVar[bool] = True

    # set by `cubelab.exercises.get` on the exercise of one variant
    variant: Any = field(default=None, repr=False, compare=False)
    variant_count: int = field(default=1, repr=False, compare=False)
    _attempts: int = field(default=0, repr=False, compare=False)

    # -- asking and checking ------------------------------------------------------------------
    def ask(self) -> Question:
        """The question with this student's numbers (a notebook renders it as markdown)."""
        return Question(self)

    def check(self, answer: Any, client: Any = None) -> Result:
        """Decide `answer` against a real run on `client` (see `grading_client`)."""
        if answer is Ellipsis:
            r = Result("unanswered", UNANSWERED_MESSAGE, answer=answer)
        else:
            client = grading_client(client)
            r = self._check(answer, client)
            r.client = client
            if r.status == "wrong" and not r.unreadable:
                self._attempts += 1
                r.attempt = self._attempts
                if not r.hint and r.error is None:
                    r.hint, r.level = self.hint_for(answer, self._attempts)
            elif r.status == "correct":
                self._attempts = 0
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
                       answer=answer, key=self.key, exercise=self, error=exc)
            _last[self.key] = r
            return r

    def parse(self, text: str) -> Any:
        """An answer typed into the widget's text box, as `check` takes it: kept as written,
        read in its obvious forms (`answer_text.read`); `answer_text.Unreadable` (saying how
        to write it) for text that is no answer at all. `...` for an empty box."""
        from cubelab.exercises.answer_text import read

        return read(text)

    # -- hints --------------------------------------------------------------------------------
    def hints(self) -> list[str]:
        """The hint tiers, in the order wrong attempts reveal them."""
        return [h for h in (self.nudge, self.hint, self.worked) if h]

    def hint_levels(self) -> int:
        return len(self.hints()) or 1

    def hint_for(self, answer: Any, attempt: int) -> tuple[str, int]:
        """(hint, level) for the `attempt`-th wrong answer: one more tier per attempt, the
        misconception named first when the answer is the one it predicts."""
        tiers = self.hints()
        level = min(attempt, len(tiers)) if tiers else 0
        text = tiers[level - 1] if tiers else ""
        for m in self.misconceptions:
            if self._says(answer, m.predicts(self.variant)):
                return (f"{m.hint} {text}".strip() if level > 1 else m.hint), level
        return text, level

    def reset_attempts(self) -> None:
        """Start the hints over (a teacher's demo; a test)."""
        self._attempts = 0

    def _says(self, answer: Any, predicted: Any) -> bool:
        """Whether `answer` is the answer `predicted` (kinds that read names override)."""
        return same(answer, predicted)

    def wrong_answers(self) -> tuple[Any, ...]:
        """Every answer that must be rejected for this variant: `wrong` and what each
        misconception predicts."""
        listed = self.wrong(self.variant) if callable(self.wrong) else tuple(self.wrong)
        return tuple(listed) + tuple(m.predicts(self.variant) for m in self.misconceptions)

    # -- for the kinds ------------------------------------------------------------------------
    def _check(self, answer: Any, client: Any) -> Result:
        raise NotImplementedError

    def _truth(self, client: Any) -> Any:
        """The answer a real run of this variant gives (tests, teachers; never in a Result)."""
        raise NotImplementedError

    def _wrong(self, answer: Any, message: str, hint: str = "", **kw: Any) -> Result:
        return Result("wrong", message, hint, answer, **kw)

    def _right(self, answer: Any, message: str, **kw: Any) -> Result:
        return Result("correct", message, "", answer, **kw)

