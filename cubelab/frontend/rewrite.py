"""The AST rewrite: a kernel's body becomes an `expand(__s, ...)` function that builds IR.

This is cubelab's `#[cube]` macro. Statements keep their shape; every operator becomes a call
into `cubelab.frontend.ops` (`__cl`) with the scope first and the source position last:

    y[ABSOLUTE_POS] = Vector.new(F.cast_from(a)) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS]
  becomes
    __cl.setitem(__s, y, ABSOLUTE_POS, __cl.binop(__s, 'add', __cl.binop(__s, 'mul',
        __cl.method(__s, Vector, 'new', [...], at=(7, 26)), ...), at=(7, 4))

A runtime `if` becomes two local functions handed to `__cl.if_` (CubeCL's `if_expand` and its
closures). An `if` whose condition is known at expansion — built only from `Comptime[...]`
parameters, `comptime(...)` locals, `comptime(...)` calls and literals — stays a plain Python
`if` in `expand`, as CubeCL's macro leaves `if relu { .. }` a Rust `if`: seed 000's contrast,
visible in `inspect.expanded`. (One trap: such an `if` whose branches `return`/`break` still goes
through `__cl.if_`, which knows how to end the rest of the block; `__cl.if_` also decides a
comptime condition in Python, so only the spelling differs, never the IR.) A `for` body
becomes a function of the loop index handed to `__cl.for_range`. Names assigned inside those
bodies are `nonlocal`, pre-bound to `UNBOUND` at the top of `expand`.

Everything outside the kernel language is refused here, at decoration time, with the line and a
caret. New constructs slot in as one `visit_*` method and one `ops` function each.

A call's keyword arguments are passed along as `kw={...}` for `@cube_type` structs
(`P(x=a, y=b)`, checked at expansion, where the callee is known; a builtin's are refused here),
and `p.x = v` / `p.x += v` become `__cl.setfield` / `__cl.augsetfield` (aggregates.py).

A `match` hands each arm's body (a closure), its patterns as comptime values and its guard to
`__cl.match_` (`matching.py` folds it or emits a switch); only the pattern shapes WGSL can
express pass here (values, `a | b`, `_`), every other one is refused with its caret.

Size: ~830 lines, over the project's ~700, on purpose: the file is one AST pass (`_Analysis`
feeding `_Rewriter`, one `visit_*` per Python construct, sharing the nonlocal/comptime
bookkeeping), and a construct's refusal, analysis and rewrite are read together.
"""

from __future__ import annotations

import ast
import builtins
import itertools
from dataclasses import dataclass, field

from cubelab.errors import KernelSourceError

# Python's builtins: a keyword argument to one of them is refused at decoration
_BUILTIN_NAMES = frozenset(n for n in dir(builtins) if not n.startswith("_"))

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift",
           ast.RShift: "rshift", ast.BitAnd: "bitand", ast.BitOr: "bitor",
           ast.BitXor: "bitxor"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}

# Constructs the kernel language refuses, with what to write instead.
_REFUSED: dict[type, tuple[str, str]] = {
    ast.Try: ("`try` is not allowed in a kernel", "kernels cannot catch; guard with `if` instead"),
    ast.With: ("`with` is not allowed in a kernel", "write the body without the context manager"),
    ast.Lambda: ("`lambda` is not allowed in a kernel",
                 "write a @cube helper function and call it"),
    ast.ListComp: ("list comprehensions are not allowed in a kernel",
                   "use a for loop (unroll(range(...)) for comptime lengths)"),
    ast.SetComp: ("set comprehensions are not allowed in a kernel", "use a for loop"),
    ast.DictComp: ("dict comprehensions are not allowed in a kernel", "use a for loop"),
    ast.GeneratorExp: ("generator expressions are not allowed in a kernel", "use a for loop"),
    ast.ClassDef: ("classes cannot be defined in a kernel", "define them outside the kernel"),
    ast.FunctionDef: ("functions cannot be defined inside a kernel",
                      "define a @cube helper at module level and call it"),
    ast.AsyncFunctionDef: ("async functions are not allowed in a kernel", ""),
    ast.Global: ("`global` is not allowed in a kernel",
                 "pass the value as an argument (Comptime[...] if it is fixed per compile)"),
    ast.Nonlocal: ("`nonlocal` is not allowed in a kernel", "pass the value as an argument"),
    ast.Yield: ("`yield` is not allowed in a kernel", "write the outputs into a SliceMut"),
    ast.YieldFrom: ("`yield from` is not allowed in a kernel", ""),
    ast.Await: ("`await` is not allowed in a kernel", ""),
    ast.Raise: ("`raise` is not allowed in a kernel", "a GPU lane cannot raise; guard with `if`"),
    ast.Assert: ("`assert` is not allowed in a kernel", "guard with `if`"),
    ast.Delete: ("`del` is not allowed in a kernel", ""),
    ast.Import: ("imports are not allowed in a kernel", "import at module level"),
    ast.ImportFrom: ("imports are not allowed in a kernel", "import at module level"),
    ast.NamedExpr: ("`:=` is not allowed in a kernel", "assign on its own line"),
    ast.JoinedStr: ("f-strings are not allowed in a kernel",
                    "to show values, use `debug_print(\"x = {}\", x)` (from the prelude)"),
    ast.Starred: ("`*args` unpacking is not allowed in a kernel", "pass arguments one by one"),
    ast.Set: ("set literals are not allowed in a kernel", ""),
    ast.Dict: ("dict literals are not allowed in a kernel", ""),
}


