"""The lean branch read plans, previews and warns exactly like a full load of the session file."""

from __future__ import annotations

import functools
import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, compaction, header, msg, tool_call, tool_result, user
from fixtures_path import needs_fixtures, parity_sessions

from pi_compact.compaction.digest import digest_entry, digest_estimator
from pi_compact.compaction.preview import dry_run
from pi_compact.compaction.tokens import estimator_for
from pi_compact.errors import SessionError
from pi_compact.session.branch_tail import RAW_BUDGET, BranchTail, _FileChanged, _LeanReader
from pi_compact.session.branch_tail import open_branch_tail as open_tail
from pi_compact.session.context import project_path
from pi_compact.session.entries import CURRENT_VERSION
from pi_compact.session.migrate import file_version
from pi_compact.session.store import SessionStore
from pi_compact.settings import CompactionSettings

SETTINGS = [
    (CompactionSettings(keep_recent_tokens=20000, reserve_tokens=16384, token_estimator="chars4"), 200000),
    (CompactionSettings(keep_recent_tokens=2000, reserve_tokens=1000, token_estimator="chars4"), 8000),
    (CompactionSettings(keep_recent_tokens=300, reserve_tokens=100, token_estimator="auto"), 2000),
]


def open_branch_tail(path: Path, texts: bool = True) -> AbstractContextManager[BranchTail | None]:
    """The lean read with compaction's digest, as the compact command does it."""
    return open_tail(path, functools.partial(digest_entry, text=texts))


def _write(path: Path, entries: list[dict[str, Any]], head: dict[str, Any] | None = None, tail: str = "") -> Path:
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in [head or header(), *entries]]
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    return path


def _json(entries: list[dict[str, Any]], settings: CompactionSettings, window: int, tail: BranchTail | None) -> bytes:
    estimator = digest_estimator(estimator_for(settings.token_estimator), tail.load) if tail is not None else None
    return b"".join(dry_run(entries, settings, window, estimator).json_chunks())


def _assert_same_as_full_load(path: Path) -> list[Any]:
    """The ids of the lean tail, after checking it previews exactly like the whole branch."""
    store = SessionStore.open(path, "/work", 0)
    full = store.branch()
    with open_branch_tail(path) as tail:
        assert tail is not None
        assert tail.warnings == store.warnings
        ids = [e.get("id") for e in tail.entries]
        assert ids == [e.get("id") for e in full[len(full) - len(ids) :]]
        roles = [m.get("role") for m in project_path(tail.entries).messages]
        assert roles == [m.get("role") for m in project_path(full).messages]
        for settings, window in SETTINGS:
            assert _json(tail.entries, settings, window, tail) == _json(full, settings, window, None)
    with open_branch_tail(path, texts=False) as bare:  # what the human-readable report reads
        assert bare is not None
        for settings, window in SETTINGS:
            estimator = digest_estimator(estimator_for(settings.token_estimator), bare.load)
            lean = dry_run(bare.entries, settings, window, estimator)
            assert lean.report() == dry_run(full, settings, window).report()
    return ids


def _turns(count: int, first: int = 0, size: int = 400) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(first, first + count):
        call = tool_call("read", {"path": f"src/f{n}.py"}, call_id=f"c{n}")
        messages += [
            user(f"question {n} " + "q" * size),
            assistant(f"looking {n}", tool_calls=[call], stop_reason="toolUse"),
            tool_result("r" * size, tool_call_id=f"c{n}", tool_name="read"),
            assistant(f"answer {n} " + "a" * size),
        ]
    return messages


def _linked(messages: list[dict[str, Any]], prefix: str, parent: str | None = None) -> list[dict[str, Any]]:
    """Message entries with ids prefix0, prefix1... each the child of the one before."""
    entries = []
    for n, message in enumerate(messages):
        entries.append(msg(message, id=f"{prefix}{n}", parent=parent))
        parent = f"{prefix}{n}"
    return entries


def _linear(turns: int) -> list[dict[str, Any]]:
    return _linked(_turns(turns), "a")


def _after(parent: str) -> list[dict[str, Any]]:
    return _linked([user("after the compaction"), assistant("fine")], "x", parent)


