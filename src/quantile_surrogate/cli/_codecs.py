"""Fitted estimators to JSON, tensors and text blobs, and back, without pickle (for :mod:`.model_file`).

Each class the command line fits has a codec: ``dump(estimator, payload, prefix) -> dict``
writes the constructor parameters and the fitted attributes (names ending in ``_``) as plain
JSON, a torch module's ``state_dict`` into ``payload.tensors`` and a boosted model's own text
format into ``payload.blobs`` (a linear ranker is its ``coef_`` and ``intercept_``, plain JSON);
``load(entry, payload)`` calls the class's constructor with the parameters and sets the
attributes back. Only the classes in :data:`CODECS` can be rebuilt:
nothing in a file names code to run.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import torch

from ..constraints import RateConstraint, gap, rate

__all__ = ["Payload", "CODECS", "dump", "load", "to_json", "from_json"]

# What cannot be saved is refused when saving (TypeError); what cannot be rebuilt raises ValueError,
# which load_model reports as a file that cannot be rebuilt.
CANNOT_STORE_VALUE_MESSAGE = "The model file cannot store {where} of type {type_name}."
CANNOT_STORE_CLASS_MESSAGE = "The model file cannot store a {name}; it stores {classes}."
CUSTOM_FUNCTION_MESSAGE = "The model file cannot store a custom {what}."
CUSTOM_MODULE_OR_QUANTILE = "`module_factory` or `quantile` function"
CUSTOM_QUANTILE = "`quantile` function"
UNKNOWN_KIND_MESSAGE = "unknown value kind {kind!r}"
NO_TENSORS_MESSAGE = "no tensors for the model"
UNKNOWN_BACKEND_MESSAGE = "unknown boosting backend {backend!r}"
UNKNOWN_SCOPE_MESSAGE = "unknown constraint scope {scope!r}"
UNKNOWN_STEP_MESSAGE = "unknown pipeline step {step!r}"


@dataclasses.dataclass
class Payload:
    """What is stored outside the JSON: tensors by name, and text blobs (boosters) by name."""

    tensors: dict = dataclasses.field(default_factory=dict)
    blobs: dict = dataclasses.field(default_factory=dict)


# ----------------------------------------------------------------------------- plain JSON values

def to_json(value, where: str):
    """``value`` as JSON: arrays, tuples and dicts tagged with ``"__kind__"`` so they come back as they were."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"__kind__": "ndarray", "dtype": value.dtype.str, "shape": list(value.shape),
                "data": value.ravel().tolist()}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return {"__kind__": "ndarray", "dtype": "object", "shape": list(value.shape),
                "data": [to_json(v, where) for v in value.ravel()]}
    if isinstance(value, tuple):
        return {"__kind__": "tuple", "data": [to_json(v, where) for v in value]}
    if isinstance(value, list):
        return [to_json(v, where) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__kind__": "dict", "data": {k: to_json(v, f"{where}[{k!r}]") for k, v in value.items()}}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(CANNOT_STORE_VALUE_MESSAGE.format(where=where, type_name=type(value).__name__))


def from_json(value):
    """The inverse of :func:`to_json`."""
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value["__kind__"]
    if kind == "tuple":
        return tuple(from_json(v) for v in value["data"])
    if kind == "dict":
        return {k: from_json(v) for k, v in value["data"].items()}
    if kind != "ndarray":
        raise ValueError(UNKNOWN_KIND_MESSAGE.format(kind=kind))
    if value["dtype"] == "object":
        array = np.empty(len(value["data"]), dtype=object)
        array[:] = [from_json(v) for v in value["data"]]
    else:
        array = np.asarray(value["data"], dtype=np.dtype(value["dtype"]))
    return array.reshape(value["shape"])


def _fitted(estimator, skip=()) -> dict:
    """The attributes learned in ``fit``: public names ending in ``_`` (scikit-learn's convention)."""
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") and not k.startswith("_") and k not in skip}


def _entry(name: str, estimator, fitted: dict, skip_params=()) -> dict:
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k not in skip_params}
    return {"class": name, "params": to_json(params, "a parameter"), "fitted": to_json(fitted, "a fitted attribute")}


def _rebuild(cls, entry: dict, **extra):
    estimator = cls(**from_json(entry["params"]), **extra)
    for name, value in from_json(entry["fitted"]).items():
        setattr(estimator, name, value)
    return estimator


# ----------------------------------------------------------------------------- one codec per class

def _constraint_fields(constraints):
    """``QuantileClassifier(constraints=...)`` as JSON: each constraint's fields (its name rounds the bound)."""
    if constraints is None:
        return None
    constraints = [constraints] if not isinstance(constraints, (list, tuple)) else constraints
    if not all(isinstance(c, RateConstraint) for c in constraints):
        raise TypeError(CANNOT_STORE_VALUE_MESSAGE.format(where="the parameter 'constraints'",
                                                          type_name=type(constraints).__name__))
    return [dataclasses.asdict(c) for c in constraints]


