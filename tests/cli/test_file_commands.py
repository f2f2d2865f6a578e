"""`quantile-surrogate fit | predict | evaluate` on small files, through cli.main in this process.

Every bad input ends in exit status 1 (bad data) or 2 (bad option), one line on stderr without a
traceback, and no file created, changed or left behind. Output paths: test_cli_outputs.py; the
command in a real subprocess: test_cli_process.py.
"""

import io

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate import __version__, cli
from quantile_surrogate.cli import _file_io
from quantile_surrogate.cli import _file_commands as file_commands
from quantile_surrogate.cli.model_file import load_model

from tests._cli import FIT, assert_one_line_error, make_frame, run, snapshot


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "data.csv"
    make_frame().to_csv(path, index=False)
    return path


def assert_refused(tmp_path, capsys, argv, code, *fragments):
    before = snapshot(tmp_path)
    got, out, err = run(argv, capsys)
    assert got == code, err
    assert out == ""
    assert_one_line_error(err, *fragments)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------- bad data: exit 1

def test_missing_label_column(tmp_path, csv, capsys):
    assert_refused(tmp_path, capsys, [*FIT[:2], "target", *FIT[3:], csv, "--out", tmp_path / "m.qs"], 1,
                   str(csv), "column 'target'", "missing")


@pytest.mark.parametrize("content, fragments", [
    ("x,y\n1.0,1\n2.0,1\n3.0,1\n", ["column 'y'", "1 class", "exactly two"]),
    ("x,y\n1,a\n2,b\n3,c\n4,a\n", ["column 'y'", "3 classes"]),
    ("x,y\n1,0\n2,\n3,1\n", ["column 'y'", "1 empty cells", "data row 2"]),
    ("", ["the file is empty"]),
    ("x,y\n", ["no data rows"]),
    ("x,z,y\n1.5,a,0\n2.5,b,1\noops,a,0\n3.0,b,1\n", ["column 'x'", "data row 3", "'oops'", "--categorical x"]),
    ("x,y\n1.5,0\n,1\n3.0,1\n", ["column 'x'", "1 empty or infinite cells", "data row 2"]),
    ("x,y\n1.5,0\ninf,1\n3.0,1\n", ["column 'x'", "1 empty or infinite cells", "data row 2"]),
    ("x,x,y\n1,2,0\n3,4,1\n", ["column 'x' more than once"]),
    ("a,b,a,y\n1,2,3,0\n3,4,5,1\n", ["column 'a' more than once"]),
    ("x,y\n1,0\n2,1,7,8\n", ["cannot be read as CSV", "Expected 2 fields"]),
    ("x,y\n1,0\n2,1\n", ["--drop", "'nope'"]),
])
def test_bad_training_files(tmp_path, capsys, content, fragments):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    extra = ["--drop", "nope"] if "--drop" in fragments else []
    assert_refused(tmp_path, capsys, ["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs",
                                      *extra], 1, str(path), *fragments)


def test_missing_file_folder_and_unreadable_parquet(tmp_path, capsys):
    assert_refused(tmp_path, capsys, ["fit", tmp_path / "nope.csv", "--label", "y", "--target", "0.9"], 1,
                   "nope.csv", "no such file")
    assert_refused(tmp_path, capsys, ["fit", tmp_path, "--label", "y", "--target", "0.9"], 1, "not a regular file")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    assert_refused(tmp_path, capsys, ["fit", bad, "--label", "y", "--target", "0.9"], 1, "bad.parquet",
                   "cannot be read as Parquet")


