"""The fields of a model file's description, checked after its checksum and before any use.

A file whose checksum matches can still hold fields that no ``quantile-surrogate fit`` writes
(edited by hand, or written by another program): an unknown objective, a target outside
(0, 1), a column list that is not the encoder's, a label with other than two classes. Each
would fail later, inside ``predict`` or ``evaluate``, with a traceback or a message about
the data; :func:`field_problem` finds it first, so that :func:`.model_file.load_model`
refuses the file in one line.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ..objectives import OBJECTIVES

__all__ = ["field_problem"]

# What is wrong with a field, after "its field 'NAME' " in model_file.NOT_REBUILT_FIELD_MESSAGE.
NOT_TEXT = "is not a non-empty text"
NOT_CLASSES = "is not a list of two different values"
NOT_SCHEMA = "is not {'numeric': [...], 'categorical': [...]} of distinct column names"
NOT_ENCODER_COLUMNS = "does not list the encoder's columns"
NOT_WIDTH = "does not match the classifier's {n_features} input columns"
NOT_OBJECTIVE = "is not one of the objectives"
NOT_UNIT_INTERVAL = "is not a number strictly between 0 and 1"
NOT_MODEL_KIND = "is not one of the kinds of `fit --model`"
NOT_COUNT = "is not a number of rows >= 1"
NOT_NONE = "is given without 'delta'"
NOT_GROUPS = "does not agree with the model's groups"
NOT_CONSTRAINTS = "does not hold constraint texts that agree with the classifier's constraints and their column"
NOT_RANKER = "does not agree with the model: a ranker has a query column, no classes, objective or target"
NOT_RANKER_SETTING = "does not agree with the ranker's own setting"


def _text(value) -> bool:
    return isinstance(value, str) and value != ""


def _unit(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and 0 < value < 1


def _scalar(value) -> bool:
    return isinstance(value, (str, Real))


def _schema_problem(schema) -> str | None:
    if not isinstance(schema, dict) or set(schema) - {"text"} != {"numeric", "categorical"}:
        return NOT_SCHEMA
    columns = [*schema["numeric"], *schema["categorical"], *schema.get("text", [])] if all(
        isinstance(schema[k], list) for k in schema) else None
    if columns is None or not all(_text(c) for c in columns) or len(set(columns)) != len(columns):
        return NOT_SCHEMA
    return None


def _encoder_problem(saved) -> str | None:
    """The schema against the pipeline's encoder, and the encoder's width against the classifier's input."""
    pipeline = saved.model if hasattr(saved.model, "named_steps") else getattr(saved.model, "estimator_", None)
    if not hasattr(pipeline, "named_steps") or "preprocess" not in pipeline.named_steps:
        return None  # a classifier alone (the Python API's SavedModel): nothing to compare
    encoder = pipeline.named_steps["preprocess"]
    categories = getattr(encoder, "categories_", None)
    vectorizers = getattr(encoder, "vectorizers_", {})
    if list(encoder.numeric) != saved.schema["numeric"] or list(encoder.categorical) != saved.schema["categorical"] \
            or not isinstance(categories, dict) or list(categories) != saved.schema["categorical"] \
            or list(getattr(encoder, "text", [])) != saved.schema.get("text", []) \
            or list(vectorizers) != list(getattr(encoder, "text", [])):
        return NOT_ENCODER_COLUMNS
    width = len(saved.schema["numeric"]) + sum(len(np.asarray(v)) for v in categories.values()) \
        + sum(len(v.vocabulary_) for v in vectorizers.values())
    n_features = getattr(pipeline[-1], "n_features_in_", width)
    return None if n_features == width else NOT_WIDTH.format(n_features=n_features)


def _constraints_agree(saved) -> bool:
    """The constraint texts parse, name one ``by`` column (``constraint_by``; --groups' if both), and are the classifier's."""
    texts, by = saved.constraints, saved.constraint_by
    if texts is None:
        return by is None
    if not isinstance(texts, list) or not texts or not all(_text(t) for t in texts) or not (by is None or _text(by)):
        return False
    try:
        parsed = saved.parsed_constraints
    except ValueError:
        return False
    columns = {column for _, column in parsed if column is not None}
    classifier = saved._thresholded()
    return columns == ({by} if by is not None else set()) and (saved.groups is None or by in (None, saved.groups)) \
        and getattr(classifier, "constraints", None) == [constraint for constraint, _ in parsed]


