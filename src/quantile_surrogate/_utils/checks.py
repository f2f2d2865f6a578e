"""Argument checks shared by the public functions, and their messages.

The public functions validate once; internal hot paths (the training loop) call the
unchecked ``_`` versions afterwards, as scikit-learn does with ``check_input=False``.
Messages are module constants so that tests can ``match=`` them (the fairlearn habit).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from .sparse import stored_values

LEVEL_RANGE_MESSAGE = (
    "`{name}` must be in [0, 1]; got {value!r}. A quantile level is a fraction of the "
    "sorted scores, e.g. recall=0.95 gives level 0.05."
)
TARGET_RANGE_MESSAGE = (
    "`{name}` must be strictly between 0 and 1; got {value!r}. Pass a rate such as "
    "recall=0.95 or rate=0.05 (precision@K on N rows is rate=K/N)."
)
BANDWIDTH_MESSAGE = "`bandwidth` must be a finite number > 0; got {value!r}. The paper uses 0.05 to 0.08."
EMPTY_MESSAGE = "`{name}` is empty; pass at least one score."
NONFINITE_MESSAGE = (
    "`{name}` contains NaN or inf ({count} of {total} values); pass finite values (check the model "
    "or the data that produced them)."
)
NOT_TENSOR_MESSAGE = "`{name}` must be a torch.Tensor; got {type_name}. Wrap it with torch.as_tensor."
NOT_FLOAT_MESSAGE = "`{name}` must be a floating point tensor; got dtype {dtype}. Call .float() on it."
NOT_1D_MESSAGE = "`{name}` must be 1-D of shape (n,); got shape {shape}. Flatten it with .reshape(-1)."
NOT_BINARY_MESSAGE = (
    "`{name}` must be binary, {accepted}; got values {values}. Only binary classification is supported: "
    "map the positive class to 1 and every other class to 0 (one class against the rest)."
)
"""The one message for labels that are not binary (:func:`check_binary`, :func:`check_two_classes`).

It names the argument, what it accepts (:data:`BINARY_01`, :data:`BINARY_SIGNED` or
:data:`BINARY_CLASSES`), the first distinct values received and the fix. It contains
scikit-learn's phrase "Only binary classification is supported", which its common checks look for."""
BINARY_01 = "values in {0, 1}, or bool"
BINARY_SIGNED = "values in {0, 1} or {-1, 1}, or bool"
BINARY_CLASSES = "exactly two classes"
LENGTH_MISMATCH_MESSAGE = (
    "`{name}` has {got} entries but `scores` has {expected}; they must have one entry per row."
)
REDUCTION_MESSAGE = "`reduction` must be one of 'mean', 'sum', 'none'; got {value!r}."
OPTION_MESSAGE = "`{name}` must be one of {options}; got {value!r}."
OPTION_TYPE_MESSAGE = "`{name}` must be a string, one of {options}; got {type_name}."
NUMBER_TYPE_MESSAGE = "`{name}` must be a real number; got {type_name}."
BOOL_MESSAGE = "`{name}` must be True or False; got {type_name} {value!r}."
MASK_DTYPE_MESSAGE = "`{name}` must be a bool tensor (a row mask); got dtype {dtype}. Use `mask == 1`."
TARGETS_TYPE_MESSAGE = "`{name}` must be a sequence of rates such as (0.1, 0.2, ..., 0.9); got {type_name}."
TARGETS_EMPTY_MESSAGE = "`{name}` is empty; pass a grid such as (0.1, 0.2, ..., 0.9)."
GROUPS_TYPE_MESSAGE = (
    "`{name}` must be an integer tensor of group codes 0..G-1; encode labels with numpy.unique(..., return_inverse=True)."
)
GROUPS_SHAPE_MESSAGE = "`{name}` has shape {shape}; it needs one group code per row ({n})."
GROUPS_NEGATIVE_MESSAGE = "`{name}` must hold codes >= 0; got {value}. Encode labels as 0..G-1."
LABELS_DTYPE_MESSAGE = "`labels` must be a real or bool tensor; got dtype {dtype}."

REDUCTIONS = ("mean", "sum", "none")


