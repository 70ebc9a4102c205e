"""Renderables: one object, three faces — `text/plain`, theme-aware HTML, and a rich renderable.

A notebook displays a view through `_repr_mimebundle_` (HTML coloured by pygments through
JupyterLab's CSS variables, see `highlight.py`, always with a `text/plain` part); a terminal
prints it through `__rich__` (rich is imported only there, so `import cubelab` stays light);
`str(view)` is the plain text both fall back to. `cubelab.inspect.show(x)` builds the right view
for any inspectable thing and displays it where it is.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from cubelab.inspect.highlight import CSS_SCOPE, css, lexer_for, to_html

__all__ = ["View", "CodeView", "TableView", "SectionsView", "NoteView", "inline_markdown"]


def inline_markdown(text: str) -> str:
    """HTML for the inline Markdown that cubelab's prose uses — `code` and **bold** — escaped
    first, so nothing else in the text becomes markup. Every view that puts a message, a hint, a
    verdict or a reason into HTML goes through here: a backtick is never shown raw."""
    import re

    out = html.escape(text)
    out = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*\n]+)\*\*", r"<b>\1</b>", out)

_TABLE_CSS = f"""
.{CSS_SCOPE} table.cl-table {{ border-collapse: collapse; font-size: var(--jp-code-font-size, 12px); }}
.{CSS_SCOPE} table.cl-table th, .{CSS_SCOPE} table.cl-table td {{ padding: 2px 8px;
  border-bottom: 1px solid var(--jp-border-color2, #ddd); text-align: left; vertical-align: top;
  white-space: pre-wrap; }}
.{CSS_SCOPE} table.cl-table th {{ color: var(--jp-ui-font-color1, inherit); font-weight: bold; }}
.{CSS_SCOPE} .cl-state-failed, .{CSS_SCOPE} .cl-state-skipped {{ color: var(--jp-error-color1, #c00); }}
.{CSS_SCOPE} .cl-state-claimed {{ color: var(--jp-warn-color0, #b60); }}
.{CSS_SCOPE} .cl-state-repaired, .{CSS_SCOPE} .cl-state-clean {{ color: var(--jp-success-color1, #080); }}
.{CSS_SCOPE} .cl-big {{ font-size: 2.2em; font-weight: bold; line-height: 1.1; }}
.{CSS_SCOPE} .cl-muted {{ color: var(--jp-content-font-color2, #666); }}
.{CSS_SCOPE} details > summary {{ cursor: pointer; white-space: nowrap; }}
.{CSS_SCOPE} .cl-nowrap, .{CSS_SCOPE} table.cl-table td.cl-nowrap,
.{CSS_SCOPE} table.cl-table th.cl-nowrap {{ white-space: nowrap; }}
.{CSS_SCOPE} .cl-key {{ color: var(--jp-content-font-color2, #666); white-space: nowrap; }}
.{CSS_SCOPE} .cl-msg {{ white-space: pre-wrap; word-break: normal; overflow-wrap: normal;
  margin: 0; line-height: 1.35; }}
.{CSS_SCOPE} pre.cl-details {{ white-space: pre-wrap; word-break: normal; overflow-wrap: normal;
  max-width: 100%; }}
.{CSS_SCOPE} table.cl-table td, .{CSS_SCOPE} li, .{CSS_SCOPE} .cl-title {{ word-break: normal;
  overflow-wrap: normal; }}
.{CSS_SCOPE} code {{ white-space: nowrap; }}
.cubelab-view .cubelab-ellipsis select {{ text-overflow: ellipsis; }}
.cubelab-view .cubelab-stepper-source pre {{ white-space: pre-wrap; word-break: normal; }}
"""


#: the widest a printed report gets (characters): a 1280-px JupyterLab output area with the
#: file browser open shows about 110 columns of code font; wider lines wrap wherever they reach
TEXT_WIDTH = 100


def table_css() -> str:
    return css() + _TABLE_CSS


class View:
    """Base renderable. Subclasses provide `text()`, `html_body()` and `rich()`."""

    title: str | None = None

    def text(self) -> str:
        raise NotImplementedError

    def html_body(self) -> str:
        raise NotImplementedError

    def html(self, with_css: bool = True) -> str:
        style = f"<style>{table_css()}</style>" if with_css else ""
        return f'<div class="{CSS_SCOPE}">{style}{self.html_body()}</div>'

    def rich(self) -> Any:
        from rich.text import Text

        return Text(self.text())

    # -- protocols ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def __rich__(self) -> Any:
        return self.rich()

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()


@dataclass(repr=False)
class CodeView(View):
    """Source text in a language, with highlighted lines and per-line hover titles."""

    source: str
    lang: str = "text"
    title: str | None = None
    hl_lines: Sequence[int] = ()
    line_titles: Mapping[int, str] = field(default_factory=dict)
    gutter: Mapping[int, str] = field(default_factory=dict)
    first_line: int = 1

    def text(self) -> str:
        head = f"── {self.title} ──\n" if self.title else ""
        return head + self.source

    def html_body(self) -> str:
        return to_html(self.source, self.lang, hl_lines=self.hl_lines,
                       line_titles=self.line_titles, gutter=self.gutter, title=self.title,
                       with_css=False).removeprefix(f'<div class="{CSS_SCOPE}">') \
            .removesuffix("</div>")

    def rich(self) -> Any:
        from rich.panel import Panel
        from rich.syntax import Syntax

        syntax = Syntax(self.source.rstrip("\n"), lexer_for(self.lang), theme="ansi_dark",
                        line_numbers=True, start_line=self.first_line,
                        highlight_lines={n + self.first_line - 1 for n in self.hl_lines},
                        word_wrap=True, background_color="default")  # wrap, never crop
        return Panel(syntax, title=self.title, title_align="left") if self.title else syntax


@dataclass(repr=False)
class TableView(View):
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str | None = None
    row_classes: Sequence[str] = ()
    note: str = ""

    def text(self) -> str:
        """The table as text no wider than `TEXT_WIDTH`: the widest columns are wrapped at
        word boundaries (a notebook's output area would otherwise wrap each long row mid-word,
        anywhere), every line of a multi-line cell kept."""
        import textwrap

        cells = [[str(c) for c in self.columns]] + [[str(v) for v in r] for r in self.rows]
        widths = [max(len(line) for row in cells for line in (row[i].splitlines() or [""]))
                  for i in range(len(self.columns))]
        gap = 2 * (len(widths) - 1)
        while sum(widths) + gap > TEXT_WIDTH and max(widths) > 16:
            widest = widths.index(max(widths))
            widths[widest] -= 1
        out = [f"── {self.title} ──"] if self.title else []
        for j, row in enumerate(cells):
            wrapped = [[piece for line in (c.splitlines() or [""])
                        for piece in (textwrap.wrap(line, w, break_long_words=False,
                                                    break_on_hyphens=False) or [""])]
                       for c, w in zip(row, widths)]
            for k in range(max(len(w) for w in wrapped)):
                out.append("  ".join((w[k] if k < len(w) else "").ljust(width)
                                     for w, width in zip(wrapped, widths)).rstrip())
            if j == 0:
                out.append("  ".join("-" * w for w in widths))
        if self.note:
            out += textwrap.wrap(self.note, TEXT_WIDTH, break_long_words=False) or [""]
        return "\n".join(out)

    def html_body(self) -> str:
        head = "".join(f"<th>{inline_markdown(str(c))}</th>" for c in self.columns)
        body = []
        for i, r in enumerate(self.rows):
            cls = self.row_classes[i] if i < len(self.row_classes) else ""
            cells = "".join(f"<td>{inline_markdown(str(v))}</td>" for v in r)
            body.append(f'<tr class="{html.escape(cls)}">{cells}</tr>')
        title = f'<div class="cl-title">{inline_markdown(self.title)}</div>' if self.title else ""
        note = f'<div class="cl-muted">{inline_markdown(self.note)}</div>' if self.note else ""
        return (f'{title}<table class="cl-table"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table>{note}')

    def rich(self) -> Any:
        from rich.table import Table

        t = Table(title=self.title, title_justify="left", caption=self.note or None)
        for i, c in enumerate(self.columns):
            # never an ellipsis: the first column (an id, a name) is kept whole, the others
            # wrap at words and fold a token too long for the terminal
            longest = max((len(str(r[i])) for r in self.rows if i < len(r)), default=0)
            t.add_column(str(c), overflow="fold", no_wrap=i == 0,
                         min_width=min(longest, 32) if i == 0 else None)
        styles = {"cl-state-failed": "red", "cl-state-skipped": "red", "cl-state-claimed": "yellow",
                  "cl-state-repaired": "green", "cl-state-clean": "green"}
        for i, r in enumerate(self.rows):
            cls = self.row_classes[i] if i < len(self.row_classes) else ""
            t.add_row(*(str(v) for v in r), style=styles.get(cls))
        return t


@dataclass(repr=False)
class NoteView(View):
    lines: Sequence[str]
    title: str | None = None

    def text(self) -> str:
        head = [f"── {self.title} ──"] if self.title else []
        return "\n".join(head + [f"• {ln}" for ln in self.lines])

    def html_body(self) -> str:
        title = f'<div class="cl-title">{inline_markdown(self.title)}</div>' if self.title else ""
        items = "".join(f"<li>{inline_markdown(ln)}</li>" for ln in self.lines)
        return f"{title}<ul>{items}</ul>"

    def rich(self) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        body = Text("\n".join(f"• {ln}" for ln in self.lines))
        return Panel(body, title=self.title, title_align="left") if self.title else body


@dataclass(repr=False)
class SectionsView(View):
    """Several views under one title (a kernel overview, the passes)."""

    sections: Sequence[View]
    title: str | None = None
    collapsible: bool = False

    def text(self) -> str:
        head = [f"══ {self.title} ══"] if self.title else []
        return "\n\n".join(head + [s.text() for s in self.sections])

    def html_body(self) -> str:
        title = f'<div class="cl-title">{html.escape(self.title)}</div>' if self.title else ""
        parts = []
        for s in self.sections:
            if self.collapsible and s.title:
                parts.append(f"<details><summary>{html.escape(s.title)}</summary>"
                             f"{s.html_body()}</details>")
            else:
                parts.append(s.html_body())
        return title + "".join(parts)

    def rich(self) -> Any:
        from rich.console import Group
        from rich.rule import Rule

        items: list[Any] = [Rule(self.title)] if self.title else []
        items += [s.rich() for s in self.sections]
        return Group(*items)