def _is_ranker(saved) -> bool:
    return type(saved._thresholded()).__name__ == "QuantileRanker"


def _ranker_checks(saved, rankers) -> tuple:
    """A ranker (``fit --query``): its query column, k and threshold as its estimator's; no classifier fields."""
    ranker = saved._thresholded()
    return (
        ("query", lambda: _text(saved.query) and _is_ranker(saved), NOT_RANKER),
        ("classes", lambda: saved.classes is None, NOT_RANKER),
        ("objective", lambda: saved.objective is None, NOT_RANKER),
        ("target", lambda: saved.target is None, NOT_RANKER),
        ("delta", lambda: saved.delta is None, NOT_RANKER),
        ("model_kind", lambda: saved.model_kind in rankers and saved.model_kind == ranker.model, NOT_RANKER_SETTING),
        ("k", lambda: isinstance(saved.k, Integral) and not isinstance(saved.k, bool) and saved.k >= 1
         and saved.k == ranker.k, NOT_RANKER_SETTING),
        ("relevance_threshold", lambda: saved.relevance_threshold == ranker.relevance_threshold and (
            saved.relevance_threshold is None or (isinstance(saved.relevance_threshold, Real)
                                                  and math.isfinite(saved.relevance_threshold))),
         NOT_RANKER_SETTING),
    )


def _classifier_checks(saved) -> tuple:
    """A classifier: two classes, an objective and its target; no ranker fields."""
    return (
        ("query", lambda: not _is_ranker(saved), NOT_RANKER),
        ("k", lambda: saved.k is None, NOT_RANKER),
        ("relevance_threshold", lambda: saved.relevance_threshold is None, NOT_RANKER),
        ("classes", lambda: isinstance(saved.classes, list) and len(saved.classes) == 2
         and all(_scalar(c) for c in saved.classes) and saved.classes[0] != saved.classes[1], NOT_CLASSES),
        ("objective", lambda: isinstance(saved.objective, str) and saved.objective in OBJECTIVES, NOT_OBJECTIVE),
        ("target", lambda: _unit(saved.target), NOT_UNIT_INTERVAL),
    )


def field_problem(saved, model_kinds, rankers=()) -> tuple[str, str] | None:
    """``(field, what is wrong)`` for the first field of ``saved`` (a SavedModel) that fit cannot have written.

    ``model_kinds``: the values ``fit --model`` allows (``model_file.MODELS``); ``rankers``: those
    that ``fit --query`` trains as a ranker (``model_file.RANKERS``).
    """
    checks = (
        ("label", lambda: _text(saved.label), NOT_TEXT),
        *(_classifier_checks(saved) if saved.query is None else _ranker_checks(saved, rankers)),
        ("model_kind", lambda: isinstance(saved.model_kind, str) and saved.model_kind in model_kinds, NOT_MODEL_KIND),
        ("trained_on", lambda: _text(saved.trained_on), NOT_TEXT),
        ("n_rows", lambda: isinstance(saved.n_rows, Integral) and not isinstance(saved.n_rows, bool)
         and saved.n_rows >= 1, NOT_COUNT),
        ("delta", lambda: saved.delta is None or _unit(saved.delta), NOT_UNIT_INTERVAL),
        ("calibration_size", lambda: saved.calibration_size is None or _unit(saved.calibration_size),
         NOT_UNIT_INTERVAL),
        ("calibration_size", lambda: saved.calibration_size is None or saved.delta is not None, NOT_NONE),
        ("version", lambda: _text(saved.version), NOT_TEXT),
        ("groups", lambda: (saved.groups is None or _text(saved.groups))
         and (saved.groups is None) == (saved.group_labels is None), NOT_GROUPS),
        ("constraints", lambda: _constraints_agree(saved), NOT_CONSTRAINTS),
    )
    for field, ok, problem in checks:
        if not ok():
            return field, problem
    problem = _schema_problem(saved.schema) or _encoder_problem(saved)
    return None if problem is None else ("schema", problem)