def check_number(value, name: str) -> float:
    """Return ``value`` as a float, raising ``TypeError`` for non-numbers (bool included)."""
    if type(value) is float or type(value) is int:  # the common case, before the slower ABC check
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(NUMBER_TYPE_MESSAGE.format(name=name, type_name=type(value).__name__))
    return float(value)


def check_level(value, name: str = "level") -> float:
    """A quantile level in the closed interval [0, 1]."""
    value = check_number(value, name)
    if not 0.0 <= value <= 1.0:
        raise ValueError(LEVEL_RANGE_MESSAGE.format(name=name, value=value))
    return value


def check_target(value, name: str) -> float:
    """A target rate (recall, predicted positive rate, FPR) in the open interval (0, 1)."""
    value = check_number(value, name)
    if not 0.0 < value < 1.0:
        raise ValueError(TARGET_RANGE_MESSAGE.format(name=name, value=value))
    return value


def check_bandwidth(value) -> float:
    value = check_number(value, "bandwidth")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(BANDWIDTH_MESSAGE.format(value=value))
    return value


def check_option(value, options, name: str):
    """``value`` is one of ``options``: ``TypeError`` for a non-string among string options, else ``ValueError``."""
    if not isinstance(value, str) and all(isinstance(option, str) for option in options):
        raise TypeError(OPTION_TYPE_MESSAGE.format(name=name, options=sorted(options), type_name=type(value).__name__))
    if value not in options:
        raise ValueError(OPTION_MESSAGE.format(name=name, options=sorted(options), value=value))
    return value


