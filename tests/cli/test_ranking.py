"""`fit --query`, then predict and evaluate, with a QuantileRanker (cli/_rank_fit.py, cli/_ranking.py).

End to end on a small synthetic file: 40 queries of 8 rows, in shuffled order, a graded label 0-3,
three numeric features and a categorical one. Every refusal is one line, exit status != 0, no
traceback and no file left behind.
"""

import functools
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import Pipeline

from quantile_surrogate.cli import _args, _file_io, _fit, _model_checks, _rank_fit, _ranking, model_file
from quantile_surrogate.cli._encoder import FrameEncoder
from quantile_surrogate.cli._file_io import InputError
from quantile_surrogate.cli.model_file import SavedModel, load_model, save_model
from quantile_surrogate.estimators import QuantileRanker
from quantile_surrogate.estimators.ranker import GRADED_LABELS_MESSAGE
from quantile_surrogate.metrics import bootstrap_over_queries, ndcg_at_k, precision_at_k_per_query

from tests._cli import run
from tests._messages import exact
from tests.cli.conftest import assert_refused
from tests.cli.test_model_file import valid_sections, write_model_file

N_QUERIES, PER_QUERY = 40, 8
SCHEMA = {"numeric": ["x1", "x2", "x3"], "categorical": ["colour"]}
LIGHTGBM = ["--query", "qid", "--k", "3", "--relevance-threshold", "2", "--model", "lightgbm", "--n-estimators", "20"]


