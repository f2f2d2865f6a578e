"""The previous round's threshold as the next round's first histogram (boosting._hint).

A window changes how many reductions a call takes, never its numbers: the selection from any window
(missing the data, of radius 0, over every float) is the sorted value (by weight: the first value
reaching the mass), and successive calls of the distributed objective with hints equal the single
machine's, bit for bit for the point estimator, while taking 3 reductions a call instead of 4 or
more (with weights: fewer in all). Workers whose memories differ fall back to the span together.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.boosting import objective_gradient_hessian, xgboost_objective
from quantile_surrogate.boosting._collective import (SELECTION_BINS, float_keys, key_values, select_masses,
                                                     select_ranks, snap_or_gather)
from quantile_surrogate.boosting._distributed import distributed_gradient_hessian
from quantile_surrogate.boosting._hint import HINT_SLOTS, SelectionHint, hint_counts, hint_start
from quantile_surrogate.boosting._workspace import Workspace

from ._fake_collective import run_workers

FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), bins=st.sampled_from([4, 16, SELECTION_BINS]), gather=st.sampled_from([0, 6, 4096]))
def test_selection_from_any_window_is_the_sorted_value(data, bins, gather):
    pool = data.draw(st.lists(FLOATS, min_size=1, max_size=12))
    values = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=80)))
    first, second = sorted(data.draw(st.lists(st.integers(0, values.size), min_size=2, max_size=2)))
    parts = [np.sort(values[:first]), np.sort(values[first:second]), np.sort(values[second:])]
    ranks = sorted(set(data.draw(st.lists(st.integers(1, values.size), min_size=1, max_size=3))))
    hint = SelectionHint(len(ranks))
    hint.windows = [data.draw(st.one_of(st.none(), st.tuples(FLOATS, st.floats(0, 1e308), FLOATS))) for _ in ranks]
    windows = hint.edges(bins)

    def worker(comm, part):
        keys = float_keys(part)
        span = (int(float_keys([values.min()])[0]), int(float_keys([values.max()])[0]))
        local = np.concatenate([hint_counts(keys, edges, bins) for edges in windows])
        summed = comm.allreduce(local, "sum").reshape(len(ranks), bins + 2)
        states = [(span[0], span[1], 0)] * len(ranks)
        started = [(i, (*hint_start(counts, edges, rank, span)[0], rank))
                   for i, (edges, counts, rank) in enumerate(zip(windows, summed, ranks)) if edges is not None]
        if started:
            for (i, _), state in zip(started, snap_or_gather(comm, keys, [entry for _, entry in started], gather)):
                states[i] = state
        return key_values(select_ranks(comm, keys, ranks, span, bins=bins, gather=gather, states=states))

    results, group = run_workers(worker, parts)
    for result in results:
        np.testing.assert_array_equal(result, np.sort(values + 0.0)[np.array(ranks) - 1])
    assert group.logs[0] == group.logs[1] == group.logs[2]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), window=st.one_of(st.none(), st.tuples(FLOATS, st.floats(0, 1e308), FLOATS)))
def test_weighted_selection_from_any_window_is_the_first_value_reaching_the_mass(data, window):
    # Weights in the window's bins (each worker's sums, or its counts where it has no weights), masses never gathered;
    # without a window, select_masses from the span alone.
    pool = data.draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=12))
    values = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=60)))
    weights = np.array(data.draw(st.lists(st.integers(1, 5), min_size=values.size, max_size=values.size)), float)
    cut = data.draw(st.integers(0, values.size))
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])  # integers: exact in any order
    masses = sorted(set(data.draw(st.lists(st.integers(1, int(cumulative[-1])), min_size=1, max_size=3))))
    parts = []
    for rows in (np.arange(cut), np.arange(cut, values.size)):
        local = rows[np.argsort(values[rows], kind="stable")]
        parts.append((values[local], weights[local]))
    hint = SelectionHint(len(masses))
    hint.windows = [window] * len(masses)
    windows = hint.edges(SELECTION_BINS)

    def worker(comm, part):
        keys, prefix = float_keys(part[0]), np.concatenate([[0.0], np.cumsum(part[1])])
        span = (int(float_keys([values.min()])[0]), int(float_keys([values.max()])[0]))
        local = np.concatenate([hint_counts(keys, edges, SELECTION_BINS, prefix) for edges in windows])
        summed = comm.allreduce(local, "sum").reshape(len(masses), SELECTION_BINS + 2)
        states = [(span[0], span[1], 0)] * len(masses)
        if window is not None:
            entries = [(*hint_start(counts, edges, float(mass), span)[0], float(mass))
                       for edges, counts, mass in zip(windows, summed, masses)]
            states = snap_or_gather(comm, keys, entries, gather=-1)
        return key_values(select_masses(comm, keys, prefix, [float(m) for m in masses], span, states=states))

    results, group = run_workers(worker, parts)
    expected = (values[order] + 0.0)[np.searchsorted(cumulative, masses, side="left")]
    for result in results:
        np.testing.assert_array_equal(result, expected)
    assert group.logs[0] == group.logs[1]


def _rounds(quantile, hints, rounds=8, n=60_000, seed=0, weighted=False, **settings):
    """The objective over ``rounds`` calls on 2 workers, the scores drifting as under boosting; per call the
    workers' results, the single machine's and rank 0's reduction count. ``weighted``: weights 1 to 3 on the
    first worker's rows, none on the second's."""
    rng = np.random.default_rng(seed)
    scores, labels = rng.normal(size=n), (rng.random(n) < 0.1).astype(int)
    weight = np.concatenate([rng.integers(1, 4, n // 2), np.ones(n - n // 2)]) if weighted else None
    out = []
    for _ in range(rounds):
        parts = [(scores[:n // 2], labels[:n // 2], None if weight is None else weight[:n // 2]),
                 (scores[n // 2:], labels[n // 2:], None)]
        results, group = run_workers(lambda comm, part: distributed_gradient_hessian(
            comm, *part[:2], sample_weight=part[2], quantile=quantile,
            hint=None if hints is None else hints[comm.rank], **settings), parts)
        assert group.logs[0] == group.logs[1]
        out.append((results, objective_gradient_hessian(scores, labels, quantile=quantile, sample_weight=weight,
                                                        **settings), len(group.logs[0])))
        if hints is not None:
            assert hints[0].windows == hints[1].windows  # computed from reduced numbers only: the same everywhere
        scores = scores + 0.05 * rng.normal(size=n) + 0.02
    return out


@pytest.mark.parametrize("quantile,steady", [("point", 3), ("kernel", 5)])
def test_successive_calls_with_hints_equal_the_single_machine_in_fewer_reductions(quantile, steady):
    settings = dict(objective="precision_at_recall", target=0.9, bandwidth=0.05)
    hinted = _rounds(quantile, [SelectionHint(HINT_SLOTS[quantile]) for _ in range(2)], **settings)
    plain = _rounds(quantile, None, **settings)
    for (results, reference, _), (plain_results, _, _) in zip(hinted, plain):
        for result, other in zip(results, plain_results):
            if quantile == "point":
                assert float(result.threshold) == float(reference.threshold)
            np.testing.assert_allclose(result.threshold, reference.threshold, rtol=0, atol=1e-12)
            assert float(result.threshold) == float(other.threshold)  # the same numbers with or without a hint
            np.testing.assert_array_equal(result.grad, other.grad)
            np.testing.assert_array_equal(result.hess, other.hess)
        grad = np.concatenate([r.grad for r in results])
        np.testing.assert_allclose(grad, reference.grad, rtol=1e-12, atol=1e-12 * max(1, np.abs(reference.grad).max()))
    assert [count for _, _, count in hinted][-4:] == [steady] * 4
    assert min(count for _, _, count in plain) > steady


@pytest.mark.parametrize("quantile", ["point", "kernel"])
def test_weighted_calls_with_hints_equal_the_single_machine_in_fewer_reductions(quantile):
    # Weights on one worker only: every worker's window bins carry weights (its counts where it has none).
    settings = dict(objective="precision_at_recall", target=0.9, bandwidth=0.05, weighted=True)
    hinted = _rounds(quantile, [SelectionHint(HINT_SLOTS[quantile]) for _ in range(2)], **settings)
    plain = _rounds(quantile, None, **settings)
    for (results, reference, _), (plain_results, _, _) in zip(hinted, plain):
        for result, other in zip(results, plain_results):
            np.testing.assert_allclose(result.threshold, reference.threshold, rtol=0, atol=1e-12)
            assert float(result.threshold) == float(other.threshold)
            np.testing.assert_array_equal(result.grad, other.grad)
            np.testing.assert_array_equal(result.hess, other.hess)
    # Masses are never gathered: the window's bin ends the selection when it holds one value, else rounds follow.
    assert sum(count for _, _, count in hinted[2:]) < sum(count for _, _, count in plain[2:])


def test_workers_whose_windows_differ_start_from_the_span_together():
    hints = [SelectionHint(1) for _ in range(2)]
    warm = _rounds("point", hints, rounds=3)
    hints[1] = SelectionHint(1)  # one worker lost its memory (a restarted process)
    fresh = _rounds("point", hints, rounds=1)
    plain = _rounds("point", None, rounds=1)
    assert fresh[0][2] == plain[0][2] > warm[-1][2]  # the span's reductions, on both workers (logs equal)
    assert float(fresh[0][0][0].threshold) == float(fresh[0][1].threshold)
    assert hints[0].windows == hints[1].windows  # and they agree again


def test_window_rule():
    hint = SelectionHint(1)
    span = tuple(int(k) for k in float_keys([-4.0, 6.0]))
    key = int(float_keys([1.0])[0])
    hint.update(0, key, span, 1000, None)
    assert hint.windows == [(1.0, 0.01, 1.0)]  # from the span: half a value bin of it, no step yet
    hint.windows = [(0.5, 0.1, 0.75)]
    hint.update(0, key, span, 1000, "outside")
    assert hint.windows == [(1.25, 1.0, 1.0)]  # max(2 r, 2 |v - c|), centred on v plus the last step
    hint.windows = [(1.0, 1.0, 1.0)]
    hint.update(0, key, span, 1000, "large")
    assert hint.windows == [(1.0, 0.25, 1.0)]
    hint.windows = [(0.875, 0.25, 1.0)]
    hint.update(0, key, span, 1000, "inside")
    assert hint.windows == [(1.0, 0.25, 1.0)]  # max(r, 2 * 0.125)
    hint.windows = [(0.75, 0.25, 1.5)]
    hint.update(0, key, span, 1000, "inside")
    assert hint.windows == [(0.5, 0.5, 1.0)]


def test_the_objective_pickles_without_its_workers_state():
    fn = xgboost_objective(quantile="point")
    fn._workers[0] = (SelectionHint(1), Workspace())
    copy = pickle.loads(pickle.dumps(fn))
    assert copy._workers == {} and copy == fn and fn._workers
