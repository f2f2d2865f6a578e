"""Reading a user's CSV or Parquet file and typing its columns, for ``fit``, ``predict`` and ``evaluate``.

Every problem with the input raises :class:`InputError` with one line that names the file, the
column and the problem; the command prints it and exits with status 1. The header is read
first (:func:`read_header`), so that duplicated column names (which pandas would silently
rename ``a``, ``a.1``) and Parquet columns of lists or structs are refused by name before any
data is parsed. :func:`iter_table` reads a file in chunks of rows (pandas ``chunksize``,
pyarrow ``iter_batches``), so that ``predict`` needs memory for one chunk, not the file.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["InputError", "MISSING_CATEGORY", "CHUNK_ROWS", "read_header", "read_table", "iter_table", "features",
           "feature_columns", "labels", "schema_of", "column_warnings", "show", "is_categorical", "categorical_column",
           "group_column"]

MISSING_CATEGORY = "(missing)"
CHUNK_ROWS = 100_000
"""Rows per chunk when a file is streamed: a few tens of MB for a hundred columns."""

# Each message names the file, the column and the problem, and says what to do; tests match these constants.
EMPTY_FILE_MESSAGE = "{path}: the file is empty; it needs a header line and at least one data row."
UNREADABLE_MESSAGE = "{path}: cannot be read as {kind} ({reason})."
NO_SUCH_FILE_MESSAGE = "{path}: no such file."
NOT_REGULAR_FILE_MESSAGE = "{path}: not a regular file."
DUPLICATED_COLUMN_MESSAGE = ("{path}: the header names column '{column}' more than once; rename the copies "
                             "so that every column has its own name.")
NESTED_COLUMN_MESSAGE = ("{path}: column '{column}' holds lists or records (Parquet type {arrow_type}), not "
                         "numbers or text; {fix}.")
NESTED_FIX_DROP = "flatten it, or leave it out with --drop {column}"
NESTED_FIX_MODEL = "the model needs it as a column of numbers or text"
NO_ROWS_MESSAGE = "{path}: the file has no data rows."
DROPPED_MISSING_MESSAGE = "{path}: column '{column}' (named by --drop) is missing; the file has columns {columns}."
FILE_COLUMN_MISSING_MESSAGE = "{path}: column '{column}' is missing; the file has columns {columns}."
NUMERIC_TEXT_MESSAGE = ("{path}: column '{column}' is numeric but data row {row} holds text {value}; "
                        "fix the value, or pass --categorical {column} if the column is a category.")
NONFINITE_CELLS_MESSAGE = ("{path}: column '{column}' has {count} empty or infinite cells (first at data row "
                           "{row}); fill them in or drop those rows.")
FEATURE_MISSING_MESSAGE = "{path}: column '{column}' is missing; the model was trained with columns {columns}."
LABEL_MISSING_MESSAGE = "{path}: column '{column}' (the --label) is missing; the columns are {columns}."
LABEL_EMPTY_MESSAGE = ("{path}: column '{column}' has {count} empty cells (first at data row {row}); "
                       "every row needs a label.")
CLASS_COUNT_MESSAGE = ("{path}: column '{column}' has {count} {classes_word} ({shown}); a binary classifier "
                       "needs exactly two.")
NO_POSITIVE_CLASS_MESSAGE = ("{path}: column '{column}' has no class {positive} (--positive); its classes are "
                             "{first} and {second}.")
CATEGORICAL_MISSING_MESSAGE = "{path}: column '{column}' (named by --categorical) is missing{also_dropped}."
CATEGORICAL_ALSO_DROPPED = " (it is also named by --drop)"
TEXT_MISSING_MESSAGE = "{path}: column '{column}' (named by --text) is missing{also}."
TEXT_ALSO_NAMED = " (it is also named by {flag})"
GROUPS_MISSING_MESSAGE = "{path}: column '{column}' (the {role}) is missing; the columns are {columns}."
GROUPS_EMPTY_MESSAGE = ("{path}: column '{column}' (the {role}) has {count} empty cells (first at data row {row}); "
                        "every row needs a group.")
NO_FEATURES_MESSAGE = "{path}: no feature column besides the label '{label}'."
INDEX_COLUMN_WARNING = ("{path}: column '{column}' has no name in the header; it looks like a saved pandas index "
                        "(to_csv without index=False). If so, leave it out with --drop '{column}'.")
IDENTIFIER_COLUMN_WARNING = ("{path}: column '{column}' is text with a different value in every row, like an "
                             "identifier; one-hot encoding it cannot help on new rows. Leave it out with --drop "
                             "{column}.")


NOT_TEXT_MESSAGE = "{path}: is a {kind} file, not CSV text; {fix}."
NOT_TEXT_FIX_COMPRESSED = "name it {name}{suffix} to read it as compressed CSV, or decompress it"
NOT_TEXT_FIX_PARQUET = "name it {stem}.parquet to read it as Parquet"
NOT_UTF8_MESSAGE = ("{path}: line {line} holds the byte {byte}, which is not UTF-8 text (the file is probably Latin-1 "
                    "or Windows-1252); save it as UTF-8, e.g. `iconv -f latin1 -t utf-8`.")
PREAMBLE_MESSAGE = ("{path}: line 1 has {first} field(s) but line 2 has {second}; the first line must be the header: "
                    "remove any title or note above it.")
TRAILING_COMMA_MESSAGE = ("{path}: data line 2 ends in a comma that the header line does not have (one field more "
                          "than the header), so every value would shift one column; remove the trailing commas.")
# The first bytes of files that are not text, and the suffix that makes pandas read them.
_MAGIC_BYTES = ((b"\x1f\x8b", "gzip-compressed", ".gz"), (b"PK\x03\x04", "zip", ".zip"), (b"PAR1", "Parquet", None),
                (b"BZh", "bzip2-compressed", ".bz2"), (b"\xfd7zXZ\x00", "xz-compressed", ".xz"),
                (b"\x28\xb5\x2f\xfd", "zstd-compressed", ".zst"))


class InputError(Exception):
    """Bad user input; the command prints its one-line message and exits with status 1."""


def show(value) -> str:
    """``repr`` of a value as the user typed it: ``2``, not ``np.int64(2)``."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


