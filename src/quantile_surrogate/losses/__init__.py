r"""Rate-constrained quantile surrogate losses (Mackey, Luo & Eban 2018, section 3).

A rate constraint "the predicted positive rate on the subset A is >= c" fixes the
decision threshold at ``theta = q(f(A), 1 - c)`` (Proposition 1). Substituting a
differentiable estimate of that quantile for the threshold turns the constrained problem
into an ordinary loss:

.. math::
    L(f) = \sum_{i \in P} l\big(\pm (f(x_i) - q(f(A), 1 - c))\big)

where ``P`` is the set of examples penalised (negatives above the threshold, the false
positive bound, or positives below it, the true positive bound) and ``l`` is the logistic
(softplus) or hinge upper bound of the 0-1 step.

:func:`rate_constrained_loss` is that general form. The named losses are calls to it with
a fixed subset (``subset=`` takes the same words):

==============================  =================  =========  ==================
loss                            subset A           penalised  paper
==============================  =================  =========  ==================
``precision_at_recall_loss``    ``"positives"``    negatives  eq. (7)
``precision_at_rate_loss`` fp   ``"all"``          negatives  eq. (9)
``precision_at_rate_loss`` tp   ``"all"``          positives  eq. (10)
``recall_at_fpr_loss``          ``"negatives"``    positives  Neyman-Pearson
``pr_auc_loss``                 ``"positives"``    negatives  eq. (7), Riemann sum
==============================  =================  =========  ==================

:func:`precision_at_k_loss` is precision@K within each query of a ranking batch: eq. (9) or
(10) with one threshold per query, ``q(f(X_q), 1 - K/n_q)``, from one batched estimate
(:func:`~quantile_surrogate.quantiles.segment_quantile`).

Inputs are torch tensors (a list or a NumPy array raises ``TypeError``). Float16 and
bfloat16 scores, with or without ``torch.autocast``, are supported: the quantile's ranks
and weights and the reduction's sums and counts are computed in float32, and the loss
has the scores' dtype. Under ``torch.compile`` the point and kernel estimators take a
torch path automatically, since NumPy cannot be compiled (:mod:`quantile_surrogate.quantiles._rank_selection`);
with ``validate_args=False`` the losses then compile into one graph. The input checks of
``validate_args=True``, ``groups=``, ``empty_subset="raise"`` and the other estimators read
data on the host and break the graph (the values stay those of eager mode): in a compiled
training step, check the data once and pass ``validate_args=False``.
"""

from __future__ import annotations

from .general import QuantileLossOutput, rate_constrained_loss
from .named import pr_auc_loss, precision_at_rate_loss, precision_at_recall_loss, recall_at_fpr_loss
from .ranking import precision_at_k_loss
from .surrogates import SURROGATES

__all__ = [
    "rate_constrained_loss",
    "precision_at_recall_loss",
    "precision_at_rate_loss",
    "recall_at_fpr_loss",
    "pr_auc_loss",
    "precision_at_k_loss",
    "SURROGATES",
    "QuantileLossOutput",
]
