"""The distributed objective's kept arrays (``boosting/_workspace.py``): reused, and never other numbers."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.boosting._distributed import _row_weights, distributed_gradient_hessian
from quantile_surrogate.boosting._hint import HINT_SLOTS, SelectionHint
from quantile_surrogate.boosting._workspace import Workspace

from ._fake_collective import run_workers


def test_an_array_is_handed_out_again_while_its_size_and_dtype_stay():
    workspace = Workspace()
    first = workspace.array("z", 10)
    assert workspace.array("z", 10) is first and first.dtype == np.float64
    assert workspace.array("z", 11) is not first and workspace.array("z", 11, bool).dtype == bool
    assert np.shares_memory(workspace.tensor("grad", 5).numpy(), workspace.array("grad", 5))


def test_labels_are_known_only_while_they_equal_the_kept_copy():
    workspace, labels = Workspace(), np.array([0.0, 1.0, 1.0, 0.0], dtype=np.float32)
    assert not workspace.known_labels(labels)  # nothing kept yet
    workspace.keep_labels(labels)
    assert workspace.known_labels(labels.copy())
    labels[0] = 1.0  # the caller's array changed after it was kept: the copy is not
    assert not workspace.known_labels(labels)
    assert not workspace.known_labels(np.array([0, 1, 1, 0]))  # another dtype
    assert not workspace.known_labels(np.zeros(3, dtype=np.float32))  # another length
    with_nan = np.array([0.0, np.nan, 1.0, 0.0], dtype=np.float32)
    workspace.keep_labels(with_nan)
    assert not workspace.known_labels(with_nan)  # NaN never equals itself


def test_the_binary_check_runs_once_while_the_labels_stay(monkeypatch):
    from quantile_surrogate.boosting import gradient

    checked = []
    original = gradient.check_binary
    monkeypatch.setattr(gradient, "check_binary", lambda labels, name: checked.append(1) or original(labels, name))
    rng = np.random.default_rng(2)
    scores, labels = rng.normal(size=200), (rng.random(200) < 0.3).astype(np.float32)

    def calls(labels_of_call, workspace):
        def worker(comm, part):
            return [distributed_gradient_hessian(comm, part[0], labels, with_loss=False, workspace=workspace)
                    for labels in labels_of_call]
        return run_workers(worker, [(scores, labels)])[0][0]

    workspace = Workspace()
    kept = calls([labels, labels.copy(), labels], workspace)
    assert len(checked) == 1  # XGBoost's labels of every round: checked once
    fresh = calls([labels], None)[0]
    for out in kept:
        np.testing.assert_array_equal(out.grad, fresh.grad)
        np.testing.assert_array_equal(out.hess, fresh.hess)
    bad = labels.copy()
    bad[5] = 2.0
    with pytest.raises(ValueError, match="labels"):
        calls([bad], workspace)  # other labels are checked again, and refused
    assert len(checked) == 3


def _rounds(parts, settings, kept, rounds=4):
    """Each worker's (grad, hess) copies over ``rounds`` calls on drifting float32 margins, and whether its arrays
    were the same memory in every call; ``kept``: one Workspace (and hint) per worker for all its calls."""
    def worker(comm, part):
        scores, labels, weight = part
        hint = SelectionHint(HINT_SLOTS.get(settings["quantile"], 0)) if kept else None
        workspace = Workspace() if kept else None
        outs, grads = [], []
        for step in range(rounds):
            margins = (scores + 0.3 * step * (labels - 0.4)).astype(np.float32)  # XGBoost hands float32 margins
            out = distributed_gradient_hessian(comm, margins, labels, sample_weight=weight, hint=hint,
                                               workspace=workspace, with_loss=False, **settings)
            outs.append((out.grad.copy(), out.hess.copy(), float(out.threshold)))
            grads.append(out.grad)
        return outs, all(np.shares_memory(grads[0], g) for g in grads[1:]) if scores.size else None
    return run_workers(worker, parts)[0]


@pytest.mark.parametrize("quantile", ["point", "kernel", "lower_mean"])
@pytest.mark.parametrize("objective,form", [("precision_at_recall", "fp"), ("precision_at_rate", "tp")])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("surrogate,logloss_weight", [("logistic", 0.0), ("hinge", 0.3)])
def test_kept_arrays_give_the_fresh_arrays_bits_call_after_call(quantile, objective, form, weighted, surrogate,
                                                                  logloss_weight):
    rng = np.random.default_rng(7)
    n = 900
    scores, labels = np.round(rng.normal(size=n), 2), (rng.random(n) < 0.3).astype(int)  # ties across workers
    weight = rng.integers(0, 4, n) * 1.0 if weighted else None
    cuts = [0, 250, 250, n]  # the middle worker has no row
    parts = [(scores[a:b], labels[a:b], None if weight is None else weight[a:b]) for a, b in zip(cuts, cuts[1:])]
    settings = dict(objective=objective, target=0.2 if form == "tp" else 0.8, form=form, quantile=quantile,
                    surrogate=surrogate, logloss_weight=logloss_weight, bandwidth=0.1)
    kept, fresh = _rounds(parts, settings, kept=True), _rounds(parts, settings, kept=False)
    for (kept_outs, reused), (fresh_outs, _) in zip(kept, fresh):
        assert reused in (True, None)  # the same memory every call (None: a worker without rows)
        for (grad, hess, theta), (fresh_grad, fresh_hess, fresh_theta) in zip(kept_outs, fresh_outs):
            assert theta == fresh_theta
            np.testing.assert_array_equal(grad, fresh_grad)
            np.testing.assert_array_equal(hess, fresh_hess)


@settings(max_examples=80, deadline=None)
@given(local=st.lists(st.integers(-6, 6), min_size=1, max_size=40),
       other=st.lists(st.integers(-6, 6), max_size=40), edges=st.tuples(st.integers(-7, 7), st.integers(-7, 7)),
       seed=st.integers(0, 2**16))
def test_the_merge_gives_each_sorted_value_its_tied_ranks_weight(local, other, edges, seed):
    # Reference: the search of every value in the window (the row-order search this merge replaced), by hand.
    values = np.sort(np.array(local, dtype=np.float64) / 2)
    everyone = np.concatenate([values, np.array(other, dtype=np.float64) / 2])
    low, high = min(edges) / 2, max(edges) / 2
    window = np.sort(everyone[(everyone >= low) & (everyone <= high)])
    if window.size == 0:  # the objective takes the point rule then, and never asks
        return
    rank_weights = np.random.default_rng(seed).random(window.size)
    weights = rank_weights[np.searchsorted(window, window, side="right") - 1]  # ties share their tied rank's weight
    expected = [weights[np.flatnonzero(window == v)[-1]] if v in window else 0.0 for v in values]
    np.testing.assert_array_equal(_row_weights(values, window, weights), expected)


@pytest.mark.skipif(importlib.util.find_spec("xgboost") is None, reason="needs xgboost")
def test_two_trainings_at_once_in_one_process_keep_apart(monkeypatch):
    # A threaded Dask worker can run two trainings with one objective object at once, each as its rank 0: each
    # thread gets its own hint and arrays (one shared workspace would mix their rows), and its own numbers.
    import xgboost as xgb

    from quantile_surrogate.boosting import adapters, xgboost_objective

    fn = xgboost_objective("precision_at_recall", 0.8, quantile="kernel")
    current = threading.local()
    monkeypatch.setattr(adapters, "xgboost_communicator", lambda: getattr(current, "comm", None))
    rng = np.random.default_rng(5)
    data = [(rng.normal(size=n).astype(np.float32), (rng.random(n) < 0.3).astype(float)) for n in (300, 500)]
    start = threading.Barrier(2)

    def training(comm, part):  # each thread: a world of one worker, rank 0, three rounds
        current.comm = comm
        scores, labels = part
        start.wait()
        return [fn(scores + np.float32(step), xgb.DMatrix(np.zeros((scores.size, 1)), label=labels))[0].copy()
                for step in range(3)]

    results = [None, None]

    def run(i):
        results[i] = run_workers(training, [data[i]])[0][0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fn._workers) == 2 and {rank for rank, _ in fn._workers} == {0}
    for (scores, labels), got in zip(data, results):
        alone = xgboost_objective("precision_at_recall", 0.8, quantile="kernel")
        current.comm = None
        for step, grad in enumerate(got):
            expected = alone(scores + np.float32(step), xgb.DMatrix(np.zeros((scores.size, 1)), label=labels))[0]
            np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)