@contextlib.contextmanager
def _reading(path: Path):
    """Turn the many ways pandas and pyarrow fail on a bad file into one :class:`InputError`."""
    try:
        yield
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(EMPTY_FILE_MESSAGE.format(path=path)) from None
    except UnicodeDecodeError:
        line, byte = _first_non_utf8(path)
        raise InputError(NOT_UTF8_MESSAGE.format(path=path, line=line, byte=byte)) from None
    except (pd.errors.ParserError, OSError, ValueError, TypeError, ImportError) as error:
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        kind = "Parquet" if _is_parquet(path) else "CSV"
        raise InputError(UNREADABLE_MESSAGE.format(path=path, kind=kind, reason=first)) from None


def _first_non_utf8(path: Path) -> tuple[int, str]:
    """``(line, byte as 0x..)`` of the first byte of ``path`` that is not UTF-8, read in blocks."""
    decoder, line = codecs.getincrementaldecoder("utf-8")(), 1
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            pending = decoder.getstate()[0]
            try:
                text = decoder.decode(block)
            except UnicodeDecodeError as error:
                data = pending + block
                return line + data[:error.start].count(b"\n"), f"0x{data[error.start]:02x}"
            line += text.count("\n")
    return line, "?"  # pragma: no cover - pandas found a byte that a second reading does not


