"""An MLIR-like textual form of the IR: the "expanded IR" view.

    %v12 = arith.add %v10, %v11 : vec4<f32>        // saxpy.py:7:8
    scf.if %v5 {
      ...
    }
"""

from __future__ import annotations

from cubelab.ir.core import Block, KernelDefinition, Loc, Op


def _attrs(op: Op) -> str:
    if not op.attrs:
        return ""
    parts = ", ".join([f"{k} = {v!r}" for k, v in op.attrs.items()])
    return f" {{{parts}}}"


_TYPE_TEXT: dict[object, str] = {}  # a type's text, made once (types are frozen and few)


def _type_text(t: object) -> str:
    text = _TYPE_TEXT.get(t)
    if text is None:
        text = _TYPE_TEXT[t] = str(t)
    return text


def format_op_line(op: Op) -> str:
    """The op on one line, without its regions (used by traces and line maps)."""
    operands = op.operands
    head = op.name + " " + ", ".join(["%" + v.name for v in operands]) if operands else op.name
    if op.attrs:
        head += _attrs(op)
    results = op.results
    if not results:
        return head
    res = "%" + results[0].name if len(results) == 1 else \
        ", ".join(["%" + v.name for v in results])
    return f"{res} = {head} : {_type_text(results[0].type)}"


def _print_block(block: Block, indent: int, out: list[str], locs: bool,
                 locmap: dict[int, Loc] | None = None) -> None:
    """Append the block's lines to `out`; `locmap` (if given) gets out-line (1-based) -> the
    op's source location for each op's first line. (Called for every op of a kernel on every
    compile, several times: kept to plain loops and string concatenation.)"""
    pad = "  " * indent
    append = out.append
    for op in block.ops:
        line = pad + format_op_line(op)
        loc = op.loc
        if loc is not None and locmap is not None:
            locmap[len(out) + 1] = loc  # the line appended next
        regions = op.regions
        if not regions:
            append(f"{line:<60}  // line {loc.line}" if locs and loc is not None else line)
            continue
        for i, region in enumerate(regions):
            args = ""
            if region.args:
                args = "(" + ", ".join(f"%{a.name}: {a.type}" for a in region.args) + ") "
            if i == 0:
                # the brace before the location comment, or it would be commented out
                text = f"{line} {args}{{"
                append(f"{text:<60}  // line {loc.line}" if locs and loc is not None else text)
            else:
                # scf.while's second region is the body run while the first one's condition
                # holds; every other multi-region op (scf.if) has an else
                sep = "do" if op.name == "scf.while" else "else"
                if op.name == "scf.switch":  # one region per case, then the default
                    cases = op.attrs["cases"]
                    sep = ("case " + ", ".join(map(str, cases[i]))) if i < len(cases) \
                        else "default"
                append(f"{pad}}} {sep} {args}{{")
            _print_block(region, indent + 1, out, locs, locmap)
        append(pad + "}")


def print_block(block: Block, indent: int = 0, locs: bool = True) -> str:
    out: list[str] = []
    _print_block(block, indent, out, locs)
    return "\n".join(out)


def print_kernel(kernel: KernelDefinition, locs: bool = True) -> str:
    return print_kernel_mapped(kernel, locs)[0]


def print_kernel_mapped(kernel: KernelDefinition,
                        locs: bool = True) -> tuple[str, dict[int, Loc]]:
    """The kernel's text and its line map (printed line, 1-based -> the op's source location),
    for the CPU runtime, whose "generated source" is this text."""
    params = []
    for b in kernel.buffers:
        params.append(f"%{b.value.name}: {b.value.type} /* {b.name} */")
    for s in kernel.scalars:
        params.append(f"{s.name}: {s.elem} /* info.scalars_{s.elem}[{s.index}] */")
    x, y, z = kernel.cube_dim
    head = f"kernel @{kernel.entry}({', '.join(params)}) cube_dim({x}, {y}, {z}) {{"
    body: list[str] = []
    locmap: dict[int, Loc] = {}
    _print_block(kernel.body, 1, body, locs, locmap)
    text = "\n".join([head, "\n".join(body), "}"])
    return text, {line + 1: loc for line, loc in locmap.items()}  # + the header line
