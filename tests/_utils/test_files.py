"""quantile_surrogate._utils.files: atomic writes that never replace an input or a non-regular file.

Links, FIFOs and sockets are made in tmp_path; no test points at a real device.
"""

import os
import socket
import stat

import pytest

from quantile_surrogate._utils import files as _files
from quantile_surrogate._utils.files import (ALSO_INPUT_MESSAGE, CANNOT_WRITE_MESSAGE, FOLDER_MESSAGE, NO_FOLDER_REASON,
                                             NOT_REGULAR_MESSAGE, PART_IS_FILE_REASON, STDOUT_IS_INPUT_MESSAGE,
                                             OutputPathError, WriteError, atomic_write, atomic_writes, check_output,
                                             output_folder)

from tests._cli import deny_temporary_files, full_disk, snapshot
from tests._messages import exact, prefix


def write_text(text):
    return lambda p: p.write_text(text)


def test_writes_with_the_umask_permissions_and_leaves_only_the_file(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "out.txt", write_text("hello"))
    finally:
        os.umask(old)
    assert (tmp_path / "out.txt").read_text() == "hello"
    assert stat.S_IMODE(os.stat(tmp_path / "out.txt").st_mode) == 0o640  # 0o666 & ~0o027, not mkstemp's 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_replaces_an_existing_regular_file(tmp_path):
    (tmp_path / "out.txt").write_text("old")
    atomic_write(tmp_path / "out.txt", write_text("new"))
    assert (tmp_path / "out.txt").read_text() == "new"


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError, OSError])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, failure):
    target = tmp_path / "out.csv"

    def half_then_fail(path):
        path.write_text("half a fi")
        raise failure()

    with pytest.raises(failure):
        atomic_write(target, half_then_fail)
    assert snapshot(tmp_path) == {}
    target.write_text("old")
    with pytest.raises(failure):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_the_temporary_name_is_unique_and_a_fixed_name_file_is_untouched(tmp_path):
    fixed = tmp_path / ".out.txt.tmp"  # the old writer's fixed temporary name: another run's file
    fixed.write_text("someone else's")
    seen = []
    for _ in range(2):
        atomic_write(tmp_path / "out.txt", lambda p: (seen.append(p.name), p.write_text("x")))
    assert seen[0] != seen[1] and fixed.name not in seen
    assert fixed.read_text() == "someone else's"


