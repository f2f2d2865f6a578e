"""The named losses (losses/named.py): hand-computed values, the general loss with a fixed subset, gradients."""

import inspect
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

import quantile_surrogate as qs
from quantile_surrogate import losses as L
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.losses._rate_loss import EMPTY_SUBSET_MESSAGE
from quantile_surrogate._utils.checks import TARGETS_EMPTY_MESSAGE
from quantile_surrogate.metrics import precision_at_recall
from quantile_surrogate.quantiles import CALLABLE_RESULT_SHAPE_MESSAGE

from tests import _reference as ref
from tests._messages import prefix
from tests.losses._data import exact, random_batch, small_example

NAMED = {L.precision_at_recall_loss: "recall", L.precision_at_rate_loss: "rate", L.recall_at_fpr_loss: "fpr",
         L.pr_auc_loss: "recalls"}
FIXED = {"rate", "subset", "penalize"}  # what each named loss sets itself


@pytest.mark.parametrize("loss", list(NAMED), ids=lambda f: f.__name__)
def test_every_keyword_is_spelled_out_with_the_general_default_and_documented(loss):
    own = inspect.signature(loss).parameters
    general = inspect.signature(L.rate_constrained_loss).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in own.values()), "no **kwargs: help() must show every keyword"
    passed_on = [name for name in general if name not in FIXED and name not in ("scores", "labels")]
    for name in passed_on:
        assert name in own, name
        assert own[name].kind is own[name].KEYWORD_ONLY and own[name].default == general[name].default, name
    for name in [NAMED[loss], *passed_on]:
        assert f"\n    {name} : " in loss.__doc__, f"{name} is not documented"


def test_precision_at_recall_hand_computed():
    scores, labels = small_example()
    # Positives {2, 1, 0}; recall 2/3 -> level 1/3 -> k = 1 -> threshold 0 (point estimator).
    # Negatives 0.5, -1, 1.5 each pay softplus(s - 0).
    expected = [ref.softplus(0.5), ref.softplus(-1.0), ref.softplus(1.5)]
    out = L.precision_at_recall_loss(scores, labels, 2 / 3, quantile="point", reduction="none", return_threshold=True)
    assert float(out.threshold) == 0.0
    assert out.loss.tolist() == pytest.approx([0, 0, 0] + expected)
    assert float(L.precision_at_recall_loss(scores, labels, 2 / 3, quantile="point", reduction="sum")) == pytest.approx(sum(expected))
    assert float(L.precision_at_recall_loss(scores, labels, 2 / 3, quantile="point")) == pytest.approx(sum(expected) / 3)
    hinge = L.precision_at_recall_loss(scores, labels, 2 / 3, quantile="point", surrogate="hinge", reduction="sum")
    assert float(hinge) == pytest.approx(1.5 + 0.0 + 2.5)


def test_precision_at_rate_hand_computed_fp_and_tp():
    scores, labels = small_example()
    # rate 0.5 of 6 rows -> level 0.5 -> k = 3 -> sorted [-1, 0, .5, 1, 1.5, 2] -> threshold 0.5.
    fp = L.precision_at_rate_loss(scores, labels, 0.5, quantile="point", reduction="sum", return_threshold=True)
    assert float(fp.threshold) == 0.5
    assert float(fp.loss) == pytest.approx(ref.softplus(0.0) + ref.softplus(-1.5) + ref.softplus(1.0))
    tp = L.precision_at_rate_loss(scores, labels, 0.5, form="tp", quantile="point", reduction="sum")
    assert float(tp) == pytest.approx(ref.softplus(-1.5) + ref.softplus(-0.5) + ref.softplus(0.5))


def test_recall_at_fpr_hand_computed():
    scores, labels = small_example()
    # Negatives {0.5, -1, 1.5}; fpr 1/3 -> level 2/3 -> k = 2 -> threshold 0.5. Positives pay softplus(0.5 - s).
    out = L.recall_at_fpr_loss(scores, labels, 1 / 3, quantile="point", reduction="sum", return_threshold=True)
    assert float(out.threshold) == 0.5
    assert float(out.loss) == pytest.approx(ref.softplus(-1.5) + ref.softplus(-0.5) + ref.softplus(0.5))


