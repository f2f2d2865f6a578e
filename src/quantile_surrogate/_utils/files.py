"""Writing output files safely: never over an input, never over a non-regular file, never half-written.

Every file the package writes (model files, predictions, reports, plots, experiment tables,
training checkpoints) goes through :func:`atomic_write` (or :func:`atomic_writes` for a set
of files that belong together). What it does, in order:

1. **Checks the path first** (:func:`check_output`), before anything is written:

   - an output that is one of the command's inputs (the same file, after following symbolic
     links; hard links too, by ``os.path.samefile``) is refused: ``fit data.csv --out
     data.csv`` would otherwise replace the training data;
   - anything at the path that is not a regular file (a folder, a FIFO, a character or
     block device, a socket) is refused and left as it is;
   - a **symbolic link is followed**: the file it points to is replaced and the link is kept,
     as the shell's ``>`` does. A link to something that is not a regular file is refused;
     a dangling link creates its target (in a folder that must exist).

2. **Writes a temporary file next to the target** (same folder, so the final rename cannot
   cross file systems), with a unique name ``.NAME.PID.RANDOM.tmp``, created with mode
   ``0o666`` filtered by the user's umask, so the output gets the permissions any other
   program would give it (``tempfile.mkstemp`` would give 0600).
3. **Flushes it to disk** (``os.fsync``) and moves it over the target with ``os.replace``, an
   atomic rename: a reader sees the old file or the new one, never a torn one, and a crash or
   a kill leaves the previous file intact.
4. On **any** failure, ``KeyboardInterrupt`` included, the temporary file is removed and the
   error goes on; an ``OSError`` comes back as :class:`WriteError` whose message names the
   output path (not the temporary one) and the reason.

Missing folders are not created here (a typo in ``--out`` should not silently make a tree);
:func:`output_folder` makes a folder for the commands whose option names a folder, and
removes what it made if the block inside fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import sys
from pathlib import Path

__all__ = ["WriteError", "OutputPathError", "atomic_write", "atomic_writes", "remove_stale_temporaries", "check_output", "check_stdout",
           "output_folder"]


ALSO_INPUT_MESSAGE = (
    "{path}: this output is also an input of the command ({source}); write to another path so that the input "
    "is not replaced."
)
CANNOT_WRITE_MESSAGE = "{path}: cannot write ({reason})."
NOT_REGULAR_MESSAGE = "{path}: is {kind}{via}, not a regular file; it is not replaced. Write to a file path instead."
STDOUT_IS_INPUT_MESSAGE = "standard output is the input file {source}; redirect it to another file."
FOLDER_MESSAGE = "{path}: cannot create the folder ({reason})."
PART_IS_FILE_REASON = "{part} is a file, not a folder"
NO_FOLDER_REASON = "the folder {folder} does not exist"


class WriteError(OSError):
    """An output could not be written; the message names the output path and the reason."""


class OutputPathError(ValueError):
    """An output path that must not be written: an input of the same command, or not a regular file."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs=()) -> Path:
    """The real file that writing ``path`` replaces (links followed), or :class:`OutputPathError`.

    Refused: ``path`` is one of ``inputs`` (after following links; hard links count), or
    something other than a regular file is there (a folder, FIFO, device, socket; a link to
    one), and a path whose folder does not exist (or is a file). Not checked: whether the folder
    is writable (the write reports that; checks of permission bits are wrong for root anyway).
    """
    path = Path(path)
    target = Path(os.path.realpath(path))  # follows every link, also a dangling one
    for source in inputs:
        if source is not None and Path(source).exists() and _same_file(target, Path(source)):
            raise OutputPathError(ALSO_INPUT_MESSAGE.format(path=path, source=source))
    problem = _describe_folder_problem(target.parent, target.parent if path.is_symlink() else path.parent)
    if problem:
        raise WriteError(CANNOT_WRITE_MESSAGE.format(path=path, reason=problem))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as error:
        raise WriteError(CANNOT_WRITE_MESSAGE.format(path=path, reason=describe_errno(error))) from error
    if not stat.S_ISREG(mode):
        via = f" (through the link to {target})" if path.is_symlink() else ""
        raise OutputPathError(NOT_REGULAR_MESSAGE.format(path=path, kind=_kind(mode), via=via))
    return target


def check_stdout(inputs=()) -> None:
    """Refuse when standard output is redirected into one of ``inputs`` (``predict m.qs d.csv >> d.csv``)."""
    try:
        out = os.fstat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # captured or closed: not a file of ours
        return
    for source in inputs:
        with contextlib.suppress(OSError):
            if os.path.samestat(out, os.stat(source)):
                raise OutputPathError(STDOUT_IS_INPUT_MESSAGE.format(source=source))


def _describe_folder_problem(folder: Path, shown: Path) -> str | None:
    """None if ``folder`` is a folder; else what is wrong, naming the part of ``shown`` (as typed) at fault."""
    if folder.is_dir():
        return None
    for part in [shown, *shown.parents]:
        if part.exists() and not part.is_dir():
            return PART_IS_FILE_REASON.format(part=part)
    return NO_FOLDER_REASON.format(folder=shown)


