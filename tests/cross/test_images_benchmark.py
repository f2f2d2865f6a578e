"""``benchmarks/images.py`` (issue 28): its stratified batches, the focal loss, and a quick run.

The quick run trains every method for 2 epochs on one digit: the threshold memory is ignored by full-batch
training, so the full batch gives every quantile method the same model; APLoss runs only where LibAUC is installed.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests._benchmarks import load

bench = load("images")


def test_stratified_batches_take_every_row_once_with_the_positive_rate_in_each():
    y = (np.arange(203) % 10 == 0).astype(int)  # 21 positives
    batches = bench.stratified_batches(y, 32, np.random.default_rng(0))
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(203)) and len(batches) == 7
    positives = [int(y[b].sum()) for b in batches]
    assert max(positives) - min(positives) <= 1 and min(positives) >= 3
    assert max(map(len, batches)) - min(map(len, batches)) <= 1


def test_focal_loss_is_lin_et_al_s_formula():
    g = torch.Generator().manual_seed(0)
    scores, y = torch.randn(50, generator=g, dtype=torch.float64), (torch.rand(50, generator=g) < 0.3).long()
    # gamma = 0, alpha = 1/2: half the binary cross-entropy
    assert float(bench.focal_loss(scores, y, alpha=0.5, gamma=0.0)) == pytest.approx(
        0.5 * float(F.binary_cross_entropy_with_logits(scores, y.double())), rel=1e-12)
    p = torch.sigmoid(scores)
    p_t = torch.where(y == 1, p, 1 - p)
    alpha_t = torch.where(y == 1, 0.25, 0.75)
    expected = (-alpha_t * (1 - p_t) ** 2 * torch.log(p_t)).mean()
    assert float(bench.focal_loss(scores, y)) == pytest.approx(float(expected), rel=1e-10)


def test_a_quick_run_gives_every_quantile_method_the_full_batch_model():
    methods = ["default", "buffer", "ema", "from_batch", "bce"]
    rows = bench.run(digits=(3,), seeds=range(1), batch_sizes=("32", "full"), methods=methods, epochs=1)
    assert len(rows) == 2 * len(methods) and set(rows.method) == set(methods)
    full = rows[(rows.batch == "full") & rows.method.isin(methods[:4])]
    assert full.precision.nunique() == 1 and full.average_precision.nunique() == 1
    buffer = rows[(rows.batch == "32") & (rows.method == "buffer")].iloc[0]
    assert buffer.steps == 29 and np.isfinite(buffer.threshold_recall_sd)
    assert "step cost, buffer / bce at batch 32" in bench.summary(rows)


def test_augmented_copies_keep_the_labels_and_shift_each_copy_by_at_most_a_pixel():
    X, y = bench.digits_task(3)
    X, y = X[:50], y[:50]
    big, labels = bench.augmented(X, y, 3, seed=0)
    assert big.shape == (200, 1, 8, 8) and torch.equal(labels, y.repeat(4)) and torch.equal(big[:50], X)
    for copy in big[50:].split(50):
        # some shift of at most one pixel each way leaves only the N(0, 0.1) noise
        residual = min(float((copy - torch.roll(X, (a, b), dims=(2, 3))).std())
                       for a in (-1, 0, 1) for b in (-1, 0, 1))
        assert residual == pytest.approx(0.1, rel=0.1)
    assert bench.augmented(X, y, 0, seed=0)[0] is X


def test_bce_stacked_forwards_the_defaults_minibatch_of_a_and_trains_as_bce():
    # The stacked rows are what train()'s default plan stacks: its separate minibatch of A at batch 32, none on the
    # full batch (A_b = A there).
    from quantile_surrogate.training.subset_size import subset_plan

    y = (np.arange(898) % 10 == 0).astype(int)  # 90 positives
    positives, extra = bench.stacked_rows(y, 32)
    plan = subset_plan(898, 32, [90], 0.9)
    assert plan.separate and extra == plan.size == 32 and np.array_equal(positives, np.flatnonzero(y))
    assert bench.stacked_rows(y, 898)[1] == 0
    # Their scores enter no loss and the batches are bce's: the same model up to the convolution's rounding on a
    # larger batch, and a step that costs more than bce's.
    rows = bench.run(digits=(3,), seeds=range(1), batch_sizes=("32",), methods=["bce", "bce_stacked"], epochs=2)
    bce, stacked = (rows[rows.method == m].iloc[0] for m in ("bce", "bce_stacked"))
    assert stacked.steps == bce.steps == 58
    assert stacked.average_precision == pytest.approx(bce.average_precision, abs=1e-3)
    assert "step cost, bce_stacked / bce at batch 32" in bench.summary(rows)


def test_floor_loss_is_a_hinge_on_the_negatives_at_the_subsets_point_quantile():
    g = torch.Generator().manual_seed(1)
    scores, y = torch.randn(40, generator=g, dtype=torch.float64), (torch.rand(40, generator=g) < 0.3).long()
    positives = sorted(scores[y == 1].tolist())
    k = max(1, int(np.floor(0.1 * len(positives) + 1e-9)))
    expected = np.mean([max(0.0, 1.0 + s - positives[k - 1]) for s in scores[y == 0].tolist()])
    assert float(bench.floor_loss(scores, y)) == pytest.approx(expected, rel=1e-12)
    # the threshold from separate rows of A (the 3rd smallest of 30) where they are given
    subset = torch.linspace(-2.0, 1.0, 30, dtype=torch.float64)
    expected = np.mean([max(0.0, 1.0 + s - float(subset[2])) for s in scores[y == 0].tolist()])
    assert float(bench.floor_loss(scores, y, subset)) == pytest.approx(expected, rel=1e-12)
    # a batch without a positive takes its threshold from every score
    negatives = scores[y == 0]
    kth = sorted(negatives.tolist())[max(1, int(0.1 * negatives.numel())) - 1]
    expected = np.mean([max(0.0, 1.0 + s - kth) for s in negatives.tolist()])
    assert float(bench.floor_loss(negatives, torch.zeros_like(negatives, dtype=torch.long))) == pytest.approx(expected)


def test_the_floors_train_on_bces_batches_and_report_their_step_cost():
    rows = bench.run(digits=(3,), seeds=range(1), batch_sizes=("32",), methods=["bce", "floor", "floor_stacked"],
                     epochs=2)
    assert set(rows.steps) == {58}
    text = bench.summary(rows)
    assert "step cost, floor / bce at batch 32" in text and "step cost, floor_stacked / bce at batch 32" in text


def test_bce_start_is_bces_first_half_then_the_default_from_that_model():
    from quantile_surrogate import train

    X, y = bench.digits_task(3)
    X, y = X[:300], y[:300]
    model, row = bench.fit_one("bce_start", X, y, 32, 3, 0.05, 0, "cpu")
    assert row["steps"] == 3 * 10  # 10 batches an epoch: one epoch of BCE, two of the default
    start, _ = bench.fit_one("bce", X, y, 32, 1, 0.05, 0, "cpu")
    start.train()
    expected = train(start, X, y, objective="precision_at_recall", target=0.9, batch_size=32, learning_rate=0.05,
                     max_epochs=2, random_state=0, init="model").model
    for mine, theirs in zip(model.parameters(), expected.parameters()):
        assert torch.equal(mine, theirs)
