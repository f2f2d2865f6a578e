"""Group codes given as arrays (quantile_surrogate._utils.group_checks): accepted forms and every refusal."""

import numpy as np
import pytest
import torch

from quantile_surrogate._utils.checks import GROUPS_NEGATIVE_MESSAGE, GROUPS_SHAPE_MESSAGE
from quantile_surrogate._utils.group_checks import GROUP_ARRAY_TYPE_MESSAGE, GROUP_CODE_RANGE_MESSAGE, check_group_array
from tests._messages import exact, prefix


@pytest.mark.parametrize("groups", [[0, 2, 1], np.array([0, 2, 1], dtype=np.int8), torch.tensor([0, 2, 1])])
def test_integer_codes_of_any_container_come_back_as_the_same_array(groups):
    out = check_group_array(groups, 3, n_groups=3)
    assert isinstance(out, np.ndarray) and out.tolist() == [0, 2, 1]


@pytest.mark.parametrize("groups, n, n_groups, error, match", [
    (["a", "b"], 2, None, TypeError, prefix(GROUP_ARRAY_TYPE_MESSAGE, name="groups")),
    ([0.0, 1.0], 2, None, TypeError, prefix(GROUP_ARRAY_TYPE_MESSAGE, name="groups")),
    ([True, False], 2, None, TypeError, prefix(GROUP_ARRAY_TYPE_MESSAGE, name="groups")),
    ([0, 1, 1], 2, None, ValueError, prefix(GROUPS_SHAPE_MESSAGE, name="groups")),
    ([0, -1], 2, None, ValueError, prefix(GROUPS_NEGATIVE_MESSAGE, name="groups")),
    ([0, 2], 2, 2, ValueError, exact(GROUP_CODE_RANGE_MESSAGE, name="groups", value=2, n_groups=2, last=1)),
])
def test_each_refusal_names_the_argument_and_the_fix(groups, n, n_groups, error, match):
    with pytest.raises(error, match=match):
        check_group_array(groups, n, n_groups=n_groups)