@needs_fixtures
@pytest.mark.parametrize("session", parity_sessions(), ids=lambda p: p.name)
def test_branch_tail_plans_like_the_full_branch_on_every_parity_session(session: Path) -> None:
    first_line = session.read_text(encoding="utf-8").split("\n", 1)[0]
    if file_version(json.loads(first_line)) < CURRENT_VERSION:
        with open_branch_tail(session) as tail:
            assert tail is None  # legacy files migrate in a full load
    else:
        _assert_same_as_full_load(session)


def test_tail_starts_at_the_kept_entry_of_the_last_compaction(tmp_path: Path) -> None:
    first = _linear(6)  # a0..a23
    second = _linked(_turns(3, 6), "b", "c1")
    entries = [
        *first, compaction("first", "a8", id="c1", parent="a23"),
        *second, compaction("second", "a16", id="c2", parent="b11"), *_after("c2"),
    ]
    tail_ids = _assert_same_as_full_load(_write(tmp_path / "s.jsonl", entries))
    assert tail_ids[:9] == ["a16", "a17", "a18", "a19", "a20", "a21", "a22", "a23", "c1"]


def test_a_branch_that_leaves_the_compaction_behind_is_read_again_from_the_file(tmp_path: Path) -> None:
    entries = _linear(5)
    entries.append(compaction("summary", "a12", id="c1", parent=entries[-1]["id"]))
    fork = "a5"  # the branch goes back to before everything the compaction covered
    entries += [msg(user("other way"), id="b1", parent=fork), msg(assistant("ok"), id="b2", parent="b1")]
    path = _write(tmp_path / "s.jsonl", entries)
    tail_ids = _assert_same_as_full_load(path)
    assert tail_ids == [e["id"] for e in SessionStore.open(path, "/work", 0).branch()]  # no compaction on it
    assert tail_ids[-3:] == [fork, "b1", "b2"]


def test_a_compaction_whose_kept_entry_is_unknown_starts_the_tail(tmp_path: Path) -> None:
    entries = _linear(4)
    entries.append(compaction("summary", "no-such-entry", id="c1", parent=entries[-1]["id"]))
    entries += _after("c1")
    tail_ids = _assert_same_as_full_load(_write(tmp_path / "s.jsonl", entries))
    assert tail_ids == ["c1", "x0", "x1"]


def test_a_compaction_as_leaf_gives_no_plan_and_the_same_context(tmp_path: Path) -> None:
    entries = _linear(4)
    entries.append(compaction("summary", "a8", id="c1", parent=entries[-1]["id"]))
    path = _write(tmp_path / "s.jsonl", entries)
    _assert_same_as_full_load(path)
    with open_branch_tail(path) as tail:
        assert tail is not None
        estimator = digest_estimator(estimator_for("chars4"), tail.load)
        assert dry_run(tail.entries, SETTINGS[1][0], SETTINGS[1][1], estimator).plan is None


def test_duplicate_ids_resolve_to_the_last_entry_as_in_a_full_load(tmp_path: Path) -> None:
    entries = _linear(4)
    entries[6]["id"] = "a2"  # a corrupt file: one id twice
    _assert_same_as_full_load(_write(tmp_path / "s.jsonl", entries))


def test_bad_lines_give_the_same_warnings_as_a_full_load(tmp_path: Path) -> None:
    lines = [json.dumps(header())] + [json.dumps(e) for e in _linear(3)]
    lines[3:3] = ["{not json", "[1, 2]", "   ", " " + lines[3], '{"a": 1} trailing', "\ufeff{}"]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + '\n{"type": "message", "id": "torn', encoding="utf-8")
    with open_branch_tail(path) as tail:
        assert tail is not None and len(tail.warnings) == 5
    _assert_same_as_full_load(path)


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(header(version=None)) + "\n" + json.dumps(msg(user("hi"))) + "\n",
        json.dumps(msg(user("no header first"), id="a", parent=None)) + "\n",
        "",
    ],
    ids=["legacy-v1", "no-header", "empty"],
)
def test_files_a_full_load_must_handle_are_left_to_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(content, encoding="utf-8")
    with open_branch_tail(path) as tail:
        assert tail is None


def test_a_missing_file_is_left_to_a_full_load(tmp_path: Path) -> None:
    with open_branch_tail(tmp_path / "missing.jsonl") as tail:
        assert tail is None