def check_reduction(value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(OPTION_TYPE_MESSAGE.format(name="reduction", options=list(REDUCTIONS),
                                                   type_name=type(value).__name__))
    if value not in REDUCTIONS:
        raise ValueError(REDUCTION_MESSAGE.format(value=value))
    return value


def _check_float_tensor(value, name: str, ndim: int, shape_message: str) -> None:
    """``value`` is a floating point tensor with ``ndim`` dimensions (``TypeError`` / ``ValueError`` otherwise)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name, type_name=type(value).__name__))
    if not value.is_floating_point():
        raise TypeError(NOT_FLOAT_MESSAGE.format(name=name, dtype=value.dtype))
    if value.ndim != ndim:
        raise ValueError(shape_message.format(name=name, shape=tuple(value.shape)))


def check_scores(scores, name: str = "scores", *, finite: bool = True) -> torch.Tensor:
    """A non-empty 1-D floating point tensor; with ``finite``, also free of NaN and inf."""
    _check_float_tensor(scores, name, 1, NOT_1D_MESSAGE)
    if scores.numel() == 0:
        raise ValueError(EMPTY_MESSAGE.format(name=name))
    if finite and not all_finite(scores):
        _raise_nonfinite(scores, name)
    return scores


def all_finite(values: torch.Tensor) -> bool:
    """Whether every entry is finite, by one reduction (one device sync).

    A sum is NaN or +-inf as soon as one entry is (inf + x = inf, inf - inf = NaN), so a finite
    sum proves every entry finite; that costs one SIMD pass, where ``isfinite(x).all()`` writes
    a bool per entry first (about 20x slower on one CPU thread at 1e5 float32 values). A
    non-finite sum of finite entries (overflow of huge values) falls back to the exact check.
    Half precision is summed in float32 so that 1e5 float16 values near 65504 do not overflow.
    """
    return _finite_given_sum(_finiteness_sum(values).item(), values)


def _finiteness_sum(values: torch.Tensor) -> torch.Tensor:
    values = values.detach()
    return values.sum(dtype=torch.float32 if values.dtype in (torch.float16, torch.bfloat16) else None)


def _finite_given_sum(total: float, values: torch.Tensor) -> bool:
    return math.isfinite(total) or bool(torch.isfinite(values.detach()).all())


def _raise_nonfinite(scores: torch.Tensor, name: str):
    bad = int((~torch.isfinite(scores.detach())).sum())
    raise ValueError(NONFINITE_MESSAGE.format(name=name, count=bad, total=scores.numel()))


def check_binary(labels, name: str = "labels", *, signed: bool = False):
    """Binary labels, returned as a bool mask of the positives (True where the label is 1 or True).

    The one check that labels are binary, with the one message :data:`NOT_BINARY_MESSAGE`.
    A tensor (without ``signed``) is checked on its device in one pass (its min and max) and
    gives a bool tensor; anything else (a NumPy array, a list, a tensor with ``signed``) is
    checked as a NumPy array and gives a bool array.

    Parameters
    ----------
    labels : Tensor or array-like of shape (n,)
        Bool labels, or numbers in {0, 1} (any numeric dtype; ``0.5`` or NaN is refused).
    name : str, default="labels"
        The argument's name, for the message.
    signed : bool, default=False
        Also accept -1 for the negative class (the paper's {-1, +1}).

    Returns
    -------
    Tensor or ndarray of bool, shape (n,)
        ``labels == 1``.

    Raises
    ------
    ValueError
        :data:`NOT_BINARY_MESSAGE` if a label is not in the accepted set.

    Examples
    --------
    >>> import numpy as np
    >>> check_binary(np.array([0, 1, 1]), "y")
    array([False,  True,  True])
    >>> check_binary([-1, 1], "y_true", signed=True)
    array([False,  True])
    """
    if isinstance(labels, torch.Tensor) and not signed:
        if labels.dtype == torch.bool:
            return labels
        if labels.numel():
            _check_label_range(labels, _label_range(labels).tolist(), name)
        return labels == 1
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    values = np.asarray(labels)
    if values.dtype != bool:
        accepted = (values == 0) | (values == 1)
        if signed:
            accepted |= values == -1
        if not np.all(accepted):
            raise ValueError(NOT_BINARY_MESSAGE.format(name=name, accepted=BINARY_SIGNED if signed else BINARY_01,
                                                       values=_first_distinct(values)))
    return values == 1


def check_two_classes(classes, name: str = "y"):
    """``classes`` (the distinct labels, as ``numpy.unique`` gives them) are at most two; returned as they are.

    The estimators' form of :func:`check_binary`: they accept any two labels (strings
    included) and refuse a third with :data:`NOT_BINARY_MESSAGE`.

    Examples
    --------
    >>> check_two_classes(["no", "yes"])
    ['no', 'yes']
    """
    if len(classes) > 2:
        raise ValueError(NOT_BINARY_MESSAGE.format(name=name, accepted=BINARY_CLASSES,
                                                   values=list(np.asarray(classes)[:6].tolist())))
    return classes


def _first_distinct(values: np.ndarray) -> list:
    """Up to 6 distinct values for a message, sorted where they can be."""
    try:
        return np.unique(values)[:6].tolist()
    except TypeError:  # an object array of mixed types cannot be sorted
        return list(dict.fromkeys(values.tolist()))[:6]


def check_labels(labels, n: int) -> torch.Tensor:
    """Binary labels of length ``n`` (bool, or {0, 1} of any numeric dtype), returned as a bool tensor (True = positive).

    Labels must be a ``torch.Tensor``, like the scores: a list or a NumPy array raises
    ``TypeError`` (the losses never guess how to move an array to the scores' device).
    """
    _check_label_tensor(labels, n)
    return check_binary(labels, "labels")


def check_scores_and_targets(scores, labels) -> torch.Tensor:
    """:func:`check_scores` and :func:`check_labels` with one device sync; returns the labels as 0/1 floats.

    The targets have the dtype of the scores' sums and counts (at least float32). The scores'
    finiteness sum and the labels' range are read back together, so a validated loss call on a
    GPU waits for the device once. Integer labels are read once: they are cast first and their
    range taken on the cast (an integer outside {0, 1} casts to a float outside {0, 1}), because
    each pass over int64 labels that a large forward pass has evicted from the cache costs as
    much as the surrogate's own pass.
    """
    check_scores(scores, finite=False)
    _check_label_tensor(labels, scores.numel())
    total = _finiteness_sum(scores)  # in the dtype of the targets: float32 for half precision, else the scores'
    targets = labels.to(total.dtype)
    if labels.dtype == torch.bool:
        summary = [total.item()]
    elif labels.is_floating_point():  # 0.5 is ruled out on the labels themselves (a cast could round it away)
        summary = torch.cat([total.reshape(1), _label_range(labels).to(total.dtype)]).tolist()
    else:
        summary = torch.stack((total, *torch.aminmax(targets))).tolist()
    if not _finite_given_sum(summary[0], scores):
        _raise_nonfinite(scores, "scores")
    if labels.dtype != torch.bool:
        _check_label_range(labels, summary[1:])
    return targets


def _check_label_tensor(labels, n: int):
    if not isinstance(labels, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name="labels", type_name=type(labels).__name__))
    if labels.ndim != 1:
        raise ValueError(NOT_1D_MESSAGE.format(name="labels", shape=tuple(labels.shape)))
    if labels.numel() != n:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name="labels", got=labels.numel(), expected=n))
    if labels.is_complex():
        raise TypeError(LABELS_DTYPE_MESSAGE.format(dtype=labels.dtype))


def _label_range(labels: torch.Tensor) -> torch.Tensor:
    """``(low, high)``, both in {0, 1} iff every label is: one pass (min and max) for integers; floats
    also need 0.5 ruled out (and NaN, since NaN != 0), which sets ``high`` to 2."""
    labels = labels.detach()
    if labels.is_floating_point():
        outside = ((labels != 0) & (labels != 1)).any()
        return torch.stack([torch.zeros_like(outside, dtype=torch.float32), 1.0 + outside.float()])
    return torch.stack(torch.aminmax(labels))


def _check_label_range(labels: torch.Tensor, bounds, name: str = "labels"):
    """The tensor path of :func:`check_binary`, given ``(low, high)`` of :func:`_label_range` (read back once)."""
    low, high = bounds
    if low < 0 or high > 1:
        shown = torch.unique(labels.detach())[:6].tolist()
        raise ValueError(NOT_BINARY_MESSAGE.format(name=name, accepted=BINARY_01, values=shown))


def check_mask(mask, n: int, name: str) -> torch.Tensor:
    """A boolean row mask of length ``n``."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name, type_name=type(mask).__name__))
    if mask.dtype != torch.bool:
        raise TypeError(MASK_DTYPE_MESSAGE.format(name=name, dtype=mask.dtype))
    if mask.ndim != 1 or mask.numel() != n:
        raise ValueError(LENGTH_MISMATCH_MESSAGE.format(name=name, got=mask.numel(), expected=n))
    return mask


# -- train()'s arguments (quantile_surrogate.training) ---------------------------------------------
FINITE_CHECK_VALUES = 1 << 22
"""Values per chunk of :func:`check_training_data`'s NaN/inf check (32 MiB of float64).
``torch.isfinite(X)`` builds temporaries as large as its input (``|X|`` and masks): 1.4x the
size of X measured on all of a float64 X, about 2x this chunk done in chunks."""

GROUP_WITHOUT_A_MESSAGE = (
    "Group {group} in `{name}` has no row of the subset A ({subset}) for {objective!r}, so its threshold "
    "is undefined; merge it with another group or drop its rows{more}"
)
GROUP_CODES_TYPE_MESSAGE = (
    "`{name}` must be an integer torch.Tensor of group codes 0..G-1; encode labels with "
    "numpy.unique(..., return_inverse=True) (QuantileClassifier.fit does this for you)."
)
INTEGER_TYPE_MESSAGE = "`{name}` must be {wanted}; got {type_name} {value!r}. Pass e.g. {name}={example}."
INTEGER_RANGE_MESSAGE = "`{name}` must be {wanted}; got {value!r}."
FINITE_NUMBER_MESSAGE = "`{name}` must be a finite number in {interval}; got {value!r}."
NOT_2D_MESSAGE = "`{name}` must be 2-D of shape (n, d); got shape {shape}. Reshape a single feature with .reshape(-1, 1)."
DATA_NONFINITE_MESSAGE = "`{name}` contains NaN or inf; impute or drop those rows first."
LABELS_PER_ROW_MESSAGE = "`{name}` must be a 1-D tensor with one label per row of `{name_x}` ({n}); got shape {shape}."


def check_integer(value, name: str, minimum: int, allow_none: bool = False):
    """An int (Python or NumPy, not bool) >= ``minimum``, or None if ``allow_none``."""
    if value is None and allow_none:
        return None
    wanted = f"an integer >= {minimum}" + (" or None" if allow_none else "")
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(INTEGER_TYPE_MESSAGE.format(name=name, wanted=wanted, type_name=type(value).__name__,
                                                    value=value, example=max(minimum, 1)))
    if value < minimum:
        raise ValueError(INTEGER_RANGE_MESSAGE.format(name=name, wanted=wanted, value=value))
    return int(value)


def check_finite_number(value, name: str, *, low: float, low_inclusive: bool, high: float | None = None) -> float:
    """A finite real number in ``[low, high)`` (or ``(low, high)`` without ``low_inclusive``)."""
    value = check_number(value, name)
    above = value >= low if low_inclusive else value > low
    if not (math.isfinite(value) and above and (high is None or value < high)):
        interval = ("[" if low_inclusive else "(") + f"{low:g}, " + ("inf)" if high is None else f"{high:g})")
        raise ValueError(FINITE_NUMBER_MESSAGE.format(name=name, interval=interval, value=value))
    return value


def check_training_data(X, y, name_x: str = "X", name_y: str = "y") -> torch.Tensor:
    """``X`` a finite 2-D float tensor, ``y`` binary with one label per row; returns ``y`` as bool.

    The NaN/inf check runs in chunks of rows (:data:`FINITE_CHECK_VALUES` values), so that
    it never holds a second copy of ``X``.
    """
    _check_float_tensor(X, name_x, 2, NOT_2D_MESSAGE)
    values = stored_values(X)  # a sparse X: its stored values, in chunks of as many values as dense rows
    rows = FINITE_CHECK_VALUES if values.ndim == 1 else max(1, FINITE_CHECK_VALUES // max(1, X.shape[1]))
    for chunk in values.split(rows):
        if not all_finite(chunk):
            raise ValueError(DATA_NONFINITE_MESSAGE.format(name=name_x))
    if not isinstance(y, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name_y, type_name=type(y).__name__))
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(LABELS_PER_ROW_MESSAGE.format(name=name_y, name_x=name_x, n=X.shape[0], shape=tuple(y.shape)))
    return check_binary(y, name_y)


def check_group_codes(groups, in_subset: torch.Tensor, *, subset: str, objective: str,
                      name: str = "groups") -> torch.Tensor:
    """Integer group codes, one per row, each group with a row of ``A`` (``in_subset``); int64 on its device.

    ``subset`` and ``objective`` only name ``A`` in the message.
    """
    if not isinstance(groups, torch.Tensor) or groups.dtype == torch.bool or groups.is_floating_point() \
            or groups.is_complex():
        raise TypeError(GROUP_CODES_TYPE_MESSAGE.format(name=name))
    if groups.ndim != 1 or groups.shape[0] != in_subset.shape[0]:
        raise ValueError(GROUPS_SHAPE_MESSAGE.format(name=name, shape=tuple(groups.shape), n=in_subset.shape[0]))
    groups = groups.to(device=in_subset.device, dtype=torch.int64)
    if groups.numel() and int(groups.min()) < 0:
        raise ValueError(GROUPS_NEGATIVE_MESSAGE.format(name=name, value=int(groups.min())))
    missing = sorted(set(torch.unique(groups).tolist()) - set(torch.unique(groups[in_subset]).tolist()))
    if missing:
        more = f" (groups without A: {missing[:6]})." if len(missing) > 1 else "."
        raise ValueError(GROUP_WITHOUT_A_MESSAGE.format(group=missing[0], name=name, subset=subset,
                                                        objective=objective, more=more))
    return groups


# -- the losses' arguments (quantile_surrogate.losses, quantile_surrogate.losses.modules) ----------------
def check_targets(values, name: str) -> tuple:
    """A non-empty sequence of target rates, each in (0, 1) (as :func:`check_target`); returned as a tuple of floats."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(TARGETS_TYPE_MESSAGE.format(name=name, type_name=type(values).__name__))
    if len(values) == 0:
        raise ValueError(TARGETS_EMPTY_MESSAGE.format(name=name))
    return tuple(check_target(value, name) for value in values)


def check_bool(value, name: str) -> bool:
    """A Python or NumPy bool (not 0/1, not a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(BOOL_MESSAGE.format(name=name, type_name=type(value).__name__, value=value))
    return bool(value)


def check_groups(groups, n: int, name: str = "groups") -> torch.Tensor:
    """Integer group codes 0..G-1, one per row of ``n`` (the losses' ``groups`` and ``threshold_groups``)."""
    if not isinstance(groups, torch.Tensor) or groups.dtype == torch.bool or groups.is_floating_point() \
            or groups.is_complex():
        raise TypeError(GROUPS_TYPE_MESSAGE.format(name=name))
    if groups.ndim != 1 or groups.numel() != n:
        raise ValueError(GROUPS_SHAPE_MESSAGE.format(name=name, shape=tuple(groups.shape), n=n))
    if groups.numel() and int(groups.min()) < 0:
        raise ValueError(GROUPS_NEGATIVE_MESSAGE.format(name=name, value=int(groups.min())))
    return groups


# -- row weights (losses' `weight=`, estimators' and metrics' `sample_weight=`) --------------------
WEIGHT_TYPE_MESSAGE = "`{name}` must be an array of numbers, one per row; got {type_name}."
WEIGHT_SHAPE_MESSAGE = "`{name}` has shape {shape}; it needs one weight per row: shape ({n},)."
WEIGHT_NONFINITE_MESSAGE = "`{name}` has {count} NaN or infinite values; weights must be finite numbers >= 0."
WEIGHT_NEGATIVE_MESSAGE = "`{name}` has {count} negative values (min {low:g}); weights must be >= 0 (0 drops a row)."
WEIGHT_ZERO_MESSAGE = "`{name}` sums to zero: every row would be dropped; give some row a positive weight."


def check_sample_weight(weight, n: int, name: str = "sample_weight", zero_total_ok: bool = False) -> np.ndarray:
    """Row weights as a float64 NumPy array of shape (n,): finite, >= 0, not all zero.

    Weights are frequency weights: an integer weight ``w`` counts a row ``w`` times. Accepts
    array-likes and tensors (CPU or not); raises ``TypeError`` for non-numeric input and
    ``ValueError`` (naming ``name``) for a wrong length, NaN/inf, negatives or a zero total
    (``zero_total_ok``: one worker's rows of many, whose total is checked over every worker).
    """
    if isinstance(weight, torch.Tensor):
        weight = weight.detach().cpu().numpy()
    try:
        values = np.asarray(weight, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(WEIGHT_TYPE_MESSAGE.format(name=name, type_name=type(weight).__name__)) from error
    if values.ndim != 1 or values.size != n:
        raise ValueError(WEIGHT_SHAPE_MESSAGE.format(name=name, shape=values.shape, n=n))
    if not np.isfinite(values).all():
        raise ValueError(WEIGHT_NONFINITE_MESSAGE.format(name=name, count=int((~np.isfinite(values)).sum())))
    if (values < 0).any():
        raise ValueError(WEIGHT_NEGATIVE_MESSAGE.format(name=name, count=int((values < 0).sum()), low=float(values.min())))
    if not (zero_total_ok or values.sum() > 0):
        raise ValueError(WEIGHT_ZERO_MESSAGE.format(name=name))
    return values


def check_weight_tensor(weight, n: int, name: str = "weight") -> torch.Tensor:
    """The losses' ``weight=``: a floating point tensor of shape (n,) that :func:`check_sample_weight` accepts."""
    if not isinstance(weight, torch.Tensor):
        raise TypeError(NOT_TENSOR_MESSAGE.format(name=name, type_name=type(weight).__name__))
    if not weight.is_floating_point():
        raise TypeError(NOT_FLOAT_MESSAGE.format(name=name, dtype=weight.dtype))
    check_sample_weight(weight, n, name)
    return weight
