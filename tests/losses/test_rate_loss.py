"""The machinery under the losses (losses/_rate_loss.py): argument checks, group thresholds, the penalty."""

import math

import pytest
import torch

import quantile_surrogate as qs
from quantile_surrogate import losses as L
from quantile_surrogate._utils.checks import (
    BANDWIDTH_MESSAGE,
    BINARY_01,
    BOOL_MESSAGE,
    EMPTY_MESSAGE,
    GROUPS_NEGATIVE_MESSAGE,
    GROUPS_SHAPE_MESSAGE,
    GROUPS_TYPE_MESSAGE,
    LENGTH_MISMATCH_MESSAGE,
    MASK_DTYPE_MESSAGE,
    NONFINITE_MESSAGE,
    NOT_BINARY_MESSAGE,
    NOT_TENSOR_MESSAGE,
    NUMBER_TYPE_MESSAGE,
    OPTION_MESSAGE,
    OPTION_TYPE_MESSAGE,
    REDUCTION_MESSAGE,
    REDUCTIONS,
    TARGET_RANGE_MESSAGE,
    TARGETS_TYPE_MESSAGE,
)
from quantile_surrogate.losses._rate_loss import (
    EMPTY_SUBSET,
    EMPTY_SUBSET_MESSAGE,
    NO_SUBSET_MESSAGE,
    PENALIZE,
    SUBSETS,
    THRESHOLD_GROUPS_MESSAGE,
    THRESHOLD_WEIGHT_MESSAGE,
)
from quantile_surrogate.losses.named import PRECISION_FORMS
from quantile_surrogate.quantiles import ESTIMATOR_TYPE_MESSAGE, QUANTILE_ESTIMATORS, WEIGHTED_CALLABLE_MESSAGE

from tests.losses._data import exact, prefix, random_batch

NOT_BINARY = prefix(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01)


@pytest.mark.parametrize("penalize", ["negatives", "positives"])
def test_several_levels_give_the_single_level_gradients(penalize):
    # On the CPU several levels gather the penalised rows once (a sum per level); one level
    # takes the masked dot product. Both must give the same loss and gradient.
    scores, labels = random_batch(n=400, seed=21)
    rates = (0.3, 0.6, 0.85)
    kw = dict(subset="positives", penalize=penalize, quantile="kernel", bandwidth=0.1)
    joint_in, single_in = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    L.rate_constrained_loss(joint_in, labels, rate=rates, **kw).backward()
    torch.stack([L.rate_constrained_loss(single_in, labels, rate=r, **kw) for r in rates]).mean().backward()
    torch.testing.assert_close(joint_in.grad, single_in.grad, atol=1e-12, rtol=1e-10)


