"""Small helpers shared by the benchmark commands: name lists and parameter changes from the command line,
mean ± s.e., safe writing.

The writing goes through the library's ``atomic_writes``; the rest needs neither torch nor the library.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

__all__ = ["assignments", "names", "mean_se", "out_problem", "report", "write_results"]


def names(text, known, option: str) -> list:
    """The comma-separated names of ``text`` (or a sequence), each in ``known``, in order, without repeats.

    ``ValueError`` naming ``option`` for an unknown or empty list.
    """
    given = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = sorted(set(given) - set(known))
    if unknown or not given:
        raise ValueError(f"{option}: unknown {unknown or 'empty'}; choose from {', '.join(known)}.")
    return list(dict.fromkeys(given))


def assignments(items, option: str) -> dict:
    """``{name: value}`` from ``NAME=VALUE`` items (``--set`` options): the value a Python literal, else the bare string.

    A bare string (``init=random``) needs no quotes; ``ValueError`` naming ``option`` for an item without a name
    or ``=``.
    """
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{option}: expected NAME=VALUE, e.g. {option} alpha=0.01; got {item!r}")
        try:
            out[name.strip()] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name.strip()] = value  # a bare string such as bandwidth=auto
    return out


def mean_se(values) -> str:
    """``"mean ± standard error"`` to three decimals (the error NaN for one value)."""
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return f"{values.mean():.3f} ± {se:.3f}"


def out_problem(out, data_dir=None) -> str | None:
    """Why ``--out`` cannot be written (not a .csv, it or its .md exists, inside ``data_dir``), or None.

    Results are never overwritten, and nothing is written into the shared data folder.
    """
    path = Path(out).resolve()
    if path.suffix != ".csv":
        return f"--out must name a .csv file; got {out}"
    if path.exists() or path.with_suffix(".md").exists():
        return f"--out {out} (or its .md) exists; name a new file (results are never overwritten)"
    if data_dir is not None and path.is_relative_to(Path(data_dir).resolve()):
        return f"--out {out} is inside the data folder {data_dir}; write elsewhere"
    return None


def write_results(frame, text: str, out) -> None:
    """The CSV at ``out`` and the summary beside it (.md), all or nothing (the library's ``atomic_writes``).

    An interrupted write leaves neither a half-written file nor a stray temporary one.
    """
    from quantile_surrogate._utils.files import atomic_writes  # the library's one home for safe writes

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_writes([(out, lambda path: frame.to_csv(path, index=False)),
                   (out.with_suffix(".md"), lambda path: Path(path).write_text(text))])


def report(frame, text: str, out):
    """A command's end: the rows and their summary written to ``out`` (when given, :func:`write_results`), the
    summary printed; returns ``frame``."""
    if out is not None:
        write_results(frame, text, out)
    print(text)
    return frame
