"""The command line's entry point (cli/__init__.py: main): options, help, warnings, Ctrl-C.

Every bad input ends in exit status 1 (bad data) or 2 (bad option), one line on stderr without a
traceback, and no file created, changed or left behind. Output paths: tests/cross/test_cli_outputs.py.
"""

import os
import signal

import pytest

from quantile_surrogate import __version__, cli
from quantile_surrogate.cli import _args, _evaluate, _file_io, _fit, _predict

from tests._cli import FIT, make_frame, run
from tests.cli.conftest import assert_refused


def at_least(minimum, text, example):
    return _args.INTEGER_AT_LEAST_MESSAGE.format(minimum=minimum, text=text, example=example)


def in_range(minimum, maximum, text, example):
    return _args.INTEGER_RANGE_MESSAGE.format(minimum=minimum, maximum=maximum, text=text, example=example)


@pytest.mark.parametrize("argv, fragments", [
    (["evaluate", "m.qs", "d.csv", "--bootstrap", "0"], ["argument --bootstrap: " + in_range(1, _args.BOOTSTRAP_MAX,
                                                                                             "0", "1000")]),
    (["evaluate", "m.qs", "d.csv", "--bootstrap", "-3"], ["argument --bootstrap: " + in_range(1, _args.BOOTSTRAP_MAX,
                                                                                              "-3", "1000")]),
    (["reproduce", "ionosphere", "--splits", "0"], ["argument --splits: " + at_least(1, "0", "100")]),
    (["reproduce", "ionosphere", "--folds", "1"], ["argument --folds: " + at_least(2, "1", "3")]),
    (["reproduce", "ionosphere", "--jobs", "0"], ["argument --jobs: " + _args.PROCESSES_MESSAGE.format(text="0")]),
    (["reproduce", "ionosphere", "--jobs", "-3"], ["argument --jobs: " + _args.PROCESSES_MESSAGE.format(text="-3")]),
    (["reproduce", "nowhere"], ["invalid choice"]),  # argparse's own texts
    (["predict"], ["required"]),
    ([], ["required: COMMAND"]),
])
def test_bad_options_of_every_command(tmp_path, capsys, monkeypatch, argv, fragments):
    monkeypatch.chdir(tmp_path)
    assert_refused(tmp_path, capsys, argv, 2, *fragments)


def test_version_and_help_text_for_every_option(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"quantile-surrogate {__version__}"
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert set(commands) == {"fit", "predict", "evaluate", "reproduce"}
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"
        code, out, _ = run([name, "--help"], capsys)
        assert code == 0 and "usage: quantile-surrogate " + name in out


def test_python_warnings_are_one_line_each(tmp_path, csv, capsys, monkeypatch):
    import warnings

    def warn_then_fail(path):
        warnings.warn("first line\n  second line", UserWarning, stacklevel=1)
        raise _file_io.InputError(f"{path}: stop here.")

    monkeypatch.setattr(_predict, "load_model", warn_then_fail)
    code, _, err = run(["predict", "m.qs", csv], capsys)
    assert code == 1
    name = "quantile-surrogate predict"
    assert err.splitlines() == [_args.WARNING_LINE.format(name=name, text="first line second line"),
                                _args.ERROR_LINE.format(name=name, text="m.qs: stop here.")]


def test_interrupt_exits_130_with_one_line(tmp_path, csv, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_fit, "read_table", interrupted)
    assert_refused(tmp_path, capsys, [*FIT, csv, "--out", tmp_path / "m.qs"], 130,
                   cli.INTERRUPTED_MESSAGE.format(name="quantile-surrogate fit"))



def test_sigterm_is_handled_as_ctrl_c_exit_143_and_removes_the_folders_it_created(fitted, tmp_path, capsys,
                                                                                  monkeypatch):
    """A real SIGTERM to this process while the plot's temporary file is written (the report's is not yet)."""
    model, _ = fitted
    make_frame(60, seed=3).to_csv(tmp_path / "test.csv", index=False)
    real_plot_writer = _evaluate.plot_writer

    def plot_then_sigterm(*args, **kwargs):
        write = real_plot_writer(*args, **kwargs)

        def write_then_sigterm(path):
            write(path)
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises at the next bytecode
            raise AssertionError("SIGTERM was not handled")
        return write_then_sigterm

    monkeypatch.setattr(_evaluate, "plot_writer", plot_then_sigterm)
    before = signal.getsignal(signal.SIGTERM)
    argv = ["evaluate", model, tmp_path / "test.csv", "--bootstrap", "20", "--out-dir", tmp_path / "new" / "sub"]
    names = sorted(os.listdir(tmp_path))
    code, _, err = run(argv, capsys)
    assert code == cli.TERMINATED == 143
    assert err.splitlines()[-1] == cli.TERMINATED_MESSAGE.format(name="quantile-surrogate evaluate")
    assert len(err.splitlines()) == 1, err
    assert sorted(os.listdir(tmp_path)) == names  # no folder new/, no temporary file
    assert signal.getsignal(signal.SIGTERM) == before  # main leaves the process's handler as it found it
