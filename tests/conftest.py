"""Fixtures shared by test modules of several folders."""

import pytest
import sklearn


@pytest.fixture
def routing():
    """scikit-learn's metadata routing on for one test, off again afterwards."""
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)
