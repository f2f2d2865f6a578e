"""Loss modules: the same values as the functions, settings checked in ``__init__``, keyword-only."""

import inspect

import pytest
import torch

import quantile_surrogate as qs
from quantile_surrogate import losses as L
from quantile_surrogate._utils.checks import (
    BANDWIDTH_MESSAGE,
    BINARY_01,
    BOOL_MESSAGE,
    NOT_BINARY_MESSAGE,
    NUMBER_TYPE_MESSAGE,
    OPTION_MESSAGE,
    REDUCTION_MESSAGE,
    TARGET_RANGE_MESSAGE,
    TARGETS_EMPTY_MESSAGE,
)
from quantile_surrogate.losses import modules
from quantile_surrogate.losses._rate_loss import EMPTY_SUBSET, PENALIZE
from quantile_surrogate.quantiles import ESTIMATOR_TYPE_MESSAGE
from quantile_surrogate.losses.named import PRECISION_FORMS
from quantile_surrogate.quantiles import QUANTILE_ESTIMATORS

from tests.losses._data import exact, prefix


def _option(name, options, value):
    return exact(OPTION_MESSAGE, name=name, options=sorted(options), value=value)


def random_batch(n=60, seed=0):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, generator=gen, dtype=torch.float64)
    labels = (torch.rand(n, generator=gen) < 0.3).long()
    labels[:2] = torch.tensor([0, 1])
    return scores, labels


MODULE_CASES = [
    (qs.PrecisionAtRecallLoss(0.8, quantile="point"), lambda s, y: L.precision_at_recall_loss(s, y, 0.8, quantile="point")),
    (qs.PrecisionAtRateLoss(0.1, form="tp"), lambda s, y: L.precision_at_rate_loss(s, y, 0.1, form="tp")),
    (qs.RecallAtFPRLoss(0.1, reduction="sum"), lambda s, y: L.recall_at_fpr_loss(s, y, 0.1, reduction="sum")),
    (qs.PRAUCLoss((0.3, 0.7)), lambda s, y: L.pr_auc_loss(s, y, (0.3, 0.7))),
    (qs.PrecisionAtRecallLoss(recall=0.9, quantile="interval", bandwidth=0.2, surrogate="hinge"),
     lambda s, y: L.precision_at_recall_loss(s, y, 0.9, quantile="interval", bandwidth=0.2, surrogate="hinge")),
]


@pytest.mark.parametrize("module, function", MODULE_CASES)
def test_module_equals_function_and_keeps_the_threshold(module, function):
    scores, labels = random_batch()
    scores_m, scores_f = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    loss_m, loss_f = module(scores_m, labels), function(scores_f, labels)
    torch.testing.assert_close(loss_m, loss_f)
    loss_m.backward()
    loss_f.backward()
    torch.testing.assert_close(scores_m.grad, scores_f.grad)
    assert bool(torch.isfinite(module.threshold).all()) and not module.threshold.requires_grad
    assert "quantile=" in repr(module)
    assert "threshold" not in module.state_dict()  # a log of the last call, not a parameter


def test_threshold_is_the_one_the_function_returns():
    scores, labels = random_batch()
    module = qs.PRAUCLoss((0.2, 0.5, 0.8), quantile="point")
    module(scores, labels)
    expected = L.pr_auc_loss(scores, labels, (0.2, 0.5, 0.8), quantile="point", return_threshold=True).threshold
    torch.testing.assert_close(module.threshold, expected)


def test_rate_constrained_module_takes_the_subset_per_call():
    scores, labels = random_batch()
    module = qs.RateConstrainedLoss(0.5, penalize="positives")
    subset = scores > 0
    for chosen in (subset, "negatives"):
        torch.testing.assert_close(
            module(scores, labels, subset=chosen),
            L.rate_constrained_loss(scores, labels, rate=0.5, subset=chosen, penalize="positives"),
        )


def test_groups_and_threshold_scores_pass_through():
    scores, labels = random_batch(n=90, seed=5)
    groups = torch.arange(90) % 3
    module = qs.PrecisionAtRateLoss(0.2, reduction="none")
    torch.testing.assert_close(module(scores, labels, groups=groups),
                               L.precision_at_rate_loss(scores, labels, 0.2, groups=groups, reduction="none"))
    assert module.threshold.shape == (3,)
    other = torch.randn(30, dtype=torch.float64)
    torch.testing.assert_close(qs.PrecisionAtRecallLoss(0.9)(scores, labels, other),
                               L.precision_at_recall_loss(scores, labels, 0.9, threshold_scores=other))


