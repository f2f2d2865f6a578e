"""quantile_surrogate.quantiles (the package module): the estimator table and resolve_quantile."""

import pytest
import torch

from quantile_surrogate import quantiles as Q


def test_an_unknown_estimator_name_is_refused():
    with pytest.raises(ValueError, match="`quantile` must be one of"):
        Q.resolve_quantile("median")
    with pytest.raises(TypeError, match="`quantile` must be an estimator name or a callable"):
        Q.resolve_quantile(3)


@pytest.mark.parametrize("name", sorted(Q.QUANTILE_ESTIMATORS))
def test_every_named_estimator_resolves_and_shares_quantile_estimates(name):
    scores = torch.tensor([3.0, 1.0, 4.0, 1.5, 9.0, 2.6], dtype=torch.float64)
    estimate = Q.resolve_quantile(name, bandwidth=0.2)
    together = Q.quantile_estimates(name, scores, (0.3, 0.7), bandwidth=0.2)
    torch.testing.assert_close(together, torch.stack([estimate(scores, 0.3), estimate(scores, 0.7)]),
                               atol=1e-12, rtol=0)
