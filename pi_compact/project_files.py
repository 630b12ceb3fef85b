"""Reading a file a repository ships (``AGENTS.md``, ``.pi/settings.json``, ``.pi/extensions/*.py``) so that
the repository cannot choose what is really read.

Contract:
- ``read_file(path, inside=...)`` returns the file's bytes only when it is a regular file (links followed)
  of at most ``cap`` bytes and, when ``inside`` names folders, its real path lies in one of them. Anything
  else (a link to ``/proc/self/environ`` or ``~/.ssh``, a FIFO, ``/dev/zero``, ``/dev/stdin``, a directory,
  an oversized file) gives no bytes and a reason ("it ..."), for the caller's one sentence naming the file.
- The file is opened non-blocking and checked on the open descriptor, so a FIFO or device swapped in after
  the path check is refused too and never stalls start-up; at most ``cap + 1`` bytes are ever read.
- A missing file is ``ReadOutcome(None, None)``: normal, and silent.
- ``decode(outcome_bytes, path)`` decodes UTF-8 with replacement characters and says so once when it had to.
- ``content_hash`` is what trust remembers of a file: the SHA-256 of its exact bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from pi_compact.paths import PathLike

DEFAULT_CAP = 1024 * 1024  # 1 MiB: far above any real AGENTS.md or settings file, far below trouble


@dataclass(frozen=True)
class ReadOutcome:
    """The bytes read (None: not read) and why they were not (None: the file is missing, nothing to say)."""

    data: bytes | None
    reason: str | None = None


def _inside(real: str, folders: Iterable[PathLike]) -> bool:
    for folder in folders:
        root = os.path.realpath(folder)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def read_file(path: PathLike, *, inside: Iterable[PathLike] | None = None, cap: int = DEFAULT_CAP) -> ReadOutcome:
    """``path``'s bytes under the contract's conditions; ``inside`` None means anywhere (the user's own files)."""
    name = os.fspath(path)
    if not os.path.lexists(name):
        return ReadOutcome(None)
    real = os.path.realpath(name)
    if inside is not None and not _inside(real, inside):
        return ReadOutcome(None, f"it links to {real}, outside the project; copy the file into the project "
                                 "if it should be read")
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return ReadOutcome(None)  # a dangling link: as good as missing
    except OSError as exc:
        return ReadOutcome(None, f"it cannot be read ({exc.strerror or exc})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ReadOutcome(None, "it cannot be read (not a regular file but a device, pipe or folder)")
        if info.st_size > cap:
            return ReadOutcome(None, f"it is {info.st_size:,} bytes, more than the {cap:,} allowed; shorten it")
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(65536, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return ReadOutcome(None, f"it cannot be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
    if size > cap:  # it grew after the size check
        return ReadOutcome(None, f"it is more than the {cap:,} bytes allowed; shorten it")
    return ReadOutcome(b"".join(chunks))


def decode(data: bytes, path: PathLike) -> tuple[str, str | None]:
    """UTF-8 text of ``data`` (a byte-order mark dropped); undecodable bytes become U+FFFD, with a warning."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return (data.decode("utf-8-sig", errors="replace"),
                f"{os.fspath(path)} is not valid UTF-8; its undecodable bytes are replaced.")


def content_hash(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex: what trusting a file remembers."""
    return hashlib.sha256(data).hexdigest()


__all__ = ["DEFAULT_CAP", "ReadOutcome", "content_hash", "decode", "read_file"]

