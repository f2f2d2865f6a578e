"""The ``quantile-surrogate`` command: argument parsing only.

Each sub-command lives in the module that owns its logic and registers itself through a
``register(subparsers)`` function that sets ``handler`` on its parser:

- ``reproduce``: :mod:`quantile_surrogate.experiments.command` (the paper's tables);
- ``fit``, ``predict``, ``evaluate``: :mod:`quantile_surrogate.cli.file_commands` (a user's CSV/Parquet).
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "quantile_surrogate.experiments.command",
    "quantile_surrogate.cli.file_commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quantile-surrogate",
        description="Train and evaluate classifiers at a rate-constrained operating point.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