def test_parquet_with_a_list_column_or_duplicated_names(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = make_frame(40)
    frame["tags"] = [[1, 2]] * 40
    frame.to_parquet(tmp_path / "lists.parquet")
    assert_refused(tmp_path, capsys, [*FIT, tmp_path / "lists.parquet", "--out", tmp_path / "m.qs"], 1,
                   "column 'tags' holds lists or records", "list<", "--drop tags")
    table = pa.table({"a": [1.0, 2.0], "b": [3.0, 4.0], "y": [0, 1]}).rename_columns(["a", "a", "y"])
    pq.write_table(table, tmp_path / "dup.parquet")
    assert_refused(tmp_path, capsys, ["fit", tmp_path / "dup.parquet", "--label", "y", "--target", "0.9"], 1,
                   "column 'a' more than once")
    code, _, err = run([*FIT, tmp_path / "lists.parquet", "--drop", "id", "tags", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err  # dropped, the list column is fine


def test_fit_with_too_few_rows_for_the_guarantee(tmp_path, csv, capsys):
    assert_refused(tmp_path, capsys, [*FIT, csv, "--target", "0.99", "--delta", "0.01", "--out", tmp_path / "h.qs"],
                   1, str(csv), "needs at least 459 held-out positive rows")


def test_numbers_are_shown_as_the_user_wrote_them(tmp_path, capsys):
    frame = make_frame(60).assign(y=lambda f: (f.y == "yes").astype(int))
    frame.to_csv(tmp_path / "ints.csv", index=False)
    assert_refused(tmp_path, capsys, [*FIT, tmp_path / "ints.csv", "--positive", "5"], 1,
                   "has no class '5' (--positive); its classes are 0 and 1.")
    code, _, err = run([*FIT, tmp_path / "ints.csv", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    frame.assign(y=np.where(frame.index == 7, 2, frame.y)).to_csv(tmp_path / "test.csv", index=False)
    argv = ["evaluate", tmp_path / "m.qs", tmp_path / "test.csv", "--out-dir", tmp_path / "r"]
    assert_refused(tmp_path, capsys, argv, 1, "column 'y' holds 2 at data row 8; the model knows only 0 and 1.")


def test_bad_model_files(tmp_path, csv, capsys):
    junk = tmp_path / "junk.qs"
    junk.write_bytes(b"\x80\x04 something else")
    assert_refused(tmp_path, capsys, ["predict", junk, csv], 1, "junk.qs", "not a quantile-surrogate model file")
    assert_refused(tmp_path, capsys, ["evaluate", csv, csv, "--out-dir", tmp_path / "r"], 1,
                   "not a quantile-surrogate model file")
    assert_refused(tmp_path, capsys, ["predict", tmp_path / "none.qs", csv], 1, "none.qs: no such model file")


# ---------------------------------------------------------------------------- bad options: exit 2

@pytest.mark.parametrize("argv, fragments", [
    (["--target", "1.5"], ["--target", "strictly between 0 and 1", "got '1.5'"]),
    (["--target", "0"], ["--target", "strictly between 0 and 1"]),
    (["--target", "1"], ["--target", "strictly between 0 and 1"]),
    (["--target", "-0.2"], ["--target", "strictly between 0 and 1"]),
    (["--target", "nan"], ["--target", "strictly between 0 and 1"]),
    (["--target", "0.9", "--delta", "0"], ["--delta", "strictly between 0 and 1"]),
    (["--target", "0.9", "--delta", "0.1", "--calibration-size", "1.5"], ["--calibration-size"]),
    (["--target", "0.9", "--max-epochs", "0"], ["--max-epochs", "integer >= 1", "got '0'"]),
    (["--target", "0.9", "--model", "mlp", "--hidden-layer-sizes", "8,0"], ["--hidden-layer-sizes"]),
    (["--target", "0.9", "--model", "mlp", "--hidden-layer-sizes", "a"], ["--hidden-layer-sizes"]),
    (["--target", "0.9", "--objective", "accuracy"], ["--objective", "invalid choice"]),
])
def test_bad_fit_options(tmp_path, csv, capsys, argv, fragments):
    assert_refused(tmp_path, capsys, ["fit", csv, "--label", "y", *argv, "--out", tmp_path / "m.qs"], 2,
                   "quantile-surrogate fit: error: argument", *fragments, "--help")


@pytest.mark.parametrize("argv, fragment", [
    (["--hidden-layer-sizes", "8"], "--hidden-layer-sizes needs --model mlp"),
    (["--n-estimators", "8"], "--n-estimators needs --model lightgbm or xgboost"),
    (["--model", "lightgbm", "--checkpoint", "c.ckpt"], "--checkpoint needs --model linear or mlp"),
    (["--model", "xgboost", "--max-epochs", "3"], "--max-epochs needs --model linear or mlp"),
])
def test_options_for_another_model(tmp_path, csv, capsys, argv, fragment):
    base = [a for a in FIT if a not in ("--max-epochs", "3")]
    assert_refused(tmp_path, capsys, [*base, csv, *argv, "--out", tmp_path / "m.qs"], 1, fragment)


@pytest.mark.parametrize("backend", ["lightgbm"])  # xgboost's file round trip: test_model_file.py
def test_boosted_models(tmp_path, csv, capsys, backend):
    base = [a for a in FIT if a not in ("--max-epochs", "3")]
    code, out, err = run([*base, csv, "--model", backend, "--n-estimators", "10", "--out", tmp_path / "b.qs"], capsys)
    assert code == 0 and out == "", err
    saved = load_model(tmp_path / "b.qs")
    assert saved.model.named_steps["classifier"].backend_ == backend and saved.model_kind == backend
    code, out, err = run(["predict", tmp_path / "b.qs", csv], capsys)
    assert code == 0 and len(out.splitlines()) == 401, err


@pytest.mark.parametrize("argv, fragments", [
    (["evaluate", "m.qs", "d.csv", "--bootstrap", "0"], ["--bootstrap", "integer >= 1", "got '0'"]),
    (["evaluate", "m.qs", "d.csv", "--bootstrap", "-3"], ["--bootstrap", "integer >= 1"]),
    (["reproduce", "ionosphere", "--splits", "0"], ["--splits", "integer >= 1"]),
    (["reproduce", "ionosphere", "--folds", "1"], ["--folds", "integer >= 2"]),
    (["reproduce", "ionosphere", "--jobs", "0"], ["--jobs", "-1 for all cores"]),
    (["reproduce", "ionosphere", "--jobs", "-3"], ["--jobs"]),
    (["reproduce", "nowhere"], ["invalid choice"]),
    (["predict"], ["required"]),
    ([], ["required: COMMAND"]),
])
def test_bad_options_of_every_command(tmp_path, capsys, monkeypatch, argv, fragments):
    monkeypatch.chdir(tmp_path)
    assert_refused(tmp_path, capsys, argv, 2, *fragments)


def test_version_and_help_text_for_every_option(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"quantile-surrogate {__version__}"
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert set(commands) == {"fit", "predict", "evaluate", "reproduce"}
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"
        code, out, _ = run([name, "--help"], capsys)
        assert code == 0 and "usage: quantile-surrogate " + name in out


# ---------------------------------------------------------------------------- warnings that are not errors

def test_warnings_for_a_saved_index_and_an_identifier(tmp_path, capsys):
    frame = make_frame(60).assign(name=lambda f: [f"user{i}" for i in range(len(f))])
    frame.to_csv(tmp_path / "indexed.csv")  # index=True: an unnamed first column
    code, _, err = run([*FIT, tmp_path / "indexed.csv", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 2 and "Traceback" not in err
    assert "column 'Unnamed: 0'" in lines[0] and "saved pandas index" in lines[0] and "--drop 'Unnamed: 0'" in lines[0]
    assert "column 'name' is text with a different value in every row" in lines[1] and "--drop name" in lines[1]


def test_python_warnings_are_one_line_each(tmp_path, csv, capsys, monkeypatch):
    import warnings

    def warn_then_fail(path):
        warnings.warn("first line\n  second line", UserWarning, stacklevel=1)
        raise _file_io.InputError(f"{path}: stop here.")

    monkeypatch.setattr(file_commands, "load_model", warn_then_fail)
    code, _, err = run(["predict", "m.qs", csv], capsys)
    assert code == 1
    assert err.splitlines() == ["quantile-surrogate predict: warning: first line second line",
                                "quantile-surrogate predict: error: m.qs: stop here."]


# ---------------------------------------------------------------------------- the happy path

@pytest.fixture
def fitted(tmp_path, csv, capsys):
    model = tmp_path / "model.qs"
    code, _, err = run(["fit", csv, "--label", "y", "--target", "0.9", "--max-epochs", "3", "--drop", "id",
                        "--out", model], capsys)
    assert code == 0, err
    return model, err


def test_fit_reports_one_hot_encoding_and_saves_everything(fitted, csv):
    model, err = fitted
    assert "one-hot encoding the categorical columns colour (3 values)" in err
    assert "class 'yes'" in err and "warning" not in err
    saved = load_model(model)
    assert saved.version == __version__ and saved.n_rows == 400 and saved.trained_on == str(csv)
    assert saved.schema == {"numeric": ["x1", "x2"], "categorical": ["colour"]}
    assert saved.classes == ["no", "yes"]
    # the training constraint holds on the training file: the threshold is its empirical quantile
    frame = pd.read_csv(csv)
    flagged = saved.decision_function(_file_io.features(frame, saved.schema, csv)) > 0
    assert flagged[frame.y == "yes"].mean() >= 0.9


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
                   "column 'x1'", "data row 123", "'oops'")


def test_predict_with_missing_columns(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    pd.read_csv(csv).drop(columns="x2").to_csv(tmp_path / "short.csv", index=False)
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "short.csv", "--out", tmp_path / "p.csv"], 1,
                   "short.csv", "column 'x2'", "missing")
    assert_refused(tmp_path, capsys, ["predict", model, csv, "--keep", "nope", "--out", tmp_path / "p.csv"], 1,
                   "column 'nope'", "missing")
    frame = pd.read_csv(csv)
    frame["x1"] = [[1.0]] * len(frame)
    frame.to_parquet(tmp_path / "lists.parquet")
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "lists.parquet"], 1,
                   "column 'x1' holds lists or records")
    (tmp_path / "header.csv").write_text("id,x1,x2,colour\n")
    assert_refused(tmp_path, capsys, ["predict", model, tmp_path / "header.csv", "--out", tmp_path / "p.csv"], 1,
                   "no data rows")


def test_a_row_the_model_cannot_score_is_an_error_not_a_nan(fitted, csv, tmp_path, capsys, monkeypatch):
    from quantile_surrogate.cli.model_file import SavedModel

    model, _ = fitted
    real = SavedModel.decision_function

    def overflowing(self, X):  # what inf - inf in the first layer gives for a row of 1e308 values
        score = real(self, X)
        score[X.x1.to_numpy() > 3] = np.nan
        return score

    monkeypatch.setattr(SavedModel, "decision_function", overflowing)
    frame = pd.read_csv(csv)
    row = int(np.flatnonzero(frame.x1.to_numpy() > 3)[0]) + 1
    assert_refused(tmp_path, capsys, ["predict", model, csv, "--out", tmp_path / "p.csv"], 1,
                   f"data row {row} gets no score (NaN)")
    assert_refused(tmp_path, capsys, ["evaluate", model, csv, "--out-dir", tmp_path / "r"], 1,
                   f"data row {row} gets no score (NaN)")


def test_evaluate_writes_report_and_plot(fitted, tmp_path, capsys):
    model, _ = fitted
    test = tmp_path / "test.csv"
    make_frame(300, seed=5).to_csv(test, index=False)
    out_dir = tmp_path / "eval"
    code, out, err = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert code == 0, err
    report = (out_dir / "test_report.md").read_text()
    assert report.strip() == out.strip()
    for name in ("precision at the deployed threshold", "recall at the deployed threshold",
                 "predicted positive rate at the deployed threshold", "precision at recall 0.9 (the objective)"):
        assert f"| {name} |" in report
    assert (out_dir / "test_pr_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the numbers are the exact metrics on the file, and the bootstrap is seeded
    saved = load_model(model)
    frame = pd.read_csv(test)
    score = saved.decision_function(_file_io.features(frame, saved.schema, test))
    recall = np.mean(score[(frame.y == "yes").to_numpy()] > 0)
    assert f"| recall at the deployed threshold | {recall:.4f} |" in report
    code, again, _ = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert again == out
    assert sorted(p.name for p in out_dir.iterdir()) == ["test_pr_curve.png", "test_report.md"]


def test_fit_with_a_guarantee_and_the_mlp(csv, tmp_path, capsys):
    code, _, err = run([*FIT, csv, "--model", "mlp", "--hidden-layer-sizes", "8", "--delta", "0.1",
                        "--out", tmp_path / "g.qs"], capsys)
    assert code == 0, err
    saved = load_model(tmp_path / "g.qs")
    assert saved.model.constraint == "recall" and saved.model.n_calibration_ >= 30
    assert saved.model.estimator_.named_steps["classifier"].hidden_layer_sizes == (8,)


def test_checkpoint_is_passed_to_the_classifier(csv, tmp_path, capsys):
    checkpoint = tmp_path / "fit.ckpt"
    argv = [*FIT, csv, "--checkpoint", checkpoint, "--out", tmp_path / "a.qs"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert checkpoint.is_file()
    saved = load_model(tmp_path / "a.qs")
    assert saved.model.named_steps["classifier"].checkpoint == str(checkpoint)
    code, _, err = run(argv[:-1] + [tmp_path / "b.qs"], capsys)  # resumes from the finished state: same model
    assert code == 0, err
    np.testing.assert_array_equal(
        load_model(tmp_path / "b.qs").decision_function(_file_io.features(pd.read_csv(csv), saved.schema, csv)),
        saved.decision_function(_file_io.features(pd.read_csv(csv), saved.schema, csv)))


def test_interrupt_exits_130_with_one_line(tmp_path, csv, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(file_commands, "read_table", interrupted)
    assert_refused(tmp_path, capsys, [*FIT, csv, "--out", tmp_path / "m.qs"], 130, "interrupted (Ctrl-C)")
