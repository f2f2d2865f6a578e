"""Data-parallel training of precision at recall 0.95 with DistributedDataParallel.

Launch (2 processes on this machine, gloo on the CPU; NCCL when every rank has a GPU):

    torchrun --nproc_per_node=2 examples/ddp_train.py
    torchrun --nproc_per_node=2 examples/ddp_train.py --epochs 20 --batch-size 2000

Every rank builds the same data (a seed), keeps its own shard of every minibatch, and
trains a linear model on the paper's Gaussian mixture (section 5.2). ``distributed_loss``
gathers the positives' scores from every rank, so the threshold is the 0.05-quantile of the
positives of the whole minibatch, and DDP's averaged gradient is the single-process one.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn

from quantile_surrogate import metrics, precision_at_recall_loss
from quantile_surrogate.datasets import make_gaussian_mixture
from quantile_surrogate.training.distributed import distributed_loss


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=40_000)
    parser.add_argument("--recall", type=float, default=0.95)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=4000, help="global minibatch, split over the ranks")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if use_cuda else "cpu")
    torch.manual_seed(args.seed)  # same data and the same initial model on every rank

    X, y = map(torch.as_tensor, make_gaussian_mixture(args.n_samples, random_state=args.seed))
    X, y = X.to(device), y.to(device)
    model = nn.parallel.DistributedDataParallel(
        nn.Linear(X.shape[1], 1, dtype=X.dtype, device=device), device_ids=[device.index] if use_cuda else None
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        generator = torch.Generator().manual_seed(args.seed + epoch)  # one order, shared by the ranks
        order = torch.randperm(len(y), generator=generator).to(device)
        total = torch.zeros((), dtype=X.dtype, device=device)
        n_batches = 0
        for start in range(0, len(y), args.batch_size):
            # Indexing tensors in place: rank r takes every world-th row of the global batch.
            rows = order[start : start + args.batch_size][rank::world]
            optimizer.zero_grad()
            loss = distributed_loss(
                precision_at_recall_loss, model(X[rows]).squeeze(-1), y[rows], recall=args.recall,
            )
            loss.backward()
            optimizer.step()
            total += loss.detach()
            n_batches += 1
        dist.all_reduce(total)  # each rank's loss is W x its share; the mean over ranks is the loss
        if rank == 0:
            print(f"epoch {epoch + 1:3d}  mean loss {total.item() / world / n_batches:.4f}")

    if rank == 0:
        with torch.no_grad():
            scores = model.module(X).squeeze(-1).cpu().numpy()
        precision = metrics.precision_at_recall(y.cpu().numpy(), scores, args.recall)
        print(f"training precision at recall {args.recall}: {precision:.3f} ({world} ranks)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
