"""Durability of renames: after replacing a file by renaming a temporary one over it, the directory
entry must reach the disk too, or a power loss can bring back the old name. Used by the session store
and by the file tools' atomic writes."""

from __future__ import annotations

import os
from pathlib import Path


def sync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries to disk; best effort, as not every platform or file system lets a
    directory be opened or synced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
