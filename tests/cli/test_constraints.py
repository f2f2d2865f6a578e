"""`quantile-surrogate fit --constraint TEXT` (cli/_constraints.py): one group-blind threshold, reported by fit,
stored in the model file, and measured again by evaluate with bootstrap intervals.

Through cli.main in this process; every refusal is one line on stderr without a traceback, a non-zero exit
status, and no file created or changed.
"""

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest
import torch

from quantile_surrogate import cli
from quantile_surrogate.cli import _args, _constraints, _file_io, _fit, _model_checks, model_file
from quantile_surrogate.cli._file_io import InputError
from quantile_surrogate.cli.model_file import load_model
from quantile_surrogate.constraints import ConstraintSet, _parse, gap, rate
from quantile_surrogate.objectives.bootstrap import _resample_counts

from tests._cli import make_frame, run
from tests._messages import exact
from tests.cli.conftest import assert_refused
from tests.cli.test_model_file import valid_sections, write_model_file

FIT = ["fit", "--drop", "id", "--label", "y", "--target", "0.8", "--max-epochs", "3"]
GAP = "recall gap <= 0.1 by g"


def grouped_frame(n, seed):
    frame = make_frame(n, seed)
    rng = np.random.default_rng(seed + 7)
    frame["g"] = np.where(rng.random(n) < 0.4, "a", "b")
    frame.loc[(frame.g == "a") & (frame.y == "yes"), "x1"] -= 1.0  # group a's positives score lower
    return frame


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("constraints")
    grouped_frame(500, 0).to_csv(folder / "train.csv", index=False)
    grouped_frame(300, 1).to_csv(folder / "test.csv", index=False)
    return folder / "train.csv", folder / "test.csv"


@pytest.fixture(scope="module")
def constrained(files, tmp_path_factory):
    """A model fitted with a gap and an all-rows constraint, and what fit wrote on stderr."""
    train, _ = files
    model = tmp_path_factory.mktemp("model") / "m.qs"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):  # module scope: capsys is per test
        code = cli.main([str(a) for a in [*FIT, train, "--constraint", GAP, "--constraint", "FPR <= 40%",
                                          "--out", model]])
    assert code == 0, err.getvalue()
    return model, err.getvalue()


def scores_of(saved, frame, path):
    return saved.decision_function(_file_io.features(frame, saved.schema, path))


def test_fit_trains_one_group_blind_threshold_and_reports_each_constraint(constrained, files, tmp_path, capsys):
    model, err = constrained
    saved = load_model(model)
    classifier = saved.model.named_steps["classifier"]
    assert saved.constraints == [GAP, "FPR <= 40%"] and saved.constraint_by == "g" and saved.groups is None
    assert classifier.constraints == [gap("recall", at_most=0.1), rate("fpr", at_most=0.4)]  # exact, not rounded
    assert classifier.groups_ is None and np.ndim(classifier.threshold_) == 0
    assert classifier.constraint_groups_.tolist() == ["a", "b"]
    assert "g" not in saved.schema["numeric"] + saved.schema["categorical"]
    report = classifier.constraint_report_
    assert report["checked_on"] == "held_out"  # with constraints, fit holds out validation rows
    for text, entry in zip(saved.constraints, report["constraints"]):
        line = next(line for line in err.splitlines() if line.startswith(f"  {text}: train "))
        assert f"train {entry['train']:.4f}, held out {entry['held_out']:.4f}" in line
        within = (f"NOT MET held out, but within one standard error ({entry['held_out_se']:.4f}) of the bound, which "
                  "the fit counts as met")
        verdict = "met" if entry["met"] else within if entry["feasible"] else "NOT MET"
        assert line.endswith(", " + verdict)
    assert f"  start: {report['start']['description']}" in err.splitlines()
    assert f"  chosen: {report['chosen']}" in err.splitlines()
    # predict needs no group column: one threshold for every row
    train, _ = files
    frame = pd.read_csv(train)
    frame.drop(columns="g").to_csv(tmp_path / "no_g.csv", index=False)
    code, out, err = run(["predict", model, tmp_path / "no_g.csv"], capsys)
    assert code == 0, err
    np.testing.assert_array_equal(pd.read_csv(io.StringIO(out)).score, scores_of(saved, frame, train))


