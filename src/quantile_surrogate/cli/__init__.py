"""The ``quantile-surrogate`` command: argument parsing and the one place errors are reported.

Each sub-command lives in the module that owns its logic and registers itself through a
``register(subparsers)`` function that sets ``handler`` on its parser:

- ``reproduce``: :mod:`quantile_surrogate.cli._reproduce` (the paper's tables);
- ``fit``, ``predict``, ``evaluate`` on a user's CSV or Parquet file: :mod:`quantile_surrogate.cli._fit`,
  :mod:`quantile_surrogate.cli._predict` and :mod:`quantile_surrogate.cli._evaluate` (the latter two
  score a saved model through :mod:`quantile_surrogate.cli._scoring`).

Exit status: 0 done; 1 bad data or an output that cannot be written (one line on stderr
naming the file and the problem; nothing written); 2 a bad option (one line); 130 interrupted
with Ctrl-C (one line); 143 stopped by SIGTERM (``kill``, ``timeout``, a container stop, a
scheduler), handled as Ctrl-C: one line, no temporary file and no folder the command created left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import warnings

from . import _evaluate, _fit, _predict, _reproduce
from ._args import ERROR_LINE, USAGE_ERROR_LINE, WARNING_LINE, OneLineParser

__all__ = ["main"]

COMMAND_MODULES = (_reproduce, _fit, _predict, _evaluate)
"""The sub-command modules, in the order ``--help`` lists them; each has ``register(subparsers)``."""
INTERRUPTED = 130
"""128 + SIGINT, what shells report for a program stopped with Ctrl-C."""
INTERRUPTED_MESSAGE = "{name}: interrupted (Ctrl-C); no half-written file was left."
TERMINATED = 143
"""128 + SIGTERM, what shells report for a program stopped by ``kill`` or ``timeout``."""
TERMINATED_MESSAGE = "{name}: terminated (SIGTERM); no half-written file was left."
OS_ERROR_TEXT = "{filename}: {reason}."


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's exception would be, so that every cleanup of Ctrl-C runs for it too."""


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Within the block, SIGTERM raises :class:`Terminated` (in the main thread; elsewhere it is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the cleanup short
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


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
        bad option; 130 interrupted with Ctrl-C; 143 stopped by SIGTERM.

    Examples
    --------
    >>> from quantile_surrogate.cli import main
    >>> main(["--version"])  # doctest: +ELLIPSIS
    quantile-surrogate ...
    0
    >>> main(["fit"])  # a bad option: one line on stderr, exit status 2
    2
    """
    with _sigterm_as_interrupt():
        return _run(argv)


def _run(argv) -> int:
    from .._utils.files import OutputPathError
    from ._file_io import InputError

    name = "quantile-surrogate"
    try:
        args = build_parser().parse_args(argv)
        name = f"quantile-surrogate {args.command}"
        conflict = getattr(args, "check_options", lambda _: None)(args)  # options valid alone, not together
        if conflict is not None:
            print(USAGE_ERROR_LINE.format(prog=name, message=conflict), end="", file=sys.stderr)
            return 2
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(name)
            return int(args.handler(args) or 0)
    except SystemExit as done:  # argparse: --help, --version, or a bad option (already printed)
        return done.code if isinstance(done.code, int) else int(done.code is not None)
    except Terminated:
        print(TERMINATED_MESSAGE.format(name=name), file=sys.stderr)
        return TERMINATED
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