def _check_csv_layout(path: Path) -> None:
    """Refuse a binary file named like CSV, a line above the header and data lines one field longer than it."""
    if pd.io.common.infer_compression(str(path), "infer") is not None:
        return  # pandas decompresses it by its suffix
    with open(path, "rb") as handle:
        head = handle.read(8)
    for magic, kind, suffix in _MAGIC_BYTES:
        if head.startswith(magic):
            fix = (NOT_TEXT_FIX_PARQUET.format(stem=path.stem) if suffix is None
                   else NOT_TEXT_FIX_COMPRESSED.format(name=path.name, suffix=suffix))
            raise InputError(NOT_TEXT_MESSAGE.format(path=path, kind=kind, fix=fix))
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(itertools.islice(csv.reader(handle), 2))
    except UnicodeDecodeError:
        line, byte = _first_non_utf8(path)
        raise InputError(NOT_UTF8_MESSAGE.format(path=path, line=line, byte=byte)) from None
    except csv.Error:
        return  # pandas reports it
    if len(rows) < 2 or not rows[0] or len(rows[1]) <= len(rows[0]):
        return
    if len(rows[1]) == len(rows[0]) + 1 and rows[1][-1] == "" and len(rows[0]) > 1:
        raise InputError(TRAILING_COMMA_MESSAGE.format(path=path))
    raise InputError(PREAMBLE_MESSAGE.format(path=path, first=len(rows[0]), second=len(rows[1])))


def read_header(path) -> dict:
    """``{column: None, or the Arrow type of a Parquet column that holds lists, structs or maps}``.

    Refuses a missing file and a header that names a column twice.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError((NOT_REGULAR_FILE_MESSAGE if path.exists() else NO_SUCH_FILE_MESSAGE).format(path=path))
    with _reading(path):
        if _is_parquet(path):
            import pyarrow as pa
            import pyarrow.parquet as pq

            arrow = pq.ParquetFile(path).schema_arrow
            names = [str(name) for name in arrow.names]
            nested = {str(f.name): str(f.type) for f in arrow if pa.types.is_nested(f.type)}
        else:
            _check_csv_layout(path)
            raw = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
            names = [str(name) for name in pd.read_csv(path, nrows=0).columns]
            nested = {}
    # pandas renames a repeated CSV column 'a' to 'a.1' (and empty names to 'Unnamed: N'): look at the raw header.
    written = [name for name in (names if _is_parquet(path) else raw) if name != ""]
    duplicated = sorted({name for name in written if written.count(name) > 1})
    if duplicated:
        raise InputError(DUPLICATED_COLUMN_MESSAGE.format(path=path, column=duplicated[0]))
    return {name: nested.get(name) for name in names}


def _check_flat(path: Path, header: dict, columns, fix: str) -> None:
    for column in columns:
        if header.get(column):
            raise InputError(NESTED_COLUMN_MESSAGE.format(path=path, column=column, arrow_type=header[column],
                                                          fix=fix.format(column=column)))


def _check_rows(path: Path, n_rows: int) -> None:
    if n_rows == 0:
        raise InputError(NO_ROWS_MESSAGE.format(path=path))


def read_table(path, *, skip=()) -> pd.DataFrame:
    """The whole file as a DataFrame with at least one row; columns in ``skip`` are not read."""
    path = Path(path)
    header = read_header(path)
    for column in skip:
        if column not in header:
            raise InputError(DROPPED_MISSING_MESSAGE.format(path=path, column=column, columns=", ".join(header)))
    columns = [c for c in header if c not in set(skip)]
    _check_flat(path, header, columns, NESTED_FIX_DROP)
    with _reading(path):
        if _is_parquet(path):
            frame = pd.read_parquet(path, columns=columns)
        else:  # every column: with usecols pandas would silently accept a row with too many fields
            frame = pd.read_csv(path)[columns]
    frame.columns = [str(c) for c in frame.columns]
    last = frame.columns[-1] if len(frame.columns) > 1 else None
    if not _is_parquet(path) and last is not None and _INDEX_NAME.fullmatch(last) and frame[last].isna().all():
        frame = frame.drop(columns=last)  # every line ends in a comma: an unnamed, empty last column is no column
    _check_rows(path, len(frame))
    return frame


def iter_table(path, columns, chunk_rows: int | None = None):
    """Yield ``(first_row, chunk)``: the file's ``columns``, ``chunk_rows`` rows at a time (default :data:`CHUNK_ROWS`).

    ``first_row`` is the 0-based data row of the chunk's first row (for error messages). A
    missing column is refused by name before anything is yielded, as is an empty file.
    """
    path = Path(path)
    header = read_header(path)
    columns = list(dict.fromkeys(columns))
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(FILE_COLUMN_MISSING_MESSAGE.format(path=path, column=missing[0], columns=", ".join(header)))
    _check_flat(path, header, columns, NESTED_FIX_MODEL)
    chunk_rows = chunk_rows or CHUNK_ROWS
    offset = 0
    with _reading(path):
        if _is_parquet(path):
            import pyarrow.parquet as pq

            batches = (batch.to_pandas() for batch in pq.ParquetFile(path).iter_batches(chunk_rows, columns=columns))
        else:
            batches = pd.read_csv(path, chunksize=chunk_rows)  # no usecols: see read_table
        for chunk in batches:
            if len(chunk) == 0:  # a header-only CSV, an empty Parquet row group
                continue
            chunk.columns = [str(c) for c in chunk.columns]
            yield offset, chunk[columns]
            offset += len(chunk)
    _check_rows(path, offset)


def _first_row(mask, offset: int = 0) -> int:
    """1-based data row of the first True (row 1 is the line after the header)."""
    return offset + int(np.flatnonzero(np.asarray(mask))[0]) + 1


def _numeric_column(frame: pd.DataFrame, column: str, path, offset: int = 0) -> np.ndarray:
    """The column as float64, or an error naming the first cell that is text, empty or infinite."""
    values = frame[column]
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(float)
    parsed = pd.to_numeric(values, errors="coerce")
    text = parsed.isna() & values.notna()
    if text.any():
        row = _first_row(text)
        raise InputError(NUMERIC_TEXT_MESSAGE.format(path=path, column=column, row=row + offset,
                                                     value=show(values.iloc[row - 1])))
    parsed = parsed.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(parsed)
    if bad.any():
        raise InputError(NONFINITE_CELLS_MESSAGE.format(path=path, column=column, count=int(bad.sum()),
                                                        row=_first_row(bad, offset)))
    return parsed


def _category_text(value) -> str:
    # 3 and 3.0 are one category: an integer column turns float in a file where it has an empty cell.
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def categorical_column(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column as text (object array), empty cells as :data:`MISSING_CATEGORY`."""
    values = frame[column]
    return np.array([MISSING_CATEGORY if pd.isna(v) else _category_text(v) for v in values], dtype=object)


