"""precision_at_k_loss and PrecisionAtKLoss: a per-query loop of precision_at_rate_loss, batched."""

import inspect
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from quantile_surrogate import losses as L
from quantile_surrogate._utils.checks import (
    BINARY_01,
    GROUPS_SHAPE_MESSAGE,
    GROUPS_TYPE_MESSAGE,
    INTEGER_RANGE_MESSAGE,
    INTEGER_TYPE_MESSAGE,
    LENGTH_MISMATCH_MESSAGE,
    NOT_BINARY_MESSAGE,
    OPTION_MESSAGE,
    REDUCTION_MESSAGE,
)
from quantile_surrogate.losses.modules import PrecisionAtKLoss
from quantile_surrogate.losses.named import PRECISION_FORMS
from quantile_surrogate.quantiles.segments import SEGMENT_ESTIMATORS

from tests._messages import exact, prefix


def counts(query, labels):
    """Rows and relevant rows of each query code, as Python ints."""
    n_queries = int(query.max()) + 1
    return ([int((query == q).sum()) for q in range(n_queries)],
            [int(labels[query == q].sum()) for q in range(n_queries)])


def loop(scores, labels, k, query, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic"):
    """The reference: ``(sum, penalised rows, thresholds)`` from precision_at_rate_loss on each query that counts."""
    sizes, relevant = counts(query, labels)
    total, penalised, thresholds = scores.new_zeros(()), 0, []
    for q, (n, r) in enumerate(zip(sizes, relevant)):
        if n <= k or r == 0 or r == n:
            thresholds.append(scores.new_tensor(math.nan))
            continue
        rows = query == q
        out = L.precision_at_rate_loss(scores[rows], labels[rows], k / n, form=form, quantile=quantile,
                                       bandwidth=bandwidth, surrogate=surrogate, reduction="sum",
                                       return_threshold=True)
        total = total + out.loss
        penalised += (n - r) if form == "fp" else r
        thresholds.append(out.threshold)
    return total, penalised, torch.stack(thresholds)


def random_queries(seed, n_queries=9, max_rows=12, dtype=torch.float64, ties=False):
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, max_rows + 1, (n_queries,), generator=gen)
    query = torch.repeat_interleave(torch.arange(n_queries), sizes)
    query = query[torch.randperm(query.numel(), generator=gen)]
    scores = torch.randn(query.numel(), generator=gen, dtype=dtype)
    if ties:
        scores = torch.round(scores * 2) / 2
    labels = (torch.rand(query.numel(), generator=gen) < 0.35).long()
    return scores, labels, query


@pytest.mark.parametrize("form", sorted(PRECISION_FORMS))
@pytest.mark.parametrize("quantile", sorted(SEGMENT_ESTIMATORS))
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("seed", range(3))
def test_equals_the_per_query_loop_of_precision_at_rate_loss(form, quantile, k, seed):
    scores, labels, query = random_queries(seed, ties=seed == 2)
    total, penalised, thresholds = loop(scores, labels, k, query, form, quantile, 0.1)
    out = L.precision_at_k_loss(scores, labels, k, query=query, form=form, quantile=quantile, bandwidth=0.1,
                                reduction="sum", return_threshold=True)
    torch.testing.assert_close(out.loss, total, atol=1e-12, rtol=0)
    torch.testing.assert_close(out.threshold, thresholds, atol=1e-12, rtol=0, equal_nan=True)
    mean = L.precision_at_k_loss(scores, labels, k, query=query, form=form, quantile=quantile, bandwidth=0.1)
    torch.testing.assert_close(mean, total / max(penalised, 1), atol=1e-12, rtol=0)


@pytest.mark.parametrize("form", sorted(PRECISION_FORMS))
def test_the_gradient_equals_the_loops_gradient(form):
    scores, labels, query = random_queries(4, ties=True)
    batched, looped = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    L.precision_at_k_loss(batched, labels, 2, query=query, form=form, surrogate="hinge").backward()
    total, penalised, _ = loop(looped, labels, 2, query, form, surrogate="hinge")
    (total / penalised).backward()
    torch.testing.assert_close(batched.grad, looped.grad, atol=1e-12, rtol=0)


