"""Issue 26: precision@K within queries on LightGBM's lambdarank example, QuantileRanker against learning-to-rank.

Data (``../shared/data/lightgbm_rank``, nothing is downloaded; see its README): ``rank.train``,
3,005 documents x 300 sparse features, relevance 0 to 4, in 201 queries of consecutive rows
(``rank.train.query``). Two settings of the binary label: ``3`` (relevant = relevance >= 3: 9.7 %
of the rows, 101 queries with a relevant row) and ``2`` (relevance >= 2). NDCG@5 is always on the
graded relevance (gain ``2^rel - 1``).

Methods (library defaults, no tuning; every fit on one thread: ``n_jobs=1`` for the scikit-learn
wrappers of LightGBM and XGBoost, whose default takes every core, and OpenMP limited to one thread
around all fits):

==============  ==========================================================================
``lambdarank``  ``lightgbm.LGBMRanker(objective="lambdarank")`` on the graded relevance
``xendcg``      ``lightgbm.LGBMRanker(objective="rank_xendcg")`` on the graded relevance
``pointwise``   ``lightgbm.LGBMClassifier`` on the setting's binary label; its raw score ranks
``xgb_ndcg``    ``xgboost.XGBRanker(objective="rank:ndcg")`` on the graded relevance, queries by ``qid``
``qr``          ``QuantileRanker(k=5)`` on the setting's binary label (``group=`` sizes): its
                precision@k model blended with a LambdaMART booster on the same label (the default)
``qr_alone``    ``QuantileRanker(k=5, blend=False)``: the precision@k model alone
==============  ==========================================================================

The graded methods do not see the setting: each is fitted once per fold and scored under both
settings (their rows of the two settings share one fit and its seconds).

Cross-validation: 5 folds of whole queries (a query never straddles train and test), repeated
``--repeats`` times; repeat ``r`` shuffles the queries with seed ``r`` and seeds every model with
``r``. Rows keep their order inside each part, so each part's queries stay consecutive and its
group sizes are the sizes of its queries.

One CSV row per (setting, method, repeat, fold): ``p_at_5``, ``p_at_10`` (mean precision@K over
the test queries with a relevant row, binary label of the setting), ``ndcg_at_5`` (graded),
``fit_seconds``, ``rounds`` (boosting rounds of the fitted model: for ``qr`` its log-loss start plus
its kept precision@K rounds, plus its blend's LambdaMART rounds), ``seconds_per_round`` (fit seconds / rounds; ``qr``'s fit seconds
include its fits on held-out queries that choose the rounds), ``rounds_trained`` and
``seconds_per_round_trained`` (``qr`` counts the rounds of those fits too, each stopped where the
shortest one stopped, so a lower bound; the others: ``rounds``), ``n_train_queries``,
``n_test_queries``. The summary (printed, and written next to ``--out`` as .md) gives per setting
and method the mean ± standard error over the repeat x fold rows and, since folds share training
rows and are not independent, the standard error over the ``repeats`` means; a 95 % interval of
P@5 on repeat 0's out-of-fold scores, resampling whole queries (``bootstrap_over_queries``); and
the issue's targets for ``qr``, from differences paired over the same folds.

Full run (on one core; it refuses to overwrite an existing file):

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/ranking.py --repeats 4 \\
        --out results/ranking/rank_4repeats.csv

``--settings 3,2`` picks the settings, ``--methods lambdarank,pointwise`` the methods,
``--progress`` prints one line per fit, and ``--quick`` is a seconds-long smoke run (1 repeat,
2 folds, 10 boosting rounds; used by the tests).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import lightgbm
import numpy as np
import pandas as pd
import xgboost
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._output import mean_se, names, out_problem, report  # noqa: E402
from benchmarks.real_data_targets import paired  # noqa: E402
from quantile_surrogate.metrics import bootstrap_over_queries, ndcg_at_k, precision_at_k_per_query  # noqa: E402

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = ("3", "2")
METHODS = ("lambdarank", "xendcg", "pointwise", "xgb_ndcg", "qr", "qr_alone")
GRADED = ("lambdarank", "xendcg", "xgb_ndcg")
"""Methods fitted on the graded relevance: one fit per fold serves every setting."""
FOLDS, K = 5, 5
QUICK_ROUNDS = 10


# -- data and folds --------------------------------------------------------------------------
def load(data_dir=DATA_DIR):
    """(X sparse CSR (3005, 300), graded relevance (int), query code of each row, query sizes)."""
    from sklearn.datasets import load_svmlight_file

    folder = Path(data_dir) / "lightgbm_rank"
    X, relevance = load_svmlight_file(str(folder / "rank.train"), n_features=300)
    sizes = np.atleast_1d(np.loadtxt(folder / "rank.train.query", dtype=int))
    if sizes.sum() != X.shape[0]:
        raise ValueError(f"rank.train.query sizes sum to {sizes.sum()}, rank.train has {X.shape[0]} rows")
    return X.tocsr(), relevance.astype(np.int64), np.repeat(np.arange(sizes.size), sizes), sizes


def folds(n_queries, n_folds, seed):
    """The fold of each query: the queries shuffled with ``seed`` and dealt into ``n_folds`` near-equal parts."""
    fold = np.empty(n_queries, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n_queries)] = np.arange(n_queries) % n_folds
    return fold


def part(query, sizes, chosen):
    """(row indices in their order, group sizes) of the queries where ``chosen`` (a bool per query) holds."""
    return np.flatnonzero(chosen[query]), sizes[chosen]


# -- methods: each fits (X, graded relevance, binary label, group sizes, query codes) -------------------------
#    -> (scorer, rounds of the model, rounds trained)
def _rounds(settings, quick):
    """The settings, one thread (``n_jobs=None`` would take every core), and 10 rounds with ``quick``."""
    return dict(settings, n_jobs=1, **({"n_estimators": QUICK_ROUNDS} if quick else {}))


def _lgbm_ranker(objective, X, graded, binary, sizes, query, seed, quick):
    model = lightgbm.LGBMRanker(**_rounds(dict(objective=objective, random_state=seed, verbose=-1), quick))
    model.fit(X, graded, group=sizes)
    return (lambda X_: model.predict(X_)), int(model.n_iter_), int(model.n_iter_)


def _pointwise(X, graded, binary, sizes, query, seed, quick):
    model = lightgbm.LGBMClassifier(**_rounds(dict(random_state=seed, verbose=-1), quick)).fit(X, binary)
    return (lambda X_: model.predict(X_, raw_score=True)), int(model.n_iter_), int(model.n_iter_)


def _xgb_ndcg(X, graded, binary, sizes, query, seed, quick):
    model = xgboost.XGBRanker(**_rounds(dict(objective="rank:ndcg", random_state=seed), quick))
    model.fit(X, graded, qid=query)  # qid: one id per row, sorted (each part keeps the rows' order)
    rounds = int(model.get_booster().num_boosted_rounds())
    return (lambda X_: model.predict(X_)), rounds, rounds


def _qr(X, graded, binary, sizes, query, seed, quick, blend=True):
    from quantile_surrogate import QuantileRanker

    settings = dict(n_estimators=QUICK_ROUNDS, n_quantile_estimators=QUICK_ROUNDS, validation_splits=1) if quick else {}
    model = QuantileRanker(k=K, random_state=seed, blend=blend, **settings).fit(X, binary, group=sizes)  # OpenMP: 1
    member = 0 if model.ranking_model_ is None else model.ranking_model_.num_trees()  # the blend's LambdaMART rounds
    rounds = int(model.n_logloss_estimators_ + model.best_iteration_ + member)
    curve, n_splits = model.validation_curve_, model.selection_["n_splits"]
    held = 0 if curve is None else n_splits * (model.n_logloss_estimators_ + len(curve) - 1)
    return (lambda X_: model.predict(X_)), rounds, rounds + held


FIT = {"lambdarank": partial(_lgbm_ranker, "lambdarank"), "xendcg": partial(_lgbm_ranker, "rank_xendcg"),
       "pointwise": _pointwise, "xgb_ndcg": _xgb_ndcg, "qr": _qr, "qr_alone": partial(_qr, blend=False)}




def has_data(data_dir=DATA_DIR) -> bool:
    return all((Path(data_dir) / "lightgbm_rank" / name).exists() for name in ("rank.train", "rank.train.query"))


def has_ranker() -> bool:
    """Whether ``QuantileRanker`` can be imported (issue 26's estimator)."""
    try:
        from quantile_surrogate import QuantileRanker  # noqa: F401
    except ImportError:
        return False
    return True


# -- measures --------------------------------------------------------------------------------
def measures(score, graded, query, setting) -> dict:
    """P@5 and P@10 on the setting's binary label, NDCG@5 on the graded relevance (NaN where no query counts)."""
    binary = (graded >= int(setting)).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning: a part without a relevant row is NaN
        return {"p_at_5": precision_at_k_per_query(binary, score, query, 5),
                "p_at_10": precision_at_k_per_query(binary, score, query, 10),
                "ndcg_at_5": ndcg_at_k(graded, score, query, K)}


def _fit(method, X, graded, binary, sizes, query, seed, quick):
    """(scorer, rounds, rounds trained, seconds) of one fit."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer, rounds, trained = FIT[method](X, graded, binary, sizes, query, seed, quick)
    return scorer, rounds, trained, time.perf_counter() - start


def _one_fold(data, train, test, settings, methods, repeat, fold, quick, progress):
    """The rows of one fold and its test scores, ``{(setting, method): scores}``."""
    (X, graded, query, _), (rows_, sizes) = data, train
    rows, scores = [], {}
    for method in methods:
        for setting in settings:
            if method not in GRADED or setting == settings[0]:  # a graded method fits once for every setting
                binary = (graded[rows_] >= int(setting)).astype(np.int64)
                scorer, rounds, trained, seconds = _fit(method, X[rows_], graded[rows_], binary, sizes, query[rows_],
                                               repeat, quick)
                score = np.asarray(scorer(X[test]), dtype=np.float64)
                if progress:
                    print(f"repeat {repeat} fold {fold} {method} (setting {setting}): {seconds:.2f} s, "
                          f"{rounds} rounds", flush=True)
            scores[setting, method] = score
            rows.append({"setting": setting, "method": method, "repeat": repeat, "fold": fold,
                         **measures(score, graded[test], query[test], setting), "fit_seconds": seconds,
                         "rounds": rounds, "seconds_per_round": seconds / rounds if rounds else np.nan,
                         "rounds_trained": trained,
                         "seconds_per_round_trained": seconds / trained if trained else np.nan,
                         "n_train_queries": len(sizes), "n_test_queries": len(np.unique(query[test]))})
    return rows, scores


def run(settings=SETTINGS, methods=METHODS, repeats=4, quick=False, progress=False, data_dir=DATA_DIR):
    """(rows, intervals): one row per (setting, method, repeat, fold); repeat 0's out-of-fold P@5 intervals."""
    settings = names(settings, SETTINGS, "--settings")
    methods = names(methods, METHODS, "--methods")
    X, graded, query, sizes = data = load(data_dir)
    n_folds = 2 if quick else FOLDS
    rows, out_of_fold = [], {key: np.zeros(len(graded)) for key in ((s, m) for s in settings for m in methods)}
    with threadpool_limits(limits=1):
        for repeat in range(repeats):
            fold_of = folds(len(sizes), n_folds, repeat)
            for fold in range(n_folds):
                test = part(query, sizes, fold_of == fold)[0]
                fold_rows, scores = _one_fold(data, part(query, sizes, fold_of != fold), test, settings,
                                              methods, repeat, fold, quick, progress)
                rows += fold_rows
                for key, score in scores.items():
                    if repeat == 0:
                        out_of_fold[key][test] = score
    return pd.DataFrame(rows), intervals(out_of_fold, graded, query, 200 if quick else 1000)


def intervals(out_of_fold, graded, query, n_resamples) -> pd.DataFrame:
    """P@5 on the out-of-fold scores of every query, with a 95 % percentile interval resampling queries.

    Each query is scored by the one model it was held out from, and P@K compares scores within a
    query only, so the pooled out-of-fold scores give one P@5 over all queries.
    """
    rows = []
    for (setting, method), score in out_of_fold.items():
        binary = (graded >= int(setting)).astype(np.int64)
        value, low, high, _ = bootstrap_over_queries(partial(precision_at_k_per_query, k=K), binary, score, query,
                                                     n_resamples=n_resamples)
        rows.append({"setting": setting, "method": method, "p_at_5": value, "low": low, "high": high})
    return pd.DataFrame(rows, columns=["setting", "method", "p_at_5", "low", "high"])


# -- summary ---------------------------------------------------------------------------------
def _se(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")




def _cell(part_, column) -> str:
    """``mean ± s.e. over folds (s.e. over repeat means)``."""
    se = _se(part_.groupby("repeat")[column].mean())
    return f"{mean_se(part_[column])} ({se:.3f})" if np.isfinite(se) else mean_se(part_[column])


def _difference(rows, column, method, reference) -> str:
    """(mean, s.e. over folds, text) of ``method - reference``, paired by (repeat, fold); the text adds the
    s.e. over the repeats' mean differences where there are several repeats."""
    wide = rows.pivot_table(index=["repeat", "fold"], columns="method", values=column)
    mean, se = paired(wide, method, reference)
    se_repeats = paired(wide.groupby(level="repeat").mean(), method, reference)[1]
    more = f" (s.e. over repeat means {se_repeats:.4f})" if np.isfinite(se_repeats) else ""
    return mean, se, f"{method} - {reference} = {mean:+.4f} ± {se:.4f}{more}"


def targets(rows: pd.DataFrame) -> list:
    """The issue's four targets for ``qr`` on the rows of one setting, each with its numbers."""
    present, word = set(rows.method), {True: "met", False: "missed"}
    if "qr" not in present:
        return ["- targets: no `qr` rows"]
    lines = []
    for number, reference, margin, text in (("1", "lambdarank", None, "within one s.e."),
                                            ("2", "pointwise", 0.01, "+ 0.01")):
        if reference not in present:
            lines.append(f"- ({number}) P@5 against `{reference}`: no rows")
            continue
        mean, se, shown = _difference(rows, "p_at_5", "qr", reference)
        ok = mean >= -se - 1e-12 if margin is None else mean >= margin - 1e-12
        lines.append(f"- ({number}) P@5 >= `{reference}` {text}: {shown}: {word[bool(ok)]}")
    if "lambdarank" not in present:
        return lines + ["- (3) seconds per round against `lambdarank`: no rows",
                        "- (4) NDCG@5 against `lambdarank`: no rows"]
    per_round = rows.groupby("method")[["seconds_per_round", "seconds_per_round_trained"]].mean() * 1e3
    ratio, trained = per_round.loc["qr"] / per_round.loc["lambdarank"]
    ms = per_round.seconds_per_round
    lines.append(f"- (3) fit seconds per round of the model <= 2 x `lambdarank`'s: qr {ms['qr']:.2f} ms, "
                 f"lambdarank {ms['lambdarank']:.2f} ms (ratio {ratio:.2f}): {word[bool(ratio <= 2)]}; per round "
                 f"trained, counting qr's fits on held-out queries: "
                 f"{per_round.seconds_per_round_trained['qr']:.2f} ms (ratio {trained:.2f})")
    mean, se, shown = _difference(rows, "ndcg_at_5", "lambdarank", "qr")
    verdict = "lambdarank wins" if mean > se else ("qr wins" if mean < -se else "within one s.e.")
    lines.append(f"- (4) NDCG@5: {shown}: {verdict}")
    return lines


def summary(rows: pd.DataFrame, intervals_=None) -> str:
    """Markdown: per setting, a table of mean ± s.e. per method, then the ``qr`` targets."""
    blocks = []
    header = ["method", "P@5", "P@10", "NDCG@5", "fit s", "rounds", "ms / round", "P@5 out-of-fold, repeat 0 [95 %]"]
    for setting, part_ in rows.groupby("setting", sort=False):
        n_repeats, n_folds = part_.repeat.nunique(), part_.fold.nunique()
        lines = [f"**Relevant = relevance >= {setting}** ({n_repeats} repeat{'s' * (n_repeats > 1)} x {n_folds} folds "
                 f"of queries; "
                 f"NDCG@5 on the graded relevance)", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for method in [m for m in METHODS if m in set(part_.method)]:
            one = part_[part_.method == method]
            band = "-"
            if intervals_ is not None and len(intervals_):
                hit = intervals_[(intervals_.setting == setting) & (intervals_.method == method)]
                band = "-" if hit.empty else "{:.3f} [{:.3f}, {:.3f}]".format(*hit.iloc[0][["p_at_5", "low", "high"]])
            cells = [method, _cell(one, "p_at_5"), _cell(one, "p_at_10"), _cell(one, "ndcg_at_5"),
                     f"{one.fit_seconds.mean():.2f}", f"{one.rounds.mean():.0f}",
                     f"{one.seconds_per_round.mean() * 1e3:.2f}", band]
            lines.append("| " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines + [""] + targets(part_)))
    return ("Mean ± standard error over the repeat x fold rows (in brackets: the standard error over the "
            "repeats' means; the folds share training queries and are not independent). Targets use "
            "differences paired over the same folds.\n\n" + "\n\n".join(blocks) + "\n")




def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int,
                        help="repetitions of the 5-fold CV, seeds 0.. (default 4; 1 with --quick)")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated relevance cut-offs: 3, 2")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated from {', '.join(METHODS)}")
    parser.add_argument("--data-dir", default=str(DATA_DIR), help="the shared data folder (read only)")
    parser.add_argument("--quick", action="store_true", help="1 repeat, 2 folds, 10 rounds: a smoke run")
    parser.add_argument("--progress", action="store_true", help="print one line per fit")
    parser.add_argument("--out", help="write every fold's rows to this new .csv file, and the summary as .md")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 4)
    try:
        settings = names(args.settings, SETTINGS, "--settings")
        methods = names(args.methods, METHODS, "--methods")
    except ValueError as error:
        parser.error(str(error))
    if repeats < 1:
        parser.error(f"--repeats must be >= 1; got {repeats}")
    problem = None if args.out is None else out_problem(args.out, args.data_dir)
    if problem:
        parser.error(problem)
    if not has_data(args.data_dir):
        parser.error(f"no lightgbm_rank/rank.train(.query) under {args.data_dir} (see ../shared/data/README.md)")
    if {"qr", "qr_alone"} & set(methods) and not has_ranker():
        parser.error("--methods qr needs quantile_surrogate.QuantileRanker, which this version lacks; "
                     "leave qr out (e.g. --methods lambdarank,xendcg,pointwise,xgb_ndcg)")
    rows, bands = run(settings, methods, repeats=repeats, quick=args.quick, progress=args.progress,
                      data_dir=args.data_dir)
    text = summary(rows, bands)
    return report(rows, text, args.out)


if __name__ == "__main__":
    main()
