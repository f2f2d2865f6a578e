"""Data-parallel losses on 2 gloo processes equal the single-process loss on the concatenated batch.

One ``torch.multiprocessing.spawn`` of 2 CPU processes (gloo on the loopback interface, meeting
through a file store in the test's temporary folder, so no port can be taken in between) runs every
case and a short DDP training run, saves what it saw, and the test process compares it
with the single-process computation in float64. Starting the processes dominates the cost,
so all checks share one launch.
"""

import os
import sys
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from quantile_surrogate import losses
from quantile_surrogate._utils.checks import NOT_1D_MESSAGE, NOT_TENSOR_MESSAGE, REDUCTION_MESSAGE
from quantile_surrogate.training.distributed import (GROUPS_UNSUPPORTED_MESSAGE, NOT_A_LOSS_MODULE_MESSAGE,
                                                     SUBSET_NEEDED_MESSAGE, UNSUPPORTED_LOSS_MESSAGE,
                                                     DistributedQuantileLoss, all_gather_scores, distributed_loss)
from tests._messages import exact, prefix
from quantile_surrogate.losses.modules import PrecisionAtRecallLoss

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="torch.distributed with gloo is needed"
)

WORLD = 2
SPLIT = (37, 63)  # unequal on purpose: the gather pads to the largest size
DDP_SPLIT = (24, 40)
DDP_STEPS = 5


def _cases():
    """(name, loss_fn, kwargs, n_rows, labels override) for the loss and gradient checks."""
    g = torch.Generator().manual_seed(11)
    subset = torch.rand(sum(SPLIT), generator=g) < 0.4
    return [
        ("p_at_r kernel mean", losses.precision_at_recall_loss, dict(recall=0.8), None),
        ("p_at_r point sum", losses.precision_at_recall_loss, dict(recall=0.7, quantile="point", reduction="sum"), None),
        ("p_at_rate fp", losses.precision_at_rate_loss, dict(rate=0.2), None),
        ("p_at_rate tp lower_mean", losses.precision_at_rate_loss, dict(rate=0.3, form="tp", quantile="lower_mean"), None),
        ("r_at_fpr epanechnikov hinge", losses.recall_at_fpr_loss,
         dict(fpr=0.1, quantile="epanechnikov", bandwidth=0.1, surrogate="hinge"), None),
        ("rate subset positives", losses.rate_constrained_loss, dict(rate=0.5, subset=subset, penalize="positives"), None),
        ("rate subset by name", losses.rate_constrained_loss, dict(rate=0.3, subset="negatives"), None),
        ("pr_auc", losses.pr_auc_loss, dict(recalls=(0.3, 0.6, 0.9)), None),
        ("p_at_r none", losses.precision_at_recall_loss, dict(recall=0.8, reduction="none"), None),
        ("no positives on rank 1", losses.precision_at_recall_loss, dict(recall=0.8), "rank1_negative"),
        ("p_at_r harrell_davis", losses.precision_at_recall_loss, dict(recall=0.9, quantile="harrell_davis"), None),
    ]


def _data(n, seed, labels_mode=None):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, generator=g, dtype=torch.float64)
    labels = (torch.rand(n, generator=g) < 0.35).long()
    if labels_mode == "rank1_negative":
        labels[SPLIT[0]:] = 0
    return scores, labels


def _slice(tensor, rank, split):
    start = sum(split[:rank])
    return tensor[start : start + split[rank]]


def _ddp_data():
    g = torch.Generator().manual_seed(5)
    n = sum(DDP_SPLIT)
    x = torch.randn(DDP_STEPS, n, 4, generator=g, dtype=torch.float64)
    y = (torch.rand(DDP_STEPS, n, generator=g) < 0.3).long()
    x[y == 1] += 0.7
    return x, y


def _model():
    torch.manual_seed(0)
    return nn.Linear(4, 1, dtype=torch.float64)