def test_an_input_is_never_replaced(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n1,0\n")
    (tmp_path / "link.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    before = snapshot(tmp_path)
    for out in (data, tmp_path / "link.csv", tmp_path / "hard.csv", tmp_path / "." / "data.csv"):
        with pytest.raises(OutputPathError, match=exact(ALSO_INPUT_MESSAGE, path=out, source=data)):
            atomic_write(out, write_text("oops"), inputs=[data])
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["folder", "fifo", "socket", "link to fifo"])
def test_a_non_regular_file_is_never_replaced(tmp_path, kind):
    target = tmp_path / "out"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
        server.close()
    else:
        os.mkfifo(tmp_path / "fifo")
        target.symlink_to(tmp_path / "fifo")
    before = snapshot(tmp_path)
    kinds = {"folder": "a folder", "socket": "a socket"}
    via = f" (through the link to {tmp_path / 'fifo'})" if kind == "link to fifo" else ""
    with pytest.raises(OutputPathError, match=exact(NOT_REGULAR_MESSAGE, path=target,
                                                    kind=kinds.get(kind, "a FIFO (named pipe)"), via=via)):
        atomic_write(target, write_text("x"))
    assert snapshot(tmp_path) == before


def test_a_link_is_written_through_and_kept(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "model.qs"
    real.write_text("old")
    link = tmp_path / "model.qs"
    link.symlink_to(real)
    atomic_write(link, write_text("new"))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["model.qs"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "new.txt")
    atomic_write(dangling, write_text("made"))
    assert (tmp_path / "real" / "new.txt").read_text() == "made" and dangling.is_symlink()


@pytest.mark.parametrize("where, reason", [("missing/out.txt", NO_FOLDER_REASON.format(folder="missing")),
                                           ("file.txt/out.txt", PART_IS_FILE_REASON.format(part="file.txt")),
                                           ("file.txt/deeper/out.txt", PART_IS_FILE_REASON.format(part="file.txt"))])
def test_a_missing_folder_or_a_file_in_its_place(tmp_path, monkeypatch, where, reason):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("a file")
    before = snapshot(tmp_path)
    with pytest.raises(WriteError, match=exact(CANNOT_WRITE_MESSAGE, path=where, reason=reason)):
        atomic_write(where, write_text("x"))
    assert snapshot(tmp_path) == before


def test_a_full_disk_names_the_output_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(_files.os, "fsync", full_disk)
    out = tmp_path / "out.txt"
    with pytest.raises(WriteError, match=exact(CANNOT_WRITE_MESSAGE, path=out, reason="No space left on device")):
        atomic_write(out, write_text("x"))
    assert snapshot(tmp_path) == {}


def test_permission_denied_by_a_mock_and_by_a_read_only_folder(tmp_path, monkeypatch):
    with monkeypatch.context() as patch:
        deny_temporary_files(patch)
        with pytest.raises(WriteError, match=exact(CANNOT_WRITE_MESSAGE, path=tmp_path / "out.txt",
                                                   reason="Permission denied")):
            atomic_write(tmp_path / "out.txt", write_text("x"))
    assert snapshot(tmp_path) == {}
    if os.geteuid() == 0:
        return  # root ignores the mode bits; the mock above covers this case
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(WriteError, match=exact(CANNOT_WRITE_MESSAGE, path=locked / "out.txt",
                                                   reason="Permission denied")):
            atomic_write(locked / "out.txt", write_text("x"))
    finally:
        locked.chmod(0o700)


def test_atomic_writes_is_all_or_nothing_before_the_moves(tmp_path):
    (tmp_path / "a.txt").write_text("old a")

    before = snapshot(tmp_path)
    with pytest.raises(WriteError, match=prefix(CANNOT_WRITE_MESSAGE, path=tmp_path / "b.txt")):
        atomic_writes([(tmp_path / "a.txt", write_text("new a")), (tmp_path / "b.txt", full_disk)])
    assert snapshot(tmp_path) == before
    # every path is checked before anything is written
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputPathError):
        atomic_writes([(tmp_path / "a.txt", write_text("new a")), (tmp_path / "fifo", write_text("x"))])
    assert (tmp_path / "a.txt").read_text() == "old a"


def test_output_folder_creates_and_cleans_up(tmp_path):
    with output_folder(tmp_path / "a" / "b") as folder:
        atomic_write(folder / "x.txt", write_text("x"))
    assert (tmp_path / "a" / "b" / "x.txt").read_text() == "x"
    with pytest.raises(RuntimeError):
        with output_folder(tmp_path / "c" / "d"):
            raise RuntimeError
    assert not (tmp_path / "c").exists()  # the folders it made are gone again
    (tmp_path / "file").write_text("f")
    reason = f"{tmp_path / 'file'} is a file"
    with pytest.raises(WriteError, match=exact(FOLDER_MESSAGE, path=tmp_path / "file" / "sub", reason=reason)):
        with output_folder(tmp_path / "file" / "sub"):
            pass
    assert (tmp_path / "file").read_text() == "f"


def test_check_output_returns_the_real_target(tmp_path):
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    assert check_output(tmp_path / "link.txt") == (tmp_path / "real.txt").resolve()
    assert check_output(tmp_path / "new.txt", inputs=[tmp_path / "real.txt", None]) == (tmp_path / "new.txt").resolve()


def test_check_stdout_refuses_appending_to_an_input(tmp_path, monkeypatch):
    data = tmp_path / "data.csv"
    data.write_text("x\n1\n")
    with open(data, "a") as handle:
        monkeypatch.setattr(_files.sys, "stdout", handle)
        with pytest.raises(OutputPathError, match=exact(STDOUT_IS_INPUT_MESSAGE, source=data)):
            _files.check_stdout([data])
        _files.check_stdout([tmp_path / "missing.csv"])  # nothing to compare with: fine


def test_a_write_removes_temporaries_left_by_a_killed_process(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # a process id that has exited
    stale = tmp_path / f".out.csv.{dead}.0badc0de.tmp"
    unrelated = tmp_path / f".other.csv.{dead}.0badc0de.tmp"
    stale.write_text("half")
    unrelated.write_text("half")
    _files.atomic_write(tmp_path / "out.csv", lambda p: p.write_text("a\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [unrelated.name, "out.csv"]


def test_an_interrupt_just_after_the_temporary_is_created_leaves_no_temporary(tmp_path, monkeypatch):
    # Ctrl-C or SIGTERM can land between the creation of the temporary file and any bookkeeping after
    # it; the name is registered before the file exists, so the cleanup still finds it.
    real_close = _files.os.close

    def close_then_interrupt(fd):
        real_close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(_files.os, "close", close_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        _files.atomic_write(tmp_path / "out.csv", lambda p: p.write_text("a\n"))
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
