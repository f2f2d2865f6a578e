"""`quantile-surrogate fit --groups COLUMN`: one threshold per group, read back by predict and evaluate.

Through cli.main in this process; every refusal is exit status 1, one line on stderr, and no file
created or changed.
"""

import io

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.cli import _file_io
from quantile_surrogate.cli.model_file import load_model

from tests._cli import FIT, assert_one_line_error, make_frame, run, snapshot


def grouped_frame(n, seed):
    frame = make_frame(n, seed)
    rng = np.random.default_rng(seed + 100)
    frame["region"] = np.where(rng.random(n) < 0.3, "north", "south")
    # the groups score differently: north's positives are harder to tell apart
    north_yes = (frame.region == "north") & (frame.y == "yes")
    frame.loc[north_yes, "x1"] -= 1.0
    return frame


@pytest.fixture
def files(tmp_path):
    grouped_frame(1500, 0).to_csv(tmp_path / "train.csv", index=False)
    grouped_frame(600, 1).to_csv(tmp_path / "test.csv", index=False)
    return tmp_path / "train.csv", tmp_path / "test.csv"


def assert_refused(tmp_path, capsys, argv, *fragments):
    before = snapshot(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 1, err
    assert out == ""
    assert_one_line_error(err, *fragments)
    assert snapshot(tmp_path) == before


def group_scores(saved, frame, path):
    groups = _file_io.categorical_column(frame, "region")
    return saved.decision_function(_file_io.features(frame, saved.schema, path), sensitive_features=groups), groups


def test_fit_with_groups_trains_one_threshold_per_group(files, tmp_path, capsys):
    train, _ = files
    code, _, err = run([*FIT, train, "--groups", "region", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    saved = load_model(tmp_path / "m.qs")
    assert saved.groups == "region" and "region" not in saved.schema["numeric"] + saved.schema["categorical"]
    classifier = saved.model.named_steps["classifier"]
    assert classifier.groups_.tolist() == ["north", "south"] and classifier.group_thresholds_.shape == (2,)
    # the training constraint holds in each group on the training file (a single threshold would not)
    frame = pd.read_csv(train)
    score, groups = group_scores(saved, frame, train)
    for group in ("north", "south"):
        assert np.mean(score[(groups == group) & (frame.y == "yes").to_numpy()] > 0) >= 0.9
    # predict reads the same column and compares each row with its group's threshold
    code, out, err = run(["predict", tmp_path / "m.qs", train], capsys)
    assert code == 0, err
    np.testing.assert_array_equal(pd.read_csv(io.StringIO(out)).score, score)


def test_guarantee_per_group_and_evaluate_reports_each_group(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "g.qs"
    code, _, err = run([*FIT, train, "--groups", "region", "--delta", "0.1", "--out", model], capsys)
    assert code == 0, err
    saved = load_model(model)
    wrapper = saved.model
    assert wrapper.groups_.tolist() == ["north", "south"] and wrapper.n_calibration_.min() >= 22
    # each group holds out 30 % of its own positives and meets recall 0.9 on them at its own threshold
    frame = pd.read_csv(train)
    for i, group in enumerate(wrapper.groups_):
        positives = np.sum((frame.region == group) & (frame.y == "yes"))
        assert abs(wrapper.n_calibration_[i] - 0.3 * positives) <= 1
        assert wrapper.calibration_value_[i] >= 0.9
    assert wrapper.group_thresholds_[0] != wrapper.group_thresholds_[1]
    code, out, err = run(["evaluate", model, test, "--out-dir", tmp_path / "ev", "--bootstrap", "100"], capsys)
    assert code == 0, err
    assert "one threshold per group of column 'region' (the guarantee holds in each group)" in out
    assert "## Per group (column 'region')" in out
    frame = pd.read_csv(test)
    score, groups = group_scores(saved, frame, test)
    positive = (frame.y == "yes").to_numpy()
    for group in ("north", "south"):
        rows = groups == group
        recall = np.mean(score[rows & positive] > 0)
        line = next(line for line in out.splitlines() if line.startswith(f"| {group} |"))
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1:3] == [str(rows.sum()), str((rows & positive).sum())]
        value, interval = cells[4].split(" ", 1)
        assert value == f"{recall:.4f}"
        low, high = (float(v) for v in interval.strip("[]").split(","))
        assert low <= recall <= high
        assert cells[-1] == "100"
    assert sorted(p.name for p in (tmp_path / "ev").iterdir()) == ["test_pr_curve.png", "test_report.md"]


def test_a_test_group_with_one_class_is_reported_as_not_available(files, tmp_path, capsys):
    train, _ = files
    code, _, err = run([*FIT, train, "--groups", "region", "--out", tmp_path / "m.qs"], capsys)
    assert code == 0, err
    frame = grouped_frame(400, 2)
    frame = frame[(frame.region == "south") | (frame.y == "no")]  # north without positives
    frame.to_csv(tmp_path / "one.csv", index=False)
    code, out, err = run(["evaluate", tmp_path / "m.qs", tmp_path / "one.csv", "--out-dir", tmp_path / "ev",
                          "--bootstrap", "50"], capsys)
    assert code == 0, err
    north = next(line for line in out.splitlines() if line.startswith("| north |"))
    assert "| n/a |" in north and north.endswith("| 0 |")


def test_predict_and_evaluate_refuse_an_unseen_group_or_a_missing_column(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "m.qs"
    code, _, err = run([*FIT, train, "--groups", "region", "--out", model], capsys)
    assert code == 0, err
    frame = pd.read_csv(test)
    frame.loc[6, "region"] = "west"
    frame.to_csv(tmp_path / "west.csv", index=False)
    frame.drop(columns="region").to_csv(tmp_path / "none.csv", index=False)
    for command in (["predict", model, tmp_path / "west.csv", "--out", tmp_path / "p.csv"],
                    ["evaluate", model, tmp_path / "west.csv", "--out-dir", tmp_path / "ev"]):
        assert_refused(tmp_path, capsys, command, "west.csv", "column 'region'", "'west'", "data row 7",
                       "'north', 'south'")
    for command in (["predict", model, tmp_path / "none.csv", "--out", tmp_path / "p.csv"],
                    ["evaluate", model, tmp_path / "none.csv", "--out-dir", tmp_path / "ev"]):
        assert_refused(tmp_path, capsys, command, "none.csv", "column 'region' is missing")


@pytest.mark.parametrize("extra, fragments", [
    (["--groups", "y"], ["column 'y' is named by --groups and by --label"]),
    (["--groups", "id"], ["column 'id' is named by --groups and by --drop"]),
    (["--groups", "region", "--categorical", "region"], ["named by --groups and by --categorical"]),
    (["--groups", "nope"], ["column 'nope' (the --groups) is missing"]),
    (["--groups", "gap"], ["column 'gap' (the --groups) has 1 empty cells", "data row 4"]),
    (["--groups", "region", "--target", "0.95", "--delta", "0.05"],
     ["train.csv", "Group 'north'", "held-out positive rows", "needs at least 59"]),
])
def test_bad_group_columns(files, tmp_path, capsys, extra, fragments):
    train, _ = files
    frame = pd.read_csv(train)
    frame["gap"] = np.where(np.arange(len(frame)) % 2 == 0, "p", "q").astype(object)
    frame.loc[3, "gap"] = None
    frame.to_csv(train, index=False)
    assert_refused(tmp_path, capsys, [*FIT, train, *extra, "--out", tmp_path / "m.qs"], *fragments)
