"""The command line's model file: JSON and tensors behind a checksum, never a pickle.

Layout (``.qs`` by convention)::

    QUANTILE-SURROGATE-MODEL\\n
    {"format": 2, "quantile_surrogate": "0.1.0", "sha256": "<hex>", "sections": [["description", N], ...]}\\n
    <section bytes, in the order listed>

- ``description``: UTF-8 JSON with the label and its two classes, the feature columns and
  their encoding (the categories of every text column), the objective and target, where
  and on how many rows it was trained, and the fitted estimator as a tree of
  ``{"class": ..., "params": ..., "fitted": ...}``: each estimator's constructor parameters
  and its fitted attributes (the names ending in ``_``) in plain JSON (arrays as lists with
  their dtype; ``json`` writes floats exactly).
- ``tensors``: the torch modules' ``state_dict`` through ``torch.save``, read back with
  ``torch.load(weights_only=True)``, which builds tensors and plain containers only.
- ``blob:...``: a boosted model's booster in its library's own text format (LightGBM's
  ``model_to_string()``, XGBoost's JSON), read back by that library's own parser.

``sha256`` is the checksum of every byte after the header line; :func:`load_model` checks it
before it parses anything, so a damaged or edited file is refused, not loaded with other
numbers; the header's section sizes, which the checksum does not cover, must be whole numbers
that cut the payload exactly where the sections meet (else "the header is damaged"). Only the
classes of ``quantile_surrogate.cli._codecs.CODECS`` are rebuilt (a
``Pipeline`` of the command line's encoder and a :class:`~quantile_surrogate.QuantileClassifier`
or :class:`~quantile_surrogate.QuantileBoostingClassifier`, optionally inside a
:class:`~quantile_surrogate.GuaranteedThresholdClassifier`; or of the encoder and a
:class:`~quantile_surrogate.QuantileRanker`, for ``fit --query``), by calling their constructors;
nothing in the file names code to run. Files of the first format (a pickle behind the same
first line) are refused with a message to refit, without being unpickled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import torch

from .. import __version__
from .._utils.files import atomic_write
from ._codecs import Payload, dump, from_json, load, to_json
from ._file_io import NOT_REGULAR_FILE_MESSAGE, InputError
from ._model_checks import field_problem

__all__ = ["SavedModel", "save_model", "load_model", "MAGIC", "FORMAT"]

#: The first line of every model file, which identifies one.
MAGIC = b"QUANTILE-SURROGATE-MODEL\n"
#: The layout written, in the header's ``"format"``: 1 was a joblib pickle (0.1.0, refused
#: when read); 2 is JSON + tensors + checksum.
FORMAT = 2
MAX_HEADER_BYTES = 65536
BLOB = "blob:"
"""Sections named ``blob:NAME`` hold a boosted model in its library's own text format."""
# torch.save writes a zip: its first local header, and its end-of-central-directory record 22 bytes before the end.
_ZIP_START, _ZIP_END = b"PK\x03\x04", b"PK\x05\x06"

# Each message names the file and says what to do (refit, or install the version that wrote it).
NOT_A_MODEL_FILE_MESSAGE = "{path}: not a quantile-surrogate model file (write one with `quantile-surrogate fit`)."
DAMAGED_HEADER_MESSAGE = "{path}: the model file's header is damaged; refit the model."
INCOMPATIBLE_VERSION_MESSAGE = ("{path}: saved by quantile-surrogate {saved}, which this version ({running}) cannot "
                                "load; refit it with `quantile-surrogate fit`, or install quantile-surrogate=={saved}.")
PICKLE_FORMAT_MESSAGE = ("{path}: an older model file that holds a pickle, which is not loaded because loading a "
                         "pickle can run code; refit it with `quantile-surrogate fit`.")
UNKNOWN_FORMAT_MESSAGE = ("{path}: model file format {format!r}, which this version ({running}) cannot load; "
                          "refit it with `quantile-surrogate fit`.")
CHECKSUM_MESSAGE = ("{path}: the model file is damaged (its checksum does not match; truncated or edited); "
                    "refit the model.")
NO_MODEL_FILE_MESSAGE = "{path}: no such model file."
NOT_TENSORS_MESSAGE = "the tensors section is not a dict of tensors"
NOT_REBUILT_MESSAGE = ("{path}: the model file cannot be rebuilt ({error_type}); it was written by another program "
                       "or version; refit the model.")
NOT_REBUILT_FIELD_MESSAGE = ("{path}: the model file cannot be rebuilt (its field '{field}' {problem}); it was written "
                             "by another program or version; refit the model.")


# `fit --model`: the estimator class behind each kind (SavedModel.model_kind).
MODELS = {"linear": "QuantileClassifier", "mlp": "QuantileClassifier", "lightgbm": "QuantileBoostingClassifier",
          "xgboost": "QuantileBoostingClassifier"}
