"""quantile_surrogate.cli.model_file: JSON + tensors + checksum; no pickle is ever loaded."""

import functools
import hashlib
import io
import json
import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.pipeline import Pipeline

from quantile_surrogate import __version__
from quantile_surrogate.cli import _codecs, _model_checks, model_file
from quantile_surrogate.cli._encoder import FrameEncoder
from quantile_surrogate.cli._file_io import NOT_REGULAR_FILE_MESSAGE, InputError
from quantile_surrogate.cli.model_file import MAGIC, SavedModel, load_model, save_model
from quantile_surrogate.estimators import GuaranteedThresholdClassifier, QuantileClassifier
from quantile_surrogate.estimators.boosted import QuantileBoostingClassifier

from tests._messages import exact, prefix


class Marker:
    """Unpickling this creates a file: the stand-in for code an attacker puts in a model file."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def make_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    frame = pd.DataFrame({"x1": rng.normal(size=n) + 2.0 * y, "x2": rng.normal(size=n) * 1e3,
                          "colour": np.where(rng.random(n) < 0.5 + 0.3 * y, "red", rng.choice(["blue", "green"], n))})
    return frame, y.astype(np.int64)


@functools.lru_cache(maxsize=None)
def fitted_once(kind, delta=None):
    """:func:`fitted`, once per module run (boosted fits take seconds); callers must not change the result."""
    return fitted(kind, delta)


def fitted(kind="linear", delta=None):
    frame, y = make_frame()
    if kind in ("lightgbm", "xgboost"):
        classifier = QuantileBoostingClassifier(target=0.9, backend=kind, n_estimators=10, random_state=0)
    else:
        classifier = QuantileClassifier(target=0.9, max_epochs=3, random_state=0,
                                        hidden_layer_sizes=(5, 3) if kind == "mlp" else ())
    model = Pipeline([("preprocess", FrameEncoder(numeric=["x1", "x2"], categorical=["colour"])),
                      ("classifier", classifier)])
    if delta is not None:
        model = GuaranteedThresholdClassifier(model, constraint="recall", target=0.8, delta=delta, random_state=0)
    model.fit(frame, y)
    saved = SavedModel(model=model, label="y", classes=["no", "yes"], schema={"numeric": ["x1", "x2"],
                       "categorical": ["colour"]}, objective="precision_at_recall", target=0.9, model_kind=kind,
                       trained_on="data.csv", n_rows=len(y), delta=delta, calibration_size=0.3 if delta else None)
    return saved, frame


@pytest.fixture(scope="module")
def linear_file(tmp_path_factory):
    saved, frame = fitted()
    path = tmp_path_factory.mktemp("model") / "model.qs"
    save_model(saved, path)
    return path, saved, frame


@pytest.mark.parametrize("kind, delta", [("linear", None), ("mlp", None), ("linear", 0.2), ("lightgbm", None),
                                         ("xgboost", None), ("lightgbm", 0.2)])
def test_round_trip_gives_the_same_scores_and_attributes(tmp_path, kind, delta):
    saved, frame = fitted_once(kind, delta)
    save_model(saved, tmp_path / "m.qs")
    loaded = load_model(tmp_path / "m.qs")
    new = frame.assign(colour=np.where(np.arange(len(frame)) % 7 == 0, "purple", frame.colour))  # unseen category
    for X in (frame, new):
        np.testing.assert_array_equal(loaded.decision_function(X), saved.decision_function(X))
    assert type(loaded.model) is type(saved.model)
    for field in ("label", "classes", "schema", "objective", "target", "model_kind", "n_rows", "delta", "version"):
        assert getattr(loaded, field) == getattr(saved, field)
    inner = saved.model if delta is None else saved.model.estimator_
    back = loaded.model if delta is None else loaded.model.estimator_
    clf, clf_back = inner.named_steps["classifier"], back.named_steps["classifier"]
    assert clf_back.get_params() == clf.get_params() and type(clf_back) is type(clf)
    assert clf_back.threshold_ == clf.threshold_ and clf_back.n_features_in_ == clf.n_features_in_
    np.testing.assert_array_equal(clf_back.classes_, clf.classes_)
    for name in ("coef_", "intercept_") if kind == "linear" else ():
        np.testing.assert_array_equal(getattr(clf_back, name), getattr(clf, name))
    if delta is not None:
        assert loaded.model.threshold_ == saved.model.threshold_
        assert loaded.model.n_calibration_ == saved.model.n_calibration_


def test_a_booster_is_stored_in_its_own_text_format(tmp_path):
    saved, _ = fitted_once("lightgbm")
    save_model(saved, tmp_path / "m.qs")
    data = (tmp_path / "m.qs").read_bytes()
    assert b"pickle" not in data and b"tree\nversion=v4" in data  # LightGBM's model text, readable as such
    saved, _ = fitted_once("xgboost")
    save_model(saved, tmp_path / "x.qs")
    assert b'{"learner":' in (tmp_path / "x.qs").read_bytes()  # XGBoost's JSON


def test_loading_does_not_move_the_torch_seed(linear_file):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    load_model(linear_file[0])
    assert torch.equal(torch.get_rng_state(), state)


def write_model_file(path, sections, header=None, checksum=True):
    payload = b"".join(sections.values())
    header = {"format": model_file.FORMAT, "quantile_surrogate": __version__,
              "sha256": hashlib.sha256(payload).hexdigest() if checksum else "0" * 64,
              "sections": [[name, len(data)] for name, data in sections.items()], **(header or {})}
    path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)


def valid_sections(linear_file):
    data = linear_file[0].read_bytes()
    end = data.index(b"\n", len(MAGIC))
    header = json.loads(data[len(MAGIC):end])
    payload, sections, start = data[end + 1:], {}, 0
    for name, size in header["sections"]:
        sections[name], start = payload[start:start + size], start + size
    return sections


@pytest.mark.parametrize("how", ["raw pickle", "torch.save of an object"])
def test_a_malicious_file_with_a_valid_checksum_runs_no_code(tmp_path, linear_file, how):
    marker = tmp_path / "pwned"
    assert pickle.loads(pickle.dumps(Marker(tmp_path / "live"))) and (tmp_path / "live").exists()  # the payload is live
    if how == "raw pickle":
        evil = pickle.dumps({"classifier.model_.weight": Marker(marker)})
    else:
        buffer = io.BytesIO()
        torch.save({"classifier.model_.weight": Marker(marker)}, buffer)
        evil = buffer.getvalue()
    sections = {**valid_sections(linear_file), "tensors": evil}
    write_model_file(tmp_path / "evil.qs", sections)
    with pytest.raises(InputError, match=prefix(model_file.NOT_REBUILT_MESSAGE, path=tmp_path / "evil.qs")):
        load_model(tmp_path / "evil.qs")
    assert not marker.exists()


def test_the_old_pickle_format_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "pwned"
    old = tmp_path / "old.qs"
    header = json.dumps({"quantile_surrogate": __version__}).encode()
    old.write_bytes(MAGIC + header + b"\n" + pickle.dumps(Marker(marker)))
    with pytest.raises(InputError, match=exact(model_file.PICKLE_FORMAT_MESSAGE, path=old)):
        load_model(old)
    assert not marker.exists()


@pytest.mark.parametrize("entry", [{"class": "posix.system", "params": {}}, {"class": "Pipeline"}, "nonsense"])
def test_a_description_naming_other_classes_is_refused(tmp_path, linear_file, entry):
    sections = valid_sections(linear_file)
    description = json.loads(sections["description"])
    description["model"] = entry
    write_model_file(tmp_path / "other.qs", {**sections, "description": json.dumps(description).encode()})
    with pytest.raises(InputError, match=prefix(model_file.NOT_REBUILT_MESSAGE, path=tmp_path / "other.qs")):
        load_model(tmp_path / "other.qs")


def test_every_flipped_byte_is_refused_or_harmless(tmp_path, linear_file):
    """A bit flip anywhere: the load fails with our message, or (in a header digit) gives the same scores."""
    path, saved, frame = linear_file
    data = path.read_bytes()
    end = data.index(b"\n", len(MAGIC))
    reference = saved.decision_function(frame)
    harmless = []
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x04
        try:
            loaded = model_file._decode(path, bytes(flipped))  # load_model without the file system, for speed
        except InputError:
            continue
        assert position <= end, f"a flip in the payload at byte {position} was not detected"
        np.testing.assert_array_equal(loaded.decision_function(frame), reference)
        harmless.append(position)
    # only a digit of the patch version (0.1.0 -> 0.1.4), which compatible() ignores; every other byte is refused
    version = data.index(b'"quantile_surrogate":"%s"' % __version__.encode()) + len('"quantile_surrogate":"')
    patch = version + len(__version__.rsplit(".", 1)[0]) + 1
    assert harmless == list(range(patch, version + len(__version__)))


def edited_sizes(data: bytes, edit) -> bytes:
    """``data`` (a model file's bytes) with its header's section sizes replaced by ``edit(sizes)``; payload as is."""
    end = data.index(b"\n", len(MAGIC))
    header = json.loads(data[len(MAGIC):end])
    names, sizes = zip(*header["sections"])
    sizes = edit(list(sizes))
    names = list(names) + [names[-1]] * (len(sizes) - len(names))  # a size added: the last section listed twice
    header["sections"] = [list(entry) for entry in zip(names, sizes)]
    return MAGIC + json.dumps(header).encode() + data[end:]


@pytest.mark.parametrize("edit", [
    lambda s: [s[0] + 1, s[1]],  # larger: the sizes add up to more than the payload
    lambda s: [s[0], s[1] - 1],  # smaller
    lambda s: [s[0] + 5, s[1] - 5],  # the boundary moved, the total kept
    lambda s: [s[0] - 5, s[1] + 5],
    lambda s: [-s[0], s[1] + 2 * s[0]],  # negative, the total kept
    lambda s: [-1, s[1]],
    lambda s: [str(s[0]), s[1]],  # not numbers, or not whole numbers
    lambda s: [float(s[0]), s[1]],
    lambda s: [s[0] + 0.5, s[1] - 0.5],
    lambda s: ["x", s[1]],
    lambda s: [None, s[1]],
    lambda s: [True, s[0] + s[1] - 1],
    lambda s: [s[0]],  # a section left out, or listed twice
    lambda s: [s[0], s[1], 0],
], ids=["larger", "smaller", "moved right", "moved left", "negative", "minus one", "text", "float", "half", "word",
        "null", "true", "one section", "extra section"])
def test_a_file_whose_section_sizes_were_edited_is_refused_as_a_damaged_header(tmp_path, linear_file, edit):
    """The checksum covers the payload, not the sizes: an edited size is one clear refusal, never a load."""
    data = edited_sizes(linear_file[0].read_bytes(), edit)
    (tmp_path / "sizes.qs").write_bytes(data)
    with pytest.raises(InputError, match=exact(model_file.DAMAGED_HEADER_MESSAGE, path=tmp_path / "sizes.qs")):
        load_model(tmp_path / "sizes.qs")


@pytest.mark.parametrize("shift", [-5, -1, 1, 5])
def test_a_moved_boundary_between_the_tensors_and_a_booster_is_refused_as_a_damaged_header(tmp_path, shift):
    saved, _ = fitted_once("lightgbm")
    save_model(saved, tmp_path / "m.qs")
    data = edited_sizes((tmp_path / "m.qs").read_bytes(), lambda s: [s[0], s[1] + shift, s[2] - shift])
    (tmp_path / "sizes.qs").write_bytes(data)
    with pytest.raises(InputError, match=exact(model_file.DAMAGED_HEADER_MESSAGE, path=tmp_path / "sizes.qs")):
        load_model(tmp_path / "sizes.qs")


@pytest.mark.parametrize("cut", [1, 100, -1])
def test_a_truncated_or_extended_file_is_refused(tmp_path, linear_file, cut):
    data = linear_file[0].read_bytes()
    (tmp_path / "cut.qs").write_bytes(data[:-cut] if cut > 0 else data + b"\0")
    with pytest.raises(InputError, match=exact(model_file.CHECKSUM_MESSAGE, path=tmp_path / "cut.qs")):
        load_model(tmp_path / "cut.qs")


def test_wrong_checksum_unknown_format_and_headers(tmp_path, linear_file):
    sections = valid_sections(linear_file)
    write_model_file(tmp_path / "sum.qs", sections, checksum=False)
    with pytest.raises(InputError, match=exact(model_file.CHECKSUM_MESSAGE, path=tmp_path / "sum.qs")):
        load_model(tmp_path / "sum.qs")
    write_model_file(tmp_path / "fmt.qs", sections, header={"format": 99})
    with pytest.raises(InputError, match=exact(model_file.UNKNOWN_FORMAT_MESSAGE, path=tmp_path / "fmt.qs", format=99,
                                               running=__version__)):
        load_model(tmp_path / "fmt.qs")
    write_model_file(tmp_path / "future.qs", sections, header={"quantile_surrogate": "9.9.0"})
    with pytest.raises(InputError, match=exact(model_file.INCOMPATIBLE_VERSION_MESSAGE, path=tmp_path / "future.qs",
                                               saved="9.9.0", running=__version__)):
        load_model(tmp_path / "future.qs")
    (tmp_path / "noline.qs").write_bytes(MAGIC + b"{" * 70000)
    with pytest.raises(InputError, match=exact(model_file.DAMAGED_HEADER_MESSAGE, path=tmp_path / "noline.qs")):
        load_model(tmp_path / "noline.qs")
    (tmp_path / "junk.qs").write_bytes(b"\x80\x04 something else")
    with pytest.raises(InputError, match=exact(model_file.NOT_A_MODEL_FILE_MESSAGE, path=tmp_path / "junk.qs")):
        load_model(tmp_path / "junk.qs")
    with pytest.raises(InputError, match=exact(model_file.NO_MODEL_FILE_MESSAGE, path=tmp_path / "missing.qs")):
        load_model(tmp_path / "missing.qs")
    with pytest.raises(InputError, match=exact(NOT_REGULAR_FILE_MESSAGE, path=tmp_path)):
        load_model(tmp_path)


@pytest.mark.parametrize("saved, running, ok", [("0.1.3", "0.1.0", True), ("0.2.0", "0.1.0", False),
                                                ("1.0.0", "0.1.0", False), ("0.1.0", "0.1.0", True)])
def test_version_compatibility(saved, running, ok):
    assert model_file.compatible(saved, running) is ok


def test_what_cannot_be_stored_is_refused_when_saving(tmp_path):
    saved, _ = fitted()
    saved.model.named_steps["classifier"].module_factory = lambda d: torch.nn.Linear(d, 1)
    with pytest.raises(TypeError, match=exact(_codecs.CUSTOM_FUNCTION_MESSAGE, what=_codecs.CUSTOM_MODULE_OR_QUANTILE)):
        save_model(saved, tmp_path / "m.qs")
    saved.model = object()
    with pytest.raises(TypeError, match=exact(_codecs.CANNOT_STORE_CLASS_MESSAGE, name="object",
                                              classes=", ".join(_codecs.CODECS))):
        save_model(saved, tmp_path / "m.qs")
    assert list(tmp_path.iterdir()) == []


def _dict(value):
    return {"__kind__": "dict", "data": value}  # how the description stores a dict


@pytest.mark.parametrize("field, value, problem", [
    ("objective", "accuracy", _model_checks.NOT_OBJECTIVE),
    ("target", 1.5, _model_checks.NOT_UNIT_INTERVAL),
    ("target", "0.9", _model_checks.NOT_UNIT_INTERVAL),
    ("label", None, _model_checks.NOT_TEXT),
    ("classes", ["no"], _model_checks.NOT_CLASSES),
    ("classes", ["no", "no"], _model_checks.NOT_CLASSES),
    ("classes", "ab", _model_checks.NOT_CLASSES),
    ("model_kind", "forest", _model_checks.NOT_MODEL_KIND),
    ("n_rows", -1, _model_checks.NOT_COUNT),
    ("trained_on", 3, _model_checks.NOT_TEXT),
    ("delta", 2.0, _model_checks.NOT_UNIT_INTERVAL),
    ("calibration_size", 0.3, _model_checks.NOT_NONE),
    ("version", 5, _model_checks.NOT_TEXT),
    ("groups", "colour", _model_checks.NOT_GROUPS),
    ("schema", _dict({"numeric": ["x1"], "categorical": ["colour"]}), _model_checks.NOT_ENCODER_COLUMNS),
    ("schema", _dict({"numeric": ["x2", "x1"], "categorical": ["colour"]}), _model_checks.NOT_ENCODER_COLUMNS),
    ("schema", _dict({"numeric": ["x1", "x2"]}), _model_checks.NOT_SCHEMA),
    ("schema", _dict({"numeric": ["x1", "x1"], "categorical": ["colour"]}), _model_checks.NOT_SCHEMA),
    ("schema", ["x1"], _model_checks.NOT_SCHEMA),
])
def test_a_valid_checksum_with_a_field_fit_cannot_write_is_refused_naming_the_field(tmp_path, linear_file, field,
                                                                                    value, problem):
    sections = valid_sections(linear_file)
    description = json.loads(sections["description"])
    description[field] = value
    write_model_file(tmp_path / "edited.qs", {**sections, "description": json.dumps(description).encode()})
    with pytest.raises(InputError, match=exact(model_file.NOT_REBUILT_FIELD_MESSAGE, path=tmp_path / "edited.qs",
                                               field=field, problem=problem)):
        load_model(tmp_path / "edited.qs")


def test_an_encoder_wider_than_the_classifier_is_refused(tmp_path, linear_file):
    sections = valid_sections(linear_file)
    text = sections["description"].replace(b'"red"', b'"red","violet"')  # one more category: 7 columns for 6 weights
    assert text != sections["description"]
    write_model_file(tmp_path / "wide.qs", {**sections, "description": text})
    with pytest.raises(InputError, match=exact(model_file.NOT_REBUILT_FIELD_MESSAGE, path=tmp_path / "wide.qs",
                                               field="schema", problem=_model_checks.NOT_WIDTH.format(n_features=5))):
        load_model(tmp_path / "wide.qs")
