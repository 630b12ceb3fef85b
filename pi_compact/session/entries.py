"""Session entries in pi's JSONL v3 shape, as plain dicts, and the small pure helpers over them.

An entry is the parsed JSON object of one line, kept whole so that fields we do not model survive a
round trip. Every entry has ``type``, ``id``, ``parentId`` (None for a root) and an ISO ``timestamp``;
the type decides the rest (pi's nine types, listed in ENTRY_TYPES). No I/O here.
"""

from __future__ import annotations

import secrets
from collections.abc import Container, Mapping
from datetime import datetime, timezone
from typing import Any

from pi_compact.messages import (
    PROVIDER_COMPACTION_KEY,
    Message,
    branch_summary_message,
    compaction_summary_message,
    custom_message,
)

Entry = dict[str, Any]
"""One session entry (or the header), exactly as parsed from its JSON line."""

CURRENT_VERSION = 3

ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)


def iso_to_ms(timestamp: Any) -> int:
    """An entry's ISO timestamp as epoch milliseconds (0 when unparseable, like a NaN date)."""
    if not isinstance(timestamp, str):
        return 0
    text = timestamp.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(round(moment.timestamp() * 1000))


def ms_to_iso(ms: int) -> str:
    """Epoch milliseconds as the ISO string pi writes (``2025-01-02T03:04:05.678Z``)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_entry_id(existing: Container[str]) -> str:
    """Eight hex characters, redrawn on collision (pi's generateId), a longer id as a last resort."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in existing:
            return candidate
    return secrets.token_hex(16)


def new_header(cwd: str, now_ms: int, session_id: str | None = None) -> Entry:
    """A fresh v3 session header; its id is a UUIDv7 of ``now_ms``, as pi makes every session id."""
    # Imported here, not at the top: uuid costs ~4 ms of start-up that reading a session never needs.
    from pi_compact.paths import new_session_id

    return {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or new_session_id(datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc)),
        "timestamp": ms_to_iso(now_ms),
        "cwd": cwd,
    }


def message_of_entry(entry: Mapping[str, Any]) -> Message | None:
    """The message an entry contributes to a model's context, or None (pi's getMessageFromEntry).

    Compaction entries are not mapped here: only the latest one on a path speaks, as a summary,
    and ``build_session_context`` places it.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, (dict, Mapping)) else None
    if kind == "custom_message":
        return custom_message(
            str(entry.get("customType", "")),
            entry.get("content"),
            bool(entry.get("display", False)),
            entry.get("details"),
            iso_to_ms(entry.get("timestamp")),
        )
    if kind == "branch_summary":
        return branch_summary_message(
            str(entry.get("summary", "")), str(entry.get("fromId", "")), iso_to_ms(entry.get("timestamp"))
        )
    return None


def compaction_message(entry: Mapping[str, Any]) -> Message:
    """The summary message a compaction entry stands for, carrying what a provider's own compaction returned
    (``details.providerCompaction``) for the model it is bound to."""
    details = entry.get("details")
    carried = details.get(PROVIDER_COMPACTION_KEY) if isinstance(details, Mapping) else None
    return compaction_summary_message(
        str(entry.get("summary", "")), int(entry.get("tokensBefore") or 0), iso_to_ms(entry.get("timestamp")),
        carried if isinstance(carried, Mapping) else None,
    )
