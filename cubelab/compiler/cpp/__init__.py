"""The C-family targets: one emitter (`emitter.py`), one dialect object per target.

`metal.py` (the "msl" target) and `cuda.py` (the "cuda" target) each hold a `Dialect` subclass —
only the words their compiler spells differently — and a `Target` that hands it to
`emitter.compile_c`. `dialect.py` says what a dialect must answer. WGSL is not C-shaped enough to
share the emitter (`let` bindings, `select(f, t, c)`, native vectors) and keeps its own
(`compiler/wgsl.py`); the spellings all three share live in `compiler/spelling.py`.
"""
