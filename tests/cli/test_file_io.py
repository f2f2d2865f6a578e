"""quantile_surrogate.cli._file_io: the header, chunked reading, and how columns are typed."""

import gzip
import io
import zipfile

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.cli import _file_io
from quantile_surrogate.cli._file_io import InputError, iter_table, read_header, read_table

from tests._messages import exact, prefix


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
    with pytest.raises(InputError, match=exact(_file_io.DUPLICATED_COLUMN_MESSAGE, path=path, column="a")):
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
    unreadable = prefix(_file_io.UNREADABLE_MESSAGE, path=path, kind="CSV")
    with pytest.raises(InputError, match=unreadable + ".*Expected 2 fields in line 3"):  # pandas' reason, kept
        list(iter_table(path, ["x"]))
    with pytest.raises(InputError, match=unreadable):
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


def test_schema_refuses_a_missing_categorical_column_and_a_file_without_features():
    frame = pd.DataFrame({"x": [1.0, 2.0], "c": ["u", "v"], "y": [0, 1]})
    assert _file_io.schema_of(frame, "y", [], [], "f.csv") == {"numeric": ["x"], "categorical": ["c"]}
    assert _file_io.schema_of(frame, "y", [], ["x"], "f.csv") == {"numeric": [], "categorical": ["x", "c"]}
    with pytest.raises(InputError, match=exact(_file_io.CATEGORICAL_MISSING_MESSAGE, path="f.csv", column="z",
                                               also_dropped="")):
        _file_io.schema_of(frame, "y", [], ["z"], "f.csv")
    with pytest.raises(InputError, match=exact(_file_io.CATEGORICAL_MISSING_MESSAGE, path="f.csv", column="c",
                                               also_dropped=_file_io.CATEGORICAL_ALSO_DROPPED)):
        _file_io.schema_of(frame, "y", ["c"], ["c"], "f.csv")
    with pytest.raises(InputError, match=exact(_file_io.NO_FEATURES_MESSAGE, path="f.csv", label="y")):
        _file_io.schema_of(frame, "y", ["x", "c"], [], "f.csv")


def test_labels_take_the_larger_class_as_positive_unless_told():
    frame = pd.DataFrame({"y": ["no", "yes", "yes"]})
    y, classes = _file_io.labels(frame, "y", "f.csv")
    assert y.tolist() == [0, 1, 1] and classes == ["no", "yes"]
    y, classes = _file_io.labels(frame, "y", "f.csv", positive="no")
    assert y.tolist() == [1, 0, 0] and classes == ["yes", "no"]
    many = pd.DataFrame({"y": list("abcdefg")})
    with pytest.raises(InputError, match=exact(_file_io.CLASS_COUNT_MESSAGE, path="f.csv", column="y", count=7,
                                               classes_word="classes", shown="'a', 'b', 'c', 'd', 'e', ...")):
        _file_io.labels(many, "y", "f.csv")


def _gzip(path):
    return gzip.compress(path.read_bytes())


def _zip(path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(path, "d.csv")
    return buffer.getvalue()


def _parquet(path):
    buffer = io.BytesIO()
    pd.read_csv(path).to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("make, kind, fix", [
    (_gzip, "gzip-compressed", _file_io.NOT_TEXT_FIX_COMPRESSED.format(name="data.csv", suffix=".gz")),
    (_zip, "zip", _file_io.NOT_TEXT_FIX_COMPRESSED.format(name="data.csv", suffix=".zip")),
    (_parquet, "Parquet", _file_io.NOT_TEXT_FIX_PARQUET.format(stem="data")),
])
def test_a_compressed_or_parquet_file_named_csv_is_named_as_such(tmp_path, make, kind, fix):
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_csv(plain, index=False)
    path = tmp_path / "data.csv"
    path.write_bytes(make(plain))
    for read in (read_header, read_table, lambda p: list(iter_table(p, ["a"]))):
        with pytest.raises(InputError, match=exact(_file_io.NOT_TEXT_MESSAGE, path=path, kind=kind, fix=fix)):
            read(path)
    if kind != "Parquet":  # the suggested name is read as compressed CSV
        renamed = tmp_path / f"data.csv{'.gz' if kind.startswith('gzip') else '.zip'}"
        path.rename(renamed)
        assert read_table(renamed).equals(read_table(plain))


def test_a_latin1_file_names_the_line_and_the_byte(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(("a,b,y\n" + "1,x,0\n" * 5 + "1,caf\xe9,0\n").encode("latin-1"))
    for read in (read_table, lambda p: list(iter_table(p, ["a"], chunk_rows=2))):
        with pytest.raises(InputError, match=exact(_file_io.NOT_UTF8_MESSAGE, path=path, line=7, byte="0xe9")):
            read(path)
    path.write_bytes("caf\xe9,y\n1,0\n".encode("latin-1"))  # in the header
    with pytest.raises(InputError, match=exact(_file_io.NOT_UTF8_MESSAGE, path=path, line=1, byte="0xe9")):
        read_header(path)


def test_a_line_above_the_header_is_named_not_read_as_the_header(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("exported by tool, 2024-01-01\na,b,c,y\n1,2,3,0\n")
    with pytest.raises(InputError, match=exact(_file_io.PREAMBLE_MESSAGE, path=path, first=2, second=4)):
        read_table(path)


def test_data_lines_with_a_trailing_comma_the_header_lacks_are_refused_not_shifted(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n1,2,0,\n3,4,1,\n")  # pandas would read 'a' as the index and shift b and y
    with pytest.raises(InputError, match=exact(_file_io.TRAILING_COMMA_MESSAGE, path=path)):
        read_table(path)


def test_every_line_ending_in_a_comma_reads_as_the_file_without_them(tmp_path):
    plain, commas = tmp_path / "plain.csv", tmp_path / "commas.csv"
    plain.write_text("a,b,y\n1,x,0\n3,z,1\n")
    commas.write_text("a,b,y,\n1,x,0,\n3,z,1,\n")
    assert read_table(commas).equals(read_table(plain))
