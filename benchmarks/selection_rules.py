"""Issue 21: held-out selection rules for QuantileClassifier, measured offline on recorded candidates.

``collect`` runs QuantileClassifier's K-fold selection for one (set, operating point, split) as
the estimator does (same folds, seeds, starts and epoch grid) and records every candidate's
out-of-fold scores on the training half, plus the test-half metric of every candidate refitted
on the whole training half (one run per restart, scored at every epoch count). It records two
starts of restart 0: the logistic start of today (``alpha = 1 / n``) and one whose penalty is
chosen by the out-of-fold log-loss over a grid of C, and the out-of-fold scores and test metric of
logistic regression at every C of the grid. ``evaluate`` applies each candidate rule to the recorded
arrays and looks up the test metric of what it picks, so every rule is compared on the very
same trained models.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/selection_rules.py collect --suite dev --splits 20 --out /tmp/rules_dev
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/selection_rules.py collect --suite paper --splits 20 --out /tmp/rules_paper
    .venv/bin/python benchmarks/selection_rules.py evaluate /tmp/rules_dev /tmp/rules_paper \
        --out results/selection_rules/rules_20splits.csv

``collect --learning-rate 2.0`` trains the candidates with another step (QuantileClassifier's
``learning_rate``; docs/selection.md has what 2.0 gave). The recorded arrays (about 0.5 GB for the
development suite at 20 splits) stay outside the repository; the evaluated rows (one per set,
operating point, split, start and rule) and the two tables are what ``--out`` writes. The rules
(``RULES``):

====================  ==================================================================================
``binomial_z2``       the rule before issue 21: mean fold gain over the start above 2 binomial
                      standard errors (``selection._start_rule.select_over_start``)
``pooled_p90``        the largest out-of-fold metric among the candidates that beat the start in
                      90 % of paired bootstrap resamples, else the start
``loss``              the lowest mean held-out surrogate loss (the start included)
``plausible_p90``     the lowest held-out loss among the candidates that the best out-of-fold metric
                      does not beat in 90 % of the resamples (a one-standard-error rule)
``hybrid_g20`` ..     ``pooled_p90``, else the lowest loss unless the start beats it in 20, 30 (the
                      shipped rule, ``selection._out_of_fold_rule``) or 50 % of the resamples
``pooled_loss_g30``   ``hybrid_g30`` with the loss of all folds' held-out scores pooled (one threshold
                      over every training row, as the metric's step pools them) instead of the folds' mean
``last_epoch_g30``    ``hybrid_g30`` whose loss step keeps the trained model: the restart with the lowest
                      mean held-out loss at the last epoch, at that epoch (the paper's protocol)
====================  ==================================================================================

and three starts of restart 0: ``base`` (``alpha = 1 / n``, as shipped), ``cstar`` (restart 0
trained from logistic regression with C chosen by the out-of-fold log-loss) and ``lrref`` (the
shipped training, but the reference and fall-back is that logistic regression).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.real_data import DEFAULT_DATA, DEV_SETS, load, subsample  # noqa: E402
from quantile_surrogate.estimators._standardize import standardize_columns, standardizer  # noqa: E402
from quantile_surrogate.experiments.paper import PROTOCOLS  # noqa: E402
from quantile_surrogate.objectives import objective_metric, predict_scores  # noqa: E402
from quantile_surrogate.selection._cross_fit import build_start, epoch_grid, train_from  # noqa: E402
from quantile_surrogate.selection._scorer import FoldData  # noqa: E402
from quantile_surrogate.selection._splits import k_folds  # noqa: E402
from quantile_surrogate.training.models import build_scorer, fit_logistic  # noqa: E402
from quantile_surrogate._utils.seeding import restart_seeds  # noqa: E402

CS = np.logspace(-4, 4, 9)
DEV_POINTS = (("precision_at_recall", 0.9), ("precision_at_rate", 0.05), ("precision_at_recall", 0.98),
              ("precision_at_rate", 0.01))


def settings_for(objective, target, bandwidth, learning_rate=0.1):
    return dict(objective=objective, target=target, form="fp", quantile="kernel", bandwidth=bandwidth,
                surrogate="logistic", learning_rate=learning_rate, momentum=0.9, alpha=1e-3, batch_size=None,
                subset_batch_size=None, subset_from_batch=False, verbose=False)


def logistic_at(X, y, C, seed):
    model = build_start(lambda: build_scorer(X.shape[1]), FoldData(X, y, np.arange(len(y))), seed, False)
    fit_logistic(model, X, y, alpha=1.0 / (C * X.shape[0]))
    return model


def log_loss(y, s):
    return float(np.mean(np.logaddexp(0, s) - y * s))


def run_item(X_train, y_train, X_test, y_test, points, bandwidth, seed, folds=3, n_restarts=3, max_epochs=200,
             learning_rate=0.1):
    torch.set_num_threads(1)
    mean, scale = standardizer(X_train)
    Xt = torch.as_tensor(standardize_columns(X_train, mean, scale))
    Xs = torch.as_tensor(standardize_columns(X_test, mean, scale))
    yt = torch.as_tensor(y_train)
    factory = lambda: build_scorer(Xt.shape[1])  # noqa: E731
    seeds = restart_seeds(seed, n_restarts)
    fold_pairs = k_folds(y_train, None, folds, seed)
    fold_id = np.zeros(len(y_train), dtype=np.int64)
    for k, (_, held) in enumerate(fold_pairs):
        fold_id[held] = k
    # logistic regression at every C: out-of-fold scores, and the test scores of the refit
    lr_oof = np.zeros((len(CS), len(y_train)))
    for k, (fit_rows, held_rows) in enumerate(fold_pairs):
        for c, C in enumerate(CS):
            model = logistic_at(Xt[fit_rows], yt[fit_rows], C, seeds[0][0])
            lr_oof[c, held_rows] = predict_scores(model, Xt[held_rows]).numpy()
    lr_test = np.stack([predict_scores(logistic_at(Xt, yt, C, seeds[0][0]), Xs).numpy() for C in CS])
    best_c = int(np.argmin([log_loss(y_train, s) for s in lr_oof]))
    grid = epoch_grid(max_epochs)
    position = {int(e): i for i, e in enumerate(grid)}
    out = dict(y_train=y_train, y_test=y_test, fold_id=fold_id, lr_oof=lr_oof, grid=grid, best_c=best_c,
               lr_test_metric={p: np.array([objective_metric(y_test, s, objective=p[0], target=p[1]) for s in lr_test])
                               for p in points})
    starts = {"base": None, "cstar": CS[best_c]}
    for point in points:
        settings = settings_for(*point, bandwidth, learning_rate)
        for variant, C in starts.items():
            restarts = range(n_restarts) if variant == "base" else range(1)
            oof = np.full((len(restarts), len(grid), len(y_train)), np.nan)
            test_metric = np.full((len(restarts), len(grid)), np.nan)
            for r in restarts:
                def recorder(target_array, rows, X_eval):
                    def record(info):
                        i = position.get(int(info["epoch"]))
                        if i is not None:
                            with torch.no_grad():
                                target_array(i, predict_scores(info["model"], X_eval).numpy())
                    return record

                for k, (fit_rows, held_rows) in enumerate(fold_pairs):
                    fit = FoldData(Xt, yt, fit_rows)
                    if C is None:
                        start = build_start(factory, fit, seeds[r][0], r == 0)
                    else:
                        start = logistic_at(fit.X, fit.y, C, seeds[0][0])

                    def put(i, s, k_rows=held_rows, rr=r):
                        oof[rr, i, k_rows] = s
                    put(0, predict_scores(start, Xt[held_rows]).detach().numpy())
                    train_from(start, fit, settings, max_epochs, seeds[r][1], recorder(put, held_rows, Xt[held_rows]))
                whole = FoldData(Xt, yt, np.arange(len(y_train)))
                start = build_start(factory, whole, seeds[r][0], r == 0) if C is None else logistic_at(Xt, yt, C, seeds[0][0])

                def put_test(i, s, rr=r):
                    test_metric[rr, i] = objective_metric(y_test, s, objective=point[0], target=point[1])
                put_test(0, predict_scores(start, Xs).detach().numpy())
                train_from(start, whole, settings, max_epochs, seeds[r][1], recorder(put_test, None, Xs))
            out[(point, variant, "oof")] = oof.astype(np.float64)
            out[(point, variant, "test")] = test_metric
    return out


def items(suite, splits, data, max_rows, sets=None):
    if suite == "dev":
        for name in sets or DEV_SETS:
            X, y = load(name, data)
            if max_rows and len(y) > max_rows:
                X, y = subsample(X, y, max_rows)
            for split in range(splits):
                yield name, split, X, y, 0.5, DEV_POINTS, 0.05
    else:
        for name in sets or ("ionosphere", "housing"):
            X, y = load(name, data)
            protocol = PROTOCOLS[name]
            points = tuple(("precision_at_rate", t) for t in protocol.taus)
            for split in range(splits):
                yield name, split, X, y, 1 - protocol.train_fraction, points, protocol.bandwidth


def save_record(path: Path, record: dict) -> None:
    """Write a record as plain arrays in an ``.npz`` (no pickle: a recorded folder may come from anyone)."""
    arrays = {}
    for key, value in record.items():
        if isinstance(key, tuple):  # ((objective, target), start, "oof" | "test")
            (objective, target), start, kind = key
            arrays[f"run|{objective}|{target!r}|{start}|{kind}"] = value
        elif key == "lr_test_metric":
            arrays.update({f"lr|{objective}|{target!r}": v for (objective, target), v in value.items()})
        elif key == "points":
            arrays["point_objectives"] = np.array([objective for objective, _ in value])
            arrays["point_targets"] = np.array([target for _, target in value], dtype=np.float64)
        else:
            arrays[key] = np.asarray(value)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.rename(path)


def load_record(path) -> dict:
    """The record :func:`save_record` wrote (``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    points = [(str(o), float(t)) for o, t in zip(arrays.pop("point_objectives"), arrays.pop("point_targets"))]
    record = {"points": points, "lr_test_metric": {}, "best_c": int(arrays.pop("best_c"))}
    targets = {repr(t): t for _, t in points}
    for key, value in arrays.items():
        parts = key.split("|")
        if parts[0] == "run":
            record[((parts[1], targets[parts[2]]), parts[3], parts[4])] = value
        elif parts[0] == "lr":
            record["lr_test_metric"][(parts[1], targets[parts[2]])] = value
        else:
            record[key] = value
    return record


def collect_one(out_dir, name, split, X, y, test_size, points, bandwidth, max_epochs=200, folds=3, learning_rate=0.1):
    path = Path(out_dir) / f"{name}__{split}.npz"
    if path.exists():
        return
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, stratify=y, random_state=split)
    record = run_item(X_train, y_train.astype(np.int64), X_test, y_test.astype(np.int64), points, bandwidth, split,
                      max_epochs=max_epochs, folds=folds, learning_rate=learning_rate)
    record["points"] = points
    save_record(path, record)


