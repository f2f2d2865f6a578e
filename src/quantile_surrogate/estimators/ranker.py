"""``QuantileRanker``: a ranker trained for precision@k within each query (search, recommendation).

The boosted models need LightGBM or XGBoost (``pip install 'quantile-surrogate[boost]'``), imported
only when ``fit`` runs; ``model="linear"`` needs neither.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils.errors import TrainingDivergedError
from .._utils.sparse import SPARSE_INPUT
from ..boosting import lightgbm_objective, xgboost_objective
from ..boosting.ranking import query_codes
from ..losses import SURROGATES
from ..quantiles.segments import SEGMENT_ESTIMATORS
from ..selection._query_splits import QueryCurve, live_queries, query_shuffle_splits
from ..selection._start_rule import select_rounds
from ._blend import standardised_mean, standardising
from ._boosting_backends import BACKENDS, make_backend
from ._ranker_paths import BoostedPath, LinearModel, LinearPath
from ._threshold import refuse_text_columns, short_input_errors
from .boosted import AUTO_SINGLE_SPLIT_ROWS, QuantileBoostingClassifier

__all__ = ["QuantileRanker", "GROUP_QUERY_MESSAGE", "QUERY_LENGTH_MESSAGE", "GRADED_LABELS_MESSAGE",
           "NO_MIXED_QUERY_MESSAGE", "NO_LARGE_QUERY_MESSAGE", "BLEND_SKIPPED_MESSAGE"]

#: ``ValueError`` of ``fit`` unless exactly one of ``group`` and ``query`` is given.
GROUP_QUERY_MESSAGE = (
    "Pass exactly one of `group` (the sizes of consecutive queries, as LightGBM's) and `query` (the query of "
    "each row); got {given}."
)
#: ``ValueError`` of ``fit`` for a ``query`` column that is not one entry per row.
QUERY_LENGTH_MESSAGE = "`query` must be 1-D with one entry per row of X ({n}); got shape {shape}."
#: ``ValueError`` of ``fit`` for labels that are not binary relevance.
GRADED_LABELS_MESSAGE = (
    "`y` holds {values}; QuantileRanker trains on binary relevance (0/1 or bool). For graded relevance pass "
    "relevance_threshold=, e.g. relevance_threshold=3 makes the rows with y >= 3 relevant."
)
#: ``ValueError`` of ``fit`` when no query has both relevant and irrelevant rows.
NO_MIXED_QUERY_MESSAGE = (
    "No query has both relevant and irrelevant rows ({n_queries} queries); precision@k within a query then "
    "does not depend on the scores. Check `y`, `relevance_threshold` and the query of each row."
)
#: ``UserWarning`` of ``fit`` when LightGBM's ``lambdarank`` cannot take the queries: the blend is skipped.
BLEND_SKIPPED_MESSAGE = (
    "The blend (step 4) is skipped: LightGBM's lambdarank takes queries of at most {limit:,} rows and the largest "
    "here has {largest:,}; predict is the precision@k model alone. Pass blend=False to say so, or model='xgboost'."
)

#: ``ValueError`` of ``fit`` when no query with both kinds of rows has more than k rows.
NO_LARGE_QUERY_MESSAGE = (
    "No query with both relevant and irrelevant rows has more than k={k} rows (the largest has {largest}); "
    "every row is then in its query's top k. Use a smaller k."
)


class QuantileRanker(BaseEstimator):
    r"""A ranker trained for precision@k within each query: per-query quantile thresholds (eqs. (9)/(10)).

    ``fit(X, y, group=sizes)`` (or ``query=`` codes per row) trains a score ``f(x)`` whose top ``k``
    rows in each query should be relevant; ``predict(X)`` returns the scores (higher ranks
    first). The loss is :func:`~quantile_surrogate.losses.precision_at_k_loss`: in each query ``q``
    the threshold is the query's own quantile ``theta_q = q(f(X_q), 1 - k/n_q)`` and the
    irrelevant rows above it (``form="fp"``, eq. (9)) or the relevant rows below it (``"tp"``,
    eq. (10)) are penalised. ``fit`` runs in three steps, as
    :class:`~quantile_surrogate.QuantileBoostingClassifier`'s:

    1. **Start**: ``n_estimators`` rounds of binary log loss (LightGBM, XGBoost), or logistic
       regression (``model="linear"``).
    2. **Choose the number of precision@k rounds** ``r`` in ``0..n_quantile_estimators`` on
       held-out *queries* (a query never straddles the two sides;
       :func:`~quantile_surrogate.selection._query_splits.query_shuffle_splits`): on each of
       ``validation_splits`` splits, fit step 1 and the rounds on the other queries and record the
       held-out mean precision@k per query after each round; ``r`` maximises its mean over the
       splits, and the start (``r = 0``) wins ties: a round is kept only where it raised the
       held-out metric (:func:`~quantile_surrogate.selection._start_rule.select_rounds`).
    3. **Refit on every query**: step 1, then exactly ``r`` rounds.
    4. **Blend** (``blend=True``, the boosted models): a LambdaMART booster of ``n_estimators``
       rounds (LightGBM's ``lambdarank``, XGBoost's ``rank:ndcg``; the same tree settings, relevance
       and queries), and ``predict`` returns the mean of the two boosters' scores, each standardised
       by its own scores on the training rows:

       .. math::
           f(x) = \frac12 \Big(\frac{f_P(x) - \mu_P}{\sigma_P} + \frac{f_L(x) - \mu_L}{\sigma_L}\Big),

       ``f_P`` the model of steps 1-3, ``f_L`` the LambdaMART booster. The two make different errors
       at the top of a query: on development splits of LightGBM's ranking example (each benchmark
       training fold halved by query; ``docs/ranking.md``) the blend raised precision@5 over the
       pointwise classifier by 0.008 and 0.006 (relevance >= 3 and >= 2), the model alone by -0.001
       and +0.002. Each member is as it would be alone: the rounds of step 2 are chosen for ``f_P``.

    Parameters
    ----------
    k : int >= 1, default=5
        The ``K`` of precision@K.
    form : {"fp", "tp"}, default="fp"
        Penalise irrelevant rows above each query's threshold (eq. (9)) or relevant rows below it (eq. (10)).
    quantile : {"kernel", "gaussian", "epanechnikov", "point"}, default="kernel"
        The threshold estimator (:data:`~quantile_surrogate.quantiles.segments.SEGMENT_ESTIMATORS`).
    bandwidth : float > 0, default=0.05
        Kernel bandwidth on each query's own rank scale.
    surrogate : {"logistic", "hinge"}, default="logistic"
        The upper bound of the 0-1 step.
    model : {"lightgbm", "xgboost", "linear"}, default="lightgbm"
        Boosted trees, or a linear score trained by full-batch SGD (every query in every step).
    n_estimators : int >= 1, default=100
        Log-loss rounds of the boosted start (unused by ``"linear"``, which starts at logistic regression).
    n_quantile_estimators : int >= 0, default=100
        The most precision@k rounds: boosting rounds, or SGD steps of ``"linear"``.
    learning_rate : float > 0, default=0.1
        The boosting learning rate (both stages), or the SGD step size of ``"linear"``.
    num_leaves, max_depth, min_child_samples : int or None, default=None
        Tree settings, as in :class:`~quantile_surrogate.QuantileBoostingClassifier`.
    backend_params : dict or None, default=None
        Other LightGBM / XGBoost parameters (``num_threads``, ``lambda_l2``, ...).
    logloss_weight : float >= 0, default=0.0
        Adds this multiple of the log loss to the precision@k loss in step 2.
    relevance_threshold : float or None, default=None
        Graded labels: the rows with ``y >= relevance_threshold`` are relevant. None: ``y`` must be binary.
    early_stopping : bool, default=True
        False skips step 2 and keeps all ``n_quantile_estimators`` rounds.
    blend : bool, default=True
        Step 4 for the boosted models (``"linear"`` stays alone). False: ``predict`` is ``f_P``.
        LightGBM's ``lambdarank`` takes queries of at most 10,000 rows: with a larger one the blend is
        skipped with a ``UserWarning``.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the queries held out in each split.
    validation_splits : int >= 1 or "auto", default="auto"
        "auto": 3 up to 10,000 rows, 1 above.
    n_iter_no_change : int >= 1 or None, default=20
        Stop a validation run after this many rounds without a better held-out metric.
    random_state : int, RandomState or None, default=None
        Seeds the splits and the backend; the same seed gives the same model.
    verbose : bool or int, default=False
        Print the rounds kept and the held-out metric.

    Attributes
    ----------
    model_ : lightgbm.Booster, xgboost.Booster or LinearModel
        The fitted model; ``predict`` is its raw score (for a booster, the log-loss trees then the
        precision@k trees).
    coef_, intercept_ : ndarray of shape (n_features,), float
        ``model="linear"`` only: ``f(x) = x @ coef_ + intercept_``.
    n_logloss_estimators_ : int
        Trees of the start (0 for ``"linear"``).
    best_iteration_ : int
        Precision@k rounds kept, ``r``.
    ranking_model_ : lightgbm.Booster, xgboost.Booster or None
        The LambdaMART member of the blend (step 4); None without one.
    blend_offsets_, blend_scales_ : ndarray of shape (2,) or None
        ``(mu_P, mu_L)`` and ``(sigma_P, sigma_L)`` of step 4; None without a blend.
    validation_curve_ : ndarray of shape (rounds + 1, 2) or None
        Mean held-out (precision@k per query, loss) after 0, 1, ... rounds; None without selection.
    selection_ : dict
        ``n_splits`` (0: no selection), ``start`` and ``chosen`` (mean held-out precision@k of the
        start and of the model kept; NaN without selection) and ``rounds`` (``r``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    quantile_surrogate.boosting.lightgbm_objective : ``"precision_at_k"`` as a LightGBM objective.
    quantile_surrogate.metrics.precision_at_k_per_query : The metric.

    Notes
    -----
    Training rows are sorted by query first (LightGBM and XGBoost need each query's rows
    consecutive), so ``query=`` rows may come in any order. A query counts for the loss and the
    selection when ``n_q > k`` and it has relevant and irrelevant rows; the held-out metric
    averages over the held-out queries with a relevant row.

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate.metrics import precision_at_k_per_query
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 4)); y = (X[:, 0] + rng.normal(size=600) > 1).astype(int)
    >>> ranker = QuantileRanker(k=3, n_estimators=20, n_quantile_estimators=20, random_state=0,
    ...                         backend_params={"num_threads": 1}).fit(X, y, group=[20] * 30)
    >>> query = np.repeat(np.arange(30), 20)
    >>> bool(precision_at_k_per_query(y, ranker.predict(X), query, 3) > y.mean())  # better than a random order
    True
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "form": [StrOptions({"fp", "tp"})],
        "quantile": [StrOptions(set(SEGMENT_ESTIMATORS))],
        "bandwidth": [Interval(Real, 0, None, closed="neither")],
        "surrogate": [StrOptions(set(SURROGATES))],
        "model": [StrOptions({"lightgbm", "xgboost", "linear"})],
        "n_quantile_estimators": [Interval(Integral, 0, None, closed="left")],
        "relevance_threshold": [Real, None],
        "blend": ["boolean"],
        # the boosted settings, checked as QuantileBoostingClassifier checks them
        **{name: QuantileBoostingClassifier._parameter_constraints[name] for name in (
            "n_estimators", "learning_rate", "num_leaves", "max_depth", "min_child_samples", "backend_params",
            "logloss_weight", "early_stopping", "validation_fraction", "validation_splits", "n_iter_no_change",
            "random_state", "verbose")},
    }

    def __init__(self, *, k=5, form="fp", quantile="kernel", bandwidth=0.05, surrogate="logistic", model="lightgbm",
                 n_estimators=100, n_quantile_estimators=100, learning_rate=0.1, num_leaves=None, max_depth=None,
                 min_child_samples=None, backend_params=None, logloss_weight=0.0, relevance_threshold=None,
                 early_stopping=True, validation_fraction=0.2, validation_splits="auto", n_iter_no_change=20,
                 blend=True, random_state=None, verbose=False):
        self.k = k
        self.form = form
        self.quantile = quantile
        self.bandwidth = bandwidth
        self.surrogate = surrogate
        self.model = model
        self.n_estimators = n_estimators
        self.n_quantile_estimators = n_quantile_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.backend_params = backend_params
        self.logloss_weight = logloss_weight
        self.relevance_threshold = relevance_threshold
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.validation_splits = validation_splits
        self.n_iter_no_change = n_iter_no_change
        self.blend = blend
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = self.model != "linear"  # a tree routes NaN down its default branch
        tags.target_tags.required = True
        return tags

    # -- the steps of fit ---------------------------------------------------------------------------
    def _loss_settings(self) -> dict:
        return dict(form=self.form, quantile=self.quantile, bandwidth=float(self.bandwidth), surrogate=self.surrogate)

    def _relevance(self, y) -> np.ndarray:
        """``y`` as a bool relevance mask: binary labels as they are, or ``y >= relevance_threshold``."""
        if self.relevance_threshold is not None:
            return np.asarray(y, dtype=np.float64) >= self.relevance_threshold
        values = np.unique(y)
        if not np.isin(values, [0, 1]).all():
            shown = values[:6].tolist() + (["..."] if values.size > 6 else [])
            raise ValueError(GRADED_LABELS_MESSAGE.format(values=shown))
        return np.asarray(y) == 1

    @staticmethod
    def _codes(group, query, n) -> np.ndarray:
        """Query codes ``0..Q-1`` per row from exactly one of ``group`` (sizes) and ``query`` (labels)."""
        if (group is None) == (query is None):
            raise ValueError(GROUP_QUERY_MESSAGE.format(given="both" if group is not None else "neither"))
        if group is not None:
            return query_codes(group, n, "group")
        values = np.asarray(query)
        if values.ndim != 1 or values.shape[0] != n:
            raise ValueError(QUERY_LENGTH_MESSAGE.format(n=n, shape=values.shape))
        return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)

    def _check_queries(self, relevant, codes) -> np.ndarray:
        """The live queries (:func:`live_queries`); ValueError when no query can be learned from."""
        sizes = np.bincount(codes)
        hits = np.bincount(codes, weights=relevant.astype(np.float64), minlength=sizes.size)
        mixed = (hits > 0) & (hits < sizes)
        if not mixed.any():
            raise ValueError(NO_MIXED_QUERY_MESSAGE.format(n_queries=sizes.size))
        live = live_queries(relevant, codes, self.k)
        if not live.any():
            raise ValueError(NO_LARGE_QUERY_MESSAGE.format(k=self.k, largest=int(sizes[mixed].max())))
        return live

    def _path(self, seed):
        if self.model == "linear":
            return LinearPath(self.k, self._loss_settings(), self.learning_rate, self.logloss_weight)
        engine = make_backend(self.model, learning_rate=self.learning_rate, num_leaves=self.num_leaves,
                              max_depth=self.max_depth, min_child_samples=self.min_child_samples, seed=seed,
                              backend_params=self.backend_params)
        factory = lightgbm_objective if self.model == "lightgbm" else xgboost_objective
        objective = factory("precision_at_k", k=self.k, logloss_weight=self.logloss_weight, **self._loss_settings())
        return BoostedPath(engine, self.n_estimators, objective)

    def _select_rounds(self, path, X, relevant, codes, live, rounds, seed):
        """``(r, curve, selection)``: the rounds with the best mean held-out precision@k, the mean curve, the record."""
        n_splits = self.validation_splits
        if n_splits == "auto":
            n_splits = 1 if len(relevant) > AUTO_SINGLE_SPLIT_ROWS else 3
        pairs = []
        if self.early_stopping and rounds > 0:
            pairs = query_shuffle_splits(codes, live, fraction=self.validation_fraction, n_splits=n_splits, seed=seed)
        if not pairs:
            return rounds, None, dict(n_splits=0, start=np.nan, chosen=np.nan, rounds=rounds)
        curves = []
        for fit_rows, held_rows in pairs:
            curve = QueryCurve(relevant[held_rows], codes[held_rows], self.k,
                               dict(self._loss_settings(), reduction="mean"), self.n_iter_no_change)
            path.fit(X[fit_rows], relevant[fit_rows], codes[fit_rows], rounds, held=(X[held_rows], curve))
            curves.append(curve.values())
        length = min(len(c) for c in curves)  # runs stopped early are compared on their common rounds
        curve = np.mean([c[:length] for c in curves], axis=0)
        chosen = select_rounds(curve[:, 0], curve[:, 1])
        return chosen, curve, dict(n_splits=len(pairs), start=float(curve[0, 0]), chosen=float(curve[chosen, 0]),
                                   rounds=chosen)

    # -- the estimator API --------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, group=None, query=None):
        """Fit on ``X`` (n, d), relevance ``y`` (n,) and the queries: ``group`` sizes or ``query`` codes (n,).

        ``group`` holds the sizes of consecutive queries (LightGBM's ``group``); ``query`` the query
        of each row, in any order (any labels). Exactly one of the two. Returns self.
        """
        refuse_text_columns(X, type(self).__name__)
        with short_input_errors(X, type(self).__name__):
            X, y = validate_data(self, X, y, accept_sparse=SPARSE_INPUT, dtype=[np.float64, np.float32],
                                 ensure_all_finite="allow-nan" if self.model != "linear" else True, y_numeric=True,
                                 ensure_min_samples=2)
        relevant = self._relevance(y)
        codes = self._codes(group, query, len(relevant))
        order = np.argsort(codes, kind="stable")  # each query's rows consecutive, as the tree libraries need
        X, relevant, codes = X[order], relevant[order], codes[order]
        live = self._check_queries(relevant, codes)
        random_state = self.random_state
        seed = int(random_state) if isinstance(random_state, Integral) else int(
            check_random_state(random_state).randint(np.iinfo(np.int32).max))
        path = self._path(seed)
        rounds, curve, selection = self._select_rounds(path, X, relevant, codes, live, self.n_quantile_estimators,
                                                       seed)
        self.model_, self.n_logloss_estimators_ = path.fit(X, relevant, codes, rounds)
        if isinstance(self.model_, LinearModel):
            self.coef_, self.intercept_ = self.model_.coef_, self.model_.intercept_
            self.best_iteration_ = rounds
        else:
            self.best_iteration_ = path.engine.n_trees(self.model_) - self.n_logloss_estimators_
        self.validation_curve_, self.selection_ = curve, selection
        if not np.isfinite(self._fit_blend(path, X, relevant, codes)).all():
            raise TrainingDivergedError("the model's scores", "on the training rows", self.learning_rate)
        if self.verbose:
            shown = "" if curve is None else f", held-out P@{self.k} {selection['chosen']:.4f} " \
                                             f"(start {selection['start']:.4f})"
            blended = "" if self.ranking_model_ is None else "; blended with a LambdaMART model"
            print(f"QuantileRanker: {self.best_iteration_} precision@k rounds kept{shown}{blended}")
        return self

    def _fit_blend(self, path, X, relevant, codes) -> np.ndarray:
        """Step 4 where it applies (``ranking_model_``, ``blend_offsets_``, ``blend_scales_``, else None); the
        deployed scores of the training rows ``X``, each member scoring them once."""
        self.ranking_model_ = self.blend_offsets_ = self.blend_scales_ = None
        own = path.scores(self.model_, X)
        if not self.blend or not isinstance(path, BoostedPath):
            return own
        limit, largest = path.engine.max_query_rows, int(np.bincount(codes).max())
        if limit is not None and largest > limit:
            warnings.warn(BLEND_SKIPPED_MESSAGE.format(limit=limit, largest=largest), UserWarning)
            return own
        self.ranking_model_ = path.fit_ranking(X, relevant, codes)
        raw = [own, path.scores(self.ranking_model_, X)]
        self.blend_offsets_, self.blend_scales_ = (np.array(column) for column in zip(*map(standardising, raw)))
        return standardised_mean(raw, self.blend_offsets_, self.blend_scales_)

    def _scores(self, X) -> np.ndarray:
        if isinstance(self.model_, LinearModel):
            return self.model_.scores(X)
        # the backend object is rebuilt on demand, not pickled: the booster is the model
        engine = BACKENDS["lightgbm" if type(self.model_).__module__.startswith("lightgbm") else "xgboost"]({})
        if self.ranking_model_ is None:
            return engine.margins(self.model_, X)
        raw = [engine.margins(model, X) for model in (self.model_, self.ranking_model_)]
        return standardised_mean(raw, self.blend_offsets_, self.blend_scales_)

    def predict(self, X):
        """The ranking scores ``f(x)`` of ``X`` (n, d), shape (n,): higher ranks first within a query."""
        check_is_fitted(self)
        with short_input_errors(X, type(self).__name__):
            X = validate_data(self, refuse_text_columns(X, type(self).__name__), accept_sparse=SPARSE_INPUT,
                              dtype=[np.float64, np.float32], reset=False,
                              ensure_all_finite="allow-nan" if not isinstance(self.model_, LinearModel) else True)
        return self._scores(X)
