"""Reading a user's CSV or Parquet file, typing its columns, and the model file, for :mod:`.file_commands`.

Every problem with the input raises :class:`InputError` with one line that names the file, the
column and the problem; the command prints it and exits with status 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__

MAGIC = b"QUANTILE-SURROGATE-MODEL\n"
MISSING_CATEGORY = "(missing)"


class InputError(Exception):
    """Bad user input; the command prints its one-line message and exits with status 1."""


# ----------------------------------------------------------------------------- files

def _atomic_write(path: Path, write) -> None:
    """Call ``write(temporary_path)`` and move the result onto ``path``, so no half-written file is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_table(path) -> pd.DataFrame:
    """A CSV (any suffix but .parquet/.pq) or Parquet file as a DataFrame with at least one row."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file.")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the file is empty; it needs a header line and at least one data row.")
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"{path}: cannot be read as {'Parquet' if path.suffix.lower() in ('.parquet', '.pq') else 'CSV'} ({first}).")
    if len(frame) == 0:
        raise InputError(f"{path}: the file has no data rows.")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _first_row(mask) -> int:
    """1-based data row of the first True (row 1 is the line after the header)."""
    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


def _numeric_column(frame: pd.DataFrame, column: str, path) -> np.ndarray:
    """The column as float64, or an error naming the first cell that is text, empty or infinite."""
    values = frame[column]
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(float)
    parsed = pd.to_numeric(values, errors="coerce")
    text = parsed.isna() & values.notna()
    if text.any():
        row = _first_row(text)
        raise InputError(
            f"{path}: column '{column}' is numeric but data row {row} holds text {values.iloc[row - 1]!r}; "
            f"fix the value, or pass --categorical {column} if the column is a category."
        )
    parsed = parsed.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(parsed)
    if bad.any():
        raise InputError(
            f"{path}: column '{column}' has {int(bad.sum())} empty or infinite cells (first at data row "
            f"{_first_row(bad)}); fill them in or drop those rows."
        )
    return parsed


def _category_text(value) -> str:
    # 3 and 3.0 are one category: an integer column turns float in a file where it has an empty cell.
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _categorical_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column]
    return np.array([MISSING_CATEGORY if pd.isna(v) else _category_text(v) for v in values], dtype=object)


def _is_categorical(series: pd.Series) -> bool:
    """Text columns are categorical unless most of their cells are numbers (then a stray text cell is an error)."""
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    present = series.notna()
    numbers = pd.to_numeric(series, errors="coerce").notna() & present
    return bool(numbers.sum() * 2 < present.sum())


def _features(frame: pd.DataFrame, schema: dict, path) -> pd.DataFrame:
    """The feature columns of ``frame``, typed as ``schema`` says, or an error naming the column."""
    missing = [c for c in schema["numeric"] + schema["categorical"] if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: column '{missing[0]}' is missing; the model was trained with columns "
                         f"{', '.join(schema['numeric'] + schema['categorical'])}.")
    data = {c: _numeric_column(frame, c, path) for c in schema["numeric"]}
    data.update({c: _categorical_column(frame, c) for c in schema["categorical"]})
    return pd.DataFrame(data, columns=schema["numeric"] + schema["categorical"])


# ----------------------------------------------------------------------------- model file

def save_model(bundle: dict, path) -> None:
    """Write ``MAGIC``, a JSON header line (versions, columns) and the joblib-pickled bundle, atomically."""
    import joblib
    import sklearn
    import torch

    header = {"quantile_surrogate": __version__, "scikit_learn": sklearn.__version__, "torch": torch.__version__,
              "label": bundle["label"], "objective": bundle["objective"], "target": bundle["target"]}

    def write(tmp: Path):
        with open(tmp, "wb") as handle:
            handle.write(MAGIC)
            handle.write(json.dumps(header).encode() + b"\n")
            joblib.dump(bundle, handle)

    _atomic_write(Path(path), write)


def _compatible(saved: str, running: str) -> bool:
    """Same major and minor version: in 0.x, a minor release may change the pickled classes."""
    return saved.split(".")[:2] == running.split(".")[:2]


def load_model(path) -> dict:
    """Read a model written by :func:`save_model`; the version is checked before anything is unpickled."""
    import joblib

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such model file.")
    with open(path, "rb") as handle:
        if handle.read(len(MAGIC)) != MAGIC:
            raise InputError(f"{path}: not a quantile-surrogate model file (write one with `quantile-surrogate fit`).")
        try:
            header = json.loads(handle.readline())
            saved = str(header["quantile_surrogate"])
        except (ValueError, KeyError, TypeError):
            raise InputError(f"{path}: the model file's header is damaged; refit the model.")
        if not _compatible(saved, __version__):
            raise InputError(
                f"{path}: saved by quantile-surrogate {saved}, which this version ({__version__}) cannot load; "
                f"refit it with `quantile-surrogate fit`, or install quantile-surrogate=={saved}."
            )
        try:
            return joblib.load(handle)
        except Exception as error:  # a truncated or edited pickle fails in many ways
            raise InputError(f"{path}: the model file is damaged ({type(error).__name__}); refit the model.")



def _labels(frame: pd.DataFrame, label: str, path, positive=None):
    """``(y in {0, 1}, [negative, positive])``; the positive class is ``positive`` or the larger label."""
    if label not in frame.columns:
        raise InputError(f"{path}: column '{label}' (the --label) is missing; the columns are {', '.join(frame.columns)}.")
    values = frame[label]
    if values.isna().any():
        raise InputError(f"{path}: column '{label}' has {int(values.isna().sum())} empty cells (first at data row "
                         f"{_first_row(values.isna())}); every row needs a label.")
    classes = sorted(pd.unique(values).tolist(), key=lambda v: (str(type(v)), v))
    if len(classes) != 2:
        shown = ", ".join(repr(c) for c in classes[:5])
        raise InputError(f"{path}: column '{label}' has {len(classes)} class{'es' if len(classes) != 1 else ''} "
                         f"({shown}{', ...' if len(classes) > 5 else ''}); a binary classifier needs exactly two.")
    if positive is not None:
        match = [c for c in classes if str(c) == str(positive)]
        if not match:
            raise InputError(f"{path}: column '{label}' has no class {positive!r} (--positive); its classes are "
                             f"{classes[0]!r} and {classes[1]!r}.")
        if str(classes[0]) == str(positive):
            classes = classes[::-1]
    return (values == classes[1]).to_numpy().astype(np.int64), classes


def _schema(frame: pd.DataFrame, label: str, drop, categorical, path) -> dict:
    for column in list(drop) + list(categorical):
        if column not in frame.columns:
            raise InputError(f"{path}: column '{column}' (named by --drop/--categorical) is missing.")
    columns = [c for c in frame.columns if c != label and c not in drop]
    if not columns:
        raise InputError(f"{path}: no feature column besides the label '{label}'.")
    cats = [c for c in columns if c in categorical or _is_categorical(frame[c])]
    return {"numeric": [c for c in columns if c not in cats], "categorical": cats}