#: The kinds of `fit --model` that ``fit --query`` trains as a :class:`~quantile_surrogate.QuantileRanker`.
RANKERS = ("linear", "lightgbm", "xgboost")


@dataclasses.dataclass
class SavedModel:
    """A fitted model with what the command line needs to use it on a new file.

    ``quantile-surrogate fit`` builds one and writes it with :func:`save_model`; ``predict``
    and ``evaluate`` read it back with :func:`load_model`.

    Parameters
    ----------
    model : estimator
        ``Pipeline([FrameEncoder, QuantileClassifier or QuantileBoostingClassifier])``, a
        ``GuaranteedThresholdClassifier`` around one, or one of those classifiers alone;
        or ``Pipeline([FrameEncoder, QuantileRanker])`` (``fit --query``); fitted.
    label : str
        The label column's name (for a ranker: the relevance, 0/1 or graded).
    classes : list or None
        ``[negative, positive]``, as written in the label column; None for a ranker.
    schema : dict
        ``{"numeric": [...], "categorical": [...]}``, the feature columns.
    objective : str or None
        The objective trained for (:data:`~quantile_surrogate.objectives.OBJECTIVES`); None for a ranker.
    target : float or None
        Its target; None for a ranker.
    model_kind : {"linear", "mlp", "lightgbm", "xgboost"}
        ``fit --model``.
    trained_on : str
        The training file's name.
    n_rows : int
        Training rows.
    delta : float or None, default=None
        ``fit --delta``: the failure probability of a guaranteed threshold; None without.
    calibration_size : float or None, default=None
        ``fit --calibration-size``: the fraction held out for that threshold.
    version : str, default=the running quantile_surrogate version
        The version that wrote the model.
    groups : str or None, default=None
        The ``fit --groups`` column: every row is compared with its group's threshold.
    constraints : list of str or None, default=None
        The ``fit --constraint`` texts as given (:func:`~quantile_surrogate.constraints.parse_constraint`),
        which ``evaluate`` measures again; None without constraints.
    constraint_by : str or None, default=None
        The column the constraints' ``by`` names (their groups; not a feature, not needed to predict).
    query : str or None, default=None
        ``fit --query``: the column of query ids of a ranker (not a feature); None for a classifier.
    k : int or None, default=None
        ``fit --k``: the ranker's k of precision@k; None for a classifier.
    relevance_threshold : float or None, default=None
        ``fit --relevance-threshold``: the rows with a label >= it are relevant; None for binary
        relevance (and for a classifier).

    See Also
    --------
    save_model, load_model

    Examples
    --------
    >>> import numpy as np
    >>> from quantile_surrogate import QuantileClassifier
    >>> from quantile_surrogate.cli.model_file import SavedModel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] + rng.normal(size=200) > 1).astype(int)
    >>> clf = QuantileClassifier(target=0.9, max_epochs=5, n_restarts=1, early_stopping=False,
    ...                          random_state=0).fit(X, y)
    >>> saved = SavedModel(model=clf, label="y", classes=[0, 1], schema={"numeric": ["x1", "x2"],
    ...                    "categorical": []}, objective="precision_at_recall", target=0.9,
    ...                    model_kind="linear", trained_on="example", n_rows=200)
    >>> bool(np.array_equal(saved.decision_function(X) > 0, clf.predict(X) == 1))
    True
    """

    model: object
    """``Pipeline([FrameEncoder, QuantileClassifier])``, or a ``GuaranteedThresholdClassifier`` around one."""
    label: str
    classes: list | None
    """``[negative, positive]``, as written in the label column; None for a ranker."""
    schema: dict
    """``{"numeric": [...], "categorical": [...]}``, the feature columns."""
    objective: str | None
    target: float | None
    model_kind: str
    trained_on: str
    n_rows: int
    delta: float | None = None
    calibration_size: float | None = None
    version: str = __version__
    groups: str | None = None
    """The ``fit --groups`` column: every row is compared with its group's threshold; None without groups."""
    constraints: list | None = None
    """The ``fit --constraint`` texts, e.g. ``["recall gap <= 0.05 by sex"]``; None without constraints."""
    constraint_by: str | None = None
    """The column of the constraints' groups (their ``by``); None where no constraint is measured in groups."""
    query: str | None = None
    """A ranker's column of query ids (``fit --query``); None for a classifier."""
    k: int | None = None
    """A ranker's k of precision@k; None for a classifier."""
    relevance_threshold: float | None = None
    """A ranker's relevance threshold on a graded label; None for binary relevance or a classifier."""

    @property
    def is_ranker(self) -> bool:
        """Whether the model is a ranker (``fit --query``): scores order the rows of a query, with no threshold."""
        return self.query is not None

    @property
    def parsed_constraints(self) -> list:
        """``(RateConstraint, by column or None)`` for each of :attr:`constraints` (none: an empty list)."""
        from ..constraints import parse_constraint

        return [parse_constraint(text) for text in self.constraints or []]

    def _thresholded(self):
        """The estimator that holds the thresholds (and ``groups_``): the pipeline's last step, or the wrapper."""
        return self.model[-1] if hasattr(self.model, "named_steps") else self.model

    @property
    def group_labels(self):
        """The group labels seen in training (text), or None for a model without groups."""
        return getattr(self._thresholded(), "groups_", None)

    def decision_function(self, X, *, sensitive_features=None) -> np.ndarray:
        """Scores of the feature frame ``X``; > 0 means ``classes[1]``. ``sensitive_features``: one group label per
        row, if fitted with ``--groups``. A ranker's scores order the rows of a query (higher first)."""
        if self.is_ranker:
            return np.asarray(self.model.predict(X), dtype=np.float64)
        if sensitive_features is None:
            return np.asarray(self.model.decision_function(X), dtype=np.float64)
        if hasattr(self.model, "named_steps"):  # a Pipeline routes no `sensitive_features` without metadata routing
            X = self.model[:-1].transform(X)
        return np.asarray(self._thresholded().decision_function(X, sensitive_features=sensitive_features),
                          dtype=np.float64)


