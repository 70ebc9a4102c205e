"""Compilation options: what a server compiles with besides the KernelId, checked once, keyed once.

Contract:
- `CompilationOptions` is a frozen dataclass whose `__post_init__` refuses a value outside an
  option's allowed set with a `ValueError` that names the allowed values (`checked_io="fxed"`,
  `loop_budget=-5`, an `extra_passes` entry that is not a pass); `replace(**changes)` refuses an
  unknown option name the same way. `client.set_compilation_options(...)` goes through
  `replace`, so a bad option is refused at once, on the calling thread, and nothing is changed.
- `options_key(options)` is the one answer to "which options compiled this": a short string that
  changes whenever anything that changes the generated code changes — the CheckedIo rule, the
  loop budget, every extra pass by `pass_identity`, and every plug-in IR op by its digest
  (`ir/plugins.py` `identity`: an op's spelling is code too). The server keys its pipeline cache by
  (KernelId, this key) and publishes it with every compile (`CompileFinished.options_key`); the
  persistent compilation store keys its files by it too.
- `pass_identity(p)` says which pass `p` is: its class's qualified name, then 8 hex digits of a
  digest of its class's source and its configuration (`repr` of its fields), so editing a pass's
  code in a notebook cell, or configuring it differently, is a different key — a pass that
  changes code never meets a pipeline compiled without that change.

Why here: options are compiler settings (the pass selection is `pipeline.select_passes`); the
runtime holds one value per server and every view reads it through the client
(`client.compilation_options()`), so the preview compiles what the server compiles.

Trap: the key digests a pass's *class source*; a pass that reads global state its source does
not show (a module variable changed after definition) can change its output without changing
its key. Configure passes through their fields, which the key includes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from dataclasses import dataclass
from typing import Any, get_args, get_type_hints

from cubelab.errors import hinted
from cubelab.ir.plugins import identity as plugin_identity
from cubelab.ir.passes import DEFAULT_CHECKED_IO, DEFAULT_LOOP_BUDGET, CheckedIoRule, Pass

# The loop guard compares a u32 counter with the budget and with budget + 1 (`ir/passes.py`
# LoopGuard): both must be u32 values.
MAX_LOOP_BUDGET = 2**32 - 2


@dataclass(frozen=True)
class CompilationOptions:
    """Compiler settings of a server — not part of the KernelId; changing them clears the cache
    and changes `options_key`.

    `checked_io`: "cubecl-0.11.3" (the default, DESIGN §7) reproduces the seed's finding that
    the CheckedIo pass never fires on global buffers; "fixed" clamps checked indices to len-1
    (the documented intent), the named alternative.
    `loop_budget`: the most loop iterations one unit of a checked launch may run (all loops
    together) before the launch fails, naming the loop (`ir/passes.py` LoopGuard); None turns
    the guard off. Unchecked launches are never guarded.
    `extra_passes`: passes (`cubelab.compiler.Pass`) run after the built-in ones, in order, on
    every launch, checked and unchecked, for every target and the CPU runtime.
    """

    checked_io: CheckedIoRule = DEFAULT_CHECKED_IO
    loop_budget: int | None = DEFAULT_LOOP_BUDGET
    extra_passes: tuple[Pass, ...] = ()

    def __post_init__(self) -> None:
        allowed = get_args(get_type_hints(CompilationOptions)["checked_io"])
        if not isinstance(self.checked_io, str) or self.checked_io not in allowed:
            raise ValueError(hinted(f"checked_io must be one of {', '.join(map(repr, allowed))}"
                                    f"; got {self.checked_io!r}",
                                    "\"cubecl-0.11.3\" is the default (the seed's), \"fixed\" "
                                    "clamps checked indices"))
        budget = self.loop_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                                   or not 1 <= budget <= MAX_LOOP_BUDGET):
            raise ValueError(hinted(f"loop_budget must be None (no loop guard) or a whole "
                                    f"number from 1 to {MAX_LOOP_BUDGET}; got {budget!r}",
                                    "e.g. loop_budget=10**9 for longer loops, None to turn the "
                                    "guard off"))
        passes = self.extra_passes
        if isinstance(passes, (str, bytes)) or not hasattr(passes, "__iter__"):
            raise ValueError(hinted(f"extra_passes must be a list of passes; got {passes!r}",
                                    "pass a list of objects with a `name` and a "
                                    "`run(definition)` method, e.g. [MyPass()]"))
        passes = tuple(passes)
        for p in passes:
            if isinstance(p, type):
                raise ValueError(hinted("extra_passes takes pass objects, not classes",
                                        f"write {p.__name__}() instead of {p.__name__}"))
            if not isinstance(getattr(p, "name", None), str) or not callable(getattr(p, "run",
                                                                                    None)):
                raise ValueError(hinted(f"{p!r} is not a pass", "a pass has a `name: str` and "
                                        "a `run(definition) -> definition` method "
                                        "(cubelab.compiler.Pass)"))
        object.__setattr__(self, "extra_passes", passes)

    def replace(self, **changes: Any) -> "CompilationOptions":
        """These options with `changes` applied, checked: an unknown name or a value outside an
        option's allowed set is a ValueError, and nothing changes."""
        names = [f.name for f in dataclasses.fields(self)]
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise ValueError(hinted(f"unknown compilation option {unknown[0]!r}",
                                    f"the options are {', '.join(names)}"))
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Option name -> value, shallow (the pass objects themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def changes_from(self, other: "CompilationOptions") -> list[str]:
        """What differs from `other`, in words ("loop_budget: 268435456 → None")."""
        out = []
        for name in (f.name for f in dataclasses.fields(self)):
            a, b = getattr(other, name), getattr(self, name)
            if name == "extra_passes":
                a, b = [pass_identity(p) for p in a], [pass_identity(p) for p in b]
            if a != b:
                out.append(f"{name}: {a!r} → {b!r}")
        return out


def pass_identity(p: Any) -> str:
    """`module.Class@1a2b3c4d`: which pass `p` is, for cache keys — its class's qualified name
    and a digest of its class's source and its configuration (`repr` of its dataclass fields or
    attributes), so a redefined or reconfigured pass is a different pass."""
    cls = type(p)
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):  # defined where its source cannot be read back: its bytecode
        source = "".join(repr(getattr(f, "__code__", f).co_code)  # type: ignore[union-attr]
                         for f in vars(cls).values() if hasattr(f, "__code__"))
    if dataclasses.is_dataclass(p):
        config = repr([(f.name, getattr(p, f.name)) for f in dataclasses.fields(p)])
    else:
        config = repr(sorted((k, v) for k, v in vars(p).items() if not k.startswith("_"))) \
            if hasattr(p, "__dict__") else ""
    digest = hashlib.sha256((source + "\0" + config).encode()).hexdigest()[:8]
    return f"{cls.__module__}.{cls.__qualname__}@{digest}"


def options_key(options: CompilationOptions) -> str:
    """The options' part of a compiled kernel's key: everything besides the KernelId that
    changes the generated code. Stable across processes (no ids, no addresses)."""
    passes = ",".join(pass_identity(p) for p in options.extra_passes)
    ops = plugin_identity()  # plug-in IR ops change the code a KernelId compiles to, too
    return (f"checked_io={options.checked_io};loop_budget={options.loop_budget};"
            f"extra_passes=[{passes}]" + (f";plugin_ops=[{ops}]" if ops else ""))


__all__ = ["CompilationOptions", "MAX_LOOP_BUDGET", "options_key", "pass_identity"]
