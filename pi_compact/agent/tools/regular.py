"""Opening a user's file for reading only when it is a regular file, without ever blocking.

Contract: ``open_regular`` returns a buffered binary reader for a regular file, or raises
``NotRegularFile`` naming what the path is instead (a FIFO, a device, a socket). A FIFO is opened
non-blocking, so a path that turns into a pipe between the check and the open cannot hang the call:
without a writer, a plain ``open`` of a FIFO waits for ever, and reading ``/dev/zero`` never ends.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(Exception):
    """The path exists but is not a regular file; ``kind`` says what it is (``"a FIFO (named pipe)"``)."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path} is {kind}")
        self.path = path
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a ``st_mode`` describes, as a noun phrase for an error sentence."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """A buffered reader for the regular file at ``path`` (symlinks followed); see the module contract."""
    kind = file_kind(os.stat(path).st_mode)  # cheap first check: never even open a device
    if kind != "a regular file":
        raise NotRegularFile(path, kind)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        # Checked again on the open descriptor: the path may have been swapped since the stat above.
        kind = file_kind(os.fstat(fd).st_mode)
        if kind != "a regular file":
            raise NotRegularFile(path, kind)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
