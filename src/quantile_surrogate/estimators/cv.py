"""``QuantileClassifierCV``: :class:`QuantileClassifier` with its penalty, bandwidth and model family chosen by K-fold.

As :class:`~sklearn.linear_model.LogisticRegressionCV` is to ``LogisticRegression``: a grid
of ``alpha`` x ``bandwidth`` x model family is scored by stratified K-fold on the objective's
exact metric, together with the restart and the number of epochs (the K-fold selection that
:class:`QuantileClassifier` runs on small data, done once for the whole grid instead of inside
every fold), the best is refitted on every row, and the fitted estimator predicts through it.
The fold fits, the folds and the family rule live in :mod:`quantile_surrogate.selection`
(``_cross_fit``, ``_splits``, ``_family_rule``); ``docs/selection.md`` has the rule's history.
"""

from __future__ import annotations

import importlib.util
import itertools
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from joblib import Parallel, delayed
from sklearn.base import _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._utils.checks import check_sample_weight
from .._utils.seeding import restart_seeds
from .._utils.sparse import SPARSE_INPUT
from ..objectives import OBJECTIVES
from ..selection._cross_fit import build_start, epoch_grid, family_fold, logistic_restarts, train_from
from ..selection._family_rule import describe_choice, select_by_family
from ..selection._scorer import FoldData
from ..selection._splits import k_folds
from ._blend import BLEND, ScoreBlend
from ._boosted_family import (BOOSTED, NAN_NOTE, boosted_entries, boosted_fold, boosted_refit, boosted_template,
                              has_nan)
from ._threshold import TARGET_CONSTRAINT, ThresholdedClassifier
from .boosted import QuantileBoostingClassifier
from .quantile_classifier import QuantileClassifier

__all__ = ["QuantileClassifierCV"]

EMPTY_GRID_MESSAGE = "The grid for `{name}` is empty; give at least one value."
GRID_VALUES_MESSAGE = "`{name}s` must hold finite numbers {bound}; got {values}."
CONSTRAINTS_MESSAGE = ("QuantileClassifierCV does not train constraints yet: its folds would drop them. Fit "
                       "QuantileClassifier(constraints=[...]) itself, which chooses its epoch on held-out rows.")
CHECKPOINT_MESSAGE = ("`estimator` has a `checkpoint`; QuantileClassifierCV trains many models and cannot "
                      "resume one. Pass an estimator with checkpoint=None.")
SPARSE_MLP_NOTE = ("hidden_layer_sizes_grid='auto' left the MLP family out: X is sparse, where its first layer "
                   "(64 weights per column) made a fit about 20 times slower for a mean gain of 0.005 on one-hot "
                   "development splits and none on text (docs/sparse.md); pass hidden_layer_sizes_grid=((), (64,)) "
                   "to score it.")
SPARSE_ALPHA_NOTE = ("alphas='auto' scored one weight decay, 1e-3 (QuantileClassifier's default): X is sparse, where "
                     "1e-2 and 1e-3 gave the same held-out gains (their best means within 0.0003 at every operating "
                     "point of 60 fits on text and one-hot sets) and the same test metrics, and each value costs a "
                     "full set of fold fits (docs/sparse.md). Pass alphas=(1e-2, 1e-3) to score both.")
AUTO_ALPHAS = (1e-2, 1e-3)
"""``alphas="auto"`` on dense ``X`` (on sparse ``X`` the last, 1e-3, alone)."""
AUTO_FAMILIES = ((), (64,))
"""``hidden_layer_sizes_grid="auto"`` on dense ``X``: the linear model and a one-hidden-layer MLP (the linear model alone on sparse ``X``)."""
MODULE_FACTORY_MESSAGE = ("`estimator` has a `module_factory`, which overrides `hidden_layer_sizes`, so the "
                          "model families of `hidden_layer_sizes_grid` would all be the same model. Pass "
                          "hidden_layer_sizes_grid=((),) or an estimator without module_factory.")