def _constraints(fields):
    """The inverse of :func:`_constraint_fields`, through ``rate`` and ``gap`` (which check every field)."""
    if fields is None:
        return None
    built = []
    for item in fields:
        if item["scope"] not in ("all", "each_group", "gap"):
            raise ValueError(UNKNOWN_SCOPE_MESSAGE.format(scope=item["scope"]))
        built.append(gap(item["rate"], at_most=item["at_most"]) if item["scope"] == "gap" else
                     rate(item["rate"], at_least=item["at_least"], at_most=item["at_most"],
                          in_each_group=item["scope"] == "each_group"))
    return built


def _dump_quantile_classifier(clf, payload: Payload, prefix: str) -> dict:
    if clf.module_factory is not None or callable(clf.quantile):
        raise TypeError(CUSTOM_FUNCTION_MESSAGE.format(what=CUSTOM_MODULE_OR_QUANTILE))
    fitted = _fitted(clf, skip=("model_",))
    for key, tensor in clf.model_.state_dict().items():
        payload.tensors[f"{prefix}model_.{key}"] = tensor.detach().cpu().clone()
    constraints = getattr(clf, "constraints", None)
    return {**_entry("QuantileClassifier", clf, fitted, skip_params=("constraints",)), "tensors": prefix + "model_.",
            **({} if constraints is None else {"constraints": _constraint_fields(constraints)})}


def _load_quantile_classifier(entry: dict, payload: Payload):
    from ..estimators import QuantileClassifier
    from ..training.models import build_scorer

    clf = _rebuild(QuantileClassifier, entry, **({} if "constraints" not in entry else
                                                 {"constraints": _constraints(entry["constraints"])}))
    clf.device = "cpu"
    prefix = entry["tensors"]
    state = {k[len(prefix):]: v for k, v in payload.tensors.items() if k.startswith(prefix)}
    if not state:
        raise ValueError(NO_TENSORS_MESSAGE)
    with torch.random.fork_rng(devices=[]):  # the throw-away random init must not move the user's torch seed
        module = build_scorer(int(clf.n_features_in_), tuple(clf.hidden_layer_sizes))
    module = module.to(next(iter(state.values())).dtype)
    module.load_state_dict(state, strict=True)
    clf.model_ = module.eval()
    return clf


def _booster_text(booster, backend: str) -> bytes:
    """A booster in its library's own format: LightGBM's model text, XGBoost's JSON."""
    return (booster.model_to_string() if backend == "lightgbm" else bytes(booster.save_raw("json")).decode()).encode()


def _booster(text: bytes, backend: str):
    """The inverse of :func:`_booster_text`, by the library's own parser."""
    if backend == "lightgbm":
        import lightgbm

        return lightgbm.Booster(model_str=text.decode())
    if backend == "xgboost":
        import xgboost

        booster = xgboost.Booster()
        booster.load_model(bytearray(text))
        return booster
    raise ValueError(UNKNOWN_BACKEND_MESSAGE.format(backend=backend))


def _dump_boosting(clf, payload: Payload, prefix: str) -> dict:
    if callable(clf.quantile):
        raise TypeError(CUSTOM_FUNCTION_MESSAGE.format(what=CUSTOM_QUANTILE))
    payload.blobs[prefix + "booster_"] = _booster_text(clf.booster_, clf.backend_)
    entry = _entry("QuantileBoostingClassifier", clf, _fitted(clf, skip=("booster_",)))
    return {**entry, "booster": prefix + "booster_"}


def _load_boosting(entry: dict, payload: Payload):
    from ..estimators.boosted import QuantileBoostingClassifier

    clf = _rebuild(QuantileBoostingClassifier, entry)
    clf.booster_ = _booster(payload.blobs[entry["booster"]], clf.backend_)
    return clf


def _dump_ranker(ranker, payload: Payload, prefix: str) -> dict:
    """A booster as :func:`_dump_boosting` stores one (and the blend's LambdaMART booster beside it); a linear model
    by its ``coef_`` and ``intercept_`` (JSON)."""
    entry = _entry("QuantileRanker", ranker, _fitted(ranker, skip=("model_", "ranking_model_")))
    if ranker.model == "linear":
        return entry
    payload.blobs[prefix + "model_"] = _booster_text(ranker.model_, ranker.model)
    blend = {}
    if ranker.ranking_model_ is not None:
        payload.blobs[prefix + "ranking_model_"] = _booster_text(ranker.ranking_model_, ranker.model)
        blend = {"ranking_booster": prefix + "ranking_model_"}
    return {**entry, "booster": prefix + "model_", **blend}


