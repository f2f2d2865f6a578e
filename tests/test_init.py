"""The package root: its public names, and the kept import paths beside it (re-exports of one home each)."""

import importlib

import pytest

import quantile_surrogate

KEPT_PATHS = {
    "quantile_surrogate.thresholds": "quantile_surrogate.objectives.thresholds",
    "quantile_surrogate.guarantees": "quantile_surrogate.objectives.guarantees",
    "quantile_surrogate.bootstrap": "quantile_surrogate.objectives.bootstrap",
    "quantile_surrogate.modules": "quantile_surrogate.losses.modules",
}


@pytest.mark.parametrize("path, home", sorted(KEPT_PATHS.items()))
def test_a_kept_import_path_is_the_same_objects_as_their_home(path, home):
    kept, origin = importlib.import_module(path), importlib.import_module(home)
    assert kept.__all__ and set(kept.__all__) <= set(origin.__all__)
    for name in kept.__all__:
        assert getattr(kept, name) is getattr(origin, name), name  # a re-export, never a copy


def test_every_public_name_of_the_root_is_defined_in_a_folder_below_it():
    # The root and the kept paths only re-export: each name has its one home in a folder.
    for name in quantile_surrogate.__all__:
        obj = getattr(quantile_surrogate, name)
        home = obj.__name__ if isinstance(obj, type(quantile_surrogate)) else obj.__module__
        assert home != "quantile_surrogate" and home not in KEPT_PATHS, (name, home)
    assert quantile_surrogate.TiedScoresWarning is quantile_surrogate.objectives.TiedScoresWarning
