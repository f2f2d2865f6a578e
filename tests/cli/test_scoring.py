"""quantile_surrogate.cli._scoring: the columns a saved model reads, its groups and its scores, chunk by chunk.

Errors name the file and the row in the file (not in the chunk): a group not seen in training, a
value the model cannot use, a row that gets no score.
"""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quantile_surrogate.cli import _scoring
from quantile_surrogate.cli._file_io import InputError

from tests._messages import exact
from tests.cli.conftest import assert_refused


def saved_model(groups="region", labels=("east", "west"), decision_function=None):
    """The part of a SavedModel that scoring reads."""
    return SimpleNamespace(groups=groups, group_labels=np.array(labels, dtype=object),
                           schema={"numeric": ["x"], "categorical": ["colour"]},
                           decision_function=decision_function)


def test_model_columns_are_features_then_groups_then_extra():
    assert _scoring.model_columns(saved_model(), "id") == ["x", "colour", "region", "id"]
    assert _scoring.model_columns(saved_model(groups=None)) == ["x", "colour"]


def test_an_unseen_group_names_its_row_in_the_file():
    chunk = pd.DataFrame({"region": ["west", "east", "north", "west"]})
    saved = saved_model()
    seen = chunk.iloc[[0, 1, 3]]
    np.testing.assert_array_equal(_scoring.chunk_groups(saved, seen, "d.csv", 0), seen.region.to_numpy())
    assert _scoring.chunk_groups(saved_model(groups=None), chunk, "d.csv", 0) is None
    with pytest.raises(InputError, match=exact(_scoring.UNSEEN_GROUP_MESSAGE, path="d.csv", column="region",
                                               value="'north'", row=100 + 3, known="'east', 'west'")):
        _scoring.chunk_groups(saved, chunk, "d.csv", offset=100)
    many = saved_model(labels=[f"g{i}" for i in range(12)])
    known = ", ".join(f"'g{i}'" for i in range(10)) + ", ..."
    with pytest.raises(InputError, match=exact(_scoring.UNSEEN_GROUP_MESSAGE, path="d.csv", column="region",
                                               value="'west'", row=1, known=known)):
        _scoring.chunk_groups(many, chunk, "d.csv", offset=0)


def test_a_value_the_model_refuses_is_an_input_error_on_one_line():
    def refuse(X):
        raise ValueError("x is too far\n  from the training range")

    chunk = pd.DataFrame({"x": [1.0], "colour": ["red"]})
    with pytest.raises(InputError, match=exact(_scoring.UNSCORABLE_MESSAGE, path="d.csv",
                                               reason="x is too far from the training range")):
        _scoring.chunk_scores(saved_model(groups=None, decision_function=refuse), chunk, "d.csv", 0)


@pytest.mark.parametrize("chunk_rows", [None, 37])
def test_a_row_the_model_cannot_score_is_an_error_not_a_nan(fitted, csv, tmp_path, capsys, monkeypatch, chunk_rows):
    """The row named is the row in the file, also when it is in the third chunk (rows 75 to 111 of 37-row chunks)."""
    from quantile_surrogate.cli import _file_io
    from quantile_surrogate.cli.model_file import SavedModel

    model, _ = fitted
    real = SavedModel.decision_function

    def overflowing(self, X):  # what inf - inf in the first layer gives for a row of 1e308 values
        score = real(self, X)
        score[X.x1.to_numpy() > 3] = np.nan
        return score

    frame = pd.read_csv(csv)
    frame.loc[:79, "x1"] = frame.x1[:80].clip(upper=3.0)  # the first row that gets a NaN is past the second chunk
    data = tmp_path / "late.csv"
    frame.to_csv(data, index=False)
    row = int(np.flatnonzero(frame.x1.to_numpy() > 3)[0]) + 1
    assert 2 * 37 < row <= 3 * 37 and row != 1 + (row - 1) % 37  # the row in the chunk would be another number
    monkeypatch.setattr(SavedModel, "decision_function", overflowing)
    if chunk_rows is not None:
        monkeypatch.setattr(_file_io, "CHUNK_ROWS", chunk_rows)
    message = _scoring.NAN_SCORE_MESSAGE.format(path=data, row=row)
    assert_refused(tmp_path, capsys, ["predict", model, data, "--out", tmp_path / "p.csv"], 1, message)
    assert_refused(tmp_path, capsys, ["evaluate", model, data, "--out-dir", tmp_path / "r"], 1, message)