def compatible(saved: str, running: str) -> bool:  # internal: the version check of _read_header
    """Same major and minor version: in 0.x a minor release may change the estimators' parameters."""
    return str(saved).split(".")[:2] == str(running).split(".")[:2]


# ----------------------------------------------------------------------------- the file

def _encode(saved: SavedModel) -> bytes:
    stored = Payload()
    description = {f.name: getattr(saved, f.name) for f in dataclasses.fields(saved) if f.name != "model"}
    description = {"model": dump(saved.model, stored), **to_json(description, "the description")["data"]}
    buffer = io.BytesIO()
    torch.save(stored.tensors, buffer)
    sections = {"description": json.dumps(description, separators=(",", ":")).encode(), "tensors": buffer.getvalue(),
                **{BLOB + name: data for name, data in stored.blobs.items()}}
    payload = b"".join(sections.values())
    header = {"format": FORMAT, "quantile_surrogate": __version__, "sha256": hashlib.sha256(payload).hexdigest(),
              "sections": [[name, len(data)] for name, data in sections.items()]}
    return MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload


def save_model(saved: SavedModel, path, *, inputs=()) -> None:
    """Write ``saved`` to ``path`` atomically: a model file of :data:`FORMAT`, never a pickle.

    The file is written to a temporary file in the same folder, flushed and renamed over
    ``path``, so an interrupted save leaves the old file or the new one, never a torn one.

    Parameters
    ----------
    saved : SavedModel
        The model and its description.
    path : str or path-like
        The file to write (``.qs`` by convention).
    inputs : sequence of path-like, default=()
        Files the same command reads; ``path`` must not be one of them.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        If ``path`` is one of ``inputs`` or exists and is not a regular file
        (``OutputPathError``), or if the model holds an estimator or value that the file
        format cannot store.

    See Also
    --------
    load_model

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from quantile_surrogate import QuantileClassifier
    >>> from quantile_surrogate.cli.model_file import SavedModel, load_model, save_model
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] + rng.normal(size=200) > 1).astype(int)
    >>> clf = QuantileClassifier(target=0.9, max_epochs=5, n_restarts=1, early_stopping=False,
    ...                          random_state=0).fit(X, y)
    >>> saved = SavedModel(model=clf, label="y", classes=[0, 1], schema={"numeric": ["x1", "x2"],
    ...                    "categorical": []}, objective="precision_at_recall", target=0.9,
    ...                    model_kind="linear", trained_on="example", n_rows=200)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_model(saved, Path(folder) / "model.qs")
    ...     loaded = load_model(Path(folder) / "model.qs")
    >>> bool(np.array_equal(loaded.decision_function(X), saved.decision_function(X)))
    True
    """
    data = _encode(saved)
    atomic_write(Path(path), lambda p: p.write_bytes(data), inputs=inputs)


