"""Issue 12's targets read from a per-split CSV of ``benchmarks/real_data.py``.

Two tables per operating point, every difference paired by split (mean ± standard error of the
per-split difference):

1. ``QuantileClassifier`` (``quantile_linear``) minus logistic regression + threshold, against
   scikit-learn's default solve (``logistic``) and, where the CSV has it, the same model solved
   to convergence (``logistic_converged``). Target: on every set at least the baseline within one
   standard error, and never more than 0.01 below it on the mean (marked ✗ otherwise).
2. ``QuantileClassifierCV`` (``quantile_cv``) minus the better of the linear and the MLP
   ``QuantileClassifier`` (``quantile_mlp``), "better" being the one with the higher test mean on that
   set and operating point (an oracle choice that the CV makes from the training half alone).
   Target: never more than 0.01 below on the mean (✗). Beside it: ``quantile_cv`` minus LightGBM
   + threshold (``lightgbm``), where the CSV has it.
3. Issue 24, where the rows also hold ``qb_lightgbm`` and ``lightgbm``: ``quantile_cv`` minus LightGBM +
   threshold (target: at least -0.005 on 10 of 11 sets, never below -0.01: ✗) and minus the best of the
   three families in hindsight (linear, MLP, ``qb_lightgbm``; target: never below -0.01: ✗), on the
   splits every one of these methods has.

A file may be read for some of its methods only, ``FILE:method,method`` (two files holding the same
method from different versions would otherwise be averaged together).

Run::

    .venv/bin/python -m benchmarks.real_data_targets results/real_data/quantile_classifier_20splits.csv \
        results/real_data/quantile_classifier_cv_20splits.csv
    .venv/bin/python -m benchmarks.real_data_targets results/real_data/quantile_classifier_20splits.csv:quantile_linear \
        results/real_data/quantile_classifier_cv_20splits.csv:quantile_mlp \
        results/real_data/quantile_classifier_cv_boosted_10splits.csv
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from quantile_surrogate.objectives import get_objective

TOLERANCE = 0.01


def paired(wide: pd.DataFrame, method: str, reference: str) -> tuple:
    """(mean, standard error) over splits of ``method - reference``; the s.e. is NaN with one split."""
    diff = (wide[method] - wide[reference]).dropna().to_numpy()
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
    return float(diff.mean()), float(se)


def verdict(mean: float, se: float, within_se: bool) -> str:
    """✗ where the difference misses: more than 0.01 below, or (with ``within_se``) more than one s.e. below."""
    missed = mean < -TOLERANCE or (within_se and np.isfinite(se) and mean < -se - 1e-12)
    return " ✗" if missed else ""


def cell(mean: float, se: float, mark: str = "") -> str:
    return f"{mean:+.4f} ± {se:.4f}{mark}"


def tables(frame: pd.DataFrame) -> str:
    lines = []
    for (objective, target), block in frame.groupby(["objective", "target"], sort=False):
        title = get_objective(objective).metric_name.format(target=target)
        methods = set(block.method)
        splits = block.split.nunique()
        lines += [f"## {title} ({splits} splits)", ""]
        sets = list(dict.fromkeys(block.set))
        wide = {name: block[block.set == name].pivot_table(index="split", columns="method", values="value")
                for name in sets}
        baselines = [m for m in ("logistic", "logistic_converged") if m in methods]
        if "quantile_linear" in methods and baselines:
            lines += ["| set | n train | " + " | ".join(f"QC − {b}" for b in baselines) + " |",
                      "|---|---|" + "---|" * len(baselines)]
            missed = {b: [] for b in baselines}
            means = {b: [] for b in baselines}
            for name in sets:
                cells = []
                for b in baselines:
                    mean, se = paired(wide[name], "quantile_linear", b)
                    mark = verdict(mean, se, within_se=True)
                    means[b].append(mean)
                    if mark:
                        missed[b].append(name)
                    cells.append(cell(mean, se, mark))
                n_train = int(block[block.set == name].n_train.iloc[0])
                lines.append(f"| {name} | {n_train} | " + " | ".join(cells) + " |")
            lines.append("")
            for b in baselines:
                lines.append(f"QC − {b}: met on {len(sets) - len(missed[b])} of {len(sets)} sets"
                             f"{' (missed: ' + ', '.join(missed[b]) + ')' if missed[b] else ''}; "
                             f"mean over sets {np.mean(means[b]):+.4f}.")
            lines.append("")
        if {"quantile_cv", "quantile_linear", "quantile_mlp"} <= methods:
            trees = "lightgbm" in methods
            lines += ["| set | CV | linear | MLP | CV − better of linear/MLP |" + (" CV − LightGBM |" if trees else ""),
                      "|---|---|---|---|---|" + ("---|" if trees else "")]
            missed, means, tree_means = [], [], []
            for name in sets:
                w = wide[name]
                better = "quantile_linear" if w["quantile_linear"].mean() >= w["quantile_mlp"].mean() else "quantile_mlp"
                mean, se = paired(w, "quantile_cv", better)
                mark = verdict(mean, se, within_se=False)
                means.append(mean)
                if mark:
                    missed.append(name)
                row = (f"| {name} | {w['quantile_cv'].mean():.3f} | {w['quantile_linear'].mean():.3f} | "
                       f"{w['quantile_mlp'].mean():.3f} | {cell(mean, se, mark)} ({'linear' if better == 'quantile_linear' else 'MLP'}) |")
                if trees:
                    tree_mean, tree_se = paired(w, "quantile_cv", "lightgbm")
                    tree_means.append(tree_mean)
                    row += f" {cell(tree_mean, tree_se)} |"
                lines.append(row)
            lines += ["", f"CV − better of linear/MLP: met on {len(sets) - len(missed)} of {len(sets)} sets"
                      f"{' (missed: ' + ', '.join(missed) + ')' if missed else ''}; mean over sets "
                      f"{np.mean(means):+.4f}."]
            if trees:
                ahead = int(np.sum(np.asarray(tree_means) >= -1e-12))
                lines.append(f"CV − LightGBM: ahead or tied on {ahead} of {len(sets)} sets; mean over sets "
                             f"{np.mean(tree_means):+.4f}.")
            lines.append("")
        lines += issue24_table(sets, wide)
    return "\n".join(lines)


FAMILIES = {"quantile_linear": "linear", "quantile_mlp": "MLP", "qb_lightgbm": "trees"}
TREE_TOLERANCE = 0.005


def issue24_table(sets, wide) -> list:
    """Table 3 (see the module docstring), or nothing where a set lacks one of its methods."""
    columns = ["quantile_cv", "lightgbm", *FAMILIES]
    if not all(set(columns) <= set(wide[name].columns) for name in sets):
        return []
    lines = ["| set | splits | CV | LightGBM | linear | MLP | trees | CV − LightGBM | CV − best family (which) |",
             "|---|---|---|---|---|---|---|---|---|"]
    close, below, behind_best, ahead = 0, [], [], []
    for name in sets:
        w = wide[name][columns].dropna()
        means = w.mean()
        best = max(FAMILIES, key=lambda m: means[m])
        tree_mean, tree_se = paired(w, "quantile_cv", "lightgbm")
        best_mean, best_se = paired(w, "quantile_cv", best)
        close += tree_mean >= -TREE_TOLERANCE - 1e-12
        below += [name] if tree_mean < -TOLERANCE else []
        behind_best += [name] if best_mean < -TOLERANCE else []
        ahead += [f"{name} {tree_mean:+.3f}"] if tree_mean > TREE_TOLERANCE else []
        lines.append(f"| {name} | {len(w)} | " + " | ".join(f"{means[m]:.3f}" for m in columns) + " | "
                     f"{cell(tree_mean, tree_se, ' ✗' if tree_mean < -TOLERANCE else '')} | "
                     f"{cell(best_mean, best_se, ' ✗' if best_mean < -TOLERANCE else '')} ({FAMILIES[best]}) |")
    lines += ["", f"CV − LightGBM: at least −{TREE_TOLERANCE} on {close} of {len(sets)} sets; more than "
              f"{TOLERANCE} below on {len(below)}{' (' + ', '.join(below) + ')' if below else ''}. "
              f"CV − best family: more than {TOLERANCE} below on {len(behind_best)}"
              f"{' (' + ', '.join(behind_best) + ')' if behind_best else ''}. Ahead of LightGBM by more than "
              f"{TREE_TOLERANCE}: {', '.join(ahead) if ahead else 'none'}.", ""]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="per-split rows written by benchmarks/real_data.py --out (several "
                        "files are read as one: other methods or other splits); FILE:method,method reads those only")
    args = parser.parse_args(argv)
    print(tables(pd.concat([read(arg) for arg in args.csv], ignore_index=True)))


def read(arg: str) -> pd.DataFrame:
    """``FILE`` or ``FILE:method,method`` (only those methods' rows)."""
    path, _, methods = arg.partition(":")
    frame = pd.read_csv(path)
    return frame[frame.method.isin(methods.split(","))] if methods else frame


if __name__ == "__main__":
    main()