def make_frame(seed=0):
    """Queries 'q0'..'q39' in shuffled row order; ``rel`` in 0..3 grows with x1."""
    rng = np.random.default_rng(seed)
    n = N_QUERIES * PER_QUERY
    x = rng.normal(size=(n, 3))
    rel = np.clip(np.round(1.2 * x[:, 0] + 0.7 * rng.normal(size=n) + 1), 0, 3).astype(int)
    frame = pd.DataFrame({"qid": np.repeat([f"q{i}" for i in range(N_QUERIES)], PER_QUERY), "x1": x[:, 0],
                          "x2": x[:, 1], "x3": x[:, 2], "colour": rng.choice(["red", "blue"], n), "rel": rel})
    frame = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return frame.assign(clicked=(frame.rel >= 2).astype(int))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A graded file (``rel``; ``clicked`` is dropped) and a binary one (``clicked``), and a model fitted on each."""
    from quantile_surrogate import cli

    folder = tmp_path_factory.mktemp("ranking")
    make_frame().to_csv(folder / "graded.csv", index=False)
    make_frame().drop(columns="rel").to_csv(folder / "binary.csv", index=False)
    assert cli.main([str(a) for a in ["fit", folder / "graded.csv", "--label", "rel", "--drop", "clicked",
                                      *LIGHTGBM, "--quiet", "--out", folder / "lgb.qs"]]) == 0
    assert cli.main([str(a) for a in ["fit", folder / "binary.csv", "--label", "clicked", "--query", "qid",
                                      "--model", "linear", "--quiet", "--out", folder / "linear.qs"]]) == 0
    return folder


def query_of(frame):
    return _ranking.query_codes(frame.qid.astype(str).to_numpy(dtype=object))


def in_memory(kind, label, threshold, k):
    """The pipeline fit builds, fitted in this process on the same rows with the same settings."""
    frame = make_frame()
    extra = {} if kind == "linear" else {"n_estimators": 20}
    model = Pipeline([("preprocess", FrameEncoder(numeric=SCHEMA["numeric"], categorical=SCHEMA["categorical"],
                                                  sparse_output=False)),
                      ("ranker", QuantileRanker(k=k, model=kind, relevance_threshold=threshold, random_state=0,
                                                **extra))])
    model.fit(frame[SCHEMA["numeric"] + SCHEMA["categorical"]], frame[label].to_numpy(np.float64),
              ranker__query=query_of(frame))
    return model, frame


# ----------------------------------------------------------------------------- fit and the model file

def test_fit_prints_a_summary_and_saves_the_ranker(tmp_path, files, capsys):
    code, out, err = run(["fit", files / "graded.csv", "--label", "rel", "--drop", "clicked", *LIGHTGBM,
                          "--out", tmp_path / "m.qs"], capsys)
    assert code == 0 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 3 and lines[-1] == f"Wrote {tmp_path / 'm.qs'}."
    assert f"320 rows in {N_QUERIES} queries (column 'qid')" in lines[0] and "(rel >= 2)" in lines[0]
    assert "queries count for P@3" in lines[0] and "Held-out P@3 on 3 split(s) of the queries" in lines[1]
    assert lines[1].endswith("Scores: the mean of that model's and a LambdaMART model's (20 trees) standardised scores.")
    saved = load_model(tmp_path / "m.qs")
    assert saved.is_ranker and (saved.query, saved.k, saved.relevance_threshold) == ("qid", 3, 2.0)
    assert (saved.classes, saved.objective, saved.target, saved.model_kind) == (None, None, None, "lightgbm")
    assert saved.schema == SCHEMA  # neither the query, the label nor a dropped column is a feature
    ranker = saved.model[-1]
    assert type(ranker) is QuantileRanker and ranker.k == 3 and ranker.n_estimators == 20
    frame = make_frame()  # every query has 8 > k rows: it counts when it has relevant and irrelevant rows
    hits = np.bincount(query_of(frame), weights=frame.rel >= 2)
    assert f"{int(((hits > 0) & (hits < PER_QUERY)).sum())} queries count for P@3" in lines[0]


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost", "linear"])
def test_round_trip_gives_the_in_memory_scores(tmp_path, kind):
    label, threshold = ("clicked", None) if kind == "linear" else ("rel", 2.0)
    model, frame = in_memory(kind, label, threshold, 3)
    saved = SavedModel(model=model, label=label, classes=None, schema=SCHEMA, objective=None, target=None,
                       model_kind=kind, trained_on="graded.csv", n_rows=len(frame), query="qid", k=3,
                       relevance_threshold=threshold)
    save_model(saved, tmp_path / "m.qs")
    loaded = load_model(tmp_path / "m.qs")
    X = frame[SCHEMA["numeric"] + SCHEMA["categorical"]]
    expected = model.predict(X)
    if kind == "linear":
        np.testing.assert_allclose(loaded.decision_function(X), expected, rtol=0, atol=1e-12)
    else:
        np.testing.assert_array_equal(loaded.decision_function(X), expected)  # the booster's own text, bit for bit
    back, ranker = loaded.model[-1], model[-1]
    assert back.get_params() == ranker.get_params() and back.selection_ == ranker.selection_
    assert (back.ranking_model_ is None) == (ranker.ranking_model_ is None) == (kind == "linear")  # the blend's
    assert (back.best_iteration_, back.n_logloss_estimators_) == (ranker.best_iteration_, ranker.n_logloss_estimators_)


def test_the_command_line_model_is_the_in_memory_one(files):
    model, frame = in_memory("lightgbm", "rel", 2.0, 3)
    X = frame[SCHEMA["numeric"] + SCHEMA["categorical"]]
    np.testing.assert_allclose(load_model(files / "lgb.qs").decision_function(X), model.predict(X), atol=1e-9)


@pytest.mark.parametrize("field, value, problem", [
    ("k", 4, _model_checks.NOT_RANKER_SETTING),
    ("relevance_threshold", 1.0, _model_checks.NOT_RANKER_SETTING),
    ("model_kind", "xgboost", _model_checks.NOT_RANKER_SETTING),
    ("classes", [0, 1], _model_checks.NOT_RANKER),
    ("target", 0.9, _model_checks.NOT_RANKER),
    ("query", None, _model_checks.NOT_RANKER),  # a ranker saved as a classifier
])
def test_a_ranker_file_with_a_field_fit_cannot_write_is_refused(tmp_path, files, field, value, problem):
    sections = valid_sections((files / "lgb.qs",))
    description = json.loads(sections["description"])
    description[field] = value
    write_model_file(tmp_path / "edited.qs", {**sections, "description": json.dumps(description).encode()})
    with pytest.raises(InputError, match=exact(model_file.NOT_REBUILT_FIELD_MESSAGE, path=tmp_path / "edited.qs",
                                               field=field, problem=problem)):
        load_model(tmp_path / "edited.qs")


# ----------------------------------------------------------------------------- predict

def test_predict_writes_scores_and_per_query_ranks(files, tmp_path, capsys):
    code, out, err = run(["predict", files / "lgb.qs", files / "graded.csv", "--keep", "qid",
                          "--out", tmp_path / "s.csv"], capsys)
    assert code == 0 and out == "", err
    written = pd.read_csv(tmp_path / "s.csv")
    assert list(written.columns) == ["qid", "score", _ranking.RANK_COLUMN]
    frame = make_frame()
    saved = load_model(files / "lgb.qs")
    score = saved.decision_function(_file_io.features(frame, saved.schema, "graded.csv"))
    np.testing.assert_array_equal(written.score.to_numpy(), score)
    assert (written.qid == frame.qid).all()
    expected = np.empty(len(frame), dtype=np.int64)
    for query in frame.qid.unique():  # NumPy's stable argsort of each query's scores, highest first
        rows = np.flatnonzero((frame.qid == query).to_numpy())
        expected[rows[np.argsort(-score[rows], kind="stable")]] = np.arange(1, rows.size + 1)
    np.testing.assert_array_equal(written[_ranking.RANK_COLUMN].to_numpy(), expected)


def test_predict_without_the_query_column_writes_scores_only(files, tmp_path, capsys):
    make_frame().drop(columns=["qid", "rel"]).to_csv(tmp_path / "new.csv", index=False)
    code, out, err = run(["predict", files / "linear.qs", tmp_path / "new.csv"], capsys)
    assert code == 0, err
    written = pd.read_csv(io.StringIO(out))
    assert list(written.columns) == ["score"] and len(written) == N_QUERIES * PER_QUERY


def test_ties_keep_the_file_order():
    ranks = _ranking.per_query_ranks(np.array([1.0, 2.0, 1.0, 5.0, 1.0]), np.array([0, 0, 0, 1, 0]))
    assert ranks.tolist() == [2, 1, 3, 1, 4]


# ----------------------------------------------------------------------------- evaluate

def table_rows(out):
    """``{metric: (value, low, high, counted, left out)}`` from the printed report's table."""
    rows = {}
    for line in out.splitlines():
        match = re.fullmatch(r"\| (\S+@\d+) \| (\S+) \| \[(\S+), (\S+)\] \| (\d+) \| (\d+) \| \d+ \|", line)
        if match:
            rows[match[1]] = match.groups()[1:]
    return rows


