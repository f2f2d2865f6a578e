"""Import a script of ``benchmarks/`` by its path (the folder is not a package the tests install)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(name):
    """The module ``benchmarks/<name>.py``, executed fresh."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
