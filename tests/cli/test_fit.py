"""`quantile-surrogate fit` (cli/_fit.py) on small files, through cli.main in this process.

Every bad input ends in exit status 1 (bad data) or 2 (bad option), one line on stderr without a
traceback, and no file created, changed or left behind. Output paths: tests/cross/test_cli_outputs.py.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from quantile_surrogate import __version__, cli
from quantile_surrogate.cli import _args, _evaluate, _file_io, _fit
from quantile_surrogate.cli.model_file import load_model

from tests._cli import FIT, make_frame, run
from tests._messages import text
from tests.cli.conftest import assert_refused

M = _file_io  # the messages of the file's checks


def test_missing_label_column(tmp_path, csv, capsys):
    assert_refused(tmp_path, capsys, [*FIT[:2], "target", *FIT[3:], csv, "--out", tmp_path / "m.qs"], 1,
                   M.LABEL_MISSING_MESSAGE.format(path=csv, column="target", columns="x1, x2, colour, y"))  # id: --drop


@pytest.mark.parametrize("content, extra, message, fields", [
    ("x,y\n1.0,1\n2.0,1\n3.0,1\n", [], M.CLASS_COUNT_MESSAGE,
     dict(column="y", count=1, classes_word="class", shown="1")),
    ("x,y\n1,a\n2,b\n3,c\n4,a\n", [], M.CLASS_COUNT_MESSAGE,
     dict(column="y", count=3, classes_word="classes", shown="'a', 'b', 'c'")),
    ("x,y\n1,0\n2,\n3,1\n", [], M.LABEL_EMPTY_MESSAGE, dict(column="y", count=1, row=2)),
    ("", [], M.EMPTY_FILE_MESSAGE, {}),
    ("x,y\n", [], M.NO_ROWS_MESSAGE, {}),
    ("x,z,y\n1.5,a,0\n2.5,b,1\noops,a,0\n3.0,b,1\n", [], M.NUMERIC_TEXT_MESSAGE,
     dict(column="x", row=3, value="'oops'")),
    ("x,y\n1.5,0\n,1\n3.0,1\n", [], M.NONFINITE_CELLS_MESSAGE, dict(column="x", count=1, row=2)),
    ("x,y\n1.5,0\ninf,1\n3.0,1\n", [], M.NONFINITE_CELLS_MESSAGE, dict(column="x", count=1, row=2)),
    ("x,x,y\n1,2,0\n3,4,1\n", [], M.DUPLICATED_COLUMN_MESSAGE, dict(column="x")),
    ("a,b,a,y\n1,2,3,0\n3,4,5,1\n", [], M.DUPLICATED_COLUMN_MESSAGE, dict(column="a")),
    ("x,y\n1,0\n2,1\n", ["--drop", "nope"], M.DROPPED_MISSING_MESSAGE, dict(column="nope", columns="x, y")),
])
def test_bad_training_files(tmp_path, capsys, content, extra, message, fields):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert_refused(tmp_path, capsys, ["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs",
                                      *extra], 1, message.format(path=path, **fields))


def test_a_row_with_too_many_fields(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("x,y\n1,0\n2,1,7,8\n")
    assert_refused(tmp_path, capsys, ["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs"], 1,
                   text(M.UNREADABLE_MESSAGE, path=path, kind="CSV"), "Expected 2 fields")  # pandas' reason, kept


def test_missing_file_folder_and_unreadable_parquet(tmp_path, capsys):
    assert_refused(tmp_path, capsys, ["fit", tmp_path / "nope.csv", "--label", "y", "--target", "0.9"], 1,
                   M.NO_SUCH_FILE_MESSAGE.format(path=tmp_path / "nope.csv"))
    assert_refused(tmp_path, capsys, ["fit", tmp_path, "--label", "y", "--target", "0.9"], 1,
                   M.NOT_REGULAR_FILE_MESSAGE.format(path=tmp_path))
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    assert_refused(tmp_path, capsys, ["fit", bad, "--label", "y", "--target", "0.9"], 1,
                   text(M.UNREADABLE_MESSAGE, path=bad, kind="Parquet"))


def test_parquet_with_a_list_column_or_duplicated_names(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = make_frame(40)
    frame["tags"] = [[1, 2]] * 40
    frame.to_parquet(tmp_path / "lists.parquet")
    assert_refused(tmp_path, capsys, [*FIT, tmp_path / "lists.parquet", "--out", tmp_path / "m.qs"], 1,
                   text(M.NESTED_COLUMN_MESSAGE, path=tmp_path / "lists.parquet", column="tags"), "list<",
                   "; " + M.NESTED_FIX_DROP.format(column="tags") + ".")
    table = pa.table({"a": [1.0, 2.0], "b": [3.0, 4.0], "y": [0, 1]}).rename_columns(["a", "a", "y"])
    pq.write_table(table, tmp_path / "dup.parquet")
    assert_refused(tmp_path, capsys, ["fit", tmp_path / "dup.parquet", "--label", "y", "--target", "0.9"], 1,
                   M.DUPLICATED_COLUMN_MESSAGE.format(path=tmp_path / "dup.parquet", column="a"))
    code, _, err = run([*FIT, tmp_path / "lists.parquet", "--drop", "id", "tags", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err  # dropped, the list column is fine


def test_fit_with_too_few_rows_for_the_guarantee(tmp_path, csv, capsys):
    assert_refused(tmp_path, capsys, [*FIT, csv, "--target", "0.99", "--delta", "0.01", "--out", tmp_path / "h.qs"],
                   1, text(_fit.FIT_FAILED_MESSAGE, path=csv) + "Guaranteeing",  # the guarantee's own message
                   "needs at least 459 held-out positive rows")


def test_numbers_are_shown_as_the_user_wrote_them(tmp_path, capsys):
    frame = make_frame(60).assign(y=lambda f: (f.y == "yes").astype(int))
    frame.to_csv(tmp_path / "ints.csv", index=False)
    assert_refused(tmp_path, capsys, [*FIT, tmp_path / "ints.csv", "--positive", "5"], 1,
                   M.NO_POSITIVE_CLASS_MESSAGE.format(path=tmp_path / "ints.csv", column="y", positive="'5'", first="0",
                                                      second="1"))
    code, _, err = run([*FIT, tmp_path / "ints.csv", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    frame.assign(y=np.where(frame.index == 7, 2, frame.y)).to_csv(tmp_path / "test.csv", index=False)
    argv = ["evaluate", tmp_path / "m.qs", tmp_path / "test.csv", "--out-dir", tmp_path / "r"]
    assert_refused(tmp_path, capsys, argv, 1, _evaluate.UNKNOWN_LABEL_MESSAGE.format(
        path=tmp_path / "test.csv", column="y", value="2", row=8, first="0", second="1"))


TARGET_EXAMPLE, DELTA_EXAMPLE, SIZE_EXAMPLE = "0.95 for recall 95 %", "0.05 for a 95 % guarantee", \
    "0.3 to hold out 30 % of the rows"


@pytest.mark.parametrize("argv, option, message", [
    (["--target", "1.5"], "--target", _args.UNIT_INTERVAL_MESSAGE.format(text="1.5", example=TARGET_EXAMPLE)),
    (["--target", "0"], "--target", _args.UNIT_INTERVAL_MESSAGE.format(text="0", example=TARGET_EXAMPLE)),
    (["--target", "1"], "--target", _args.UNIT_INTERVAL_MESSAGE.format(text="1", example=TARGET_EXAMPLE)),
    (["--target", "-0.2"], "--target", _args.UNIT_INTERVAL_MESSAGE.format(text="-0.2", example=TARGET_EXAMPLE)),
    (["--target", "nan"], "--target", _args.UNIT_INTERVAL_MESSAGE.format(text="nan", example=TARGET_EXAMPLE)),
    (["--target", "0.9", "--delta", "0"], "--delta",
     _args.UNIT_INTERVAL_MESSAGE.format(text="0", example=DELTA_EXAMPLE)),
    (["--target", "0.9", "--delta", "0.1", "--calibration-size", "1.5"], "--calibration-size",
     _args.UNIT_INTERVAL_MESSAGE.format(text="1.5", example=SIZE_EXAMPLE)),
    (["--target", "0.9", "--max-epochs", "0"], "--max-epochs",
     _args.INTEGER_AT_LEAST_MESSAGE.format(minimum=1, text="0", example="200")),
    (["--target", "0.9", "--model", "mlp", "--hidden-layer-sizes", "8,0"], "--hidden-layer-sizes",
     _args.LAYER_SIZES_MESSAGE.format(text="8,0")),
    (["--target", "0.9", "--model", "mlp", "--hidden-layer-sizes", "a"], "--hidden-layer-sizes",
     _args.LAYER_SIZES_MESSAGE.format(text="a")),
    (["--target", "0.9", "--seed", "-1"], "--seed",
     _args.INTEGER_RANGE_MESSAGE.format(minimum=0, maximum=_args.SEED_MAX, text="-1", example="0")),
    (["--target", "0.9", "--seed", str(2**32)], "--seed",
     _args.INTEGER_RANGE_MESSAGE.format(minimum=0, maximum=_args.SEED_MAX, text=str(2**32), example="0")),
    (["--target", "0.9", "--objective", "accuracy"], "--objective", "invalid choice"),  # argparse's own text
])
def test_bad_fit_options(tmp_path, csv, capsys, argv, option, message):
    line = _args.USAGE_ERROR_LINE.format(prog="quantile-surrogate fit", message=f"argument {option}: {message}")
    if message == "invalid choice":
        line = text(_args.USAGE_ERROR_LINE, prog="quantile-surrogate fit") + f"argument {option}: invalid choice"
    assert_refused(tmp_path, capsys, ["fit", csv, "--label", "y", *argv, "--out", tmp_path / "m.qs"], 2,
                   line.strip(), "(see `quantile-surrogate fit --help`)")


@pytest.mark.parametrize("argv, flag, message", [
    (["--calibration-size", "0.2"], "--calibration-size", _args.CALIBRATION_WITHOUT_DELTA_MESSAGE),
    (["--drop", "id", "y"], "--drop", _args.DROP_NAMES_LABEL_MESSAGE.format(column="y")),
])
def test_options_valid_alone_but_not_together_exit_2_naming_the_option(tmp_path, csv, capsys, argv, flag, message):
    base = [a for a in FIT if a not in ("--drop", "id")]
    line = _args.USAGE_ERROR_LINE.format(prog="quantile-surrogate fit",
                                         message=_args.OPTION_CONFLICT_LINE.format(flag=flag, message=message))
    assert_refused(tmp_path, capsys, [*base, csv, *argv, "--out", tmp_path / "m.qs"], 2, line.strip())


def test_calibration_size_with_delta_is_read_and_saved(tmp_path, csv, capsys):
    for size, name in ((None, "default.qs"), ("0.4", "given.qs")):
        extra = [] if size is None else ["--calibration-size", size]
        code, _, err = run([*FIT, csv, "--delta", "0.2", *extra, "--out", tmp_path / name], capsys)
        assert code == 0, err
    assert load_model(tmp_path / "default.qs").calibration_size == _fit.CALIBRATION_SIZE == 0.3
    assert load_model(tmp_path / "given.qs").calibration_size == 0.4


@pytest.mark.parametrize("argv, flag, needs, model", [
    (["--hidden-layer-sizes", "8"], "--hidden-layer-sizes", "--model mlp", "linear"),
    (["--n-estimators", "8"], "--n-estimators", "--model lightgbm or xgboost", "linear"),
    (["--model", "lightgbm", "--checkpoint", "c.ckpt"], "--checkpoint", _fit.NEURAL_MODELS, "lightgbm"),
    (["--model", "xgboost", "--max-epochs", "3"], "--max-epochs", _fit.NEURAL_MODELS, "xgboost"),
])
def test_options_for_another_model(tmp_path, csv, capsys, argv, flag, needs, model):
    base = [a for a in FIT if a not in ("--max-epochs", "3")]
    assert_refused(tmp_path, capsys, [*base, csv, *argv, "--out", tmp_path / "m.qs"], 1,
                   _fit.OPTION_FOR_ANOTHER_MODEL_MESSAGE.format(flag=flag, needs=needs, model=model))


@pytest.mark.parametrize("backend", ["lightgbm"])  # xgboost's file round trip: test_model_file.py
def test_boosted_models(tmp_path, csv, capsys, backend):
    base = [a for a in FIT if a not in ("--max-epochs", "3")]
    code, out, err = run([*base, csv, "--model", backend, "--n-estimators", "10", "--out", tmp_path / "b.qs"], capsys)
    assert code == 0 and out == "", err
    saved = load_model(tmp_path / "b.qs")
    assert saved.model.named_steps["classifier"].backend_ == backend and saved.model_kind == backend
    code, out, err = run(["predict", tmp_path / "b.qs", csv], capsys)
    assert code == 0 and len(out.splitlines()) == 401, err


def test_warnings_for_a_saved_index_and_an_identifier(tmp_path, capsys):
    frame = make_frame(60).assign(name=lambda f: [f"user{i}" for i in range(len(f))])
    frame.to_csv(tmp_path / "indexed.csv")  # index=True: an unnamed first column
    code, _, err = run([*FIT, tmp_path / "indexed.csv", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 2 and "Traceback" not in err
    assert "column 'Unnamed: 0'" in lines[0] and "saved pandas index" in lines[0] and "--drop 'Unnamed: 0'" in lines[0]
    assert "column 'name' is text with a different value in every row" in lines[1] and "--drop name" in lines[1]


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



def _text_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.25
    words = np.array(["fine", "good", "ok", "nice", "bad", "awful", "poor", "meh"])
    text = [" ".join(rng.choice(words[4:] if label and rng.random() < 0.7 else words, 5)) for label in y]
    return pd.DataFrame({"x1": rng.normal(size=n) + y, "note": text, "y": np.where(y, "yes", "no")})


def test_fit_text_stores_vocabulary_and_idf_and_predicts_as_the_pipeline(tmp_path, capsys):
    path = tmp_path / "texts.csv"
    _text_frame().to_csv(path, index=False)
    code, _, err = run(["fit", path, "--label", "y", "--text", "note", "--target", "0.9", "--max-epochs", "5",
                        "--out", tmp_path / "t.qs"], capsys)
    assert code == 0, err
    assert "TF-IDF features of the text columns note" in err
    saved = load_model(tmp_path / "t.qs")
    assert saved.schema == {"numeric": ["x1"], "categorical": [], "text": ["note"]}
    encoder = saved.model.named_steps["preprocess"]
    assert encoder.sparse_ and sorted(encoder.vectorizers_["note"].vocabulary_) == sorted(
        ["fine", "good", "ok", "nice", "bad", "awful", "poor", "meh"])
    frame = pd.read_csv(path)
    X = _file_io.features(frame, saved.schema, path)
    refit = _fit._build_model(saved.schema, cli.build_parser().parse_args(
        ["fit", str(path), "--label", "y", "--text", "note", "--target", "0.9", "--max-epochs", "5"]))
    refit.fit(X, (frame.y == "yes").to_numpy().astype(int))  # the same pipeline fitted in this process
    np.testing.assert_allclose(saved.decision_function(X), refit.decision_function(X), rtol=0, atol=1e-9)
    code, out, err = run(["predict", tmp_path / "t.qs", path, "--out", tmp_path / "p.csv"], capsys)
    assert code == 0, err
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv").score, refit.decision_function(X), atol=1e-9)


@pytest.mark.parametrize("argv, fragments", [
    (["--text", "note", "--model", "lightgbm"], ["--text needs --model linear or mlp"]),
    (["--text", "nowhere"], ["column 'nowhere' (named by --text) is missing"]),
    (["--text", "note", "--drop", "note"], ["column 'note' (named by --text) is missing (it is also named by --drop)"]),
    (["--text", "blank", "--drop", "note"], ["text column 'blank' (--text) has no word in any row"]),
])
def test_bad_text_columns_are_one_line_and_write_nothing(tmp_path, capsys, argv, fragments):
    path = tmp_path / "texts.csv"
    _text_frame(60).assign(blank="").to_csv(path, index=False)
    assert_refused(tmp_path, capsys, ["fit", path, "--label", "y", "--target", "0.9", "--quiet",
                                      "--out", tmp_path / "t.qs", *argv], 1, *fragments)


def test_high_cardinality_categories_are_sparse_and_reload(tmp_path, capsys):
    rng = np.random.default_rng(1)
    shop = rng.integers(0, 2000, 4000)  # about 1,730 distinct values
    frame = pd.DataFrame({"x1": rng.normal(size=4000), "shop": [f"s{v}" for v in shop],
                          "y": np.where((shop % 5 == 0) | (rng.random(4000) < 0.05), "yes", "no")})
    path = tmp_path / "shops.csv"
    frame.to_csv(path, index=False)
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9", "--max-epochs", "2", "--quiet",
                        "--out", tmp_path / "s.qs"], capsys)
    assert code == 0, err
    saved = load_model(tmp_path / "s.qs")
    encoder = saved.model.named_steps["preprocess"]
    assert encoder.sparse_ and encoder.text == [] and len(encoder.categories_["shop"]) > 1000
    X = _file_io.features(frame, saved.schema, path)
    assert sp.issparse(encoder.transform(X))
    classifier = saved.model.named_steps["classifier"]  # the reloaded model scores as its parts say
    np.testing.assert_allclose(saved.decision_function(X), classifier.decision_function(encoder.transform(X)),
                               atol=1e-12)
    assert classifier.n_features_in_ == 1 + len(encoder.categories_["shop"])
