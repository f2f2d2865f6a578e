"""Does the held-out guarantee hold at the rate it states, and what does it cost?

Known distribution: scores of positives ~ N(mu, 1), of negatives ~ N(0, 1), prior
p(y = 1) = pi. For each setting, draw a held-out set ``--draws`` times, pick the threshold
with :mod:`quantile_surrogate.estimators.calibration` ("guaranteed") and with the paper's plain
empirical quantile ``q(f(A), 1 - c)`` ("plain"), and evaluate each threshold *exactly* on the
population through the normal CDF:

    recall(t) = Phi(mu - t),  FPR(t) = Phi(-t),  rate(t) = pi recall(t) + (1 - pi) FPR(t),
    precision(t) = pi recall(t) / rate(t).

Coverage is the fraction of draws whose population constraint holds; "exact" is the
closed form ``P(Binomial(n, tail) >= k)`` for the rank used (the scores are continuous).

Per-group guarantee (``calibrate_threshold(..., sensitive_features=)``): two groups whose positives score
differently (group "a" ~ N(2, 1), group "b" ~ N(1, 0.5); negatives ~ N(0, 1) in both), rows drawn
with P(group b) = 0.2 and P(y = 1) = 0.3 in both groups, so the group sizes are random. Each
group's population recall is ``Phi((mu_g - t_g) / sigma_g)``; it is compared with the plain
per-group quantile (the training thresholds of ``fit(sensitive_features=)``) and one pooled guaranteed
threshold (no groups). "exact" is the mean over draws of ``P(Binomial(n_g, 1 - c) >= k(n_g))``.

Run: ``.venv/bin/python benchmarks/calibration_simulation.py [--draws 1000 --seed 0]``;
prints the markdown tables that ``docs/calibration.md`` quotes.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import binom, norm

from sklearn.linear_model import LogisticRegression

from quantile_surrogate.estimators.calibration import calibrate_threshold
from quantile_surrogate.objectives.guarantees import (
    fpr_threshold,
    guaranteed_rank,
    rate_threshold,
    recall_threshold,
)

MU, PI = 2.0, 0.1


def population(t):
    recall, fpr = norm.sf(t - MU), norm.sf(t)
    rate = PI * recall + (1 - PI) * fpr
    return recall, fpr, rate, PI * recall / rate


def plain_rank(n, level):
    """The paper's point quantile rank, ``max(1, floor(level n))`` (quantile_surrogate.quantiles._rank_selection.floor_rank)."""
    return min(max(math.floor(round(level * n, 6)), 1), n)


