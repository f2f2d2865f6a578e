"""Sphinx configuration of the quantile-surrogate documentation site.

Build it from the repository root with

    python -m sphinx -E -W --keep-going -b html docs docs/_build/html

The API reference (``docs/api/``) is generated here, before Sphinx reads any source, from the
``__all__`` of every public module (no dotted component starting with ``_``): one page per
module and one page per public name, at the module that defines it. A name that a module only
re-exports (``quantile_surrogate.QuantileClassifier``) is listed on that module's page with a
link to its page, and a cross-reference to the re-exported path resolves to the same page
(``missing-reference`` below). Nothing is fetched from the network at build time.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import sys
from pathlib import Path

from sphinx.pycode import ModuleAnalyzer

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "src"))  # the checkout's package, installed or not

import quantile_surrogate  # noqa: E402

project = "quantile-surrogate"
author = "the quantile-surrogate authors"
copyright = "2026, the quantile-surrogate authors"  # noqa: A001 (Sphinx's name)
release = quantile_surrogate.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: $...$ maths, ::: fences, and GitHub-style anchors so that [x](page.md#a-heading) links resolve.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# The API pages are written by this file (below), not by autosummary (which numpydoc loads).
autosummary_generate = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types, in words
autodoc_inherit_docstrings = True
numpydoc_show_class_members = False  # autodoc's :members: documents methods and attributes
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

html_theme = "alabaster"
html_title = f"quantile-surrogate {release}"
html_theme_options = {
    "description": "Train classifiers for the operating point you deploy.",
    "fixed_sidebar": True,
    "page_width": "1240px",
    "sidebar_width": "240px",
    "body_max_width": "none",  # wide tables (the decision table, the results) need the room
}
html_static_path: list[str] = []

# ---------------------------------------------------------------------------------------------
# The API reference, generated from __all__.
# ---------------------------------------------------------------------------------------------

API = DOCS / "api"
# Members of these bases are not repeated on every class page (scikit-learn's get_params, torch's
# Module methods, tuple's count and index...): they are the libraries' own, documented there.
INHERITED_FROM_ELSEWHERE = ", ".join((
    "object", "BaseEstimator", "ClassifierMixin", "TransformerMixin", "MetaEstimatorMixin",
    "_MetadataRequester", "Module", "tuple", "dict", "BaseException", "Exception", "Warning",
    "UserWarning", "RuntimeError", "ValueError", "Sampler", "Generic",
))
LONG_VALUE = 70  # a data constant whose repr is longer is shown without its value


def public_modules() -> list[str]:
    """The dotted names of the public modules: no component starting with ``_``; not ``cli.__main__``."""
    names = ["quantile_surrogate"]
    for info in pkgutil.walk_packages(quantile_surrogate.__path__, "quantile_surrogate."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _assigned_names(module) -> set[str]:
    """The names a module assigns at its top level (not those it imports)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def _kind(obj) -> str:
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    return "data"


def collect_api() -> tuple[dict, dict, dict]:
    """``(modules, canonical, aliases)``.

    ``modules``: name -> (module, its ``__all__``). ``canonical``: (module name, public name) of
    every listed object -> the (module name, name) where its page lives. ``aliases``: every
    re-exported dotted path -> the dotted path of its page.
    """
    modules = {}
    for name in public_modules():
        module = importlib.import_module(name)
        # A name listed but not defined fails tests/cross/test_docstrings.py; here it is left out.
        modules[name] = (module, [item for item in getattr(module, "__all__", []) if hasattr(module, item)])
    listings = {}  # (name, id(obj)) -> [module names listing it]
    for name, (module, public) in modules.items():
        for item in public:
            obj = getattr(module, item)
            listings.setdefault((item, id(obj)), []).append(name)
    canonical, aliases = {}, {}
    for (item, _), listed in listings.items():
        obj = getattr(modules[listed[0]][0], item)
        if inspect.ismodule(obj):
            continue
        defining = getattr(obj, "__module__", None) if _kind(obj) != "data" else None
        if defining in listed:
            home = defining
        elif defining is not None:  # defined in a private module: the public module nearest to it
            home = max(listed, key=lambda m: (os.path.commonprefix([m + ".", defining + "."]).count("."), m))
        else:  # data: the module that assigns it, else the deepest listing
            assigning = [m for m in listed if item in _assigned_names(modules[m][0])]
            home = (assigning or sorted(listed, key=lambda m: (m.count("."), m), reverse=True))[0]
        for m in listed:
            canonical[(m, item)] = (home, item)
            if m != home:
                aliases[f"{m}.{item}"] = f"{home}.{item}"
    return modules, canonical, aliases


