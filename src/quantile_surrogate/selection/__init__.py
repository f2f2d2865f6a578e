"""Held-out model selection for every estimator: splits and folds, the epoch grid, the start rule,
the family rule, one held-out scorer. Internal: the estimators are its users."""

__all__: list = []
