"""The threshold's memory across minibatch steps (quantile_surrogate.training._memory; issue 28, item 1).

The value is the quantile over the remembered and the current scores of A (relative to each step's anchor, the
batch's mean score), checked against the estimator on the merged scores; the gradient is the step's own estimate's,
checked by autograd; on a model that does not move, the memory's thresholds give recalls whose spread is several
times smaller than Algorithm 1's own-batch estimate and whose mean is the target (the own-batch estimate of three
positives is biased). Resuming a checkpoint restores the memory: the resumed fit is the uninterrupted one, bit for bit.
"""

import pytest
import torch

from quantile_surrogate import train
from quantile_surrogate.objectives import predict_scores
from quantile_surrogate.quantiles import quantile_estimates
from quantile_surrogate.training import MEMORY_CALLABLE_MESSAGE
from quantile_surrogate.training._memory import ThresholdMemory
from tests._messages import exact
from tests.training._helpers import Recorder, trained
from tests.training.test_subset_every_step import rare_positives

torch.set_num_threads(1)
KERNEL = dict(bandwidth=0.05)


def _q(values, level=0.1):
    return float(quantile_estimates("kernel", values.double(), [level], **KERNEL)[0])


def test_the_buffer_value_is_the_quantile_of_the_remembered_and_current_scores_and_drops_the_oldest():
    g = torch.Generator().manual_seed(0)
    memory = ThresholdMemory("buffer", "kernel", 0.05, 0.1, [6])
    steps = [(torch.randn(n, dtype=torch.float64, generator=g), torch.randn((), dtype=torch.float64, generator=g))
             for n in (3, 2, 4)]
    kept = []
    for reference, anchor in steps:
        threshold, codes = memory.thresholds(reference, anchor)
        merged = list(reference - anchor) + kept  # this step's scores and the remembered ones, newest first
        assert codes is None and float(threshold[0]) == pytest.approx(float(anchor) + _q(torch.stack(merged)))
        kept = merged[:6]  # six at most: the oldest fall off
        assert memory.scores[0].tolist() == pytest.approx([float(v) for v in kept])


def test_the_ema_value_averages_the_steps_own_estimates_relative_to_their_anchor():
    memory = ThresholdMemory("ema", "point", 0.05, 0.5, [10])
    first, second = torch.tensor([1.0, 3.0, 5.0]), torch.tensor([2.0, 4.0, 10.0])
    memory.thresholds(first, torch.tensor(1.0))
    threshold, _ = memory.thresholds(second, torch.tensor(0.0))
    point = [float(quantile_estimates("point", s, [0.5])[0]) for s in (first - 1.0, second)]
    assert float(threshold[0]) == pytest.approx(0.9 * point[0] + 0.1 * point[1])


def test_groups_have_their_own_memory_and_an_absent_group_no_threshold():
    memory = ThresholdMemory("buffer", "point", 0.05, 0.5, [4, 4])
    memory.thresholds(torch.tensor([0.0, 10.0]), torch.tensor(0.0), torch.tensor([0, 1]))
    threshold, codes = memory.thresholds(torch.tensor([2.0]), torch.tensor(0.0), torch.tensor([0]))
    assert codes.tolist() == [0] and threshold.tolist() == [0.0]  # group 0: the point quantile of {2, 0}
    assert memory.scores[1].tolist() == [10.0]


def test_the_threshold_gradient_is_the_steps_own_estimates():
    g = torch.Generator().manual_seed(1)
    memory = ThresholdMemory("buffer", "kernel", 0.05, 0.1, [50])
    memory.thresholds(torch.randn(40, dtype=torch.float64, generator=g), torch.tensor(0.0, dtype=torch.float64))
    current = torch.randn(4, dtype=torch.float64, generator=g, requires_grad=True)
    threshold, _ = memory.thresholds(current, current.detach().mean())
    own = quantile_estimates("kernel", current, [0.1], **KERNEL)[0]
    with_memory = torch.autograd.grad(threshold[0], current)[0]
    alone = torch.autograd.grad(own, current)[0]
    torch.testing.assert_close(with_memory, alone, rtol=0, atol=1e-12)
    assert abs(float(threshold[0].detach()) - float(own.detach())) > 1e-3  # the value is the memory's


def _step_recalls(threshold_memory, **settings):
    """Recall on all positives of every step's threshold, on a linear model that does not move."""
    X, y = rare_positives(n=2000, share=0.1)
    model = torch.nn.Linear(3, 1, dtype=torch.float64)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0, 1.0]])), model.bias.zero_()
    result = train(model, X, y, target=0.9, batch_size=32, max_epochs=2, learning_rate=1e-12, momentum=0.0,
                   init="model", threshold_memory=threshold_memory, random_state=0, **settings)
    positives = predict_scores(result.model, X)[y == 1]
    steps = torch.tensor([t for epoch in result.threshold_curve for t in epoch], dtype=torch.float64)
    return (positives[None, :] > steps[:, None]).double().mean(dim=1)


