r"""Tree-boosting objectives for rate-constrained operating points (LightGBM and XGBoost).

A boosting round fits a tree to every row's gradient ``g_i = dL/dF_i`` and Hessian
``h_i`` of a loss ``L`` of the raw scores ``F`` (the margins) and moves each leaf by
``-sum g / (sum h + lambda)``. Any loss of :mod:`quantile_surrogate.objectives` is a loss
of the score vector, so the paper's argument (section 3) carries over unchanged: the
threshold ``theta = q(F_A, 1 - c)`` is a differentiable function of the scores of the
subset ``A``, and its dependence on them is part of the gradient.

:func:`objective_gradient_hessian` is the maths (autograd through
:func:`~quantile_surrogate.objectives.objective_loss`, so the loss has one home);
:func:`lightgbm_objective` and :func:`xgboost_objective` wrap it in a callable each library
accepts as its custom objective. Neither library is imported here::

    fn = lightgbm_objective("precision_at_recall", target=0.9)
    booster = lgb.train({"objective": fn}, lgb.Dataset(X, y))
    clf = lgb.LGBMClassifier(objective=fn).fit(X, y)
    scores = clf.predict(X, raw_score=True)  # margins: a custom objective has no link

Precision@K within each query (ranking) is ``lightgbm_objective("precision_at_k", k=5)``: each
query's threshold is its own quantile, the queries read off the Dataset's ``group``
(:func:`precision_at_k_gradient_hessian`, :mod:`quantile_surrogate.boosting.ranking`).

On Dask, ``xgboost.dask.train(client, params, dtrain, obj=xgboost_objective(...))`` sets the
threshold over every worker's rows, exactly, by a few allreduce calls per round
(``boosting/_collective.py``, ``boosting/_distributed.py``; docs/distributed.md, "Trees on Dask").

The maths is :mod:`quantile_surrogate.boosting.gradient`; the adapters are
:mod:`quantile_surrogate.boosting.adapters`. Every name is importable from here.
"""

from .adapters import BoostingObjective, RankingObjective, lightgbm_objective, xgboost_objective
from .gradient import GradientHessian, objective_gradient_hessian
from .ranking import precision_at_k_gradient_hessian

__all__ = [
    "BoostingObjective",
    "RankingObjective",
    "GradientHessian",
    "lightgbm_objective",
    "xgboost_objective",
    "objective_gradient_hessian",
    "precision_at_k_gradient_hessian",
]
