"""quantile_surrogate.experiments.paper: the protocols, and the paper's tables keyed by the taus printed."""

import dataclasses

import pytest

from quantile_surrogate.experiments import paper
from quantile_surrogate.experiments.paper import PAPER_TABLES, PROTOCOLS


@pytest.mark.parametrize("dataset", ["ionosphere", "housing"])
def test_every_printed_row_has_one_value_per_tau(dataset):
    # PAPER_TABLES zips the printed values with the protocol's taus: a row one short would lose a tau silently
    for method, values in paper._PRINTED_TABLES[dataset].items():
        assert len(values) == len(PROTOCOLS[dataset].taus), method
        assert list(PAPER_TABLES[dataset][method]) == list(PROTOCOLS[dataset].taus)


def test_table_entries_as_printed_in_the_paper():
    assert PAPER_TABLES["ionosphere"]["Q3"][0.05] == (0.98, 0.07)
    assert PAPER_TABLES["ionosphere"]["LR"][0.19] == (0.89, 0.04)
    assert PAPER_TABLES["housing"]["AATP"][0.02] == (0.23, 0.10)
    assert "cover" not in PAPER_TABLES  # the KDD Cup figure prints no numbers


def test_methods_expand_the_quantile_family_into_its_two_columns():
    assert PROTOCOLS["cover"].methods == ("LR", "Kar", "Q1", "Q3")
    assert dataclasses.replace(PROTOCOLS["housing"], families=("Q", "Eban")).methods == ("Q1", "Q3", "Eban")
    with pytest.raises(dataclasses.FrozenInstanceError):
        PROTOCOLS["ionosphere"].n_splits = 3