def expected_row(metric, truth, score, query, bootstrap, seed):
    interval = bootstrap_over_queries(metric, truth, score, query, n_resamples=bootstrap, random_state=seed)
    left_out = metric(truth, score, query, return_per_query=True).n_left_out
    return (f"{interval.value:.4f}", f"{interval.low:.4f}", f"{interval.high:.4f}", str(N_QUERIES - left_out),
            str(left_out))


@pytest.mark.parametrize("name, data, label, threshold, k", [
    ("lgb.qs", "graded.csv", "rel", 2.0, 3),
    ("linear.qs", "binary.csv", "clicked", None, 5),
])
def test_evaluate_reports_the_metrics_computed_directly(files, tmp_path, capsys, name, data, label, threshold, k):
    code, out, err = run(["evaluate", files / name, files / data, "--bootstrap", "200", "--seed", "3",
                          "--out-dir", tmp_path], capsys)
    assert code == 0, err
    frame = make_frame()
    saved = load_model(files / name)
    score = saved.decision_function(_file_io.features(frame, saved.schema, data))
    query, grades = query_of(frame), frame[label].to_numpy(np.float64)
    binary = grades >= threshold if threshold is not None else grades == 1
    expected = {f"P@{k}": expected_row(functools.partial(precision_at_k_per_query, k=k), binary, score, query, 200, 3),
                "P@10": expected_row(functools.partial(precision_at_k_per_query, k=10), binary, score, query, 200, 3),
                f"NDCG@{k}": expected_row(functools.partial(ndcg_at_k, k=k), grades, score, query, 200, 3)}
    assert table_rows(out) == expected
    stem = data.removesuffix(".csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}_report.md"]  # no plot for a ranker
    assert (tmp_path / f"{stem}_report.md").read_text() == out[:-1]  # printed, then written
    assert f"precision@{k} within each query of column 'qid'" in out


