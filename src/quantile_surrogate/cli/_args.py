"""Argument types for the command line: each refuses a bad value with one line that names the fix.

An ``argparse`` ``type=`` function that raises ``argparse.ArgumentTypeError`` makes the parser
report ``argument --bootstrap: must be an integer >= 1; got 0`` and exit with status 2 (a usage
error), before any file is read. :class:`OneLineParser` prints that as one line, with a pointer
to ``--help`` instead of the usage block. The formats of the command's one-line reports (an
error, a warning) are here too, beside the parser's.
"""

from __future__ import annotations

import argparse
import math

from .._utils.checks import check_target

__all__ = ["OneLineParser", "int_at_least", "int_in_range", "seed", "nonzero_int", "open_unit_interval", "layer_sizes",
           "finite_number"]

# The command line's one-line reports: a bad option (exit status 2), an error (1), a warning.
USAGE_ERROR_LINE = "{prog}: error: {message} (see `{prog} --help`)\n"
ERROR_LINE = "{name}: error: {text}"
WARNING_LINE = "{name}: warning: {text}"
STDOUT_WRITE_MESSAGE = "standard output: cannot write ({reason})."
# What argparse prints after "argument --option: ".
INTEGER_AT_LEAST_MESSAGE = "must be an integer >= {minimum}; got {text!r} (e.g. {example})"
PROCESSES_MESSAGE = "must be a number of processes >= 1, or -1 for all cores; got {text!r}"
UNIT_INTERVAL_MESSAGE = "must be strictly between 0 and 1; got {text!r} (e.g. {example})"
FINITE_NUMBER_MESSAGE = "must be a finite number; got {text!r} (e.g. {example})"
LAYER_SIZES_MESSAGE = "must be positive integers separated by commas, e.g. 64,32; got {text!r}"
INTEGER_RANGE_MESSAGE = "must be an integer from {minimum} to {maximum}; got {text!r} (e.g. {example})"
SEED_MAX = 2**32 - 1
"""The largest seed NumPy and scikit-learn accept (``random_state`` is a 32-bit unsigned integer)."""
BOOTSTRAP_MAX = 100_000
"""The most ``--bootstrap`` resamples: beyond it the interval's ends no longer move, only the run time grows."""
# Options that are each valid alone but not together; after "argument --option: ", as argparse's own.
CALIBRATION_WITHOUT_DELTA_MESSAGE = ("has no effect without --delta (only a guarantee holds rows out); add --delta, "
                                     "e.g. --delta 0.05, or leave out --calibration-size")
DROP_NAMES_LABEL_MESSAGE = ("names the label column {column!r} (--label); the label is never a feature, so leave it "
                            "out of --drop")
OPTION_CONFLICT_LINE = "argument {flag}: {message}"


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit status 2), as every other error is."""

    def error(self, message):
        self.exit(2, USAGE_ERROR_LINE.format(prog=self.prog, message=message))


def int_at_least(minimum: int, example: str):
    """``type=`` for an integer ``>= minimum``; ``example`` says what a good value looks like."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(INTEGER_AT_LEAST_MESSAGE.format(minimum=minimum, text=text,
                                                                             example=example))
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def int_in_range(minimum: int, maximum: int, example: str):
    """``type=`` for an integer from ``minimum`` to ``maximum`` (both included)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(INTEGER_RANGE_MESSAGE.format(minimum=minimum, maximum=maximum, text=text,
                                                                          example=example))
        return value
    parse.__name__ = f"integer from {minimum} to {maximum}"
    return parse


seed = int_in_range(0, SEED_MAX, "0")
"""``type=`` for ``--seed``: what NumPy's and scikit-learn's ``random_state`` accept."""


def nonzero_int(text: str) -> int:
    """``type=`` for ``--jobs``: a number of processes >= 1, or -1 for every core (joblib's convention)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(PROCESSES_MESSAGE.format(text=text))
    return value


def open_unit_interval(example: str):
    """``type=`` for a float strictly between 0 and 1 (the rule of :func:`~quantile_surrogate._utils.checks.check_target`)."""
    def parse(text: str) -> float:
        try:
            return check_target(float(text), "target")
        except ValueError:  # not a number, or outside (0, 1): one message, naming the option's text
            raise argparse.ArgumentTypeError(UNIT_INTERVAL_MESSAGE.format(text=text, example=example)) from None
    parse.__name__ = "number in (0, 1)"
    return parse


def finite_number(example: str):
    """``type=`` for any finite float (not NaN, not inf), e.g. a grade of ``--relevance-threshold``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(FINITE_NUMBER_MESSAGE.format(text=text, example=example))
        return value
    parse.__name__ = "finite number"
    return parse


def layer_sizes(text: str) -> tuple[int, ...]:
    """``type=`` for ``--hidden-layer-sizes 64,32``: positive integers separated by commas."""
    try:
        sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(LAYER_SIZES_MESSAGE.format(text=text))
    return sizes
