"""Plug-in IR ops: an elementwise op added from outside the package — from a notebook cell — and
taken through every layer a built-in op goes through, each layer's part through its own function.

    import numpy as np
    from cubelab.ir.plugins import add_op                 # layer 0: meaning, effect
    from cubelab.compiler import TARGETS                    # layer 1: each target's spelling
    from cubelab.runtime.cpu import cpu_step                # layer 2: the CPU runtime's step
    from cubelab.prelude import intrinsic                   # layer 3: what a kernel calls

    add_op("student.softplus", "log(1 + exp(x)) of f32, computed as written (inf for x > 88)")
    TARGETS["wgsl"].lower("student.softplus", "log(1.0 + exp({0}))")
    TARGETS["msl"].lower("student.softplus", "log(1.0f + exp({0}))")
    TARGETS["cuda"].lower("student.softplus", "logf(1.0f + expf({0}))")
    cpu_step("student.softplus", lambda x: np.log(np.float32(1) + np.exp(x)))
    softplus = intrinsic("student.softplus")              # softplus(x) inside a @cube kernel

Contract:
- `add_op(name, meaning, arity=1, pure=True)` writes the op into the tables every op of the
  package is in: its meaning into `ir.core.OPS`, its memory effect (`Effect.NONE`: a plug-in op
  takes values and gives one) into `ir.analysis.EFFECTS`, its name into `PURE` when it is pure (a
  pass may then drop it when nothing uses its result, the frontend may evaluate it eagerly). The
  verifier (`ir/verify.py`) holds every use to the op's shape: `arity` operands and one result,
  all of one type, a scalar or vector of f32, i32 or u32 (`intrinsic` pairs and splats its
  arguments as operators do).
- The layers above store their part on the op's record, each through its own function — a
  target's spelling through `Target.lower` (`PluginOp.lowerings[target name]`, a format string
  of the operands `{0}`, `{1}`, ...), the CPU runtime's through `cpu_step` (`PluginOp.cpu`, a
  numpy function of the operands' rows) — and read it where they read their own tables. A part
  that is missing is an error naming the call that adds it, raised where that layer meets the op
  (the target's code generation, the CPU runtime's plan), never a silent skip.
- **The cache.** A plug-in op's parts change the code a kernel compiles to without changing its
  KernelId, so every change (an op added, a part set, an op removed) is told to each subscriber —
  each client clears its pipeline cache, saying which op changed — and `identity()` (each op's
  name and a digest of all its parts) is part of `compiler.options.options_key`, the key the
  compilation store on disk files a pipeline under. A pipeline built from one definition of an
  op is never run under another: the lesson of the pass's identity, for ops.
- `remove_op(name)` takes the op out of every table again (an exercise's check, a test, a
  teacher resetting a notebook).

Why the record lives in the IR layer: an op's parts must come and go together, and a layer may
only read below itself — so the one record sits at the bottom and each layer writes its own field
of it through its own function; nothing here knows a target or a runtime beyond their names.

Trap: a plug-in op is a *value* op. One that reads or writes memory, takes a pointer, or needs
attributes is the package's own work (docs/architecture.md, "How to add an IR op"): its pointers
need every emitter's place logic and the runtime's write sets (`ir.analysis.buffer_io`).
"""

from __future__ import annotations

import hashlib
import inspect
import re
import string
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from cubelab.errors import hinted
from cubelab.ir.analysis import EFFECTS, PURE, Effect
from cubelab.ir.core import OPS

__all__ = ["PluginOp", "PLUGIN_OPS", "add_op", "remove_op", "plugin_op", "set_lowering",
           "set_cpu_step", "identity", "subscribe", "spelling_fields"]

# The dialects of the package's own ops: a plug-in op takes a name of its own ("student.x").
BUILT_IN_DIALECTS = frozenset(name.split(".")[0] for name in OPS)
_NAME = re.compile(r"^[A-Za-z_]\w*\.[A-Za-z_]\w*$")


