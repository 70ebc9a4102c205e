"""Theme-aware syntax highlighting: pygments HTML coloured through JupyterLab's CSS variables.

Every colour is `var(--jp-mirror-editor-…, <literal>)`: in JupyterLab (light or dark) the
variables exist and follow the theme; in VS Code, Colab or GitHub they do not, and the literal
fallback (a light-theme colour) applies — the way xarray's HTML repr does it. Rules are scoped
under `.cubelab-code`, and pygments' unscoped `pre`/`td.linenos` rules are never emitted, so a
rendered output cannot restyle the rest of the page.

Trap: a reopened *untrusted* notebook drops `<style>` from plain outputs; the text stays readable
(it inherits the page colour), only the colours go. Widget HTML keeps them.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Iterable, Mapping

from pygments import highlight as _pyg_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES, Token, _TokenType

from cubelab.compiler.targets import TARGETS
from cubelab.inspect.lexer import CubeIrLexer

__all__ = ["lexer_for", "to_html", "css", "CSS_SCOPE"]

CSS_SCOPE = "cubelab-code"

# token -> (JupyterLab variable, fallback, extra css); a token takes its nearest listed parent.
_TOKEN_COLOURS: dict[_TokenType, tuple[str, str, str]] = {
    Token.Keyword: ("--jp-mirror-editor-keyword-color", "#008000", "font-weight: bold"),
    Token.Keyword.Type: ("--jp-mirror-editor-builtin-color", "#008000", ""),
    Token.Keyword.Constant: ("--jp-mirror-editor-keyword-color", "#008000", ""),
    Token.Name.Builtin: ("--jp-mirror-editor-builtin-color", "#008000", ""),
    Token.Name.Function: ("--jp-mirror-editor-def-color", "#0000ff", ""),
    Token.Name.Class: ("--jp-mirror-editor-def-color", "#0000ff", ""),
    Token.Name.Variable: ("--jp-mirror-editor-variable-2-color", "#05a", ""),
    Token.Name.Attribute: ("--jp-mirror-editor-property-color", "#05a", ""),
    Token.Name.Decorator: ("--jp-mirror-editor-meta-color", "#aa22ff", ""),
    Token.Name.Tag: ("--jp-mirror-editor-tag-color", "#170", ""),
    Token.Comment: ("--jp-mirror-editor-comment-color", "#408080", "font-style: italic"),
    Token.Comment.Preproc: ("--jp-mirror-editor-meta-color", "#aa22ff", ""),
    Token.String: ("--jp-mirror-editor-string-color", "#ba2121", ""),
    Token.Number: ("--jp-mirror-editor-number-color", "#080", ""),
    Token.Operator: ("--jp-mirror-editor-operator-color", "#aa22ff", ""),
    Token.Operator.Word: ("--jp-mirror-editor-keyword-color", "#008000", "font-weight: bold"),
    Token.Punctuation: ("--jp-mirror-editor-punctuation-color", "#05a", ""),
    Token.Generic.Deleted: ("--jp-error-color1", "#c00", ""),
    Token.Generic.Inserted: ("--jp-success-color1", "#080", ""),
    Token.Generic.Heading: ("--jp-mirror-editor-header-color", "#00f", "font-weight: bold"),
    Token.Error: ("--jp-mirror-editor-error-color", "#f00", ""),
}

_BASE_CSS = f"""
.{CSS_SCOPE} {{ color: var(--jp-content-font-color1, inherit);
  background: var(--jp-cell-editor-background, transparent);
  font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);
  border-radius: 2px; overflow-x: auto; line-height: 1.45; }}
.{CSS_SCOPE} pre {{ margin: 0; padding: 4px 6px; line-height: 1.35; background: transparent;
  color: inherit; white-space: pre; overflow-x: auto; }}
