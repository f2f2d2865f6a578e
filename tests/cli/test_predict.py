"""`quantile-surrogate predict` (cli/_predict.py) on small files, through cli.main.

Every bad input ends in exit status 1 (bad data) or 2 (bad option), one line on stderr without a
traceback, and no file created, changed or left behind. Output paths: tests/cross/test_cli_outputs.py.
"""

import io

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.cli import _args, _file_io, _predict, _scoring, model_file

from tests._cli import make_frame, run
from tests._messages import text
from tests.cli.conftest import assert_refused


def test_bad_model_files(tmp_path, csv, capsys):
    junk = tmp_path / "junk.qs"
    junk.write_bytes(b"\x80\x04 something else")
    assert_refused(tmp_path, capsys, ["predict", junk, csv], 1, model_file.NOT_A_MODEL_FILE_MESSAGE.format(path=junk))
    assert_refused(tmp_path, capsys, ["evaluate", csv, csv, "--out-dir", tmp_path / "r"], 1,
                   model_file.NOT_A_MODEL_FILE_MESSAGE.format(path=csv))
    assert_refused(tmp_path, capsys, ["predict", tmp_path / "none.qs", csv], 1,
                   model_file.NO_MODEL_FILE_MESSAGE.format(path=tmp_path / "none.qs"))


def test_predict_writes_one_row_per_input_row(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    code, out, err = run(["predict", model, csv, "--keep", "id"], capsys)
    assert code == 0, err
    predictions = pd.read_csv(io.StringIO(out))
    assert list(predictions.columns) == ["id", "prediction", "score"]
    assert len(predictions) == 400 and (predictions.id == np.arange(400)).all()
    assert ((predictions.score > 0) == (predictions.prediction == "yes")).all()
    # unseen category and label column absent: still fine; from Parquet to a file, the same numbers
    new = pd.read_csv(csv).drop(columns="y")
    new.loc[0, "colour"] = "purple"
    new.to_parquet(tmp_path / "new.parquet")
    code, _, err = run(["predict", model, tmp_path / "new.parquet", "--out", tmp_path / "p.csv"], capsys)
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_array_equal(written.score[1:], predictions.score[1:])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_in_chunks_gives_the_same_file(fitted, csv, tmp_path, capsys, monkeypatch, suffix):
    model, _ = fitted
    data = tmp_path / f"in{suffix}"
    frame = pd.read_csv(csv)
    frame.to_csv(data, index=False) if suffix == ".csv" else frame.to_parquet(data)
    code, whole, _ = run(["predict", model, data, "--keep", "id", "y"], capsys)
    monkeypatch.setattr(_file_io, "CHUNK_ROWS", 37)  # 11 chunks, the last one short
    code, chunked, err = run(["predict", model, data, "--keep", "id", "y"], capsys)
    assert code == 0, err
    whole, chunked = pd.read_csv(io.StringIO(whole)), pd.read_csv(io.StringIO(chunked))
    assert len(chunked) == 400 and chunked.columns.tolist() == ["id", "y", "prediction", "score"]
    pd.testing.assert_frame_equal(chunked.drop(columns="score"), whole.drop(columns="score"))
    # the matrix product of a chunk may round differently from the whole file's (BLAS blocking)
    np.testing.assert_allclose(chunked.score, whole.score, rtol=1e-13, atol=1e-13)
    # an error in a later chunk names the row in the file, not in the chunk
    frame["x1"] = frame.x1.astype(object)
    frame.loc[122, "x1"] = "oops"
    frame.to_csv(tmp_path / "late.csv", index=False)
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "late.csv", "--out", tmp_path / "p.csv"], 1,
                   _file_io.NUMERIC_TEXT_MESSAGE.format(path=tmp_path / "late.csv", column="x1", row=123,
                                                        value="'oops'"))