# -- evaluate: every rule on the recorded candidates ------------------------------------------------------------------
def analyse(record, point, variant, bandwidth, seed):
    """The arrays the rules read, for one (record, operating point, start)."""
    from quantile_surrogate.objectives import get_objective
    from quantile_surrogate.selection._out_of_fold_rule import paired_resamples
    from quantile_surrogate.selection._scorer import held_out_loss

    y, fold = record["y_train"], record["fold_id"]
    positive = y == 1
    oof, test = record[(point, "base", "oof")].copy(), record[(point, "base", "test")].copy()
    if variant == "cstar":
        oof[0], test[0] = record[(point, "cstar", "oof")][0], record[(point, "cstar", "test")][0]
    if variant == "lrref":  # logistic regression with C* prepended as the reference (0, 0)
        pad = np.full((1,) + oof.shape[1:], np.nan)
        pad[0, 0] = record["lr_oof"][record["best_c"]]
        oof = np.concatenate([pad, oof])
        test = np.concatenate([np.full((1, test.shape[1]), np.nan), test])
        test[0, 0] = record["lr_test_metric"][point][record["best_c"]]
    exists = ~np.isnan(oof).all(axis=-1)
    in_subset = torch.as_tensor(get_objective(point[0]).subset_mask(positive))
    settings = settings_for(*point, bandwidth)
    folds = fold.max() + 1
    fold_loss = np.full((folds,) + exists.shape, np.nan)
    fold_metric = np.full_like(fold_loss, np.nan)
    pooled_loss = np.full(exists.shape, np.nan)  # one threshold over all folds' held-out scores (pooled_loss_g30)
    every = FoldData(torch.zeros((len(y), 0), dtype=torch.float64), torch.as_tensor(y), np.arange(len(y)),
                     in_subset=in_subset)
    for index in zip(*np.nonzero(exists)):
        pooled_loss[index] = held_out_loss(torch.as_tensor(oof[index]), every, settings)
    for k in range(folds):
        rows = np.flatnonzero(fold == k)
        held = FoldData(torch.zeros((len(y), 0), dtype=torch.float64), torch.as_tensor(y), rows, in_subset=in_subset)
        for index in zip(*np.nonzero(exists)):
            scores = oof[index][rows]
            fold_loss[(k, *index)] = held_out_loss(torch.as_tensor(scores), held, settings)
            fold_metric[(k, *index)] = objective_metric(y[rows], scores, objective=point[0], target=point[1])
    metric, resampled = paired_resamples(positive, np.where(exists[..., None], oof, -np.inf).reshape(-1, len(y)),
                                         *point, seed=seed)
    return dict(oof=oof, test=test, exists=exists, fold_loss=fold_loss, fold_metric=fold_metric, positive=positive,
                pooled_loss=pooled_loss,
                metric=metric.reshape(exists.shape), resampled=resampled.reshape((-1,) + exists.shape),
                folds_y=[y[fold == k] for k in range(folds)], point=point, seed=seed,
                lr_one=record["lr_test_metric"][point][int(np.flatnonzero(CS == 1.0)[0])])


