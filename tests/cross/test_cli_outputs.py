"""Output paths of every command: never an input, never a non-regular file, one line for every OS error.

Through cli.main in this process; the operating system's errors that cannot be made safely
(a full disk, a folder root may write to) are simulated by patching os.fsync / os.open, and
standard output by a stream that fails. Links, FIFOs and folders are made in tmp_path.
"""

import errno
import io
import os

import pytest

from quantile_surrogate._utils import files as _files
from quantile_surrogate.cli import _fit
from quantile_surrogate.cli import _reproduce as reproduce_command

from tests._cli import FIT, assert_one_line_error, deny_temporary_files, full_disk, make_frame, run, snapshot


@pytest.fixture
def folder(tmp_path, monkeypatch, capsys):
    """tmp_path as the working folder, with data.csv, a fitted model.qs, a FIFO and a subfolder."""
    monkeypatch.chdir(tmp_path)
    make_frame().to_csv("data.csv", index=False)
    code, _, err = run([*FIT, "data.csv", "--out", "model.qs"], capsys)
    assert code == 0, err
    os.mkfifo("fifo")
    os.mkdir("sub")
    os.symlink("data.csv", "link-to-data.csv")
    return tmp_path


def assert_nothing_changed(folder, capsys, argv, code, *fragments):
    before = snapshot(folder)
    got, _, err = run(argv, capsys)
    assert got == code, err
    assert_one_line_error(err, *fragments)
    assert snapshot(folder) == before


PREDICT = ["predict", "model.qs", "data.csv", "--out"]
EVALUATE = ["evaluate", "model.qs", "data.csv", "--bootstrap", "20", "--out-dir"]

REFUSED_OUTPUTS = [
    ([*FIT, "data.csv", "--out", "data.csv"], "also an input"),
    ([*FIT, "data.csv", "--out", "link-to-data.csv"], "also an input"),
    ([*FIT, "link-to-data.csv", "--out", "data.csv"], "also an input"),
    ([*FIT, "data.csv", "--out", "sub"], "is a folder"),
    ([*FIT, "data.csv", "--out", "fifo"], "is a FIFO"),
    ([*FIT, "data.csv", "--out", "missing/m.qs"], "the folder missing does not exist"),
    ([*FIT, "data.csv", "--out", "data.csv/m.qs"], "data.csv is a file, not a folder"),
    ([*FIT, "data.csv", "--checkpoint", "data.csv"], "also an input"),
    ([*FIT, "data.csv", "--checkpoint", "fifo"], "is a FIFO"),
    ([*FIT, "data.csv", "--checkpoint", "same.qs", "--out", "same.qs"], "are one file"),
    ([*FIT, "data.csv", "--checkpoint", "model.qs", "--out", "model.qs"], "also an input"),
    ([*PREDICT, "model.qs"], "also an input"),
    ([*PREDICT, "data.csv"], "also an input"),
    ([*PREDICT, "fifo"], "is a FIFO"),
    ([*PREDICT, "sub"], "is a folder"),
    ([*PREDICT, "missing/p.csv"], "the folder missing does not exist"),
    ([*PREDICT, "model.qs/p.csv"], "model.qs is a file, not a folder"),
    ([*EVALUATE, "data.csv"], "data.csv is a file"),
    ([*EVALUATE, "model.qs/deeper"], "model.qs is a file"),
    (["reproduce", "synthetic", "--out", "data.csv"], "data.csv is a file"),
    (["reproduce", "synthetic", "--out", "data.csv/x"], "data.csv is a file"),
]


@pytest.mark.parametrize("argv, fragment", REFUSED_OUTPUTS)
def test_refused_outputs_leave_everything_as_it_was(folder, capsys, monkeypatch, argv, fragment):
    def no_work(*args, **kwargs):
        raise AssertionError("a bad output path must be refused before any work")

    monkeypatch.setattr(_fit, "read_table", no_work)  # fit refuses before reading the data
    monkeypatch.setattr(reproduce_command, "_synthetic", no_work)
    assert_nothing_changed(folder, capsys, argv, 1, fragment)


