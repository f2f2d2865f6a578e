"""quantile_surrogate.cli._file_io: the header, chunked reading, and how columns are typed."""

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.cli import _file_io
from quantile_surrogate.cli._file_io import InputError, iter_table, read_header, read_table


def test_categorical_inference():
    frame = pd.DataFrame({"n": [1, 2, 3, 4], "t": ["a", "b", "a", "c"], "mostly_numbers": ["1", "2", "x", "4"],
                          "mostly_text": ["a", "b", "7", "c"]})
    assert not _file_io.is_categorical(frame["n"])
    assert _file_io.is_categorical(frame["t"])
    assert not _file_io.is_categorical(frame["mostly_numbers"])  # so "x" is reported as an error
    assert _file_io.is_categorical(frame["mostly_text"])
    assert list(_file_io.categorical_column(pd.DataFrame({"c": [3.0, np.nan, 2.5]}), "c")) == \
        ["3", _file_io.MISSING_CATEGORY, "2.5"]


def test_the_header_as_written_not_as_pandas_renames_it(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(",a,b\n0,1,2\n")
    assert read_header(path) == {"Unnamed: 0": None, "a": None, "b": None}
    path.write_text("a,b,a\n1,2,3\n")  # pandas reads this as a, b, a.1
    with pytest.raises(InputError, match="names column 'a' more than once"):
        read_header(path)
    path.write_text("a,a.1\n1,2\n")  # a real column called a.1 is fine
    assert list(read_header(path)) == ["a", "a.1"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 50, 1000])
def test_chunks_cover_the_file_in_order(tmp_path, suffix, chunk_rows):
    frame = pd.DataFrame({"a": np.arange(50) * 0.5, "b": [f"t{i}" for i in range(50)], "c": np.arange(50)})
    path = tmp_path / f"d{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path, row_group_size=13)
    offsets, parts = zip(*iter_table(path, ["c", "a"], chunk_rows=chunk_rows))
    assert all(len(part) <= chunk_rows and list(part.columns) == ["c", "a"] for part in parts)
    assert list(offsets) == list(np.cumsum([0] + [len(p) for p in parts[:-1]]))
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), frame[["c", "a"]])
    pd.testing.assert_frame_equal(read_table(path, skip=["b"]), frame[["a", "c"]])


def test_a_row_with_too_many_fields_is_an_error_not_dropped(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("x,y\n1,0\n2,1,7,8\n")
    with pytest.raises(InputError, match="cannot be read as CSV .*Expected 2 fields in line 3"):
        list(iter_table(path, ["x"]))
    with pytest.raises(InputError, match="cannot be read as CSV"):
        read_table(path, skip=["y"])


def test_show_prints_numbers_as_written():
    assert _file_io.show(np.int64(2)) == "2" and _file_io.show(np.float64(0.5)) == "0.5"
    assert _file_io.show("a") == "'a'" and _file_io.show(np.str_("a")) == "'a'"


def test_column_warnings_need_enough_rows():
    frame = pd.DataFrame({"name": ["a", "b", "c"], "x": [1.0, 2.0, 3.0]})
    assert _file_io.column_warnings(frame, {"numeric": ["x"], "categorical": ["name"]}, "f.csv") == []
    big = pd.DataFrame({"name": [f"n{i}" for i in range(10)], "kind": ["a", "b"] * 5})
    found = _file_io.column_warnings(big, {"numeric": [], "categorical": ["name", "kind"]}, "f.csv")
    assert len(found) == 1 and "column 'name'" in found[0]
