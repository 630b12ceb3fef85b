"""Issue 9: a resumed session is read lean (the branch tail in memory, older entries on demand), its
appends are fsynced once per turn, and what a full load builds is kept out of the garbage collector."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, compaction, header, msg, tool_call, tool_result, user

from pi_compact.errors import SessionError
from pi_compact.session import writes
from pi_compact.session.context import project_path
from pi_compact.session.lazy import EntryIndex, tail_start
from pi_compact.session.store import SessionStore, parse_session_text

NOW = 1_700_000_000_000


def _linked(messages: list[dict[str, Any]], prefix: str, parent: str | None = None) -> list[dict[str, Any]]:
    """Message entries ``prefix0``, ``prefix1``... each the child of the one before."""
    entries = []
    for n, message in enumerate(messages):
        entries.append(msg(message, id=f"{prefix}{n}", parent=parent))
        parent = f"{prefix}{n}"
    return entries


def _turns(count: int, first: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(first, first + count):
        call = tool_call("read", {"path": f"src/f{n}.py"}, f"c{n}")
        messages += [user(f"question {n}"), assistant(f"looking {n}", tool_calls=[call]),
                     tool_result(f"contents {n}", tool_call_id=f"c{n}", tool_name="read"), assistant(f"answer {n}")]
    return messages


def _write(path: Path, entries: list[dict[str, Any]], extra_lines: tuple[str, ...] = ()) -> Path:
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in [header(), *entries]]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n", encoding="utf-8")
    return path


def _compacted(path: Path) -> Path:
    """Two compactions on the main line, an abandoned branch, and a line that is no entry."""
    first = _linked(_turns(4), "a")  # a0..a15
    second = _linked(_turns(2, 4), "b", "c1")  # b0..b7
    entries = [
        *first, compaction("first", "a8", id="c1", parent="a15"),
        *second, compaction("second", "b4", id="c2", parent="b7"),
        *_linked([user("other way"), assistant("ok")], "x", "a3"),  # abandoned (written before the leaf)
        *_linked([user("after"), assistant("fine")], "d", "c2"),
    ]
    return _write(path, entries, extra_lines=("{not json",))


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()  # what the store froze goes back to the collector between tests


def test_a_resumed_session_holds_the_same_entries_branch_and_warnings_as_a_full_load(tmp_path: Path) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    full = parse_session_text(path.read_text(encoding="utf-8"), str(path))
    store = SessionStore.open(path, "/work", NOW)
    assert store.warnings == full.warnings and len(store.warnings) == 1
    assert store.entry_count() == len(full.entries) and store.compaction_count() == 2
    assert store.leaf_id == "d1"
    tail = store.branch_tail()
    assert [e["id"] for e in tail] == ["b4", "b5", "b6", "b7", "c2", "d0", "d1"]
    assert store.entries == full.entries
    assert tail == store.branch()[tail_start(store.branch()) :]
    assert all(any(t is e for e in store.entries) for t in tail)  # the same objects, not copies
    assert sorted(store.by_id) == sorted(e["id"] for e in full.entries)


def test_the_tail_of_a_resumed_session_gives_the_full_context(tmp_path: Path) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    store = SessionStore.open(path, "/work", NOW)
    messages = project_path(store.branch_tail()).messages
    assert messages == SessionStore.open(path, "/work", NOW).context().messages
    assert [m["role"] for m in messages] == ["compactionSummary", "user", "assistant", "toolResult", "assistant",
                                             "user", "assistant"]


def test_one_pass_over_a_resumed_session_gives_every_entry_without_keeping_the_old_ones(tmp_path: Path) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    full = parse_session_text(path.read_text(encoding="utf-8"), str(path))
    store = SessionStore.open(path, "/work", NOW)
    index = store._index
    assert index is not None
    parsed_before = sum(isinstance(kept, dict) for kept in index._reader.kept)
    reads = EntryIndex.full_reads
    assert list(store.each_entry()) == full.entries
    assert EntryIndex.full_reads == reads and store._index is index  # still the lean index
    assert sum(isinstance(kept, dict) for kept in index._reader.kept) == parsed_before < len(full.entries)


def test_a_resumed_session_reads_older_entries_only_when_asked(tmp_path: Path) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    store = SessionStore.open(path, "/work", NOW)
    data = path.read_bytes()
    old = data.index(b'"question 1"')  # in a1, long compacted: the tail never reads it
    path.write_bytes(data[:old] + b'"QUESTION 1"' + data[old + len(b'"question 1"') :])  # same length
    assert [e["id"] for e in store.branch_tail()][-2:] == ["d0", "d1"]
    with pytest.raises(SessionError) as caught:
        store.entries  # noqa: B018 - reading them is the point
    assert str(caught.value) == (
        f"{path} was changed or removed by another program since pi-compact read it, so its older entries "
        "cannot be read; open it again to continue."
    )


def test_appends_to_a_resumed_session_move_its_tail_and_reopen_the_same(tmp_path: Path) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    store = SessionStore.open(path, "/work", NOW)
    prompt = store.append_message(user("next"), NOW)
    reply = store.append_message(assistant("sure"), NOW)
    third = store.append({"type": "compaction", "summary": "third", "firstKeptEntryId": "d1", "tokensBefore": 9},
                         NOW)
    tail = store.branch_tail()
    assert tail[0]["id"] == "d1" and tail[1:] == [prompt, reply, third]
    assert store.entry_count() == len(parse_session_text(path.read_text(encoding="utf-8")).entries)
    assert store.compaction_count() == 3
    again = SessionStore.open(path, "/work", NOW)
    assert again.branch_tail() == store.branch_tail()
    assert again.entries == store.entries


def test_a_failed_append_to_a_resumed_session_leaves_it_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    store = SessionStore.open(path, "/work", NOW)
    before = (store.leaf_id, store.entry_count(), store.branch_tail())

    def full_disk(fd: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(writes, "_write_all", full_disk)
        with pytest.raises(SessionError):
            store.append_message(user("lost"), NOW)
    assert (store.leaf_id, store.entry_count(), store.branch_tail()) == before
    kept = store.append_message(user("kept"), NOW)
    assert kept["parentId"] == "d1"
    assert store.entries == parse_session_text(path.read_text(encoding="utf-8")).entries


def test_tool_results_and_prompts_are_synced_with_the_reply_that_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _compacted(tmp_path / "s.jsonl")
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(writes.os, "fsync", counting_fsync)
    store = SessionStore.open(path, "/work", NOW)
    lines = len(path.read_bytes().splitlines())
    for message in (user("go"), assistant("reading", tool_calls=[tool_call("read", {"path": "a"}, "r1")]),
                    tool_result("text", tool_call_id="r1", tool_name="read"), assistant("done")):
        store.append_message(message, NOW)
        lines += 1
        assert len(path.read_bytes().splitlines()) == lines  # complete in the file at once: kill -9 safe
    size = path.stat().st_size
    assert len(synced) == 2 and synced[-1] == size  # at the two replies, the second covering the tool result
    store.append_message(user("one more"), NOW)
    store.close()
    assert len(synced) == 3 and synced[-1] == path.stat().st_size  # closing syncs the rest


def test_a_full_load_is_kept_out_of_later_garbage_collections(tmp_path: Path) -> None:
    path = tmp_path / "legacy.jsonl"  # a v1 file: loaded in full and migrated
    lines = [json.dumps(header(version=None)), *(json.dumps(msg(user(f"q{n}"))) for n in range(50))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gc.unfreeze()
    store = SessionStore.open(path, "/work", NOW)
    assert len(store.entries) == 50
    assert gc.get_freeze_count() > 0
    assert not any(gc.is_tracked(e) and any(e is o for o in gc.get_objects()) for e in store.entries[:3])


def test_a_compaction_keeping_an_entry_after_itself_starts_the_tail(tmp_path: Path) -> None:
    entries = _linked(_turns(2), "a")
    entries.append(compaction("odd", "x1", id="c1", parent="a7"))
    entries += _linked([user("after"), assistant("fine")], "x", "c1")
    store = SessionStore.open(_write(tmp_path / "s.jsonl", entries), "/work", NOW)
    assert [e["id"] for e in store.branch_tail()] == ["c1", "x0", "x1"]
    assert store.branch_tail() == store.branch()[tail_start(store.branch()) :]
