"""quantile_surrogate.quantiles._rank_selection: the point rank, tied ranks, and the NumPy selection against torch.

``selection_estimates`` (NumPy on the CPU: several levels, a subset) must equal
``torch_selection_estimates`` (torch, masked: the path of ``torch.compile`` and other devices),
values and gradients; the torch path's rank ``k`` must be the one count rule's.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate._utils.counts import count
from quantile_surrogate.quantiles import _rank_selection as _selection
from quantile_surrogate.quantiles._rank_selection import floor_rank, tied_ranks
from quantile_surrogate.quantiles.kernels import KERNEL_OF_ESTIMATOR

from tests import _reference
from tests.quantiles.test_kernel_window import _make_scores, _per_value


def test_tied_scores_take_the_largest_rank():
    assert tied_ranks(torch.tensor([1.0, 1.0, 2.0])).tolist() == [2, 2, 3]
    assert tied_ranks(torch.tensor([0.0, 1.0, 1.0, 1.0, 3.0])).tolist() == [1, 4, 4, 4, 5]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5000), level=st.floats(0.0, 1.0))
def test_floor_rank_is_the_one_count_rule(n, level):
    assert floor_rank(n, level) == count(level, n, "floor")


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 400), levels=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5),
       seed=st.integers(0, 2**16))
def test_the_torch_paths_rank_equals_floor_rank(n, levels, seed):
    """The torch path computes ``k`` as a tensor (no host sync): the point estimate shows it is floor_rank's."""
    scores = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(torch.float64)  # s_(k) = k - 1
    subset = torch.as_tensor(np.random.default_rng(seed).random(n) < 0.5)
    got = _selection.torch_selection_estimates("point", scores, levels, 0.05)
    assert got.tolist() == [float(floor_rank(n, c) - 1) for c in levels]
    if subset.any():
        m = int(subset.sum())
        ranked = torch.sort(scores[subset]).values
        got = _selection.torch_selection_estimates("point", scores, levels, 0.05, subset)
        assert got.tolist() == [float(ranked[floor_rank(m, c) - 1]) for c in levels]



SELECTION_LEVELS = (0.05, 0.1, 0.5, 0.9, 0.95)


@pytest.mark.parametrize("name", _selection.SELECTION_ESTIMATORS)
@pytest.mark.parametrize("kind", ["continuous", "heavy_ties"])
@pytest.mark.parametrize("n", [50, 3000])
def test_numpy_selection_equals_the_masked_torch_path(name, kind, n):
    # The torch path is what torch.compile and other devices run: the two must agree on the value
    # and on the gradient (per distinct score: which tied row takes a one-hot weight is arbitrary).
    scores = _make_scores(kind, n, seed=n)
    subset = torch.as_tensor(np.random.default_rng(n).random(n) < 0.3)
    for mask in (None, subset):
        for levels in (SELECTION_LEVELS[2:3], SELECTION_LEVELS):
            fast_in, ref_in = scores.clone().requires_grad_(), scores.clone().requires_grad_()
            fast = _selection.selection_estimates(name, fast_in, levels, 0.05, mask)
            ref = _selection.torch_selection_estimates(name, ref_in, levels, 0.05, mask)
            torch.testing.assert_close(fast, ref, atol=1e-12, rtol=0)
            weights = torch.arange(1.0, len(levels) + 1, dtype=torch.float64)  # a different weight per level
            (fast * weights).sum().backward()
            (ref * weights).sum().backward()
            torch.testing.assert_close(_per_value(scores, fast_in.grad), _per_value(scores, ref_in.grad),
                                       atol=1e-12, rtol=0)
            if mask is not None:
                assert float(fast_in.grad[~mask].abs().max()) == 0.0  # rows outside A get no gradient
                expected = [_reference.point_np(scores[mask].numpy(), c) if name == "point" else
                            _reference.kernel_np(scores[mask].numpy(), c, 0.05, KERNEL_OF_ESTIMATOR[name])
                            for c in levels]
                torch.testing.assert_close(fast, torch.tensor(expected, dtype=torch.float64), atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", _selection.SELECTION_ESTIMATORS)
def test_empty_subset_gives_nan_and_no_nan_gradient(name):
    for path in (_selection.selection_estimates, _selection.torch_selection_estimates):
        scores = torch.randn(20, dtype=torch.float64, requires_grad=True)
        estimates = path(name, scores, (0.3, 0.7), 0.05, torch.zeros(20, dtype=torch.bool))
        assert estimates.shape == (2,) and bool(torch.isnan(estimates).all())
        if estimates.requires_grad:  # the torch path keeps the graph: its gradient must be 0, not NaN
            torch.where(torch.isnan(estimates), 0.0, estimates).sum().backward()
            assert bool((scores.grad == 0).all())
