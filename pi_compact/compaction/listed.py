"""A labelled line of exact values under Critical Context, carried from one summary to the next (pure).

The values a summary must keep word for word whatever the model wrote (the ids the user typed, the names
the edits added) go on one line such as ``- Ids named by the user: ABC-123, v2.3.1``. The next compaction
reads the line back from the previous summary, so the values carry on, the newest kept when there are
too many.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pi_compact.compaction.prompts import CRITICAL
from pi_compact.compaction.quality import append_items


def listed(summary: str, prefix: str) -> list[str]:
    """The values of ``summary``'s line starting with ``prefix`` (none: no such line)."""
    for line in summary.splitlines():
        if line.startswith(prefix):
            return [value.strip() for value in line[len(prefix):].split(",") if value.strip()]
    return []


def newest_distinct(earlier: Iterable[str], later: Iterable[str], limit: int) -> list[str]:
    """``earlier`` then ``later`` values, each once where it last appeared, the newest ``limit`` of them."""
    found: dict[str, None] = dict.fromkeys(earlier)
    for value in later:
        found.pop(value, None)
        found[value] = None
    return list(found)[-limit:]


def add_line(summary: str, prefix: str, values: Sequence[str]) -> str:
    """``summary`` with ``values`` on one ``prefix`` line under Critical Context."""
    return append_items(summary, {CRITICAL: [prefix + ", ".join(values)]})


__all__ = ["add_line", "listed", "newest_distinct"]
