"""Helpers for the command-line tests: run a command as a user would and check what it left behind."""

import errno
import os
import stat
import subprocess
import sys

import numpy as np
import pandas as pd

from quantile_surrogate import cli

FIT = ["fit", "--label", "y", "--objective", "precision_at_recall", "--target", "0.9", "--max-epochs", "3",
       "--drop", "id", "--quiet"]


def run(argv, capsys):
    """``cli.main`` in this process: (exit status, stdout, stderr)."""
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_process(argv, cwd, timeout=120, **kwargs):
    """``python -m quantile_surrogate.cli ARGV`` in a subprocess, as a shell would run the installed command."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    options = {"capture_output": True, "text": True, **kwargs}
    return subprocess.run([sys.executable, "-m", "quantile_surrogate.cli", *[str(a) for a in argv]], cwd=cwd,
                          env=env, timeout=timeout, **options)


def assert_one_line_error(err, *fragments):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def snapshot(folder):
    """Every entry under ``folder``: relative name -> (kind, permissions, bytes of a regular file, link target)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            content = open(path, "rb").read() if stat.S_ISREG(info.st_mode) else None
            link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
            out[os.path.relpath(path, folder)] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), content, link)
    return out


def make_frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    return pd.DataFrame({
        "id": np.arange(n),
        "x1": rng.normal(size=n) + 2.0 * y,
        "x2": rng.normal(size=n) - 1.0 * y,
        "colour": np.where(rng.random(n) < 0.5 + 0.3 * y, "red", rng.choice(["blue", "green"], n)),
        "y": np.where(y, "yes", "no"),
    })


def full_disk(*args, **kwargs):
    """A stand-in for ``os.fsync`` on a full disk (never write to /dev/full: the tests may run as root)."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def deny_temporary_files(monkeypatch):
    """Make creating ``*.tmp`` files fail with EACCES, as in a read-only folder (root ignores the mode bits)."""
    from quantile_surrogate._utils import files as _files

    real_open = os.open

    def denied(path, flags, mode=0o777, **kw):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(_files.os, "open", denied)
