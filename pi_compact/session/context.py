"""What the model sees: the path from a leaf to the root, projected to messages (pure).

Port of pi's buildSessionContext, plus one addition of ours: a compaction entry carrying
``retainedTail`` (a self-contained copy of the messages it kept) is read from that copy, so the
checkpoint does not depend on older entries; entries without it fall back to ``firstKeptEntryId``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.messages import Message
from pi_compact.session.entries import Entry, compaction_message, message_of_entry

_UNSET: Any = object()


@dataclass(frozen=True)
class SessionContext:
    """Messages for the model, plus the thinking level and model in force on the path."""

    messages: tuple[Message, ...]
    thinking_level: str = "off"
    model: tuple[str, str] | None = None  # (provider, model id)


def index_by_id(entries: Sequence[Entry]) -> dict[str, Entry]:
    """Entries keyed by id (a header or id-less entry is left out)."""
    return {entry["id"]: entry for entry in entries if isinstance(entry.get("id"), str)}


def path_to(leaf: Entry | None, by_id: Mapping[str, Entry]) -> list[Entry]:
    """Root-first path ending at ``leaf``; a missing parent simply ends the walk."""
    path: list[Entry] = []
    seen: set[int] = set()
    current = leaf
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path


def _context_message(entry: Mapping[str, Any]) -> Message | None:
    message = message_of_entry(entry)
    if message is not None and message.get("role") == "branchSummary" and not message.get("summary"):
        return None  # an empty branch summary says nothing
    return message


def project_path(path: Sequence[Mapping[str, Any]]) -> SessionContext:
    """Project a root-first path to the model's messages (summary first after a compaction)."""
    thinking = "off"
    model: tuple[str, str] | None = None
    compaction_index = -1
    for index, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking = str(entry.get("thinkingLevel", thinking))
        elif kind == "model_change":
            model = (str(entry.get("provider", "")), str(entry.get("modelId", "")))
        elif kind == "message":
            message = entry.get("message") or {}
            if message.get("role") == "assistant":
                # The model that actually answered wins over a recorded switch.
                model = (str(message.get("provider", "")), str(message.get("model", "")))
        elif kind == "compaction":
            compaction_index = index

    messages: list[Message] = []
    if compaction_index < 0:
        messages.extend(m for m in map(_context_message, path) if m is not None)
        return SessionContext(tuple(messages), thinking, model)

    compaction = path[compaction_index]
    messages.append(compaction_message(compaction))
    tail = compaction.get("retainedTail")
    if isinstance(tail, list):
        messages.extend(m for m in tail if isinstance(m, Mapping))
    else:
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in path[:compaction_index]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping:
                message = _context_message(entry)
                if message is not None:
                    messages.append(message)
    messages.extend(m for m in map(_context_message, path[compaction_index + 1 :]) if m is not None)
    return SessionContext(tuple(messages), thinking, model)


def fresh_start(path: Sequence[Mapping[str, Any]], context: SessionContext) -> int:
    """Where in ``context`` (``project_path(path)``) the messages written since the latest compaction on
    ``path`` begin: 0 without one. The summary and the kept tail before it carry usage that measured a
    context which no longer exists (pi #1860)."""
    latest = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None)
    if latest is None:
        return 0
    return len(context.messages) - len(project_path(path[latest + 1 :]).messages)


def build_session_context(
    entries: Sequence[Entry], leaf_id: str | None = _UNSET, by_id: Mapping[str, Entry] | None = None
) -> SessionContext:
    """pi's buildSessionContext over all entries of a file (header excluded).

    ``leaf_id`` None means an explicitly empty position; unset or unknown means the last entry.
    """
    if leaf_id is None:
        return SessionContext(())
    if not entries:
        return SessionContext(())
    index = by_id if by_id is not None else index_by_id(entries)
    leaf = index.get(leaf_id) if leaf_id is not _UNSET and isinstance(leaf_id, str) else None
    if leaf is None:
        leaf = entries[-1]
    return project_path(path_to(leaf, index))