def _title(text: str, underline: str = "=") -> str:
    return f"{text}\n{underline * len(text)}\n"


def _object_page(module_name: str, item: str, obj) -> str:
    kind = _kind(obj)
    shown = item[:-1] + "\\_" if item.endswith("_") else item  # a trailing _ would make a reST link
    lines = [_title(shown), f".. currentmodule:: {module_name}\n"]
    if kind == "function":
        lines.append(f".. autofunction:: {item}\n")
    elif kind in ("class", "exception"):
        directive = "autoexception" if kind == "exception" else "autoclass"
        lines.append(f".. {directive}:: {item}\n   :members:\n   :inherited-members: {INHERITED_FROM_ELSEWHERE}\n")
    else:
        no_value = "   :no-value:\n" if len(repr(obj)) > LONG_VALUE else ""
        lines.append(f".. autodata:: {item}\n{no_value}")
    return "\n".join(lines)


SECTIONS = (("class", "Classes"), ("exception", "Exceptions and warnings"), ("function", "Functions"),
            ("data", "Constants"))


def _summary(module_name: str, item: str, obj) -> str:
    """The first paragraph of the object's docstring (a constant's ``#:`` comment), on one line."""
    if _kind(obj) == "data":
        home = importlib.import_module(module_name)
        docs = ModuleAnalyzer.for_module(home.__name__).find_attr_docs()
        lines = list(docs.get(("", item), []))
    else:
        lines = inspect.cleandoc(getattr(obj, "__doc__", None) or "").splitlines()
    paragraph = []
    for line in lines:
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    return " ".join(paragraph) or "(no docstring yet)"


def _table(rows: list[tuple[str, str]]) -> str:
    """A two-column table: a link to the object's page, its summary."""
    body = "".join(f"   * - :py:obj:`~{target}`\n     - {summary}\n" for target, summary in rows)
    return f".. list-table::\n   :widths: 30 70\n   :class: api-summary\n\n{body}"


def _module_page(name: str, module, public: list, canonical: dict, modules: dict) -> tuple[str, list]:
    """The module's page and the object pages it owns."""
    out = [_title(name), f".. automodule:: {name}\n", f".. currentmodule:: {name}\n"]
    owned, reexported, submodules = {}, [], []
    for item in public:
        obj = getattr(module, item)
        if inspect.ismodule(obj):
            submodules.append(obj.__name__)
        elif canonical[(name, item)] == (name, item):
            owned.setdefault(_kind(obj), []).append(item)
        else:
            home = canonical[(name, item)][0]
            reexported.append((f"{home}.{item}", _summary(home, item, obj)))
    pages = []
    for kind, heading in SECTIONS:
        if kind not in owned:
            continue
        out.append(_title(heading, "-"))
        out.append(_table([(f"{name}.{i}", _summary(name, i, getattr(module, i))) for i in owned[kind]]))
        out.append(".. toctree::\n   :hidden:\n\n" + "".join(f"   generated/{name}.{i}\n" for i in owned[kind]))
        pages += [(f"{name}.{i}", _object_page(name, i, getattr(module, i))) for i in owned[kind]]
    if reexported:
        out.append(_title("Re-exported here", "-"))
        out.append("Documented at the module that defines them; importable from here too.\n")
        out.append(_table(reexported))
    children = sorted({m for m in modules if m.rpartition(".")[0] == name} | set(submodules))
    if children:
        out.append(_title("Submodules", "-"))
        out.append(_table([(m, _module_summary(modules[m][0])) for m in children]))
    if not public:
        out.append(".. note::\n\n   This module has no ``__all__``: nothing in it is public API.\n")
    return "\n".join(out), pages