.{CSS_SCOPE} .hll {{ background-color: rgba(255, 196, 0, 0.28); display: block; }}
.{CSS_SCOPE} .cl-gutter {{ color: var(--jp-content-font-color3, #999); user-select: none; }}
.{CSS_SCOPE} [title] {{ cursor: help; }}
.{CSS_SCOPE} .cl-title {{ font-weight: bold; margin: 2px 0; color: var(--jp-ui-font-color1, inherit); }}
"""


def _colour_for(tok: _TokenType) -> tuple[str, str, str] | None:
    while tok is not Token:
        if tok in _TOKEN_COLOURS:
            return _TOKEN_COLOURS[tok]
        tok = tok.parent
    return None


@lru_cache(maxsize=1)
def css() -> str:
    """The stylesheet, scoped under `.cubelab-code` (one copy per output)."""
    rules = [_BASE_CSS.strip()]
    for tok, short in STANDARD_TYPES.items():
        if not short:
            continue
        colour = _colour_for(tok)
        if colour is None:
            continue
        var, fallback, extra = colour
        decl = f"color: var({var}, {fallback});" + (f" {extra};" if extra else "")
        rules.append(f".{CSS_SCOPE} .{short} {{ {decl} }}")
    return "\n".join(rules)


_ALIASES = {"ir": "cube-ir", "expanded": "python", "py": "python", "source": "python",
            "text": "text", "kernel-id": "rust", "rust-debug": "rust"}


def lexer_for(lang: str) -> Lexer:
    """A pygments lexer for a cubelab view language: IR, Python, ..., or a target's name (the
    target names its lexer: `compiler.targets.TARGETS[name].lexer`)."""
    target = TARGETS.get(lang)
    name = target.lexer if target is not None else _ALIASES.get(lang, lang)
    if name == "cube-ir":
        return CubeIrLexer()
    try:
        return get_lexer_by_name(name)
    except Exception:  # noqa: BLE001 - unknown language: plain text beats an error
        return get_lexer_by_name("text")


# a line's span, and the highlight band pygments opens right inside it (the gutter mark goes
# inside the band: the band is a block, and a mark before it would sit on a row of its own)
_LINE_SPAN = re.compile(r'<span id="(?P<prefix>cl\d+)-(?P<n>\d+)">(?P<hll><span class="hll">)?')
_counter = iter(range(1, 1 << 62))


def to_html(text: str, lang: str, *, hl_lines: Iterable[int] = (),
            line_titles: Mapping[int, str] | None = None, gutter: Mapping[int, str] | None = None,
            title: str | None = None, with_css: bool = True) -> str:
    """Highlighted HTML for `text`.

    `hl_lines` (1-based) get a highlight band; `line_titles` become hover tooltips on a line
    (the line correspondence: "from kernel line 13"); `gutter` writes a short mark before a line.
    """
    prefix = f"cl{next(_counter)}"
    fmt = HtmlFormatter(nowrap=False, hl_lines=list(hl_lines), linespans=prefix,
                        cssclass="cl-src", wrapcode=False)
    body = _pyg_highlight(text, lexer_for(lang), fmt)
    titles = dict(line_titles or {})
    marks = dict(gutter or {})
    if titles or marks:
        width = max((len(m) for m in marks.values()), default=0)

        def add(m: re.Match[str]) -> str:
            n = int(m["n"])
            attr = f' title="{html.escape(titles[n], quote=True)}"' if n in titles else ""
            mark = ""
            if marks:
                mark = f'<span class="cl-gutter">{html.escape(marks.get(n, "").rjust(width))} </span>'
            return f'<span id="{m["prefix"]}-{n}" data-line="{n}"{attr}>{m["hll"] or ""}{mark}'

        body = _LINE_SPAN.sub(add, body)
    head = f'<div class="cl-title">{html.escape(title)}</div>' if title else ""
    style = f"<style>{css()}</style>" if with_css else ""
    return f'<div class="{CSS_SCOPE}">{style}{head}{body}</div>'
