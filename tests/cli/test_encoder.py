"""quantile_surrogate.cli._encoder.FrameEncoder equals ColumnTransformer + OneHotEncoder(handle_unknown="ignore")."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
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


def _texts(n=60, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array(["red", "blue", "green", "cat", "dog", "big", "small"])
    return pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["u", "v"], n).astype(object),
                         "t": [" ".join(rng.choice(words, 4)) for _ in range(n)]})


def test_text_columns_are_scikit_learn_tfidf_beside_standardised_numbers():
    frame = _texts()
    ours = FrameEncoder(numeric=["x"], categorical=["c"], text=["t"]).fit(frame)
    out = ours.transform(frame)
    assert sp.issparse(out) and out.format == "csr" and ours.sparse_
    tfidf = TfidfVectorizer(sublinear_tf=True).fit(frame["t"])
    reference = sp.hstack([(frame[["x"]].to_numpy() - frame["x"].mean()) / frame["x"].std(ddof=0),
                           OneHotEncoder().fit_transform(frame[["c"]]), tfidf.transform(frame["t"])]).toarray()
    np.testing.assert_allclose(out.toarray(), reference, rtol=1e-12, atol=1e-12)


def test_many_one_hot_columns_are_sparse_and_a_dense_output_can_be_forced():
    frame = pd.DataFrame({"x": np.arange(1200.0), "c": [f"id{i}" for i in range(1200)]})
    auto = FrameEncoder(numeric=["x"], categorical=["c"]).fit(frame)
    dense = FrameEncoder(numeric=["x"], categorical=["c"], sparse_output=False).fit(frame)
    assert sp.issparse(auto.transform(frame)) and isinstance(dense.transform(frame), np.ndarray)
    assert auto.transform(frame).shape == dense.transform(frame).shape == (1200, 1201)
    np.testing.assert_array_equal(auto.transform(frame).toarray()[:, 1:], dense.transform(frame)[:, 1:])


def test_an_all_empty_text_column_is_one_clear_error():
    frame = pd.DataFrame({"x": [1.0, 2.0], "t": ["", " "]})
    with pytest.raises(ValueError, match=r"text column 't' \(--text\) has no word in any row"):
        FrameEncoder(numeric=["x"], text=["t"]).fit(frame)