@pytest.mark.parametrize("quantile", ["point", "kernel", "epanechnikov", "lower_mean", "interval", "harrell_davis"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_named_losses_are_the_general_loss_with_a_fixed_subset(quantile, reduction):
    scores, labels = random_batch()
    kw = dict(quantile=quantile, bandwidth=0.1, reduction=reduction)
    positive = labels == 1
    pairs = [
        (L.precision_at_recall_loss(scores, labels, 0.8, **kw),
         L.rate_constrained_loss(scores, labels, rate=0.8, subset=positive, penalize="negatives", **kw)),
        (L.precision_at_rate_loss(scores, labels, 0.1, **kw),
         L.rate_constrained_loss(scores, labels, rate=0.1, subset=torch.ones_like(positive), **kw)),
        (L.precision_at_rate_loss(scores, labels, 0.1, form="tp", **kw),
         L.rate_constrained_loss(scores, labels, rate=0.1, subset=torch.ones_like(positive), penalize="positives", **kw)),
        (L.recall_at_fpr_loss(scores, labels, 0.05, **kw),
         L.rate_constrained_loss(scores, labels, rate=0.05, subset=~positive, penalize="positives", **kw)),
    ]
    for named, general in pairs:
        torch.testing.assert_close(named, general)


def test_threshold_scores_replace_the_subset():
    scores, labels = random_batch()
    other = torch.randn(40, dtype=torch.float64) + 3.0
    out = L.precision_at_recall_loss(scores, labels, 0.9, threshold_scores=other, return_threshold=True)
    assert float(out.threshold) == pytest.approx(float(qs.kernel_quantile(other, 0.1, 0.05)))
    # The batch's own positives do not matter any more: with other labels, each negative pays
    # softplus(s - theta) against the same threshold from `other`.
    theta = ref.kernel(other.tolist(), 0.1, 0.05)
    new_labels = torch.zeros_like(labels).index_fill(0, torch.tensor([0]), 1)
    relabelled = L.precision_at_recall_loss(scores, new_labels, 0.9, threshold_scores=other, reduction="none")
    expected = [0.0 if y else ref.softplus(float(v) - theta) for v, y in zip(scores, new_labels)]
    assert relabelled.tolist() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("quantile, reference", [
    ("interval", lambda a, c, h: ref.interval(a, max(c - h, 0.0), min(c + h, 1.0))),
    ("lower_mean", lambda a, c, h: ref.lower_mean(a, c)),
    ("harrell_davis", lambda a, c, h: ref.harrell_davis(a, c)),
    ("epanechnikov", lambda a, c, h: ref.kernel(a, c, h, "epanechnikov")),
    ("point", lambda a, c, h: ref.point(a, c)),
])
def test_each_estimator_sets_the_threshold_it_names(quantile, reference):
    # As a loss's estimator, "interval" is the mean of the order statistics in [c - h, c + h]
    # (not one order statistic), at level c = 1 - recall of the positives.
    scores, labels = random_batch(n=80, seed=8)
    positives = scores[labels == 1].tolist()
    for recall, bandwidth in ((0.8, 0.1), (0.5, 0.2)):
        out = L.precision_at_recall_loss(scores, labels, recall, quantile=quantile, bandwidth=bandwidth,
                                         reduction="sum", return_threshold=True)
        theta = reference(positives, 1 - recall, bandwidth)
        assert float(out.threshold) == pytest.approx(theta, abs=1e-12)
        negatives = scores[labels == 0].tolist()
        assert float(out.loss) == pytest.approx(sum(ref.softplus(v - theta) for v in negatives), abs=1e-10)


def test_reductions_agree():
    scores, labels = random_batch()
    none = L.precision_at_recall_loss(scores, labels, 0.9, reduction="none")
    assert none.shape == scores.shape and bool((none[labels == 1] == 0).all())
    torch.testing.assert_close(L.precision_at_recall_loss(scores, labels, 0.9, reduction="sum"), none.sum())
    n_negative = int((labels == 0).sum())
    torch.testing.assert_close(L.precision_at_recall_loss(scores, labels, 0.9), none.sum() / n_negative)


@pytest.mark.parametrize("quantile", ["point", "kernel", "epanechnikov", "lower_mean", "interval", "harrell_davis"])
@pytest.mark.parametrize("surrogate", ["logistic", "hinge"])
def test_gradcheck_every_loss(quantile, surrogate):
    scores, labels = random_batch(n=25, seed=3)
    scores = (scores * 3).requires_grad_()  # distinct, away from the hinge's kink
    kw = dict(quantile=quantile, bandwidth=0.15, surrogate=surrogate)
    for fn in (
        lambda s: L.precision_at_recall_loss(s, labels, 0.7, **kw),
        lambda s: L.precision_at_rate_loss(s, labels, 0.2, **kw),
        lambda s: L.precision_at_rate_loss(s, labels, 0.2, form="tp", **kw),
        lambda s: L.recall_at_fpr_loss(s, labels, 0.2, **kw),
        lambda s: L.pr_auc_loss(s, labels, (0.3, 0.6, 0.9), **kw),
    ):
        assert torch.autograd.gradcheck(fn, (scores,), eps=1e-6, atol=1e-6)


def test_gradient_flows_through_the_threshold():
    scores, labels = small_example()
    scores = scores.clone().requires_grad_()
    L.precision_at_recall_loss(scores, labels, 2 / 3, quantile="point", reduction="sum").backward()
    # d/d(threshold score) = -sum over negatives of sigmoid(s - 0); the threshold is the positive at 0.0.
    expected = -sum(1 / (1 + math.exp(-v)) for v in (0.5, -1.0, 1.5))
    assert float(scores.grad[2]) == pytest.approx(expected)
    assert float(scores.grad[0]) == 0.0 and float(scores.grad[1]) == 0.0


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(-50, 50), min_size=2, max_size=40), seed=st.integers(0, 1000),
       rate=st.floats(0.01, 0.99), surrogate=st.sampled_from(["logistic", "hinge"]))
