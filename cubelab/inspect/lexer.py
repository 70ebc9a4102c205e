"""A pygments lexer for cubelab's textual IR (the "expanded IR" view), registered as `cube-ir`.

The IR printer writes an MLIR-like form (`%v12 = arith.add %v10, %v11 : vec4<f32>  // line 7`);
this lexer gives those pieces token types so the notebook (pygments HTML) and the terminal
(rich.Syntax, which takes a pygments lexer) colour it like any other language. It is exposed
through the `pygments.lexers` entry point, so `pygmentize -l cube-ir` works once installed.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

__all__ = ["CubeIrLexer"]


class CubeIrLexer(RegexLexer):
    name = "cubelab IR"
    aliases = ["cube-ir", "cubeir"]
    filenames = ["*.cubeir"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"\b(kernel|cube_dim|else)\b", Keyword),
            (r"(@)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Punctuation, Name.Function)),
            (r"%[A-Za-z_][A-Za-z0-9_]*", Name.Variable),
            (r"\b[a-z]+\.[a-z_]+\b", Name.Builtin),  # op names: arith.add, scf.if, memory.index
            (r"\b(ptr|array|vec[234]|global|function|workgroup|rw|r)\b", Keyword.Type),
            (r"\b(f16|f32|f64|i32|u32|bool)\b", Keyword.Type),
            (r"\b(True|False|true|false|None)\b", Keyword.Constant),
            (r"'[^']*'", String.Single),
            (r'"[^"]*"', String.Double),
            (r"-?\d+\.\d*([eE][-+]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[=:<>]", Operator),
            (r"[{}(),\[\]]", Punctuation),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r".", Text),
        ]
    }