@pytest.mark.parametrize("form", sorted(PRECISION_FORMS))
@pytest.mark.parametrize("quantile", ["kernel", "point"])
def test_gradcheck(form, quantile):
    query = torch.tensor([0, 1, 0, 0, 1, 2, 1, 0, 2, 1, 2, 2, 0])
    labels = torch.tensor([1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0])
    scores = torch.randn(13, generator=torch.Generator().manual_seed(0), dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda s: L.precision_at_k_loss(s, labels, 2, query=query, form=form, quantile=quantile, bandwidth=0.2),
        (scores,))


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(1, 8), min_size=1, max_size=6), k=st.integers(1, 4), data=st.data(),
       form=st.sampled_from(sorted(PRECISION_FORMS)), quantile=st.sampled_from(["kernel", "point"]))
def test_hypothesis_random_queries_equal_the_loop_and_are_non_negative(sizes, k, data, form, quantile):
    n = sum(sizes)
    values = data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    relevance = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    perm = torch.tensor(data.draw(st.permutations(range(n))))
    query = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))[perm]
    scores, labels = torch.tensor(values, dtype=torch.float64) / 2, torch.tensor(relevance)
    out = L.precision_at_k_loss(scores, labels, k, query=query, form=form, quantile=quantile, reduction="sum",
                                return_threshold=True)
    total, _, thresholds = loop(scores, labels, k, query, form, quantile)
    assert out.loss.item() >= 0
    torch.testing.assert_close(out.loss, total, atol=1e-12, rtol=0)
    torch.testing.assert_close(out.threshold, thresholds, atol=1e-12, rtol=0, equal_nan=True)


def test_excluded_queries_give_no_loss_no_gradient_and_a_nan_threshold():
    # query 0 counts; 1 has n_q = k rows; 2 has no relevant row; 3 is all relevant; code 4 has no row
    query = torch.tensor([0, 0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5])
    labels = torch.tensor([1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0])
    scores = torch.linspace(-2, 2, 15, dtype=torch.float64).requires_grad_()
    for form in PRECISION_FORMS:
        out = L.precision_at_k_loss(scores, labels, 2, query=query, form=form, reduction="none", return_threshold=True)
        assert out.threshold.shape == (6,)
        assert torch.isnan(out.threshold[[1, 2, 3, 4]]).all() and torch.isfinite(out.threshold[[0, 5]]).all()
        counted = (query == 0) | (query == 5)
        assert (out.loss[~counted] == 0).all()
        scores.grad = None
        out.loss.sum().backward()
        assert (scores.grad[(query == 1) | (query == 2) | (query == 3)] == 0).all()


def test_a_batch_without_a_query_that_counts_gives_a_zero_loss_on_the_graph():
    scores = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = L.precision_at_k_loss(scores, torch.tensor([0, 1, 0]), 3, query=torch.tensor([0, 0, 0]),
                                return_threshold=True)
    assert out.loss.item() == 0.0 and out.loss.requires_grad and torch.isnan(out.threshold).all()
    out.loss.backward()
    assert (scores.grad == 0).all()


