"""Steps of the `debug.*` dialect: `debug.print`, one line per active unit, prefixed with the
unit's coordinates, at most `PRINT_LIMIT` lines per launch (the rest are counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cubelab.ir.core import Op
from cubelab.runtime.cpu.lanes import PRINT_LIMIT, Ctx
from cubelab.runtime.cpu.steps.registry import Step, builder
from cubelab.runtime.cpu.trace import value_at

if TYPE_CHECKING:
    from cubelab.runtime.cpu.plan import Plan


@builder("debug.print")
def _b_print(plan: Plan, op: Op, depth: int) -> Step:
    fmt = str(op.attrs["format"])
    template = tuple(op.attrs.get("args", ()))
    ids = [o.id for o in op.operands]

    def step(ctx: Ctx, mask: Any) -> None:
        launch = ctx.launch
        lanes = np.arange(ctx.n) if mask is None else np.nonzero(mask)[0]
        launch.prints_total += len(lanes)
        room = PRINT_LIMIT - len(launch.prints)
        if room <= 0:
            return
        vals = [ctx.env[i] for i in ids]
        for li in lanes[:room]:
            li = int(li)
            it = iter(vals)
            args = [value_at(next(it), li) if t is None else t for t in template]
            args = [_fmt(x) for x in args]
            cube, unit = ctx.coords(li)
            try:
                text = fmt.format(*args)
            except (IndexError, KeyError, ValueError) as exc:
                text = f"{fmt!r} (format error: {exc})"
            launch.prints.append(f"[cube {cube} unit {unit} | pos {ctx.abs_lane(li)}] {text}")

    return step


class _Shown(float):
    """A float32 printed with the shortest digits that round-trip *as f32* (0.1, not
    0.10000000149011612)."""

    def __repr__(self) -> str:
        return str(np.float32(self))

    __str__ = __repr__


def _fmt(x: Any) -> Any:
    if isinstance(x, float):
        return _Shown(x)
    if isinstance(x, list):
        return "[" + ", ".join(str(_fmt(v)) for v in x) + "]"
    return x