def test_losses_are_non_negative_and_finite(values, seed, rate, surrogate):
    scores = torch.tensor(values, dtype=torch.float64)
    labels = torch.rand(len(values), generator=torch.Generator().manual_seed(seed)) < 0.5
    for fn in (L.precision_at_recall_loss, L.precision_at_rate_loss, L.recall_at_fpr_loss):
        loss = fn(scores, labels, rate, surrogate=surrogate)
        assert torch.isfinite(loss) and float(loss) >= 0


def test_empty_subset_gives_zero_loss_and_nan_threshold_or_raises():
    scores = torch.randn(10, dtype=torch.float64, requires_grad=True)
    labels = torch.zeros(10, dtype=torch.long)  # no positive: the recall threshold is undefined
    out = L.precision_at_recall_loss(scores, labels, 0.9, return_threshold=True)
    assert float(out.loss.detach()) == 0.0 and math.isnan(float(out.threshold))
    out.loss.backward()
    assert bool((scores.grad == 0).all())
    with pytest.raises(ValueError, match=exact(EMPTY_SUBSET_MESSAGE)):
        L.precision_at_recall_loss(scores, labels, 0.9, empty_subset="raise")
    # A separate subset minibatch fixes it.
    loss = L.precision_at_recall_loss(scores, labels, 0.9, threshold_scores=torch.randn(5, dtype=torch.float64))
    assert float(loss.detach()) > 0


def test_no_penalised_rows_gives_zero():
    scores = torch.randn(8, requires_grad=True)
    labels = torch.ones(8, dtype=torch.long)
    loss = L.precision_at_recall_loss(scores, labels, 0.5)
    assert float(loss.detach()) == 0.0
    loss.backward()
    assert bool((scores.grad == 0).all())


def test_labels_accept_bool_float_and_int():
    scores, labels = random_batch()
    reference = L.precision_at_recall_loss(scores, labels, 0.8)
    for encoded in (labels.bool(), labels.double(), labels.int()):
        torch.testing.assert_close(L.precision_at_recall_loss(scores, encoded, 0.8), reference)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_follows_input(dtype):
    scores, labels = random_batch(dtype=dtype)
    for fn in (L.precision_at_recall_loss, L.precision_at_rate_loss, L.recall_at_fpr_loss):
        assert fn(scores, labels, 0.3).dtype == dtype


