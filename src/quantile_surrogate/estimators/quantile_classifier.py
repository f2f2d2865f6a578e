"""``QuantileClassifier``: a scikit-learn estimator over :func:`quantile_surrogate.training.train`.

It uses scikit-learn's semi-private validation helpers (``validate_data``, new in 1.6,
``_fit_context``, ``Interval``/``StrOptions`` in ``_parameter_constraints``), as
scikit-learn-contrib's template does. Tested with scikit-learn 1.9.1; ``pyproject.toml``
pins ``scikit-learn>=1.6,<1.10`` because these helpers may change without deprecation.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..losses import SURROGATES
from ..objectives import OBJECTIVES, predict_scores
from ..quantiles import QUANTILE_ESTIMATORS
from ..training import train
from ._constrained_fit import ConstrainedFitSteps
from ._quantile_fit import QuantileFitSteps
from ._standardize import sparse_working_rows, standardize_columns
from ._threshold import TARGET_CONSTRAINT, ThresholdedClassifier
from .._utils.checks import check_sample_weight
from .._utils.sparse import SPARSE_INPUT, slice_rows

__all__ = ["QuantileClassifier", "DEFAULT_TARGETS"]

DEFAULT_TARGETS = {name: objective.default_target for name, objective in OBJECTIVES.items()}
"""``target=None`` means these (from :data:`~quantile_surrogate.objectives.OBJECTIVES`): the paper's
synthetic recall 0.95, and a 5 % rate."""

class QuantileClassifier(ConstrainedFitSteps, QuantileFitSteps, ThresholdedClassifier):
    r"""A binary classifier trained for a rate-constrained operating point (Mackey, Luo & Eban 2018).

    Minimises the quantile surrogate loss of ``objective`` by Algorithm 1 (SGD with momentum
    on minibatches plus a minibatch of the threshold subset ``A``), then sets ``threshold_`` to
    the exact empirical quantile on the training data, so that the constraint holds there.

    ==========================  ==========================  ===========================
    objective                   constraint (``target``)     loss
    ==========================  ==========================  ===========================
    ``"precision_at_recall"``   recall >= target            eq. (7)
    ``"precision_at_rate"``     pred. pos. rate = target    eq. (9) or (10) (``form``)
    ``"recall_at_fpr"``         FPR <= target               Neyman-Pearson form
    ==========================  ==========================  ===========================

    Parameters
    ----------
    objective : {"precision_at_recall", "precision_at_rate", "recall_at_fpr"}, default="precision_at_recall"
    target : float in (0, 1) or None, default=None
        The recall, predicted positive rate or FPR; None means :data:`DEFAULT_TARGETS`.
    form : {"fp", "tp"}, default="fp"
        For ``precision_at_rate``: bound the false positives (eq. (9)) or the true positives (eq. (10)).
    quantile : str or callable, default="kernel"
        A name in :data:`~quantile_surrogate.quantiles.QUANTILE_ESTIMATORS` or ``f(scores, level)``.
    bandwidth : float > 0, default=0.05
        Kernel bandwidth ``h`` on the rank scale (the paper uses 0.05 and 0.08).
    surrogate : {"logistic", "hinge"}, default="logistic"
    hidden_layer_sizes : tuple of int, default=()
        Empty for the paper's linear model, else a ReLU multi-layer perceptron.
    module_factory : callable or None, default=None
        ``module_factory(n_features) -> torch.nn.Module`` mapping (n, d) to (n,) or (n, 1) scores;
        overrides ``hidden_layer_sizes``.
    alpha : float >= 0, default=1e-3
        Weight decay (SGD's ``weight_decay``) on the weight matrices.
    learning_rate : float > 0, default=0.1
    momentum : float in [0, 1), default=0.9
    batch_size : int, "auto" or None, default="auto"
        None is full-batch; "auto" is full-batch up to 10,000 training rows (100,000 on sparse input or with
        ``constraints``), 1000 above.
    subset_batch_size : int or None, default=None
        Rows of ``A`` per step (Algorithm 1, step 2); None applies :func:`~quantile_surrogate.training.train`'s
        rule: ``min(|A|, ceil(50 / min(target, 1 - target)), max(batch_size, 16))`` rows, or the
        batch's own rows of ``A`` when a batch holds that many in expectation.
    subset_from_batch : bool, default=False
        Use ``A_b = X_b \cap A`` instead of a separate minibatch of ``A``.
    max_epochs : int, default=200
    n_restarts : int or "auto", default="auto"
        Independent runs. Without early stopping the lowest training loss wins (the paper's
        Q3); with it, the best validation metric (ties: the lower validation loss); with the
        K-fold selection of ``early_stopping="auto"`` on small data, the best mean held-out metric.
        "auto" is 3, and 1 with ``constraints`` (with ``init="mixed"``: the logistic start only). Under
        constraints the random restarts only added candidates to a noisy held-out choice: on the
        training halves of UCI Adult and German credit (5 splits each, scored on a split of the
        training half, never on a test half) one restart kept 0.850 against 0.536 precision at a 10 %
        rate under a race parity gap, 0.662 against 0.526 on German credit by age, never less, in a
        third to a half of the time (``docs/constraints.md``). Also 1 on sparse ``X`` (unless
        ``init="random"``), where random starts over thousands of columns were almost never kept:
        on development splits of the text and one-hot sets (the training halves split again) the
        linear model with one restart against three differed by +0.0001 on average over 50 paired
        fits at five operating points (worst -0.0054) in half the time, and was identical in 20 of
        20 fits above 10,000 rows; ``QuantileClassifierCV``'s (64,) MLP family kept the same model
        in every fit measured (``docs/sparse.md``).
    init : {"random", "logistic", "mixed"}, default="mixed"
        "mixed" starts restart 0 from logistic regression's solution and the others at random.
    early_stopping : bool or "auto", default="auto"
        True: hold out ``validation_fraction`` of the rows (stratified), keep each restart's
        epoch with the best validation metric (its start included; ties go to the lower
        validation loss), stop after ``n_iter_no_change`` epochs without improvement, and
        pick the restart with the best validation value. False: every row trains for all
        ``max_epochs`` and the lowest training loss picks the restart (the paper's protocol).
        "auto": True above 10,000 training rows; up to 10,000, K-fold selection: stratified
        ``selection_folds``-fold cross-fitting scores every restart after 0 (logistic start
        only), 1, 2, 5, 10, 20, 50, ... and ``max_epochs`` epochs on the held-out folds, and the
        chosen candidate is trained again on every row from the same start. The choice
        (:func:`~quantile_surrogate.selection._out_of_fold_rule.select_out_of_fold`): a candidate
        whose out-of-fold exact metric (all folds' held-out scores pooled) beats the logistic
        start's in at least 90 % of 200 paired bootstrap resamples (the largest such metric);
        where none does, the lowest mean held-out surrogate loss, unless the start beats that
        candidate in 30 % of the resamples. With ``sensitive_features``, a ``checkpoint``, or a
        class with fewer than ``4 * selection_folds`` rows, "auto" below 10,000 rows is False.
        docs/selection.md, docs/estimator.md and docs/real_data.md have the measurements behind this.
    selection_folds : int >= 2, default=3
        Folds of the K-fold selection (``early_stopping="auto"``, at most 10,000 rows); fit
        time there is about ``1 + (selection_folds - 1)`` times that of one training run.
    selection_se : float >= 0, default=2.0
        After a validation split (without groups): the selected model replaces the logistic
        start only if its validation metric beats the start's by more than ``selection_se``
        binomial standard errors of their difference
        (:func:`~quantile_surrogate.selection._start_rule.keep_start_unless_gain`). In the K-fold
        selection only 0 matters: the plain largest out-of-fold metric wins (a tie keeps the
        start). No effect with ``init="random"``. Why 2: ``docs/selection.md``.
    validation_fraction : float in (0, 1), default=0.2
    n_iter_no_change : int, default=20
    refit : bool, default=False
        After early stopping, train the selected restart again from the same start on every
        row (the validation rows included) for its best number of epochs. Without it the model
        stays the one fitted without the validation rows, except a logistic start kept as it is
        (epoch 0), which is always refitted on every row: it has no epoch count for the held-out
        rows to choose, and logistic regression on every row is what a user would otherwise deploy.
    standardize : bool or "auto", default="auto"
        Centre and scale the features internally (``coef_`` is reported in the original units). A
        sparse ``X`` is never centred (that would fill every zero): "auto" centres and scales a dense
        ``X`` and leaves a sparse one as it is (on TF-IDF text and one-hot columns, scaling each column
        by its spread costs logistic regression 0.14-0.23 in precision at 5 %: docs/sparse.md); True
        also divides each sparse column by its standard deviation; False leaves every input as it is.
    random_state : int, RandomState or None, default=None
    verbose : bool or int, default=False
        Show a tqdm progress bar over epochs with the loss and the threshold.
    device : str, default="cpu"
        A torch device such as "cuda"; float64 on the CPU, float32 elsewhere.
    tie_break : {"none", "random"}, default="none"
        Rows whose score ties at the constraint's boundary cannot be split by a threshold:
        "none" keeps the tie policy (a floor never missed, a ceiling never exceeded; see
        :func:`~quantile_surrogate.objectives.thresholds.constraint_threshold`); "random" makes
        :meth:`predict` take each tied row as positive with probability ``tie_fraction_``,
        drawn with ``random_state``, so that the rate is met in expectation.
    checkpoint : str, path-like or None, default=None
        Save training state here after every epoch; a fit with the same path resumes from it.
    constraints : list of RateConstraint or None, default=None
        Extra rate constraints at the model's one threshold (:mod:`quantile_surrogate.constraints`),
        e.g. ``[gap("recall", at_most=0.05)]`` (equal opportunity), ``[rate("fpr", at_most=0.05)]`` or
        ``[rate("precision", at_least=0.7, in_each_group=True)]`` (a precision floor in every group);
        per-group and gap constraints are measured in the groups of ``fit(..., sensitive_features=)``.
        Trained by the proxy-Lagrangian (:func:`~quantile_surrogate.training.train`'s
        ``constraints``); ``early_stopping="auto"`` then always holds out ``validation_fraction`` of the
        rows (stratified by class and group), and the model kept is the best epoch that meets every
        constraint on those rows and on the fit rows at the deployed threshold (the best held-out metric
        among them), else the one with the smallest excess, with a ``UserWarning`` naming each
        constraint not met held out. Where no split can keep rows of every (class, group) on both
        sides (a group with a handful of positives), or with ``early_stopping=False``, it trains on
        every row, checks the constraints there, and warns about each one not met on them.
        ``constraint_report_`` has the numbers. One deterministic model, no randomised classifier.
    group_thresholds : bool or "auto", default="auto"
        What ``sensitive_features`` do. True: one threshold per group (the objective's rate in every
        group; the group is needed to predict). False: they only enter ``constraints``; one threshold
        for every row, no group needed to predict. "auto": True without ``constraints`` (the
        estimator's behaviour before constraints existed), False with them.
    constraint_step_size : float > 0, default=1.0
        The multipliers' step :math:`\eta`, once per epoch:
        :math:`\lambda_j \leftarrow \max(0, \lambda_j + \eta c_j)`, with :math:`c_j` the exact excess.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    threshold_ : float, or ndarray of shape (n_groups,) when fitted with ``groups``
        The decision threshold on the raw score ``f(x)``; with groups, one per entry of ``groups_``
        (the same array as ``group_thresholds_``).
    groups_ : ndarray of shape (n_groups,) or None
        The sorted group labels seen in ``fit(X, y, sensitive_features=...)``; None without groups.
    group_thresholds_ : ndarray of shape (n_groups,) or None
        Each group's threshold, the exact empirical quantile on that group's training rows, so
        the constraint holds in every group there; None without groups.
    coef_ : ndarray of shape (1, n_features)
        Linear models only, in the original feature units.
    intercept_ : ndarray of shape (1,)
        Linear models only; ``X @ coef_.T + intercept_`` equals :meth:`decision_function`.
        With groups the thresholds are not in it: ``decision_function(X, sensitive_features=groups)`` is
        ``X @ coef_.T + intercept_ - group_thresholds_[code of the row's group]``.
    tie_score_, tie_fraction_ : float (one per group with groups) or None
        With ``tie_break="random"``: the score tied at the constraint's boundary and the
        probability with which :meth:`predict` takes a row scoring exactly that as positive.
    model_ : torch.nn.Module
        The trained scoring function; it takes standardised features ``(x - mean_) / scale_``.
    mean_, scale_ : ndarray of shape (n_features,)
        The standardisation learned in ``fit`` (zeros and ones with ``standardize=False``),
        computed without overflow (a cell of 1e308 does not zero its column), weighted by
        ``sample_weight`` when given.
    loss_curve_ : list of float
        Mean training loss per epoch of the selected restart.
    validation_curve_ : list of float or None
        Validation metric per epoch (entry 0 is the start).
    restart_losses_ : list of float
    train_loss_ : float
    n_iter_ : int
        Epochs run by the selected restart (before early stopping restored its best epoch).
    best_epoch_ : int or None
        The epoch kept by early stopping or by the K-fold selection (0: the start), None without either.
    selection_ : dict or None
        The K-fold selection's record (:func:`~quantile_surrogate.selection._cross_fit.cross_fit_selection`):
        ``rule`` (the decision in words) and ``decided_by`` ("metric", "loss" or "start"),
        ``epochs`` (the candidate epoch counts), ``fold_metric`` and ``fold_loss`` of shape
        (folds, n_restarts, n_epochs) (NaN where not a candidate), their means ``mean_metric``
        and ``mean_loss``, ``pooled_metric`` (the out-of-fold metric) and ``win_share`` (how often
        each candidate beats the start over the resamples) of shape (n_restarts, n_epochs), the
        chosen ``restart``, ``epochs_`` and ``start``. After a validation split:
        ``validation_gain``, ``noise_floor`` (of the difference of the two validation metrics),
        ``start_kept``, ``decided_by`` and ``rule``. None where neither check ran.
    constraint_groups_ : ndarray or None
        The sorted group labels the ``constraints`` were measured in (None without such constraints).
    constraint_report_ : dict or None
        With ``constraints``: ``constraints`` (per constraint its ``constraint`` name, ``bound``, exact
        ``train`` and ``held_out`` value at the deployed threshold, a list per group for
        ``in_each_group``, ``met`` on the held-out rows, the final ``multiplier``, and per epoch
        ``train_curve`` and ``multiplier_curve``: the value on the fit rows that each multiplier step
        read, and the multiplier after it), ``feasible`` (all met), ``checked_on`` ("held_out", or
        "train" without held-out rows), ``best_epoch``, ``feasible_epochs`` (how many epochs of the kept
        restart met every constraint held out), ``chosen`` (the choice in words), ``held_out_excess``
        (per epoch, 0 the start, the largest excess the selection read; None without held-out rows) and
        ``start`` (how the kept restart started; for a logistic start under gap constraints its ``refits``
        with reweighted groups, whether the kept start ``held`` every gap ``margin`` inside its bound on the
        training rows, each group's ``weights`` for its negatives and positives, and a ``description``).
        With ``refit=True`` the held-out rows were trained on at the end, so their values are no longer
        held out.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    quantile_surrogate.training.train : the training loop, without scikit-learn.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(500, weights=[0.9, 0.1], random_state=0)
    >>> clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y)
    >>> bool((clf.predict(X)[y == 1] == 1).mean() >= 0.9)  # the recall constraint on training data
    True

    Group-wise constraints (equal opportunity: recall >= 0.9 in each group):

    >>> groups = np.where(X[:, 0] > 0, "a", "b")
    >>> clf = QuantileClassifier(target=0.9, max_epochs=20, random_state=0).fit(X, y, sensitive_features=groups)
    >>> predicted = clf.predict(X, sensitive_features=groups) == 1
    >>> [bool(predicted[(y == 1) & (groups == g)].mean() >= 0.9) for g in clf.groups_]
    [True, True]

    One group-blind threshold under a constraint between groups (the group is not needed to predict):

    >>> from quantile_surrogate.constraints import gap
    >>> clf = QuantileClassifier(target=0.8, constraints=[gap("recall", at_most=0.1)], max_epochs=30,
    ...                          random_state=0).fit(X, y, sensitive_features=groups)
    >>> clf.constraint_report_["constraints"][0]["constraint"], clf.predict(X[:3]).shape
    ('recall gap <= 0.1', (3,))
    """

    _sparse_input = SPARSE_INPUT

    _parameter_constraints: dict = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "target": TARGET_CONSTRAINT,
        "form": [StrOptions({"fp", "tp"})],
        "quantile": [StrOptions(set(QUANTILE_ESTIMATORS)), callable],
        "bandwidth": [Interval(Real, 0, None, closed="neither")],
        "surrogate": [StrOptions(set(SURROGATES))],
        "hidden_layer_sizes": ["array-like"],
        "module_factory": [callable, None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "subset_batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "subset_from_batch": ["boolean"],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_restarts": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "init": [StrOptions({"random", "logistic", "mixed"})],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "selection_folds": [Interval(Integral, 2, None, closed="left")],
        "selection_se": [Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "refit": ["boolean"],
        "standardize": ["boolean", StrOptions({"auto"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str, torch.device],
        "checkpoint": [str, os.PathLike, None],
        "tie_break": [StrOptions({"none", "random"})],
        "constraints": [list, tuple, None],
        "group_thresholds": ["boolean", StrOptions({"auto"})],
        "constraint_step_size": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, objective="precision_at_recall", target=None, form="fp", quantile="kernel", bandwidth=0.05,
                 surrogate="logistic", hidden_layer_sizes=(), module_factory=None, alpha=1e-3, learning_rate=0.1,
                 momentum=0.9, batch_size="auto", subset_batch_size=None, subset_from_batch=False, max_epochs=200,
                 n_restarts="auto", init="mixed", early_stopping="auto", selection_folds=3, selection_se=2.0,
                 validation_fraction=0.2, n_iter_no_change=20, refit=False, standardize="auto", random_state=None,
                 verbose=False, device="cpu", checkpoint=None, tie_break="none", constraints=None,
                 group_thresholds="auto", constraint_step_size=1.0):
        self.objective = objective
        self.target = target
        self.form = form
        self.quantile = quantile
        self.bandwidth = bandwidth
        self.surrogate = surrogate
        self.hidden_layer_sizes = hidden_layer_sizes
        self.module_factory = module_factory
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.subset_batch_size = subset_batch_size
        self.subset_from_batch = subset_from_batch
        self.max_epochs = max_epochs
        self.n_restarts = n_restarts
        self.init = init
        self.early_stopping = early_stopping
        self.selection_folds = selection_folds
        self.selection_se = selection_se
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.refit = refit
        self.standardize = standardize
        self.random_state = random_state
        self.verbose = verbose
        self.device = device
        self.checkpoint = checkpoint
        self.tie_break = tie_break
        self.constraints = constraints
        self.group_thresholds = group_thresholds
        self.constraint_step_size = constraint_step_size

    # -- the estimator API -------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sample_weight=None, sensitive_features=None):
        """Train the scorer and set ``threshold_`` at the exact empirical quantile of its training scores.

        The steps: validate and encode the labels and groups, draw the seed, split off the
        validation rows (or run the K-fold selection), make one standardised working copy (the
        only NumPy -> torch crossing), :func:`~quantile_surrogate.training.train`, keep the
        logistic start unless held-out data prefers training (the out-of-fold rule on small data,
        ``selection_se`` binomial standard errors after a validation split), optionally refit on
        every row, score the training rows and set the threshold.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            A SciPy sparse matrix or array (any format; converted to CSR once) is trained on as a
            torch sparse CSR tensor of its own dtype: never densified, never centred (``standardize``).
        y : array-like of shape (n_samples,)
            Exactly two classes; ``classes_[1]`` (the larger label) is the positive one.
        sensitive_features : array-like of shape (n_samples,) or None, default=None
            Any labels (strings, integers). The constraint then holds in every group: each
            group's rows are compared with their own threshold ``q(f(A \\cap G_g), 1 - target)``
            in the loss (:func:`~quantile_surrogate.losses.rate_constrained_loss`) and in
            ``group_thresholds_``: the same predicted positive rate in every group with
            ``precision_at_rate`` (demographic parity), recall >= target in every group with
            ``precision_at_recall`` (equal opportunity), FPR <= target with ``recall_at_fpr``.
            Every group needs a row of A. With ``constraints`` (and ``group_thresholds="auto"``) they
            set no threshold: the constraints are measured in these groups, and the model has one
            threshold for every row (``predict`` takes no groups).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Frequency weights >= 0, passed to :func:`~quantile_surrogate.training.train`
            (weighted loss, quantile threshold and logistic start), to the standardisation
            (weighted ``mean_`` and ``scale_``) and to ``threshold_`` (the weighted empirical
            quantile); an integer weight equals repeating the row. The held-out selection is
            weighted too: the K-fold selection on small data trains and scores every fold with the
            weights, and the validation split of larger data scores its rows with theirs (metric,
            loss and noise floor); folds and split are drawn by row.

        Returns
        -------
        self : QuantileClassifier

        Raises
        ------
        ValueError
            If ``y`` does not have exactly two classes, a group has no row of A, or a parameter
            is out of range; TrainingDivergedError if the scores become NaN or inf.

        Examples
        --------
        >>> from sklearn.datasets import make_classification
        >>> X, y = make_classification(400, weights=[0.9, 0.1], random_state=0)
        >>> clf = QuantileClassifier(target=0.9, max_epochs=10, random_state=0).fit(X, y)
        >>> clf.selection_["start"], clf.selection_["decided_by"] in ("metric", "loss", "start")  # K-fold selection
        ('logistic', True)
        """
        X, y01 = self._validate_training_data(X, y)
        weight = None if sample_weight is None else check_sample_weight(sample_weight, len(y01))
        codes, group_codes = self._group_roles(sensitive_features, y01)  # thresholds' groups, every group
        self._hidden_sizes()
        seed = self._draw_seed()
        fit_rows, val_rows = self._split(y01, seed, group_codes)
        order = None if val_rows is None else np.concatenate([fit_rows, val_rows])
        weight_as_given = weight
        if order is not None:
            y01 = y01[order]
            codes = None if codes is None else codes[order]
            group_codes = None if group_codes is None else group_codes[order]
            weight = None if weight is None else weight[order]
        Xt = self._working_tensor(X, order, weight_as_given)
        del X
        yt = torch.as_tensor(y01, device=Xt.device)
        gt = None if group_codes is None else torch.as_tensor(group_codes, device=Xt.device)
        n_fit = len(fit_rows)
        validation = None if val_rows is None else \
            (slice_rows(Xt, n_fit), yt[n_fit:]) + (() if gt is None else (gt[n_fit:],))
        factory = self._scorer_factory(Xt.shape[1])
        settings = {**self._train_settings(seed, n_fit, sparse=Xt.layout == torch.sparse_csr),
                    **self._constraint_settings(codes)}
        self.selection_ = None
        folds = None if val_rows is not None else self._cross_fit_folds(y01, codes)
        if folds is not None:
            result = self._fit_cross_fitted(factory, Xt, yt, folds, seed, settings,
                                            **({} if weight is None else {"sample_weight": weight}))
        else:
            result = train(
                factory, slice_rows(Xt, 0, n_fit), yt[:n_fit], groups=None if gt is None else gt[:n_fit],
                max_epochs=self.max_epochs, n_restarts=self._restarts(Xt.layout == torch.sparse_csr), init=self.init,
                early_stopping=self._early_stopping(len(y01)), n_iter_no_change=self.n_iter_no_change,
                validation=validation, select="loss" if validation is None else "validation",
                checkpoint=self.checkpoint, **settings,
                **({} if weight is None else {"sample_weight": weight[:n_fit]}),
                **({} if weight is None or validation is None else {"validation_weight": weight[n_fit:]}),
            )
            self._keep_result(result)
            if validation is not None and gt is None and "constraints" not in settings:
                result = self._keep_start_unless_gain(result, factory, Xt, yt, n_fit, settings, weight)
        # With constraints a logistic start kept as it is stays fitted on the fit rows: its constraints were checked
        # on the held-out rows, which a refit would train on.
        if validation is not None and (self.refit or (result.start == "logistic" and result.best_epoch == 0
                                                      and "constraints" not in settings)):
            self._refit_on_all_rows(result, factory, Xt, yt, gt,
                                    settings if weight is None else {**settings, "sample_weight": weight})
        self._finish_fit(Xt, y01, codes, weight)
        self._report_constraints(predict_scores(self.model_, Xt).double().cpu().numpy() if "constraints" in settings
                                 else None, y01, group_codes, n_fit, weight, result)
        return self

    def _raw_scores(self, X) -> np.ndarray:
        """``f((x - mean_) / scale_)`` for validated ``X``, shape (n,), float64."""
        device = next(self.model_.parameters(), torch.empty(0)).device
        dtype = next(self.model_.parameters(), torch.empty(0, dtype=torch.float64)).dtype
        if sp.issparse(X):
            work = sparse_working_rows(X, None, self.scale_, device, dtype)
        else:
            work = torch.as_tensor(standardize_columns(X, self.mean_, self.scale_), dtype=dtype, device=device)
        return predict_scores(self.model_, work).double().cpu().numpy()