CLASSES = [
    (modules.PrecisionAtRecallLoss, "recall", 0.9),
    (modules.PrecisionAtRateLoss, "rate", 0.1),
    (modules.RecallAtFPRLoss, "fpr", 0.1),
    (modules.RateConstrainedLoss, "rate", 0.5),
    (modules.PRAUCLoss, "recalls", (0.3, 0.6)),
]


@pytest.mark.parametrize("cls, target_name, target", CLASSES)
@pytest.mark.parametrize(
    "settings, error, match",
    [
        (dict(bandwidth=0.0), ValueError, exact(BANDWIDTH_MESSAGE, value=0.0)),
        (dict(bandwidth="0.1"), TypeError, exact(NUMBER_TYPE_MESSAGE, name="bandwidth", type_name="str")),
        (dict(quantile="median"), ValueError, _option("quantile", QUANTILE_ESTIMATORS, "median")),
        (dict(quantile=0.5), TypeError, exact(ESTIMATOR_TYPE_MESSAGE, type_name="float")),
        (dict(surrogate="exp"), ValueError, _option("surrogate", L.SURROGATES, "exp")),
        (dict(reduction="avg"), ValueError, exact(REDUCTION_MESSAGE, value="avg")),
        (dict(empty_subset="skip"), ValueError, _option("empty_subset", EMPTY_SUBSET, "skip")),
        (dict(validate_args="yes"), TypeError, exact(BOOL_MESSAGE, name="validate_args", type_name="str", value="yes")),
        (dict(bandwith=0.1), TypeError, "unexpected keyword argument 'bandwith'"),  # a typo is not swallowed
    ],
)
def test_settings_are_checked_in_init(cls, target_name, target, settings, error, match):
    with pytest.raises(error, match=match):
        cls(target, **settings)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: modules.PrecisionAtRecallLoss(recall=1.5, bandwidth=0.1), ValueError,
         exact(TARGET_RANGE_MESSAGE, name="recall", value=1.5)),
        (lambda: modules.PrecisionAtRecallLoss(recall=0.0), ValueError, exact(TARGET_RANGE_MESSAGE, name="recall", value=0.0)),
        (lambda: modules.RecallAtFPRLoss(fpr=1.0), ValueError, exact(TARGET_RANGE_MESSAGE, name="fpr", value=1.0)),
        (lambda: modules.PrecisionAtRateLoss(rate=-0.1), ValueError, exact(TARGET_RANGE_MESSAGE, name="rate", value=-0.1)),
        (lambda: modules.PrecisionAtRateLoss(rate=0.1, form="xy"), ValueError, _option("form", PRECISION_FORMS, "xy")),
        (lambda: modules.RateConstrainedLoss(rate=0.1, penalize="all"), ValueError, _option("penalize", PENALIZE, "all")),
        (lambda: modules.PRAUCLoss(recalls=()), ValueError, exact(TARGETS_EMPTY_MESSAGE, name="recalls")),
        (lambda: modules.PRAUCLoss(recalls=(0.5, 1.2)), ValueError, exact(TARGET_RANGE_MESSAGE, name="recalls", value=1.2)),
        (lambda: modules.PrecisionAtRecallLoss(recall="0.9"), TypeError,
         exact(NUMBER_TYPE_MESSAGE, name="recall", type_name="str")),
        (lambda: modules.PrecisionAtRecallLoss(0.9, "point"), TypeError, "positional argument"),  # keyword-only
    ],
)
def test_targets_are_checked_in_init_under_their_own_name(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("cls, target_name, target", CLASSES)
def test_signatures_are_explicit_and_keyword_only(cls, target_name, target):
    parameters = inspect.signature(cls).parameters
    names = list(parameters)
    assert names[0] == target_name
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in names[1:])
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    module = cls(target)
    assert getattr(module, "target") == target
    # The settings the functional loss receives are the module's own (DistributedQuantileLoss reads them).
    assert set(module.settings) >= {"empty_subset", "validate_args"}
    for name in names:
        assert f"\n    {name} : " in cls.__doc__, f"{cls.__name__}: {name} is not documented"


def test_validate_args_false_skips_the_input_checks():
    scores, labels = random_batch()
    checked = qs.PrecisionAtRecallLoss(0.8)
    unchecked = qs.PrecisionAtRecallLoss(0.8, validate_args=False)
    torch.testing.assert_close(checked(scores, labels), unchecked(scores, labels))
    with pytest.raises(ValueError, match=prefix(NOT_BINARY_MESSAGE, name="labels", accepted=BINARY_01)):
        checked(scores, labels * 2)