def test_non_utf8_lines_give_the_same_warnings_and_branch_as_a_full_load(tmp_path: Path) -> None:
    lines = [json.dumps(header()).encode()] + [json.dumps(e, ensure_ascii=False).encode() for e in _linear(3)]
    lines[2:2] = [b"\xff\xfe"]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + json.dumps(msg(user("中文"))).encode()[:-1] + "中".encode()[:2])
    with open_branch_tail(path) as tail:
        assert tail is not None
        assert [w.split(": ", 1)[1] for w in tail.warnings] == [
            "line 3 is not valid UTF-8 text; skipped it.", "line 15 is incomplete (interrupted write); ignored it."
        ]
    assert _assert_same_as_full_load(path)[-1] == "a11"


def test_a_wrongly_shaped_entry_is_skipped_and_bridged_as_in_a_full_load(tmp_path: Path) -> None:
    entries = _linear(3)
    entries[5] = {**entries[5], "message": "not an object"}  # a5: its child a6 hangs on a4 instead
    entries.append(compaction("summary", "a4", id="c1", parent=entries[-1]["id"]))
    entries += _after("c1")
    path = _write(tmp_path / "s.jsonl", entries)
    with open_branch_tail(path) as tail:
        assert tail is not None and len(tail.warnings) == 1 and "line 7 cannot be used" in tail.warnings[0]
    assert _assert_same_as_full_load(path)[0] == "a4"


def test_a_line_changed_in_place_after_reading_is_detected(tmp_path: Path) -> None:
    entries = _linear(3)
    entries.append(compaction("summary", "a8", id="c1", parent=entries[-1]["id"]))
    entries.append(msg(user("back"), id="b1", parent="a1"))  # needs the cold first entries
    path = _write(tmp_path / "s.jsonl", entries)
    with open(path, "rb") as handle:
        reader = _LeanReader(handle, str(path), functools.partial(digest_entry, text=True))
        assert reader.read() is not None
        data = bytearray(path.read_bytes())
        at = data.index(b"question 0")
        data[at : at + 10] = b"QUESTION 0"
        path.write_bytes(bytes(data))  # same length, other text, same inode
        with pytest.raises(_FileChanged):
            reader.branch_tail()


def test_a_file_without_compactions_previews_like_a_full_load(tmp_path: Path) -> None:
    ids = _assert_same_as_full_load(_write(tmp_path / "s.jsonl", _linear(30)))
    assert len(ids) == 120  # the whole branch: every line was digested as it was read


def test_a_long_stretch_after_a_compaction_is_digested_on_the_way(tmp_path: Path) -> None:
    # More raw bytes after the compaction than RAW_BUDGET: they are digested before the end.
    turns = 4 * RAW_BUDGET // 5000 + 4
    first = _linked(_turns(4), "a")
    later = _linked(_turns(turns, 4, size=1200), "b", "c1")
    entries = [*first, compaction("summary", "a8", id="c1", parent=first[-1]["id"]), *later]
    path = _write(tmp_path / "s.jsonl", entries)
    assert path.stat().st_size > 2 * RAW_BUDGET
    assert _assert_same_as_full_load(path)[:2] == ["a8", "a9"]


def test_a_malformed_message_off_the_branch_does_not_stop_the_lean_read(tmp_path: Path) -> None:
    entries = _linear(3)
    broken = {"role": "assistant", "content": 5, "stopReason": "stop", "timestamp": 0}  # content not a list
    entries.append(msg(broken, id="side", parent="a3"))
    entries.append(msg(user("back on the main line"), id="m1", parent=entries[-2]["id"]))
    _assert_same_as_full_load(_write(tmp_path / "s.jsonl", entries))


def test_estimating_a_message_changed_on_disk_since_reading_fails_with_a_clear_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _linear(3))
    with open_branch_tail(path) as tail:
        assert tail is not None
        data = bytearray(path.read_bytes())
        at = data.index(b"answer 2")
        data[at : at + 8] = b"ANSWER 2"
        path.write_bytes(bytes(data))  # same length, other text, same inode
        estimate = digest_estimator(estimator_for("chars4"), tail.load)
        with pytest.raises(SessionError, match="changed while it was being read"):
            estimate(tail.entries[-1]["message"])