def _share(a, first, second):
    r = a["resampled"]
    return np.mean(r[(slice(None), *first)] > r[(slice(None), *second)], axis=0)


def _clear_winner(a, win, reference=(0, 0)):
    r = a["resampled"]
    share = np.mean(r > r[(slice(None), *reference)][:, None, None], axis=0)
    clear = a["exists"] & (a["metric"] > a["metric"][reference]) & (share >= win)
    clear[reference] = False
    return None if not clear.any() else np.unravel_index(np.argmax(np.where(clear, a["metric"], -np.inf)), clear.shape)


def _lowest_loss(a, allowed=None, loss=None):
    loss = a["fold_loss"].mean(axis=0) if loss is None else loss
    loss = np.where(a["exists"] if allowed is None else allowed, loss, np.inf)
    return np.unravel_index(np.argmin(np.nan_to_num(loss, nan=np.inf)), loss.shape)


def rule_binomial(a):
    from quantile_surrogate.selection._start_rule import metric_noises, select_over_start

    fm = a["fold_metric"]
    noise = np.stack([metric_noises(*a["point"], a["folds_y"][k], fm[k]) for k in range(fm.shape[0])])
    return select_over_start(fm, a["fold_loss"], (0, 0), noise[:, 0, 0], 2.0, noise)[0]


