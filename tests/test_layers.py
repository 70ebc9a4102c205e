"""DESIGN §1's dependency direction, checked on the source: no module imports a layer above it, and
nothing in the first four layers imports IPython, ipywidgets, rich or matplotlib. Imports are read with `ast`,
so an import inside a function (a "lazy" one) counts exactly like one at the top.

The order, bottom up: ir (with `errors`, which imports nothing) → compiler → runtime → frontend
(with `prelude`) → inspect (with `terminal`, which renders runtime events with rich) → widgets
(with `exercises`, which check through inspect and display as widgets) → magic and the command
line (with `course`). Imports within one layer are free.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cubelab

PACKAGE = Path(cubelab.__file__).parent

# top-level module or subpackage of cubelab -> its layer
RANK: dict[str, int] = {
    "errors": 0, "ir": 0,
    "compiler": 1,
    "runtime": 2,
    "frontend": 3, "prelude": 3,
    "inspect": 4, "terminal": 4,
    "widgets": 5, "exercises": 5,
    "magic": 6, "cli": 6, "cli_demo": 6, "cli_cost": 6, "__main__": 6, "course": 6,
    "lab": 6,
}
FRONTEND = RANK["frontend"]
UI = ("IPython", "ipywidgets", "rich", "matplotlib")
# `import cubelab` re-exports runtime and frontend names; its IPython extension hook imports
# `cubelab.magic` when Jupyter calls it, which is the one sanctioned upward import.
ROOT_RANK = FRONTEND
ROOT_ALLOWED = {"cubelab.magic"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(source: str, package: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in `source`, a module of
    `package` (relative imports are resolved against it)."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name == "cubelab":  # `from cubelab import inspect` imports a subpackage
                for a in node.names:
                    sub = PACKAGE / a.name
                    is_module = sub.is_dir() or sub.with_suffix(".py").exists()
                    out.append((f"cubelab.{a.name}" if is_module else "cubelab", node.lineno))
            else:
                out.append((name, node.lineno))
    return out


def _rank(module: str) -> int:
    if module == "cubelab":
        return ROOT_RANK
    top = module.split(".")[1]
    assert top in RANK, f"`cubelab.{top}` has no layer: add it to RANK in tests/test_layers.py"
    return RANK[top]


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_of_the_package_has_a_layer():
    for path in _files():
        mod = _module_name(path)
        if mod != "cubelab":
            _rank(mod)


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for path in _files():
        mod = _module_name(path)
        mine = _rank(mod)
        for name, line in _imports(path):
            if not (name == "cubelab" or name.startswith("cubelab.")):
                continue
            if mod == "cubelab" and name in ROOT_ALLOWED:
                continue
            if _rank(name) > mine:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {mod} (layer {mine}) "
                             f"imports {name} (layer {_rank(name)})")
    assert not wrong, "imports against DESIGN §1's direction:\n" + "\n".join(wrong)


def test_nothing_below_inspect_imports_jupyter_or_rich():
    wrong = []
    for path in _files():
        mod = _module_name(path)
        if (ROOT_RANK if mod == "cubelab" else _rank(mod)) > FRONTEND:
            continue
        for name, line in _imports(path):
            if name.split(".")[0] in UI:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {mod} imports {name}")
    assert not wrong, "the core must import without Jupyter or rich:\n" + "\n".join(wrong)


def test_the_checker_sees_function_level_and_relative_imports():
    """The checker itself: a lazy import inside a function, a relative one and a subpackage
    imported by name from the root are all found."""
    src = ("def f():\n    from cubelab.widgets import x\n\nfrom ..inspect import y\n"
           "from cubelab import magic\n")
    found = _imports_in(src, "cubelab.runtime")
    assert ("cubelab.widgets", 2) in found and ("cubelab.inspect", 4) in found
    assert ("cubelab.magic", 5) in found
