"""Bring v1 and v2 session entries up to v3 in memory, exactly as pi does (pure).

v1 -> v2: every entry gets an id and is chained to the previous one; a legacy compaction's
``firstKeptEntryIndex`` (an index into the whole file, header included) becomes ``firstKeptEntryId``.
v2 -> v3: the ``hookMessage`` role is renamed ``custom``. Current files pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable

from pi_compact.session.entries import CURRENT_VERSION, Entry, new_entry_id


def file_version(header: Entry) -> int:
    """The header's format version; pi's first format had none."""
    version = header.get("version")
    return version if isinstance(version, int) else 1


def migrate(
    header: Entry, entries: list[Entry], make_id: Callable[[set[str]], str] = new_entry_id
) -> bool:
    """Migrate header and entries in place to the current version; True when anything changed."""
    version = file_version(header)
    if version >= CURRENT_VERSION:
        return False
    if version < 2:
        _v1_to_v2(header, entries, make_id)
    _v2_to_v3(header, entries)
    return True


def _v1_to_v2(header: Entry, entries: list[Entry], make_id: Callable[[set[str]], str]) -> None:
    ids: set[str] = set()
    everything = [header, *entries]  # legacy indexes count the header as 0
    previous: str | None = None
    for entry in entries:
        entry_id = make_id(ids)
        ids.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry.pop("firstKeptEntryIndex")
            if isinstance(index, int) and 0 < index < len(everything):
                entry["firstKeptEntryId"] = everything[index].get("id")
    header["version"] = 2


def _v2_to_v3(header: Entry, entries: list[Entry]) -> None:
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
    header["version"] = CURRENT_VERSION
