"""The ``quantile-surrogate`` command: argument parsing and the one place errors are reported.

Each sub-command lives in the module that owns its logic and registers itself through a
``register(subparsers)`` function that sets ``handler`` on its parser:

- ``reproduce``: :mod:`quantile_surrogate.cli._reproduce` (the paper's tables);
- ``fit``, ``predict``, ``evaluate`` on a user's CSV or Parquet file: :mod:`quantile_surrogate.cli._fit`,
  :mod:`quantile_surrogate.cli._predict` and :mod:`quantile_surrogate.cli._evaluate` (the latter two
  score a saved model through :mod:`quantile_surrogate.cli._scoring`).

Exit status: 0 done; 1 bad data or an output that cannot be written (one line on stderr
naming the file and the problem; nothing written); 2 a bad option (one line); 130 interrupted
with Ctrl-C (one line).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

from . import _evaluate, _fit, _predict, _reproduce
from ._args import ERROR_LINE, WARNING_LINE, OneLineParser

__all__ = ["main"]

COMMAND_MODULES = (_reproduce, _fit, _predict, _evaluate)
"""The sub-command modules, in the order ``--help`` lists them; each has ``register(subparsers)``."""
INTERRUPTED = 130
"""128 + SIGINT, what shells report for a program stopped with Ctrl-C."""
INTERRUPTED_MESSAGE = "{name}: interrupted (Ctrl-C); no half-written file was left."
OS_ERROR_TEXT = "{filename}: {reason}."


def build_parser() -> OneLineParser:
    from .. import __version__

    parser = OneLineParser(
        prog="quantile-surrogate",
        description="Train and evaluate classifiers at a rate-constrained operating point.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def _one_line(error: BaseException) -> str:
    """The error's message on one line; an ``OSError`` as 'PATH: reason'."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return OS_ERROR_TEXT.format(filename=error.filename, reason=error.strerror)
    text = " ".join(str(error).split())
    return text or type(error).__name__


def _one_line_warning(name: str):
    """``warnings.showwarning`` for the command line: one line naming the command, not the source line."""
    def show(message, category, filename, lineno, file=None, line=None):
        print(WARNING_LINE.format(name=name, text=" ".join(str(message).split())), file=sys.stderr)
    return show


def _quiet_stdout() -> None:
    """The reader of a pipe left (``predict ... | head``): point stdout at /dev/null so the exit flush is silent."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv=None) -> int:
    """Run the ``quantile-surrogate`` command line and return its exit status.

    The console script ``quantile-surrogate`` (and ``python -m quantile_surrogate.cli``)
    calls it with the process's arguments and exits with its result. Errors never escape as
    tracebacks: each is reported as one line on stderr.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        0 done; 1 bad data or an output that cannot be written (nothing is written); 2 a
        bad option; 130 interrupted with Ctrl-C.

    Examples
    --------
    >>> from quantile_surrogate.cli import main
    >>> main(["--version"])  # doctest: +ELLIPSIS
    quantile-surrogate ...
    0
    >>> main(["fit"])  # a bad option: one line on stderr, exit status 2
    2
    """
    from .._utils.files import OutputPathError
    from ._file_io import InputError

    name = "quantile-surrogate"
    try:
        args = build_parser().parse_args(argv)
        name = f"quantile-surrogate {args.command}"
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(name)
            return int(args.handler(args) or 0)
    except SystemExit as done:  # argparse: --help, --version, or a bad option (already printed)
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    except KeyboardInterrupt:
        print(INTERRUPTED_MESSAGE.format(name=name), file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except (InputError, OutputPathError, OSError) as error:
        print(ERROR_LINE.format(name=name, text=_one_line(error)), file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