def _temporary(target: Path, temporaries: list) -> Path:
    """Create an empty, unique temporary file next to ``target`` with the umask's permissions.

    Its name joins ``temporaries`` *before* the file exists, so that an interrupt at any moment
    (Ctrl-C or SIGTERM between the creation and the caller's bookkeeping) still has it removed.
    """
    while True:
        candidate = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        temporaries.append(candidate)
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return candidate
        except FileExistsError:  # pragma: no cover - 32 random bits collided: not ours, never removed
            temporaries.pop()


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _process_is_running(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process writes one checkpoint at a time: its own leftover is stale
    if os.name == "nt":
        return True  # os.kill would terminate the process there; keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # running, as another user
    except (OverflowError, ValueError):
        return False
    return True


def remove_stale_temporaries(path) -> list[Path]:
    """Delete ``.{name}.{pid}.tmp`` files next to ``path`` left by processes that no longer run; returns them.

    A process killed while writing a checkpoint (SIGKILL, power loss) cannot remove its
    temporary; a running process's temporary (another fit writing the same path) is kept.
    """
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(\d+)(?:\.[0-9a-f]+)?\.tmp")
    removed = []
    if not path.parent.is_dir():
        return removed
    for candidate in path.parent.iterdir():
        match = pattern.fullmatch(candidate.name)
        if match and candidate.is_file() and not candidate.is_symlink() \
                and not _process_is_running(int(match.group(1))):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def atomic_writes(items, *, inputs=()) -> None:
    """Write several files all-or-nothing as far as the file system allows.

    ``items`` is a sequence of ``(path, write)``; ``write(temporary_path)`` writes one file
    (e.g. ``lambda p: frame.to_csv(p)``). Every path is checked (:func:`check_output`) before
    any is written, every temporary file is written and flushed before any is moved into place,
    and a failure before the moves leaves every target as it was and no temporary file behind.
    """
    items = [(Path(path), write) for path, write in items]
    targets = [check_output(path, inputs) for path, _ in items]
    for target in targets:
        remove_stale_temporaries(target)
    temporaries: list[Path] = []
    try:
        for (path, write), target in zip(items, targets):
            _with_path(path, _temporary, target, temporaries)
            _with_path(path, write, temporaries[-1])
            _with_path(path, _fsync, temporaries[-1])
        for (path, _), target, temporary in zip(items, targets, temporaries):
            _with_path(path, os.replace, temporary, target)
    except BaseException:
        for temporary in temporaries:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise
    for folder in {target.parent for target in targets}:
        with contextlib.suppress(OSError):  # durability of the rename; not every file system allows it
            _fsync(folder, directory=True)


def _with_path(path: Path, action, *args):
    """``action(*args)``; an ``OSError`` becomes a :class:`WriteError` that names ``path``, not the temporary file."""
    try:
        return action(*args)
    except WriteError:
        raise
    except OSError as error:
        raise WriteError(CANNOT_WRITE_MESSAGE.format(path=path, reason=describe_errno(error))) from error


def atomic_write(path, write, *, inputs=()) -> None:
    """Write one file through a temporary file, ``fsync`` and ``os.replace`` (see the module docstring).

    ``write(temporary_path)`` writes the content; ``inputs`` are the paths the same command
    reads, which the output must not replace.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> atomic_write(folder / "a.txt", lambda p: p.write_text("hello"))
    >>> (folder / "a.txt").read_text(), sorted(q.name for q in folder.iterdir())
    ('hello', ['a.txt'])
    >>> atomic_write(folder / "b.txt", lambda p: p.write_text("x"), inputs=[folder / "b.txt", folder / "a.txt"])
    >>> atomic_write(folder / "a.txt", lambda p: p.write_text("x"), inputs=[folder / "a.txt"])
    Traceback (most recent call last):
    ...
    quantile_surrogate._utils.files.OutputPathError: ...: this output is also an input of the command (...); ...
    """
    atomic_writes([(path, write)], inputs=inputs)


@contextlib.contextmanager
def output_folder(path):
    """Create the folder ``path`` (and missing parents) for the block; remove what was created if it fails.

    A file where the folder (or a parent) should be gives :class:`WriteError` naming it.
    """
    path = Path(path)
    created = []
    for folder in reversed([path, *path.parents]):
        if folder.is_dir():
            continue
        if folder.exists() or folder.is_symlink():
            kind = "a file" if folder.is_file() else "not a folder"
            raise WriteError(FOLDER_MESSAGE.format(path=path, reason=f"{folder} is {kind}"))
        try:
            folder.mkdir()
        except OSError as error:
            _remove_empty(created)
            raise WriteError(FOLDER_MESSAGE.format(path=path, reason=describe_errno(error))) from error
        created.append(folder)
    try:
        yield path
    except BaseException:
        _remove_empty(created)
        raise


def _remove_empty(folders) -> None:
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if still empty


def describe_errno(error: OSError) -> str:
    """``strerror`` of an ``OSError``, or its text (``errno.ENOSPC`` -> 'No space left on device')."""
    if error.strerror:
        return error.strerror
    if error.errno:
        return os.strerror(error.errno)
    return str(error) or type(error).__name__

