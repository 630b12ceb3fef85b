"""Bring v1 and v2 session entries up to v3 in memory, exactly as pi does (pure).

v1 -> v2: every entry gets an id and is chained to the previous one; a legacy compaction's
``firstKeptEntryIndex`` (an index into the whole file, header included) becomes ``firstKeptEntryId``.
v2 -> v3: the ``hookMessage`` role is renamed ``custom``. Current files pass through untouched.

The header's version is read as pi reads it (``file_version``), so that a file pi treats as current is
never renumbered here: ``3.0``, ``"3"`` and ``" 3 "`` are version 3, ``4`` is newer and left alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pi_compact.session.entries import CURRENT_VERSION, Entry, new_entry_id

# JavaScript's StringToNumber: surrounding white space is ignored, an empty string is 0, a decimal or
# 0x/0o/0b literal is its value, anything else is NaN (Python's float() would also take "1_0" and "inf").
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")
_BASES = {"x": 16, "o": 8, "b": 2}


def file_version(header: Entry) -> float:
    """The header's format version as pi compares it (NaN when it is no number at all).

    pi takes ``header.version ?? 1`` and compares it with numbers, so JavaScript turns a string, a
    boolean or an array into a number first: ``"3"`` is 3, ``true`` is 1, ``"abc"`` is NaN.
    """
    version = header.get("version")
    return 1 if version is None else _js_number(version)


def _js_number(value: Any) -> float:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list):
        return _js_number(_js_string(value))
    if not isinstance(value, str):
        return math.nan  # an object: "[object Object]"
    text = value.strip(_JS_SPACE)
    if not text:
        return 0
    if _DECIMAL.fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    radix = _RADIX.fullmatch(text)
    try:
        return math.nan if radix is None else int(radix[2], _BASES[radix[1].lower()])
    except ValueError:  # a digit outside the base: "0b12"
        return math.nan


def _js_string(value: Any) -> str:
    """What JavaScript's String() makes of a JSON value inside an array (arrays join with commas)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def migration_from(header: Entry) -> int | None:
    """The version whose migration a file starts with (1 or 2), or None when it needs none.

    A version that is no number (NaN) is compared false both ways by pi, which then migrates nothing;
    such a file is read as it is.
    """
    version = file_version(header)
    if not version < CURRENT_VERSION:
        return None
    return 1 if version < 2 else 2


def migrate(
    header: Entry, entries: list[Entry], make_id: Callable[[set[str]], str] = new_entry_id
) -> bool:
    """Migrate header and entries in place to the current version; True when anything changed."""
    source = migration_from(header)
    if source is None:
        return False
    if source == 1:
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
