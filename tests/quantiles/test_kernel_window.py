"""The NumPy selection paths equal the torch full-sort reference, ties and gradients included.

``quantiles.smooth._kernel_quantile_sort`` (torch: sort everything, weight every order statistic;
the path ``torch.compile`` takes) is the reference; ``_kernel_window.kernel_quantile_window``
sorts only the rows whose kernel weight matters. Each comparison first asserts that the
fast path was taken, so that a silent fallback to the full sort cannot make a test pass.
(``_rank_selection.selection_estimates`` against its masked torch path: tests/quantiles/test_rank_selection.py.)
"""

import math

import numpy as np
import pytest
import torch

from quantile_surrogate import quantiles
from quantile_surrogate.quantiles import _rank_selection as _selection
from quantile_surrogate.quantiles.smooth import _kernel_quantile_sort
from quantile_surrogate.quantiles import _kernel_window as _window
from quantile_surrogate.quantiles._kernel_window import MIN_WINDOW_SIZE, kernel_quantile_window, window_half_width

from tests import _reference

KERNEL_NAMES = ("gaussian", "epanechnikov")
LEVELS = (0.0, 0.01, 0.05, 0.5, 0.95, 0.99, 1.0)
DTYPES = (torch.float32, torch.float64)


def _make_scores(kind: str, n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        values = rng.normal(size=n)
    elif kind == "few_ties":  # two decimals: groups of a few equal scores everywhere
        values = np.round(rng.normal(size=n), 2)
    elif kind == "heavy_ties":  # 40 distinct values: every window edge cuts through a group
        values = rng.integers(0, 40, size=n).astype(float)
    elif kind == "sorted":  # sorted rows; the strided sample still sees every quantile
        values = np.sort(rng.normal(size=n))
    elif kind == "adversarial":  # the strided sample sees only the largest scores
        values = rng.normal(size=n)
        stride = max(1, n // 4096)
        sampled = np.zeros(n, dtype=bool)
        sampled[::stride] = True
        ordered = np.sort(values)
        values = np.empty(n)
        values[sampled] = ordered[-sampled.sum():]
        values[~sampled] = ordered[: (~sampled).sum()]
    else:
        raise AssertionError(kind)
    return torch.as_tensor(values)


def _both(scores, level, bandwidth, kernel, require_fast=True):
    """(fast value, fast grad, reference value, reference grad).

    Asserts that the fast path ran unless ``require_fast=False``; then a fallback is
    compared through the public function, and ``fast`` is None in the result.
    """
    fast_in = scores.clone().requires_grad_()
    ref_in = scores.clone().requires_grad_()
    fast = kernel_quantile_window(fast_in, level, bandwidth, kernel, quantiles.KERNELS[kernel])
    if fast is None:
        assert not require_fast, "the windowed path fell back to a full sort"
        public = quantiles.kernel_quantile(fast_in, level, bandwidth, kernel)  # the NumPy full sort
        ref = _kernel_quantile_sort(ref_in, level, bandwidth, kernel)
        public.backward()
        ref.backward()
        atol, grad_atol = _tolerance(scores)
        torch.testing.assert_close(public, ref, atol=atol, rtol=0)
        # Which of several tied rows takes a one-hot weight is arbitrary: compare per distinct value.
        torch.testing.assert_close(_per_value(scores, fast_in.grad), _per_value(scores, ref_in.grad),
                                   atol=grad_atol, rtol=0)
        return None, fast_in.grad, ref.detach(), ref_in.grad
    ref = _kernel_quantile_sort(ref_in, level, bandwidth, kernel)
    fast.backward()
    ref.backward()
    return fast.detach(), fast_in.grad, ref.detach(), ref_in.grad


def _per_value(scores, grad):
    """The gradient summed over the rows of each distinct score."""
    _, inverse = torch.unique(scores, return_inverse=True)
    return torch.zeros(int(inverse.max()) + 1, dtype=grad.dtype).index_add_(0, inverse, grad)


def _tolerance(scores):
    # The certificate bounds the truncation error by eps/2 (max - min); the rest is the
    # rounding of two dot products summed in different orders.
    eps = torch.finfo(scores.dtype).eps
    return 64 * eps * float(scores.abs().max()), 64 * eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("kind", ["continuous", "few_ties", "heavy_ties", "sorted", "adversarial"])
def test_window_matches_full_sort(dtype, kernel, kind):
    # With 40 distinct values a tie group (2.5 % of the rows) can be wider than the
    # compact window, which then holds no rank at all: the full sort's degenerate case.
    require_fast = kind != "heavy_ties"
    fast_runs = 0
    for seed, (n, bandwidth) in enumerate([(1024, 0.05), (5000, 0.08), (20000, 0.02)]):
        scores = _make_scores(kind, n, seed).to(dtype)
        atol, grad_atol = _tolerance(scores)
        for level in LEVELS:
            fast, fast_grad, ref, ref_grad = _both(scores, level, bandwidth, kernel, require_fast)
            if fast is None:
                continue
            fast_runs += 1
            assert fast.dtype == dtype
            torch.testing.assert_close(fast, ref, atol=atol, rtol=0, msg=f"{n=} {level=}")
            torch.testing.assert_close(fast_grad, ref_grad, atol=grad_atol, rtol=0, msg=f"{n=} {level=}")
    assert fast_runs >= 2 * len(LEVELS)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_ties_across_the_window_edges(kernel):
    # Window of the Epanechnikov kernel at c = 0.5, h = 0.05, N = 4000: ranks 1800..2200.
    # Two tie groups straddle its ends: ranks 1701..1900 (all get i* = 1900, inside) and
    # 2151..2300 (all get i* = 2300, outside), so rows far below the window carry weight.
    n = 4000
    values = np.arange(1, n + 1, dtype=float)
    values[1700:1900] = 1900.0
    values[2150:2300] = 2300.0
    scores = torch.as_tensor(np.random.default_rng(0).permutation(values))
    fast, fast_grad, ref, ref_grad = _both(scores, 0.5, 0.05, kernel)
    atol, grad_atol = _tolerance(scores)
    torch.testing.assert_close(fast, ref, atol=atol, rtol=0)
    torch.testing.assert_close(fast_grad, ref_grad, atol=grad_atol, rtol=0)
    tied_low = scores == 1900.0
    assert bool((fast_grad[tied_low] == fast_grad[tied_low][0]).all()), "ties must share one weight"
    assert float(fast_grad[tied_low][0]) > 0.0
    if kernel == "epanechnikov":
        assert float(fast_grad[scores == 2300.0].abs().max()) == 0.0


def test_against_the_paper_reference():
    scores = _make_scores("few_ties", 1500, 3)
    for kernel in KERNEL_NAMES:
        value = kernel_quantile_window(scores, 0.9, 0.05, kernel, quantiles.KERNELS[kernel])
        assert value is not None
        assert float(value) == pytest.approx(_reference.kernel(scores.tolist(), 0.9, 0.05, kernel), abs=1e-12)


def test_gradient_is_zero_outside_the_window_and_weights_inside():
    scores = _make_scores("continuous", 10000, 4).requires_grad_()
    value = kernel_quantile_window(scores, 0.5, 0.05, "epanechnikov", quantiles.KERNELS["epanechnikov"])
    value.backward()
    ranks = torch.argsort(torch.argsort(scores.detach())) + 1
    outside = ((ranks.double() / 10000 - 0.5).abs() >= 0.05)
    assert float(scores.grad[outside].abs().max()) == 0.0
    assert float(scores.grad.sum()) == pytest.approx(1.0, abs=1e-12)
    assert bool((scores.grad[~outside] > 0).all())


def test_gradcheck_fast_path():
    scores = _make_scores("continuous", MIN_WINDOW_SIZE, 5).requires_grad_()
    for kernel in KERNEL_NAMES:
        fn = lambda s: kernel_quantile_window(s, 0.3, 0.05, kernel, quantiles.KERNELS[kernel])  # noqa: E731
        assert torch.autograd.gradcheck(fn, (scores,), fast_mode=True)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_public_function_takes_the_window_and_falls_back_to_a_numpy_sort(kernel, monkeypatch):
    scores = _make_scores("few_ties", 3000, 6)
    outcomes = []
    original = _selection.window_selection
    monkeypatch.setattr(_selection, "window_selection", lambda *a: outcomes.append(original(*a)) or outcomes[-1])
    reference = _kernel_quantile_sort(scores, 0.2, 0.05, kernel)
    fast = quantiles.kernel_quantile(scores, 0.2, 0.05, kernel)
    assert len(outcomes) == 1 and outcomes[0] is not None
    assert float(fast) == pytest.approx(float(reference), abs=1e-12)
    # Below MIN_WINDOW_SIZE scores: no window, a NumPy sort. bfloat16: the window, on float32 values.
    outcomes.clear()
    quantiles.kernel_quantile(scores[: MIN_WINDOW_SIZE - 1], 0.2, 0.05, kernel)
    assert outcomes == []
    half = scores.to(torch.bfloat16)
    value = quantiles.kernel_quantile(half, 0.2, 0.05, kernel)
    assert len(outcomes) == 1 and outcomes[0] is not None and value.dtype == torch.bfloat16
    assert float(value) == pytest.approx(float(_kernel_quantile_sort(half.float(), 0.2, 0.05, kernel)),
                                         rel=2 ** -8)
    if kernel == "epanechnikov":
        outcomes.clear()
        empty_window = _make_scores("continuous", 2000, 7)
        value = quantiles.kernel_quantile(empty_window, 0.50025, 1e-4, kernel)  # ranks in (1000.3, 1000.7)
        assert outcomes == [None]
        assert float(value) == float(quantiles.point_quantile(empty_window, 0.50025))


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_certificate_catches_a_window_that_holds_only_a_far_tie(kernel):
    # 90 % of the float32 scores tie at 1.0, so every tied row has rank i* ~ 0.98 N. At level
    # 0.45 the window (in value) holds only that tie, far from the kernel's centre, while the
    # ~8 % of scores below it, dropped from the window, are nearer the centre and carry most of
    # the weight: the right value is ~0.76, the tie alone would give 1.0. The certificate sees
    # that the dropped weight dominates and the full sort runs.
    rng = np.random.default_rng(0)
    values = rng.normal(size=10_000).astype(np.float32)
    values[rng.random(10_000) < 0.9] = 1.0
    scores = torch.from_numpy(values)
    for level in (0.05, 0.2, 0.4, 0.45, 0.5, 0.55, 0.8, 0.95):
        expected = _reference.kernel_np(values, level, 0.05, kernel)
        assert float(quantiles.kernel_quantile(scores, level, 0.05, kernel)) == pytest.approx(expected, abs=1e-5)
    if kernel == "gaussian":
        assert kernel_quantile_window(scores, 0.45, 0.05, kernel, quantiles.KERNELS[kernel]) is None


def test_all_scores_tied():
    # Every rank is i* = N: one tie group, far from the level, carries all the weight
    # (the Epanechnikov window then holds no rank: the full sort's degenerate case).
    scores = torch.full((5000,), 0.25, dtype=torch.float64)
    for kernel in KERNEL_NAMES:
        fast, fast_grad, ref, ref_grad = _both(scores, 0.5, 0.05, kernel, kernel == "gaussian")
        assert float(ref) == pytest.approx(0.25, abs=1e-13)
        if fast is not None:
            assert float(fast) == pytest.approx(0.25, abs=1e-13)
        # One tie group: every row gets the same weight (Gaussian), or one row all of it (the
        # Epanechnikov fallback to the point estimate, whichever tied row): total weight 1.
        torch.testing.assert_close(_per_value(scores, fast_grad), _per_value(scores, ref_grad), atol=1e-12, rtol=0)


def test_window_half_width_matches_float_precision():
    # exp(-U^2 / 2) = 0.6 eps h at the window's edge.
    for dtype in DTYPES:
        half = window_half_width("gaussian", 0.05, dtype)
        u = half / 0.05
        assert math.exp(-u * u / 2) == pytest.approx(0.6 * torch.finfo(dtype).eps * 0.05, rel=1e-9)
    assert 6.0 < window_half_width("gaussian", 0.05, torch.float32) / 0.05 < 6.5
    assert window_half_width("epanechnikov", 0.05, torch.float32) == 0.05


def test_sample_miss_triggers_exact_selection(monkeypatch):
    from quantile_surrogate.quantiles import _kernel_window

    exact_calls = []
    original = _kernel_window._bracket
    monkeypatch.setattr(
        _kernel_window, "_bracket", lambda v, lo, hi, exact: exact_calls.append(exact) or original(v, lo, hi, exact)
    )
    scores = _make_scores("adversarial", 20000, 0)
    fast, fast_grad, ref, ref_grad = _both(scores, 0.5, 0.02, "epanechnikov")
    assert exact_calls == [False, True]
    atol, grad_atol = _tolerance(scores)
    torch.testing.assert_close(fast, ref, atol=atol, rtol=0)
    torch.testing.assert_close(fast_grad, ref_grad, atol=grad_atol, rtol=0)


@pytest.mark.parametrize("kind", ["continuous", "few_ties", "heavy_ties", "sorted"])
def test_one_sort_below_twice_the_sample_keeps_the_bracketed_window(kind, monkeypatch):
    """Below ``2 * _SAMPLE_SIZE`` values the window comes from one sort; it is the bracketed path's window.

    Every output but the order of tied rows (which share one weight) is equal, so the estimate and its
    gradient are too; and the bracketed path never needs its exact selection there (the one-sort path
    has none).
    """
    exact, original = [], _window._bracket
    monkeypatch.setattr(_window, "_bracket", lambda v, lo, hi, e: exact.append(e) or original(v, lo, hi, e))
    for n in (MIN_WINDOW_SIZE, 3333, 2 * _window._SAMPLE_SIZE - 1):
        for dtype in DTYPES:
            values = _make_scores(kind, n, seed=n).to(dtype).numpy()
            for kernel in KERNEL_NAMES:
                for level in LEVELS:
                    for bandwidth in (0.005, 0.05, 0.2):
                        rows, ranks, below, kept = _window._sorted_window(values, level, bandwidth, kernel, dtype)
                        rows_g, ranks_g, below_g, kept_g = _window._bracketed_window(values, level, bandwidth,
                                                                                     kernel, dtype)
                        assert (below, kept) == (below_g, kept_g) and kept > 0
                        np.testing.assert_array_equal(ranks, ranks_g)
                        np.testing.assert_array_equal(values[rows], values[rows_g])  # tied rows may swap
                        np.testing.assert_array_equal(np.sort(rows), np.sort(rows_g))
    assert exact and not any(exact)