def test_on_a_still_model_the_buffer_removes_the_own_batch_bias_and_most_of_its_spread():
    own = _step_recalls(None, subset_from_batch=True)     # about 3 positives a step: their minimum, mostly
    buffered = _step_recalls("buffer")
    assert own.mean() < 0.85 and own.std() > 0.1
    assert abs(float(buffered.mean()) - 0.9) < 0.02
    assert float(own.std()) > 3 * float(buffered.std())


def test_a_step_forwards_its_batch_alone_and_the_curve_has_a_threshold_per_step():
    X, y = rare_positives(n=400)
    built = []

    def factory():
        built.append(Recorder(3))
        return built[-1]

    buffered = train(factory, X, y, batch_size=32, max_epochs=2, random_state=0, threshold_memory="buffer")
    sizes = [x.shape[0] for x in trained(built)]
    assert [len(epoch) for epoch in buffered.threshold_curve] == [13, 13]
    # A batch with rows of A forwards its 32 rows (16 in the last); one without draws ceil(32 * 40 / 400) = 4 of A.
    assert set(sizes) <= {16, 20, 32, 36} and sizes.count(32) >= 20
    full = train(torch.nn.Linear(3, 1, dtype=torch.float64), X, y, max_epochs=3, random_state=0)
    assert [len(epoch) for epoch in full.threshold_curve] == [1, 1, 1]


def test_bad_settings_are_refused_by_name():
    X, y = rare_positives(n=100)
    with pytest.raises(ValueError, match="threshold_memory"):
        train(torch.nn.Linear(3, 1, dtype=torch.float64), X, y, batch_size=32, threshold_memory="moving")
    with pytest.raises(ValueError, match=exact(MEMORY_CALLABLE_MESSAGE)):
        train(torch.nn.Linear(3, 1, dtype=torch.float64), X, y, batch_size=32, threshold_memory="buffer",
              quantile=lambda s, level: s.quantile(level))


def test_an_iterable_of_batches_remembers_as_the_tensors_do():
    from tests.training._helpers import blobs, linear, params
    from tests.training.test_streaming import one_epoch_of_batches

    X, y = blobs()
    settings = dict(objective="precision_at_recall", target=0.8, max_epochs=1, learning_rate=0.1, random_state=3,
                    threshold_memory="buffer")
    tensors = train(linear(), X, y, batch_size=50, subset_batch_size=7, subset_from_batch=True, **settings)
    batches = train(linear(), one_epoch_of_batches(X, y, 3, separate=False), **settings)
    assert torch.equal(params(batches.model), params(tensors.model))
    assert batches.threshold_curve == tensors.threshold_curve


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_the_memory_inside_autocast_stays_finite(dtype):
    """Half-precision scores: the memory keeps its scores and anchors in float32; loss and thresholds stay finite."""
    from tests.training.test_inputs import SmallCNN, digits

    X, y = digits()
    with torch.autocast("cpu", dtype=dtype):
        result = train(SmallCNN(), X[:400], y[:400], target=0.9, batch_size=16, max_epochs=3, learning_rate=0.05,
                       random_state=0, threshold_memory="buffer")
    steps = torch.tensor([t for epoch in result.threshold_curve for t in epoch])
    assert bool(torch.isfinite(torch.tensor(result.loss_curve + [result.loss])).all())
    assert steps.numel() == 3 * 25 and bool(torch.isfinite(steps).all())
    assert result.loss_curve[-1] < result.loss_curve[0]


@pytest.mark.parametrize("mode", ["buffer", "ema"])
def test_a_fit_with_a_memory_resumes_from_its_checkpoint_bit_identically(tmp_path, mode):
    from tests.training._helpers import blobs, linear, params

    X, y = blobs()
    settings = dict(batch_size=40, n_restarts=2, max_epochs=5, learning_rate=0.1, random_state=5, threshold_memory=mode)
    reference = train(linear(), X, y, **settings)

    def interrupt(info):
        if (info["restart"], info["epoch"]) == (1, 2):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(linear(), X, y, checkpoint=tmp_path / "fit.pt", callback=interrupt, **settings)
    resumed = train(linear(), X, y, checkpoint=tmp_path / "fit.pt", **settings)
    assert torch.equal(params(resumed.model), params(reference.model))
    assert resumed.threshold_curve == reference.threshold_curve and resumed.restart_losses == reference.restart_losses
