"""Early stopping (quantile_surrogate.training.early_stopping)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from quantile_surrogate.training.early_stopping import EarlyStopping


def _brute_force_stops(values, patience):
    """The epochs at which "patience epochs in a row without a new maximum" holds."""
    improved = [e == 0 or v > max(values[:e]) for e, v in enumerate(values)]
    return [e for e in range(len(values)) if e + 1 >= patience and not any(improved[e + 1 - patience:e + 1])]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=25), st.integers(1, 4))
def test_early_stopping_keeps_the_first_best_value_and_stops_after_patience(values, patience):
    stopping = EarlyStopping(patience=patience)
    stops = []
    for epoch, value in enumerate(values):
        stopping.update([float(value)], epoch)
        if stopping.stop:
            stops.append(epoch)
    assert stopping.best == [max(values)]
    assert stopping.best_epoch == values.index(max(values))
    assert stops == _brute_force_stops(values, patience)


def test_early_stopping_breaks_ties_with_the_next_entry_and_needs_tol_on_the_first():
    stopping = EarlyStopping(patience=None)
    for epoch, value in enumerate([[0.5, -2.0], [0.5, -1.0], [0.4, 0.0], [0.5, -1.5]]):
        stopping.update(value, epoch)
    assert (stopping.best, stopping.best_epoch, stopping.bad_epochs, stopping.stop) == ([0.5, -1.0], 1, 2, False)
    with_tol = EarlyStopping(patience=2, tol=0.1)
    assert [with_tol.update([v], e) for e, v in enumerate([1.0, 1.05, 1.2, 1.25])] == [True, False, True, False]
    assert with_tol.best_epoch == 2 and not with_tol.stop
