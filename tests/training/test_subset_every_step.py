"""Every minibatch step has rows of A, and of every group's A (issue 28, item 2; quantile_surrogate.training.sampling).

A spy on EpochSteps.loss (called once per minibatch step, with the step's A_b as ``threshold_scores``) counts the
rows of A, and their groups, of every step: with a separate minibatch of A (the default at batch_size=32 with 10 %
positives), and where A_b is the batch's own rows of A, whose batches without a row of A draw one for their step.
A loader's batch without a row of A is skipped.
"""

import dataclasses

import pytest
import torch

from quantile_surrogate import train
from quantile_surrogate.objectives import subset_mask
from quantile_surrogate.training._state import TrainingData, TrainingSettings
from quantile_surrogate.training._steps import EpochSteps
from quantile_surrogate.training.sampling import batches_without_subset, epoch_batches
from quantile_surrogate.training.subset_size import SubsetPlan, separate_plan
from quantile_surrogate._utils.seeding import restart_seeds
from tests.training._helpers import Recorder, params, trained

torch.set_num_threads(1)


def rare_positives(n=1000, share=0.1, d=3, seed=0):
    """``n`` rows, exactly ``share`` of them positive (shifted by 1.5), in random order; float64 X, int64 y."""
    g = torch.Generator().manual_seed(seed)
    y = (torch.randperm(n, generator=g) < int(share * n)).long()
    return torch.randn(n, d, generator=g, dtype=torch.float64) + 1.5 * y[:, None], y


@pytest.fixture
def steps_seen(monkeypatch):
    """Per minibatch step: (rows of A_b, group codes of A_b or None)."""
    seen = []
    loss = EpochSteps.loss

    def spy(self, scores, labels, threshold_scores, groups=None, threshold_groups=None, *args, **kwargs):
        codes = None if threshold_groups is None else sorted(set(threshold_groups.tolist()))
        seen.append((threshold_scores.numel(), codes))
        return loss(self, scores, labels, threshold_scores, groups, threshold_groups, *args, **kwargs)

    monkeypatch.setattr(EpochSteps, "loss", spy)
    return seen


SETTINGS = {
    "default (a separate minibatch of A)": dict(),
    "A_b from the batch": dict(subset_from_batch=True),
    "a small separate minibatch": dict(subset_batch_size=3),
}


@pytest.mark.parametrize("grouped", [False, True], ids=["one threshold", "groups"])
@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_every_step_at_batch_size_32_has_rows_of_a_and_of_every_group(steps_seen, settings, grouped):
    X, y = rare_positives(n=1000)  # 100 positives, 3.2 per batch of 32: 0.9^32 = 3 % of the batches have none
    groups = torch.arange(1000) % 3 if grouped else None
    epochs = 5
    train(torch.nn.Linear(3, 1), X, y, objective="precision_at_recall", target=0.9, batch_size=32, groups=groups,
          max_epochs=epochs, random_state=0, **settings)
    assert len(steps_seen) == epochs * 32  # ceil(1000 / 32) steps per epoch, each with its loss
    assert min(rows for rows, _ in steps_seen) >= (3 if grouped else 1)
    if grouped:
        assert all(codes == [0, 1, 2] for _, codes in steps_seen)


def test_without_the_cover_some_batches_of_32_would_have_no_row_of_a():
    """The spied fit "A_b from the batch" above is not lucky: its epochs (the same generator) hold batches without a
    positive, and only those draw a separate minibatch of A."""
    X, y = rare_positives(n=1000)
    codes = torch.where(y == 1, 0, -1)
    generator = torch.Generator().manual_seed(restart_seeds(0, 1)[0][1])
    lacking = []
    for _ in range(5):
        state = generator.get_state()
        batches = torch.randperm(1000, generator=generator).split(32)
        lacking.append(batches_without_subset(batches, codes))
        assert lacking[-1] == [b for b, rows in enumerate(batches) if not bool(y[rows].any())]
        generator.set_state(state)
        epoch = epoch_batches(1000, 32, generator, subset_index=torch.nonzero(y).reshape(-1), subset_size=100,
                              subset_codes=codes)
        assert [b for b, (_, subset_rows) in enumerate(epoch) if subset_rows is not None] == lacking[-1]
        assert [torch.equal(rows, batch) for (rows, _), batch in zip(epoch, batches)] == [True] * len(batches)
    assert sum(map(len, lacking)) >= 3