@dataclass(eq=False)
class PluginOp:
    """One plug-in op: what `add_op` declared, and each layer's part as it is added."""

    name: str
    meaning: str
    arity: int
    pure: bool
    # target name ("wgsl", "msl", "cuda") -> a format string of the operands ("exp({0})")
    lowerings: dict[str, str] = field(default_factory=dict)
    # the CPU runtime's step: a numpy function of the operands' rows (one row per lane)
    cpu: Callable[..., Any] | None = None

    def digest(self) -> str:
        """8 hex digits of everything this op is: meaning, shape, every spelling, what the CPU
        step computes (`_source_of`)."""
        parts = [self.name, self.meaning, str(self.arity), str(self.pure),
                 repr(sorted(self.lowerings.items())), _source_of(self.cpu)]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


PLUGIN_OPS: dict[str, PluginOp] = {}
_subscribers: list[Callable[[], Callable[[str], None] | None]] = []


def _source_of(fn: Callable[..., Any] | None) -> str:
    """What a CPU step computes, as text: its bytecode, constants and names (nested functions
    too), the values it closes over and its defaults. Not its source: a lambda's source is the
    whole line it sits on, so the same step written in two cells would read as two steps, and a
    comment on the line would change it. Stable across processes (no addresses)."""
    if fn is None:
        return ""
    code = getattr(fn, "__code__", None)
    if code is None:  # a numpy ufunc, a builtin: its name says what it is
        return f"{type(fn).__module__}.{getattr(fn, '__qualname__', repr(fn))}"
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())]
    return _code_text(code) + repr(cells) + repr(getattr(fn, "__defaults__", None))


