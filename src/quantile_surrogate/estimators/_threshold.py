"""The shared shell of every thresholded classifier: a raw score, a threshold, and the metric.

Each estimator in this package learns a raw score ``f(x)`` in its own way and then a
decision threshold ``theta`` (one, or one per group) at which the rate constraint of its
objective holds. What follows from that is the same for all of them, and lives here once,
as scikit-learn keeps it in ``BaseThresholdClassifier``:

- ``decision_function(X, *, sensitive_features=None) = f(x) - theta_{g(x)}``; positive means ``classes_[1]``;
- ``predict`` maps the sign of that through ``classes_`` (strict: ``f(x) > theta``,
  Definition 3.1 of the paper);
- ``score`` is the objective's exact metric at ``target``
  (:func:`~quantile_surrogate.objectives.objective_metric`), which ``GridSearchCV`` maximises.

A subclass implements ``_raw_scores(X)`` on an ``X`` already checked by ``_check_X`` and,
in ``fit``, calls the steps below in order: :meth:`_validate_training_data`,
:meth:`_encode_fit_groups`, then (after learning ``f``) :meth:`_set_threshold`.
"""

from __future__ import annotations

from contextlib import contextmanager
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.checks import check_two_classes
from ..objectives import get_objective, objective_metric
from ..objectives.thresholds import boundary_ties, constraint_threshold, group_constraint_thresholds
from ._groups import GROUP_WITHOUT_SUBSET_MESSAGE, encode_groups, group_codes

__all__ = ["ThresholdedClassifier", "ONE_CLASS_MESSAGE", "UNSEEN_LABELS_MESSAGE", "TARGET_CONSTRAINT",
           "MISSING_LABELS_MESSAGE", "NOT_2D_MESSAGE", "check_labels_present", "short_input_errors"]

TARGET_CONSTRAINT = [Interval(Real, 0, 1, closed="neither"), None]
"""The ``target`` of every estimator and baseline: a rate in (0, 1), or None for the objective's
``default_target`` (:data:`~quantile_surrogate.objectives.OBJECTIVES`, one default per objective)."""

ONE_CLASS_MESSAGE = (
    "`y` has only one class ({shown}); {name} needs exactly two classes, and with one there is nothing to "
    "rank. Check the labels or the split."
)
UNSEEN_LABELS_MESSAGE = "`y` has labels {shown} not seen in fit; the classes are {classes}."
ROWS_MISMATCH_MESSAGE = "`X` and `y` must have the same number of rows. {error}"
TIE_BREAK_STREAM = 0x7135
"""Mixed into ``random_state`` for the tie-break draws (a SeedSequence entropy word)."""


TEXT_COLUMNS_MESSAGE = (
    "`X` column(s) {columns} hold text or other non-numeric values (dtype {dtype}); {name} needs numbers. "
    "Encode them first, e.g. sklearn.compose.make_column_transformer((OneHotEncoder(), {first!r}), "
    "remainder='passthrough') in a Pipeline, or drop them (the command line one-hot encodes text columns itself)."
)


#: A ``y`` with None (or NaN) among its labels; "Unknown label type" is the phrase scikit-learn's checks look for.
MISSING_LABELS_MESSAGE = (
    "Unknown label type: `y` has {count} missing label(s) (None or NaN), first at row(s) {rows}; every row needs "
    "one of the two classes. Drop those rows (and their rows of X) or fill in their labels."
)
#: An ``X`` that is not 2-D, in one line (scikit-learn's own message prints the whole array).
NOT_2D_MESSAGE = (
    "`X` must be 2-D, shape (n_samples, n_features); got a {ndim}-D array of shape {shape}. Reshape your data: "
    "X.reshape(-1, 1) if it has a single feature, X.reshape(1, -1) if it is a single sample."
)


