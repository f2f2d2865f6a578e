"""Small helpers shared by the benchmark commands: name lists from the command line, mean ± s.e., safe writing.

Kept free of torch and the library, so that a benchmark that needs neither loads neither.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["names", "mean_se", "write_results"]


def names(text, known, option: str) -> list:
    """The comma-separated names of ``text`` (or a sequence), each in ``known``, in order, without repeats.

    ``ValueError`` naming ``option`` for an unknown or empty list.
    """
    given = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = sorted(set(given) - set(known))
    if unknown or not given:
        raise ValueError(f"{option}: unknown {unknown or 'empty'}; choose from {', '.join(known)}.")
    return list(dict.fromkeys(given))


def mean_se(values) -> str:
    """``"mean ± standard error"`` to three decimals (the error NaN for one value)."""
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return f"{values.mean():.3f} ± {se:.3f}"


def write_results(frame, text: str, out) -> None:
    """The CSV at ``out`` and the summary beside it (.md), each written to a temporary file then moved in place.

    An interrupted write leaves neither a half-written file nor a stray temporary one.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for path, content in ((out, frame.to_csv(index=False)), (out.with_suffix(".md"), text)):
        handle = tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False)
        try:
            with handle:
                handle.write(content)
            os.replace(handle.name, path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise
