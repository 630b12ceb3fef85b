"""Migration of v1/v2 session entries to v3, in memory (pi's migration tests plus the real fixtures)."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from builders import Entry, assistant, header, user
from fixtures_path import FIXTURES, needs_fixtures

from pi_compact.session.migrate import file_version, migrate, migration_from
from pi_compact.session.store import parse_session_text


def _v1_entries() -> list[Entry]:
    # legacy entries: no id, no parentId
    return [
        {"type": "message", "timestamp": "t0", "message": user("q1")},
        {"type": "message", "timestamp": "t1", "message": assistant("a1")},
        {"type": "thinking_level_change", "timestamp": "t2", "thinkingLevel": "high"},
        {"type": "message", "timestamp": "t3", "message": user("q2")},
    ]


def _counter() -> Iterator[str]:
    n = 0
    while True:
        yield f"id{n:05d}"
        n += 1


def test_file_version_defaults_to_one_without_version() -> None:
    assert file_version(header(None)) == 1
    assert file_version(header(2)) == 2
    assert file_version(header(3)) == 3


# What pi 0.73.1 does with each header version (``header.version ?? 1``, then ``>= 3``, ``< 2``, ``< 3``), as
# node printed it: None = no migration step; pi compares NaN false both ways and migrates nothing.
@pytest.mark.parametrize(("version", "steps_from"), [
    (3.0, None), ("3", None), (" 3 ", None), ("3e0", None), ("0x3", None), ([3], None), (4, None),
    ("Infinity", None), ("abc", None), ("1_0", None), ({}, None), ([1, 2], None), ("0b12", None),
    (None, 1), (-1, 1), (True, 1), (False, 1), ("", 1), ("1.", 1), ("2", 2), (2.5, 2),
])
def test_the_header_version_is_read_as_pi_compares_it(version: object, steps_from: int | None) -> None:
    head = {"type": "session", "id": "s"} if version is None else {"type": "session", "id": "s", "version": version}
    assert migration_from(head) == steps_from


def test_a_version_that_is_no_number_is_read_as_nan_and_left_as_it_is() -> None:
    head = header(None)
    head["version"] = "abc"
    entries: list[Entry] = [{"type": "message", "id": "k1", "parentId": None, "timestamp": "t", "message": user("q")}]
    assert math.isnan(file_version(head))
    assert migrate(head, entries) is False
    assert head["version"] == "abc" and entries[0]["id"] == "k1"


def test_a_string_version_3_is_not_migrated() -> None:
    head = header(None)
    head["version"] = "3"
    entries: list[Entry] = [{"type": "message", "id": "k1", "parentId": None, "timestamp": "t", "message": user("q")}]
    assert migrate(head, entries) is False
    assert entries[0]["id"] == "k1" and head["version"] == "3"


def test_v1_entries_get_eight_hex_ids_chained_in_file_order() -> None:
    head, entries = header(None), _v1_entries()
    assert migrate(head, entries) is True
    ids = [e["id"] for e in entries]
    assert all(re.fullmatch("[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert [e["parentId"] for e in entries] == [None, *ids[:-1]]
    assert head["version"] == 3


def test_v1_migration_uses_given_id_factory() -> None:
    ids = _counter()
    entries = _v1_entries()
    migrate(header(None), entries, lambda taken: next(ids))
    assert [e["id"] for e in entries] == ["id00000", "id00001", "id00002", "id00003"]


def test_legacy_compaction_index_becomes_id_of_that_entry_counting_header_as_zero() -> None:
    entries = _v1_entries() + [
        {"type": "compaction", "timestamp": "t4", "summary": "S", "firstKeptEntryIndex": 2, "tokensBefore": 9}
    ]
    migrate(header(None), entries)
    compaction = entries[-1]
    assert compaction["firstKeptEntryId"] == entries[1]["id"]  # file index 2 = second entry
    assert "firstKeptEntryIndex" not in compaction


def test_legacy_compaction_index_pointing_at_header_gets_no_id() -> None:
    entries = [{"type": "compaction", "timestamp": "t", "summary": "S", "firstKeptEntryIndex": 0}]
    migrate(header(None), entries)
    assert "firstKeptEntryId" not in entries[0]
    assert "firstKeptEntryIndex" not in entries[0]


def test_v2_keeps_ids_and_renames_hook_message_role_to_custom() -> None:
    hook = {"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1}
    entries: list[Entry] = [
        {"type": "message", "id": "aaaa0001", "parentId": None, "timestamp": "t", "message": user("q")},
        {"type": "message", "id": "aaaa0002", "parentId": "aaaa0001", "timestamp": "t", "message": hook},
    ]
    head = header(2)
    assert migrate(head, entries) is True
    assert [e["id"] for e in entries] == ["aaaa0001", "aaaa0002"]
    assert entries[1]["message"]["role"] == "custom"
    assert head["version"] == 3


def test_migration_of_current_version_is_a_no_op() -> None:
    entries: list[Entry] = [
        {"type": "message", "id": "b1", "parentId": None, "timestamp": "t", "message": user("q")},
        {"type": "message", "id": "b2", "parentId": "b1", "timestamp": "t",
         "message": {"role": "hookMessage"}},
    ]
    head = header(3)
    before = copy.deepcopy((head, entries))
    assert migrate(head, entries) is False
    assert (head, entries) == before


def test_migrating_twice_changes_nothing_the_second_time() -> None:
    head, entries = header(None), _v1_entries()
    migrate(head, entries)
    once = copy.deepcopy((head, entries))
    assert migrate(head, entries) is False
    assert (head, entries) == once


# ---- real fixtures -----------------------------------------------------------------------------------


def _load(name: str) -> tuple[Entry, list[Entry]]:
    loaded = parse_session_text((FIXTURES / name).read_text(encoding="utf-8"), name)
    assert loaded.header is not None and not loaded.warnings
    return loaded.header, loaded.entries


def _shape(value: Any) -> Any:
    """Key order of every object, recursively (JSON values compare equal regardless of order)."""
    if isinstance(value, dict):
        return [(key, _shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return None


@needs_fixtures
def test_before_compaction_legacy_compactions_keep_from_user_messages_at_file_indexes_293_and_551() -> None:
    head, entries = _load("pi-before-compaction.jsonl")
    migrate(head, entries)
    file_index = {e["id"]: i + 1 for i, e in enumerate(entries)}  # the header is file index 0
    kept = [entries[file_index[c["firstKeptEntryId"]] - 1] for c in entries if c["type"] == "compaction"]
    assert [file_index[e["id"]] for e in kept] == [293, 551]
    assert [e["message"]["role"] for e in kept] == ["user", "user"]


@needs_fixtures
def test_our_migration_of_v1_fixtures_equals_pis_own_up_to_ids() -> None:
    for name in ("pi-large-session", "pi-before-compaction"):
        head, entries = _load(f"{name}.jsonl")
        pi_head, pi_entries = _load(f"{name}.v3.jsonl")
        migrate(head, entries)
        assert len(entries) == len(pi_entries), name
        assert head == pi_head and _shape(head) == _shape(pi_head), name
        to_pi = {ours["id"]: theirs["id"] for ours, theirs in zip(entries, pi_entries, strict=True)}
        for ours, theirs in zip(entries, pi_entries, strict=True):
            renamed = dict(ours)
            for key in ("id", "parentId", "firstKeptEntryId"):
                if isinstance(renamed.get(key), str):
                    renamed[key] = to_pi[renamed[key]]
            assert renamed == theirs, (name, theirs["id"])
            assert _shape(renamed) == _shape(theirs), (name, theirs["id"])
