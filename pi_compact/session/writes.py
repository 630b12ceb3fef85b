"""The two ways a session file is written: appending lines, and replacing the whole file atomically.

Both either complete or leave the file as it was. An append that fails part-way (disk full, file-size
limit, I/O error, even Ctrl-C) is cut back to the file's previous length, so a partial line is never
left for the next append to be glued onto. A replacement goes to a uniquely named temporary file in the
same directory, which then takes the place of the real file (symlinks resolved, so a symlinked session
stays a symlink) with the real file's permission bits. New files and their directories are created
user-only: a transcript holds tool output such as the contents of ``.env`` files.

``FileState`` records which file, of what length, we last read or wrote, so that a writer can tell
whether somebody else appended to it or replaced it since.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pi_compact.durable import sync_directory
from pi_compact.errors import SessionError
from pi_compact.paths import ensure_private_dir
from pi_compact.session.entries import Entry


@dataclass(frozen=True)
class FileState:
    """Identity and length of a file: pi, like us, only ever appends to a session file or replaces it.

    (Not its modification time: cutting a failed append back changes that, and nothing else.)
    """

    device: int
    inode: int
    size: int

    @classmethod
    def of(cls, status: os.stat_result, size: int | None = None) -> FileState:
        return cls(status.st_dev, status.st_ino, status.st_size if size is None else size)


def current_state(path: Path) -> FileState | None:
    """The file's state now, None when it does not exist."""
    try:
        return FileState.of(os.stat(path))
    except FileNotFoundError:
        return None


class WriteFailed(Exception):
    """A write failed; ``rolled_back`` tells whether the file holds what it held before it."""

    def __init__(self, error: OSError, rolled_back: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.rolled_back = rolled_back


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_bytes(path: Path, data: bytes, *, sync: bool = True) -> FileState:
    """Append ``data`` (and fsync, with ``sync``); on failure the file is cut back to its length before
    (``WriteFailed``). Without ``sync`` the data is complete in the file when this returns, so a killed
    process loses none of it, but a power failure may, until ``sync_file``.

    Returns the file's state after the append (its size counted, not measured, so that a concurrent
    append by another program shows up as a difference later).
    """
    try:
        ensure_private_dir(path.parent)
        existed = os.path.exists(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise WriteFailed(exc, True) from exc  # nothing was written
    try:
        before = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            if sync:
                os.fsync(fd)
        except BaseException as exc:
            _roll_back(path, fd, before, existed, exc)
            raise
        return FileState.of(os.fstat(fd), before + len(data))
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    """fsync a file written before without it (``OSError`` when it cannot be opened or synced)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _roll_back(path: Path, fd: int, length: int, existed: bool, cause: BaseException) -> None:
    """Cut the file back to ``length`` (remove it if this append created it); raise ``WriteFailed``
    for an OSError cause, else leave the cause (e.g. KeyboardInterrupt) to propagate."""
    rolled_back = True
    try:
        os.ftruncate(fd, length)
        if not existed and length == 0:
            os.unlink(os.path.realpath(path))
        else:
            os.fsync(fd)
    except OSError:
        rolled_back = False
    if isinstance(cause, OSError):
        raise WriteFailed(cause, rolled_back) from cause


def replace_contents(path: Path, data: bytes) -> FileState:
    """Replace the file (or create it) with ``data``, atomically; ``WriteFailed`` leaves it untouched."""
    real = Path(os.path.realpath(path))
    try:
        ensure_private_dir(real.parent)
        try:
            mode = stat.S_IMODE(os.stat(real).st_mode)
        except FileNotFoundError:
            mode = 0o600
        fd, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    except OSError as exc:
        raise WriteFailed(exc, True) from exc  # nothing was written
    with _removed_on_failure(Path(temporary)):
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)
            state = FileState.of(os.fstat(fd))
        finally:
            os.close(fd)
        os.replace(temporary, real)
    sync_directory(real.parent)
    return state


@contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    """Remove ``path`` (a file being written) when the block fails; an ``OSError`` becomes ``WriteFailed``
    saying that nothing was written, anything else (a Ctrl-C) goes on as it is."""
    try:
        yield
    except BaseException as exc:
        try:
            os.unlink(path)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteFailed(exc, True) from exc
        raise


# A migrated file is rewritten in place of the original, so the original is first copied beside it, byte for
# byte, to a name no existing file has: a file read wrongly can always be had back.
def backup_name(path: Path, tag: str, start: int = 1) -> Path:
    """The first free name beside ``path`` from ``NAME.TAG.bak``, ``NAME.TAG.2.bak``, ... (from ``start``)."""
    number = start
    while True:
        candidate = path.with_name(f"{path.name}.{tag}.bak" if number == 1 else f"{path.name}.{tag}.{number}.bak")
        if not os.path.lexists(candidate):
            return candidate
        number += 1


def write_backup(path: Path, tag: str) -> Path:
    """Copy the file to a new user-only file ``backup_name`` gives, synced; returns its name.

    ``WriteFailed`` (nothing written) when it cannot: then the file must not be replaced either.
    """
    number = 1
    while True:
        backup = backup_name(path, tag, number)
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:  # made meanwhile: never write over it, take the next name
            number += 1
        except OSError as exc:
            raise WriteFailed(exc, True) from exc
    with _removed_on_failure(backup):
        try:
            with open(path, "rb") as source:
                while chunk := source.read(1 << 20):
                    _write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
    sync_directory(backup.parent)
    return backup


def ends_turn(entry: Entry) -> bool:
    """Whether appending ``entry`` ends a turn, so that it is fsynced with the lines before it: anything
    but a user prompt or a tool result (those are followed by a model reply, which is synced)."""
    if entry.get("type") != "message":
        return True
    return (entry.get("message") or {}).get("role") not in ("user", "toolResult")


def not_saved(path: Path, entry: Entry, error: OSError, rolled_back: bool) -> SessionError:
    """The one sentence a failed write of ``entry`` ends in."""
    what = "compaction" if entry.get("type") == "compaction" else "message" if entry.get("type") == "message" \
        else "entry"
    reason = error.strerror or str(error)
    if rolled_back:
        return SessionError(
            f"Could not save to {path} ({reason}), so the newest {what} was not saved; the file is as it "
            "was before, so nothing saved earlier was lost."
        )
    return SessionError(
        f"Could not save to {path} ({reason}), so the newest {what} was not saved, and its partly written "
        "line could not be removed (it will be skipped when the session is read); nothing saved earlier "
        "was lost."
    )
