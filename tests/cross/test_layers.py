"""Each folder of the package is one layer, imports only go down, no import cycle exists, and no
file or function outgrows the size rule (docs/architecture.md).

The import graph is read from the source with ``ast``: module-level imports, imports inside
functions, and modules loaded by name (``importlib.import_module("quantile_surrogate...")``) all
count, since each is an import a reader has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "quantile_surrogate"
NAME = "quantile_surrogate"

#: Each folder's layer, bottom first: a module may import modules of lower layers and of its own
#: folder, never a higher layer nor another folder of its own layer.
LAYERS = {
    "_utils": 0,
    "quantiles": 1, "metrics": 1, "datasets": 1,
    "losses": 2,
    "objectives": 3, "constraints": 3,
    "boosting": 4, "training": 4,
    "selection": 5,
    "estimators": 6,
    "baselines": 7,
    "experiments": 8,
    "": 9,  # the package's __init__ and the kept import paths beside it: the public surface, re-exports only
    "cli": 10,
}


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name (``quantile_surrogate.x.y``; a package by its own name) -> its file."""
    out = {}
    for path in package.rglob("*.py"):
        parts = (NAME, *path.relative_to(package).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _known(name: str, modules) -> str | None:
    """The module ``name`` names, or the nearest enclosing one (``pkg.module.attr`` -> ``pkg.module``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules) -> set[str]:
    """The package's modules that module ``name`` imports, at any depth of its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # `from pkg import sub` imports the submodule when there is one, else a name of pkg
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            targets = [node.args[0].value]
        for target in targets:
            known = _known(target, modules) if target.startswith(NAME) else None
            if known and known != name:
                found.add(known)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_files(package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


GRAPH = import_graph()
FILES = module_files()


def folder(name: str) -> str:
    """The top folder of a module; ``""`` for the package's own ``__init__`` and the modules beside it
    (the kept import paths ``thresholds``, ``guarantees``, ``bootstrap``, ``modules``: re-exports only)."""
    path = FILES[name]
    return "" if path.parent == PACKAGE else path.relative_to(PACKAGE).parts[0]


def test_every_folder_has_a_layer():
    assert {folder(name) for name in GRAPH} <= set(LAYERS), "a new folder needs its place in LAYERS"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_go_down_the_layers(name):
    here = folder(name)
    wrong = sorted(target for target in GRAPH[name]
                   if folder(target) != here and LAYERS[folder(target)] >= LAYERS[here])
    assert not wrong, f"{name} (layer {LAYERS[here]}, {here or 'the package'}) imports {wrong}"


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / NAME
    for relative, text in files.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_the_graph_sees_every_kind_of_import(tmp_path):
    # Relative imports resolved, imports inside functions and modules loaded by name counted:
    # otherwise the tests above could never fail.
    package = _write(tmp_path, {
        "__init__.py": "", "training/__init__.py": "", "estimators/__init__.py": "", "cli/__init__.py": "",
        "training/bad.py": "def f():\n    from ..estimators import q\n",
        "estimators/q.py": "import importlib\nimportlib.import_module('quantile_surrogate.training.bad')\n",
        "cli/main.py": "from . import other\nfrom .. import estimators\n",
        "cli/other.py": "",
    })
    graph = import_graph(package)
    assert graph[f"{NAME}.training.bad"] == {f"{NAME}.estimators.q"}
    assert graph[f"{NAME}.estimators.q"] == {f"{NAME}.training.bad"}
    assert graph[f"{NAME}.cli.main"] == {f"{NAME}.cli.other", f"{NAME}.estimators"}
    assert cycles(graph) == [[f"{NAME}.estimators.q", f"{NAME}.training.bad"]]


# -- sizes, counted in code lines: not blank, not a comment, not a docstring ---------------------
MAX_FILE_LINES = 300
MAX_FUNCTION_LINES = 60


def _docstring_lines(tree) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(text: str, tree, start: int = 1, end: int | None = None) -> int:
    """Lines in ``start..end`` that are neither blank, a comment nor part of a docstring."""
    docstrings, lines = _docstring_lines(tree), text.splitlines()
    return sum(1 for number in range(start, (end or len(lines)) + 1)
               if lines[number - 1].strip() and not lines[number - 1].strip().startswith("#")
               and number not in docstrings)


def sizes(path: Path):
    """``(code lines of the file, [(code lines, function name), ...])``."""
    text = path.read_text()
    tree = ast.parse(text)
    functions = [(code_lines(text, tree, node.lineno, node.end_lineno), node.name) for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return code_lines(text, tree), functions


@pytest.mark.parametrize("name", sorted(FILES), ids=lambda n: n.removeprefix(NAME + "."))
def test_files_and_functions_stay_within_the_size_rule(name):
    file_lines, functions = sizes(FILES[name])
    assert file_lines <= MAX_FILE_LINES, f"{name}: {file_lines} code lines; split it by concept"
    long = [(lines, function) for lines, function in functions if lines > MAX_FUNCTION_LINES]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} code lines: {long}"


def test_the_size_count_leaves_out_docstrings_comments_and_blank_lines(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Doc\nstring."""\n\n# a comment\ndef f():\n    """Doc."""\n    x = 1\n\n    return x\n')
    assert sizes(path) == (3, [(3, "f")])  # def, x = 1, return x
