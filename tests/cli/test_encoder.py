"""quantile_surrogate.cli._encoder.FrameEncoder equals ColumnTransformer + OneHotEncoder(handle_unknown="ignore")."""

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder

from quantile_surrogate.cli._encoder import FrameEncoder


def test_same_columns_as_scikit_learn_with_unseen_categories():
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"x": rng.normal(size=50), "c": rng.choice(["b", "a", "z", "(missing)"], 50).astype(object),
                          "d": rng.choice(["1", "10", "2"], 50).astype(object), "y": rng.normal(size=50)})
    test = train.copy()
    test.loc[::5, "c"] = "never seen"
    reference = ColumnTransformer([("numeric", "passthrough", ["x", "y"]),
                                   ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                    ["c", "d"])]).fit(train)
    ours = clone(FrameEncoder(numeric=["x", "y"], categorical=["c", "d"])).fit(train)
    for frame in (train, test):
        np.testing.assert_array_equal(ours.transform(frame), reference.transform(frame))
    assert [list(v) for v in ours.categories_.values()] == [list(v) for v in reference.named_transformers_[
        "categorical"].categories_]


def test_only_numeric_or_only_categorical():
    frame = pd.DataFrame({"x": [1.0, 2.0], "c": ["u", "v"]})
    assert FrameEncoder(numeric=["x"]).fit(frame).transform(frame).tolist() == [[1.0], [2.0]]
    assert FrameEncoder(categorical=["c"]).fit(frame).transform(frame).tolist() == [[1.0, 0.0], [0.0, 1.0]]
