"""The command line in a real subprocess, as a user runs it: exit status, one line on stderr, files left.

At least one bad input per command, the happy path, ``--version`` and Ctrl-C. Each process
imports torch (a few seconds), so every other case runs through ``cli.main`` in test_cli.py and
test_cli_outputs.py.
"""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from quantile_surrogate import __version__, cli

from tests._cli import assert_one_line_error, make_frame, run_process, snapshot

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and signals")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with data.csv, test.csv and a model fitted by the command itself (the happy path)."""
    folder = tmp_path_factory.mktemp("process")
    make_frame().to_csv(folder / "data.csv", index=False)
    make_frame(200, seed=3).to_csv(folder / "test.csv", index=False)
    done = run_process(["fit", "data.csv", "--label", "y", "--target", "0.9", "--max-epochs", "3", "--drop", "id",
                        "--quiet", "--out", "model.qs"], folder)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return folder


def assert_refused(folder, argv, code, *fragments, **kwargs):
    before = snapshot(folder)
    done = run_process(argv, folder, **kwargs)
    assert done.returncode == code, done.stderr
    assert_one_line_error(done.stderr, *fragments)
    assert snapshot(folder) == before
    return done


def test_happy_path_predict_and_evaluate(folder):
    done = run_process(["predict", "model.qs", "test.csv", "--keep", "id"], folder)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[0] == "id,prediction,score" and len(done.stdout.splitlines()) == 201
    done = run_process(["evaluate", "model.qs", "test.csv", "--bootstrap", "50", "--out-dir", "eval"], folder)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(folder / "eval")) == ["test_pr_curve.png", "test_report.md"]
    assert done.stderr.strip() == "Wrote eval/test_report.md and eval/test_pr_curve.png."


def test_version(folder):
    done = run_process(["--version"], folder)
    assert done.returncode == 0 and done.stdout.strip() == f"quantile-surrogate {__version__}"


def test_fit_refuses_to_overwrite_its_data(folder):
    assert_refused(folder, ["fit", "data.csv", "--label", "y", "--target", "0.9", "--out", "data.csv"], 1,
                   "quantile-surrogate fit: error: data.csv: this output is also an input")


def test_predict_refuses_a_fifo_and_its_own_input_on_standard_output(folder):
    os.mkfifo(folder / "pipe")
    try:
        assert_refused(folder, ["predict", "model.qs", "test.csv", "--out", "pipe"], 1, "pipe: is a FIFO")
        with open(folder / "test.csv", "a") as appended:  # `predict model.qs test.csv >> test.csv`
            assert_refused(folder, ["predict", "model.qs", "test.csv"], 1, "standard output is the input file",
                           stdout=appended, capture_output=False, stderr=subprocess.PIPE)
    finally:
        os.unlink(folder / "pipe")


def test_evaluate_refuses_a_file_as_its_folder(folder):
    assert_refused(folder, ["evaluate", "model.qs", "test.csv", "--out-dir", "test.csv"], 1,
                   "test.csv: cannot create the folder (test.csv is a file)")


def test_reproduce_refuses_zero_splits_and_a_file_as_its_folder(folder):
    assert_refused(folder, ["reproduce", "ionosphere", "--splits", "0", "--folds", "3"], 2, "--splits")
    assert_refused(folder, ["reproduce", "synthetic", "--out", "data.csv"], 1,
                   "quantile-surrogate reproduce: error: data.csv: cannot create the folder (data.csv is a file)")


# Ctrl-C reaches a program in a terminal's foreground. A test run started in the background (`pytest &`,
# nohup, some CI runners) has SIGINT ignored, and an ignored signal stays ignored across exec: the CLI
# would then rightly ignore the test's SIGINT too, as every background job does, and train on. So the
# child restores the default disposition (Python's KeyboardInterrupt) before it runs the CLI.
FOREGROUND = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
              "runpy.run_module('quantile_surrogate.cli', run_name='__main__')")


def test_ctrl_c_during_fit_exits_130_and_keeps_the_checkpoint(tmp_path):
    make_frame(2000, seed=1).to_csv(tmp_path / "big.csv", index=False)
    argv = [sys.executable, "-c", FOREGROUND, "fit", "big.csv", "--label", "y", "--target", "0.9",
            "--drop", "id", "--max-epochs", "100000", "--quiet", "--checkpoint", "fit.ckpt", "--out", "m.qs"]
    process = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while not (tmp_path / "fit.ckpt").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # the first checkpoint means training is under way
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert_one_line_error(err, "quantile-surrogate fit: interrupted (Ctrl-C)")
    assert sorted(os.listdir(tmp_path)) == ["big.csv", "fit.ckpt"]  # no model, no temporary file


def test_sigterm_during_predict_out_exits_143_in_one_line_leaving_no_temporary(folder, tmp_path):
    """``kill PID`` (``timeout``, a container stop) while predictions are written: as Ctrl-C, exit 128 + 15."""
    pd.concat([make_frame(4000, seed=5)] * 50, ignore_index=True).to_csv(tmp_path / "big.csv", index=False)
    argv = [sys.executable, "-m", "quantile_surrogate.cli", "predict", folder / "model.qs", "big.csv", "--keep", "id",
            "--out", "out.csv"]
    process = subprocess.Popen([str(a) for a in argv], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while not any(name.endswith(".tmp") for name in os.listdir(tmp_path)) and process.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.01)  # the temporary file means the writing is under way
    assert process.poll() is None, process.communicate()
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert_one_line_error(err, cli.TERMINATED_MESSAGE.format(name="quantile-surrogate predict"))
    assert sorted(os.listdir(tmp_path)) == ["big.csv"]  # no output, no temporary file
