"""``benchmarks/boosting_refit.py`` in quick mode: each variant is the model it names, and the gaps are paired."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier
from quantile_surrogate.objectives import objective_metric
from tests._benchmarks import load
from tests.estimators._data import needs_backends

pytestmark = needs_backends


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    bench = load("boosting_refit")
    out = tmp_path_factory.mktemp("refit") / "quick.csv"
    bench.main(["--quick", "--out", str(out)])
    return bench, out, pd.read_csv(out)


def test_variants_are_the_refit_and_the_kept_model(quick):
    bench, _, rows = quick
    X, y = bench.load("synthetic40k", None, quick=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=1)
    for label, refit in (("qb_kept_80pct", False), ("qb_refit", True)):
        model = QuantileBoostingClassifier(objective="precision_at_rate", target=0.05, refit=refit, validation_splits=1,
                                           n_estimators=10, learning_rate=0.1, random_state=1,
                                           backend_params={"num_threads": 1}).fit(X_train, y_train)
        expected = objective_metric(y_test, model.decision_function(X_test), objective="precision_at_rate", target=0.05)
        got = rows.query("method == @label and split == 1 and objective == 'precision_at_rate'").value
        assert got.tolist() == pytest.approx([expected], abs=1e-12)


def test_summary_gaps_are_paired_differences_and_the_output_is_never_overwritten(quick):
    bench, out, rows = quick
    block = rows[rows.objective == "precision_at_recall"]
    values = {m: block[block.method == m].sort_values("split").value.to_numpy() for m in bench.VARIANTS}
    gap = values["qb_refit"] - values["lightgbm"]
    line = next(line for line in out.with_suffix(".md").read_text().splitlines() if "precision_at_recall" in line)
    assert line.split(" | ")[6].startswith(f"{gap.mean():.3f} ± {gap.std(ddof=1) / np.sqrt(len(gap)):.3f}")
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--out", str(out)])
