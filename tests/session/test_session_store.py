"""SessionStore on real files (tmp_path): append-only writes, lazy start, damage tolerance, migration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import Entry, assistant, header, roles, user

from pi_compact.errors import SessionError
from pi_compact.session.store import SessionStore

NOW = 1_750_000_000_000


def _line(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _write_lines(path: Path, lines: list[str], *, trailing_newline: bool = True) -> None:
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")


def _v3_lines() -> list[str]:
    return [
        _line(header(3)),
        _line({"type": "message", "id": "e1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
               "message": user("q1"), "futureField": {"kept": [1, 2]}}),
        # odd but valid formatting and escapes must survive untouched on disk
        '{"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2025-01-01T00:00:01.000Z", '
        '"message": {"role": "assistant", "content": [{"type": "text", "text": "caf\\u00e9"}], '
        '"usage": {"input": 1, "cost": {"input": 0.000009}}, "stopReason": "stop"}, "x-extra": true}',
    ]


def _reread(path: Path) -> list[dict[str, Any]]:
    """Every line of the file as JSON (fails on any unparsable line)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _open(path: Path) -> SessionStore:
    return SessionStore.open(path, "/work", NOW)


# ---- round trip and appending ---------------------------------------------------------------------


def test_append_leaves_earlier_lines_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    before = path.read_bytes()
    _open(path).append_message(user("q2"), NOW)
    after = path.read_bytes()
    assert after.startswith(before)
    assert after[len(before):].count(b"\n") == 1


def test_unknown_fields_are_kept_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    store = _open(path)
    assert store.entries[0]["futureField"] == {"kept": [1, 2]}
    assert store.entries[1]["x-extra"] is True
    assert store.warnings == ()


