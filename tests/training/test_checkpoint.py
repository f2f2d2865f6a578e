"""Resumable checkpoints (quantile_surrogate.training.checkpoint): resume, refuse, clean up, never run code."""

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from quantile_surrogate.training import train
from quantile_surrogate.training.checkpoint import (
    CHECKPOINT_VERSION,
    FORMAT,
    MISMATCH_MESSAGE,
    NOT_A_FILE_MESSAGE,
    UNREADABLE_MESSAGE,
    VERSION_MESSAGE,
    checkpoint_seed,
    remove_stale_temporaries,
)
from quantile_surrogate.training._state import FIELDS_MESSAGE, LoopState
from tests._messages import exact, prefix
from tests.training._helpers import blobs, linear, params

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
CKPT = dict(batch_size=40, n_restarts=2, init="mixed", max_epochs=6, learning_rate=0.1, random_state=5)
SHORT = dict(max_epochs=2, random_state=0)


def stop_at(restart, epoch):
    def callback(info):
        if (info["restart"], info["epoch"]) == (restart, epoch):
            raise KeyboardInterrupt

    return callback


def same_result(a, b):
    return torch.equal(params(a.model), params(b.model)) and a.restart_losses == b.restart_losses \
        and a.loss_curve == b.loss_curve


# -- resuming -----------------------------------------------------------------------------------
def test_checkpoint_resume_after_an_interruption_is_bit_identical(tmp_path):
    X, y = blobs()
    Xv, yv = blobs(n=100, seed=7)
    settings_ = dict(CKPT, validation=(Xv, yv), early_stopping=True, n_iter_no_change=4)
    reference = train(linear(), X, y, **settings_)
    path = tmp_path / "fit.pt"
    with pytest.raises(KeyboardInterrupt):
        train(linear(), X, y, checkpoint=path, callback=stop_at(1, 2), **settings_)
    assert path.exists()
    epochs = []
    resumed = train(linear(), X, y, checkpoint=path, callback=lambda i: epochs.append((i["restart"], i["epoch"])),
                    **settings_)
    assert epochs[0] == (1, 3)  # it went on from where it stopped
    assert same_result(resumed, reference)
    assert [p.name for p in tmp_path.iterdir()] == ["fit.pt"]  # no temporary file left behind
    # A finished checkpoint returns the same result without training again.
    again = train(linear(), X, y, checkpoint=path, callback=lambda i: pytest.fail("trained again"), **settings_)
    assert torch.equal(params(again.model), params(reference.model))


def test_a_fit_without_random_state_can_be_resumed(tmp_path):
    X, y = blobs()
    settings_ = dict(CKPT, random_state=None)
    path = tmp_path / "fit.pt"
    with pytest.raises(KeyboardInterrupt):
        train(linear(), X, y, checkpoint=path, callback=stop_at(0, 3), **settings_)
    seed = checkpoint_seed(path)  # drawn for random_state=None, and stored
    assert isinstance(seed, int)
    resumed = train(linear(), X, y, checkpoint=path, **settings_)
    assert same_result(resumed, train(linear(), X, y, **dict(CKPT, random_state=seed)))
    # Another fit without a seed draws another one.
    other = tmp_path / "other.pt"
    train(linear(), X, y, checkpoint=other, **dict(SHORT, random_state=None))
    assert checkpoint_seed(other) != seed and checkpoint_seed(tmp_path / "missing.pt") is None


def test_the_file_is_plain_tensors_and_records(tmp_path):
    X, y = blobs()
    path = tmp_path / "fit.pt"
    with pytest.raises(KeyboardInterrupt):
        train(linear(), X, y, checkpoint=path, callback=stop_at(1, 2), **CKPT)
    saved = torch.load(path, weights_only=True)  # no code runs to read it
    assert (saved["format"], saved["version"]) == (FORMAT, CHECKPOINT_VERSION)
    state = LoopState.from_dict(saved["state"])
    assert (state.seed, state.restart, len(state.restart_losses), len(state.run.loss_curve)) == (5, 1, 1, 2)
    assert state.best.restart == 0 and state.best.start == "logistic"
    assert set(state.key) == {"settings", "random_state", "architecture", "X", "y", "groups", "validation"}
    with pytest.raises(ValueError, match=prefix(FIELDS_MESSAGE, record="LoopState")):
        LoopState.from_dict(dict(saved["state"], extra=1))


# -- refusing another fit's checkpoint --------------------------------------------------------------
def _changed(part, X, y, groups, validation):
    """``train`` keyword arguments for the fit of the checkpoint, and for one that differs in ``part``."""
    base = dict(X=X, y=y, groups=groups, validation=validation)
    flipped = y.clone()
    flipped[:10] = 1 - flipped[:10]  # other labels, same rows
    changes = {
        "X": dict(X=X + 1), "y": dict(y=flipped), "groups": dict(groups=groups.flip(0)),
        "validation": dict(validation=(validation[0], validation[1], validation[2].flip(0))),
        "settings": dict(learning_rate=0.5), "random_state": dict(random_state=1),
    }
    return base, dict(base, **changes[part])


