"""quantile_surrogate.cli._codecs: plain JSON values, exactly and back; what cannot be stored is refused by name.

The round trip of whole fitted models through a model file: test_model_file.py.
"""

import json

import numpy as np
import pytest

from quantile_surrogate.cli import _codecs

from tests._messages import exact


def test_json_values_round_trip_exactly():
    values = {"f64": np.array([0.1, np.pi, -1e-300, np.nan, np.inf]), "f32": np.float32([1.1, 2.2]).reshape(2, 1),
              "i": np.arange(3, dtype=np.int64), "b": np.array([True, False]), "o": np.array(["a", 3], dtype=object),
              "t": (1, (2, 3)), "l": [1.5, None, "x"], "n": {"k": np.int64(2)}, "s": np.float64(0.30000000000000004)}
    back = _codecs.from_json(json.loads(json.dumps(_codecs.to_json(values, "x"))))
    for key in ("f64", "f32", "i", "b", "o"):
        np.testing.assert_array_equal(back[key], values[key])
        assert back[key].dtype == values[key].dtype and back[key].shape == values[key].shape
    assert back["t"] == (1, (2, 3)) and back["l"] == [1.5, None, "x"] and back["n"] == {"k": 2}
    assert back["s"] == 0.30000000000000004 and type(back["n"]["k"]) is int



def test_a_value_json_cannot_hold_is_refused_naming_where_it_is():
    with pytest.raises(TypeError, match=exact(_codecs.CANNOT_STORE_VALUE_MESSAGE, where="a parameter['a']",
                                              type_name="object")):
        _codecs.to_json({"a": object()}, "a parameter")
    with pytest.raises(TypeError, match=exact(_codecs.CANNOT_STORE_VALUE_MESSAGE, where="a parameter",
                                              type_name="set")):
        _codecs.to_json({1, 2}, "a parameter")


def test_an_entry_of_another_kind_or_class_is_not_rebuilt():
    with pytest.raises(ValueError, match=exact(_codecs.UNKNOWN_KIND_MESSAGE, kind="function")):
        _codecs.from_json({"__kind__": "function", "data": "os.system"})
    with pytest.raises(KeyError):  # only the classes of CODECS: nothing in a file names code to run
        _codecs.load({"class": "posix.system", "params": {}}, _codecs.Payload())
    with pytest.raises(TypeError, match=exact(_codecs.CANNOT_STORE_CLASS_MESSAGE, name="dict",
                                              classes=", ".join(_codecs.CODECS))):
        _codecs.dump({}, _codecs.Payload())