def _option(name, options, value):
    return exact(OPTION_MESSAGE, name=name, options=sorted(options), value=value)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda s, y: L.precision_at_recall_loss(s, y, 1.5), ValueError,
         exact(TARGET_RANGE_MESSAGE, name="recall", value=1.5)),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.0), ValueError,
         exact(TARGET_RANGE_MESSAGE, name="recall", value=0.0)),
        (lambda s, y: L.precision_at_rate_loss(s[:0], y[:0], 0.1), ValueError, exact(EMPTY_MESSAGE, name="scores")),
        (lambda s, y: L.precision_at_rate_loss(s.index_fill(0, torch.tensor([3]), float("nan")), y, 0.1),
         ValueError, exact(NONFINITE_MESSAGE, name="scores", count=1, total=60)),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, bandwidth=0.0), ValueError,
         exact(BANDWIDTH_MESSAGE, value=0.0)),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, bandwidth=-1.0), ValueError,
         exact(BANDWIDTH_MESSAGE, value=-1.0)),
        (lambda s, y: L.precision_at_recall_loss(s, y * 2, 0.9), ValueError, NOT_BINARY),
        (lambda s, y: L.precision_at_recall_loss(s, y[:-1], 0.9), ValueError,
         exact(LENGTH_MISMATCH_MESSAGE, name="labels", got=59, expected=60)),
        (lambda s, y: L.precision_at_rate_loss(s, y, 0.1, form="xy"), ValueError, _option("form", PRECISION_FORMS, "xy")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, surrogate="exp"), ValueError,
         _option("surrogate", L.SURROGATES, "exp")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, reduction="avg"), ValueError,
         exact(REDUCTION_MESSAGE, value="avg")),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5), ValueError, exact(NO_SUBSET_MESSAGE)),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset=y), TypeError,
         exact(MASK_DTYPE_MESSAGE, name="subset", dtype=torch.int64)),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset=y[:3] == 1), ValueError,
         exact(LENGTH_MISMATCH_MESSAGE, name="subset", got=3, expected=60)),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, threshold_scores=torch.tensor([float("inf")])),
         ValueError, exact(NONFINITE_MESSAGE, name="threshold_scores", count=1, total=1)),
        (lambda s, y: L.recall_at_fpr_loss(s, y, 0.0), ValueError, exact(TARGET_RANGE_MESSAGE, name="fpr", value=0.0)),
        (lambda s, y: L.precision_at_rate_loss(s, y, 1.0), ValueError, exact(TARGET_RANGE_MESSAGE, name="rate", value=1.0)),
        (lambda s, y: L.pr_auc_loss(s, y, (0.5, 1.0)), ValueError,
         exact(TARGET_RANGE_MESSAGE, name="recalls", value=1.0)),
        (lambda s, y: L.pr_auc_loss(s, y, 0.5), TypeError, exact(TARGETS_TYPE_MESSAGE, name="recalls", type_name="float")),
        (lambda s, y: L.precision_at_recall_loss(s, y, "0.9"), TypeError,
         exact(NUMBER_TYPE_MESSAGE, name="recall", type_name="str")),
        (lambda s, y: L.precision_at_recall_loss(s, y.tolist(), 0.9), TypeError,
         exact(NOT_TENSOR_MESSAGE, name="labels", type_name="list")),
        (lambda s, y: L.precision_at_recall_loss(s, y.numpy(), 0.9), TypeError,
         exact(NOT_TENSOR_MESSAGE, name="labels", type_name="ndarray")),
        (lambda s, y: L.precision_at_recall_loss(s.tolist(), y, 0.9), TypeError,
         exact(NOT_TENSOR_MESSAGE, name="scores", type_name="list")),
        (lambda s, y: L.precision_at_recall_loss(s, y.double() / 2, 0.9), ValueError, NOT_BINARY),
        (lambda s, y: L.precision_at_recall_loss(s, y - 1, 0.9), ValueError, NOT_BINARY),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, surrogate=None), TypeError,
         exact(OPTION_TYPE_MESSAGE, name="surrogate", options=sorted(L.SURROGATES), type_name="NoneType")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, reduction=0), TypeError,
         exact(OPTION_TYPE_MESSAGE, name="reduction", options=list(REDUCTIONS), type_name="int")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, quantile=3), TypeError, exact(ESTIMATOR_TYPE_MESSAGE, type_name="int")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, quantile="median"), ValueError,
         _option("quantile", QUANTILE_ESTIMATORS, "median")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, empty_subset="skip"), ValueError,
         _option("empty_subset", EMPTY_SUBSET, "skip")),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, return_threshold=1), TypeError,
         exact(BOOL_MESSAGE, name="return_threshold", type_name="int", value=1)),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, bandwith=0.1), TypeError, "unexpected keyword argument 'bandwith'"),
        (lambda s, y: L.precision_at_recall_loss(s, y, 0.9, subset="all"), TypeError, "unexpected keyword argument 'subset'"),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset="everything"), ValueError,
         _option("subset", SUBSETS, "everything")),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset="all", penalize="both"), ValueError,
         _option("penalize", PENALIZE, "both")),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset="all", threshold_weight=torch.ones(60)), ValueError,
         exact(THRESHOLD_WEIGHT_MESSAGE)),
        (lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset="all", weight=torch.ones(60, dtype=s.dtype),
                                              quantile=lambda v, c: v.min()), ValueError, exact(WEIGHTED_CALLABLE_MESSAGE)),
    ],
)
def test_bad_input(call, error, match):
    scores, labels = random_batch()
    with pytest.raises(error, match=match):
        call(scores, labels)