def group_column(frame: pd.DataFrame, column: str, path, role: str, offset: int = 0) -> np.ndarray:
    """A column of group labels (``fit --groups``, a constraint's ``by``) as text: every row needs one.

    ``role`` names what the column is for in the errors, e.g. ``"--groups"``; ``offset``: the data rows before ``frame``.
    """
    if column not in frame.columns:
        raise InputError(GROUPS_MISSING_MESSAGE.format(path=path, column=column, role=role,
                                                       columns=", ".join(map(str, frame.columns))))
    empty = frame[column].isna().to_numpy()
    if empty.any():
        raise InputError(GROUPS_EMPTY_MESSAGE.format(path=path, column=column, role=role, count=int(empty.sum()),
                                                     row=_first_row(empty, offset)))
    return categorical_column(frame, column)


def is_categorical(series: pd.Series) -> bool:
    """Text columns are categorical unless most of their cells are numbers (then a stray text cell is an error)."""
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    present = series.notna()
    numbers = pd.to_numeric(series, errors="coerce").notna() & present
    return bool(numbers.sum() * 2 < present.sum())


def feature_columns(schema: dict) -> list:
    """The columns a schema reads, in the encoder's order: numeric, categorical, then text (older files have none)."""
    return schema["numeric"] + schema["categorical"] + schema.get("text", [])


