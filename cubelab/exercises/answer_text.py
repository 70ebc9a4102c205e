"""An answer typed into a box, read the way a student means it — or refused with how to write it.

    read("[0, 1, 2, 3]")   -> [0, 1, 2, 3]        a Python literal, exactly as written
    read("0 1 2 3")        -> [0, 1, 2, 3]        numbers without brackets: a list, in order
    read("0, 1, 2, 3")     -> [0, 1, 2, 3]        ... with commas
    read("b, c")           -> ["b", "c"]          words with commas: a list of words
    read("'b' 'c'")        -> ["b", "c"]          quoted words side by side (not Python's 'bc')
    read("calling thread") -> "calling thread"    words without commas: one answer in words
    read("true")           -> True                true/false in any case
    read("3")              -> 3
    read("[0, 1, 2")       -> Unreadable          a bracket, a quote or a brace left open

The contract: the answer is never reordered, deduplicated or reformatted (a list stays the list
the student wrote — the first wave's box sorted it and then graded what nobody wrote), and text
that cannot be read is refused with a message saying how to write it, instead of being checked
as a wrong answer. `as_text(answer)` is the other direction: an answer cell's value as the box
shows it, so that `read(as_text(v)) == v` for every literal a cell can hold (lists, tuples,
sets, dicts, strings, numbers, booleans).

The trap: Python's own reading is close but not enough. `ast.literal_eval("'b' 'c'")` is `'bc'`
(adjacent strings concatenate) and `"0 1 2"` is a syntax error; a bare word is a name, not a
string. So: literal first (when it is one value), then the unbracketed forms by splitting.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

__all__ = ["read", "as_text", "Unreadable", "HOW_TO_WRITE"]

#: how to write an answer, said when one cannot be read (an exercise kind may say it better)
HOW_TO_WRITE = ("write a number (3), a word (device), a list ([0, 1, 2] or 0 1 2), or names "
                "separated by commas (b, c)")

_OPENERS = {"[": "]", "(": ")", "{": "}"}
_WORDS = {"true": True, "false": False, "none": "none"}


class Unreadable(ValueError):
    """The text is not an answer cubelab can read; `str(exc)` says why and how to write one."""


def read(text: str, how: str = HOW_TO_WRITE) -> Any:
    """The answer `text` means (see the module docstring); `...` for an empty box."""
    text = text.strip()
    if not text or text == "...":
        return ...
    value = _literal(text)
    if value is not _NOTHING:
        return value
    if _unbalanced(text):
        raise Unreadable(f"could not read {text!r}: a bracket or a quote is not closed; {how}")
    if text[0] in _OPENERS and text[-1] == _OPENERS[text[0]]:
        inner = read(text[1:-1], how)  # [b, c] or {b, c}: names in brackets, not Python names
        items = [] if inner is ... else inner if isinstance(inner, list) else [inner]
        return {"[": list, "(": tuple, "{": set}[text[0]](items)
    parts = [p for p in re.split(r"\s*,\s*|\s+", text) if p] if "," in text or _quoted(text) \
        else text.split()
    values = [_token(p, how) for p in parts]
    if len(values) == 1:
        return values[0]
    if "," in text or _quoted(text) or all(_is_number(v) for v in values):
        return values
    return " ".join(parts)  # words without commas: one answer in words ("calling thread")


def as_text(answer: Any) -> str:
    """An answer cell's value as the box shows it: strings as written, everything else as its
    Python literal (a set's items sorted — a set has no order to keep)."""
    if answer is Ellipsis or answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, (set, frozenset)):
        items = sorted(answer, key=lambda v: (type(v).__name__, str(v)))
        return "{" + ", ".join(repr(v) for v in items) + "}" if items else "set()"
    tolist = getattr(answer, "tolist", None)  # a numpy array or scalar
    if callable(tolist):
        return repr(tolist())
    return repr(answer)


_NOTHING = object()
_WORD = re.compile(r"^[\w.+\-/]+$")  # a name, a number, info.relu, f32, float4, 1/2


def _literal(text: str) -> Any:
    """`text` as one Python literal, or _NOTHING (several values side by side are not one)."""
    if text == "set()":
        return set()
    if _quoted(text) and _string_tokens(text) > 1 and text[0] not in _OPENERS:
        return _NOTHING  # 'b' 'c': Python would glue them into 'bc'
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOTHING
    if isinstance(value, tuple) and not text.lstrip().startswith("("):
        return list(value)  # 0, 1, 2 without brackets: the list it lists
    return value


def _token(part: str, how: str) -> Any:
    word = part.strip()
    low = word.lower()
    if low in _WORDS:
        return _WORDS[low]
    value = _literal(word)
    if value is not _NOTHING:
        return value
    stripped = word.strip("'\"`")  # `b`, or quotes around one word
    if _WORD.match(stripped):
        return stripped
    raise Unreadable(f"could not read {word!r}; {how}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _quoted(text: str) -> bool:
    return "'" in text or '"' in text


def _string_tokens(text: str) -> int:
    try:
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        return sum(1 for t in toks if t.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return 0


def _unbalanced(text: str) -> bool:
    """A bracket left open or closed twice, or an odd number of quotes of one kind."""
    stack: list[str] = []
    quote = ""
    for c in text:
        if quote:
            if c == quote:
                quote = ""
            continue
        if c in "'\"":
            quote = c
        elif c in _OPENERS:
            stack.append(_OPENERS[c])
        elif c in _OPENERS.values():
            if not stack or stack.pop() != c:
                return True
    return bool(stack) or bool(quote)
