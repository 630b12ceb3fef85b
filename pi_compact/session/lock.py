"""The advisory lock that lets one process at a time write a session file.

A second writer waits ``LOCK_WAIT_S`` seconds, then gives up with one sentence naming the holder.
Where ``fcntl`` does not exist (Windows) locking is a no-op.
"""

from __future__ import annotations

import os
import time
import weakref
from pathlib import Path

from pi_compact.errors import SessionError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_WAIT_S = 2.0
_POLL_S = 0.05


# A writer holds ``flock`` on a sidecar file, ``<session file>.lock`` beside the real file (symlinks resolved,
# so every path to a session shares its lock), and keeps its pid in it so that another process can say who holds
# it. pi takes no lock: what protects against pi writing at the same time is the store's check that the file did
# not change since it was read (``store.py``).
def lock_path_for(session: Path) -> Path:
    """The sidecar lock file of a session file."""
    real = Path(os.path.realpath(session))
    return real.with_name(real.name + ".lock")


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").split()
    except OSError:
        return None
    return int(text[0]) if text and text[0].isdigit() else None


def _in_use(session: Path, holder: int | None) -> SessionError:
    if holder == os.getpid():
        return SessionError(f"Session file {session} is already open in this pi-compact process; use that session.")
    who = f"pi-compact (pid {holder})" if holder is not None else "another pi-compact process"
    return SessionError(
        f"Session file {session} is in use by {who}; finish or close that session first, then try again."
    )


# Releasing removes the sidecar. A killed holder leaves its sidecar behind, but not its lock (the kernel drops
# it with the process), and the next writer reuses the file. Because a releasing holder removes the file, a
# waiter that gets the lock checks that it locked the file still at that path.
def _release(path: Path, fd: int) -> None:
    try:
        os.unlink(path)  # while still locked: a waiter then sees a new file, not this one
    except OSError:
        pass
    os.close(fd)


_HELD: weakref.WeakSet[SessionLock] = weakref.WeakSet()


def release_all() -> None:
    """Release every lock this process holds (for an exit that skips the interpreter's shutdown)."""
    for lock in list(_HELD):
        lock.release()


def refuse_if_held(session: Path) -> None:
    """Raise the ``SessionError`` that ``acquire`` would raise if another writer holds ``session`` now,
    without waiting and without creating anything (so a terminal can refuse before its prompt)."""
    if fcntl is None:  # pragma: no cover - Windows
        return
    path = lock_path_for(session)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # no sidecar, so no holder (or one that cannot be made: the first write says why)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except BlockingIOError:
        raise _in_use(session, _holder(fd)) from None
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_sidecar(path: Path) -> int:
    """The sidecar's descriptor; a failure names the lock file, not the session (e.g. a directory there)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        what = "is a directory" if isinstance(exc, IsADirectoryError) else f"cannot be made: {exc.strerror or exc}"
        raise OSError(exc.errno, f"its lock file {path} {what}; remove or fix it", str(path)) from exc


class SessionLock:
    """A held lock on one session file; released by ``release``, garbage collection or exit."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._finalizer = weakref.finalize(self, _release, path, fd)
        _HELD.add(self)

    @classmethod
    def acquire(cls, session: Path, wait_s: float | None = None) -> SessionLock | None:
        """Lock ``session`` for writing, waiting up to ``wait_s`` seconds (``LOCK_WAIT_S`` by default).

        Raises ``SessionError`` naming the holder when it stays locked, ``OSError`` when the sidecar
        cannot be made (then writing the session itself would fail too). None without ``fcntl``.
        """
        if fcntl is None:  # pragma: no cover - Windows
            return None
        path = lock_path_for(session)
        deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
        while True:
            fd = _open_sidecar(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                if holder == os.getpid() or time.monotonic() >= deadline:
                    raise _in_use(session, holder) from None
                time.sleep(_POLL_S)
                continue
            except BaseException:
                os.close(fd)
                raise
            try:
                current = os.stat(path)
                mine = os.fstat(fd)
                same = (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)
            except FileNotFoundError:
                same = False
            if not same:  # removed by the holder that released it just now: lock the new one
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError:
                pass  # the lock holds without it; a waiter just cannot name us
            return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._finalizer.alive

    def release(self) -> None:
        self._finalizer()