def test_a_constraint_kept_within_its_noise_says_so_with_the_standard_error():
    report = {"checked_on": "held_out", "chosen": "epoch 3", "start": {"description": "a random start"},
              "constraints": [
        dict(train=0.02, held_out=0.134, held_out_se=0.091, met=False, feasible=True),
        dict(train=[0.81, 0.8], held_out=[0.7, 0.82], held_out_se=[0.12, 0.05], met=False, feasible=True),
        dict(train=0.2, held_out=0.3, held_out_se=0.01, met=False, feasible=False),
        dict(train=0.02, held_out=0.03, held_out_se=0.01, met=True, feasible=True)]}
    lines = _constraints.fit_report_lines(report, ["recall gap <= 0.05 by g", "recall >= 0.8 in each group by g",
                                                   "fpr <= 5%", "fpr <= 10%"], ["a", "b"])
    assert lines[1].endswith(", NOT MET held out, but within one standard error (0.0910) of the bound, which the "
                             "fit counts as met")
    assert "within one standard error (a 0.1200, b 0.0500) of the bound" in lines[2]
    assert lines[3].endswith("held out 0.3000, NOT MET") and lines[4].endswith(", met")
    assert lines[5:] == ["  start: a random start", "  chosen: epoch 3"]


def cells(out, text):
    line = next(line for line in out.splitlines() if line.startswith(f"| {text} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_evaluate_reports_each_constraint_with_an_interval_at_the_models_threshold(constrained, files, tmp_path,
                                                                                     capsys):
    model, _ = constrained
    _, test = files
    code, out, err = run(["evaluate", model, test, "--out-dir", tmp_path / "ev", "--bootstrap", "300"], capsys)
    assert code == 0, err
    assert "## Constraints (groups of column 'g')" in out and "under the constraints 'recall gap" in out
    saved, frame = load_model(model), pd.read_csv(test)
    flagged, positive = scores_of(saved, frame, test) > 0, (frame.y == "yes").to_numpy()
    recalls = {g: flagged[positive & (frame.g == g).to_numpy()].mean() for g in ("a", "b")}
    references = {GAP: (max(recalls.values()) - min(recalls.values()), 0.1), "FPR <= 40%": (flagged[~positive].mean(), 0.4)}
    for text, (reference, bound) in references.items():
        _, value, interval, shown_bound, met = cells(out, text)
        assert value.split(" ")[0] == f"{reference:.4f}"
        low, high = (float(v) for v in interval.strip("[]").split(","))
        assert 0 <= low <= high <= 1 and low <= reference + 1e-4 and reference - 1e-4 <= high
        assert shown_bound == f"<= {bound:g}"
        assert met == ("met" if reference <= bound else "NOT MET")
    assert cells(out, GAP)[1].endswith(f"(a {recalls['a']:.4f}, b {recalls['b']:.4f})")
    # the same seed gives the same intervals
    code, again, _ = run(["evaluate", model, test, "--out-dir", tmp_path / "ev", "--bootstrap", "300"], capsys)
    assert again == out


def test_measured_values_equal_the_constraint_set_and_the_bootstrap_resamples_rows(constrained, files):
    saved = load_model(constrained[0])
    _, test = files
    frame = pd.read_csv(test)
    score, positive, groups = scores_of(saved, frame, test), (frame.y == "yes").to_numpy(), frame.g.to_numpy()
    rows = _constraints.measure_constraints(saved, positive, score, groups, 50, 3)
    codes = torch.as_tensor((groups == "b").astype(np.int64))
    record = ConstraintSet([row[1] for row in rows], n_groups=2).evaluate(torch.tensor(score), torch.tensor(positive),
                                                                         0.0, codes)
    assert [row[2] for row in rows] == pytest.approx([r["value"] for r in record])
    # the interval: percentiles of the gap of each resample of the rows (drawn as bootstrap_metrics draws them)
    counts = _resample_counts(np.random.default_rng(3), len(score), 50, np.arange(len(score)))
    gaps = []
    for w in counts:
        rates = [np.sum(w * (score > 0) * positive * (groups == g)) / np.sum(w * positive * (groups == g))
                 for g in ("a", "b")]
        gaps.append(max(rates) - min(rates))
    assert rows[0][3:5] == pytest.approx(tuple(np.percentile(gaps, [2.5, 97.5])))


def test_groups_of_the_same_column_give_one_threshold_per_group_as_well(files, tmp_path, capsys):
    train, test = files
    model = tmp_path / "m.qs"
    code, _, err = run([*FIT, "--quiet", train, "--groups", "g", "--constraint", "recall >= 0.5 in each group by g",
                        "--out", model], capsys)
    assert code == 0, err
    saved = load_model(model)
    classifier = saved.model.named_steps["classifier"]
    assert saved.groups == saved.constraint_by == "g" and classifier.group_thresholds_.shape == (2,)
    assert classifier.group_thresholds is True
    code, out, err = run(["evaluate", model, test, "--out-dir", tmp_path / "ev", "--bootstrap", "50"], capsys)
    assert code == 0, err
    assert cells(out, "recall >= 0.5 in each group by g")[3] == ">= 0.5"


def test_a_precision_floor_in_each_group_is_fitted_stored_and_measured_per_group(files, tmp_path, capsys):
    train, test = files
    model, text = tmp_path / "m.qs", "ppv >= 40% in each group by g"
    code, _, err = run([*FIT, "--quiet", train, "--constraint", text, "--out", model], capsys)
    assert code == 0, err
    saved = load_model(model)
    assert saved.parsed_constraints[0][0] == rate("precision", at_least=0.4, in_each_group=True)
    code, out, err = run(["evaluate", model, test, "--out-dir", tmp_path / "ev", "--bootstrap", "50"], capsys)
    assert code == 0, err
    frame = pd.read_csv(test)
    flagged, positive = scores_of(saved, frame, test) > 0, (frame.y == "yes").to_numpy()
    precisions = {g: positive[flagged & (frame.g == g).to_numpy()].mean() for g in ("a", "b")}
    _, value, _, bound, met = cells(out, text)
    assert value == f"{min(precisions.values()):.4f} (a {precisions['a']:.4f}, b {precisions['b']:.4f})"
    assert bound == ">= 0.4" and met == ("met" if min(precisions.values()) >= 0.4 else "NOT MET")


@pytest.mark.parametrize("extra, code, message", [
    (["--constraint", "recall gap >= 0.1 by g"], 2,
     _parse.PARSE_MESSAGE.format(text="recall gap >= 0.1 by g", problem=_parse.GAP_FLOOR_PROBLEM)),
    (["--constraint", "recall_at_k >= 0.5"], 2, _parse.PARSE_MESSAGE.format(
        text="recall_at_k >= 0.5", problem=_parse.RATE_PROBLEM.format(rate="recall_at_k", known=_parse._KNOWN_RATES))),
    (["--constraint", "precision gap <= 0.1 by g"], 2,
     _parse.PARSE_MESSAGE.format(text="precision gap <= 0.1 by g", problem=_parse.PRECISION_GAP_PROBLEM)),
    (["--constraint", "fpr <= 0.1 by g"], 2,
     _parse.PARSE_MESSAGE.format(text="fpr <= 0.1 by g", problem=_parse.BY_UNUSED_PROBLEM.format(column="g"))),
    (["--constraint", GAP, "--constraint", "fpr <= 0.3 in each group by colour"], 2,
     _constraints.BY_COLUMNS_MESSAGE.format(columns="'g', 'colour'")),
    (["--constraint", GAP, "--groups", "colour"], 2, _constraints.GROUPS_NOT_BY_MESSAGE.format(by="g", groups="colour")),
    (["--constraint", GAP, "--delta", "0.1"], 2, _constraints.DELTA_MESSAGE),
])
def test_options_that_cannot_work_exit_2_in_one_line(files, tmp_path, capsys, extra, code, message):
    train, _ = files
    line = _args.USAGE_ERROR_LINE.format(prog="quantile-surrogate fit", message=f"argument --constraint: {message}")
    assert_refused(tmp_path, capsys, [*FIT, train, *extra, "--out", tmp_path / "m.qs"], code, line.strip())


def test_bad_group_columns_and_models_exit_1_in_one_line(files, tmp_path, capsys):
    train, _ = files
    frame = pd.read_csv(train)
    frame.loc[4, "g"] = None
    frame.to_csv(tmp_path / "empty.csv", index=False)
    role = "--constraint 'recall gap <= 0.1 by {}'"
    for path, text, message in (
            (train, "recall gap <= 0.1 by nope", _file_io.GROUPS_MISSING_MESSAGE.format(
                path=train, column="nope", role=role.format("nope"), columns="x1, x2, colour, y, g")),
            (train, "recall gap <= 0.1 by y", _fit.GROUPS_NAMED_TWICE_MESSAGE.format(
                path=train, column="y", role=role.format("y"), other="--label")),
            (tmp_path / "empty.csv", GAP, _file_io.GROUPS_EMPTY_MESSAGE.format(
                path=tmp_path / "empty.csv", column="g", role=role.format("g"), count=1, row=5))):
        assert_refused(tmp_path, capsys, [*FIT, path, "--constraint", text, "--out", tmp_path / "m.qs"], 1, message)
    assert_refused(tmp_path, capsys, ["fit", train, "--label", "y", "--target", "0.8", "--model", "lightgbm",
                                      "--constraint", GAP, "--out", tmp_path / "m.qs"], 1,
                   _fit.OPTION_FOR_ANOTHER_MODEL_MESSAGE.format(flag="--constraint", needs=_fit.NEURAL_MODELS,
                                                                model="lightgbm"))


def test_evaluate_refuses_a_file_without_the_constraints_column_or_with_an_empty_cell(constrained, files, tmp_path,
                                                                                        capsys):
    model, _ = constrained
    _, test = files
    frame = pd.read_csv(test)
    frame.drop(columns="g").to_csv(tmp_path / "no_g.csv", index=False)
    frame.loc[9, "g"] = None
    frame.to_csv(tmp_path / "empty.csv", index=False)
    role = f"--constraint {GAP!r}"
    assert_refused(tmp_path, capsys, ["evaluate", model, tmp_path / "no_g.csv", "--out-dir", tmp_path / "ev"], 1,
                   _file_io.GROUPS_MISSING_MESSAGE.format(path=tmp_path / "no_g.csv", column="g", role=role,
                                                          columns="id, x1, x2, colour, y"))
    assert_refused(tmp_path, capsys, ["evaluate", model, tmp_path / "empty.csv", "--out-dir", tmp_path / "ev"], 1,
                   _file_io.GROUPS_EMPTY_MESSAGE.format(path=tmp_path / "empty.csv", column="g", role=role, count=1,
                                                        row=10))


@pytest.mark.parametrize("field, value", [
    ("constraints", ["recall gap <= 0.2 by g", "FPR <= 40%"]),  # not the classifier's bound
    ("constraints", ["recall gap <= 0.1 by h", "FPR <= 40%"]),  # another column than constraint_by
    ("constraints", ["recall gap <= 0.1", "FPR <= 40%"]),  # not a text fit accepts
    ("constraints", None),
    ("constraint_by", "h"),
])
def test_a_model_file_whose_constraints_disagree_is_refused_naming_the_field(constrained, tmp_path, field, value):
    sections = valid_sections(constrained)
    description = json.loads(sections["description"])
    description[field] = value
    write_model_file(tmp_path / "edited.qs", {**sections, "description": json.dumps(description).encode()})
    problem = _model_checks.NOT_CONSTRAINTS
    with pytest.raises(InputError, match=exact(model_file.NOT_REBUILT_FIELD_MESSAGE, path=tmp_path / "edited.qs",
                                               field="constraints", problem=problem)):
        load_model(tmp_path / "edited.qs")


def test_the_codec_stores_each_constraints_fields_and_rebuilds_them_through_rate_and_gap():
    from quantile_surrogate.cli import _codecs

    built = [gap("recall", at_most=1 / 30), rate("fpr", at_least=0.2, in_each_group=True)]
    assert _codecs._constraints(json.loads(json.dumps(_codecs._constraint_fields(built)))) == built
    with pytest.raises(ValueError, match=exact(_codecs.UNKNOWN_SCOPE_MESSAGE, scope="everywhere")):
        _codecs._constraints([{"rate": "recall", "scope": "everywhere", "at_least": 0.5, "at_most": None}])
    with pytest.raises(ValueError, match="at_most"):  # a bound out of range is refused by gap() itself
        _codecs._constraints([{"rate": "recall", "scope": "gap", "at_least": None, "at_most": 2.0}])


def test_a_constrained_fit_with_a_checkpoint_resumes_to_the_same_model(files, tmp_path):
    """--constraint takes --checkpoint (which holds the multipliers); run again on it, fit gives the same model."""
    train, _ = files
    outputs = []
    for name in ("first.qs", "second.qs"):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in [*FIT, train, "--constraint", GAP, "--checkpoint", tmp_path / "ck.pt",
                                              "--out", tmp_path / name]])
        assert code == 0, err.getvalue()
        outputs.append(load_model(tmp_path / name))
    first, second = (saved.model[-1] for saved in outputs)  # the pipelines' QuantileClassifier
    assert first.threshold_ == second.threshold_ and first.constraint_report_ == second.constraint_report_
    for a, b in zip(first.model_.state_dict().values(), second.model_.state_dict().values()):
        assert torch.equal(a, b)