def test_a_single_query_equals_precision_at_rate_loss():
    scores = torch.randn(40, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    labels = (torch.arange(40) % 4 == 0).long()
    for reduction in ("mean", "sum", "none"):
        torch.testing.assert_close(
            L.precision_at_k_loss(scores, labels, 5, query=torch.zeros(40, dtype=torch.long), reduction=reduction),
            L.precision_at_rate_loss(scores, labels, 5 / 40, reduction=reduction), atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_loss_dtype_follows_the_scores(dtype):
    scores, labels, query = random_queries(1, dtype=dtype)
    loss = L.precision_at_k_loss(scores, labels, 2, query=query)
    assert loss.dtype == dtype
    reference = L.precision_at_k_loss(scores.double(), labels, 2, query=query)
    torch.testing.assert_close(loss.double(), reference, atol=2e-2, rtol=2e-2)


def test_the_module_equals_the_function_and_keeps_the_thresholds():
    scores, labels, query = random_queries(2)
    module = PrecisionAtKLoss(3, form="tp", quantile="point", surrogate="hinge", reduction="sum")
    assert "k=3" in repr(module) and "form='tp'" in repr(module)
    got = module(scores, labels, query)
    out = L.precision_at_k_loss(scores, labels, 3, query=query, form="tp", quantile="point", surrogate="hinge",
                                reduction="sum", return_threshold=True)
    torch.testing.assert_close(got, out.loss)
    torch.testing.assert_close(module.threshold, out.threshold, equal_nan=True)
    assert not module.threshold.requires_grad and "threshold" not in module.state_dict()


def test_the_module_signature_is_explicit_and_its_settings_are_checked_in_init():
    parameters = inspect.signature(PrecisionAtKLoss).parameters
    assert list(parameters)[0] == "k"
    assert all(p.kind is p.KEYWORD_ONLY for name, p in parameters.items() if name != "k")
    for name in parameters:
        assert f"\n    {name} : " in PrecisionAtKLoss.__doc__, name
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="k", wanted="an integer >= 1", value=0)):
        PrecisionAtKLoss(0)
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="form", options=sorted(PRECISION_FORMS),
                                               value="xy")):
        PrecisionAtKLoss(2, form="xy")
    with pytest.raises(ValueError, match=exact(OPTION_MESSAGE, name="quantile", options=sorted(SEGMENT_ESTIMATORS),
                                               value="lower_mean")):
        PrecisionAtKLoss(2, quantile="lower_mean")
    with pytest.raises(TypeError, match="unexpected keyword argument 'empty_subset'"):
        PrecisionAtKLoss(2, empty_subset="zero")


def test_bad_inputs_are_named():
    scores = torch.tensor([1.0, 2.0, 3.0, 4.0])
    labels = torch.tensor([1, 0, 0, 1])
    query = torch.tensor([0, 0, 1, 1])
    with pytest.raises(ValueError, match=exact(INTEGER_RANGE_MESSAGE, name="k", wanted="an integer >= 1", value=0)):
        L.precision_at_k_loss(scores, labels, 0, query=query)
    with pytest.raises(TypeError, match=exact(INTEGER_TYPE_MESSAGE, name="k", wanted="an integer >= 1",
                                              type_name="float", value=2.0, example=1)):
        L.precision_at_k_loss(scores, labels, 2.0, query=query)
    with pytest.raises(ValueError, match=exact(GROUPS_SHAPE_MESSAGE, name="query", shape=(3,), n=4)):
        L.precision_at_k_loss(scores, labels, 1, query=query[:3])
    with pytest.raises(TypeError, match=exact(GROUPS_TYPE_MESSAGE, name="query")):
        L.precision_at_k_loss(scores, labels, 1, query=query.float())
    with pytest.raises(ValueError, match=prefix(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01)):
        L.precision_at_k_loss(scores, torch.tensor([1, 2, 0, 1]), 1, query=query)
    with pytest.raises(ValueError, match=exact(LENGTH_MISMATCH_MESSAGE, name="labels", got=3, expected=4)):
        L.precision_at_k_loss(scores, labels[:3], 1, query=query)
    with pytest.raises(ValueError, match=exact(REDUCTION_MESSAGE, value="avg")):
        L.precision_at_k_loss(scores, labels, 1, query=query, reduction="avg")
    with pytest.raises(ValueError, match="NaN or inf"):
        L.precision_at_k_loss(torch.tensor([1.0, math.inf, 3.0, 4.0]), labels, 1, query=query)