def features(frame: pd.DataFrame, schema: dict, path, offset: int = 0) -> pd.DataFrame:
    """The feature columns of ``frame``, typed as ``schema`` says, or an error naming the column."""
    columns = feature_columns(schema)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(FEATURE_MISSING_MESSAGE.format(path=path, column=missing[0], columns=", ".join(columns)))
    data = {c: _numeric_column(frame, c, path, offset) for c in schema["numeric"]}
    data.update({c: categorical_column(frame, c) for c in schema["categorical"]})
    data.update({c: np.array(["" if pd.isna(v) else str(v) for v in frame[c]], dtype=object)  # empty cells: no words
                 for c in schema.get("text", [])})
    return pd.DataFrame(data, columns=columns)


def labels(frame: pd.DataFrame, label: str, path, positive=None):
    """``(y in {0, 1}, [negative, positive])``; the positive class is ``positive`` or the larger label."""
    if label not in frame.columns:
        raise InputError(LABEL_MISSING_MESSAGE.format(path=path, column=label, columns=", ".join(frame.columns)))
    values = frame[label]
    if values.isna().any():
        raise InputError(LABEL_EMPTY_MESSAGE.format(path=path, column=label, count=int(values.isna().sum()),
                                                    row=_first_row(values.isna())))
    classes = sorted(pd.unique(values).tolist(), key=lambda v: (str(type(v)), v))
    if len(classes) != 2:
        shown = ", ".join(show(c) for c in classes[:5])
        raise InputError(CLASS_COUNT_MESSAGE.format(path=path, column=label, count=len(classes),
                                                    classes_word="classes" if len(classes) != 1 else "class",
                                                    shown=shown + (", ..." if len(classes) > 5 else "")))
    if positive is not None:
        if not any(str(c) == str(positive) for c in classes):
            raise InputError(NO_POSITIVE_CLASS_MESSAGE.format(path=path, column=label, positive=show(positive),
                                                              first=show(classes[0]), second=show(classes[1])))
        if str(classes[0]) == str(positive):
            classes = classes[::-1]
    return (values == classes[1]).to_numpy().astype(np.int64), classes


def schema_of(frame: pd.DataFrame, label: str, drop, categorical, path, text=()) -> dict:
    """``{"numeric": [...], "categorical": [...]}`` (and ``"text": [...]`` with ``text``): the feature columns
    and how each is encoded."""
    for column in categorical:
        if column not in frame.columns or column in drop:
            raise InputError(CATEGORICAL_MISSING_MESSAGE.format(
                path=path, column=column, also_dropped=CATEGORICAL_ALSO_DROPPED if column in drop else ""))
    for column in text:
        flag = "--drop" if column in drop else "--categorical" if column in categorical else None
        if column not in frame.columns or flag is not None:
            raise InputError(TEXT_MISSING_MESSAGE.format(
                path=path, column=column, also="" if flag is None else TEXT_ALSO_NAMED.format(flag=flag)))
    columns = [c for c in frame.columns if c != label and c not in drop and c not in text]
    if not columns and not text:
        raise InputError(NO_FEATURES_MESSAGE.format(path=path, label=label))
    cats = [c for c in columns if c in categorical or is_categorical(frame[c])]
    schema = {"numeric": [c for c in columns if c not in cats], "categorical": cats}
    return {**schema, "text": list(text)} if text else schema


_INDEX_NAME = re.compile(r"Unnamed: \d+")
MIN_ROWS_FOR_IDENTIFIER = 10


def column_warnings(frame: pd.DataFrame, schema: dict, path) -> list[str]:
    """Feature columns that are probably mistakes: a saved pandas index, or a text identifier."""
    found = []
    for column in feature_columns(schema):
        if _INDEX_NAME.fullmatch(column):
            found.append(INDEX_COLUMN_WARNING.format(path=path, column=column))
    for column in schema["categorical"]:
        values = frame[column]
        if len(values) >= MIN_ROWS_FOR_IDENTIFIER and values.nunique(dropna=False) == len(values):
            found.append(IDENTIFIER_COLUMN_WARNING.format(path=path, column=column))
    return found
