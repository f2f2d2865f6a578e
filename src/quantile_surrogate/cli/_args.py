"""Argument types for the command line: each refuses a bad value with one line that names the fix.

An ``argparse`` ``type=`` function that raises ``argparse.ArgumentTypeError`` makes the parser
report ``argument --bootstrap: must be an integer >= 1; got 0`` and exit with status 2 (a usage
error), before any file is read. :class:`OneLineParser` prints that as one line, with a pointer
to ``--help`` instead of the usage block.
"""

from __future__ import annotations

import argparse

from .._utils.checks import check_target

__all__ = ["OneLineParser", "int_at_least", "nonzero_int", "open_unit_interval", "layer_sizes"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit status 2), as every other error is."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def int_at_least(minimum: int, example: str):
    """``type=`` for an integer ``>= minimum``; ``example`` says what a good value looks like."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {text!r} (e.g. {example})")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def nonzero_int(text: str) -> int:
    """``type=`` for ``--jobs``: a number of processes >= 1, or -1 for every core (joblib's convention)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"must be a number of processes >= 1, or -1 for all cores; got {text!r}")
    return value


def open_unit_interval(example: str):
    """``type=`` for a float strictly between 0 and 1 (the rule of :func:`~quantile_surrogate._utils.checks.check_target`)."""
    def parse(text: str) -> float:
        try:
            return check_target(float(text), "target")
        except ValueError:  # not a number, or outside (0, 1): one message, naming the option's text
            raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1; got {text!r} (e.g. {example})") from None
    parse.__name__ = "number in (0, 1)"
    return parse


def layer_sizes(text: str) -> tuple[int, ...]:
    """``type=`` for ``--hidden-layer-sizes 64,32``: positive integers separated by commas."""
    try:
        sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"must be positive integers separated by commas, e.g. 64,32; got {text!r}")
    return sizes
