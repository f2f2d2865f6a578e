"""``x W^T + b`` for a sparse CSR batch ``x``, with a backward pass that costs what the forward pass costs.

``torch.nn.Linear`` accepts a ``torch.sparse_csr`` input, but its backward computes the weight's
gradient ``G^T X`` through the transposed (CSC) layout, converted anew at every step: 4.5-6.7 ms
per step on 10,000 TF-IDF rows of 7,600 columns (12 entries a row; ``step_cpu.md``, two sessions),
30-45 times the forward product's 0.15 ms (one CPU thread). The gradient needs no transposed copy,

.. math::
    \\frac{\\partial L}{\\partial W_{kj}} = \\sum_{i} G_{ik} X_{ij}
        = \\sum_{(i, j, v) \\text{ stored}} v\\, G_{ik} \\quad\\text{(added at column } j\\text{)}:

the CSR arrays of ``X`` read as the CSC arrays of ``X^T``, one pass over the stored entries. On the
CPU that pass is SciPy's compiled CSC product (``scipy.sparse.csc_matrix @ G`` on the tensor's own
arrays, shared, never copied; no temporary beyond the (d, k) result). It replaced two torch routes: an
``index_add_`` scatter over row blocks on a batch's first pass, and a CSR product with a transpose kept
on a batch that comes back. One forward and backward step, as a multiple of ``torch.nn.Linear``'s on
one CPU thread (``results/sparse_data/step_cpu.md``, before and now): 10,000 TF-IDF rows, 1 output,
first pass 0.296x to 0.150x, a batch that comes back 0.146x to 0.138x (64 outputs: 1.018x and 0.529x
to 0.607x and 0.608x); 100,000 one-hot rows, 1 output, 0.157x and 0.053x to 0.044x and 0.045x. On 10^6
rows of 10^6 columns (10 entries a row, never transposed: too large to keep) the backward pass took
0.04 s against the scatter's 0.23-0.47 s, and the memory benchmark's fit 48-51 s against 138 s.

The forward product ``X W^T`` on the CPU is SciPy's CSR product on the same arrays too: the same sums in
the same order as torch's sparse-times-dense product (equal to the last bit on both development sets, float32 and
float64, 1 and 64 outputs), in 0.35-0.6x its time for one output and 0.2-0.9x for 64 (one thread, 12,400 x 7,700
TF-IDF and 16,400 x 12,000 one-hot rows; ``docs/sparse.md``). Both views are made once per tensor and kept on it
(they hold no copy), so a full batch's epochs and L-BFGS steps do not pay SciPy's constructor at every pass.
Under CPU autocast, or where the weight's dtype is not the values' (float32 or float64), torch's product runs.

On a GPU the backward transposes the batch and multiplies (cuSPARSE transposes in about the time of
one product; atomic adds of a scatter took 2.2-10x torch's step for 64 outputs, H100,
``step_cuda.md``), and keeps the transpose on a batch of at most :data:`TRANSPOSE_MAX_ENTRIES`
stored entries, for the batch's next passes (the full batch of every epoch and L-BFGS step).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

__all__ = ["Linear", "sparse_linear", "TRANSPOSE_MAX_ENTRIES"]

TRANSPOSE_MAX_ENTRIES = 1 << 22
"""The largest batch (stored entries; 4M: about 50 MB of float64 values and int32 indices) whose transpose a GPU keeps."""
# The attribute a GPU's backward pass sets on a CSR batch: its transpose.
TRANSPOSE = "_quantile_surrogate_transpose"
# The attribute a CPU batch keeps its two SciPy views in (row_view, transposed_view).
VIEWS = "_quantile_surrogate_scipy_views"


def transposed_view(X: torch.Tensor) -> sp.csc_matrix:
    """``X^T`` for a CPU CSR tensor ``X``, as a SciPy CSC matrix on ``X``'s own three arrays (no copy).

    The arrays are set as attributes because SciPy's constructor copies int64 indices that fit in
    int32. Values of a type SciPy does not multiply (float16, bfloat16) are read as float32 (a copy).
    Made once per tensor (kept on it with :func:`row_view`), where no copy is made.
    """
    return _views(X)[1]


def row_view(X: torch.Tensor) -> sp.csr_matrix:
    """``X`` itself as a SciPy CSR matrix on the tensor's three arrays (as :func:`transposed_view`)."""
    return _views(X)[0]


def _views(X: torch.Tensor) -> tuple[sp.csr_matrix, sp.csc_matrix]:
    views = getattr(X, VIEWS, None)
    if views is not None:
        return views
    values = X.values().detach()
    copied = values.dtype not in (torch.float32, torch.float64)
    arrays = (values.float() if copied else values).numpy(), X.col_indices().numpy(), X.crow_indices().numpy()
    views = sp.csr_matrix(X.shape), sp.csc_matrix((X.shape[1], X.shape[0]))
    for view in views:
        view.data, view.indices, view.indptr = arrays
    if not copied:  # a float32 copy of half-precision values is not kept: it would double the batch's memory
        setattr(X, VIEWS, views)
    return views


def _scipy_product(X: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``X W^T`` runs in SciPy (the CPU, no autocast, the values' dtype float32 or float64 and the weight's)."""
    return (X.device.type == "cpu" and not torch.is_autocast_enabled("cpu")
            and X.values().dtype == weight.dtype and weight.dtype in (torch.float32, torch.float64))


class _SparseTimesWeight(torch.autograd.Function):
    """``X W^T`` for a CSR ``X`` (a constant: no gradient) and a dense ``W`` of shape (k, d)."""

    @staticmethod
    def forward(ctx, X, weight):
        ctx.X = X
        if not _scipy_product(X, weight):
            return X @ weight.t()
        weight = weight.detach()
        if weight.shape[0] == 1:  # one output: SciPy's matrix-vector kernel
            return torch.from_numpy(row_view(X) @ weight.reshape(-1).numpy()).reshape(-1, 1)
        return torch.from_numpy(row_view(X) @ weight.t().contiguous().numpy())

    @staticmethod
    @torch.autograd.function.once_differentiable  # the CPU's product runs in SciPy, outside autograd
    def backward(ctx, grad):
        X = ctx.X
        if X.device.type == "cpu":
            view = transposed_view(X)
            upstream = grad.detach().to(torch.float64 if view.dtype == np.float64 else torch.float32).contiguous()
            return None, torch.from_numpy(view @ upstream.numpy()).t().to(grad.dtype)
        transpose = getattr(X, TRANSPOSE, None)
        if transpose is None:
            transpose = X.t().to_sparse_csr()
            if X.values().numel() <= TRANSPOSE_MAX_ENTRIES:
                setattr(X, TRANSPOSE, transpose)
        return None, (transpose @ grad.to(transpose.dtype)).t().to(grad.dtype)


def sparse_linear(X: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``X @ weight.T + bias`` (``torch.nn.functional.linear``) for a CSR ``X``, with the backward pass above."""
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
