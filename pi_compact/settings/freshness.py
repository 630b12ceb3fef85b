"""Whether the settings files changed since they were read (``/settings`` then says to reload).

A stamp is a file's modification time and size as read just before the file was (None for both when
it was absent); comparing stamps reads no file content.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

Stamp = tuple[str, "int | None", "int | None"]  # (path, mtime in ns, size in bytes)


def stamp(path: Path) -> Stamp:
    """``path`` as it is now."""
    try:
        found = path.stat()
    except OSError:
        return (os.fspath(path), None, None)
    return (os.fspath(path), found.st_mtime_ns, found.st_size)


def changed_since(stamps: Iterable[Stamp]) -> list[str]:
    """The paths among ``stamps`` that were written, created or removed since they were stamped."""
    return [path for path, *was in stamps if stamp(Path(path))[1:] != tuple(was)]


def stamps_of(paths: Sequence[Path]) -> tuple[Stamp, ...]:
    return tuple(stamp(path) for path in paths)


__all__ = ["Stamp", "changed_since", "stamp", "stamps_of"]