def _module_summary(module) -> str:
    return inspect.cleandoc(module.__doc__ or "(no docstring yet)").split("\n\n")[0].replace("\n", " ")


def _write(path: Path, text: str, written: set) -> None:
    written.add(path)
    if not path.exists() or path.read_text() != text:  # unchanged pages keep Sphinx's incremental build
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def generate_api() -> dict:
    """Write ``docs/api/`` (removing pages of names that are gone); return the alias map."""
    modules, canonical, aliases = collect_api()
    written: set[Path] = set()
    index = [_title("API reference"),
             "One page per public module (its ``__all__``) and one per public name. The package root\n"
             "re-exports the names most people need: ``from quantile_surrogate import QuantileClassifier``.\n",
             _table([(m, _module_summary(module)) for m, (module, _) in modules.items()]),
             ".. toctree::\n   :hidden:\n\n" + "".join(f"   {m}\n" for m in modules)]
    _write(API / "index.rst", "\n".join(index), written)
    for name, (module, public) in modules.items():
        page, pages = _module_page(name, module, public, canonical, modules)
        _write(API / f"{name}.rst", page, written)
        for dotted, text in pages:
            _write(API / "generated" / f"{dotted}.rst", text, written)
    for stale in API.rglob("*.rst"):
        if stale not in written:
            stale.unlink()
    return aliases


ALIASES = generate_api()


def _short_names(aliases: dict) -> dict:
    """A bare public name (``QuantileClassifier``) -> its page, where the name is unambiguous."""
    pages: dict[str, set] = {}
    for path in list(aliases.values()) + list(aliases):
        page = aliases.get(path, path)
        pages.setdefault(path.rpartition(".")[2], set()).add(page)
    return {name: next(iter(found)) for name, found in pages.items() if len(found) == 1}


SHORT_NAMES = _short_names(ALIASES)


def _page_of(path: str) -> str | None:
    """The documented path for ``path`` or for its re-exported prefix (``quantile_surrogate.X.fit``)."""
    head, tail = path, ""
    while head:
        if head in ALIASES:
            return ALIASES[head] + tail
        head, dot, last = head.rpartition(".")
        tail = dot + last + tail
    return None


def _resolve_reexport(app, env, node, contnode):
    """A reference to a re-exported path (``quantile_surrogate.QuantileClassifier``) links to its page.

    So does a bare public name that a docstring uses outside its module (``QuantileClassifier``,
    ``QuantileClassifier.fit``), when only one object has that name.
    """
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    module = node.get("py:module")
    candidates = [target, f"{module}.{target}" if module else "", f"quantile_surrogate.{target}"]
    found = next((page for page in map(_page_of, filter(None, candidates)) if page), None)
    if found is None:
        first, dot, rest = target.partition(".")
        found = SHORT_NAMES[first] + dot + rest if first in SHORT_NAMES else None
    if found is None or found == target:
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, node["reftype"], found, node, contnode)


def _skip_member(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_fit_request``-style methods are its own API, documented there."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _drop_type_docstring(app, what, name, obj, options, lines):
    """An undocumented constant shows no docstring, rather than its type's (``dict() -> new empty dictionary``)."""
    type_doc = type(obj).__doc__
    type_doc = inspect.cleandoc(type_doc).splitlines() if isinstance(type_doc, str) else []
    if what in ("data", "attribute") and lines and type_doc and lines[0].strip() == type_doc[0].strip():
        del lines[:]


def setup(app):
    app.connect("missing-reference", _resolve_reexport)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _drop_type_docstring)
