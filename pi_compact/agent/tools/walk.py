"""Directory walking and glob matching shared by ``grep`` and ``find``.

Walks are deterministic (sorted), do not descend into directory symlinks (no loops), and skip directories
that are almost never what a model is looking for and can be huge: ``SKIPPED_DIRS``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from pi_compact.cancel import CancelToken

SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".hg", ".svn", ".mypy_cache"})
_BINARY_SNIFF_BYTES = 8192


def walk(root: Path, cancel: CancelToken | None = None) -> Iterator[tuple[Path, bool]]:
    """Every ``(path, is_dir)`` under ``root``, depth first in name order, minus skipped directories.

    Depth-first name order means results read like a sorted listing and "the first N" is stable.
    Unreadable directories are passed over. Stops early (quietly) when ``cancel`` is set; callers check
    the event to say so.
    """
    stack: list[Iterator[os.DirEntry[str]]] = [_sorted_entries(root)]
    while stack:
        if cancel is not None and cancel.cancelled:
            return
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        if is_dir and entry.name in SKIPPED_DIRS:
            continue
        yield Path(entry.path), is_dir
        if is_dir:
            stack.append(_sorted_entries(Path(entry.path)))


def _sorted_entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return iter(sorted(entries, key=lambda entry: entry.name))
    except OSError:
        return iter(())


def is_binary(path: Path) -> bool:
    """True when the start of the file holds a NUL byte (the usual, cheap heuristic)."""
    with path.open("rb") as handle:
        return b"\x00" in handle.read(_BINARY_SNIFF_BYTES)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay inside one path segment, ``**/`` spans any number of directories (none
    included), ``[abc]`` is a character class. A pattern without ``/`` matches the file name at any
    depth, so ``*.py`` finds Python files everywhere, as ``fd``/``rg --glob`` do.
    """
    if "/" not in pattern:
        pattern = "**/" + pattern
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            parts.append("(?:[^/]*/)*")
            index += 3
            continue
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[" and (end := pattern.find("]", index + 2)) != -1:
            body = pattern[index + 1 : end]
            negate = body.startswith("!")
            body = (body[1:] if negate else body).replace("\\", "\\\\").replace("[", "\\[")
            if body.startswith("^"):
                body = "\\" + body
            parts.append("[" + ("^" if negate else "") + body + "]")  # ranges like a-z keep working
            index = end + 1
            continue
        else:
            parts.append(re.escape(char))
        index += 1
    return re.compile("".join(parts) + r"\Z")


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators."""
    return path.relative_to(root).as_posix()
