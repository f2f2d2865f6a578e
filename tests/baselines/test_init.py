"""quantile_surrogate.baselines (the package): the registry of baselines and their regularisation."""

from __future__ import annotations

from quantile_surrogate.baselines import BASELINES, REGULARIZATION


def test_registry_lists_every_baseline_and_its_regularisation():
    assert set(BASELINES) == set(REGULARIZATION)
    for name, cls in BASELINES.items():
        assert REGULARIZATION[name][0] in cls().get_params()