def _worker(rank, store_path, out_dir):
    # A file store in the test's own folder: nothing to race for (a free TCP port picked and
    # released before the ranks bind it can be taken by another process in between).
    dist.init_process_group(
        "gloo", init_method=f"file://{store_path}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    try:
        results = {}
        for name, loss_fn, kwargs, mode in _cases():
            scores, labels = _data(sum(SPLIT), 1, mode)
            local = _slice(scores, rank, SPLIT).clone().requires_grad_()
            kw = dict(kwargs)
            if isinstance(kw.get("subset"), torch.Tensor):
                kw["subset"] = _slice(kw["subset"], rank, SPLIT)
            loss = distributed_loss(loss_fn, local, _slice(labels, rank, SPLIT), average_gradients=False, **kw)
            loss.sum().backward()
            results[name] = (loss.detach(), local.grad)

        # Separate threshold minibatches of different sizes (Algorithm 1, step 2).
        scores, labels = _data(sum(SPLIT), 2)
        extra = torch.randn(30 + 40, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        local = _slice(scores, rank, SPLIT).clone().requires_grad_()
        local_extra = _slice(extra, rank, (30, 40)).clone().requires_grad_()
        out = distributed_loss(
            losses.precision_at_recall_loss, local, _slice(labels, rank, SPLIT), recall=0.9,
            threshold_scores=local_extra, return_threshold=True,
        )
        out.loss.backward()
        results["threshold_scores"] = (out.loss.detach(), local.grad, local_extra.grad, out.threshold.detach())

        # The fast (windowed) kernel path: 3000 rows, averaged gradients (DDP's convention).
        scores, labels = _data(3000, 4)
        split = (1400, 1600)
        local = _slice(scores, rank, split).clone().requires_grad_()
        loss = distributed_loss(losses.precision_at_rate_loss, local, _slice(labels, rank, split), rate=0.1)
        loss.backward()
        results["fast kernel averaged"] = (loss.detach(), local.grad)

        # all_gather_scores used directly with a plain loss: its backward must carry every rank's
        # share of the threshold's gradient back to the rank that owns the scores.
        scores, labels = _data(sum(SPLIT), 1)
        local = _slice(scores, rank, SPLIT).clone().requires_grad_()
        local_labels = _slice(labels, rank, SPLIT)
        gathered = all_gather_scores(local[local_labels == 1])
        loss = losses.precision_at_recall_loss(local, local_labels, recall=0.8, threshold_scores=gathered,
                                               reduction="sum")
        loss.backward()
        results["gather"] = (loss.detach(), local.grad, gathered.detach())

        # A short DDP run; the module wrapper sets a global threshold.
        model = nn.parallel.DistributedDataParallel(_model())
        criterion = DistributedQuantileLoss(PrecisionAtRecallLoss(recall=0.8))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        x, y = _ddp_data()
        thresholds = []
        for step in range(DDP_STEPS):
            optimizer.zero_grad()
            loss = criterion(model(_slice(x[step], rank, DDP_SPLIT)).squeeze(-1), _slice(y[step], rank, DDP_SPLIT))
            loss.backward()
            optimizer.step()
            thresholds.append(criterion.threshold.clone())
        results["ddp"] = ({k: v.detach().clone() for k, v in model.module.state_dict().items()}, torch.stack(thresholds))
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
        del model, criterion, optimizer  # DDP's reducer holds the group: release it before the teardown
    finally:
        _quiet_teardown(rank, out_dir)
    # Leave without the interpreter's finalisation: torch's and gloo's C++ objects destroyed in an
    # arbitrary order at exit can abort a rank ("terminate called without an active exception")
    # after its results are saved and the group is gone. Every file this rank writes is closed.
    os._exit(0)


def _quiet_teardown(rank, out_dir):
    """Tear the group down only once every rank is past its last gloo operation.

    A rank that closes its connections while its peer still waits on the last message of a
    collective makes gloo's receiving thread throw, and the peer aborts ("terminate called
    without an active exception"). So: a gloo barrier, then a second barrier through a file
    store of its own (a rank posts to it only after its gloo barrier has returned, so no gloo
    message is in flight once it opens), then ``destroy_process_group``.
    """
    dist.barrier()
    store = dist.FileStore(os.path.join(out_dir, "teardown"), WORLD)
    store.add("done", 1)
    store.wait(["done"])
    deadline = time.monotonic() + 60
    while store.add("done", 0) < WORLD and time.monotonic() < deadline:
        time.sleep(0.01)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("ddp")
    saved = os.environ.get("GLOO_SOCKET_IFNAME")
    if sys.platform.startswith("linux") and saved is None:
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # keep gloo on the loopback interface
    try:
        # The store file must not exist yet; a fresh folder per run guarantees it.
        mp.spawn(_worker, args=(str(out_dir / "rendezvous"), str(out_dir)), nprocs=WORLD, join=True)
    finally:
        if saved is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
    return [torch.load(out_dir / f"rank{r}.pt") for r in range(WORLD)]


def _reference(loss_fn, scores, labels, **kwargs):
    scores = scores.clone().requires_grad_()
    loss = loss_fn(scores, labels, **kwargs)
    loss.sum().backward()
    return loss.detach(), scores.grad


TOL = dict(atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_loss_and_gradient_equal_single_process(ranks, case):
    name, loss_fn, kwargs, mode = _cases()[case]
    scores, labels = _data(sum(SPLIT), 1, mode)
    ref_loss, ref_grad = _reference(loss_fn, scores, labels, **kwargs)
    losses_r = [ranks[r][name][0] for r in range(WORLD)]
    if kwargs.get("reduction") == "none":
        torch.testing.assert_close(torch.cat(losses_r), ref_loss, **TOL)
    else:
        # average_gradients=False: the ranks' losses sum to the single-process loss.
        torch.testing.assert_close(sum(losses_r), ref_loss, **TOL)
    torch.testing.assert_close(torch.cat([ranks[r][name][1] for r in range(WORLD)]), ref_grad, **TOL)


def test_separate_threshold_minibatch(ranks):
    scores, labels = _data(sum(SPLIT), 2)
    extra = torch.randn(70, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    s, e = scores.clone().requires_grad_(), extra.clone().requires_grad_()
    out = losses.precision_at_recall_loss(s, labels, recall=0.9, threshold_scores=e, return_threshold=True)
    out.loss.backward()
    results = [ranks[r]["threshold_scores"] for r in range(WORLD)]
    # average_gradients=True: the loss and the gradients are WORLD times the rank's share.
    torch.testing.assert_close(sum(r[0] for r in results) / WORLD, out.loss.detach(), **TOL)
    torch.testing.assert_close(torch.cat([r[1] for r in results]) / WORLD, s.grad, **TOL)
    torch.testing.assert_close(torch.cat([r[2] for r in results]) / WORLD, e.grad, **TOL)
    for r in results:
        torch.testing.assert_close(r[3], out.threshold.detach(), **TOL)


def test_fast_kernel_path_and_averaged_gradients(ranks):
    scores, labels = _data(3000, 4)
    ref_loss, ref_grad = _reference(losses.precision_at_rate_loss, scores, labels, rate=0.1)
    results = [ranks[r]["fast kernel averaged"] for r in range(WORLD)]
    torch.testing.assert_close(sum(r[0] for r in results) / WORLD, ref_loss, **TOL)
    torch.testing.assert_close(torch.cat([r[1] for r in results]) / WORLD, ref_grad, **TOL)


def test_all_gather_scores_gives_the_single_process_loss_and_gradient(ranks):
    # Each rank sums its own negatives' losses against the threshold of all positives; the
    # ranks' losses add up to the single-process loss, and the gather's backward makes each
    # rank's gradient the single-process gradient of its rows (a gather without autograd, or
    # one that keeps only the local gradient, drops the other rank's term through theta).
    scores, labels = _data(sum(SPLIT), 1)
    ref_loss, ref_grad = _reference(losses.precision_at_recall_loss, scores, labels, recall=0.8, reduction="sum")
    results = [ranks[r]["gather"] for r in range(WORLD)]
    torch.testing.assert_close(sum(r[0] for r in results), ref_loss, **TOL)
    torch.testing.assert_close(torch.cat([r[1] for r in results]), ref_grad, **TOL)
    for r in results:  # every rank gathered all the positives, in rank order
        torch.testing.assert_close(r[2], scores[labels == 1], **TOL)


def test_ddp_training_matches_single_process(ranks):
    model = _model()
    criterion = PrecisionAtRecallLoss(recall=0.8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    x, y = _ddp_data()
    thresholds = []
    for step in range(DDP_STEPS):
        optimizer.zero_grad()
        criterion(model(x[step]).squeeze(-1), y[step]).backward()
        optimizer.step()
        thresholds.append(criterion.threshold.clone())
    # The bias cancels in f(x) - q(f(X+)) (q is shift-equivariant), so only the weight moves.
    assert not torch.allclose(model.weight, _model().weight), "the run must move the model"
    for r in range(WORLD):
        state, rank_thresholds = ranks[r]["ddp"]
        for key, value in model.state_dict().items():
            torch.testing.assert_close(state[key], value, **TOL)
        torch.testing.assert_close(rank_thresholds, torch.stack(thresholds), **TOL)


def test_without_process_group_it_is_the_plain_loss():
    scores, labels = _data(50, 6)
    plain = losses.precision_at_recall_loss(scores, labels, recall=0.8)
    torch.testing.assert_close(distributed_loss(losses.precision_at_recall_loss, scores, labels, recall=0.8), plain)


def test_bad_arguments():
    scores, labels = _data(20, 7)
    with pytest.raises(TypeError, match=prefix(UNSUPPORTED_LOSS_MESSAGE)):
        distributed_loss(lambda s, y, **kw: s.sum(), scores, labels)
    with pytest.raises(ValueError, match=exact(REDUCTION_MESSAGE, value="avg")):
        distributed_loss(losses.precision_at_recall_loss, scores, labels, recall=0.8, reduction="avg")
    with pytest.raises(ValueError, match=exact(SUBSET_NEEDED_MESSAGE)):
        distributed_loss(losses.rate_constrained_loss, scores, labels, rate=0.5)
    with pytest.raises(TypeError, match=exact(NOT_A_LOSS_MODULE_MESSAGE, type_name="MSELoss")):
        DistributedQuantileLoss(nn.MSELoss())
    with pytest.raises(ValueError, match=exact(NOT_1D_MESSAGE, name="local", shape=(4, 5))):
        all_gather_scores(scores.reshape(4, 5))
    with pytest.raises(TypeError, match=exact(NOT_TENSOR_MESSAGE, name="labels", type_name="list")):
        distributed_loss(losses.precision_at_recall_loss, scores, labels.tolist(), recall=0.8)
    with pytest.raises(ValueError, match=exact(GROUPS_UNSUPPORTED_MESSAGE)):
        distributed_loss(losses.precision_at_recall_loss, scores, labels, recall=0.8, groups=torch.zeros(20, dtype=torch.long))