def test_a_batch_without_a_draws_the_rule_sized_minibatch_and_a_full_epoch_draws_nothing():
    X, y = rare_positives(n=1001, share=0.5)  # target 0.5: 100 rows of A needed, 250 expected in a batch of 500
    labels = y.bool()
    settings = TrainingSettings(
        objective="precision_at_recall", target=0.5, form="fp", quantile="kernel", bandwidth=0.05,
        surrogate="logistic", learning_rate=0.1, momentum=0.9, weight_decay=0.0, batch_size=500,
        subset_batch_size=None, subset_from_batch=False, max_epochs=1, n_restarts=1, init="random", init_alpha=None,
        early_stopping=False, n_iter_no_change=10, tol=1e-4, select="loss", monitor="metric")
    data = TrainingData(X, labels, subset_mask(labels, "precision_at_recall"))
    steps = EpochSteps(settings, data)
    assert steps.subset_plan == SubsetPlan(separate=False)
    # With the threshold memory such a batch draws the rows of A a batch holds in expectation: ceil(500 * 500 / 1001).
    remembering, draws = EpochSteps(dataclasses.replace(settings, threshold_memory="buffer"), data), []
    for seed in range(8):
        draws += [sub for _, sub in remembering.epoch_batches(torch.Generator().manual_seed(seed)) if sub is not None]
    assert draws and all(len(rows) == 250 and bool(y[rows].all()) for rows in draws)
    assert separate_plan(steps.subset_sizes, 0.5) == SubsetPlan(separate=True, size=100)
    generator = torch.Generator().manual_seed(0)
    separate = []
    for _ in range(8):
        state = generator.get_state()
        epoch = steps.epoch_batches(generator)
        last_rows = epoch[-1][0]  # the last batch has a single row
        assert [len(rows) for rows, _ in epoch] == [500, 500, 1]
        assert [s is None for _, s in epoch[:2]] == [True, True]
        if bool(y[last_rows].any()):  # every batch holds A: the same draws as before, no subset stream
            assert epoch[-1][1] is None
            assert torch.equal(generator.get_state(), _after_permutation(state, 1001))
        else:
            separate.append(epoch[-1][1])
    assert separate and all(len(rows) == 100 and bool(y[rows].all()) for rows in separate)


def _after_permutation(state, n):
    generator = torch.Generator()
    generator.set_state(state)
    torch.randperm(n, generator=generator)
    return generator.get_state()


def test_a_loader_batch_without_a_row_of_a_is_skipped():
    X, y = rare_positives(n=60, share=0.5)
    order = torch.argsort(y, stable=True)  # 30 negatives, then 30 positives
    X, y = X[order], y[order]
    batches = [(X[:20], y[:20]), (X[20:40], y[20:40]), (X[40:], y[40:])]  # the first has no positive
    built = []

    def factory():
        built.append(Recorder(3).double())
        return built[-1]

    train(factory, batches, objective="precision_at_recall", target=0.8, max_epochs=2, random_state=0)
    assert [x.shape[0] for x in trained(built)] == [20, 20] * 2  # batches 1 and 2 of each epoch
    # Without the skipped batch, the same training: the batch without A took no step.
    again = train(factory, batches[1:], objective="precision_at_recall", target=0.8, max_epochs=2, random_state=0)
    built.clear()
    skipped = train(factory, batches, objective="precision_at_recall", target=0.8, max_epochs=2, random_state=0)
    assert torch.equal(params(again.model), params(skipped.model))
