"""Every public name is documented: a numpydoc docstring with its sections, or a ``#:`` comment.

A public module is one whose dotted name has no component starting with ``_`` (``cli.__main__``
excepted, which runs the command when imported); its ``__all__`` is its public surface. For every
name in it:

- a function or class has its own docstring, which numpydoc parses, with a ``Parameters`` section
  when it takes named parameters (a class: its constructor's, in the class docstring; a record
  type, a NamedTuple or dataclass, may list its fields under ``Attributes`` instead) and an
  ``Examples`` section with at least one ``>>>`` line (the doctests that CI runs);
- a data constant has a doc comment (``#:`` above the assignment, or a string below it) in the
  module that assigns it.

A name is checked once: at the public module that defines it or, when it is defined in a private
module, at the public module nearest to that one (where docs/conf.py puts its page); a module that
re-exports it does not repeat its failure. Each offending name is one line of the module's failure.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import pkgutil
import textwrap
import warnings

import pytest

docscrape = pytest.importorskip("numpydoc.docscrape", reason="the docs extra: pip install -e '.[docs]'")
pycode = pytest.importorskip("sphinx.pycode", reason="the docs extra: pip install -e '.[docs]'")

import quantile_surrogate  # noqa: E402

NOT_IMPORTABLE = {"quantile_surrogate.cli.__main__"}  # importing it runs the command


def public_modules(package=quantile_surrogate) -> list[str]:
    """Dotted names of the package's public modules, the package itself included."""
    names = [package.__name__] + [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return sorted(name for name in names
                  if name not in NOT_IMPORTABLE and not any(part.startswith("_") for part in name.split(".")))


def _is_public_module(name: str) -> bool:
    return name.startswith("quantile_surrogate") and not any(part.startswith("_") for part in name.split("."))


def _import_source(module, name: str):
    """The module that ``module`` imports ``name`` from (``from X import name``), or None if it assigns it."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return None
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((alias.asname or alias.name) == name for alias in node.names):
            source = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            original = next(alias.name for alias in node.names if (alias.asname or alias.name) == name)
            try:
                return importlib.import_module(source), original
            except ImportError:
                return None
    return None


def _attribute_doc(module, name: str, depth: int = 0):
    """``(module that assigns name, its doc lines or None)``, following ``from X import name`` chains."""
    try:
        docs = pycode.ModuleAnalyzer.for_file(inspect.getsourcefile(module), module.__name__).find_attr_docs()
    except (pycode.PycodeError, TypeError):
        docs = {}
    if ("", name) in docs:
        return module, docs[("", name)]
    source = _import_source(module, name)
    if source is None or depth > 5:
        return module, None
    return _attribute_doc(source[0], source[1], depth + 1)


@functools.lru_cache(maxsize=None)
def _listings(package_name: str) -> dict:
    """(name, id(object)) -> the public modules of the package whose ``__all__`` lists it."""
    listings: dict = {}
    for module_name in public_modules(importlib.import_module(package_name)):
        module = importlib.import_module(module_name)
        for item in getattr(module, "__all__", ()):
            if hasattr(module, item):
                listings.setdefault((item, id(getattr(module, item))), []).append(module_name)
    return listings


def _home_module(name: str, item: str, obj) -> str:
    """The one public module where a function or class is checked (and has its page on the site).

    Its defining module if that is public and lists it; otherwise, of the public modules that list
    it, the one nearest to the (private) defining module, as docs/conf.py places its page.
    """
    defining = getattr(obj, "__module__", None) or name
    listed = _listings(name.partition(".")[0]).get((item, id(obj)), [name])
    if defining in listed:
        return defining
    return max(listed, key=lambda m: (os.path.commonprefix([m + ".", defining + "."]).count("."), m))


def _is_callable_api(obj) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)


def _named_parameters(obj) -> list[str]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def _is_record(cls) -> bool:
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def callable_problems(obj) -> list[str]:
    """What the docstring of a public function or class lacks (an empty list if nothing)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc and doc.startswith(obj.__name__ + "("):
        doc = None  # the signature that @dataclass writes when there is no docstring
    if not doc or not doc.strip():
        return ["no docstring"]
    with warnings.catch_warnings(record=True) as caught:  # numpydoc warns about an unknown section
        warnings.simplefilter("always")
        try:
            parsed = docscrape.NumpyDocString(inspect.cleandoc(doc))
        except Exception as error:  # noqa: BLE001 (numpydoc raises ValueError and others on bad sections)
            return [f"numpydoc cannot parse the docstring ({type(error).__name__}: {' '.join(str(error).split())})"]
    problems = [f"numpydoc: {' '.join(str(w.message).split())}" for w in caught]
    if not " ".join(parsed["Summary"]).strip():
        problems.append("no one-line summary")
    if _named_parameters(obj) and not parsed["Parameters"]:
        if not (inspect.isclass(obj) and _is_record(obj) and parsed["Attributes"]):
            problems.append("no Parameters section")
    examples = "\n".join(parsed["Examples"])
    if ">>>" not in examples:
        problems.append("no Examples section with a >>> doctest" if examples.strip() else "no Examples section")
    return problems


def module_problems(name: str) -> list[str]:
    """One line per undocumented public name of module ``name`` (and one if it lacks ``__all__``)."""
    module = importlib.import_module(name)
    problems = []
    if not (module.__doc__ or "").strip():
        problems.append(f"{name}: no module docstring")
    if not hasattr(module, "__all__"):
        return problems + [f"{name}: no __all__ (list its public names, or [] if it has none)"]
    for item in module.__all__:
        if not hasattr(module, item):
            problems.append(f"{name}.{item}: listed in __all__ but not defined")
            continue
        obj = getattr(module, item)
        if inspect.ismodule(obj):
            continue  # a public submodule: its own test case
        if _is_callable_api(obj):
            if _home_module(name, item, obj) != name:
                continue  # checked at the one module that documents it
            lacks = callable_problems(obj)
        else:
            home, doc = _attribute_doc(module, item)
            if home is not module and _is_public_module(home.__name__) and item in getattr(home, "__all__", ()):
                continue
            lacks = [] if doc and any(line.strip() for line in doc) else [
                "a constant without a doc comment (a `#:` line above its assignment)"]
        if lacks:
            problems.append(f"{name}.{item}: " + "; ".join(lacks))
    return problems


@pytest.mark.parametrize("module_name", public_modules())
def test_public_names_are_documented(module_name):
    problems = module_problems(module_name)
    if problems:
        pytest.fail(f"{len(problems)} undocumented public name(s):\n" + "\n".join(problems), pytrace=False)


# --- the check checks: a fake package with one fault of each kind ------------------------------------

FAKE = '''
"""A fake public module."""

from .helpers import IMPORTED

__all__ = ["documented", "no_examples", "no_parameters", "no_docstring", "Documented", "Bare",
           "DOCUMENTED", "UNDOCUMENTED", "IMPORTED", "Record", "missing"]


def documented(x):
    """Twice ``x``.

    Parameters
    ----------
    x : float
        A number.

    Examples
    --------
    >>> documented(2)
    4
    """
    return 2 * x


def no_examples(x):
    """Twice ``x``.

    Parameters
    ----------
    x : float
        A number.
    """
    return 2 * x


def no_parameters(x):
    """Twice ``x``.

    Examples
    --------
    >>> no_parameters(2)
    4
    """
    return 2 * x


def no_docstring():
    return 1


class Documented:
    """A class documented in full.

    Parameters
    ----------
    a : int
        A number.

    Examples
    --------
    >>> Documented(1).a
    1
    """

    def __init__(self, a):
        self.a = a


class Bare:
    """A class without sections."""

    def __init__(self, a):
        self.a = a


#: A documented constant.
DOCUMENTED = 1

UNDOCUMENTED = 2

from typing import NamedTuple


class Record(NamedTuple):
    """A record whose fields are its attributes.

    Attributes
    ----------
    a : int
        A field.

    Examples
    --------
    >>> Record(1).a
    1
    """

    a: int
'''

REEXPORT = '''
"""A public module that re-exports names of another public module."""

from .api import DOCUMENTED, no_examples

__all__ = ["no_examples", "DOCUMENTED"]
'''

HELPERS = '''
"""Private helpers."""

#: Documented where it is assigned.
IMPORTED = 3
'''


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    package = tmp_path / "fakedocpkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""A fake package without __all__."""\n')
    (package / "api.py").write_text(textwrap.dedent(FAKE))
    (package / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (package / "reexport.py").write_text(textwrap.dedent(REEXPORT))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "fakedocpkg"
    import sys
    for name in [n for n in sys.modules if n == "fakedocpkg" or n.startswith("fakedocpkg.")]:
        monkeypatch.delitem(sys.modules, name)


def test_the_check_finds_each_kind_of_fault(fake_package):
    lines = module_problems(f"{fake_package}.api")
    by_name = {line.split(":")[0].rpartition(".")[2]: line for line in lines}
    assert set(by_name) == {"no_examples", "no_parameters", "no_docstring", "Bare", "UNDOCUMENTED", "missing"}, lines
    assert "no Examples section" in by_name["no_examples"]
    assert "no Parameters section" in by_name["no_parameters"]
    assert "no docstring" in by_name["no_docstring"]
    assert "no Parameters section" in by_name["Bare"] and "no Examples section" in by_name["Bare"]
    assert "doc comment" in by_name["UNDOCUMENTED"]
    assert "not defined" in by_name["missing"]
    assert all(line.count("\n") == 0 for line in lines)  # one line per name


def test_a_module_without_all_fails(fake_package):
    assert module_problems(fake_package) == [f"{fake_package}: no __all__ (list its public names, or [] if it has none)"]


def test_a_re_exported_name_is_reported_once(fake_package):
    assert module_problems(f"{fake_package}.reexport") == []
    assert any(line.startswith(f"{fake_package}.api.no_examples:") for line in module_problems(f"{fake_package}.api"))


def test_a_misspelled_section_is_reported():
    def f():
        """Nothing.

        Example
        -------
        >>> f()
        """

    problems = callable_problems(f)
    assert any(line.startswith("numpydoc:") and "Example" in line for line in problems), problems
    assert "no Examples section" in problems


def test_examples_without_a_doctest_fail():
    def f(x):
        """Twice ``x``.

        Parameters
        ----------
        x : float
            A number.

        Examples
        --------
        Call it with a number.
        """

    assert callable_problems(f) == ["no Examples section with a >>> doctest"]


def test_the_package_has_public_modules_and_skips_private_ones():
    names = public_modules()
    assert {"quantile_surrogate", "quantile_surrogate.metrics", "quantile_surrogate.training.sampling"} <= set(names)
    assert not any("._" in name for name in names)