# ----------------------------------------------------------------------------- refusals

def not_for_a_ranker(flag):
    return _args.OPTION_CONFLICT_LINE.format(flag=flag, message=_rank_fit.NOT_FOR_A_RANKER_MESSAGE.format(
        reason=_rank_fit.NOT_FOR_A_RANKER[flag]))


@pytest.mark.parametrize("extra, fragment", [
    *[(option, not_for_a_ranker(option[0])) for option in (
        ["--target", "0.9"], ["--objective", "precision_at_recall"], ["--positive", "1"],
        ["--constraint", "fpr <= 5%"], ["--groups", "colour"], ["--delta", "0.05"], ["--calibration-size", "0.3"],
        ["--checkpoint", "c.pt"], ["--weight", "x1"], ["--text", "colour"], ["--max-epochs", "3"],
        ["--hidden-layer-sizes", "4"])],
    (["--model", "mlp"], _rank_fit.RANKER_MODEL_MESSAGE.format(models="linear, lightgbm, xgboost", model="mlp")),
    (["--drop", "qid"], _rank_fit.QUERY_NAMED_TWICE_MESSAGE.format(column="qid", other="--drop")),
    (["--categorical", "qid"], _rank_fit.QUERY_NAMED_TWICE_MESSAGE.format(column="qid", other="--categorical")),
    (["--relevance-threshold", "nan"], _args.FINITE_NUMBER_MESSAGE.format(text="nan", example="3")),
    (["--k", "0"], _args.INTEGER_AT_LEAST_MESSAGE.format(minimum=1, text="0", example="5")),
])
def test_options_a_ranker_does_not_take_exit_2_in_one_line(files, tmp_path, capsys, extra, fragment):
    assert_refused(tmp_path, capsys, ["fit", files / "graded.csv", "--label", "rel", "--query", "qid",
                                      "--relevance-threshold", "2", *extra, "--out", tmp_path / "m.qs"], 2, fragment)


@pytest.mark.parametrize("argv, fragment", [
    ([], _rank_fit.NEEDS_TARGET_MESSAGE),
    (["--k", "3", "--target", "0.9"], _args.OPTION_CONFLICT_LINE.format(
        flag="--k", message=_rank_fit.NEEDS_QUERY_MESSAGE.format(what="a k"))),
    (["--relevance-threshold", "2", "--target", "0.9"], _args.OPTION_CONFLICT_LINE.format(
        flag="--relevance-threshold", message=_rank_fit.NEEDS_QUERY_MESSAGE.format(what="a relevance threshold"))),
    (["--query", "rel"], _rank_fit.QUERY_NAMED_TWICE_MESSAGE.format(column="rel", other="--label")),
])
def test_a_classifier_needs_target_and_takes_no_ranker_option(files, tmp_path, capsys, argv, fragment):
    assert_refused(tmp_path, capsys, ["fit", files / "graded.csv", "--label", "rel", *argv,
                                      "--out", tmp_path / "m.qs"], 2, fragment)


def write(tmp_path, frame, name="bad.csv"):
    frame.to_csv(tmp_path / name, index=False)
    return tmp_path / name