@dataclass
class ParamInfo:
    name: str
    annotation: ast.expr | None
    lineno: int
    col: int


@dataclass
class Rewritten:
    source: str  # the `def expand(...)` text, as shown to users
    params: list[ParamInfo]
    free_names: dict[str, tuple[int, int]]  # name -> first (line, col) it is read
    locals: list[str]
    readonly_params: set[str] = field(default_factory=set)


class _Analysis(ast.NodeVisitor):
    """Which names are assigned where (to decide SSA binding vs mutable local)."""

    def __init__(self) -> None:
        self.sites: dict[str, int] = {}
        self.nested: set[str] = set()
        self.aug: set[str] = set()
        self.loop_targets: set[str] = set()
        self.subscripted: set[str] = set()  # names assigned through an index: `v[0] = x`
        # names assigned something other than `comptime(...)` somewhere
        self.runtime_assigned: set[str] = set()
        self.depth = 0
        self.loads: dict[str, tuple[int, int]] = {}

    def _target(self, t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            self.sites[t.id] = self.sites.get(t.id, 0) + 1
            if self.depth:
                self.nested.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):  # `a, (b, c) = t`: each name is assigned
            for e in t.elts:
                self._target(e)
                self._subscripted(e)
                for n in _target_names(e):
                    self.runtime_assigned.add(n)

    def _subscripted(self, t: ast.expr) -> None:
        # `v[0] = x` on a local vector stores the new vector back into `v`: a mutable local
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            self.subscripted.add(t.value.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t)
            self._subscripted(t)
            if isinstance(t, ast.Name) and not _is_comptime_call(node.value):
                self.runtime_assigned.add(t.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        if isinstance(node.target, ast.Name):
            self.runtime_assigned.add(node.target.id)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self._subscripted(node.target)
        if isinstance(node.target, ast.Name):
            self.aug.add(node.target.id)
            self.runtime_assigned.add(node.target.id)
        self.generic_visit(node)

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_If(self, node: ast.If) -> None:
        self._nested(node)

    def visit_For(self, node: ast.For) -> None:
        if isinstance(node.target, ast.Name):
            self.loop_targets.add(node.target.id)
        self._nested(node)

    def visit_While(self, node: ast.While) -> None:
        self._nested(node)

    def visit_Match(self, node: ast.Match) -> None:
        for case in node.cases:  # bound names are parameters of the arm's closure
            self.loop_targets |= _captures(case.pattern)
        self._nested(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id not in self.loads:
            self.loads[node.id] = (node.lineno, node.col_offset)


_STRUCTURAL = {ast.MatchAs: "a capture pattern", ast.MatchStar: "a capture pattern",
               ast.MatchClass: "a class pattern", ast.MatchSequence: "a sequence pattern",
               ast.MatchMapping: "a mapping pattern"}


def _structural(p: ast.pattern) -> str | None:
    """What makes a pattern more than comptime values, `|` and `_` (None if nothing does)."""
    for sub in ast.walk(p):
        if isinstance(sub, ast.MatchAs) and sub.pattern is None and sub.name is None:
            continue  # `_`
        kind = _STRUCTURAL.get(type(sub))
        if kind is not None:
            return kind
    return None


def _captures(p: ast.pattern) -> set[str]:
    """The names a pattern binds (`case Op(index, value):` binds index and value)."""
    names: set[str] = set()
    for sub in ast.walk(p):
        if isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name is not None:
            names.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest is not None:
            names.add(sub.rest)
    return names


def _target_names(t: ast.expr) -> list[str]:
    """The names an assignment target binds (`a, (b, c)` binds a, b and c)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    return []


def _is_comptime_call(v: ast.expr) -> bool:
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "comptime"


def _is_comptime_annotation(a: ast.expr | None) -> bool:
    """`Comptime[...]` (or `cl.Comptime[...]`) in a parameter's annotation."""
    if isinstance(a, ast.Subscript):
        a = a.value
    return (isinstance(a, ast.Name) and a.id == "Comptime") or \
        (isinstance(a, ast.Attribute) and a.attr == "Comptime")


def _may_exit(node: ast.AST, in_loop: bool = False) -> bool:
    """Whether a statement may leave the rest of its block: it holds a `return`, or a
    `break`/`continue` that belongs to an enclosing loop (not to a loop inside it)."""
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, (ast.Break, ast.Continue)):
        return not in_loop
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return False
    inner = in_loop or isinstance(node, (ast.For, ast.While))
    return any(_may_exit(c, inner) for c in ast.iter_child_nodes(node))


def _may_leave_loop(node: ast.AST, in_loop: bool = False) -> bool:
    """Whether a loop-body statement may end the loop: a `return`, or a `break` of this loop."""
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, ast.Break):
        return not in_loop
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return False
    inner = in_loop or isinstance(node, (ast.For, ast.While))
    return any(_may_leave_loop(c, inner) for c in ast.iter_child_nodes(node))


