"""What a student sees in an executed notebook, scanned for what must never be there.

- `/tmp/ipykernel…`: IPython's temporary file for a cell. A place in the student's code reads
  `Cell In[7], line 3` (cubelab's `errors.location`), never the file IPython compiled it from.
- cubelab's own frames: an absolute path into the `cubelab/` package in any output (a traceback
  frame, a warning's "file:line:", a logged location) or cubelab's generated `<cubelab …>`
  code. Errors stop at the student's line (`errors.api_boundary`).
- raw backticks in rendered text: cubelab's messages mark code with backticks; where they are
  rendered as HTML they must become `<code>` (`inspect.views.inline_markdown`), not show as
  literal backticks. Text inside `<pre>` and `<code>` (an error quoted verbatim, a listing) is
  exempt, and so is plain text (a terminal's convention, as rustc's messages).

`tests/test_notebooks.py` runs every chapter through `problems`; `tests/test_student_output.py`
runs the catalogue of refused constructs and API mistakes through a real kernel and does the same.
"""

from __future__ import annotations

import html
import re
from typing import Any

TEMP = "/tmp/ipykernel"
FRAME = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+cubelab/[\w/]+\.py|<cubelab ")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXEMPT = re.compile(r"<(pre|code|style|script)\b[^>]*>.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def shown(output: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, text) of everything one output shows: "text" or "html"."""
    kind = output.get("output_type")
    if kind == "stream":
        return [("text", output.get("text", ""))]
    if kind == "error":
        return [("text", ANSI.sub("", "\n".join(output.get("traceback", []))))]
    data = output.get("data", {})
    out = []
    if "text/plain" in data and "text/html" not in data \
            and "application/vnd.jupyter.widget-view+json" not in data:
        out.append(("text", data["text/plain"]))
    if "text/html" in data:
        out.append(("html", data["text/html"]))
    return out


def rendered_text(page: str) -> str:
    """The words an HTML output shows outside verbatim blocks (`<pre>`, `<code>`)."""
    return html.unescape(_TAG.sub(" ", _EXEMPT.sub(" ", page)))


def problems(nb: Any, name: str = "") -> list[str]:
    """Every place in `nb`'s outputs that shows a temp path, a cubelab frame or a raw backtick."""
    found = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            for kind, text in shown(o):
                where = f"{name} cell {i}"
                if TEMP in text:
                    found.append(f"{where}: IPython's temp file: {_around(text, text.index(TEMP))}")
                m = FRAME.search(text)
                if m:
                    found.append(f"{where}: cubelab's own code: {_around(text, m.start())}")
                if kind == "html":
                    words = rendered_text(text)
                    if "`" in words:
                        found.append(f"{where}: a raw backtick in rendered text: "
                                     f"{_around(words, words.index('`'))}")
    return found


def _around(text: str, at: int) -> str:
    return " ".join(text[max(0, at - 60):at + 80].split())
