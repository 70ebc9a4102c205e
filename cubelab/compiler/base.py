"""What every target generator produces, and the protocol it implements.

A target (`wgsl.py`, the C-family dialects of `cpp/`, ...) turns a `KernelDefinition` that has been through the passes
into source text. Besides the text it returns a line map — generated line → the Python source
location of the op that produced it — which error messages and the inspector's line
correspondence both read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from cubelab.compiler.info import InfoLayout, static_meta_index_of_rank
from cubelab.ir.core import OPS, KernelDefinition, Loc, Op, Value
from cubelab.ir.plugins import plugin_op


@dataclass
class CompiledSource:
    target: str
    entry: str
    source: str
    info: InfoLayout
    # 1-based generated line -> kernel source location (only lines that came from an op)
    line_map: dict[int, Loc] = field(default_factory=dict)
    # What this target left out of the kernel, one sentence each for the student (WGSL drops
    # `debug_print`); the server that runs the source says each once, when it compiles it.
    notices: tuple[str, ...] = ()

    def loc_of_line(self, line: int) -> Loc | None:
        """The nearest mapped location at or above `line`."""
        for ln in range(line, 0, -1):
            if ln in self.line_map:
                return self.line_map[ln]
        return None


class Target(Protocol):
    """A code generator. `shown_only`: its source is rendered beside every compile for reading
    (MSL) but never run here; a target that fails to render is then a comment, not an error.
    `lexer`: the pygments lexer name its source is highlighted with. A target that can spell a
    plug-in op (`ir/plugins.py`) also has `lower(op, spelling)` (`LowersPluginOps`)."""

    name: str
    shown_only: bool
    lexer: str

    def compile(self, kernel: KernelDefinition) -> CompiledSource: ...


class LowersPluginOps:
    """What a target does with a plug-in op (`ir/plugins.py`): `lower(op, spelling)` stores the
    target's spelling of it — a format string of the operands, `{0}`, `{1}`, ... — on the op's
    record, and its emitter writes `spelling.format(*operands)` where the op's result is
    defined (`plugin_spelling`). Checked here, on the calling thread: the op must be declared,
    the fields must be its operands."""

    name: str

    def lower(self, op: str, spelling: str) -> None:
        from cubelab.ir.plugins import set_lowering

        set_lowering(op, self.name, spelling)


def plugin_spelling(op: Op, target: str, label: str) -> str:
    """`target`'s spelling of plug-in op `op`, or the error that says how to give it one."""
    plugin = plugin_op(op.name)
    if plugin is None:
        raise CodegenError(f"the {label} target does not implement op {op.name!r}")
    spelling = plugin.lowerings.get(target)
    if spelling is None:
        example = "{0}" if plugin.arity == 1 else ", ".join(f"{{{i}}}" for i in range(plugin.arity))
        raise CodegenError(
            f"the {label} target has no spelling of plug-in op {op.name!r}: give it one with "
            f"TARGETS[{target!r}].lower({op.name!r}, \"...\") — an expression in {label} of "
            f"the operands {example}")
    return spelling


def failure_comment(target: str, entry: str, exc: BaseException) -> str:
    """What a shown-only target's text is when it cannot express a kernel: a comment saying
    why, so the launch of the target that runs goes on."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"// {target.upper()} code generation failed for `{entry}`: "
            f"{type(exc).__name__}: {first}\n")


class CodegenError(Exception):
    """The IR holds something this target cannot express."""


def lowerings(emitter: type) -> dict[str, Callable[[Any, Op], None]]:
    """IR op name -> the emitter's `op_<dialect>_<name>` method (`arith.add` -> `op_arith_add`),
    for every op of `OPS` it has one for. Each target dispatches through its table, and its
    "every IR op lowers" test compares the table with `OPS`."""
    table = {}
    for name in OPS:
        method = getattr(emitter, "op_" + name.replace(".", "_"), None)
        if method is not None:
            table[name] = method
    return table


class InfoSlots:
    """Where an argument's metadata sits in the info block's `static_meta` (the layout of
    `compiler/info.py`), for the emitters: a buffer's length, and a tensor's rank — its offset
    into `dynamic_meta` is the slot after it, its logical length the one after that."""

    def __init__(self, kernel: KernelDefinition, layout: InfoLayout) -> None:
        self._length = {b.value.id: i for i, b in enumerate(kernel.buffers)}
        self._rank = {b.value.id: static_meta_index_of_rank(layout, t)
                      for t, b in enumerate(kernel.tensors())}

    def length(self, op: Op) -> int:
        """The slot of the length of `op`'s operand 0, a buffer argument."""
        slot = self._length.get(op.operands[0].id)
        if slot is None:
            raise CodegenError(f"{op.name} on a value that is not a buffer argument")
        return slot

    def rank(self, op: Op) -> int:
        """The slot of the rank of `op`'s operand 0, a tensor argument."""
        slot = self._rank.get(op.operands[0].id)
        if slot is None:
            raise CodegenError(f"{op.name} on a value that is not a tensor argument")
        return slot


class InfoReads:
    """The ops that read the info block (`info.scalar`, `buffer.len`, `tensor.rank/len/shape/
    stride`), written once for the C-family targets: where each value sits is the layout's rule
    (`InfoSlots`, `compiler/info.py`), and a target only says how it spells the block
    (`info_prefix`), its dynamic metadata (`dynamic_meta_array`), a bool test (`nonzero`) and,
    if not by name, a value operand (`operand`)."""

    slots: InfoSlots
    info_prefix: str  # "info." (WGSL) or "info_v41." (the C family's reference to the block)
    dynamic_meta_array: str  # "info.dynamic_meta" (WGSL) or the C family's pointer past it
    nonzero: str  # how a u32 info word becomes a bool: WGSL " != 0u", C " != 0"

    def operand(self, v: Value) -> str:
        return v.name

    def let(self, op: Op, expr: str) -> None:
        raise NotImplementedError

    def _static_meta(self, slot: int) -> str:
        return f"{self.info_prefix}static_meta[{slot}]"

    def dynamic_meta(self, index: str) -> str:
        return f"{self.dynamic_meta_array}[{index}]"

    def op_info_scalar(self, op: Op) -> None:
        elem, idx = op.attrs["elem"], op.attrs["index"]
        expr = f"{self.info_prefix}scalars_{elem}[{idx}]"
        self.let(op, f"{expr}{self.nonzero}" if elem == "bool" else expr)

    def op_buffer_len(self, op: Op) -> None:
        self.let(op, self._static_meta(self.slots.length(op)))

    def op_tensor_rank(self, op: Op) -> None:
        self.let(op, self._static_meta(self.slots.rank(op)))

    def op_tensor_len(self, op: Op) -> None:
        self.let(op, self._static_meta(self.slots.rank(op) + 2))  # rank, offset, len

    def op_tensor_shape(self, op: Op) -> None:
        at = self.slots.rank(op)  # shape(d) = dynamic_meta[offset + d]
        self.let(op, self.dynamic_meta(
            f"{self._static_meta(at + 1)} + {self.operand(op.operands[1])}"))

    def op_tensor_stride(self, op: Op) -> None:
        at = self.slots.rank(op)  # stride(d) = dynamic_meta[offset + rank + d]
        self.let(op, self.dynamic_meta(f"{self._static_meta(at + 1)} + {self._static_meta(at)} + "
                                       f"{self.operand(op.operands[1])}"))
