"""`quantile-surrogate fit | predict | evaluate` on small files, called in-process through cli.main."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate import __version__, cli
from quantile_surrogate.cli import file_commands
from quantile_surrogate.cli.file_commands import MAGIC, bootstrap_metrics, load_model


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err, *fragments):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def make_frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    return pd.DataFrame({
        "id": np.arange(n),
        "x1": rng.normal(size=n) + 2.0 * y,
        "x2": rng.normal(size=n) - 1.0 * y,
        "colour": np.where(rng.random(n) < 0.5 + 0.3 * y, "red", rng.choice(["blue", "green"], n)),
        "y": np.where(y, "yes", "no"),
    })


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "data.csv"
    make_frame().to_csv(path, index=False)
    return path


FIT = ["fit", "--label", "y", "--objective", "precision_at_recall", "--target", "0.9", "--max-epochs", "3",
       "--drop", "id", "--quiet"]


def no_files_but(tmp_path, *names):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


# ---------------------------------------------------------------------------- bad input

def test_missing_label_column(tmp_path, csv, capsys):
    code, out, err = run([*FIT[:2], "target", *FIT[3:], csv, "--out", tmp_path / "m.qs"], capsys)
    assert code == 1
    assert_one_line_error(err, str(csv), "column 'target'", "missing")
    no_files_but(tmp_path, "data.csv")


def test_label_with_one_class(tmp_path, capsys):
    path = tmp_path / "one.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [1, 1, 1]}).to_csv(path, index=False)
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs"], capsys)
    assert code == 1
    assert_one_line_error(err, str(path), "column 'y'", "1 class", "exactly two")
    no_files_but(tmp_path, "one.csv")


def test_label_with_three_classes_and_empty_label(tmp_path, capsys):
    path = tmp_path / "three.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": ["a", "b", "c", "a"]}).to_csv(path, index=False)
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9"], capsys)
    assert code == 1
    assert_one_line_error(err, "column 'y'", "3 classes")
    path.write_text("x,y\n1,0\n2,\n3,1\n")
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9"], capsys)
    assert_one_line_error(err, "column 'y'", "1 empty cells", "data row 2")


@pytest.mark.parametrize("content, problem", [("", "the file is empty"), ("x,y\n", "no data rows")])
def test_empty_file(tmp_path, capsys, content, problem):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs"], capsys)
    assert code == 1
    assert_one_line_error(err, str(path), problem)
    no_files_but(tmp_path, "empty.csv")


def test_text_in_a_numeric_column(tmp_path, capsys):
    path = tmp_path / "text.csv"
    path.write_text("x,z,y\n1.5,a,0\n2.5,b,1\noops,a,0\n3.0,b,1\n")
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9", "--out", tmp_path / "m.qs"], capsys)
    assert code == 1
    assert_one_line_error(err, str(path), "column 'x'", "data row 3", "'oops'", "--categorical x")
    no_files_but(tmp_path, "text.csv")


def test_empty_cell_in_a_numeric_column(tmp_path, capsys):
    path = tmp_path / "gap.csv"
    path.write_text("x,y\n1.5,0\n,1\n3.0,1\n")
    code, _, err = run(["fit", path, "--label", "y", "--target", "0.9"], capsys)
    assert code == 1
    assert_one_line_error(err, "column 'x'", "1 empty or infinite cells", "data row 2")


@pytest.mark.parametrize("target", ["1.5", "0", "1", "-0.2"])
def test_target_outside_the_unit_interval(tmp_path, csv, capsys, target):
    argv = ["fit", csv, "--label", "y", "--target", target, "--out", tmp_path / "m.qs"]
    code, _, err = run(argv, capsys)
    assert code == 1
    assert_one_line_error(err, "--target", "strictly between 0 and 1", f"got {float(target):g}")
    no_files_but(tmp_path, "data.csv")


def test_missing_file_and_unreadable_parquet(tmp_path, capsys):
    code, _, err = run(["fit", tmp_path / "nope.csv", "--label", "y", "--target", "0.9"], capsys)
    assert code == 1
    assert_one_line_error(err, "nope.csv", "no such file")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    code, _, err = run(["fit", bad, "--label", "y", "--target", "0.9"], capsys)
    assert code == 1
    assert_one_line_error(err, "bad.parquet", "cannot be read as Parquet")


def test_bad_model_files(tmp_path, csv, capsys):
    junk = tmp_path / "junk.qs"
    junk.write_bytes(b"\x80\x04 something else")
    code, _, err = run(["predict", junk, csv], capsys)
    assert code == 1
    assert_one_line_error(err, "junk.qs", "not a quantile-surrogate model file")
    future = tmp_path / "future.qs"
    future.write_bytes(MAGIC + json.dumps({"quantile_surrogate": "9.9.0"}).encode() + b"\n" + b"garbage")
    code, _, err = run(["evaluate", future, csv, "--out-dir", tmp_path / "report"], capsys)
    assert code == 1
    assert_one_line_error(err, "future.qs", "saved by quantile-surrogate 9.9.0", f"this version ({__version__})",
                          "refit")
    truncated = tmp_path / "truncated.qs"
    truncated.write_bytes(MAGIC + json.dumps({"quantile_surrogate": __version__}).encode() + b"\n" + b"\x80\x04")
    code, _, err = run(["predict", truncated, csv], capsys)
    assert_one_line_error(err, "truncated.qs", "damaged")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("saved, running, ok", [("0.1.3", "0.1.0", True), ("0.2.0", "0.1.0", False),
                                                ("1.0.0", "0.1.0", False), ("0.1.0", "0.1.0", True)])
def test_version_compatibility(saved, running, ok):
    assert file_commands._compatible(saved, running) is ok


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"

    def half_then_fail(path):
        path.write_text("half a fi")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        file_commands._atomic_write(target, half_then_fail)
    no_files_but(tmp_path)
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        file_commands._atomic_write(target, half_then_fail)
    assert target.read_text() == "old"  # the previous file survives
    no_files_but(tmp_path, "out.csv")


def test_categorical_inference():
    frame = pd.DataFrame({"n": [1, 2, 3, 4], "t": ["a", "b", "a", "c"], "mostly_numbers": ["1", "2", "x", "4"],
                          "mostly_text": ["a", "b", "7", "c"]})
    assert not file_commands._is_categorical(frame["n"])
    assert file_commands._is_categorical(frame["t"])
    assert not file_commands._is_categorical(frame["mostly_numbers"])  # so "x" is reported as an error
    assert file_commands._is_categorical(frame["mostly_text"])
    assert list(file_commands._categorical_column(pd.DataFrame({"c": [3.0, np.nan, 2.5]}), "c")) == \
        ["3", file_commands.MISSING_CATEGORY, "2.5"]


def test_bootstrap_metrics_on_a_known_case():
    positive = np.array([True] * 50 + [False] * 150)
    score = np.where(positive, 1.0, -1.0)  # separable: precision = recall = 1 in every resample
    table, used = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=50, seed=0)
    assert used == 50
    values = {name.split(" at ")[0]: (v, lo, hi) for name, v, lo, hi in table}
    assert values["precision"] == (1.0, 1.0, 1.0) and values["recall"] == (1.0, 1.0, 1.0)
    rate = values["predicted positive rate"]
    assert rate[0] == 0.25 and rate[1] < 0.25 < rate[2]
    # the rate's bootstrap interval is close to the normal one, 0.25 +- 1.96 sqrt(0.25 * 0.75 / 200)
    half = 1.96 * np.sqrt(0.25 * 0.75 / 200)
    table, _ = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=2000, seed=1)
    assert abs(table[2][2] - (0.25 - half)) < 0.015 and abs(table[2][3] - (0.25 + half)) < 0.015
    again, _ = bootstrap_metrics(positive, score, "precision_at_recall", 0.9, n_resamples=2000, seed=1)
    assert again == table


@pytest.mark.parametrize("objective, target", [("precision_at_recall", 0.8), ("precision_at_rate", 0.1),
                                               ("recall_at_fpr", 0.1)])
@pytest.mark.parametrize("ties", [False, True])
def test_weighted_metrics_equal_the_metrics_on_explicit_resamples(objective, target, ties):
    rng = np.random.default_rng(3)
    n = 300
    positive = rng.random(n) < 0.3
    score = rng.normal(size=n) + positive
    if ties:
        score = np.round(score, 1)
    data = file_commands._Sorted(positive, score)
    metric = file_commands.OBJECTIVE_METRICS[objective][1]
    for _ in range(30):
        rows = rng.integers(0, n, n)
        counts = np.bincount(rows, minlength=n)[data.order][None, :]
        got = file_commands._metrics_from_counts(data, counts, objective, target)[0]
        p, s = positive[rows], score[rows]
        flagged = s > 0
        expected = [p[flagged].mean(), flagged[p].mean(), flagged.mean(), metric(p, s, target)]
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------- the happy path

@pytest.fixture
def fitted(tmp_path, csv, capsys):
    pytest.importorskip("quantile_surrogate.estimators")
    model = tmp_path / "model.qs"
    code, _, err = run(["fit", csv, "--label", "y", "--target", "0.9", "--max-epochs", "3", "--drop", "id",
                        "--out", model], capsys)
    assert code == 0, err
    return model, err


def test_fit_reports_one_hot_encoding_and_saves_everything(fitted, csv):
    model, err = fitted
    assert "one-hot encoding the categorical columns colour (3 values)" in err
    assert "class 'yes'" in err
    bundle = load_model(model)
    assert bundle["version"] == __version__
    assert bundle["schema"] == {"numeric": ["x1", "x2"], "categorical": ["colour"]}
    assert bundle["classes"] == ["no", "yes"]
    # the training constraint holds on the training file: the threshold is its empirical quantile
    frame = pd.read_csv(csv)
    X = file_commands._features(frame, bundle["schema"], csv)
    flagged = bundle["model"].decision_function(X) > 0
    assert flagged[frame.y == "yes"].mean() >= 0.9


def test_predict_writes_one_row_per_input_row(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    code, out, err = run(["predict", model, csv, "--keep", "id"], capsys)
    assert code == 0, err
    predictions = pd.read_csv(io.StringIO(out))
    assert list(predictions.columns) == ["id", "prediction", "score"]
    assert len(predictions) == 400 and (predictions.id == np.arange(400)).all()
    assert ((predictions.score > 0) == (predictions.prediction == "yes")).all()
    # unseen category and label column absent: still fine; to a file, same numbers
    new = pd.read_csv(csv).drop(columns="y")
    new.loc[0, "colour"] = "purple"
    new.to_parquet(tmp_path / "new.parquet")
    code, _, err = run(["predict", model, tmp_path / "new.parquet", "--out", tmp_path / "p.csv"], capsys)
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(written.score[1:], predictions.score[1:])


def test_predict_with_a_missing_feature_column(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    pd.read_csv(csv).drop(columns="x2").to_csv(tmp_path / "short.csv", index=False)
    code, out, err = run(["predict", model, tmp_path / "short.csv", "--out", tmp_path / "p.csv"], capsys)
    assert code == 1 and out == ""
    assert_one_line_error(err, "short.csv", "column 'x2'", "missing")
    assert not (tmp_path / "p.csv").exists()


def test_evaluate_writes_report_and_plot(fitted, csv, tmp_path, capsys):
    model, _ = fitted
    test = tmp_path / "test.csv"
    make_frame(300, seed=5).to_csv(test, index=False)
    out_dir = tmp_path / "eval"
    code, out, err = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert code == 0, err
    report = (out_dir / "test_report.md").read_text()
    assert report == out.rstrip("\n") + "\n" or report.strip() == out.strip()
    for name in ("precision at the deployed threshold", "recall at the deployed threshold",
                 "predicted positive rate at the deployed threshold", "precision at recall 0.9 (the objective)"):
        assert f"| {name} |" in report
    assert (out_dir / "test_pr_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the numbers are the exact metrics on the file, and the bootstrap is seeded
    bundle = load_model(model)
    frame = pd.read_csv(test)
    score = bundle["model"].decision_function(file_commands._features(frame, bundle["schema"], test))
    positive = (frame.y == "yes").to_numpy()
    recall = np.mean(score[positive] > 0)
    assert f"| recall at the deployed threshold | {recall:.4f} |" in report
    code, again, _ = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert again == out
    no_files_but(out_dir, "test_report.md", "test_pr_curve.png")


def test_fit_with_a_guarantee_and_the_mlp(csv, tmp_path, capsys):
    pytest.importorskip("quantile_surrogate.estimators")
    code, _, err = run(["fit", csv, "--label", "y", "--target", "0.9", "--max-epochs", "2", "--drop", "id",
                        "--model", "mlp", "--hidden-layer-sizes", "8", "--delta", "0.1", "--quiet",
                        "--out", tmp_path / "g.qs"], capsys)
    assert code == 0, err
    bundle = load_model(tmp_path / "g.qs")
    assert bundle["model"].constraint == "recall" and bundle["model"].n_calibration_ >= 30
    # too few rows for the guarantee: one line, no file
    code, _, err = run(["fit", csv, "--label", "y", "--target", "0.99", "--max-epochs", "2", "--drop", "id",
                        "--delta", "0.01", "--quiet", "--out", tmp_path / "h.qs"], capsys)
    assert code == 1
    assert_one_line_error(err, str(csv), "needs at least 459 held-out positive rows")
    assert not (tmp_path / "h.qs").exists()
