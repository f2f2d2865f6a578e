"""Held-out model selection for every estimator (internal: the estimators are its users).

One home per idea, bottom first:

- :mod:`._splits`: every held-out split and fold, stratified by class and by (class, group);
- :mod:`._scorer`: the one held-out scorer (exact metric, surrogate loss, average precision);
- :mod:`._start_rule`: the one rule core (leave a reference only for a gain above the noise) and
  its variants for the validation split and boosting's rounds;
- :mod:`._out_of_fold_rule`: QuantileClassifier's K-fold choice (the out-of-fold metric with a
  paired bootstrap where it can tell, else the held-out loss);
- :mod:`._family_rule`: the variants of :class:`~quantile_surrogate.QuantileClassifierCV`;
- :mod:`._cross_fit`: the epoch grid, the starts and the scored fold runs.

The rules and why they are as they are: ``docs/selection.md``.
"""

__all__: list = []
