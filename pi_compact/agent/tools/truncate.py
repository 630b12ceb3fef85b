"""Output budgets shared by the tools, and the helpers that cut text to fit them.

A tool result goes straight into the model's context, so every tool caps what it returns at
``MAX_LINES`` lines or ``MAX_BYTES`` bytes (whichever comes first) and says so in a notice.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
MAX_LINE_CHARS = 2000


def cut_line(line: str, max_chars: int = MAX_LINE_CHARS) -> str:
    """``line`` shortened to ``max_chars`` characters with a marker saying how much was dropped."""
    if len(line) <= max_chars:
        return line
    return f"{line[:max_chars]} [... line cut, {len(line) - max_chars} more characters]"


def head_count(lines: Sequence[str], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> int:
    """How many leading ``lines`` fit the budget once joined with newlines (at least one if any exist)."""
    used = 0
    for index, line in enumerate(lines[:max_lines]):
        used += len(line.encode("utf-8")) + (1 if index else 0)
        if used > max_bytes:
            return max(index, 1)
    return min(len(lines), max_lines)


def tail_text(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> str:
    """The end of ``text`` within the budget, cut at a line boundary when possible.

    When even the last line is over ``max_bytes``, its final ``max_bytes`` bytes are kept: the end of a
    build log is what says why it failed.
    """
    lines = text.split("\n")[-max_lines:]
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        size = len(line.encode("utf-8")) + (1 if kept else 0)
        if used + size > max_bytes:
            if not kept:
                kept.append(line.encode("utf-8")[-max_bytes:].decode("utf-8", errors="ignore"))
            break
        kept.append(line)
        used += size
    return "\n".join(reversed(kept))


def format_size(size: int) -> str:
    """``size`` bytes as a short human string (``512 B``, ``3.4 KB``, ``1.2 MB``)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def plural(count: int, word: str) -> str:
    """``1 line`` / ``3 lines``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
