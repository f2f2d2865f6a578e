"""The general loss (losses/general.py): subsets as words or masks, several rates, torch.compile."""

import pytest
import torch

from quantile_surrogate import losses as L

from tests.losses._data import random_batch


def test_subset_words_and_masks_agree():
    scores, labels = random_batch()
    positive = labels == 1
    for word, mask in (("positives", positive), ("negatives", ~positive), ("all", torch.ones_like(positive))):
        torch.testing.assert_close(L.rate_constrained_loss(scores, labels, rate=0.3, subset=word),
                                   L.rate_constrained_loss(scores, labels, rate=0.3, subset=mask))


@pytest.mark.parametrize("quantile", ["point", "kernel", "epanechnikov", "lower_mean", "interval"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_a_sequence_of_rates_is_the_mean_of_the_single_rate_losses(quantile, reduction):
    # pr_auc_loss shares one selection across its levels; it must equal the levels one by one.
    scores, labels = random_batch(n=300, seed=9)
    rates = (0.2, 0.5, 0.9)
    kw = dict(subset="positives", quantile=quantile, bandwidth=0.1, reduction=reduction)
    singles = [L.rate_constrained_loss(scores, labels, rate=r, return_threshold=True, **kw) for r in rates]
    joint = L.rate_constrained_loss(scores, labels, rate=rates, return_threshold=True, **kw)
    torch.testing.assert_close(joint.loss, torch.stack([o.loss for o in singles]).mean(dim=0))
    torch.testing.assert_close(joint.threshold, torch.stack([o.threshold for o in singles]))


def test_no_graph_break_with_validate_args_false():
    # Under compile the point and kernel estimators take the masked torch path (no NumPy, no
    # boolean indexing, no .item()), so the whole loss is one graph.
    scores, labels = random_batch(n=200, seed=12)
    for quantile in ("point", "kernel"):
        kw = dict(quantile=quantile, validate_args=False)
        for fn in (lambda s, y: L.precision_at_recall_loss(s, y, 0.8, **kw),
                   lambda s, y: L.precision_at_rate_loss(s, y, 0.1, form="tp", **kw),
                   lambda s, y: L.recall_at_fpr_loss(s, y, 0.1, **kw),
                   lambda s, y: L.rate_constrained_loss(s, y, rate=0.5, subset=s > 0, **kw),
                   lambda s, y: L.pr_auc_loss(s, y, **kw)):
            torch._dynamo.reset()
            explanation = torch._dynamo.explain(fn)(scores, labels)
            assert explanation.graph_break_count == 0, (quantile, explanation.break_reasons)
    torch._dynamo.reset()


@pytest.mark.slow
def test_compiled_losses_give_the_eager_values_and_gradients():
    scores, labels = random_batch(n=300, seed=13)

    def losses(s, y):
        return (L.precision_at_recall_loss(s, y, 0.8, validate_args=False),
                L.precision_at_rate_loss(s, y, 0.1, quantile="point", validate_args=False),
                L.pr_auc_loss(s, y, (0.3, 0.6), quantile="epanechnikov", bandwidth=0.1, validate_args=False),
                L.recall_at_fpr_loss(s, y, 0.2, quantile="lower_mean"))  # validated: graph breaks, same values

    torch._dynamo.reset()
    compiled_in, eager_in = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    compiled, eager = torch.compile(losses)(compiled_in, labels), losses(eager_in, labels)
    for got, expected in zip(compiled, eager):
        torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
        (grad_got,) = torch.autograd.grad(got, compiled_in, retain_graph=True)
        (grad_expected,) = torch.autograd.grad(expected, eager_in, retain_graph=True)
        torch.testing.assert_close(grad_got, grad_expected, atol=1e-12, rtol=0)
    torch._dynamo.reset()

