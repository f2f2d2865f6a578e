"""quantile_surrogate.quantiles (the package module): the estimator table and resolve_quantile."""

import pytest
import torch

from quantile_surrogate import quantiles as Q
from quantile_surrogate._utils.checks import OPTION_MESSAGE

from tests._messages import exact


def test_an_unknown_estimator_name_is_refused():
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="quantile", options=sorted(Q.QUANTILE_ESTIMATORS),
                                               value="median")):
        Q.resolve_quantile("median")
    with pytest.raises(TypeError, match=exact(Q.ESTIMATOR_TYPE_MESSAGE, type_name="int")):
        Q.resolve_quantile(3)


@pytest.mark.parametrize("name", sorted(Q.QUANTILE_ESTIMATORS))
def test_every_named_estimator_resolves_and_shares_quantile_estimates(name):
    scores = torch.tensor([3.0, 1.0, 4.0, 1.5, 9.0, 2.6], dtype=torch.float64)
    estimate = Q.resolve_quantile(name, bandwidth=0.2)
    together = Q.quantile_estimates(name, scores, (0.3, 0.7), bandwidth=0.2)
    torch.testing.assert_close(together, torch.stack([estimate(scores, 0.3), estimate(scores, 0.7)]),
                               atol=1e-12, rtol=0)


def test_weights_need_a_named_estimator_and_an_empty_subset_gives_nan():
    scores = torch.tensor([3.0, 1.0, 4.0, 1.5], dtype=torch.float64)
    with pytest.raises(ValueError, match=exact(Q.WEIGHTED_CALLABLE_MESSAGE)):
        Q.quantile_estimates(lambda s, c: s.min(), scores, (0.5,), weight=torch.ones(4, dtype=torch.float64))
    nothing = torch.zeros(4, dtype=torch.bool)
    for quantile in ("point", "lower_mean", lambda s, c: s.min()):
        assert torch.isnan(Q.quantile_estimates(quantile, scores, (0.2, 0.8), subset=nothing)).all()


def test_a_callable_that_returns_the_wrong_shape_or_kind_is_named():
    scores = torch.arange(10, dtype=torch.float64)
    with pytest.raises(ValueError, match=exact(Q.CALLABLE_RESULT_SHAPE_MESSAGE, shape=(10,), level=0.3)):
        Q.quantile_estimates(lambda s, c: s, scores, (0.3, 0.7))
    with pytest.raises(ValueError, match=exact(Q.CALLABLE_RESULT_SHAPE_MESSAGE, shape=(2,), level=0.3)):
        Q.quantile_estimates(lambda s, c: torch.quantile(s, torch.tensor([c, c], dtype=s.dtype)), scores, (0.3,))
    with pytest.raises(TypeError, match=exact(Q.CALLABLE_RESULT_TYPE_MESSAGE, type_name="float", level=0.3)):
        Q.quantile_estimates(lambda s, c: float(torch.quantile(s, c)), scores, (0.3,))
    # one value, 0-d or of shape (1,) or (1, 1), gives the same estimates, one per level
    expected = torch.quantile(scores, torch.tensor([0.3, 0.7], dtype=torch.float64))
    for quantile in (lambda s, c: torch.quantile(s, c), lambda s, c: torch.quantile(s, c, keepdim=True),
                     lambda s, c: torch.quantile(s, c).reshape(1, 1)):
        assert torch.equal(Q.quantile_estimates(quantile, scores, (0.3, 0.7)), expected)