def test_predict_with_missing_columns(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    pd.read_csv(csv).drop(columns="x2").to_csv(tmp_path / "short.csv", index=False)
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "short.csv", "--out", tmp_path / "p.csv"], 1,
                   _file_io.FILE_COLUMN_MISSING_MESSAGE.format(path=tmp_path / "short.csv", column="x2",
                                                               columns="id, x1, colour, y"))
    assert_refused(tmp_path, capsys, ["predict", model, csv, "--keep", "nope", "--out", tmp_path / "p.csv"], 1,
                   _file_io.FILE_COLUMN_MISSING_MESSAGE.format(path=csv, column="nope",
                                                               columns="id, x1, x2, colour, y"))
    frame = pd.read_csv(csv)
    frame["x1"] = [[1.0]] * len(frame)
    frame.to_parquet(tmp_path / "lists.parquet")
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "lists.parquet"], 1,
                   text(_file_io.NESTED_COLUMN_MESSAGE, path=tmp_path / "lists.parquet", column="x1"),
                   "; " + _file_io.NESTED_FIX_MODEL + ".")  # between them the Arrow type, as pyarrow names it
    (tmp_path / "header.csv").write_text("id,x1,x2,colour\n")
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "header.csv", "--out", tmp_path / "p.csv"], 1,
                   _file_io.NO_ROWS_MESSAGE.format(path=tmp_path / "header.csv"))


@pytest.mark.parametrize("keep, message", [
    (["id", "prediction"], _predict.KEEP_OUTPUT_COLUMN_MESSAGE.format(column="prediction")),
    (["score"], _predict.KEEP_OUTPUT_COLUMN_MESSAGE.format(column="score")),
    (["id", "x1", "id"], _predict.KEEP_TWICE_MESSAGE.format(column="id")),
])
def test_keep_refuses_an_output_column_or_a_column_named_twice_exit_2(fitted, tmp_path, capsys, keep, message):
    model, _ = fitted
    make_frame(30, seed=3).assign(prediction="theirs", score=1.0).to_csv(tmp_path / "own.csv", index=False)
    line = _args.USAGE_ERROR_LINE.format(prog="quantile-surrogate predict",
                                         message=_args.OPTION_CONFLICT_LINE.format(flag="--keep", message=message))
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "own.csv", "--keep", *keep,
                                      "--out", tmp_path / "p.csv"], 2, line.strip())


def test_unseen_categories_are_scored_as_zeros_with_one_warning_per_column(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    frame = pd.read_csv(csv)
    code, expected, _ = run(["predict", model, csv], capsys)
    assert code == 0
    shifted = frame.assign(colour=frame.colour.where(frame.index % 4 != 1, frame.colour.str.upper()))
    shifted.to_csv(tmp_path / "shifted.csv", index=False)
    code, out, err = run(["predict", model, tmp_path / "shifted.csv"], capsys)
    assert code == 0
    assert err.splitlines() == [_args.WARNING_LINE.format(
        name="quantile-surrogate predict", text=_scoring.UNSEEN_CATEGORY_WARNING.format(
            path=tmp_path / "shifted.csv", column="colour", count=100, rows=400, value=repr(frame.colour[1].upper()),
            row=2))]
    got, before = pd.read_csv(io.StringIO(out)), pd.read_csv(io.StringIO(expected))
    assert got.score[frame.index % 4 != 1].equals(before.score[frame.index % 4 != 1])  # the other rows unchanged
    code, _, err = run(["evaluate", model, tmp_path / "shifted.csv", "--bootstrap", "5", "--out-dir",
                        tmp_path / "r"], capsys)
    assert code == 0
    assert err.splitlines()[0] == _args.WARNING_LINE.format(
        name="quantile-surrogate evaluate", text=_scoring.UNSEEN_CATEGORY_WARNING.format(
            path=tmp_path / "shifted.csv", column="colour", count=100, rows=400, value=repr(frame.colour[1].upper()),
            row=2))
