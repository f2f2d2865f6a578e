"""quantile_surrogate.baselines.aatp: Accuracy at the Top (Boyd et al. 2012), its candidates and the one it keeps."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from quantile_surrogate.baselines import AccuracyAtTheTop
from quantile_surrogate.baselines.aatp import NOT_CONVERGED_MESSAGE
from quantile_surrogate.datasets import make_gaussian_mixture
from tests._messages import prefix


def test_aatp_keeps_the_candidate_with_rate_closest_to_tau():
    X, y = make_gaussian_mixture(150, prior=0.3, random_state=3)
    tau = 0.1
    clf = AccuracyAtTheTop(target=tau, C=0.5, n_candidates=15, random_state=0).fit(X, y)
    assert len(clf.candidate_indices_) == 15
    best = int(np.argmin(np.abs(clf.candidate_rates_ - tau)))
    assert clf.best_candidate_ == clf.candidate_indices_[best]
    # Re-solve the kept candidate's problem independently: an SVM on x - x_hat, no intercept.
    j = clf.best_candidate_
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max, size=15)[best]
    svm = LinearSVC(loss="hinge", C=0.5, fit_intercept=False, dual=True, max_iter=10000, tol=1e-4, random_state=seed)
    svm.fit(X - X[j], np.where(y == 1, 1, -1))
    np.testing.assert_allclose(clf.coef_[0], svm.coef_[0])
    np.testing.assert_allclose(clf.intercept_[0], -(X @ svm.coef_[0])[j])
    # Each stored rate is that candidate's training predicted positive rate.
    assert clf.candidate_rates_[best] == np.mean(X @ svm.coef_[0] > (X @ svm.coef_[0])[j])


def test_aatp_candidates_surround_the_reference_quantile():
    X, y = make_gaussian_mixture(100, prior=0.3, random_state=4)
    clf = AccuracyAtTheTop(target=0.1, n_candidates=3).fit(X, y)
    reference = LogisticRegression(C=1.0, max_iter=10000, tol=1e-6).fit(X, y).decision_function(X)
    ranks = np.argsort(np.argsort(-reference))  # 0 = top
    # ceil(0.1 * 100) = 10 rows above the point quantile, which is at 0-based rank 10.
    assert sorted(ranks[clf.candidate_indices_].tolist()) == [9, 10, 11]
    assert ranks[clf.candidate_indices_[0]] == 10


def test_aatp_all_candidates_by_default():
    X, y = make_gaussian_mixture(40, prior=0.3, random_state=5)
    clf = AccuracyAtTheTop(target=0.1).fit(X, y)
    assert sorted(clf.candidate_indices_.tolist()) == list(range(40))


def test_candidate_solves_that_do_not_converge_are_counted_and_warned_about():
    X, y = make_gaussian_mixture(200, prior=0.3, random_state=6)
    with pytest.warns(ConvergenceWarning, match=prefix(NOT_CONVERGED_MESSAGE)) as record:
        clf = AccuracyAtTheTop(target=0.1, n_candidates=4, max_iter=1, random_state=0).fit(X, y)
    assert 1 <= clf.n_not_converged_ <= 4 and clf.n_iter_ == 1
    expected = NOT_CONVERGED_MESSAGE.format(count=clf.n_not_converged_, total=4, max_iter=1)
    assert expected in [str(w.message) for w in record]  # (the reference logistic fit at max_iter=1 warns too)
