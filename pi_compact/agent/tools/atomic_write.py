"""Replacing a user's file so that a crash or ``kill -9`` can never leave it truncated.

Contract: after ``replace_file(path, data)`` returns, the file holds ``data``; if the process dies at any
point before that, the file still holds its old contents, whole. The new bytes go to a temporary file
in the same directory (same file system, so the final ``rename`` is atomic), which is flushed to disk
and then renamed over the old file.

What the rename would otherwise lose is carried over: writing through a symlink replaces the link's
target and leaves the link alone; the old file's permission bits are kept, and its owner and group
where the process is allowed to set them. A new file gets the usual ``0o666`` minus the umask.
Known limits: a file with several hard links is split from its other names, and extended attributes
and ACLs are not copied. A kill can leave the temporary file (``.NAME.PID-RANDOM.pi-tmp``) behind; it
never replaces the user's file, and the next successful write of the same file removes those whose
process is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from pi_compact.agent.tools.regular import NotRegularFile, file_kind
from pi_compact.durable import sync_directory

TEMP_SUFFIX = ".pi-tmp"
_NAME_KEEP = 100  # characters of the original name kept in the temporary name (NAME_MAX is 255 bytes)


def replace_file(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically (see the module contract); True if the file existed."""
    # realpath follows every symlink (a dangling one too), so the link itself is never replaced.
    target = Path(os.path.realpath(path))
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise NotRegularFile(path, file_kind(old.st_mode))
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f"{_temp_prefix(target)}{os.getpid()}-{secrets.token_hex(4)}{TEMP_SUFFIX}")
    # A new file gets 0o666 & ~umask from the kernel; a replacement starts private and gets the old mode.
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if old is None else 0o600)
    except PermissionError as exc:
        # Name the user's file, not the temporary one, and say why a directory permission matters.
        reason = f"{exc.strerror} to create a file in {target.parent}, needed to replace the file safely"
        raise PermissionError(exc.errno, reason, str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if old is not None:
                _copy_owner_and_mode(handle.fileno(), old)
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    sync_directory(target.parent)
    _remove_stale_temporaries(target)
    return old is not None


def _temp_prefix(target: Path) -> str:
    return f".{target.name[:_NAME_KEEP]}."


def _remove_stale_temporaries(target: Path) -> None:
    """Delete temporary files of ``target`` that a killed process left: those whose pid is not running."""
    prefix = _temp_prefix(target)
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        pid_text = name[len(prefix) : -len(TEMP_SUFFIX)].partition("-")[0]
        if pid_text.isdigit() and not _running(int(pid_text)):
            with contextlib.suppress(OSError):
                os.unlink(target.parent / name)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _copy_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """Give the temporary file the old file's owner, group and permission bits, as far as allowed."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:
            # Not root: the owner cannot be given away, but a group we belong to can still be kept.
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, old.st_gid)
    # After chown, which clears set-user-ID and set-group-ID bits, so that they come back too.
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
