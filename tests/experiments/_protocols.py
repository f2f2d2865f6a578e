"""A small version of the Ionosphere protocol for the runner's tests: two taus, two grid values, short training."""

import dataclasses

from quantile_surrogate.experiments import PROTOCOLS


def small_protocol():
    """Ionosphere with two values per grid (the 2nd and 5th), 8 AATP candidates, two taus and 60 epochs.

    The same protocol as ``reproduce --quick`` (cli/_reproduce.quick_protocol) with fewer taus and epochs.
    """
    ionosphere = PROTOCOLS["ionosphere"]
    grids = {family: (name, values[1::3]) for family, (name, values) in ionosphere.grids.items()}
    return dataclasses.replace(ionosphere, n_splits=3, grids=grids, aatp_candidates=8, taus=(0.05, 0.19),
                               max_epochs=60)