def test_bad_training_files_exit_1_in_one_line(files, tmp_path, capsys):
    graded = files / "graded.csv"
    fit = ["fit", graded, "--label", "rel", "--query", "qid", "--out", tmp_path / "m.qs"]
    assert_refused(tmp_path, capsys, fit, 1, f"{graded}: " + GRADED_LABELS_MESSAGE.format(values=[0.0, 1.0, 2.0, 3.0])
                   + _rank_fit.GRADED_HINT)
    assert_refused(tmp_path, capsys, [*fit[:5], "nope", *fit[6:]], 1, _file_io.GROUPS_MISSING_MESSAGE.format(
        path=graded, column="nope", role="--query", columns="qid, x1, x2, x3, colour, rel, clicked"))
    assert_refused(tmp_path, capsys, [*fit[:3], "grade", *fit[4:]], 1, _file_io.LABEL_MISSING_MESSAGE.format(
        path=graded, column="grade", columns="qid, x1, x2, x3, colour, rel, clicked"))
    assert_refused(tmp_path, capsys, [*fit, "--relevance-threshold", "2", "--n-estimators", "5"], 1,
                   _fit.OPTION_FOR_ANOTHER_MODEL_MESSAGE.format(flag="--n-estimators", needs=_fit.OPTION_NEEDS[
                       "--n-estimators"], model="linear"))
    frame = make_frame()
    bad = write(tmp_path, frame.assign(rel=frame.rel.astype(object).where(frame.index != 4, "high")))
    assert_refused(tmp_path, capsys, ["fit", bad, "--label", "rel", "--query", "qid", "--relevance-threshold", "2"],
                   1, _ranking.RELEVANCE_NOT_NUMBER_MESSAGE.format(path=bad, column="rel", value="'high'", row=5))
    bad = write(tmp_path, frame.assign(qid=frame.qid.where(frame.index != 6)))
    assert_refused(tmp_path, capsys, ["fit", bad, "--label", "rel", "--query", "qid", "--relevance-threshold", "2"],
                   1, _file_io.GROUPS_EMPTY_MESSAGE.format(path=bad, column="qid", role="--query", count=1, row=7))


def test_bad_files_to_predict_and_evaluate_exit_1_in_one_line(files, tmp_path, capsys):
    frame = make_frame()
    no_query = write(tmp_path, frame.drop(columns="qid"))
    assert_refused(tmp_path, capsys, ["evaluate", files / "lgb.qs", no_query, "--out-dir", tmp_path], 1,
                   _file_io.GROUPS_MISSING_MESSAGE.format(path=no_query, column="qid", role="--query",
                                                          columns="x1, x2, x3, colour, rel, clicked"))
    no_label = write(tmp_path, frame.drop(columns="rel"), "nolabel.csv")
    assert_refused(tmp_path, capsys, ["evaluate", files / "lgb.qs", no_label, "--out-dir", tmp_path], 1,
                   _file_io.LABEL_MISSING_MESSAGE.format(path=no_label, column="rel",
                                                         columns="qid, x1, x2, x3, colour, clicked"))
    assert_refused(tmp_path, capsys, ["evaluate", files / "linear.qs", write(tmp_path, frame.assign(
        clicked=frame.rel), "graded.csv"), "--out-dir", tmp_path], 1,
        _ranking.NOT_BINARY_MESSAGE.format(path=tmp_path / "graded.csv", column="clicked", values="0, 1, 2, 3"))
    nothing = write(tmp_path, frame.assign(rel=0), "nothing.csv")
    assert_refused(tmp_path, capsys, ["evaluate", files / "lgb.qs", nothing, "--out-dir", tmp_path], 1,
                   _ranking.NO_RELEVANT_QUERY_MESSAGE.format(path=nothing, column="rel", rule=" >= 2"))
    negative = write(tmp_path, frame.assign(rel=frame.rel - 1), "negative.csv")
    assert_refused(tmp_path, capsys, ["evaluate", files / "lgb.qs", negative, "--out-dir", tmp_path], 1,
                   _ranking.METRIC_FAILED_MESSAGE.format(path=negative, column="rel", reason="`y_true` must hold"))
    assert_refused(tmp_path, capsys, ["predict", files / "lgb.qs", write(tmp_path, frame.assign(rank=1), "r.csv"),
                                      "--keep", "rank"], 1,
                   _ranking.KEEP_RANK_MESSAGE.format(path=tmp_path / "r.csv", column="rank"))