def check_labels_present(y) -> None:
    """ValueError (:data:`MISSING_LABELS_MESSAGE`) when an object ``y`` holds None or NaN; else nothing."""
    y = None if y is None else np.asarray(y)
    if y is None or y.dtype != object:
        return  # a float y with NaN gets scikit-learn's one-line "Input y contains NaN."
    missing = np.fromiter((value is None or (isinstance(value, float) and value != value) for value in y.ravel()),
                          dtype=bool, count=y.size)
    if missing.any():
        raise ValueError(MISSING_LABELS_MESSAGE.format(count=int(missing.sum()),
                                                       rows=np.flatnonzero(missing)[:5].tolist()))


def _short_input_error(error: ValueError, X, name: str):
    """One line for scikit-learn's input errors that print the whole array or name no column; else None."""
    text = str(error)
    if text.startswith("Expected 2D array") and "\narray=" in text:
        array = np.asarray(X, dtype=object) if not hasattr(X, "shape") else X
        return ValueError(NOT_2D_MESSAGE.format(ndim=np.ndim(array), shape=tuple(np.shape(array))))
    if text.startswith("could not convert string to float") and np.ndim(X) == 2 and not hasattr(X, "columns"):
        rows = np.asarray(X, dtype=object)
        columns = [j for j in range(rows.shape[1]) if not _numeric_column(rows[:, j])]
        if columns:
            return ValueError(TEXT_COLUMNS_MESSAGE.format(columns=columns[:5], dtype=rows.dtype, name=name,
                                                          first=columns[:1]))
    return None


def _numeric_column(column) -> bool:
    try:
        np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


@contextmanager
def short_input_errors(X, name: str):
    """Re-raise scikit-learn's whole-array and unnamed-text-column ``ValueError`` about ``X`` as one clear line."""
    try:
        yield
    except ValueError as error:
        short = _short_input_error(error, X, name)
        if short is None:
            raise
        raise short from None  # the original would print the whole array again


