"""The learned-windows book: context windows providers stated in overflow errors, per model.

The only module that reads or writes it. One small JSON object ``{model: window}`` in the user cache
directory (``paths.cache_dir``: platformdirs, or ``PI_COMPACT_CACHE_DIR``), written atomically. A book that
cannot be read or written is treated as empty: learning is a help, never a reason for a turn to fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pi_compact.paths import cache_dir

FILE_NAME = "learned-windows.json"


def book_path() -> Path:
    """Where the book lives: in pi-compact's cache directory, beside the local model's files."""
    return cache_dir() / FILE_NAME


def _read(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if type(v) is int and v > 0}


def learned_window(model: str) -> int | None:
    """The window learned for ``model``, if any."""
    return _read(book_path()).get(model)


def remember_window(model: str, window: int) -> bool:
    """Record ``window`` for ``model``; False when it could not be written (it is then only used now)."""
    path = book_path()
    book = _read(path)
    book[model] = window
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(book, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        return False
    return True


__all__ = ["book_path", "learned_window", "remember_window"]