@pytest.mark.parametrize("part", ["X", "y", "groups", "validation", "settings", "random_state"])
def test_a_checkpoint_from_another_fit_is_refused_and_the_message_says_why(tmp_path, part):
    X, y = blobs()
    groups = torch.arange(300) % 2
    Xv, yv = blobs(n=100, seed=7)
    validation = (Xv, yv, torch.arange(100) % 2)
    path = tmp_path / "fit.pt"
    first, second = _changed(part, X, y, groups, validation)
    kwargs = dict(objective="precision_at_rate", target=0.2, checkpoint=path, **SHORT)
    model = linear()
    train(model, first.pop("X"), first.pop("y"), **dict(kwargs, **first))
    with pytest.raises(ValueError, match=exact(MISMATCH_MESSAGE, path=str(path), parts=part)):
        train(model, second.pop("X"), second.pop("y"), **dict(kwargs, **second))


def test_a_checkpoint_of_other_validation_weights_is_refused(tmp_path):
    # The validation weights decide the validation metric, so they are part of the fit's fingerprint.
    X, y = blobs()
    Xv, yv = blobs(n=100, seed=7)
    path = tmp_path / "fit.pt"
    kwargs = dict(objective="precision_at_rate", target=0.2, checkpoint=path, validation=(Xv, yv), **SHORT)
    weight = torch.ones(100, dtype=torch.float64)
    train(linear(), X, y, validation_weight=weight, **kwargs)
    other = weight.clone()
    other[:10] = 3.0
    with pytest.raises(ValueError, match=exact(MISMATCH_MESSAGE, path=str(path), parts="validation")):
        train(linear(), X, y, validation_weight=other, **kwargs)


# -- files that are not checkpoints ------------------------------------------------------------------
class Exploit:
    """Unpickling this would create a folder: the proof that code ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _write_bad_file(kind, path, marker, valid: Path):
    if kind == "truncated":
        path.write_bytes(valid.read_bytes()[: valid.stat().st_size // 2])
    elif kind == "garbage":
        path.write_bytes(b"not a checkpoint\n" * 20)
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"state": Exploit(marker)}))
    elif kind == "torch pickle":
        torch.save({"format": FORMAT, "version": CHECKPOINT_VERSION, "state": Exploit(marker)}, path)
    elif kind == "other torch file":
        torch.save({"weight": torch.zeros(3)}, path)
    elif kind == "missing fields":
        torch.save({"format": FORMAT, "version": CHECKPOINT_VERSION, "state": {"seed": 1}}, path)


@pytest.mark.parametrize("kind", ["truncated", "garbage", "pickle", "torch pickle", "other torch file",
                                  "missing fields"])
def test_a_file_that_is_not_a_checkpoint_gets_our_message_and_runs_no_code(tmp_path, kind):
    X, y = blobs()
    valid, path, marker = tmp_path / "valid.pt", tmp_path / "fit.pt", tmp_path / "code-ran"
    train(linear(), X, y, checkpoint=valid, **SHORT)
    _write_bad_file(kind, path, marker, valid)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=prefix(UNREADABLE_MESSAGE, path=str(path))) as error:
        train(linear(), X, y, checkpoint=path, **SHORT)
    assert "weights_only" not in str(error.value)  # torch's advice to load it unsafely is not passed on
    # No chained torch error either (its message advises weights_only=False).
    assert error.value.__cause__ is None and (error.value.__context__ is None or error.value.__suppress_context__)
    assert not marker.exists()
    assert path.read_bytes() == before  # neither replaced nor removed


def test_a_checkpoint_of_another_format_version_says_so(tmp_path):
    path = tmp_path / "fit.pt"
    torch.save({"format": FORMAT, "version": 1, "state": {}}, path)
    X, y = blobs()
    with pytest.raises(ValueError, match=exact(VERSION_MESSAGE, path=str(path), found=1, expected=CHECKPOINT_VERSION)):
        train(linear(), X, y, checkpoint=path, **SHORT)


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_a_checkpoint_path_that_is_not_a_regular_file_is_neither_read_nor_replaced(tmp_path, kind):
    X, y = blobs()
    path, target = tmp_path / "fit.pt", tmp_path / "target.pt"
    if kind == "fifo":
        os.mkfifo(path)  # reading it would block
    elif kind == "folder":
        path.mkdir()
    else:
        train(linear(), X, y, checkpoint=target, **SHORT)
        path.symlink_to(target)
    with pytest.raises(ValueError, match=prefix(NOT_A_FILE_MESSAGE, path=str(path))):
        train(linear(), X, y, checkpoint=path, **SHORT)
    assert path.is_symlink() if kind == "link" else not path.is_file()


# -- temporaries left by killed processes ------------------------------------------------------------
def test_stale_temporaries_of_dead_processes_are_removed_and_others_kept(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    dead = int(finished.stdout)  # that process has exited
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {"stale": f".fit.pt.{dead}.tmp", "running": f".fit.pt.{running.pid}.tmp",
                 "other checkpoint": f".other.pt.{dead}.tmp", "not ours": f".fit.pt.{dead}.tmp.bak"}
        for name in names.values():
            (tmp_path / name).write_bytes(b"partial")
        X, y = blobs()
        train(linear(), X, y, checkpoint=tmp_path / "fit.pt", **SHORT)
        left = {p.name for p in tmp_path.iterdir()}
        assert left == {"fit.pt"} | set(names.values()) - {names["stale"]}
        assert remove_stale_temporaries(tmp_path / "other.pt") == [tmp_path / names["other checkpoint"]]
    finally:
        running.kill()
        running.wait()


KILLED_DURING_SAVE = """
import os, sys, time, torch
sys.path.insert(0, {root!r})
import quantile_surrogate.training.checkpoint as checkpoint
from tests.training._helpers import blobs, linear
from quantile_surrogate.training import train
saves = []
real_save = torch.save