def _code_text(code: Any) -> str:
    consts = [_code_text(c) if inspect.iscode(c) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{consts}|{code.co_names}"


def plugin_op(name: str) -> PluginOp | None:
    """The plug-in op of that name, or None (a built-in op, or no op at all)."""
    return PLUGIN_OPS.get(name)


def add_op(name: str, meaning: str, arity: int = 1, pure: bool = True) -> PluginOp:
    """Declare an elementwise value op: its meaning (what every target implements to the letter)
    into `OPS`, its effect (none: values in, a value out) into `EFFECTS`, into `PURE` when `pure`
    (no hidden state: a pass may drop it when unused). Running the same declaration again (a
    notebook cell run twice) changes nothing; another declaration under a taken name is refused:
    `remove_op` it first."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(hinted(f"an op's name is `dialect.name`, not {name!r}",
                                "e.g. 'student.softplus'"))
    if name.split(".")[0] in BUILT_IN_DIALECTS:
        raise ValueError(hinted(f"{name!r} is in the dialect of cubelab's own ops "
                                f"({', '.join(sorted(BUILT_IN_DIALECTS))})",
                                "give your op a dialect of its own, e.g. 'student."
                                + name.split(".")[1] + "'"))
    if not isinstance(meaning, str) or not meaning.strip():
        raise ValueError(hinted("an op needs its meaning in words",
                                "every target implements that text to the letter "
                                "(ir.core.OPS): say what it computes, edge cases included"))
    if isinstance(arity, bool) or not isinstance(arity, int) or not 1 <= arity <= 3:
        raise ValueError(hinted(f"arity is the number of operands; got {arity!r}",
                                "give 1, 2 or 3"))
    existing = PLUGIN_OPS.get(name)
    if existing is not None:
        if (existing.meaning, existing.arity, existing.pure) == (meaning, arity, bool(pure)):
            return existing
        raise ValueError(hinted(f"op {name!r} is already declared with another meaning or "
                                "shape", f"remove_op({name!r}) first (kernels compiled with it "
                                "compile again)"))
    op = PluginOp(name, meaning, arity, bool(pure))
    PLUGIN_OPS[name] = op
    OPS[name] = meaning
    EFFECTS[name] = Effect.NONE
    if op.pure:
        PURE.add(name)
    _changed(f"IR op `{name}` added")
    return op


def remove_op(name: str) -> None:
    """Take a plug-in op out of every table (its spellings and CPU step go with it)."""
    if name not in PLUGIN_OPS:
        raise ValueError(hinted(f"{name!r} is not a plug-in op"
                                + (" (cubelab's own ops cannot be removed)" if name in OPS
                                   else ""), "remove only ops you declared with add_op"))
    del PLUGIN_OPS[name]
    OPS.pop(name, None)
    EFFECTS.pop(name, None)
    PURE.discard(name)
    _changed(f"IR op `{name}` removed")


def _declared(name: str, who: str) -> PluginOp:
    op = PLUGIN_OPS.get(name)
    if op is None:
        if name in OPS:
            raise ValueError(hinted(f"{name!r} is one of cubelab's own ops",
                                    f"{who} of those lives in the package "
                                    "(docs/architecture.md, 'How to add an IR op')"))
        raise ValueError(hinted(f"no op {name!r}", f"declare it first with "
                                f"cubelab.ir.plugins.add_op({name!r}, meaning)"))
    return op


def spelling_fields(spelling: str) -> list[str]:
    """The replacement fields of a spelling ("exp({0}) * {1}" -> ["0", "1"]); ValueError for
    text that is not a format string."""
    return [f for _, f, _, _ in string.Formatter().parse(spelling) if f is not None]


def set_lowering(name: str, target: str, spelling: str) -> None:
    """Store `target`'s spelling of plug-in op `name` (what `Target.lower` checked and hands
    down): a format string whose fields are the operands, `{0}` ... `{arity - 1}`."""
    op = _declared(name, "the spelling")
    if not isinstance(spelling, str) or not spelling.strip():
        raise ValueError(hinted(f"a spelling is the target's expression for the op; got "
                                f"{spelling!r}", "a string with the operands as {0}, {1}, ...: "
                                "e.g. 'exp({0})'"))
    try:
        fields = spelling_fields(spelling)
    except ValueError as exc:
        raise ValueError(hinted(f"{spelling!r} is not a spelling: {exc}",
                                "write a literal brace as {{ or }}")) from None
    allowed = {str(i) for i in range(op.arity)}
    stray = sorted(set(fields) - allowed)
    if stray:
        raise ValueError(hinted(f"the spelling of {name!r} uses {{{stray[0]}}}",
                                "its operands are " + ", ".join(f"{{{i}}}"
                                                               for i in range(op.arity))))
    unused = sorted(allowed - set(fields))
    if unused:
        raise ValueError(hinted(f"the spelling of {name!r} never uses operand "
                                f"{{{unused[0]}}}", "use every operand, {0} .. in order"))
    if op.lowerings.get(target) == spelling:
        return
    op.lowerings[target] = spelling
    _changed(f"the {target} spelling of IR op `{name}` changed")


def set_cpu_step(name: str, fn: Callable[..., Any]) -> None:
    """Store the CPU runtime's step of plug-in op `name` (what `runtime.cpu.cpu_step` hands
    down): a function of the operands' numpy rows."""
    op = _declared(name, "the CPU step")
    if not callable(fn):
        raise ValueError(hinted(f"a CPU step is a function of the operands' numpy arrays; "
                                f"got {fn!r}", "e.g. `lambda x: np.exp(x)`"))
    if op.cpu is not None and _source_of(op.cpu) == _source_of(fn):
        op.cpu = fn
        return
    op.cpu = fn
    _changed(f"the CPU step of IR op `{name}` changed")


def identity() -> str:
    """Every plug-in op's name and digest ("" when there is none): part of the options' key."""
    return ",".join(f"{name}@{PLUGIN_OPS[name].digest()}" for name in sorted(PLUGIN_OPS))


def subscribe(callback: Callable[[str], None]) -> None:
    """Call `callback(reason)` after every change. A bound method is held weakly (a client's
    subscription does not keep the client alive); anything else for the process's life."""
    ref: Callable[[], Callable[[str], None] | None]
    if inspect.ismethod(callback):
        ref = weakref.WeakMethod(callback)
    else:
        ref = lambda: callback  # noqa: E731 - the same call shape as a weak reference
    _subscribers.append(ref)


def _changed(reason: str) -> None:
    alive = []
    for ref in _subscribers:
        fn = ref()
        if fn is None:
            continue
        alive.append(ref)
        fn(reason)
    _subscribers[:] = alive