def recall_rows(rng, draws, delta):
    lines = [
        "| recall target | n positives | k plain / guaranteed | coverage plain | coverage guaranteed (exact) "
        "| mean recall plain / guaranteed | mean precision plain / guaranteed | precision at exact target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target in (0.9, 0.95):
        oracle = population(MU + norm.ppf(1 - target))[3]
        for n in (100, 300, 1000, 3000):
            samples = np.sort(rng.standard_normal((draws, n)) + MU, axis=1)
            k_plain = plain_rank(n, 1 - target)
            t_plain = samples[:, k_plain - 1]
            t_guar = np.array([recall_threshold(row, target, delta) for row in samples])
            k_guar = guaranteed_rank(n, 1 - target, delta)
            r_p, _, _, p_p = population(t_plain)
            r_g, _, _, p_g = population(t_guar)
            exact = binom.sf(k_guar - 1, n, 1 - target)
            lines.append(
                f"| {target} | {n} | {k_plain} / {k_guar} | {np.mean(r_p >= target):.3f} "
                f"| {np.mean(r_g >= target):.3f} ({exact:.3f}) | {r_p.mean():.4f} / {r_g.mean():.4f} "
                f"| {p_p.mean():.4f} / {p_g.mean():.4f} | {oracle:.4f} |"
            )
    return lines


def fpr_and_rate_rows(rng, draws, delta):
    lines = [
        "| constraint | n rows | coverage plain | coverage guaranteed (exact) | mean recall plain / guaranteed "
        "| mean precision plain / guaranteed |",
        "|---|---|---|---|---|---|",
    ]
    target = 0.05
    for n in (300, 1000, 3000):
        # FPR <= 0.05 on held-out negatives.
        neg = np.sort(rng.standard_normal((draws, n)), axis=1)
        t_plain = neg[:, n - plain_rank(n, target)]  # j-th largest, j = floor(target n)
        t_guar = np.array([fpr_threshold(row, target, delta) for row in neg])
        exact = binom.sf(guaranteed_rank(n, target, delta) - 1, n, target)
        rp, fp, _, pp = population(t_plain)
        rg, fg, _, pg = population(t_guar)
        lines.append(
            f"| FPR <= {target} | {n} negatives | {np.mean(fp <= target):.3f} | {np.mean(fg <= target):.3f} ({exact:.3f}) "
            f"| {rp.mean():.4f} / {rg.mean():.4f} | {pp.mean():.4f} / {pg.mean():.4f} |"
        )
    for n in (300, 1000, 3000):
        # Predicted positive rate <= 0.05 on all held-out rows (bound="upper").
        labels = rng.random((draws, n)) < PI
        rows = np.sort(rng.standard_normal((draws, n)) + MU * labels, axis=1)
        t_plain = rows[:, n - plain_rank(n, target)]
        t_guar = np.array([rate_threshold(row, target, delta, bound="upper") for row in rows])
        exact = binom.sf(guaranteed_rank(n, target, delta) - 1, n, target)
        rp, _, ap, pp = population(t_plain)
        rg, _, ag, pg = population(t_guar)
        lines.append(
            f"| rate <= {target} | {n} rows | {np.mean(ap <= target):.3f} | {np.mean(ag <= target):.3f} ({exact:.3f}) "
            f"| {rp.mean():.4f} / {rg.mean():.4f} | {pp.mean():.4f} / {pg.mean():.4f} |"
        )
    return lines


GROUPS = {"a": (2.0, 1.0), "b": (1.0, 0.5)}
"""group -> (mean, sd) of its positives' scores; negatives ~ N(0, 1) in both."""


def identity_scorer():
    """A fitted ``LogisticRegression`` whose ``decision_function`` is the first column: the scores as given."""
    model = LogisticRegression()
    model.coef_, model.intercept_, model.classes_ = np.array([[1.0]]), np.array([0.0]), np.array([0, 1])
    model.n_features_in_ = 1
    return model


def draw_groups(rng, n_rows):
    """``(scores, y, groups)`` of one held-out set of ``n_rows`` rows (see the module docstring)."""
    groups = np.where(rng.random(n_rows) < 0.2, "b", "a")
    y = (rng.random(n_rows) < 0.3).astype(int)
    mean = np.where(groups == "a", GROUPS["a"][0], GROUPS["b"][0])
    sd = np.where(groups == "a", GROUPS["a"][1], GROUPS["b"][1])
    scores = np.where(y == 1, mean + sd * rng.standard_normal(n_rows), rng.standard_normal(n_rows))
    return scores, y, groups


def group_recall(group, t):
    mean, sd = GROUPS[group]
    return norm.sf((np.asarray(t) - mean) / sd)


def one_group_draw(rng, n_rows, target, delta, scorer):
    """Population recall per group of the three thresholds, and the exact coverage per group."""
    scores, y, groups = draw_groups(rng, n_rows)
    X = scores[:, None]
    per_group = calibrate_threshold(scorer, X, y, target=target, delta=delta, sensitive_features=groups)
    pooled = calibrate_threshold(scorer, X, y, target=target, delta=delta).threshold_
    out = {}
    for i, g in enumerate(per_group.groups_):
        positives = np.sort(scores[(y == 1) & (groups == g)])
        n = positives.size
        plain = positives[plain_rank(n, 1 - target) - 1]
        exact = binom.sf(guaranteed_rank(n, 1 - target, delta) - 1, n, 1 - target)
        out[g] = (group_recall(g, per_group.group_thresholds_[i]), group_recall(g, plain),
                  group_recall(g, pooled), exact, n)
    return out


def group_rows(rng, draws, delta, target=0.9):
    lines = [
        "| rows per draw | group | mean positives | coverage per-group guaranteed (exact) | coverage plain per-group "
        "| coverage pooled guaranteed | mean recall guaranteed / plain / pooled |",
        "|---|---|---|---|---|---|---|",
    ]
    scorer = identity_scorer()
    for n_rows in (1200, 3000):
        results = [one_group_draw(rng, n_rows, target, delta, scorer) for _ in range(draws)]
        both = np.mean([all(r[g][0] >= target for g in GROUPS) for r in results])
        for g in GROUPS:
            guar, plain, pooled, exact, n = (np.array(v, dtype=float) for v in zip(*[r[g] for r in results]))
            lines.append(
                f"| {n_rows} | {g} | {n.mean():.0f} | {np.mean(guar >= target):.3f} ({exact.mean():.3f}) "
                f"| {np.mean(plain >= target):.3f} | {np.mean(pooled >= target):.3f} "
                f"| {guar.mean():.4f} / {plain.mean():.4f} / {pooled.mean():.4f} |"
            )
        lines.append(f"| {n_rows} | both at once | | {both:.3f} | | | |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"positives ~ N({MU}, 1), negatives ~ N(0, 1), prior {PI}, delta {args.delta}, "
          f"{args.draws} draws, seed {args.seed}\n")
    print("\n".join(recall_rows(rng, args.draws, args.delta)))
    print()
    print("\n".join(fpr_and_rate_rows(rng, args.draws, args.delta)))
    print(f"\nPer-group recall guarantee, target 0.9: positives of group a ~ N{GROUPS['a']}, "
          f"of group b ~ N{GROUPS['b']}\n")
    print("\n".join(group_rows(rng, args.draws, args.delta)))


if __name__ == "__main__":
    main()