def rule_guarded(a, lowest, guard=0.3):
    """The shipped rule's steps 1 and 3 around a step 2 that proposed ``lowest``: the clear metric winner, else
    ``lowest`` unless the start beats it in ``guard`` of the resamples."""
    winner = _clear_winner(a, 0.9)
    if winner is not None:
        return winner
    return lowest if lowest != (0, 0) and _share(a, (0, 0), lowest) < guard else (0, 0)


def rule_hybrid(a, guard):
    allowed = a["exists"].copy()
    allowed[0, 0] = a["lrref"] is False  # the lrref reference is no loss candidate: its small scores have a small loss
    return rule_guarded(a, _lowest_loss(a, allowed), guard)


def rule_last_epoch(a):
    """Step 2 keeps the trained model (the paper's protocol): the restart whose last epoch has the lowest mean held-out
    loss, at that last epoch."""
    last = np.zeros_like(a["exists"])
    last[:, -1] = a["exists"][:, -1]
    return rule_guarded(a, _lowest_loss(a, last))


def rule_plausible(a, p=0.9):
    best = np.unravel_index(np.argmax(np.where(a["exists"], a["metric"], -np.inf)), a["exists"].shape)
    r = a["resampled"]
    beaten = np.mean(r[(slice(None), *best)][:, None, None] > r, axis=0) >= p
    return _lowest_loss(a, a["exists"] & ~beaten)


def rule_shipped(a):
    from quantile_surrogate.selection._out_of_fold_rule import select_out_of_fold

    return select_out_of_fold(a["oof"], a["fold_loss"], a["positive"], *a["point"], (0, 0), seed=a["seed"])[0]


RULES = {
    "binomial_z2": rule_binomial,
    "pooled_p90": lambda a: _clear_winner(a, 0.9) or (0, 0),
    "loss": lambda a: _lowest_loss(a),
    "plausible_p90": rule_plausible,
    "hybrid_g20": lambda a: rule_hybrid(a, 0.2),
    "hybrid_g30": lambda a: rule_hybrid(a, 0.3),
    "hybrid_g50": lambda a: rule_hybrid(a, 0.5),
    "shipped": rule_shipped,
    "pooled_loss_g30": lambda a: rule_guarded(a, _lowest_loss(a, loss=a["pooled_loss"])),
    "last_epoch_g30": rule_last_epoch,
}