def _read_header(path: Path, data: bytes) -> tuple[dict, bytes]:
    """The header (checked: format, version, checksum) and the payload; :func:`_split` checks the sizes."""
    if not data.startswith(MAGIC):
        raise InputError(NOT_A_MODEL_FILE_MESSAGE.format(path=path))
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    try:
        header = json.loads(data[len(MAGIC):end]) if end > 0 else None
        saved = str(header["quantile_surrogate"])
    except (ValueError, KeyError, TypeError):
        raise InputError(DAMAGED_HEADER_MESSAGE.format(path=path)) from None
    if not compatible(saved, __version__):
        raise InputError(INCOMPATIBLE_VERSION_MESSAGE.format(path=path, saved=saved, running=__version__))
    if "format" not in header:
        raise InputError(PICKLE_FORMAT_MESSAGE.format(path=path))
    if header["format"] != FORMAT:
        raise InputError(UNKNOWN_FORMAT_MESSAGE.format(path=path, format=header["format"], running=__version__))
    payload = data[end + 1:]
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise InputError(CHECKSUM_MESSAGE.format(path=path))
    return header, payload


def _split(path: Path, header: dict, payload: bytes) -> tuple[dict, dict]:
    """The parsed description and every section's bytes, cut where the header says.

    The checksum covers the payload, not the header's list of sections; a list whose sizes were
    edited (larger, smaller, negative, not whole numbers) or that cuts the payload anywhere but
    where the sections meet (the description is not one JSON object, or the tensors' zip does not
    end where the section ends) is a damaged header, refused before anything else is parsed.
    """
    listed = header.get("sections")
    if not isinstance(listed, list) or not all(isinstance(entry, list) and len(entry) == 2 for entry in listed):
        raise InputError(DAMAGED_HEADER_MESSAGE.format(path=path))
    names, sizes = [name for name, _ in listed], [size for _, size in listed]
    if (names[:2] != ["description", "tensors"] or len(set(map(str, names))) != len(names)
            or not all(isinstance(name, str) and name.startswith(BLOB) for name in names[2:])
            or not all(type(size) is int and size >= 0 for size in sizes) or sum(sizes) != len(payload)):
        raise InputError(DAMAGED_HEADER_MESSAGE.format(path=path))
    sections, start = {}, 0
    for name, size in listed:
        sections[name], start = payload[start:start + size], start + size
    try:
        description = json.loads(sections["description"])
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        description = None
    tensors = sections["tensors"]
    if not isinstance(description, dict) or (tensors[:4] == _ZIP_START and tensors[-22:-18] != _ZIP_END):
        raise InputError(DAMAGED_HEADER_MESSAGE.format(path=path))
    return description, sections


def load_model(path) -> SavedModel:
    """Read a model written by :func:`save_model`: checksum first, then JSON and ``torch.load(weights_only=True)``.

    Nothing is parsed before the checksum of every byte after the header matches, and
    nothing in the file names code to run.

    Parameters
    ----------
    path : str or path-like
        A model file.

    Returns
    -------
    SavedModel

    Raises
    ------
    InputError
        (``quantile_surrogate.cli._file_io.InputError``, which the command line reports in
        one line) if ``path`` is not a regular file, not a model file, damaged (the checksum
        does not match), of another format or of an incompatible version (another minor
        version in 0.x), or cannot be rebuilt.

    See Also
    --------
    save_model

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from quantile_surrogate.cli.model_file import MAGIC, load_model
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "edited.qs"
    ...     _ = path.write_bytes(MAGIC + b'{"format": 2}\\n')
    ...     load_model(path)  # doctest: +ELLIPSIS, +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    InputError: .../edited.qs: the model file's header is damaged; refit the model.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError((NOT_REGULAR_FILE_MESSAGE if path.exists() else NO_MODEL_FILE_MESSAGE).format(path=path))
    return _decode(path, path.read_bytes())


def _decode(path: Path, data: bytes) -> SavedModel:
    """The model in ``data``, the bytes of the file ``path`` (named in errors)."""
    description, sections = _split(path, *_read_header(path, data))
    try:
        tensors = torch.load(io.BytesIO(sections["tensors"]), map_location="cpu", weights_only=True)
        if not isinstance(tensors, dict) or not all(isinstance(t, torch.Tensor) for t in tensors.values()):
            raise ValueError(NOT_TENSORS_MESSAGE)
        blobs = {name[len(BLOB):]: data for name, data in sections.items() if name.startswith(BLOB)}
        model = load(description["model"], Payload(tensors=tensors, blobs=blobs))
        fields = {f.name for f in dataclasses.fields(SavedModel)} - {"model"}
        saved = SavedModel(model=model, **{k: from_json(v) for k, v in description.items() if k in fields})
        problem = field_problem(saved, MODELS, RANKERS)
    except Exception as error:  # noqa: BLE001 - a file that passed the checksum but not the rebuild: our one message
        raise InputError(NOT_REBUILT_MESSAGE.format(path=path, error_type=type(error).__name__)) from None
    if problem is not None:  # every field is checked here, so that predict and evaluate can trust them
        raise InputError(NOT_REBUILT_FIELD_MESSAGE.format(path=path, field=problem[0], problem=problem[1]))
    return saved
