"""segment_quantile: the batched per-segment estimate equals a loop of kernel_quantile / point_quantile."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from quantile_surrogate import quantiles as Q
from quantile_surrogate._utils.checks import (
    BANDWIDTH_MESSAGE,
    GROUPS_NEGATIVE_MESSAGE,
    GROUPS_SHAPE_MESSAGE,
    GROUPS_TYPE_MESSAGE,
    LEVEL_RANGE_MESSAGE,
    NOT_FLOAT_MESSAGE,
    NOT_TENSOR_MESSAGE,
    OPTION_MESSAGE,
)
from quantile_surrogate.quantiles.segments import (
    LEVELS_EMPTY_MESSAGE,
    SEGMENT_CODE_RANGE_MESSAGE,
    SEGMENT_ESTIMATORS,
    segment_estimates,
)

from tests import _reference as ref
from tests._messages import exact

ONE_SEGMENT = {
    "kernel": lambda s, c, h: Q.kernel_quantile(s, c, h),
    "gaussian": lambda s, c, h: Q.kernel_quantile(s, c, h, "gaussian"),
    "epanechnikov": lambda s, c, h: Q.kernel_quantile(s, c, h, "epanechnikov"),
    "point": lambda s, c, h: Q.point_quantile(s, c),
}


def loop(scores, segments, levels, quantile, bandwidth):
    """The reference: one call of the one-segment estimator per segment (NaN for a segment without rows)."""
    out = []
    for s in range(levels.numel()):
        members = scores[segments == s]
        out.append(ONE_SEGMENT[quantile](members, float(levels[s]), bandwidth) if members.numel()
                   else scores.new_tensor(float("nan")))
    return torch.stack(out)


def random_case(seed, n_segments=7, max_rows=9, ties=True, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, max_rows + 1, (n_segments,), generator=gen)
    segments = torch.repeat_interleave(torch.arange(n_segments), sizes)
    segments = segments[torch.randperm(segments.numel(), generator=gen)]
    scores = torch.randn(segments.numel(), generator=gen, dtype=dtype)
    if ties:
        scores = torch.round(scores * 2) / 2  # heavy ties
    levels = torch.rand(n_segments, generator=gen, dtype=torch.float64)
    return scores, segments, levels


@pytest.mark.parametrize("quantile", sorted(SEGMENT_ESTIMATORS))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_equals_the_loop_over_segments(quantile, ties, seed):
    scores, segments, levels = random_case(seed, ties=ties)
    got = Q.segment_quantile(scores, segments, levels, quantile=quantile, bandwidth=0.15)
    torch.testing.assert_close(got, loop(scores, segments, levels, quantile, 0.15), atol=1e-12, rtol=0)


def test_equals_the_paper_references_on_each_segment():
    scores, segments, levels = random_case(11, n_segments=5, max_rows=12)
    kernel = Q.segment_quantile(scores, segments, levels, bandwidth=0.1)
    point = Q.segment_quantile(scores, segments, levels, quantile="point")
    for s in range(5):
        members = scores[segments == s].tolist()
        assert kernel[s].item() == pytest.approx(ref.kernel(members, float(levels[s]), 0.1), abs=1e-12)
        assert point[s].item() == ref.point(members, float(levels[s]))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8),
    data=st.data(),
    quantile=st.sampled_from(sorted(SEGMENT_ESTIMATORS)),
    bandwidth=st.sampled_from([0.01, 0.05, 0.2, 1.0]),
)
def test_hypothesis_random_segments_equal_the_loop(sizes, data, quantile, bandwidth):
    n = sum(sizes)
    values = data.draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))  # small ints: many ties
    perm = data.draw(st.permutations(range(n)))
    levels = data.draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 0.95, 1.0]),
                                min_size=len(sizes), max_size=len(sizes)))
    segments = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))[torch.tensor(perm)]
    scores = torch.tensor(values, dtype=torch.float64) / 3
    levels = torch.tensor(levels, dtype=torch.float64)
    got = Q.segment_quantile(scores, segments, levels, quantile=quantile, bandwidth=bandwidth)
    torch.testing.assert_close(got, loop(scores, segments, levels, quantile, bandwidth), atol=1e-12, rtol=0)


@pytest.mark.parametrize("quantile", sorted(SEGMENT_ESTIMATORS))
def test_shuffled_rows_give_the_same_estimates(quantile):
    scores, segments, levels = random_case(3, ties=True)
    perm = torch.randperm(scores.numel(), generator=torch.Generator().manual_seed(1))
    got = Q.segment_quantile(scores, segments, levels, quantile=quantile)
    shuffled = Q.segment_quantile(scores[perm], segments[perm], levels, quantile=quantile)
    torch.testing.assert_close(shuffled, got, atol=1e-14, rtol=0)


@pytest.mark.parametrize("quantile", sorted(SEGMENT_ESTIMATORS))
def test_gradcheck(quantile):
    gen = torch.Generator().manual_seed(5)
    segments = torch.tensor([2, 0, 1, 0, 2, 2, 1, 0, 0, 3, 2])
    scores = torch.randn(segments.numel(), generator=gen, dtype=torch.float64).requires_grad_()
    levels = torch.tensor([0.3, 0.6, 0.5, 0.9], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda s: Q.segment_quantile(s, segments, levels, quantile=quantile, bandwidth=0.2), (scores,))


@pytest.mark.parametrize("quantile", sorted(SEGMENT_ESTIMATORS))
def test_the_gradient_equals_the_loops_gradient_with_ties(quantile):
    scores, segments, levels = random_case(8, ties=True)
    mix = torch.randn(levels.numel(), generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    batched = scores.clone().requires_grad_()
    (Q.segment_quantile(batched, segments, levels, quantile=quantile, bandwidth=0.1) @ mix).backward()
    looped = scores.clone().requires_grad_()
    (loop(looped, segments, levels, quantile, 0.1) @ mix).backward()
    torch.testing.assert_close(batched.grad, looped.grad, atol=1e-12, rtol=0)


def test_a_segment_without_rows_is_nan_and_others_are_unchanged():
    scores = torch.tensor([1.0, 2.0, 3.0, 5.0], dtype=torch.float64)
    segments = torch.tensor([0, 0, 2, 2])
    levels = torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float64)
    for quantile in SEGMENT_ESTIMATORS:
        got = Q.segment_quantile(scores, segments, levels, quantile=quantile)
        assert torch.isnan(got[[1, 3]]).all()
        torch.testing.assert_close(got[[0, 2]], loop(scores, segments, levels, quantile, 0.05)[[0, 2]])


def test_a_compact_kernel_with_an_empty_window_takes_the_point_estimate():
    # 4 rows at level 0.6 with h = 0.1: ranks/4 = 0.25, 0.5, 0.75, 1 are all outside (0.5, 0.7)
    scores = torch.tensor([4.0, 1.0, 3.0, 2.0, 9.0, 8.0], dtype=torch.float64)
    segments = torch.tensor([0, 0, 0, 0, 1, 1])
    levels = torch.tensor([0.6, 0.6], dtype=torch.float64)
    got = Q.segment_quantile(scores, segments, levels, quantile="epanechnikov", bandwidth=0.1)
    assert got.tolist() == [2.0, 8.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_output_dtype_follows_the_scores(dtype):
    scores, segments, levels = random_case(4, ties=False, dtype=dtype)
    got = Q.segment_quantile(scores, segments, levels)
    assert got.dtype == dtype
    reference = loop(scores.double(), segments, levels, "kernel", 0.05)
    torch.testing.assert_close(got.double(), reference, atol=2e-2 if dtype != torch.float32 else 1e-6, rtol=1e-2)


def test_the_internal_path_equals_the_public_one():
    scores, segments, levels = random_case(6)
    assert torch.equal(segment_estimates(scores, segments, levels, "kernel", 0.05),
                       Q.segment_quantile(scores, segments, levels))


def test_a_large_segment_matches_kernel_quantile_past_its_window_path():
    # kernel_quantile takes its window path from 1024 rows; the batched sort matches it to rounding
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(3000, generator=gen, dtype=torch.float64)
    segments = (torch.arange(3000) >= 2500).long()
    levels = torch.tensor([0.9, 0.3], dtype=torch.float64)
    torch.testing.assert_close(Q.segment_quantile(scores, segments, levels),
                               loop(scores, segments, levels, "kernel", 0.05), atol=1e-12, rtol=0)


def test_bad_inputs_are_named():
    scores = torch.tensor([1.0, 2.0, 3.0])
    segments = torch.tensor([0, 1, 1])
    levels = torch.tensor([0.5, 0.5])
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="scores", type_name="list")):
        Q.segment_quantile([1.0, 2.0, 3.0], segments, levels)
    with pytest.raises(TypeError, match=exact(GROUPS_TYPE_MESSAGE, name="segments")):
        Q.segment_quantile(scores, segments.float(), levels)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, name="segments", shape=(2,), n=3)):
        Q.segment_quantile(scores, segments[:2], levels)
    with pytest.raises(ValueError, match=exact(GROUPS_NEGATIVE_MESSAGE, name="segments", value=-1)):
        Q.segment_quantile(scores, torch.tensor([0, -1, 1]), levels)
    with pytest.raises(ValueError, match=exact(SEGMENT_CODE_RANGE_MESSAGE, value=2, n_segments=2, last=1)):
        Q.segment_quantile(scores, torch.tensor([0, 1, 2]), levels)
    with pytest.raises(TypeError, match=exact(NOT_FLOAT_MESSAGE, name="levels", dtype=torch.int64)):
        Q.segment_quantile(scores, segments, torch.tensor([0, 1]))
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="levels", type_name="list")):
        Q.segment_quantile(scores, segments, [0.5, 0.5])
    with pytest.raises(ValueError, match=exact(LEVEL_RANGE_MESSAGE, name="levels", value=1.5)):
        Q.segment_quantile(scores, segments, torch.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match=exact(LEVELS_EMPTY_MESSAGE)):
        Q.segment_quantile(scores, segments, torch.tensor([]))
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="quantile", options=sorted(SEGMENT_ESTIMATORS),
                                               value="lower_mean")):
        Q.segment_quantile(scores, segments, levels, quantile="lower_mean")
    with pytest.raises(ValueError, match=exact(BANDWIDTH_MESSAGE, value=0.0)):
        Q.segment_quantile(scores, segments, levels, bandwidth=0.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        Q.segment_quantile(torch.tensor([1.0, float("nan"), 3.0]), segments, levels)

