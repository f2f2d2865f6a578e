"""``python -m quantile_surrogate.cli`` (cli/__main__.py) runs the command and exits with its status.

In a separate process, as a shell runs it: tests/cross/test_cli_process.py.
"""

import runpy
import sys

import pytest

from quantile_surrogate import __version__


@pytest.mark.parametrize("argv, code", [(["--version"], 0), (["fit"], 2)])
def test_running_the_package_exits_with_mains_status(monkeypatch, capsys, argv, code):
    monkeypatch.setattr(sys, "argv", ["quantile-surrogate", *argv])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("quantile_surrogate.cli", run_name="__main__")
    assert done.value.code == code
    captured = capsys.readouterr()
    if code == 0:
        assert captured.out == f"quantile-surrogate {__version__}\n"
    else:
        assert captured.out == "" and len(captured.err.splitlines()) == 1