def slow_save(obj, target):
    saves.append(1)
    if len(saves) == 3:  # the third save: write half of it, say so, and hang until killed
        with open(target, "wb") as handle:
            handle.write(b"PK half a checkpoint")
            handle.flush()
        open({ready!r}, "w").close()
        time.sleep(120)
    real_save(obj, target)

checkpoint.torch.save = slow_save
X, y = blobs()
train(linear(), X, y, checkpoint={path!r}, **{settings!r})
"""


def _run_and_kill(script, ready: Path, timeout=120):
    process = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), "the child never reached the point to kill it at"
        process.send_signal(signal.SIGKILL)  # no clean-up runs in the child
    finally:
        process.wait()
    return process.pid


def test_a_process_killed_during_a_save_leaves_a_checkpoint_that_resumes_and_no_temporary(tmp_path):
    X, y = blobs()
    reference = train(linear(), X, y, **CKPT)
    path, ready = tmp_path / "fit.pt", tmp_path / "ready"
    script = KILLED_DURING_SAVE.format(root=str(ROOT), ready=str(ready), path=str(path), settings=CKPT)
    pid = _run_and_kill(script, ready)
    temporaries = list(tmp_path.glob(f".fit.pt.{pid}.*tmp"))
    assert len(temporaries) == 1 and path.exists()  # the torn write is in the temporary, not the checkpoint
    epochs = []
    resumed = train(linear(), X, y, checkpoint=path, callback=lambda i: epochs.append((i["restart"], i["epoch"])),
                    **CKPT)
    assert epochs[0] == (0, 3)  # the two saves before the kill were kept
    assert same_result(resumed, reference)
    assert {p.name for p in tmp_path.iterdir()} == {"fit.pt", "ready"}


KILLED_SCRIPT = """
import sys, time, torch
sys.path.insert(0, {root!r})
from tests.training._helpers import blobs, linear
from quantile_surrogate.training import train
X, y = blobs()
train(linear(), X, y, checkpoint={path!r}, callback=lambda info: time.sleep(0.3), **{settings!r})
"""


@pytest.mark.slow
def test_checkpoint_resume_after_a_killed_process_is_bit_identical(tmp_path):
    X, y = blobs()
    reference = train(linear(), X, y, **CKPT)
    path = tmp_path / "fit.pt"
    _run_and_kill(KILLED_SCRIPT.format(root=str(ROOT), path=str(path), settings=CKPT), path)
    resumed = train(linear(), X, y, checkpoint=path, **CKPT)
    assert same_result(resumed, reference)
    assert [p.name for p in tmp_path.iterdir()] == ["fit.pt"]


def test_sparse_rows_resume_bit_identically_and_other_rows_are_refused(tmp_path):
    import numpy as np

    from tests._data import sparse_classification

    X, y = sparse_classification(300, 30)
    y = torch.as_tensor(y)
    reference = train(linear(30), X, y, **CKPT)
    path = tmp_path / "sparse.pt"
    with pytest.raises(KeyboardInterrupt):
        train(linear(30), X, y, checkpoint=path, callback=stop_at(1, 2), **CKPT)
    assert same_result(train(linear(30), X, y, checkpoint=path, **CKPT), reference)
    other = X.copy()
    other.data[np.argmax(other.data)] += 1.0  # one stored value changed: another fit's data
    with pytest.raises(ValueError, match=exact(MISMATCH_MESSAGE, path=str(path), parts="X")):
        train(linear(30), other, y, checkpoint=path, **CKPT)
