"""quantile_surrogate.experiments.labels: which label the paper used, from how well LR reproduces its column."""

import pytest

from quantile_surrogate.experiments.labels import DATASET_MESSAGE, candidate_labels, label_evidence

from tests._messages import exact


def test_label_evidence_prefers_class_g_on_ionosphere():
    evidence = label_evidence("ionosphere", n_splits=3, grid=(0.1,))
    assert evidence.label.iloc[0] == "class g positive"
    assert evidence.set_index("label").loc["class b positive", "P@5%"] == 1.0
    assert len(candidate_labels("housing")) == 5
    with pytest.raises(ValueError, match=exact(DATASET_MESSAGE, value="cover")):
        candidate_labels("cover")


def test_housing_candidates_cut_medv_at_its_percentiles():
    candidates = candidate_labels("housing")
    rates = {name: round(float(y.mean()), 2) for name, (X, y) in candidates.items()}
    assert [rate for name, rate in rates.items() if "top" in name or "bottom" in name] == [0.1, 0.05, 0.05, 0.1]
    assert all(X.shape == (506, 13) for X, _ in candidates.values())  # MEDV or CHAS removed from the features