def test_remembered_option_checks_still_refuse_every_bad_call():
    # The option checks are cached per call signature; a cache must never let a bad value through.
    scores, labels = random_batch()
    L.precision_at_recall_loss(scores, labels, 0.9)  # a good call first, with the same other options
    for _ in range(2):
        with pytest.raises(ValueError, match=exact(REDUCTION_MESSAGE, value="avg")):
            L.precision_at_recall_loss(scores, labels, 0.9, reduction="avg")
        with pytest.raises(TypeError, match=exact(OPTION_TYPE_MESSAGE, name="reduction", options=list(REDUCTIONS),
                                                  type_name="list")):
            L.precision_at_recall_loss(scores, labels, 0.9, reduction=["mean"])  # unhashable: checked uncached
    bandwidth = torch.tensor(0.05)
    L.precision_at_recall_loss(scores, labels, 0.9, bandwidth=bandwidth)
    bandwidth.fill_(-1.0)  # a tensor may change in place: never taken from the cache
    with pytest.raises(ValueError, match=exact(BANDWIDTH_MESSAGE, value=-1.0)):
        L.precision_at_recall_loss(scores, labels, 0.9, bandwidth=bandwidth)


def test_groups_give_each_group_its_own_threshold():
    scores, labels = random_batch(n=90, seed=5)
    groups = torch.arange(90) % 3
    out = L.precision_at_recall_loss(scores, labels, 0.8, groups=groups, reduction="none", return_threshold=True)
    assert out.threshold.shape == (3,)
    for g in range(3):
        rows = groups == g
        alone = L.precision_at_recall_loss(scores[rows], labels[rows], 0.8, reduction="none", return_threshold=True)
        torch.testing.assert_close(out.threshold[g], alone.threshold)
        torch.testing.assert_close(out.loss[rows], alone.loss)
    # One group is the ungrouped loss.
    torch.testing.assert_close(
        L.precision_at_rate_loss(scores, labels, 0.2, groups=torch.zeros(90, dtype=torch.long)),
        L.precision_at_rate_loss(scores, labels, 0.2),
    )


def test_groups_gradcheck_and_threshold_groups():
    scores, labels = random_batch(n=30, seed=6)
    groups = torch.arange(30) % 2
    scores = (scores * 3).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda s: L.precision_at_rate_loss(s, labels, 0.3, groups=groups, bandwidth=0.2), (scores,), eps=1e-6, atol=1e-6
    )
    other, other_groups = torch.randn(20, dtype=torch.float64), torch.arange(20) % 2
    out = L.precision_at_rate_loss(scores, labels, 0.3, groups=groups, threshold_scores=other,
                                   threshold_groups=other_groups, return_threshold=True)
    torch.testing.assert_close(out.threshold[1], qs.kernel_quantile(other[1::2], 0.7, 0.05))


def test_group_without_reference_rows_gets_no_loss():
    scores = torch.tensor([0.5, 1.0, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([1, 0, 1, 0])
    groups = torch.tensor([0, 0, 1, 1])
    out = L.precision_at_recall_loss(scores, labels, 0.5, groups=groups,
                                     reduction="none", return_threshold=True)
    assert bool(torch.isfinite(out.threshold).all())
    no_positive_in_group_1 = torch.tensor([1, 0, 0, 0])
    out = L.precision_at_recall_loss(scores, no_positive_in_group_1, 0.5, groups=groups, reduction="none",
                                     return_threshold=True)
    assert math.isnan(float(out.threshold[1])) and out.loss[2:].tolist() == [0.0, 0.0]
    out.loss.sum().backward()
    assert bool(torch.isfinite(scores.grad).all())
    with pytest.raises(ValueError, match=exact("Group 1: " + EMPTY_SUBSET_MESSAGE)):
        L.precision_at_recall_loss(scores, no_positive_in_group_1, 0.5, groups=groups, empty_subset="raise")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(groups=torch.zeros(60)), TypeError, exact(GROUPS_TYPE_MESSAGE, name="groups")),
        (dict(groups=torch.zeros(5, dtype=torch.long)), ValueError,
         exact(GROUPS_SHAPE_MESSAGE, name="groups", shape=(5,), n=60)),
        (dict(groups=-torch.ones(60, dtype=torch.long)), ValueError, exact(GROUPS_NEGATIVE_MESSAGE, name="groups", value=-1)),
        (dict(groups=torch.zeros(60, dtype=torch.long), threshold_scores=torch.randn(3, dtype=torch.float64)),
         ValueError, exact(THRESHOLD_GROUPS_MESSAGE)),
    ],
)
def test_bad_groups(kwargs, error, match):
    scores, labels = random_batch()
    with pytest.raises(error, match=match):
        L.precision_at_recall_loss(scores, labels, 0.5, **kwargs)

