"""A kernel's fingerprint: everything its expansion reads besides its arguments, as one digest.

The KernelId holds the compile-time arguments and a digest of the kernel's source and its
helpers' (`CubeFunction.origin`), which is enough inside one process. The persistent
compilation store (`runtime/store.py`) needs more: a later process may have changed a global the
kernel reads (`TILE = 32` instead of 16 in the notebook above it, a plain Python helper called at
expansion, a constant class `Act.RELU`), and the stored code would then be stale. So the
fingerprint adds, for the kernel and every `@cube` helper it reaches, the *value* of each global
name it reads:

- numbers, strings, bytes, None, enums and tuples/lists/dicts/sets of them: their `repr`;
- a `@cube` function: its own fingerprint (recursively); a `@cube_type` class: its layout;
- a plain function: its qualified name and its code (bytecode, constants, names — recursively
  for nested code), not its globals;
- a class: its qualified name and its public attributes' values; a module: its name;
- cubelab's own objects (the prelude's types, functions, generics): their `repr` (the cubelab
  build is in the store's key already);
- anything else: its `repr` — which for a plain object holds its address, so the key changes
  every process: such a kernel is never loaded, never stale.

The trap: a value whose `repr` hides what the kernel reads (a custom `__repr__` that omits the
field the expansion uses) could give a stale load. Such objects are rare in kernels; the docs
say so, and `CUBELAB_CACHE_DIR=off` is the way out.
"""

from __future__ import annotations

import enum
import hashlib
import types
from typing import Any, Callable

from cubelab.frontend import aggregates

_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _code(c: types.CodeType) -> str:
    consts = ",".join(_code(k) if isinstance(k, types.CodeType) else repr(k)
                      for k in c.co_consts)
    return f"{c.co_code.hex()}|{consts}|{c.co_names}"


def value_text(v: Any, cube_fingerprint: Callable[[Any], str | None], depth: int = 0) -> str:
    """The text a global's value contributes to a fingerprint (see the module docstring).
    `cube_fingerprint(v)`: a `@cube` function's fingerprint, None for anything else."""
    if depth > 6:
        return "..."
    if isinstance(v, _PLAIN) or isinstance(v, enum.Enum):
        return repr(v)
    cube = cube_fingerprint(v)
    if cube is not None:
        return f"cube:{cube}"
    if aggregates.is_cube_type(v):
        return f"cube_type:{aggregates.signature(v)}"
    if isinstance(v, (tuple, list, frozenset, set)):
        items = [value_text(x, cube_fingerprint, depth + 1) for x in v]
        if isinstance(v, (frozenset, set)):
            items.sort()
        return f"{type(v).__name__}({','.join(items)})"
    if isinstance(v, dict):
        return "dict(" + ",".join(sorted(f"{value_text(k, cube_fingerprint, depth + 1)}:"
                                         f"{value_text(x, cube_fingerprint, depth + 1)}"
                                         for k, x in v.items())) + ")"
    if isinstance(v, types.ModuleType):
        return f"module:{v.__name__}"
    module = getattr(type(v), "__module__", "") or ""
    if module == "cubelab" or module.startswith("cubelab."):
        return f"cubelab:{v!r}"
    if isinstance(v, type):
        if getattr(v, "__module__", "").startswith("cubelab."):
            return f"cubelab:{v.__module__}.{v.__qualname__}"
        attrs = sorted((k, value_text(x, cube_fingerprint, depth + 1))
                       for k, x in vars(v).items()
                       if not k.startswith("__") and not callable(x))
        return f"class:{v.__module__}.{v.__qualname__}{attrs}"
    if isinstance(v, (types.FunctionType, types.MethodType)):
        f = v.__func__ if isinstance(v, types.MethodType) else v
        return f"fn:{f.__module__}.{f.__qualname__}:{_code(f.__code__)}"
    if isinstance(v, types.BuiltinFunctionType):
        return f"builtin:{getattr(v, '__module__', '')}.{v.__qualname__}"
    return f"{type(v).__module__}.{type(v).__qualname__}:{v!r}"


def digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
