"""quantile_surrogate.experiments._heads: the vectorised heads equal the library's loss, and do not interact."""

import pytest
import torch

from quantile_surrogate.experiments._heads import head_losses, train_linear_heads
from quantile_surrogate.losses import precision_at_rate_loss


@pytest.mark.parametrize("form", ["fp", "tp"])
def test_each_head_has_the_library_loss_and_gradient(form):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(80, 5, generator=gen, dtype=torch.float64)
    y = (torch.rand(80, generator=gen) < 0.3).long()
    W = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    penalized = (y == 0) if form == "fp" else (y == 1)
    losses, thresholds = head_losses(X @ W, penalized, rate=0.1, bandwidth=0.05, form=form)
    losses.sum().backward()
    for h in range(4):
        w = W.detach()[:, h].clone().requires_grad_()
        out = precision_at_rate_loss(X @ w, y, 0.1, form=form, bandwidth=0.05, return_threshold=True)
        out.loss.backward()
        torch.testing.assert_close(losses[h], out.loss)
        torch.testing.assert_close(thresholds[h], out.threshold)
        torch.testing.assert_close(W.grad[:, h], w.grad)


def test_heads_are_independent_and_seeded():
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(60, 3, generator=gen, dtype=torch.float64)
    y = (X[:, 0] + 0.5 * torch.randn(60, generator=gen, dtype=torch.float64) > 1).long()
    kw = dict(rate=0.1, bandwidth=0.05, max_epochs=30)
    W2, b2, l2 = train_linear_heads(X, y, weight_decays=[1e-3, 1e-1], seeds=[5, 6], **kw)
    W1, b1, l1 = train_linear_heads(X, y, weight_decays=[1e-1], seeds=[6], **kw)
    torch.testing.assert_close(W2[:, 1], W1[:, 0])  # a head does not see its neighbours
    torch.testing.assert_close(l2[1], l1[0])
    assert not torch.allclose(W2[:, 0], W2[:, 1])
