"""Rows of any shape a model takes (quantile_surrogate._utils.rows, .row_checks, and the row functions of .sparse)."""

import math

import pytest
import scipy.sparse as sp
import torch

from quantile_surrogate._utils.checks import DATA_NONFINITE_MESSAGE, LABELS_PER_ROW_MESSAGE, NOT_FLOAT_MESSAGE
from quantile_surrogate._utils.row_checks import (DICT_ROWS_MESSAGE, DICT_VALUE_MESSAGE, EMPTY_DICT_MESSAGE,
                                                  ROWS_NDIM_MESSAGE, check_rows)
from quantile_surrogate._utils.rows import RowDict, row_shape
from quantile_surrogate._utils.sparse import as_rows, cat_rows, row_chunks, slice_rows, take_rows
from tests._messages import exact, prefix


def test_a_row_dict_takes_slices_and_stacks_the_rows_of_every_value():
    X = as_rows({"image": torch.arange(24.0).reshape(6, 1, 2, 2), "ids": torch.arange(6)})
    assert isinstance(X, RowDict) and X.shape == (6,) and X.dtype == torch.float32
    taken = take_rows(X, torch.tensor([5, 0, 5]))
    assert taken["ids"].tolist() == [5, 0, 5] and torch.equal(taken["image"][1], X["image"][0])
    assert slice_rows(X, 4)["ids"].tolist() == [4, 5]
    assert [chunk["ids"].tolist() for chunk in row_chunks(X, 4)] == [[0, 1, 2, 3], [4, 5]]
    both = cat_rows(slice_rows(X, 0, 2), {"image": X["image"][:1], "ids": X["ids"][:1]})
    assert both["ids"].tolist() == [0, 1, 0] and both["image"].shape == (3, 1, 2, 2)
    assert row_shape(X) == {"image": (1, 2, 2), "ids": ()}
    assert RowDict(a=torch.zeros(2, dtype=torch.int64)).dtype == torch.get_default_dtype()
    assert RowDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.float64)).dtype == torch.float64


def test_dense_tensors_of_any_shape_take_rows_as_matrices_do():
    images = torch.arange(48.0).reshape(6, 2, 2, 2)
    rows = torch.tensor([3, 1])
    assert torch.equal(take_rows(images, rows), images[rows])
    assert torch.equal(cat_rows(images[:2], images[4:]), images[[0, 1, 4, 5]])
    assert as_rows(images) is images


def test_check_rows_passes_a_matrix_to_the_matrix_check_unchanged():
    y = torch.tensor([0, 1, 1])
    assert check_rows(torch.ones(3, 2), y).tolist() == [False, True, True]
    assert check_rows(as_rows(sp.csr_matrix(torch.ones(3, 2).numpy())), y).tolist() == [False, True, True]
    with pytest.raises(TypeError, match=exact(NOT_FLOAT_MESSAGE, name="X", dtype=torch.int64)):
        check_rows(torch.ones(3, 2, dtype=torch.int64), y)


def test_check_rows_takes_images_sequences_and_dicts():
    y = torch.tensor([0, 1, 1])
    assert check_rows(torch.zeros(3, 1, 4, 4), y).tolist() == [False, True, True]
    assert check_rows(torch.zeros(3, 5, 2), y.bool()).tolist() == [False, True, True]
    inputs = as_rows({"image": torch.zeros(3, 1, 4, 4), "ids": torch.zeros(3, 7, dtype=torch.int64),
                      "mask": torch.ones(3, 7, dtype=torch.bool), "scalar": torch.zeros(3)})
    assert check_rows(inputs, y).tolist() == [False, True, True]


def test_check_rows_messages():
    y = torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match=exact(ROWS_NDIM_MESSAGE, name="X", shape=(3,))):
        check_rows(torch.zeros(3), y)
    with pytest.raises(TypeError, match=exact(NOT_FLOAT_MESSAGE, name="X", dtype=torch.int64)):
        check_rows(torch.zeros(3, 1, 2, 2, dtype=torch.int64), y)
    images = torch.zeros(3, 1, 2, 2)
    images[2, 0, 1, 1] = math.nan
    with pytest.raises(ValueError, match=exact(DATA_NONFINITE_MESSAGE, name="X")):
        check_rows(images, y)
    with pytest.raises(ValueError, match=exact(DATA_NONFINITE_MESSAGE, name="X['image']")):
        check_rows(as_rows({"ids": torch.zeros(3, dtype=torch.int64), "image": images}), y)
    with pytest.raises(ValueError, match=exact(EMPTY_DICT_MESSAGE, name="X")):
        check_rows(as_rows({}), y)
    with pytest.raises(ValueError, match=exact(DICT_ROWS_MESSAGE, name="X", key="b", rows=2, first="a", expected=3)):
        check_rows(as_rows({"a": torch.zeros(3, 2), "b": torch.zeros(2, 2)}), y)
    with pytest.raises(TypeError, match=prefix(DICT_VALUE_MESSAGE, name="X", key="a")):
        check_rows(as_rows({"a": [[0.0]] * 3}), y)
    with pytest.raises(ValueError, match=prefix(DICT_VALUE_MESSAGE, name="X", key="a")):
        check_rows(as_rows({"a": torch.tensor(1.0)}), y)
    with pytest.raises(ValueError, match=exact(LABELS_PER_ROW_MESSAGE, name="y", name_x="X", n=3, shape=(2,))):
        check_rows(torch.zeros(3, 1, 2, 2), torch.tensor([0, 1]))