class QuantileClassifierCV(ThresholdedClassifier):
    r"""A :class:`QuantileClassifier` whose ``alpha``, ``bandwidth`` and model family are chosen by cross-validation.

    Every candidate of ``hidden_layer_sizes_grid`` x ``alphas`` x ``bandwidths`` (in that
    order) trains each restart on ``cv - 1`` stratified folds for ``max_epochs`` epochs and is
    scored on the held-out fold after 0 (the logistic start as it is), 1, 2, 5, 10, 20, 50, ...
    and ``max_epochs`` epochs with the objective's exact metric at ``target`` (weighted with
    ``sample_weight``, per group with ``sensitive_features``). The choice applies the binomial start
    rule (:func:`~quantile_surrogate.selection._start_rule.select_over_start`, QuantileClassifier's
    K-fold rule before issue 21) inside each model family, then compares the families.

    With ``boosting`` (by default LightGBM's :class:`QuantileBoostingClassifier` where LightGBM is
    installed) the last family is gradient-boosted trees, scored on the same folds: fitted on each
    fold's training rows as its own ``fit`` does (its quantile rounds chosen on validation splits
    *inside* those rows), its log-loss trees alone ("LightGBM + threshold") are the family's start
    (epoch column 0) and the trees with their quantile rounds its one other entry (column 1;
    :mod:`~quantile_surrogate.estimators._boosted_family`). The families run from the simplest to the
    most flexible, linear, MLP, trees, so that ties go to the smoother score.

    1. In family :math:`f` the reference :math:`s_f` is the family's logistic start as it is
       (epoch 0 of its first logistic restart; it does not depend on ``alpha`` or
       ``bandwidth``). An entry :math:`x = (c, r, e)` of the family may replace it only when its
       paired held-out gain :math:`d_k(x) = m_k(x) - m_k(s_f)` over the :math:`K` folds passes

       .. math::
           \bar d(x) > z \max\big(\hat\sigma(x),\ \sigma_0(x)\big), \qquad
           \hat\sigma(x) = \frac{\operatorname{sd}_k d_k(x)}{\sqrt K}, \qquad
           \sigma_0(x) = \frac1K \Big(\sum_k \frac{p_k (1 - p_k)}{n_k} + \frac{q_k (1 - q_k)}{n'_k}\Big)^{1/2}

       with :math:`z` = ``selection_se``, :math:`p_k` and :math:`q_k` the reference's and the
       entry's metric on fold :math:`k` and :math:`n_k`, :math:`n'_k` the held-out rows each is a
       proportion of (the binomial noise of
       :func:`~quantile_surrogate.selection._start_rule.metric_noise`, its counts sums of
       ``sample_weight`` when given). The family's entry :math:`x_f` is the passing entry with the largest
       mean metric, ties lexicographically by
       :math:`\big(\tfrac1K \sum_k m_k(x),\ [e = 0],\ -c,\ -\tfrac1K \sum_k L_k(x)\big)` (a
       logistic start as it is, then the earlier candidate, so the first ``alpha``, then the
       lower held-out loss :math:`L`, then the earlier restart and the fewer epochs); with none
       passing, :math:`s_f`.
    2. Between the families, with :math:`b` the family whose entry has the highest mean
       :math:`\bar m(x_b)` (the earliest of equal means): a family :math:`f` is *within noise* of
       :math:`b` when :math:`\bar m(x_b) - \bar m(x_f) \le z \max(\hat\sigma_{bf}, \sigma_{0,b},
       \sigma_{0,f})` (:math:`\hat\sigma_{bf}` the standard error of the paired fold differences,
       :math:`\sigma_{0,f}` the start's part of family :math:`f`'s floor above, ``noise_floor``). Of :math:`b` and the families within
       noise of it, the one whose entry has the highest mean held-out **average precision**
       wins (ties: the earlier family of ``hidden_layer_sizes_grid``, the linear model by default,
       then the trees).

    The chosen start is trained for :math:`\hat e` epochs on every row (the trees: fitted on every
    row, without quantile rounds where their start won). Why a bar inside a
    family, why not the same bar between families, why average precision, and why not
    ``GridSearchCV(QuantileClassifier(), ...)``, with the measurements: ``docs/selection.md``.

    3. With ``blend=True`` (the default), where step 2 chose the MLP or the trees and both families
       were scored, the estimator deploys their blend instead of the winner alone: each family's
       entry refitted on every row, and the mean of their standardised scores
       :math:`f(x) = \tfrac12 \sum_m (f_m(x) - \mu_m) / \sigma_m` (:math:`\mu_m`, :math:`\sigma_m`
       the mean and standard deviation of member :math:`m`'s training scores), its threshold set
       on :math:`f` (:mod:`~quantile_surrogate.estimators._blend`; where the linear model wins it
       is deployed alone). Chosen on development splits, never a test half: ``docs/estimator.md``.

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        As in :class:`QuantileClassifier`.
    alphas : "auto" or sequence of float >= 0, default="auto"
        Weight decays to try; ties go to the earlier one. Weight decay alone shrinks the weights
        by ``(1 - 0.1 alpha)^200`` over the default 200 full-batch steps: 0.82 for 1e-2, 0.98 for
        1e-3 (why not 1e-4 too: ``docs/selection.md``). "auto": ``(1e-2, 1e-3)`` on dense ``X``;
        ``(1e-3,)`` on sparse ``X`` (a line in ``selection_["notes"]``), where the two gave the same
        held-out gains and test metrics on the text and one-hot development sets, and one value
        cut a fit from 4.1 to 2.5 times ``LogisticRegressionCV``'s on text and from 2.6 to 1.8 times on
        one-hot (``docs/sparse.md``). Pass ``(1e-2, 1e-3)`` to score both on sparse ``X``.
    bandwidths : sequence of float > 0, default=(0.1,)
        Kernel bandwidths on the rank scale; every value added doubles the fit time. 0.1 rather
        than the paper's 0.05: a wider kernel averages the threshold over about ``2 h |A|`` rows
        of ``A``, which matters on the small folds this class is for (``docs/selection.md``).
        Pass ``(0.05, 0.1)`` to choose between them.
    hidden_layer_sizes_grid : "auto" or sequence of tuples, default="auto"
        Model families: ``()`` is the linear model, ``(64,)`` a one-hidden-layer ReLU MLP. "auto":
        ``((), (64,))`` on dense ``X``; ``((),)`` on sparse ``X`` (a line in ``selection_["notes"]``),
        where the MLP (64 weights per column) made a fit about 20 times slower (20-27 s against 1.0-1.3 s
        on 12,400-16,400 TF-IDF and one-hot rows) for a mean gain of 0.005 over the linear family on
        the one-hot development splits (one fit in nine, +0.049) and none on text (``docs/sparse.md``).
        Pass ``((), (64,))`` to score the MLP on sparse ``X`` too.
    cv : int >= 2, cross-validation splitter or iterable of (train, test) index arrays, default=3
        An integer means stratified folds (by class, and by (class, group) with
        ``sensitive_features``), shuffled with ``random_state``; a splitter is called as
        ``split(X, y, groups)`` with ``fit``'s ``groups`` (never the constraint's groups).
    estimator : QuantileClassifier or None, default=None
        A template for every other setting (``objective`` and ``target`` of this class win);
        None means ``QuantileClassifier()``. Its ``max_epochs``, ``n_restarts`` and ``init``
        set the candidates; its ``early_stopping``, ``selection_folds``,
        ``validation_fraction``, ``n_iter_no_change``, ``refit`` and ``selection_se`` are not used (the folds
        here select the epoch count and the restart), and a ``checkpoint`` is refused.
    selection_se : float >= 0, default=2.0
        :math:`z` of the rule above, as in :class:`QuantileClassifier` (the ``selection_se`` of
        ``estimator`` is not used), for both steps. 0: the plain best mean over the grid (an exact
        tie between families goes to the higher average precision).
    boosting : "auto", QuantileBoostingClassifier or None, default="auto"
        The trees family. "auto": ``QuantileBoostingClassifier()`` (LightGBM) when LightGBM is
        importable and ``X`` is dense, else no trees and a line in ``selection_["notes"]`` (on the
        sparse text and one-hot sets the family rule never chose them: ``docs/sparse.md``); an estimator: its settings
        (the ``objective``, ``target`` and ``random_state`` of this class win), e.g.
        ``QuantileBoostingClassifier(backend="xgboost")``; None: linear and MLP families only (the
        estimator before issue 24). With trees, ``fit`` takes ``X`` with NaN: only the trees are
        trained then (``selection_["notes"]`` says so), and ``predict`` takes NaN where they won.
    blend : bool, default=True
        Deploy the blend of step 3 where the MLP or the trees win and both were scored (with a
        logistic restart: without one there is no family rule, and the best entry is deployed
        alone); False deploys the winning family alone (the estimator before 2026-11-28).
    n_jobs : int or None, default=1
        (Model family, fold) tasks run in parallel through joblib; the result does not depend on it.
    random_state : int, RandomState or None, default=None
        Seeds the folds and every start.

    Attributes
    ----------
    family_ : str
        The deployed family: "linear", "mlp", "boosted", or "mlp+boosted" for the blend (step 3;
        ``selection_["reason"]`` names the family the rule chose).
    alpha_, bandwidth_, hidden_layer_sizes_ : float, float, tuple
        The chosen values (None for the trees; the MLP member's for the blend).
    epochs_ : int
        The chosen number of epochs (0: the logistic start as it is); for the trees, the quantile
        rounds the refit kept; for the blend, its MLP member's (the trees member's rounds are
        ``best_estimator_.estimators_[1].best_iteration_``).
    restart_ : int
        The chosen restart (its start: ``start_``, "logistic", "random" or "log-loss trees").
    start_ : str
    best_score_ : float
        The choice's mean held-out metric (optimistic where it left the start: a maximum over the
        passing entries).
    cv_results_ : dict of ndarrays, one entry per candidate
        ``param_family``, ``param_alpha``, ``param_bandwidth``, ``param_hidden_layer_sizes`` (NaN and
        None for the trees, whose ``params`` is ``{"family": "boosted"}``), ``params``,
        ``split{k}_test_score`` (the held-out metric of the candidate's entry: its best passing
        restart and epoch count, else its own logistic start as it is), ``mean_test_score``,
        ``std_test_score``, ``rank_test_score`` (1 is the choice, then by ``mean_test_score``),
        ``best_epochs`` (for the trees 0, the log-loss trees, or 1, with their quantile rounds),
        ``best_restart``, ``mean_fit_time`` (seconds per fold, the torch families' starts not counted),
        and, with a logistic restart, the candidate's family's ``family_noise_floor`` (:math:`\sigma_0`)
        and ``family_within_noise`` (step 2; ``selection_["reason"]`` says in a line why the winner won).
    selection_ : dict
        The rule's record: ``metric`` and ``loss`` of shape (candidates, folds, restarts, epoch
        counts) (NaN where an entry does not exist), ``epochs`` (the counts), ``mean_gain``,
        ``gain_se``, ``bar`` and ``eligible`` (candidates, restarts, epoch counts; each entry
        against its family's start), and per family ``references`` (the start's index),
        ``noise`` (per fold), ``noise_floor`` (:math:`\sigma_0`), ``family_means`` and
        ``family_average_precision`` (the mean held-out metric and average precision of its
        entry), ``family_bar`` (its bar against the best mean; 0 for that family) and
        ``family_within_noise``; ``average_precision`` has the shape of ``metric``; ``notes``, lines on
        families left out (no LightGBM, NaN or sparse ``X``) and on the one ``alpha`` of sparse ``X``;
        ``reason``, one line on why the family won. Without a logistic restart only ``metric``,
        ``loss``, ``average_precision`` and ``epochs``, and the choice is the best mean over the grid.
    best_estimator_ : QuantileClassifier, QuantileBoostingClassifier or ScoreBlend
        The chosen settings, refitted on every row; predictions go through it. A
        QuantileClassifier's ``best_epoch_`` is ``epochs_``. The blend is a
        :class:`~quantile_surrogate.estimators._blend.ScoreBlend` of the two refitted members
        (``estimators_``, ``offsets_``, ``scales_``); ``threshold_`` is set on its scores.
    classes_, threshold_, groups_, group_thresholds_, n_features_in_, feature_names_in_
        As in :class:`QuantileClassifier`.

    See Also
    --------
    QuantileClassifier : one setting, with its own K-fold selection of the epoch count.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(300, weights=[0.8, 0.2], random_state=0)
    >>> clf = QuantileClassifierCV(target=0.9, alphas=(1e-3,), bandwidths=(0.05,),
    ...                            estimator=QuantileClassifier(max_epochs=10, n_restarts=1),
    ...                            boosting=None, random_state=0).fit(X, y)
    >>> clf.family_ in ["linear", "mlp"], len(clf.cv_results_["mean_test_score"])
    (True, 2)
    >>> bool((clf.predict(X)[y == 1] == 1).mean() >= 0.9)  # the constraint on the training rows
    True
    """

    _sparse_input = SPARSE_INPUT  # held as one torch sparse CSR tensor by QuantileClassifier's working copy

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": TARGET_CONSTRAINT,
        "alphas": [StrOptions({"auto"}), "array-like"],
        "bandwidths": ["array-like"],
        "hidden_layer_sizes_grid": [StrOptions({"auto"}), "array-like"],
        "cv": [Interval(Integral, 2, None, closed="left"), HasMethods(["split"]), "array-like"],
        "estimator": [QuantileClassifier, None],
        "selection_se": [Interval(Real, 0, None, closed="left")],
        "boosting": [StrOptions({"auto"}), QuantileBoostingClassifier, None],
        "blend": ["boolean"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, objective="precision_at_recall", target=None, alphas="auto",
                 bandwidths=(0.1,), hidden_layer_sizes_grid="auto", cv=3, estimator=None, selection_se=2.0,
                 boosting="auto", blend=True, n_jobs=1, random_state=None):
        self.objective = objective
        self.target = target
        self.alphas = alphas
        self.bandwidths = bandwidths
        self.hidden_layer_sizes_grid = hidden_layer_sizes_grid
        self.cv = cv
        self.estimator = estimator
        self.selection_se = selection_se
        self.boosting = boosting
        self.blend = blend
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _auto_grids(self, sparse: bool) -> tuple[list, list, list]:
        """``(hidden layer sizes of each torch family, weight decays, notes)``, each "auto" resolved.

        "auto" is :data:`AUTO_FAMILIES` and :data:`AUTO_ALPHAS` on dense ``X``; on sparse ``X`` the linear
        family and the last weight decay alone, a line in the notes for each (the parameter validation
        admits no other string).
        """
        families, alphas, notes = self.hidden_layer_sizes_grid, self.alphas, []
        if isinstance(families, str):
            families, notes = ([()], notes + [SPARSE_MLP_NOTE]) if sparse else (AUTO_FAMILIES, notes)
        if isinstance(alphas, str):
            alphas, notes = (AUTO_ALPHAS[-1:], notes + [SPARSE_ALPHA_NOTE]) if sparse else (AUTO_ALPHAS, notes)
        return [tuple(s) for s in families], [float(a) for a in alphas], notes

    def _grid(self, families: list, alphas: list) -> dict:
        grid = {"hidden_layer_sizes": families, "alpha": alphas, "bandwidth": [float(h) for h in self.bandwidths]}
        for name, values in grid.items():
            if len(values) == 0:
                raise ValueError(EMPTY_GRID_MESSAGE.format(name=name))
        for name in ("alpha", "bandwidth"):
            if not all(np.isfinite(v) and v >= (0 if name == "alpha" else 1e-300) for v in grid[name]):
                raise ValueError(GRID_VALUES_MESSAGE.format(name=name, bound=">= 0" if name == "alpha" else "> 0",
                                                            values=grid[name]))
        return grid

    def _template(self, seed, families: list) -> QuantileClassifier:
        base = QuantileClassifier() if self.estimator is None else clone(self.estimator)
        if base.checkpoint is not None:
            raise ValueError(CHECKPOINT_MESSAGE)
        if base.constraints:
            raise ValueError(CONSTRAINTS_MESSAGE)
        if base.module_factory is not None and len(families) > 1:
            raise ValueError(MODULE_FACTORY_MESSAGE)
        return base.set_params(objective=self.objective, target=self.target, random_state=seed)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, sample_weight=None, sensitive_features=None, groups=None):
        """Score the grid by stratified K-fold, refit the best on every row; returns self.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two classes
        sample_weight : array-like of shape (n,), >= 0, or None
            Frequency weights: they weight every fold fit (loss, quantile threshold, logistic
            start), the held-out metric and loss, the refit and ``threshold_`` (an integer
            weight counts as that many copies of the row, within its fold).
        sensitive_features : array-like of shape (n,) or None
            Group labels: the constraint is trained and scored in every group (as
            :meth:`QuantileClassifier.fit` with ``sensitive_features``), the integer ``cv``'s
            folds are stratified by (class, group) and the refit has one threshold per group;
            ``predict`` then needs them. They are never handed to a splitter.
        groups : array-like of shape (n,) or None
            scikit-learn's meaning: labels for a group-aware splitter passed as ``cv`` (such as
            ``GroupKFold``), called as ``cv.split(X, y, groups)``; not a constraint.

        Returns
        -------
        self : QuantileClassifierCV
        """
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        families, alphas, notes = self._auto_grids(sp.issparse(X))
        boosted, tree_notes = boosted_template(self.boosting, self.objective, self.target, seed, sparse=sp.issparse(X))
        notes += tree_notes
        X, y01 = self._validate_training_data(X, y, **({} if boosted is None else {"ensure_all_finite": "allow-nan"}))
        weight = None if sample_weight is None else check_sample_weight(sample_weight, len(y01))
        grid = self._grid(families, alphas)
        codes = self._encode_fit_groups(sensitive_features, y01)
        base = self._template(seed, families)
        if base.n_restarts == "auto" and sp.issparse(X):  # resolved once, so that every fold and the refit agree
            base.set_params(n_restarts=base._restarts(sparse=True))
        folds = k_folds(y01, codes, self.cv, seed, X=X, groups=groups)  # the splitter's groups, never the constraint's
        if boosted is not None and has_nan(X):
            notes.append(NAN_NOTE)
            grid["hidden_layer_sizes"] = []
        candidates = [dict(hidden_layer_sizes=h, alpha=a, bandwidth=b) for h in grid["hidden_layer_sizes"]
                      for a, b in itertools.product(grid["alpha"], grid["bandwidth"])]
        candidates += [] if boosted is None else [dict(family=BOOSTED)]
        parts, labels, epochs, Xt, yt = self._score_folds(base, boosted, X, y01, weight, codes, folds, grid, seed)
        arrays = [np.stack([np.concatenate([part[i] for part in fold]) for fold in parts], axis=1) for i in range(4)]
        chosen = self._record(candidates, *arrays, epochs, base, [held.y_np for held in labels],
                              [held.weight_np for held in labels], notes)
        pair = self._blend_pair(candidates, chosen, boosted)
        if pair is not None:
            self._refit_blend(pair, candidates, base, boosted, X, y, y01, weight, sensitive_features, codes, Xt, yt,
                              seed)
        elif candidates[chosen].get("family") == BOOSTED:
            self._refit_boosted(boosted, X, y, weight, sensitive_features)
        else:
            self._refit(base, X, y, weight, sensitive_features, codes, Xt, yt, candidates[chosen], seed, len(y01))
        return self

    def _score_folds(self, base, boosted, X, y01, weight, codes, folds, grid, seed) -> tuple:
        """Every (family, fold) task, through joblib: ``(parts, labels, epochs, Xt, yt)``.

        ``parts[k]`` lists fold ``k``'s (metric, loss, ranking, seconds) per family in the order of the
        candidates (the torch families', then the boosted family's entries); ``labels[k]`` its held-out
        rows (labels, weights, groups), ``epochs`` the epoch grid, ``Xt`` and ``yt`` the standardised
        working rows (None without a torch family).
        """
        families, n = grid["hidden_layer_sizes"], len(y01)
        penalties = list(itertools.product(grid["alpha"], grid["bandwidth"]))
        epochs = epoch_grid(base.max_epochs)
        sparse = sp.issparse(X)
        first = self._settings(base, dict(alpha=grid["alpha"][0], bandwidth=grid["bandwidth"][0]), seed, n, sparse)
        jobs, Xt, yt = [], None, None
        if families:
            Xt = base._working_tensor(X, None, weight)  # standardised once with every row's (weighted) statistics
            yt = torch.as_tensor(y01, device=Xt.device)
            in_subset = self._objective_spec().subset_mask(yt == 1)
            sides = [(FoldData(Xt, yt, a, weight, codes, in_subset), FoldData(Xt, yt, b, weight, codes, in_subset))
                     for a, b in folds]
            settings = [self._settings(base, dict(hidden_layer_sizes=h, alpha=a, bandwidth=b), seed, n, sparse)
                        for h in families for a, b in penalties]
            per = len(penalties)
            jobs += [delayed(family_fold)(clone(base).set_params(hidden_layer_sizes=h)._scorer_factory(X.shape[1]),
                                          settings[f * per:(f + 1) * per], fit, held, grid=epochs, seed=seed,
                                          n_restarts=base._restarts(), init=base.init, max_epochs=base.max_epochs)
                     for f, h in enumerate(families) for fit, held in sides]
        labels = [FoldData.from_labels(y01[b], None if codes is None else codes[b], None if weight is None else weight[b])
                  for _, b in folds]  # the held-out rows as QuantileBoostingClassifier's own curve scores them
        if boosted is not None:
            jobs += [delayed(boosted_fold)(boosted, X, y01, a, b, held, first, weight, codes)
                     for (a, b), held in zip(folds, labels)]
        tasks = Parallel(n_jobs=self.n_jobs)(jobs)
        shape = (base._restarts(), len(epochs))
        parts = [[tasks[f * len(folds) + k] for f in range(len(families))] for k in range(len(folds))]
        if boosted is not None:
            start = logistic_restarts(base.init, base._restarts())
            restart = start.index(True) if any(start) else 0
            for k, fold in enumerate(parts):
                fold.append(boosted_entries(tasks[len(families) * len(folds) + k], shape, restart))
        return parts, labels, epochs, Xt, yt

    @staticmethod
    def _settings(base, candidate, seed, n_rows, sparse=False) -> dict:
        return clone(base).set_params(**candidate)._fold_settings(seed, n_rows, sparse)

    def _record(self, candidates, metric, loss, ranking, seconds, epochs, base, held_labels, held_weights, notes):
        """``cv_results_``, ``selection_`` and the choice (:func:`~quantile_surrogate.selection._family_rule.select_by_family`); returns its index."""
        logistic = logistic_restarts(base.init, base._restarts())
        is_start = np.zeros(metric.shape[2:])
        is_start[logistic, 0] = 1.0
        sizes = [c.get("hidden_layer_sizes", BOOSTED) for c in candidates]
        families = [[c for c, h in enumerate(sizes) if h == family] for family in dict.fromkeys(sizes)]
        names = [BOOSTED if h == BOOSTED else "linear" if h == () else "mlp" for h in sizes]
        chosen, best, record = select_by_family(metric, loss, is_start, families, held_labels, self.objective,
                                                self._target(), self.selection_se, held_weights, ranking)
        n = len(candidates)
        splits = np.array([metric[c, :, r, e] for c, (r, e) in enumerate(best)])
        means = splits.mean(axis=1)
        # Rank 1 is the choice; the others by their entry's mean held-out metric (ties: the earlier candidate).
        others = sorted((c for c in range(n) if c != chosen), key=lambda c: (-np.nan_to_num(means[c], nan=-np.inf), c))
        rank = np.empty(n, dtype=np.int32)
        rank[[chosen] + others] = np.arange(1, n + 1)
        results = {
            "param_family": np.array(names, dtype=object),
            "param_hidden_layer_sizes": np.array([c.get("hidden_layer_sizes") for c in candidates] + [None],
                                                 dtype=object)[:-1],
            "param_alpha": np.array([c.get("alpha", np.nan) for c in candidates], dtype=np.float64),
            "param_bandwidth": np.array([c.get("bandwidth", np.nan) for c in candidates], dtype=np.float64),
            "params": [dict(c) for c in candidates],
            **{f"split{k}_test_score": splits[:, k] for k in range(splits.shape[1])},
            "mean_test_score": means, "std_test_score": splits.std(axis=1),
            "rank_test_score": rank,
            "best_epochs": np.array([int(epochs[e]) for _, e in best]),
            "best_restart": np.array([int(r) for r, _ in best]),
            "mean_fit_time": seconds.mean(axis=1),
        }
        if record is not None:  # each candidate's family: its noise floor, and whether it was within noise of the best
            of_family = np.empty(n, dtype=np.intp)
            for f, members in enumerate(families):
                of_family[members] = f
            results["family_noise_floor"] = np.asarray(record["noise_floor"], dtype=np.float64)[of_family]
            results["family_within_noise"] = np.asarray(record["family_within_noise"])[of_family]
        restart, column = best[chosen]
        self.cv_results_ = results
        self.selection_ = dict(metric=metric, loss=loss, average_precision=ranking, epochs=np.asarray(epochs),
                               notes=list(notes), **(record or {}))
        labels = [f"mlp {sizes[m[0]]}" if names[m[0]] == "mlp" else names[m[0]] for m in families]
        family = next(f for f, members in enumerate(families) if chosen in members)
        self.selection_["reason"] = (describe_choice(labels, record, family) if record is not None else
                                     f"{labels[family]}: the best held-out mean over the grid (no logistic start)")
        self.family_ = names[chosen]
        self.alpha_ = candidates[chosen].get("alpha")
        self.bandwidth_ = candidates[chosen].get("bandwidth")
        self.hidden_layer_sizes_ = candidates[chosen].get("hidden_layer_sizes")
        self.restart_, self.epochs_ = int(restart), int(epochs[column])
        self.start_ = "log-loss trees" if self.family_ == BOOSTED else "logistic" if logistic[restart] else "random"
        self.best_score_ = float(results["mean_test_score"][chosen])
        return chosen

    def _refit(self, base, X, y, weight, sensitive_features, codes, Xt, yt, candidate, seed, n_rows):
        """The chosen start, trained for ``epochs_`` epochs on every row, as ``best_estimator_``."""
        self._adopt_thresholds(self._trained(base, X, y, weight, sensitive_features, Xt, yt, candidate, seed, n_rows,
                                             self.restart_, self.epochs_, self.start_ == "logistic"))

    def _trained(self, base, X, y, weight, sensitive_features, Xt, yt, candidate, seed, n_rows, restart, epochs,
                 logistic) -> QuantileClassifier:
        """A torch family's candidate: restart ``restart``'s start trained for ``epochs`` epochs on every row."""
        best = clone(base).set_params(**candidate)
        y01, codes = best._adopt_fit(X, y, sensitive_features, base.mean_, base.scale_)
        every = FoldData(Xt, yt, np.arange(n_rows), weight, codes)
        model_seed, shuffle_seed = restart_seeds(seed, base._restarts())[restart]
        start = build_start(best._scorer_factory(Xt.shape[1]), every, model_seed, logistic)
        settings = self._settings(base, candidate, seed, n_rows, Xt.layout == torch.sparse_csr)
        result = train_from(start, every, settings, epochs, shuffle_seed)
        best._finish_fit(Xt, y01, codes, weight, result=result, best_epoch=epochs)
        return best

    def _blend_pair(self, candidates, chosen, boosted):
        """``(MLP candidate, trees candidate)`` for step 3, or None: ``blend`` off, the linear model chosen, or a family missing.

        The MLP member is the chosen candidate where an MLP won, else the entry of the MLP family with the
        highest mean held-out metric (``hidden_layer_sizes_grid`` may hold several).
        """
        record = self.selection_
        if not self.blend or boosted is None or self.family_ == "linear" or "family_entries" not in record:
            return None
        entries, means = record["family_entries"], record["family_means"]
        mlps = [f for f, c in enumerate(entries) if candidates[c].get("hidden_layer_sizes") not in ((), None)]
        trees = [f for f, c in enumerate(entries) if candidates[c].get("family") == BOOSTED]
        if not mlps or not trees:
            return None
        mlp = max(mlps, key=lambda f: (means[f], -f)) if self.family_ == BOOSTED else next(
            f for f in mlps if entries[f] == chosen)
        if not (np.isfinite(means[mlp]) and np.isfinite(means[trees[0]])):  # a diverged start never joins
            return None
        return int(entries[mlp]), int(entries[trees[0]])

    def _refit_blend(self, pair, candidates, base, boosted, X, y, y01, weight, sensitive_features, codes, Xt, yt,
                     seed):
        """Step 3: both members refitted on every row, their :class:`ScoreBlend` as ``best_estimator_``, its threshold."""
        mlp, trees = pair
        results = self.cv_results_
        restart, epochs = int(results["best_restart"][mlp]), int(results["best_epochs"][mlp])
        logistic = bool(logistic_restarts(base.init, base._restarts())[restart])
        members = (self._trained(base, X, y, weight, sensitive_features, Xt, yt, candidates[mlp], seed, len(y01),
                                 restart, epochs, logistic),
                   boosted_refit(boosted, results["best_epochs"][trees] > 0, X, y, weight, sensitive_features))
        self.best_estimator_, scores = ScoreBlend.fit_on(members, X, weight)
        self._set_threshold(scores, y01, codes, weight)
        self.selection_["reason"] += (f"; deployed as the blend of the mlp {candidates[mlp]['hidden_layer_sizes']} and "
                                      "boosted families (the mean of their standardised scores, blend=True)")
        self.family_ = BLEND
        self.alpha_, self.bandwidth_ = candidates[mlp]["alpha"], candidates[mlp]["bandwidth"]
        self.hidden_layer_sizes_ = candidates[mlp]["hidden_layer_sizes"]
        self.restart_, self.epochs_, self.start_ = restart, epochs, "logistic" if logistic else "random"

    def _refit_boosted(self, boosted, X, y, weight, sensitive_features):
        """The boosted family's estimator on every row (its log-loss trees alone where column 0 won), as ``best_estimator_``."""
        best = boosted_refit(boosted, self.epochs_ > 0, X, y, weight, sensitive_features)
        self.epochs_ = int(best.best_iteration_)
        self._adopt_thresholds(best)

    def _adopt_thresholds(self, best):
        self.best_estimator_ = best
        self.threshold_ = best.threshold_
        self.groups_, self.group_thresholds_ = best.groups_, best.group_thresholds_
        self.tie_score_, self.tie_fraction_ = best.tie_score_, best.tie_fraction_

    def _allows_nan(self) -> bool:
        return getattr(self, "family_", None) == BOOSTED  # the trees score NaN; a torch family cannot

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.boosting is not None and (  # fit takes NaN where the trees are trained
            not isinstance(self.boosting, str) or importlib.util.find_spec("lightgbm") is not None)
        return tags

    def _raw_scores(self, X) -> np.ndarray:
        return self.best_estimator_._raw_scores(X)
