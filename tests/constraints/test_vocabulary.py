"""The constraint vocabulary: names, aliases and one clear error for a bad constraint."""

import re

import pytest
import torch

from quantile_surrogate.constraints import ConstraintSet, gap, rate
from quantile_surrogate.constraints._lagrangian import GROUPS_NEEDED_MESSAGE, N_GROUPS_MESSAGE
from quantile_surrogate.constraints._vocabulary import PRECISION_CEILING_MESSAGE, PRECISION_GAP_MESSAGE


def test_vocabulary_names_aliases_and_bad_bounds():
    assert rate("fpr", at_most=0.05).rate == "false_positive_rate"
    assert gap("selection_rate", at_most=0.1).name == "positive_rate gap <= 0.1"
    with pytest.raises(ValueError, match="exactly one bound"):
        rate("recall")
    with pytest.raises(ValueError, match="exactly one bound"):
        rate("recall", at_least=0.1, at_most=0.2)
    with pytest.raises(ValueError, match=r"`at_most` must be a rate in \[0, 1\]"):
        gap("recall", at_most=1.5)
    with pytest.raises(ValueError, match="`rate` must be one of"):
        rate("recall_at_k", at_least=0.5)
    assert rate("ppv", at_least=0.5) == rate("precision", at_least=0.5)
    with pytest.raises(ValueError, match=re.escape(PRECISION_GAP_MESSAGE)):
        gap("ppv", at_most=0.1)
    with pytest.raises(ValueError, match=re.escape(PRECISION_CEILING_MESSAGE.format(value=0.9))):
        rate("precision", at_most=0.9)
    with pytest.raises(ValueError, match=N_GROUPS_MESSAGE.format(value=None).split(";")[0]):
        ConstraintSet([gap("recall", at_most=0.05)])
    with pytest.raises(TypeError, match="item 0 is str"):
        ConstraintSet(["recall <= 0.1"])
    with pytest.raises(ValueError, match="`surrogate` must be one of"):
        ConstraintSet([rate("fpr", at_most=0.1)], surrogate="squared")
    cs = ConstraintSet([gap("recall", at_most=0.05)], n_groups=2)
    with pytest.raises(ValueError, match="measured per group"):
        cs.penalty(torch.zeros(4, dtype=torch.float64), torch.tensor([1, 0, 1, 0]), 0.0)
    assert "pass `groups`" in GROUPS_NEEDED_MESSAGE
