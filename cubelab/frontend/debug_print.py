"""`debug_print("x = {}", x)`: print from inside a kernel, one line per unit that runs it.

    @cube(launch=True)
    def k(x: Slice[f32]):
        if ABSOLUTE_POS < 3:
            debug_print("x[{}] = {}", ABSOLUTE_POS, x[ABSOLUTE_POS])

On the CPU runtime every active unit prints one line, prefixed with its coordinates:
`[cube (0, 0, 0) unit (2, 0, 0) | pos 2] x[2] = 7.5`. The lines are written to the calling
process's stdout when the launch has run (and published as a `DebugPrinted` event); in a notebook
they land in the cell's output (call `client.sync()` before the cell ends to be sure).

On wgpu the call is left out and the kernel runs without it, as with CubeCL's WGSL backend: WGSL
has no printf, and a print buffer would change the kernel being debugged (its bindings, its
writes, its timing). Unlike CubeCL, the student is told — once, when the kernel is compiled: a
`CompileNotice` event and a `CompileNoticeWarning` that says to launch it on `Device.cpu()`. MSL
shows the call as a comment.

The format string is Python's `str.format` with positional `{}` fields; it and every Python
argument are fixed at expansion (they go into the IR's attributes, so they are part of what the
KernelId compiles), runtime values are read per unit.
"""

from __future__ import annotations

from typing import Any

from cubelab.frontend.operands import describe, error, read
from cubelab.frontend.values import RV
from cubelab.ir.scope import Scope


class DebugPrint:
    """The `debug_print` function kernels call (`frontend/calls.py:call` dispatches here)."""

    __name__ = "debug_print"

    def __repr__(self) -> str:
        return "cubelab.debug_print"

    def __call__(self, fmt: str, *args: Any) -> None:
        # Outside a kernel it is simply print with the same formatting.
        print(fmt.format(*args))

    def _expand_call(self, s: Scope, *args: Any) -> None:
        if not args or not isinstance(args[0], str):
            raise error(s, "debug_print needs a format string as its first argument",
                            'write debug_print("x = {}", x)')
        fmt = args[0]
        template: list[Any] = []
        operands = []
        for a in args[1:]:
            a = read(s, a)
            if isinstance(a, RV):
                template.append(None)
                operands.append(a.v)
            elif isinstance(a, (bool, int, float, str)):
                template.append(a)
            else:
                raise error(s, f"debug_print cannot print {describe(a)}",
                                "print numbers, bools and kernel values (index buffers first)")
        try:
            fmt.format(*["?"] * len(template))
        except (IndexError, KeyError, ValueError) as exc:
            raise error(s, f"debug_print format {fmt!r} does not fit its {len(template)} "
                            f"argument(s): {exc}", "use one positional `{}` per argument") \
                from None
        s.register("debug.print", operands, None, format=fmt, args=tuple(template))


debug_print = DebugPrint()
