"""The sessions of one directory, newest first, each described in one line's worth of facts.

Contract: ``list_sessions(directory)`` reads each ``.jsonl`` file that starts with a session header and
returns a ``SessionSummary`` per file (when it was last written, its name from pi's newest
``session_info`` entry, its first user message, its size and how many compactions it holds, less those
``/uncompact`` took back), newest
first. Unreadable files and files that are not sessions are skipped, never an error. Lines are
parsed only when they can matter (a cheap substring test first), so large sessions list quickly.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_compact.session.tree import UNCOMPACT_TYPE


@dataclass(frozen=True)
class SessionSummary:
    """One session file as the picker lists it."""

    path: Path
    modified_s: float
    size: int
    name: str | None
    first_message: str
    compactions: int

    @property
    def title(self) -> str:
        return self.name or self.first_message or "(no messages)"


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text":
            return str(block.get("text", ""))
    return ""


def summarize(path: Path) -> SessionSummary | None:
    """The facts of one session file, or None when it is not a readable session."""
    try:
        stat = path.stat()
        with path.open(encoding="utf-8", errors="replace") as handle:
            header = json.loads(handle.readline() or "null")
            if not isinstance(header, dict) or header.get("type") != "session":
                return None
            name: str | None = None
            first = ""
            compacted: list[Any] = []
            undone: set[Any] = set()  # compactions /uncompact took back: the branch left them
            for line in handle:
                if '"compaction"' in line and '"type":"compaction"' in line.replace(" ", ""):
                    compacted.append(json.loads(line).get("id"))
                elif UNCOMPACT_TYPE in line:
                    data = json.loads(line).get("data")
                    undone.add(data.get("compactionId") if isinstance(data, dict) else None)
                elif '"session_info"' in line or (not first and '"user"' in line):
                    entry = json.loads(line)
                    if entry.get("type") == "session_info" and isinstance(entry.get("name"), str):
                        name = entry["name"].strip() or None
                    message = entry.get("message") if entry.get("type") == "message" else None
                    if not first and isinstance(message, dict) and message.get("role") == "user":
                        first = " ".join(_first_text(message.get("content")).split())
    except (OSError, ValueError):
        return None
    compactions = sum(1 for entry_id in compacted if entry_id not in undone)
    return SessionSummary(path, stat.st_mtime, stat.st_size, name, first, compactions)


def list_sessions(directory: Path) -> list[SessionSummary]:
    """Every session in ``directory``, newest first."""
    try:
        names = [entry.path for entry in os.scandir(directory) if entry.name.endswith(".jsonl") and entry.is_file()]
    except OSError:
        return []
    found = [summary for summary in map(summarize, map(Path, names)) if summary is not None]
    return sorted(found, key=lambda s: (s.modified_s, s.path.name), reverse=True)


__all__ = ["SessionSummary", "list_sessions", "summarize"]
