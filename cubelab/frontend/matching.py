"""`match` at expand time: folded on a comptime subject, a switch on a runtime integer.

The contract. The rewriter hands `match_` the subject and, per arm, its alternatives (each
`("==", value)` or `("is", None/True/False)`, as Python compares them; None for `case _:`), an
optional guard thunk, the arm's body closure, the pattern's position, and for a structural
pattern (captures, class, sequence, mapping) a matcher: Python's own `match` with that one
pattern, returning the captures the body and guard take as arguments.

- A comptime subject (`Comptime[...]` argument, enum member, string, int, None) is matched in
  Python: only the arm taken is expanded, as a comptime `if` (CubeCL's macro leaves a `match`
  on a comptime value to Rust, which destructures enums; here a matcher does). A guard that turns out to be a runtime bool becomes an `if`
  whose else is the rest of the arms.
- A runtime i32/u32 scalar subject becomes one `scf.switch` (WGSL and MSL `switch`): each arm's
  values are comptime ints of the subject's type, `case 1 | 2:` is one case with two values,
  `case _:` the default. A value an earlier arm already took is dropped (Python would never
  reach it; WGSL refuses a duplicate selector), and an arm left with none is not expanded.
- An arm with a guard on a runtime subject needs a test a switch cannot express, so the whole
  match becomes an if/elif chain (`x == 1 or x == 2`, then `and guard`, short-circuit).
- A `@cube_type` enum with runtime variants (`aggregates.RuntimeEnum`) is matched with class
  patterns: each arm's matcher runs on every variant's payload at expansion, and the switch on
  the tag gets one case per variant, expanded with that variant's fields bound (so an
  or-pattern over two variants is expanded twice); a guard makes it an if/elif chain on the tag.
  A default enum's value is a plain struct (its variant is comptime): the comptime path.

The trap: a runtime match is refused on floats, bools and vectors (WGSL's switch takes one
i32/u32), and its patterns must be comptime ints (no captures: a captured runtime value would
need a binding the switch cannot make); each refusal points at the subject or the
pattern with the if/elif alternative.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from cubelab.frontend.flow import if_, runtime_branch
from cubelab.frontend.operands import Pos, error, read, ty_of
from cubelab.frontend.operators import boolop, cmp
from cubelab.frontend.aggregates import RuntimeEnum
from cubelab.frontend.values import RV, LocalVar
from cubelab.ir.core import Block
from cubelab.ir.scope import Scope
from cubelab.ir.types import I32, U32

Alternative = tuple[str, Any]
# a structural pattern's matcher: subject -> its captures (a tuple) or None; and what it is
Matcher = tuple[Callable[[Any], tuple[Any, ...] | None], str]
Arm = tuple[list[Alternative] | None, Callable[..., Any] | None, Callable[..., None], Pos,
            Matcher | None]


def match_(s: Scope, subject: Any, arms: Sequence[Arm], at: Pos) -> None:
    s.at(*at)
    subject = read(s, subject)
    if isinstance(subject, RV):
        _runtime(s, subject, list(arms), at)
    elif isinstance(subject, RuntimeEnum):
        _runtime_enum(s, subject, list(arms), at)
    else:
        _comptime(s, subject, list(arms), at)


def _comptime(s: Scope, subject: Any, arms: list[Arm], at: Pos) -> None:
    for k, (alternatives, guard, body, where, matcher) in enumerate(arms):
        captures: tuple[Any, ...] = ()
        if matcher is not None:
            s.at(*where)
            try:
                got = matcher[0](subject)
            except Exception as exc:  # noqa: BLE001 - Python's own error, with the line
                raise error(s, f"matching {subject!r}: Python raised {exc!r}", "", where) from None
            if got is None:
                continue
            # a struct's runtime field is captured as its value now, as Python binds it
            captures = tuple(read(s, c) if isinstance(c, LocalVar) else c for c in got)
        elif alternatives is not None and not any(_equal(s, subject, a, where)
                                                  for a in alternatives):
            continue
        if guard is None:
            body(*captures)
            return
        s.at(*where)
        g = read(s, guard(*captures))
        if not isinstance(g, RV):
            if g:
                body(*captures)
                return
            continue
        rest = arms[k + 1:]
        if_(s, g, lambda: body(*captures),
            (lambda: _comptime(s, subject, rest, at)) if rest else None, where)
        return


def _equal(s: Scope, subject: Any, alternative: Alternative, where: Pos) -> bool:
    how, value = alternative
    if how == "is":
        return subject is value
    value = read(s, value)
    if isinstance(value, RV):
        raise error(s, "a match pattern must be a comptime value", "compare with if/elif",
                    where)
    try:
        return bool(subject == value)
    except TypeError as exc:
        raise error(s, f"matching {subject!r} against {value!r}: {exc}", "", where) from None


def _runtime(s: Scope, subject: RV, arms: list[Arm], at: Pos) -> None:
    ty = ty_of(subject.v)
    if ty not in (I32, U32):
        raise error(s, f"a `match` on a runtime {ty} value",
                    "a runtime match switches on one i32 or u32; for floats, bools and vectors "
                    "write if/elif/else")
    checked: list[tuple[list[int] | None, Callable[[], Any] | None, Callable[[], None], Pos]] = []
    for alternatives, guard, body, where, matcher in arms:
        if matcher is not None:
            raise error(s, f"{matcher[1]} matches only a comptime subject, and this one is a "
                        f"runtime {ty.elem.value}",
                        "on a runtime value match comptime values (`case 1 | 2:`) or `_`, and "
                        "use the subject itself instead of a capture", where)
        values = None if alternatives is None else \
            [_case_value(s, ty.elem.value, a, where) for a in alternatives]
        checked.append((values, guard, body, where))
    if any(guard is not None for _, guard, _, _ in checked):
        _chain(s, subject, checked, at)
        return
    seen: set[int] = set()
    cases: list[tuple[int, ...]] = []
    bodies: list[Callable[[], None]] = []
    default: Callable[[], None] | None = None
    for values, _, body, _ in checked:
        if values is None:
            default = body
            break
        fresh = tuple(dict.fromkeys(v for v in values if v not in seen))
        seen.update(fresh)
        if fresh:
            cases.append(fresh)
            bodies.append(body)
    s.at(*at)
    op = s.register("scf.switch", [subject.v], cases=tuple(cases))
    op.regions = [Block() for _ in range(len(cases) + 1)]
    for region, body in zip(op.regions, [*bodies, default]):
        if body is not None:
            runtime_branch(s, region, body)


def _runtime_enum(s: Scope, subject: RuntimeEnum, arms: list[Arm], at: Pos) -> None:
    """A match on a runtime-variants enum: a switch on its tag, one case per variant, the arm
    that takes a variant expanded with that variant's payload bound (an or-pattern over two
    variants is expanded once for each). With a guard it is an if/elif chain on the tag."""
    e = subject.info
    # (variant index or None for `case _`, captures, guard, body, where), in Python's order
    entries: list[tuple[int | None, tuple[Any, ...], Any, Callable[..., None], Pos]] = []
    for alternatives, guard, body, where, matcher in arms:
        if matcher is None and alternatives is None:
            entries.append((None, (), guard, body, where))
            continue
        if matcher is None:
            assert alternatives is not None
            for how, v in alternatives:
                if how != "==" or v not in e.variants:
                    raise error(s, f"`case {v!r}` cannot match a {e.name}",
                                f"match its variants with class patterns: `case "
                                f"{e.name}.{e.variants[0].__name__}(...):`", where)
                entries.append((e.variants.index(v), (), guard, body, where))
            continue
        for k, payload in enumerate(subject.payloads):
            s.at(*where)
            try:
                got = matcher[0](payload)
            except Exception as exc:  # noqa: BLE001 - Python's own error, with the line
                raise error(s, f"matching a {e.name}: {exc}", "", where) from None
            if got is not None:
                entries.append((k, tuple(subject if c is payload else c for c in got), guard,
                                body, where))
    s.at(*at)

    def arm(entry: tuple[Any, ...]) -> Callable[[], None]:
        _, captures, _, body, _ = entry
        return lambda: body(*[read(s, c) if isinstance(c, LocalVar) else c for c in captures])

    if any(guard is not None for _, _, guard, _, _ in entries):
        _enum_chain(s, subject, entries, arm, at)
        return
    chosen: dict[int, Any] = {}
    default = None
    for entry in entries:
        k = entry[0]
        if k is None:
            default = entry
            break
        chosen.setdefault(k, entry)
    cases = sorted(chosen)
    tag = read(s, subject.tag)
    op = s.register("scf.switch", [tag.v], cases=tuple((k,) for k in cases))
    op.regions = [Block() for _ in range(len(cases) + 1)]
    for region, entry in zip(op.regions, [*(chosen[k] for k in cases), default]):
        if entry is not None:
            runtime_branch(s, region, arm(entry))


def _enum_chain(s: Scope, subject: RuntimeEnum, entries: list[Any],
                arm: Callable[[Any], Callable[[], None]], at: Pos) -> None:
    if not entries:
        return
    entry, rest = entries[0], entries[1:]
    k, captures, guard, _, where = entry
    s.at(*where)
    test: Any = True if k is None else cmp(s, "eq", subject.tag, k, where)
    if guard is not None:
        read_captures = [read(s, c) if isinstance(c, LocalVar) else c for c in captures]
        test = boolop(s, "and", test, lambda: guard(*read_captures), where)
    orelse = (lambda: _enum_chain(s, subject, rest, arm, at)) if rest else None
    if test is True:
        arm(entry)()
        return
    if test is False:
        if orelse is not None:
            orelse()
        return
    if_(s, test, arm(entry), orelse, where)


def _case_value(s: Scope, elem: str, alternative: Alternative, where: Pos) -> int:
    how, value = alternative
    value = read(s, value)
    lo, hi = (0, 2**32 - 1) if elem == "u32" else (-(2**31), 2**31 - 1)
    if how == "is" or not isinstance(value, int) or isinstance(value, bool) \
            or not lo <= value <= hi:
        raise error(s, f"`case {value!r}` cannot match a runtime {elem} subject",
                    f"the patterns of a runtime match are comptime {elem} values ({lo}..{hi}), "
                    "`a | b` of them, or `_`; compare anything else with if/elif", where)
    return value


def _chain(s: Scope, subject: RV, arms: list[Any], at: Pos) -> None:
    """The match as if/elif: each arm's test is `subject == v1 or ...`, then `and guard`."""
    if not arms:
        return
    values, guard, body, where = arms[0]
    rest = arms[1:]
    orelse = (lambda: _chain(s, subject, rest, at)) if rest else None
    s.at(*where)
    test: Any = True
    if values is not None:
        test = cmp(s, "eq", subject, values[0], where)
        for v in values[1:]:
            test = boolop(s, "or", test, lambda v=v: cmp(s, "eq", subject, v, where), where)
    if guard is not None:
        test = boolop(s, "and", test, guard, where)
    if test is True:
        body()
        return
    if_(s, test, body, orelse, where)


__all__ = ["match_"]