def test_appended_line_is_the_new_entry_chained_to_the_leaf(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    store = _open(path)
    assert store.leaf_id == "e2"
    entry = store.append_message(user("q2"), NOW)
    assert _reread(path)[-1] == entry
    assert entry["parentId"] == "e2"
    assert entry["type"] == "message" and entry["timestamp"] == "2025-06-15T15:06:40.000Z"
    assert store.leaf_id == entry["id"]


def test_reopening_after_appends_gives_same_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    store = _open(path)
    store.append_message(user("q2"), NOW)
    store.append({"type": "thinking_level_change", "thinkingLevel": "high"}, NOW)
    reopened = _open(path)
    assert reopened.entries == store.entries
    assert roles(reopened.context().messages) == ["user", "assistant", "user"]
    assert reopened.context().thinking_level == "high"


# ---- lazy start --------------------------------------------------------------------------------------


def test_new_session_writes_nothing_before_first_assistant(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "new.jsonl"
    store = SessionStore.create(path, "/work", NOW)
    store.append({"type": "model_change", "provider": "openai", "modelId": "gpt-4o"}, NOW)
    store.append_message(user("hello"), NOW)
    assert not path.exists()


def test_first_assistant_writes_header_and_all_buffered_entries(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "new.jsonl"
    store = SessionStore.create(path, "/work", NOW)
    store.append({"type": "model_change", "provider": "openai", "modelId": "gpt-4o"}, NOW)
    store.append({"type": "thinking_level_change", "thinkingLevel": "off"}, NOW)
    store.append_message(user("hello"), NOW)
    store.append_message(assistant("hi"), NOW)
    lines = _reread(path)
    assert lines[0] == store.header
    assert (lines[0]["type"], lines[0]["version"], lines[0]["cwd"]) == ("session", 3, "/work")
    assert lines[1:] == store.entries
    assert [e["parentId"] for e in lines[1:]] == [None, *[e["id"] for e in lines[1:-1]]]


def test_after_first_write_each_append_adds_one_line(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    store = SessionStore.create(path, "/work", NOW)
    store.append_message(user("hello"), NOW)
    store.append_message(assistant("hi"), NOW)
    store.append_message(user("more"), NOW)
    assert len(_reread(path)) == 4


def test_missing_file_opens_as_new_session_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    store = _open(path)
    assert store.entries == [] and store.session_id
    store.append_message(user("hello"), NOW)
    assert not path.exists()


def test_in_memory_session_never_touches_disk(tmp_path: Path) -> None:
    store = SessionStore.in_memory(str(tmp_path), NOW)
    store.append_message(user("hello"), NOW)
    store.append_message(assistant("hi"), NOW)
    assert roles(store.context().messages) == ["user", "assistant"]
    assert list(tmp_path.iterdir()) == []


# ---- damaged files -----------------------------------------------------------------------------------


def test_malformed_middle_line_is_skipped_with_warning_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = _v3_lines()
    _write_lines(path, [lines[0], lines[1], '{"type":"message", oops', lines[2]])
    store = _open(path)
    assert [e["id"] for e in store.entries] == ["e1", "e2"]
    assert len(store.warnings) == 1
    assert str(path) in store.warnings[0] and "line 3" in store.warnings[0]


def test_torn_last_line_is_ignored_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, [*_v3_lines(), '{"type":"message","id":"e3","par'], trailing_newline=False)
    store = _open(path)
    assert [e["id"] for e in store.entries] == ["e1", "e2"]
    assert len(store.warnings) == 1
    assert str(path) in store.warnings[0] and "line 4" in store.warnings[0]


def test_append_after_torn_line_starts_on_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, [*_v3_lines(), '{"type":"message","id":"e3","par'], trailing_newline=False)
    store = _open(path)
    entry = store.append_message(user("q2"), NOW)
    assert path.read_text(encoding="utf-8").endswith("\n")
    reopened = _open(path)
    assert reopened.entries == [*store.entries[:2], entry]
    assert reopened.leaf_id == entry["id"]
    assert len(reopened.warnings) == 1  # the old torn line, now a skipped middle line


def test_complete_last_line_without_newline_is_kept_and_not_glued_to_next(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines(), trailing_newline=False)
    store = _open(path)
    assert [e["id"] for e in store.entries] == ["e1", "e2"] and store.warnings == ()
    entry = store.append_message(user("q2"), NOW)
    assert [line.get("id") for line in _reread(path)] == [header(3)["id"], "e1", "e2", entry["id"]]


def test_empty_file_opens_as_new_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    store = _open(path)
    assert store.entries == [] and store.header["version"] == 3
    store.append_message(user("hello"), NOW)
    assert path.read_text(encoding="utf-8") == ""
    store.append_message(assistant("hi"), NOW)
    lines = _reread(path)
    assert lines[0] == store.header and lines[1:] == store.entries


def test_non_session_file_raises_one_sentence_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\nplain text\n', encoding="utf-8")
    with pytest.raises(SessionError) as caught:
        _open(path)
    message = str(caught.value)
    assert str(path) in message
    assert message.endswith(".") and "\n" not in message and message.count(". ") == 0
    assert path.read_text(encoding="utf-8") == '{"hello": "world"}\nplain text\n'


def test_binary_file_raises_session_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "blob.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(SessionError, match="blob.jsonl"):
        _open(path)


# ---- migration on disk --------------------------------------------------------------------------------


def _v1_file(path: Path, extra: list[Entry] | None = None) -> None:
    entries: list[Entry] = [
        {"type": "message", "timestamp": "2025-01-01T00:00:00.000Z", "message": user("q1")},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": assistant("a1")},
        *(extra or []),
    ]
    _write_lines(path, [_line(header(None)), *map(_line, entries)])


def test_opening_v1_file_does_not_rewrite_it(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    before = path.read_bytes()
    store = _open(path)
    assert store.header["version"] == 3 and all(e.get("id") for e in store.entries)
    assert path.read_bytes() == before


def test_first_append_rewrites_v1_file_as_v3(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    store = _open(path)
    entry = store.append_message(user("q2"), NOW)
    lines = _reread(path)
    assert lines[0]["version"] == 3
    assert lines[1:] == store.entries
    assert lines[-1] == entry and entry["parentId"] == lines[2]["id"]
    store.close()  # removes the lock sidecar
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "old.jsonl.v1.bak"]  # no temporary file


def test_v1_file_is_rewritten_only_once(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    store = _open(path)
    store.append_message(user("q2"), NOW)
    rewritten = path.read_bytes()
    inode = path.stat().st_ino
    store.append_message(assistant("a2"), NOW)
    assert path.read_bytes().startswith(rewritten)
    assert path.stat().st_ino == inode


def test_reopening_migrated_file_gives_same_ids_and_parents(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _v1_file(path)
    store = _open(path)
    store.append_message(user("q2"), NOW)
    reopened = _open(path)
    assert [(e["id"], e["parentId"]) for e in reopened.entries] == [
        (e["id"], e["parentId"]) for e in store.entries
    ]
    assert reopened.header == store.header


def test_v2_hook_message_is_read_as_custom_and_written_back_as_custom(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    hook = {"role": "hookMessage", "customType": "x", "content": "hint", "display": True, "timestamp": 1}
    _write_lines(path, [
        _line(header(2)),
        _line({"type": "message", "id": "h1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
               "message": hook}),
    ])
    store = _open(path)
    assert store.entries[0]["message"]["role"] == "custom"
    store.append_message(assistant("ok"), NOW)
    lines = _reread(path)
    assert lines[0]["version"] == 3
    assert lines[1]["id"] == "h1" and lines[1]["message"]["role"] == "custom"


def test_v1_file_with_lone_surrogate_escape_can_be_migrated_and_appended(tmp_path: Path) -> None:
    # JSON.stringify writes a lone surrogate (e.g. output cut inside an emoji) as a \ud83d escape
    path = tmp_path / "old.jsonl"
    cut = {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": user("cut \ud83d")}
    _v1_file(path, [cut])
    assert "\\ud83d" in path.read_text(encoding="utf-8")
    store = _open(path)
    store.append_message(user("next"), NOW)
    assert "\\ud83d" in path.read_text(encoding="utf-8")
    assert _open(path).entries[2]["message"]["content"] == "cut \ud83d"


def test_new_entry_with_lone_surrogate_is_appended_as_escape(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    store = _open(path)
    store.append_message(user("x" * 3 + "\ud83d"), NOW)
    assert _reread(path)[-1]["message"]["content"] == "xxx\ud83d"


# ---- the thinking level a resume starts at ----------------------------------------------------------------


def test_the_branch_thinking_levels_before_a_compaction_are_read_without_a_full_read(tmp_path: Path) -> None:
    from pi_compact.session.lazy import EntryIndex

    path = tmp_path / "s.jsonl"
    store = SessionStore.create(path, "/work", NOW)
    store.append({"type": "thinking_level_change", "thinkingLevel": "low"}, NOW)
    store.append({"type": "thinking_level_change", "thinkingLevel": "high"}, NOW)
    store.append_message(user("q1"), NOW)
    store.append_message(assistant("a1"), NOW)
    kept = store.append_message(user("q2"), NOW)
    store.append_message(assistant("a2"), NOW)
    store.append({"type": "compaction", "summary": "s", "firstKeptEntryId": kept["id"], "tokensBefore": 9}, NOW)
    store.close()
    reads = EntryIndex.full_reads
    reopened = _open(path)
    changes, _ = reopened.customs_on_path(reopened.leaf_id, None, "thinking_level_change")
    assert [change["thinkingLevel"] for change in changes] == ["low", "high"]
    assert EntryIndex.full_reads == reads


def test_a_branch_without_a_thinking_level_change_has_none(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write_lines(path, _v3_lines())
    store = _open(path)
    assert store.customs_on_path(store.leaf_id, None, "thinking_level_change") == ([], False)
