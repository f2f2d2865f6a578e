r"""quantile-surrogate: train classifiers for the operating point you use.

Implements "Constrained Classification and Ranking via Quantiles" (Mackey, Luo & Eban
2018): a rate constraint fixes the decision threshold at a quantile of the model's own
scores, and a differentiable quantile estimate turns the constrained problem into an
ordinary loss. For a constraint "the predicted positive rate on the subset A is at least
c" (Proposition 1, eq. (2)):

.. math::
    \min_f \sum_{i \in P} l\big(\pm(f(x_i) - \hat q(f(A), 1 - c))\big),

with ``A`` the positives for precision at a recall (eq. (7)), every row for precision at a
predicted positive rate, i.e. Precision@K (eqs. (9), (10)), and the negatives for recall at a
false positive rate.

The package, from the top down:

- Estimators (scikit-learn): :class:`QuantileClassifier`, :class:`QuantileClassifierCV`,
  :class:`QuantileBoostingClassifier` (on Dask partitions: :class:`DaskQuantileBoostingClassifier`),
  the ranker :class:`QuantileRanker` (precision@k within each query), and thresholds with a held-out guarantee,
  :func:`calibrate_threshold` / :class:`GuaranteedThresholdClassifier`
  (:mod:`quantile_surrogate.objectives.guarantees`).
- Training a ``torch.nn.Module``: :func:`train`, :class:`SubsetBatchSampler`.
- Losses: the functions of :mod:`quantile_surrogate.losses` and their ``torch.nn.Module``
  forms (:class:`PrecisionAtRecallLoss`, ...), built on the differentiable estimators of
  :mod:`quantile_surrogate.quantiles`; :mod:`quantile_surrogate.boosting` has the same losses
  as LightGBM and XGBoost objectives.
- Evaluation: the exact metrics of :mod:`quantile_surrogate.metrics`; what an objective is
  (:mod:`quantile_surrogate.objectives`: the one registry, exact thresholds and their tie
  policy, :class:`TiedScoresWarning`, held-out guarantees, bootstrap intervals).

The paper's errata and the conventions the code follows are in docs/paper_notes.md.

Examples
--------
Train a linear model for precision at recall 0.9 with the module loss:

>>> import torch
>>> from quantile_surrogate import PrecisionAtRecallLoss
>>> from quantile_surrogate.metrics import precision_at_recall
>>> _ = torch.manual_seed(0)
>>> X = torch.randn(400, 2); y = (X[:, 0] + 0.5 * torch.randn(400) > 1).long()
>>> model = torch.nn.Linear(2, 1)
>>> loss_fn = PrecisionAtRecallLoss(recall=0.9)
>>> before = precision_at_recall(y, model(X).squeeze(1).detach(), 0.9)
>>> optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
>>> for _ in range(100):
...     optimizer.zero_grad()
...     loss = loss_fn(model(X).squeeze(1), y)
...     loss.backward()
...     optimizer.step()
>>> scores = model(X).squeeze(1).detach()
>>> bool(precision_at_recall(y, scores, 0.9) > before + 0.2)
True
>>> bool((scores[y == 1] > loss_fn.threshold).float().mean() >= 0.85)  # the learned threshold keeps the recall
True
"""

from importlib.metadata import PackageNotFoundError, version

from . import losses, metrics, quantiles
from .estimators import (
    DaskQuantileBoostingClassifier,
    GuaranteedThresholdClassifier,
    QuantileBoostingClassifier,
    QuantileClassifier,
    QuantileClassifierCV,
    QuantileRanker,
    calibrate_threshold,
    calibration,
)
from .losses import (
    pr_auc_loss,
    precision_at_rate_loss,
    precision_at_recall_loss,
    rate_constrained_loss,
    recall_at_fpr_loss,
)
from .losses.modules import (
    PRAUCLoss,
    PrecisionAtRateLoss,
    PrecisionAtRecallLoss,
    RateConstrainedLoss,
    RecallAtFPRLoss,
)
from .objectives import TiedScoresWarning
from .training import SubsetBatchSampler, TrainingDivergedError, TrainResult, train
from .quantiles import (
    harrell_davis_quantile,
    interval_quantile,
    kernel_quantile,
    lower_mean_quantile,
    point_quantile,
)

try:
    __version__ = version("quantile-surrogate")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "QuantileClassifier",
    "QuantileClassifierCV",
    "QuantileBoostingClassifier",
    "DaskQuantileBoostingClassifier",
    "QuantileRanker",
    "train",
    "TrainResult",
    "TrainingDivergedError",
    "TiedScoresWarning",
    "SubsetBatchSampler",
    "GuaranteedThresholdClassifier",
    "calibrate_threshold",
    "calibration",
    "losses",
    "metrics",
    "quantiles",
    "rate_constrained_loss",
    "precision_at_recall_loss",
    "precision_at_rate_loss",
    "recall_at_fpr_loss",
    "pr_auc_loss",
    "RateConstrainedLoss",
    "PrecisionAtRecallLoss",
    "PrecisionAtRateLoss",
    "RecallAtFPRLoss",
    "PRAUCLoss",
    "point_quantile",
    "kernel_quantile",
    "lower_mean_quantile",
    "interval_quantile",
    "harrell_davis_quantile",
]
