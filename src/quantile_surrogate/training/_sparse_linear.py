"""``x W^T + b`` for a sparse CSR batch ``x``, with a backward pass that costs what the forward pass costs.

``torch.nn.Linear`` accepts a ``torch.sparse_csr`` input, but its backward computes the weight's
gradient ``G^T X`` through the transposed (CSC) layout: 5-7 ms per step on 10,000 TF-IDF rows
of 7,600 columns (12 entries a row), 40 times the forward product (measured on one thread). Here
the gradient is a scatter over the stored entries instead,

.. math::
    \\frac{\\partial L}{\\partial W_{kj}} = \\sum_{i} G_{ik} X_{ij}
        = \\sum_{(i, j, v) \\text{ stored}} v\\, G_{ik} \\quad\\text{(added at column } j\\text{)},

one ``index_add_`` of ``nnz x k`` products, taken in row blocks of at most :data:`BLOCK_ENTRIES`
products so that no pass makes an ``nnz x k`` temporary.

A batch that comes back (the full batch of every epoch and of every L-BFGS step) is worth
transposing once: from its second backward pass on, ``G^T X = (X^T G)^T`` is one CSR product with
``X^T`` (kept on the tensor, as long as the tensor lives; 0.1 ms against 1.4 ms for the scatter on
the rows above). A minibatch, used once, is never transposed, nor is a batch of more than
:data:`TRANSPOSE_MAX_ENTRIES` stored entries: its copy would cost as much memory as the data.

The scatter's cost grows with the outputs ``k`` and the transpose's does not: from
:data:`TRANSPOSE_FIRST_OUTPUTS` outputs (an MLP's first layer) the first pass transposes too (on one
CPU thread, 64 outputs, a first forward and backward step: 43 ms by the scatter against 8.8 ms on the
text rows, 496 against 346 ms on 100,000 one-hot rows; ``results/sparse_data/step_cpu.md``). On a GPU
every backward pass goes through the transpose, as ``torch.nn.Linear``'s own does: there the scatter's
atomic adds took 0.9-1.2x torch's step for one output and 2.2-10x for 64 (H100, ``step_cuda.md``),
while cuSPARSE transposes in about the time of one product.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Linear", "sparse_linear", "BLOCK_ENTRIES", "TRANSPOSE_MAX_ENTRIES", "TRANSPOSE_FIRST_OUTPUTS"]

BLOCK_ENTRIES = 1 << 16
"""Products ``v G_ik`` held at once by the backward pass (64K: 0.5 MB in float64, and as many int64 indices).

Blocks of 1M products (8 MB temporaries) raised the peak of one backward pass over 10^7 entries by 1.05x the
matrix's bytes (glibc keeps freed blocks of that size in its heap) and took 0.62 s; blocks of 64K: 0.27x, 0.48 s."""
TRANSPOSE_MAX_ENTRIES = 1 << 22
"""The largest batch (stored entries; 4M: about 50 MB of float64 values and int32 indices) whose transpose is kept."""
TRANSPOSE_FIRST_OUTPUTS = 32
"""From this many outputs the first backward pass transposes the batch instead of scattering (crossover measured
at 8-32 on one CPU thread: 8 on 12 entries a row, 32 on 20 entries a row of 100,000 columns)."""
# Attributes set on a CSR batch by its backward passes: its transpose, and that it has been seen once.
TRANSPOSE, SEEN = "_quantile_surrogate_transpose", "_quantile_surrogate_seen"


class _SparseTimesWeight(torch.autograd.Function):
    """``X W^T`` for a CSR ``X`` (a constant: no gradient) and a dense ``W`` of shape (k, d)."""

    @staticmethod
    def forward(ctx, X, weight):
        ctx.X = X
        return X @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        X = ctx.X
        transpose = getattr(X, TRANSPOSE, None)
        keep = X.values().numel() <= TRANSPOSE_MAX_ENTRIES
        at_once = X.device.type != "cpu" or grad.shape[1] >= TRANSPOSE_FIRST_OUTPUTS  # see the module's docstring
        if transpose is None and (at_once or (keep and getattr(X, SEEN, False))):
            transpose = X.t().to_sparse_csr()
            if keep:
                setattr(X, TRANSPOSE, transpose)
        if transpose is not None:
            return None, (transpose @ grad.to(transpose.dtype)).t().to(grad.dtype)
        setattr(X, SEEN, True)
        crow, col, values = X.crow_indices(), X.col_indices(), X.values()
        out = torch.zeros(X.shape[1], grad.shape[1], dtype=grad.dtype, device=grad.device)
        entries_per_row = max(1, col.numel() // max(1, X.shape[0])) * grad.shape[1]  # products a row makes, on average
        rows_per_block = max(1, BLOCK_ENTRIES // entries_per_row)
        for start in range(0, X.shape[0], rows_per_block):
            stop = min(start + rows_per_block, X.shape[0])
            first, last = int(crow[start]), int(crow[stop])
            lengths = (crow[start + 1:stop + 1] - crow[start:stop]).to(torch.int64)
            rows = torch.repeat_interleave(torch.arange(start, stop, device=grad.device), lengths,
                                           output_size=last - first)
            out.index_add_(0, col[first:last].to(torch.int64), values[first:last, None].to(grad.dtype) * grad[rows])
        return None, out.t()


def sparse_linear(X: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``X @ weight.T + bias`` (``torch.nn.functional.linear``) for a CSR ``X``, with the scatter backward above."""
    out = _SparseTimesWeight.apply(X, weight)
    return out if bias is None else out + bias


class Linear(nn.Linear):
    """``torch.nn.Linear`` (same parameters, state and repr) taking a sparse CSR batch by :func:`sparse_linear`.

    A dense input goes through ``nn.Linear.forward`` unchanged.
    """

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - nn.Linear's argument name
        if input.layout == torch.sparse_csr:
            return sparse_linear(input, self.weight, self.bias)
        return super().forward(input)