def test_pr_auc_is_the_mean_of_precision_at_recall_losses():
    scores, labels = random_batch()
    recalls = (0.2, 0.5, 0.8)
    expected = torch.stack([L.precision_at_recall_loss(scores, labels, r) for r in recalls]).mean()
    out = L.pr_auc_loss(scores, labels, recalls, return_threshold=True)
    torch.testing.assert_close(out.loss, expected)
    assert out.threshold.shape == (3,)
    assert bool((out.threshold[:-1] >= out.threshold[1:]).all())  # higher recall, lower threshold
    with pytest.raises(ValueError, match=exact(TARGETS_EMPTY_MESSAGE, name="recalls")):
        L.pr_auc_loss(scores, labels, ())


def test_beats_logistic_regression_with_a_moved_threshold():
    """On the paper's kind of mixture, minimising eq. (7) for a line beats thresholded LR at recall 0.95."""
    torch.manual_seed(0)
    X_train, y_train = make_gaussian_mixture(4000, random_state=1)
    X_test, y_test = make_gaussian_mixture(4000, random_state=2)
    logistic = LogisticRegression().fit(X_train, y_train)
    lr_precision = precision_at_recall(y_test, logistic.decision_function(X_test), 0.95)

    X, y = torch.tensor(X_train), torch.tensor(y_train)
    model = torch.nn.Linear(2, 1, dtype=torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(300):
        optimizer.zero_grad()
        L.precision_at_recall_loss(model(X).squeeze(-1), y, 0.95).backward()
        optimizer.step()
    with torch.no_grad():
        ours = precision_at_recall(y_test, model(torch.tensor(X_test)).squeeze(-1).numpy(), 0.95)
    # Measured: LR 0.146, quantile loss 0.368 (the paper's figure: 0.13 and 0.37 at recall 0.9).
    assert lr_precision < 0.2
    assert ours > 0.3 and ours > 2 * lr_precision


HALF_N = 100_000  # 80 % negatives: a float16 count of the penalised rows (80000 > 65504) would be inf


def _reference_loss(values, positive, rates, subset_rows, penalize):
    """Float64, from eq. (2): theta = q(f(A), 1 - rate) (Gaussian kernel); mean softplus over the penalised rows."""
    thresholds = [ref.kernel_np(values[subset_rows], 1 - r, 0.05) for r in rates]
    penalised = values[~positive if penalize == "negatives" else positive]
    per_rate = [np.mean(np.logaddexp(0.0, penalised - t if penalize == "negatives" else t - penalised))
                for t in thresholds]
    return float(np.mean(per_rate)), thresholds


def _half_terms_loss(penalised, thresholds, penalize):
    """The loss a user sees in half precision, brute force: each row's margin to each returned threshold and its
    softplus rounded to the scores' dtype (as the per-row terms are), their mean over rows and levels exact,
    rounded once. A count or sum kept in half precision misses it (80,000 rows are inf in float16)."""
    dtype, rows = penalised.dtype, penalised.double()
    means = []
    for theta in thresholds.detach().double().reshape(-1).tolist():
        margin = (rows - theta if penalize == "negatives" else theta - rows).to(dtype).double()
        means.append(float(torch.nn.functional.softplus(margin).to(dtype).double().mean()))
    return float(torch.tensor(float(np.mean(means)), dtype=torch.float64).to(dtype))


HALF_LOSSES = {
    "precision_at_recall": (lambda s, y, **kw: L.precision_at_recall_loss(s, y, 0.9, **kw), (0.9,), "pos", "negatives"),
    "precision_at_rate fp": (lambda s, y, **kw: L.precision_at_rate_loss(s, y, 0.05, **kw), (0.05,), "all", "negatives"),
    "precision_at_rate tp": (lambda s, y, **kw: L.precision_at_rate_loss(s, y, 0.05, form="tp", **kw), (0.05,), "all",
                             "positives"),
    "recall_at_fpr": (lambda s, y, **kw: L.recall_at_fpr_loss(s, y, 0.05, **kw), (0.05,), "neg", "positives"),
    "pr_auc": (lambda s, y, **kw: L.pr_auc_loss(s, y, (0.2, 0.5, 0.8), **kw), (0.2, 0.5, 0.8), "pos", "negatives"),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("autocast", [False, True])
def test_half_precision_losses_match_the_float64_reference_above_65504_rows(dtype, autocast):
    rng = np.random.default_rng(3)
    positive_np = rng.random(HALF_N) < 0.2
    values = torch.as_tensor(rng.normal(size=HALF_N) + positive_np).to(dtype)
    exact = values.double().numpy()  # the reference sees the same (rounded) scores
    labels = torch.as_tensor(positive_np).long()
    eps = torch.finfo(dtype).eps
    rows = {"pos": positive_np, "neg": ~positive_np, "all": np.ones(HALF_N, dtype=bool)}
    for name, (loss_fn, rates, subset, penalize) in HALF_LOSSES.items():
        expected, thresholds = _reference_loss(exact, positive_np, rates, rows[subset], penalize)
        scores = values.clone().requires_grad_()
        with torch.autocast("cpu", dtype=dtype, enabled=autocast):
            out = loss_fn(scores, labels, return_threshold=True)
        assert out.loss.dtype == dtype and out.threshold.dtype == dtype, name
        # The threshold is the float32 estimate rounded once; the loss adds half-precision margins
        # and softplus (about eps each, relative), summed in float32.
        torch.testing.assert_close(out.threshold.double(), torch.tensor(thresholds, dtype=torch.float64).squeeze(),
                                   atol=1e-5, rtol=eps / 2, msg=name)
        assert float(out.loss.detach()) == pytest.approx(expected, abs=4 * eps * (1 + expected)), name
        penalised = ~positive_np if penalize == "negatives" else positive_np
        assert float(out.loss.detach()) == _half_terms_loss(values[penalised], out.threshold, penalize), name
        out.loss.backward()
        wide = values.double().requires_grad_()
        loss_fn(wide, labels).backward()
        scale = float(wide.grad.abs().max())
        torch.testing.assert_close(scores.grad.double(), wide.grad, atol=16 * eps * scale, rtol=0, msg=name)



@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_pr_auc_stays_finite_when_a_levels_sum_passes_65504(dtype):
    # 24,000 negatives about 5 above every threshold: each level's sum of softplus is about 120,000, past the
    # largest float16 (65504), while the mean (about 5) is representable; the sums must be taken in float32.
    rng = np.random.default_rng(4)
    positive = rng.random(30_000) < 0.2
    values = torch.as_tensor(rng.normal(size=positive.size) + 5.0 * ~positive).to(dtype)
    labels = torch.as_tensor(positive).long()
    expected = float(L.pr_auc_loss(values.double(), labels))
    assert expected > 4.0 and expected * (~positive).sum() > 65504
    out = L.pr_auc_loss(values, labels, return_threshold=True)
    assert out.loss.dtype == dtype
    eps = torch.finfo(dtype).eps
    assert float(out.loss) == pytest.approx(expected, abs=4 * eps * (1 + expected))
    assert float(out.loss) == _half_terms_loss(values[~positive], out.threshold, "negatives")


def test_a_callable_quantile_of_the_wrong_shape_is_named_by_the_losses():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(50, generator=generator, dtype=torch.float64)
    labels = (torch.rand(50, generator=generator) < 0.4).long()
    n_pos = int(labels.sum())
    for loss in (lambda q: L.precision_at_recall_loss(scores, labels, 0.8, quantile=q),
                 lambda q: L.pr_auc_loss(scores, labels, quantile=q)):
        with pytest.raises(ValueError, match=prefix(CALLABLE_RESULT_SHAPE_MESSAGE, shape=(n_pos,))):
            loss(lambda s, c: s)
    # a one-value tensor of shape (1,) is one estimate: the same loss as a 0-d one, for one level and for nine
    for loss in (lambda q: L.precision_at_recall_loss(scores, labels, 0.8, quantile=q),
                 lambda q: L.pr_auc_loss(scores, labels, quantile=q)):
        assert torch.equal(loss(lambda s, c: torch.quantile(s, c, keepdim=True)), loss(lambda s, c: torch.quantile(s, c)))