def refuse_text_columns(X, name: str):
    """``X`` unchanged; ValueError naming the columns of a pandas DataFrame that are not numeric or boolean.

    Without it scikit-learn's conversion fails with "could not convert string to float: 'x'",
    which names neither the column nor the fix.
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return X
    numeric = [dtype.kind in "biuf" if hasattr(dtype, "kind") else False for dtype in dtypes]
    if all(numeric):
        return X
    columns = [column for column, ok in zip(X.columns, numeric) if not ok]
    dtype = dtypes[columns[0]]
    raise ValueError(TEXT_COLUMNS_MESSAGE.format(columns=[str(c) for c in columns[:5]], dtype=dtype, name=name,
                                                 first=str(columns[0])))


class ThresholdedClassifier(ClassifierMixin, BaseEstimator):
    """Private base class: a raw score ``f(x)`` compared with a threshold learned in ``fit``.

    Subclasses set ``objective`` (a name in :data:`~quantile_surrogate.objectives.OBJECTIVES`)
    and ``target`` (None means the objective's default) as parameters, or override
    :meth:`_objective_spec` and :meth:`_target`; and implement ``_raw_scores``.
    """

    # -- what a subclass supplies -------------------------------------------------------
    #: ``accept_sparse`` of the input checks: None refuses sparse ``X`` (scikit-learn's message names
    #: ``.toarray()``); :data:`~quantile_surrogate._utils.sparse.SPARSE_INPUT` takes every SciPy format as CSR.
    _sparse_input = None

    def _raw_scores(self, X) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _objective_spec(self):
        return get_objective(self.objective)

    def _target(self) -> float:
        target = getattr(self, "target", None)
        return self._objective_spec().default_target if target is None else float(target)

    def _allows_nan(self) -> bool:
        """Whether the fitted model scores rows with NaN (trees do); ``_check_X`` refuses them otherwise."""
        return False

    def _check_X(self, X):
        """``X`` checked against what ``fit`` saw (features, dtype), as ``_raw_scores`` expects it."""
        with short_input_errors(X, type(self).__name__):  # a 1-D X: one line, not scikit-learn's whole array
            return validate_data(self, refuse_text_columns(X, type(self).__name__), dtype=[np.float64, np.float32],
                                 accept_sparse=self._sparse_input or False, reset=False,
                                 ensure_all_finite="allow-nan" if self._allows_nan() else True)

    # -- the steps of fit ------------------------------------------------------------------
    def _validate_training_data(self, X, y, **check):
        """``(X, y01)``: ``X`` validated (``n_features_in_`` set), ``y01`` int64 with 1 for ``classes_[1]``."""
        refuse_text_columns(X, type(self).__name__)
        check_labels_present(y)
        try:
            with short_input_errors(X, type(self).__name__):
                X, y = validate_data(self, X, y, dtype=[np.float64, np.float32],
                                     accept_sparse=self._sparse_input or False, **check)
        except ValueError as error:
            if "inconsistent numbers of samples" in str(error):
                raise ValueError(ROWS_MISMATCH_MESSAGE.format(error=error)) from error
            raise
        check_classification_targets(y)
        classes = np.unique(y)
        name = type(self).__name__
        if classes.shape[0] == 1:
            raise ValueError(ONE_CLASS_MESSAGE.format(shown=classes.tolist(), name=name))
        self.classes_ = check_two_classes(classes, "y")
        return X, (y == classes[1]).astype(np.int64)

    def _encode_fit_groups(self, groups, y01):
        """Group codes 0..G-1 (``groups_`` set to the labels), or None; every group needs a row of ``A``."""
        self.groups_ = self.group_thresholds_ = None
        if groups is None:
            return None
        labels, codes = encode_groups(groups, len(y01))
        objective = self._objective_spec()
        in_subset = objective.subset_mask(y01 == 1)
        covered = np.zeros(len(labels), dtype=bool)
        covered[codes[in_subset]] = True
        if not covered.all():
            label = labels[np.flatnonzero(~covered)[0]]
            raise ValueError(GROUP_WITHOUT_SUBSET_MESSAGE.format(
                group=label.item() if hasattr(label, "item") else label, subset=objective.subset,
                objective=objective.name))
        self.groups_ = labels
        return codes

    def _set_threshold(self, scores, y01, codes=None, sample_weight=None):
        """``threshold_`` at the exact empirical quantile of the training scores (per group with ``codes``).

        With ``sample_weight`` (frequency weights) the quantile is weighted (counts are sums of weights).
        """
        objective, target = self._objective_spec(), self._target()
        weighted = {} if sample_weight is None else {"sample_weight": sample_weight}
        if codes is None:
            self.threshold_ = constraint_threshold(scores, y01, objective=objective.name, target=target, **weighted)
        else:
            self.group_thresholds_ = group_constraint_thresholds(
                scores, y01, codes, objective=objective.name, target=target, n_groups=len(self.groups_), **weighted)
            self.threshold_ = self.group_thresholds_
        self._record_boundary_ties(scores, y01, codes)
        return self.threshold_

    def _record_boundary_ties(self, scores, y01, codes):
        """With ``tie_break="random"``: ``tie_score_`` and ``tie_fraction_`` (one per group with groups), else None.

        See :func:`~quantile_surrogate.objectives.thresholds.boundary_ties`: :meth:`predict` then takes each
        row scoring exactly ``tie_score_`` as positive with probability ``tie_fraction_``.
        """
        self.tie_score_ = self.tie_fraction_ = None
        if getattr(self, "tie_break", "none") != "random":
            return
        name, target = self._objective_spec().name, self._target()
        if codes is None:
            self.tie_score_, self.tie_fraction_ = boundary_ties(scores, y01, objective=name, target=target)
            return
        pairs = [boundary_ties(scores[codes == g], y01[codes == g], objective=name, target=target)
                 for g in range(len(self.groups_))]
        self.tie_score_, self.tie_fraction_ = (np.array(values, dtype=np.float64) for values in zip(*pairs))

    # -- the estimator API -----------------------------------------------------------------
    def _thresholds_for(self, groups, n: int):
        codes = group_codes(getattr(self, "groups_", None), groups, n)
        return codes, (self.threshold_ if codes is None else self.group_thresholds_[codes])

    def decision_function(self, X, *, sensitive_features=None):
        """``f(x) - threshold_``, shape (n,); positive means the positive class ``classes_[1]``.

        A model fitted with ``sensitive_features`` needs them here too (labels seen in fit), and
        each row is compared with its group's threshold: ``f(x) - group_thresholds_[g(x)]``.
        """
        check_is_fitted(self, "threshold_")
        X = self._check_X(X)
        scores = np.asarray(self._raw_scores(X), dtype=np.float64).reshape(-1)
        _, threshold = self._thresholds_for(sensitive_features, scores.shape[0])
        return scores - threshold

    def predict(self, X, *, sensitive_features=None):
        """``classes_[1]`` where :meth:`decision_function` is > 0, else ``classes_[0]``."""
        decision = self.decision_function(X, sensitive_features=sensitive_features)
        above = decision > 0
        if getattr(self, "tie_score_", None) is not None:
            above = self._break_ties(decision, sensitive_features, above)
        return self.classes_[above.astype(np.intp)]

    def _break_ties(self, decision, groups, above):
        """A seeded random choice among rows tied at the boundary score (``tie_break="random"``).

        Each such row is positive with probability ``tie_fraction_``, from
        ``numpy.random.default_rng([random_state, TIE_BREAK_STREAM])``: the same ``random_state`` gives
        the same choice.
        """
        codes, threshold = self._thresholds_for(groups, decision.shape[0])
        raw = decision + threshold
        tie_score = self.tie_score_ if codes is None else self.tie_score_[codes]
        fraction = self.tie_fraction_ if codes is None else self.tie_fraction_[codes]
        tied = np.isclose(raw, tie_score, rtol=1e-9, atol=1e-12)  # NaN (no boundary) is never close
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else None
        # A stream of its own: default_rng(random_state) is often the very generator that made the data.
        stream = np.random.default_rng(None if seed is None else [int(seed), TIE_BREAK_STREAM])
        drawn = stream.random(raw.shape[0]) < fraction
        return np.where(tied, drawn, above)

    def score(self, X, y, *, sample_weight=None, sensitive_features=None):
        """The objective's exact metric at ``target`` on ``(X, y)`` (what ``GridSearchCV`` maximises).

        Precision at recall ``target``, precision among the top ``ceil(target n)`` rows, or
        recall at FPR ``target`` (:mod:`quantile_surrogate.metrics`), computed from
        :meth:`decision_function`. With ``sensitive_features`` (a model fitted with them): the metric
        with the constraint met in every group, each at its own exact threshold on these rows
        (:func:`~quantile_surrogate.objectives.objective_metric`). Labels not seen in ``fit``
        are an error. ``sample_weight`` (frequency weights, one per row) gives the weighted
        metric: every count a sum of weights (an integer weight equals repeating the row).
        """
        check_is_fitted(self, "threshold_")
        y = np.asarray(y)
        known = np.isin(y, self.classes_)
        if not known.all():
            raise ValueError(UNSEEN_LABELS_MESSAGE.format(shown=np.unique(y[~known])[:6].tolist(),
                                                          classes=self.classes_.tolist()))
        decision = self.decision_function(X, sensitive_features=sensitive_features)
        codes, _ = self._thresholds_for(sensitive_features, decision.shape[0])
        return objective_metric((y == self.classes_[1]).astype(np.int64), decision, objective=self._objective_spec().name,
                                target=self._target(), groups=codes,
                                names=None if codes is None else self.groups_.tolist(),
                                sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = self._allows_nan()
        tags.input_tags.sparse = self._sparse_input is not None
        return tags
