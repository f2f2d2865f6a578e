"""quantile_surrogate.experiments.precision_at_k: the runner on Ionosphere, and the paper's selection."""

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.experiments import precision_at_k, run_precision_at_k, summarise

from tests._messages import exact
from tests.experiments._protocols import small_protocol


def test_summarise_paper_selection_picks_the_best_mean_test_value():
    rows = [dict(split=s, tau=0.1, method="LR", parameter="C", value=v, validation=np.nan, test=t)
            for s in range(3) for v, t in ((1.0, 0.5), (10.0, 0.7 + 0.01 * s))]
    summary = summarise(pd.DataFrame(rows))
    assert summary.value.tolist() == [10.0] and summary["mean"].tolist() == pytest.approx([0.71])


@pytest.mark.parametrize("select", ["cv", "paper"])
def test_runner_on_ionosphere(select):
    results = run_precision_at_k(small_protocol(), n_splits=2, select=select, folds=2, n_jobs=1, verbose=False)
    assert set(results.method) == {"LR", "AATP", "Kar", "Q1", "Q3"}
    assert results.test.between(0, 1).all()
    per_split = results.groupby(["tau", "method", "split"]).size()
    assert (per_split == (1 if select == "cv" else 2)).all()  # two grid values in the small protocol
    if select == "cv":
        assert results.validation.notna().all()


def test_an_unknown_selection_is_refused_before_any_fit():
    with pytest.raises(ValueError, match=exact(precision_at_k.SELECT_MESSAGE, value="test")):
        run_precision_at_k(small_protocol(), select="test", verbose=False, data=(None, None))