def _load_ranker(entry: dict, payload: Payload):
    from ..estimators import QuantileRanker
    from ..estimators._ranker_paths import LinearModel

    ranker = _rebuild(QuantileRanker, entry)
    if ranker.model == "linear":
        ranker.model_ = LinearModel(np.asarray(ranker.coef_, dtype=np.float64), float(ranker.intercept_))
    else:
        ranker.model_ = _booster(payload.blobs[entry["booster"]], ranker.model)
    blend = entry.get("ranking_booster")  # absent: no blend (blend=False, linear, or a file from before blends)
    ranker.ranking_model_ = None if blend is None else _booster(payload.blobs[blend], ranker.model)
    if blend is None:
        ranker.blend_offsets_ = ranker.blend_scales_ = None
    return ranker


def _dump_pipeline(pipeline, payload: Payload, prefix: str) -> dict:
    encoder, (step, classifier) = pipeline.named_steps["preprocess"], pipeline.steps[-1]
    entry = {"class": "Pipeline", "numeric": list(encoder.numeric), "categorical": list(encoder.categorical),
             "categories": {c: [str(v) for v in encoder.categories_[c]] for c in encoder.categorical},
             "classifier": dump(classifier, payload, prefix + "classifier."),
             **({} if step == "classifier" else {"step": step})}  # "ranker" (fit --query)
    if encoder.sparse_:  # a sparse output (text, or many one-hot columns): its own state, as JSON lists
        entry["text"] = list(encoder.text)
        entry["vocabularies"] = {c: encoder.vectorizers_[c].get_feature_names_out().tolist() for c in encoder.text}
        entry["idf"] = {c: encoder.vectorizers_[c].idf_.tolist() for c in encoder.text}
        entry["numeric_mean"] = None if encoder.numeric_mean_ is None else encoder.numeric_mean_.tolist()
        entry["numeric_scale"] = None if encoder.numeric_scale_ is None else encoder.numeric_scale_.tolist()
    return entry


def _load_pipeline(entry: dict, payload: Payload):
    from sklearn.pipeline import Pipeline

    from ._encoder import FrameEncoder, text_vectorizer

    sparse = "text" in entry  # written by a sparse encoder; older files (and dense encoders) have no such key
    encoder = FrameEncoder(numeric=list(entry["numeric"]), categorical=list(entry["categorical"]),
                           text=list(entry.get("text", [])), sparse_output=sparse)
    encoder.categories_ = {c: np.asarray(entry["categories"][c], dtype=object).astype(str) for c in encoder.categorical}
    encoder.sparse_, encoder.vectorizers_ = sparse, {}
    for column in encoder.text:  # scikit-learn's own TF-IDF, with the stored vocabulary and idf (its public setter)
        encoder.vectorizers_[column] = text_vectorizer(vocabulary=list(entry["vocabularies"][column]))
        encoder.vectorizers_[column].idf_ = np.asarray(entry["idf"][column], dtype=np.float64)
    encoder.numeric_mean_ = encoder.numeric_scale_ = None
    if sparse and entry["numeric_mean"] is not None:
        encoder.numeric_mean_ = np.asarray(entry["numeric_mean"], dtype=np.float64)
        encoder.numeric_scale_ = np.asarray(entry["numeric_scale"], dtype=np.float64)
    step = entry.get("step", "classifier")
    if step not in ("classifier", "ranker"):
        raise ValueError(UNKNOWN_STEP_MESSAGE.format(step=step))
    return Pipeline([("preprocess", encoder), (step, load(entry["classifier"], payload))])


def _dump_guarantee(wrapper, payload: Payload, prefix: str) -> dict:
    return {**_entry("GuaranteedThresholdClassifier", wrapper, _fitted(wrapper, skip=("estimator_",)),
                     skip_params=("estimator",)),
            "estimator": dump(wrapper.estimator_, payload, prefix + "estimator.")}


def _load_guarantee(entry: dict, payload: Payload):
    from ..estimators import GuaranteedThresholdClassifier

    inner = load(entry["estimator"], payload)
    wrapper = _rebuild(GuaranteedThresholdClassifier, entry, estimator=inner)
    wrapper.estimator_ = inner
    return wrapper


CODECS = {
    "Pipeline": (_dump_pipeline, _load_pipeline),
    "QuantileClassifier": (_dump_quantile_classifier, _load_quantile_classifier),
    "QuantileBoostingClassifier": (_dump_boosting, _load_boosting),
    "GuaranteedThresholdClassifier": (_dump_guarantee, _load_guarantee),
    "QuantileRanker": (_dump_ranker, _load_ranker),
}
"""The only classes a model file can hold: class name -> (dump, load)."""


def dump(estimator, payload: Payload, prefix: str = "") -> dict:
    """``estimator`` as a JSON entry; its tensors and blobs go into ``payload`` under names starting with ``prefix``."""
    name = type(estimator).__name__
    if name not in CODECS:
        raise TypeError(CANNOT_STORE_CLASS_MESSAGE.format(name=name, classes=", ".join(CODECS)))
    return CODECS[name][0](estimator, payload, prefix)


def load(entry: dict, payload: Payload):
    """The estimator that :func:`dump` described; ``KeyError`` for a class not in :data:`CODECS`."""
    return CODECS[entry["class"]][1](entry, payload)
