"""quantile_surrogate.datasets: shapes, labels, checksums, seeds, and the messages that say what to pass."""

import hashlib

import numpy as np
import pytest

from quantile_surrogate import datasets as D

from tests._messages import exact


def test_ionosphere():
    X, y = D.load_ionosphere()
    assert X.shape == (351, 34) and y.sum() == 225
    assert np.all(X[:, 1] == 0)
    assert D.load_ionosphere(positive="b")[1].sum() == 126
    with pytest.raises(ValueError, match=exact(D.POSITIVE_MESSAGE, value="good")):
        D.load_ionosphere(positive="good")


def test_housing_chas_label_removes_the_column():
    X, y = D.load_housing()
    assert X.shape == (506, 13) and y.sum() == 35
    raw, none = D.load_housing(label="raw")
    assert none is None and raw.shape == (506, 14)
    np.testing.assert_array_equal(np.delete(raw, 3, axis=1), X)
    with pytest.raises(ValueError, match=exact(D.LABEL_MESSAGE, value="medv")):
        D.load_housing(label="medv")


def test_cover_loads_lazily_with_checksum():
    X, y = D.load_cover()
    assert X.shape == (286048, 10) and y.sum() == 2747


def test_checksum_mismatch_is_reported(tmp_path, monkeypatch):
    bad = tmp_path / "10_cover.npz"
    bad.write_bytes(b"not the file")
    digest = hashlib.sha256(b"not the file").hexdigest()
    with pytest.raises(OSError, match=exact(D.CHECKSUM_MESSAGE, path=bad, digest=digest, expected=D.SHA256[bad.name])):
        D.load_cover(data_home=tmp_path)


def test_missing_cover_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "__file__", str(tmp_path / "a" / "b" / "c" / "d.py"))
    monkeypatch.delenv(D.DATA_HOME_VARIABLE, raising=False)
    searched = str(tmp_path / "data" / "cover")  # the source checkout's data/cover/, three folders above
    with pytest.raises(FileNotFoundError, match=exact(D.COVER_NOT_FOUND_MESSAGE, searched=searched,
                                                      variable="QUANTILE_SURROGATE_DATA")):
        D.cover_path()


def test_gaussian_mixture_is_seeded_with_the_prior():
    X1, y1 = D.make_gaussian_mixture(5000, random_state=3)
    X2, y2 = D.make_gaussian_mixture(5000, random_state=3)
    np.testing.assert_array_equal(X1, X2)
    assert abs(y1.mean() - 0.1) < 0.015
    assert not np.array_equal(X1, D.make_gaussian_mixture(5000, random_state=4)[0])
    with pytest.raises(ValueError, match=exact(D.PRIOR_MESSAGE, value=1.0)):
        D.make_gaussian_mixture(prior=1.0)
