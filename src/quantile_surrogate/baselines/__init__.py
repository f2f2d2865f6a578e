"""The paper's baselines, each a scikit-learn binary classifier with the same interface.

Every baseline takes ``objective`` (see each class for the ones it supports), ``target``,
a regularisation parameter (``C``, inverse strength, or ``alpha``, penalty weight: see
:data:`REGULARIZATION`) and ``random_state``; it learns a linear score
``X @ coef_[0] + intercept_[0]`` and a ``threshold_`` moved on the training data to meet
the constraint; ``decision_function`` is the score minus ``threshold_``, ``predict`` maps
its sign through ``classes_`` (positive class ``classes_[1]``), and ``score`` is the
objective's metric at ``target`` from :mod:`quantile_surrogate.metrics`.

- :class:`LogisticRegressionBaseline` ("LR"): thresholded logistic regression;
  precision_at_rate, precision_at_recall, recall_at_fpr.
- :class:`AccuracyAtTheTop` ("AATP"): Boyd et al. 2012; precision_at_rate.
- :class:`KarAverageSurrogate` ("Kar"): Kar et al. 2015, l_avg for prec@k; precision_at_rate.
- :class:`LagrangianBaseline` ("Eban"): Eban et al. 2017, Lagrangian saddle point;
  precision_at_recall (and precision_at_rate, a weak extension).
"""

from ._base import RateBaseline
from .aatp import AccuracyAtTheTop
from .eban import LagrangianBaseline
from .kar import KarAverageSurrogate, prec_at_k_avg_surrogate
from .logistic import LogisticRegressionBaseline

__all__ = [
    "BASELINES",
    "REGULARIZATION",
    "RateBaseline",
    "LogisticRegressionBaseline",
    "AccuracyAtTheTop",
    "KarAverageSurrogate",
    "LagrangianBaseline",
    "prec_at_k_avg_surrogate",
]

#: Short name (as in the paper's tables) -> class.
BASELINES = {
    "LR": LogisticRegressionBaseline,
    "AATP": AccuracyAtTheTop,
    "Kar": KarAverageSurrogate,
    "Eban": LagrangianBaseline,
}

#: Short name -> the parameter that sets the regularisation, and whether larger means stronger.
REGULARIZATION = {
    "LR": ("C", "weaker"),
    "AATP": ("C", "weaker"),
    "Kar": ("alpha", "stronger"),
    "Eban": ("alpha", "stronger"),
}
