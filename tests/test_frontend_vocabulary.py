"""The frontend's expansion vocabulary is a package that imports downward only: no two of its
modules import each other (directly or round a circle), and none reaches into another's private
names — a helper another module needs is public where it lives (`operands.py` holds the shared
ones). Imports are read with `ast`, so one inside a function counts like one at the top; only
`if TYPE_CHECKING:` imports (annotations, never executed) are left out."""

from __future__ import annotations

import ast
from pathlib import Path

import cubelab.frontend

FRONTEND = Path(cubelab.frontend.__file__).parent
PREFIX = "cubelab.frontend."


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(FRONTEND.glob("*.py"))
            if p.stem != "__init__"}


def _type_checking_only(tree: ast.Module) -> set[int]:
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", None) == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}


def _frontend_imports(tree: ast.Module) -> dict[str, set[str]]:
    """Frontend modules this one imports -> the names it takes from each ("*" for the module)."""
    out: dict[str, set[str]] = {}
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "cubelab.frontend":
            for a in node.names:
                out.setdefault(a.name, set()).add("*")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            mod = node.module[len(PREFIX):]  # type: ignore[index]
            out.setdefault(mod, set()).update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PREFIX):
                    out.setdefault(a.name[len(PREFIX):], set()).add("*")
    return out


def test_the_frontend_modules_import_each_other_without_a_circle():
    graph = {m: set(_frontend_imports(t)) for m, t in _modules().items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[str] = []

    def visit(m: str, path: list[str]) -> None:
        if state.get(m) == 2:
            return
        if state.get(m) == 1:
            circles.append(" -> ".join(path[path.index(m):] + [m]))
            return
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        visit(m, [])
    assert not circles, "frontend modules importing round a circle:\n" + "\n".join(circles)


def test_no_frontend_module_uses_another_ones_private_names():
    wrong = []
    for mod, tree in _modules().items():
        imports = _frontend_imports(tree)
        for other, names in imports.items():
            wrong += [f"{mod} imports {other}.{n}" for n in names if n.startswith("_")]
        as_module = {o for o, names in imports.items() if "*" in names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in as_module and node.attr.startswith("_"):
                wrong.append(f"{mod}:{node.lineno} uses {node.value.id}.{node.attr}")
            # the Scope's own bookkeeping (`s._prologue_end`): the frontend uses its methods
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "s" and node.attr.startswith("_") and \
                    not node.attr.startswith("__"):
                wrong.append(f"{mod}:{node.lineno} uses the Scope's s.{node.attr}")
    assert not wrong, "private names used across frontend modules:\n" + "\n".join(wrong)


def test_ops_is_the_face_of_every_function_the_expanded_code_calls():
    """`__cl.<name>` in the generated source must resolve: every name the rewrite emits is in
    `ops` (the vocabulary behind it may move between modules, the face does not)."""
    from cubelab.frontend import ops

    rewrite = ast.parse((FRONTEND / "rewrite.py").read_text(encoding="utf-8"))
    called = {n.args[0].value for n in ast.walk(rewrite) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute) and n.func.attr in ("call", "cl")
              and n.args and isinstance(n.args[0], ast.Constant)}
    called |= {n.args[1].value for n in ast.walk(rewrite) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr == "Attribute"
               and len(n.args) > 1 and isinstance(n.args[1], ast.Constant)
               and isinstance(n.args[0], ast.Call)
               and getattr(n.args[0].args[0], "value", None) == "__cl"}
    called |= {"for_range", "for_unroll"}  # chosen through a variable (`fn_name`)
    assert called >= {"binop", "if_", "fn_enter", "UNBOUND"}, sorted(called)
    missing = sorted(n for n in called if not hasattr(ops, n))
    assert not missing, f"the rewrite calls __cl.{missing}, which ops does not provide"
    assert set(ops.__all__) >= called