class _Rewriter(ast.NodeTransformer):
    def __init__(self, kernel: str, file: str, lines: list[str], mutable: set[str],
                 readonly: set[str], is_helper: bool) -> None:
        self.kernel, self.file, self.lines = kernel, file, lines
        self.mutable = mutable
        self.readonly = readonly
        self.is_helper = is_helper
        self.counter = itertools.count(1)
        # names assigned in each nested body, for `nonlocal` declarations
        self.body_stack: list[set[str]] = []
        self.loop_depth = 0
        self.runtime_assigned: set[str] = set()
        # names whose value is a Python value during expansion (Comptime parameters never
        # re-assigned, locals only ever assigned `comptime(...)` at the top level)
        self.comptime_names: set[str] = set()

    # -- helpers ------------------------------------------------------------------------------
    def refuse(self, node: ast.AST, message: str, hint: str = "") -> KernelSourceError:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", 0)
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return KernelSourceError(self.kernel, self.file, line, col, message, hint, src)

    @staticmethod
    def at(node: ast.AST) -> ast.keyword:
        return ast.keyword(
            arg="at",
            value=ast.Tuple([ast.Constant(node.lineno), ast.Constant(node.col_offset)],  # type: ignore[attr-defined]
                            ast.Load()),
        )

    @staticmethod
    def cl(fn: str) -> ast.Attribute:
        return ast.Attribute(ast.Name("__cl", ast.Load()), fn, ast.Load())

    def call(self, fn: str, args: list[ast.expr], node: ast.AST) -> ast.Call:
        return ast.Call(self.cl(fn), [ast.Name("__s", ast.Load()), *args], [self.at(node)])

    def note_assigned(self, name: str) -> None:
        for names in self.body_stack:
            names.add(name)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        refused = _REFUSED.get(type(node))
        if refused is not None:
            raise self.refuse(node, *refused)
        return super().generic_visit(node)

    def visit_body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """A block's statements. After a statement that may exit (break/continue/return inside
        it), the rest of the block becomes a closure handed to `__cl.guard` (flow.py decides at
        expansion whether to drop it, guard it with the flags, or expand it plainly); after a
        bare exit the rest is dead code and is dropped, as Python would never run it."""
        out: list[ast.stmt] = []
        for k, st in enumerate(stmts):
            r = self.visit(st)
            if r is not None:
                out.extend(r if isinstance(r, list) else [r])
            if isinstance(st, (ast.Break, ast.Continue, ast.Return)):
                break
            rest = stmts[k + 1:]
            if rest and _may_exit(st):
                n = next(self.counter)
                fn, _ = self.closure(f"__rest_{n}", [], rest)
                out.append(fn)
                out.append(ast.Expr(self.call("guard", [ast.Name(fn.name, ast.Load())],
                                              rest[0])))
                break
        return out or [ast.Pass()]

    def closure(self, name: str, args: list[str], body: list[ast.stmt]) -> tuple[ast.FunctionDef, set[str]]:
        assigned: set[str] = set()
        self.body_stack.append(assigned)
        try:
            new_body = self.visit_body(body)
        finally:
            self.body_stack.pop()
        nonlocal_names = sorted(assigned - set(args))
        if nonlocal_names:
            new_body.insert(0, ast.Nonlocal(nonlocal_names))
        fn = ast.FunctionDef(
            name=name,
            args=ast.arguments([], [ast.arg(a) for a in args], None, [], [], None, []),
            body=new_body, decorator_list=[], returns=None, type_params=[],
        )
        return fn, assigned

    # -- statements ---------------------------------------------------------------------------
    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstrings and bare strings
        return ast.Expr(self.visit(node.value))

    def visit_Pass(self, node: ast.Pass) -> ast.AST:
        return node

    def _check_writable(self, target: ast.expr) -> None:
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and target.value.id in self.readonly:
            n = target.value.id
            raise self.refuse(target, f"`{n}` is a Slice (read-only); it cannot be assigned",
                              f"declare it `{n}: SliceMut[...]` to write to it")

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) != 1:
            raise self.refuse(node, "chained assignment `a = b = ...` is not allowed in a kernel",
                              "assign each name on its own line")
        (target,) = node.targets
        self._check_writable(target)
        value = self.visit(node.value)
        # `name = comptime(expr)` stays a Python value even in a loop or branch: the student
        # said it is known at expansion (an unrolled loop's `stride = comptime(32 >> k)`). Only
        # when *every* assignment of the name is comptime: one that mixes in runtime values is
        # an ordinary local (a loop body is expanded once and would read a stale Python value).
        is_comptime = (_is_comptime_call(node.value) and isinstance(target, ast.Name)
                       and target.id not in self.runtime_assigned)
        return self._assign(target, value, node, force_immutable=is_comptime)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            raise self.refuse(node, "a declaration without a value", "write `x: f32 = f32(0.0)`")
        value = self.call("typed", [self.visit(node.annotation), self.visit(node.value)], node)
        return self._assign(node.target, value, node)

    def _assign(self, target: ast.expr, value: ast.expr, node: ast.AST,
                force_immutable: bool = False) -> ast.AST:
        if isinstance(target, ast.Name):
            self.note_assigned(target.id)
            mutable = target.id in self.mutable and not force_immutable
            call = self.call(
                "assign",
                [ast.Name(target.id, ast.Load()), value, ast.Constant(target.id),
                 ast.Constant(mutable)],
                node,
            )
            return ast.Assign([ast.Name(target.id, ast.Store())], call)
        if isinstance(target, ast.Subscript):
            if isinstance(target.slice, ast.Slice):
                raise self.refuse(target, "slice assignment is not part of the kernel language",
                                  "assign element by element")
            return ast.Expr(self.call(
                "setitem", [self.visit(target.value), self.visit(target.slice), value], node))
        if isinstance(target, ast.Attribute):  # `p.x = v` on a @cube_type struct
            return ast.Expr(self.call(
                "setfield", [self.visit(target.value), ast.Constant(target.attr), value], node))
        if isinstance(target, (ast.Tuple, ast.List)):
            # `a, (b, c) = t`: the value is read whole first (so `a, b = b, a` swaps), then
            # each target is assigned its item like a plain assignment (ops.unpack)
            if any(isinstance(e, ast.Starred) for e in target.elts):
                raise self.refuse(target, "starred unpacking `a, *rest = t` is not allowed in "
                                  "a kernel", "unpack every item by name: `a, b, c = t`")
            tmp = f"__unpack_{next(self.counter)}"
            out: list[ast.stmt] = [ast.Assign(
                [ast.Name(tmp, ast.Store())],
                self.call("unpack", [value, ast.Constant(len(target.elts))], node))]
            for i, e in enumerate(target.elts):
                self._check_writable(e)
                item = ast.Subscript(ast.Name(tmp, ast.Load()), ast.Constant(i), ast.Load())
                r = self._assign(e, item, node)
                out.extend(r if isinstance(r, list) else [r])
            return out  # type: ignore[return-value]
        raise self.refuse(target, "this assignment target is not allowed in a kernel",
                          "assign to a local name or to buffer[index]")

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.refuse(node, f"the operator `{type(node.op).__name__}=` is not part of the "
                              "kernel language yet", "write the assignment out: `x = x op y` "
                              "with an operator of docs/language.md")
        self._check_writable(node.target)
        value = self.visit(node.value)
        t = node.target
        if isinstance(t, ast.Name):
            self.note_assigned(t.id)
            call = self.call("augassign", [ast.Name(t.id, ast.Load()), ast.Constant(op), value,
                                           ast.Constant(t.id)], node)
            return ast.Assign([ast.Name(t.id, ast.Store())], call)
        if isinstance(t, ast.Subscript):
            return ast.Expr(self.call("augsetitem", [self.visit(t.value), self.visit(t.slice),
                                                     ast.Constant(op), value], node))
        if isinstance(t, ast.Attribute):
            return ast.Expr(self.call("augsetfield", [self.visit(t.value), ast.Constant(t.attr),
                                                      ast.Constant(op), value], node))
        raise self.refuse(t, "this assignment target is not allowed in a kernel",
                          "assign to a local name, to buffer[index] or to a struct field")

    def _known_at_expansion(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            return e.id in self.comptime_names
        if _is_comptime_call(e):
            return True
        if isinstance(e, ast.BoolOp):
            return all(self._known_at_expansion(v) for v in e.values)
        if isinstance(e, ast.UnaryOp):
            return self._known_at_expansion(e.operand)
        if isinstance(e, ast.Compare):
            return all(self._known_at_expansion(v) for v in (e.left, *e.comparators))
        if isinstance(e, ast.BinOp):
            return self._known_at_expansion(e.left) and self._known_at_expansion(e.right)
        return False

    @staticmethod
    def _plain(e: ast.expr) -> bool:
        """Whether a comptime condition reads the same as plain Python (no operator whose kernel
        meaning differs from Python's, such as `/` on integers)."""
        return all(isinstance(n, (ast.Name, ast.Constant, ast.BoolOp, ast.And, ast.Or, ast.Not,
                                  ast.UnaryOp, ast.Compare, ast.Load, ast.cmpop))
                   for n in ast.walk(e))

    def visit_If(self, node: ast.If) -> list[ast.stmt]:
        if self._known_at_expansion(node.test) and \
                not any(_may_exit(st) for st in [*node.body, *node.orelse]):
            # a comptime `if`: plain Python; only the branch taken is expanded into the IR
            test = node.test if self._plain(node.test) else self.visit(node.test)
            orelse = self.visit_body(node.orelse) if node.orelse else []
            return [ast.If(test, self.visit_body(node.body), orelse)]
        n = next(self.counter)
        then_fn, _ = self.closure(f"__then_{n}", [], node.body)
        out: list[ast.stmt] = [then_fn]
        else_ref: ast.expr = ast.Constant(None)
        if node.orelse:
            else_fn, _ = self.closure(f"__else_{n}", [], node.orelse)
            out.append(else_fn)
            else_ref = ast.Name(else_fn.name, ast.Load())
        cond = self.visit(node.test)
        out.append(ast.Expr(self.call("if_", [cond, ast.Name(then_fn.name, ast.Load()),
                                              else_ref], node)))
        return out

    @staticmethod
    def _is_range(it: ast.expr) -> bool:
        return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords)

    def visit_For(self, node: ast.For) -> list[ast.stmt]:
        if node.orelse:
            raise self.refuse(node, "`for ... else` is not allowed in a kernel",
                              "drop the else branch; set a flag before `break` instead")
        if not isinstance(node.target, ast.Name):
            raise self.refuse(node.target, "a loop variable must be a single name",
                              "write `for i in range(n):` and index inside the body")
        it = node.iter
        fn_name = "for_range"
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "unroll"
                and len(it.args) == 1 and not it.keywords and self._is_range(it.args[0])):
            fn_name = "for_unroll"
            it = it.args[0]
        if not self._is_range(it):
            fn_name = "for_each"  # a comptime tuple/list (unrolled) or a buffer/slice
        n = next(self.counter)
        self.loop_depth += 1
        try:
            body_fn, _ = self.closure(f"__body_{n}", [node.target.id], node.body)
        finally:
            self.loop_depth -= 1
        args: ast.expr
        if fn_name == "for_each":
            args = self.visit(it)
        else:
            assert isinstance(it, ast.Call)
            args = ast.List([self.visit(a) for a in it.args], ast.Load())
        call_args: list[ast.expr] = [args, ast.Name(body_fn.name, ast.Load())]
        if fn_name != "for_unroll" and any(_may_leave_loop(st) for st in node.body):
            call_args.append(ast.Constant(True))  # may break/return: a loop that can stop early
        return [body_fn, ast.Expr(self.call(fn_name, call_args, node))]

    def visit_While(self, node: ast.While) -> list[ast.stmt]:
        if node.orelse:
            raise self.refuse(node, "`while ... else` is not allowed in a kernel",
                              "drop the else branch; set a flag before `break` instead")
        n = next(self.counter)
        cond_fn = ast.FunctionDef(
            name=f"__cond_{n}", args=ast.arguments([], [], None, [], [], None, []),
            body=[ast.Return(self.visit(node.test))], decorator_list=[], returns=None,
            type_params=[])
        self.loop_depth += 1
        try:
            body_fn, _ = self.closure(f"__body_{n}", [], node.body)
        finally:
            self.loop_depth -= 1
        return [cond_fn, body_fn, ast.Expr(self.call(
            "while_", [ast.Name(cond_fn.name, ast.Load()), ast.Name(body_fn.name, ast.Load())],
            node))]

    def visit_Match(self, node: ast.Match) -> list[ast.stmt]:
        """`match`: each arm's body becomes a closure, and `__cl.match_` decides at expansion —
        a comptime subject expands only the arm taken; a runtime i32/u32 one becomes an
        `scf.switch` (or an if/elif chain when an arm has a guard). Value patterns (literals,
        `None`, `Act.RELU`), `a | b` of them and `_` are handed over as values; any other
        pattern (captures, class, sequence, mapping) becomes a matcher function holding Python's
        own `match` with that one pattern — it runs at expansion, on a comptime subject only,
        and hands its captures to the arm (CubeCL destructures `#[comptime]` enums so)."""
        n = next(self.counter)
        out: list[ast.stmt] = []
        arms: list[ast.expr] = []
        for k, case in enumerate(node.cases):
            where = ast.Tuple([ast.Constant(case.pattern.lineno),
                               ast.Constant(case.pattern.col_offset)], ast.Load())
            structural = _structural(case.pattern)
            captures = sorted(_captures(case.pattern))
            body_fn, _ = self.closure(f"__case_{n}_{k}", captures, case.body)
            out.append(body_fn)
            guard: ast.expr = ast.Constant(None) if case.guard is None else ast.Lambda(
                ast.arguments([], [ast.arg(c) for c in captures], None, [], [], None, []),
                self.visit(case.guard))
            if structural is None:
                alternatives = self._pattern(case.pattern)
                pats: ast.expr = ast.Constant(None) if alternatives is None else \
                    ast.List(alternatives, ast.Load())
                matcher: ast.expr = ast.Constant(None)
            else:
                pats = ast.Constant(None)
                m = self._matcher(f"__pattern_{n}_{k}", case.pattern, captures)
                out.append(m)
                matcher = ast.Tuple([ast.Name(m.name, ast.Load()), ast.Constant(structural)],
                                    ast.Load())
            arms.append(ast.Tuple([pats, guard, ast.Name(body_fn.name, ast.Load()), where,
                                   matcher], ast.Load()))
        out.append(ast.Expr(self.call("match_", [self.visit(node.subject),
                                                 ast.List(arms, ast.Load())], node)))
        return out

    @staticmethod
    def _matcher(name: str, pattern: ast.pattern, captures: list[str]) -> ast.FunctionDef:
        """`def name(subject): match subject: case <pattern>: return (captures...)`; None when
        the pattern does not match. Plain Python, run at expansion on a comptime subject."""
        found = ast.Return(ast.Tuple([ast.Name(c, ast.Load()) for c in captures], ast.Load()))
        match = ast.Match(ast.Name("__subject", ast.Load()),
                          [ast.match_case(pattern, None, [found])])
        return ast.FunctionDef(
            name=name, args=ast.arguments([], [ast.arg("__subject")], None, [], [], None, []),
            body=[match, ast.Return(ast.Constant(None))], decorator_list=[], returns=None,
            type_params=[])

    def _pattern(self, p: ast.pattern) -> list[ast.expr] | None:
        """A value pattern's alternatives as `(kind, value)` tuples (`==` for values, `is` for
        None/True/False, as Python compares them); None for the wildcard `_`."""
        if isinstance(p, ast.MatchValue):
            return [ast.Tuple([ast.Constant("=="), self.visit(p.value)], ast.Load())]
        if isinstance(p, ast.MatchSingleton):
            return [ast.Tuple([ast.Constant("is"), ast.Constant(p.value)], ast.Load())]
        if isinstance(p, ast.MatchOr):
            out: list[ast.expr] = []
            for alt in p.patterns:
                got = self._pattern(alt)
                assert got is not None  # Python refuses `_` inside `a | b` itself
                out += got
            return out
        return None  # `case _:`

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if not self.loop_depth:
            raise self.refuse(node, "`break` outside a loop",
                              "use `return` to leave the kernel, or an `if` around the rest")
        return ast.Expr(self.call("brk", [], node))

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        if not self.loop_depth:
            raise self.refuse(node, "`continue` outside a loop",
                              "use an `if` around the rest of the body")
        return ast.Expr(self.call("cont", [], node))

    def visit_Return(self, node: ast.Return) -> list[ast.stmt]:
        if node.value is not None and not self.is_helper:
            raise self.refuse(node, "a kernel returns nothing",
                              "write results into a SliceMut argument")
        value = self.visit(node.value) if node.value is not None else ast.Constant(None)
        out: list[ast.stmt] = [ast.Expr(self.call("ret", [value], node))]
        if self.body_stack:
            out.append(ast.Return(None))  # leave this closure; flow.py guards the rest
        else:
            out.append(ast.Return(self._fn_exit()))
        return out

    @staticmethod
    def _fn_exit() -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name("__cl", ast.Load()), "fn_exit", ast.Load()),
                        [ast.Name("__s", ast.Load())], [])

    # -- expressions --------------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.refuse(node, f"the operator `{type(node.op).__name__}` is not part of the "
                              "kernel language", "use + - * / // % ** << >> & | ^")
        return self.call("binop", [ast.Constant(op), self.visit(node.left),
                                   self.visit(node.right)], node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return self.call("not_", [operand], node)
        if isinstance(node.op, ast.USub):
            return self.call("unary", [ast.Constant("neg"), operand], node)
        if isinstance(node.op, ast.UAdd):
            return self.call("unary", [ast.Constant("pos"), operand], node)
        if isinstance(node.op, ast.Invert):
            return self.call("unary", [ast.Constant("invert"), operand], node)
        raise self.refuse(node, f"the operator `{type(node.op).__name__}` is not allowed",
                          "docs/language.md, Operators, lists the ones a kernel can use")

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        op = "and" if isinstance(node.op, ast.And) else "or"
        acc = self.visit(node.values[0])
        for v in node.values[1:]:
            thunk = ast.Lambda(ast.arguments([], [], None, [], [], None, []), self.visit(v))
            acc = self.call("boolop", [ast.Constant(op), acc, thunk], node)
        return acc

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        parts: list[ast.expr] = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            pred = _CMPOPS.get(type(op))
            if pred is None:
                raise self.refuse(node, f"`{type(op).__name__}` comparisons are not allowed in a "
                                  "kernel", "use < <= > >= == !=")
            parts.append(self.call("cmp", [ast.Constant(pred), self.visit(left),
                                           self.visit(right)], node))
            left = right
        acc = parts[0]
        for p in parts[1:]:
            thunk = ast.Lambda(ast.arguments([], [], None, [], [], None, []), p)
            acc = self.call("boolop", [ast.Constant("and"), acc, thunk], node)
        return acc

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        empty = ast.arguments([], [], None, [], [], None, [])
        return self.call("ifexp", [self.visit(node.test),
                                   ast.Lambda(empty, self.visit(node.body)),
                                   ast.Lambda(empty, self.visit(node.orelse))], node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        f = node.func
        if node.keywords and (any(k.arg is None for k in node.keywords) or (
                isinstance(f, ast.Name) and f.id in _BUILTIN_NAMES)):
            # field names are for @cube_type structs (`P(x=a, y=b)`); a call the rewriter can
            # see is no struct is refused now, any other at expansion when the callee is known
            raise self.refuse(node, "keyword arguments are not allowed in kernel calls",
                              "pass arguments by position")
        if isinstance(f, ast.Name) and f.id == "comptime":
            if len(node.args) != 1 or node.keywords:
                raise self.refuse(node, "comptime(...) takes one expression",
                                  "write comptime(expr) with one Python expression")
            for sub in ast.walk(node.args[0]):
                if type(sub) in (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.NamedExpr):
                    raise self.refuse(sub, *_REFUSED[type(sub)])
            # The expression stays plain Python, evaluated during expansion; the names it reads
            # are passed along so a runtime one can be named in the error.
            names = sorted({n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)})
            thunk = ast.Lambda(ast.arguments([], [], None, [], [], None, []), node.args[0])
            env = ast.Dict([ast.Constant(n) for n in names],
                           [ast.Name(n, ast.Load()) for n in names])
            return self.call("comptime", [thunk, env], node)
        args = [self.visit(a) for a in node.args]
        if isinstance(f, ast.Attribute):
            out = self.call("method", [self.visit(f.value), ast.Constant(f.attr),
                                       ast.List(args, ast.Load())], node)
        else:
            out = self.call("call", [self.visit(f), ast.List(args, ast.Load())], node)
        if node.keywords:
            out.keywords.append(ast.keyword("kw", ast.Dict(
                [ast.Constant(k.arg) for k in node.keywords],
                [self.visit(k.value) for k in node.keywords])))
        return out

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.slice, ast.Slice):
            sl = node.slice
            if sl.step is not None:
                raise self.refuse(sl.step, "a sub-slice with a step x[a:b:c] is not allowed",
                                  "write x[a:b] and step the index yourself")
            lower = self.visit(sl.lower) if sl.lower is not None else ast.Constant(None)
            upper = self.visit(sl.upper) if sl.upper is not None else ast.Constant(None)
            return self.call("subslice", [self.visit(node.value), lower, upper], node)
        return self.call("getitem", [self.visit(node.value), self.visit(node.slice)], node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return self.call("attr", [self.visit(node.value), ast.Constant(node.attr)], node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return node

    def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
        return ast.Tuple([self.visit(e) for e in node.elts], ast.Load())

    def visit_List(self, node: ast.List) -> ast.AST:
        return ast.List([self.visit(e) for e in node.elts], ast.Load())


def rewrite(fn_node: ast.FunctionDef, kernel: str, file: str, lines: list[str],
            readonly: set[str], is_helper: bool) -> Rewritten:
    """Rewrite a parsed kernel (line numbers already absolute) into `expand`'s source."""
    a = fn_node.args
    for bad, what in ((a.vararg, "*args"), (a.kwarg, "**kwargs")):
        if bad is not None:
            raise KernelSourceError(kernel, file, bad.lineno, bad.col_offset,
                                    f"{what} is not allowed in a kernel signature",
                                    "list every argument", lines[bad.lineno - 1])
    if a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
        node = (a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults)[0]
        raise KernelSourceError(kernel, file, node.lineno, node.col_offset,  # type: ignore[union-attr]
                                "keyword-only, positional-only and default arguments are not "
                                "allowed in a kernel signature",
                                "list plain arguments; use Comptime[...] for settings",
                                lines[node.lineno - 1])  # type: ignore[union-attr]
    params = [ParamInfo(p.arg, p.annotation, p.lineno, p.col_offset) for p in a.args]
    analysis = _Analysis()
    for st in fn_node.body:
        analysis.visit(st)
    param_names = {p.name for p in params}
    mutable = {n for n, c in analysis.sites.items() if c > 1} | analysis.aug | analysis.nested
    # a local assigned through an index (`v[0] = x` on a vector) must be storage; a buffer,
    # array or list under such a name is unaffected (`assign` passes those through)
    mutable |= analysis.subscripted & set(analysis.sites)
    # A loop target is its body closure's parameter, so it is never "mutable" by being a loop
    # target; a name that is both a loop target and assigned elsewhere (`for j in ...` then
    # later `j = u32(0)` and `j += 1`) must stay mutable there.
    rw = _Rewriter(kernel, file, lines, mutable, readonly, is_helper)
    rw.runtime_assigned = analysis.runtime_assigned
    rw.comptime_names = (
        {p.name for p in params if _is_comptime_annotation(p.annotation)} - set(analysis.sites)
    ) | {n for n in analysis.sites
         if n not in analysis.runtime_assigned and n not in analysis.nested
         and n not in analysis.loop_targets and n not in param_names}
    body = rw.visit_body(fn_node.body)
    local_names = sorted((set(analysis.sites) - param_names))
    prelude: list[ast.stmt] = [
        ast.Assign([ast.Name(n, ast.Store())], ast.Attribute(ast.Name("__cl", ast.Load()),
                                                              "UNBOUND", ast.Load()))
        for n in local_names
    ]
    # A parameter re-assigned in a loop or branch must live in a local from the start: a loop
    # body is expanded once, so reading the parameter's SSA value there would read the launch
    # value on every iteration (`while n > 1: n = n // 2` would never end).
    for p in params:
        if p.name in mutable:
            prelude.append(ast.Assign([ast.Name(p.name, ast.Store())], ast.Call(
                ast.Attribute(ast.Name("__cl", ast.Load()), "assign", ast.Load()),
                [ast.Name("__s", ast.Load()), ast.Attribute(ast.Name("__cl", ast.Load()),
                                                            "UNBOUND", ast.Load()),
                 ast.Name(p.name, ast.Load()), ast.Constant(p.name), ast.Constant(True)],
                [ast.keyword("at", ast.Tuple([ast.Constant(p.lineno), ast.Constant(p.col)],
                                             ast.Load()))])))
    enter = ast.Expr(ast.Call(
        ast.Attribute(ast.Name("__cl", ast.Load()), "fn_enter", ast.Load()),
        [ast.Name("__s", ast.Load()), ast.Constant(kernel), ast.Constant(is_helper),
         ast.Tuple([ast.Constant(fn_node.lineno), ast.Constant(fn_node.col_offset)], ast.Load())],
        # a helper's `-> f32` (or `-> F`) types its returned values, literals included
        [ast.keyword("returns", fn_node.returns)] if is_helper and fn_node.returns is not None
        and not (isinstance(fn_node.returns, ast.Constant) and fn_node.returns.value is None)
        else []))
    if not (body and isinstance(body[-1], ast.Return)):
        body.append(ast.Return(rw._fn_exit()))
    expand = ast.FunctionDef(
        name="expand",
        args=ast.arguments([], [ast.arg("__s")] + [ast.arg(p.name) for p in params], None, [], [],
                           None, []),
        body=prelude + [enter] + body, decorator_list=[], returns=None, type_params=[],
    )
    ast.fix_missing_locations(expand)
    source = ast.unparse(expand)
    known = param_names | set(analysis.sites) | analysis.loop_targets
    free = {n: pos for n, pos in analysis.loads.items() if n not in known}
    return Rewritten(source, params, free, local_names, readonly)