def evaluate_file(path):
    torch.set_num_threads(1)
    record = load_record(path)
    name, split = Path(path).stem.split("__")
    bandwidth = PROTOCOLS[name].bandwidth if name in PROTOCOLS else 0.05
    rows = []
    for point in record["points"]:
        for variant in ("base", "cstar", "lrref"):
            a = analyse(record, point, variant, bandwidth, int(split))
            a["lrref"] = variant == "lrref"
            for rule, choose in RULES.items():
                if variant == "lrref" and rule in ("binomial_z2", "loss", "plausible_p90", "shipped"):
                    continue
                index = tuple(int(i) for i in choose(a))
                rows.append(dict(set=name, split=int(split), objective=point[0], target=point[1], start=variant,
                                 rule=rule, value=a["test"][index], logistic_c1=a["lr_one"],
                                 restart=index[0], epochs=int(record["grid"][index[1]])))
    return rows


def tables(frame):
    """Development suite: mean and smallest per-set gain over LR(C=1); paper sets: mean and smallest gap to Q3."""
    from quantile_surrogate.experiments.paper import PAPER_TABLES

    dev = frame[~frame["set"].isin(list(PROTOCOLS))].assign(gain=lambda f: f.value - f.logistic_c1)
    cells = dev.groupby(["start", "rule", "objective", "target", "set"]).gain.mean()
    dev_table = cells.groupby(["start", "rule", "objective", "target"]).agg(["mean", "min"]).unstack(["objective", "target"])
    paper = frame[frame["set"].isin(list(PROTOCOLS))]
    paper = paper.assign(gap=paper.value - [PAPER_TABLES[s]["Q3"][t][0] for s, t in zip(paper["set"], paper.target)])
    cells = paper.groupby(["start", "rule", "set", "target"]).gap.mean()
    paper_table = cells.groupby(["start", "rule", "set"]).agg(["mean", "min"]).unstack("set")
    return dev_table.round(3), paper_table.round(3)


def main(argv=None):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--suite", choices=("dev", "paper"), required=True)
    c.add_argument("--splits", type=int, default=20)
    c.add_argument("--out", required=True)
    c.add_argument("--data", default=str(DEFAULT_DATA))
    c.add_argument("--max-rows", type=int, default=10000)
    c.add_argument("--n-jobs", type=int, default=2)
    c.add_argument("--sets", default=None, help="comma-separated names (default: the whole suite)")
    c.add_argument("--max-epochs", type=int, default=200, help="QuantileClassifier's max_epochs (the tests: 5)")
    c.add_argument("--folds", type=int, default=3, help="selection_folds (5 was tried on the small sets)")
    c.add_argument("--learning-rate", type=float, default=0.1, help="QuantileClassifier's learning_rate (2.0 was tried)")
    e = sub.add_parser("evaluate")
    e.add_argument("folders", nargs="+")
    e.add_argument("--n-jobs", type=int, default=2)
    e.add_argument("--out", default=None, help="CSV of the evaluated rows (must not exist); tables beside it as .md")
    args = parser.parse_args(argv)
    if args.command == "evaluate":
        import pandas as pd

        from quantile_surrogate._utils.files import atomic_writes

        paths = [p for folder in args.folders for p in sorted(Path(folder).glob("*__*.npz")) if ".tmp" not in p.name]
        rows = Parallel(n_jobs=args.n_jobs)(delayed(evaluate_file)(str(p)) for p in paths)
        frame = pd.DataFrame([row for part in rows for row in part])
        dev_table, paper_table = tables(frame)
        text = (f"Development suite: gain over LR(C=1) + threshold, mean over sets and the smallest set\n\n```\n"
                f"{dev_table.to_string()}\n```\n\nPaper sets: gap to the paper's Q3, mean over tau and the smallest\n\n"
                f"```\n{paper_table.to_string()}\n```\n")
        print(text)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            atomic_writes([(Path(args.out), lambda path: frame.to_csv(path, index=False)),
                           (Path(args.out).with_suffix(".md"), lambda path: Path(path).write_text(text))])
        return
    Path(args.out).mkdir(parents=True, exist_ok=True)
    sets = None if args.sets is None else args.sets.split(",")
    work = list(items(args.suite, args.splits, args.data, args.max_rows, sets))
    Parallel(n_jobs=args.n_jobs, verbose=5)(delayed(collect_one)(args.out, *item, max_epochs=args.max_epochs,
                                                                 folds=args.folds, learning_rate=args.learning_rate)
                                            for item in work)


if __name__ == "__main__":
    main()