def test_evaluate_refuses_to_replace_its_model_or_a_fifo_with_a_report(folder, capsys):
    os.mkdir("out")
    (folder / "model.qs").rename(folder / "out" / "data_report.md")  # the model file where the report would go
    assert_nothing_changed(folder, capsys, [*EVALUATE[:1], "out/data_report.md", *EVALUATE[2:], "out"], 1,
                           "out/data_report.md", "also an input")
    (folder / "out" / "data_report.md").rename(folder / "model.qs")
    os.mkfifo("out/data_report.md")
    assert_nothing_changed(folder, capsys, [*EVALUATE, "out"], 1, "is a FIFO")  # and the plot is not written either


@pytest.mark.parametrize("argv, fragment", [
    ([*FIT, "data.csv", "--out", "new.qs"], "new.qs: cannot write (No space left on device)"),
    ([*PREDICT, "p.csv"], "p.csv: cannot write (No space left on device)"),
    ([*EVALUATE, "made/here"], "cannot write (No space left on device)"),
    ([*EVALUATE, "."], "cannot write (No space left on device)"),
])
def test_a_full_disk(folder, capsys, monkeypatch, argv, fragment):
    monkeypatch.setattr(_files.os, "fsync", full_disk)
    assert_nothing_changed(folder, capsys, argv, 1, fragment)


def test_a_full_disk_in_reproduce(folder, capsys, monkeypatch):
    def tiny_run(args, out):
        reproduce_command.write_atomically(out / "results.csv", lambda p: p.write_text("a\n1\n"))
        return "table"

    monkeypatch.setattr(reproduce_command, "_synthetic", tiny_run)
    monkeypatch.setattr(_files.os, "fsync", full_disk)
    assert_nothing_changed(folder, capsys, ["reproduce", "synthetic", "--out", "results/new"], 1,
                           "results.csv: cannot write (No space left on device)")
    monkeypatch.undo()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(reproduce_command, "_synthetic", tiny_run)
    code, out, err = run(["reproduce", "synthetic", "--out", "results/new"], capsys)
    assert code == 0, err
    assert sorted(os.listdir("results/new")) == ["results.csv", "table.md"]


@pytest.mark.parametrize("argv", [[*FIT, "data.csv", "--out", "new.qs"], [*PREDICT, "p.csv"], [*EVALUATE, "r"]])
def test_permission_denied(folder, capsys, monkeypatch, argv):
    deny_temporary_files(monkeypatch)
    assert_nothing_changed(folder, capsys, argv, 1, "cannot write (Permission denied)")


class FailingStdout(io.StringIO):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def write(self, text):
        raise self.error


@pytest.mark.parametrize("argv", [["predict", "model.qs", "data.csv"], [*EVALUATE, "r"]])
def test_a_full_standard_output(folder, capsys, monkeypatch, argv):
    before = snapshot(folder)
    monkeypatch.setattr("sys.stdout", FailingStdout(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    code, _, err = run(argv, capsys)
    assert code == 1
    assert_one_line_error(err, "standard output: cannot write (No space left on device)")
    assert snapshot(folder) == before


def test_a_closed_pipe_is_quiet(folder, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout", FailingStdout(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    code, _, err = run(["predict", "model.qs", "data.csv"], capsys)
    assert code == 1 and err == ""


def test_outputs_through_a_link_and_with_the_umask(folder, capsys):
    os.mkdir("real")
    (folder / "real" / "p.csv").write_text("old")
    os.symlink("real/p.csv", "p.csv")
    old = os.umask(0o002)
    try:
        code, _, err = run([*PREDICT, "p.csv"], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    assert os.path.islink("p.csv") and (folder / "real" / "p.csv").read_text().startswith("prediction,score\n")
    assert oct(os.stat("real/p.csv").st_mode & 0o777) == oct(0o664)
