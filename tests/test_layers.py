"""The package's layers import one way: cli -> estimators -> training -> maths (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "quantile_surrogate"
ROOMS = ("training", "estimators", "cli", "baselines", "datasets", "experiments")
FORBIDDEN = {
    "maths": {"training", "estimators", "cli", "baselines", "datasets", "experiments"},
    "training": {"estimators", "cli", "baselines", "datasets", "experiments"},
    "estimators": {"cli", "baselines", "datasets", "experiments"},
    "baselines": {"cli", "experiments"},
    "datasets": {"training", "estimators", "cli", "baselines", "experiments"},
}


def _layer(path: Path, package: Path = PACKAGE) -> str:
    relative = path.relative_to(package).parts
    return relative[0] if len(relative) > 1 and relative[0] in ROOMS else "maths"


def _imported_rooms(path: Path, package: Path = PACKAGE) -> set[str]:
    """The package's rooms that ``path`` imports, from relative and absolute imports alike."""
    tree = ast.parse(path.read_text())
    depth = len(path.relative_to(package).parts) - 1
    rooms = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against the file's folder
                base = list(path.relative_to(package).parts[:depth])[: max(0, depth - (node.level - 1))]
                target = base + (module.split(".") if module else [])
                names = [".".join(target + [alias.name]) for alias in node.names] if not module else [".".join(target)]
            elif module.startswith("quantile_surrogate"):
                names = [module.removeprefix("quantile_surrogate").lstrip(".")]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("quantile_surrogate").lstrip(".") for a in node.names
                     if a.name.startswith("quantile_surrogate")]
        for name in names:
            head = name.split(".")[0]
            if head in ROOMS:
                rooms.add(head)
    return rooms


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    layer = _layer(path)
    upward = _imported_rooms(path) & FORBIDDEN.get(layer, set())
    assert not upward, f"{path.relative_to(PACKAGE)} ({layer}) imports {sorted(upward)}"


def test_the_check_sees_upward_imports(tmp_path):
    # Relative imports must be resolved, or the test above could never fail.
    (tmp_path / "training").mkdir()
    module = tmp_path / "training" / "bad.py"
    module.write_text("from ..estimators import QuantileClassifier\nfrom . import loop\n"
                      "from .. import cli\nimport quantile_surrogate.experiments.report\nfrom ..losses import x\n")
    assert _layer(module, tmp_path) == "training"
    assert _imported_rooms(module, tmp_path) == {"estimators", "training", "cli", "experiments"}
