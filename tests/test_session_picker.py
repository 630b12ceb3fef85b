"""Listing and picking sessions for ``-r``/``/resume``."""

from __future__ import annotations

import os
from pathlib import Path

from builders import assistant, chain, compaction, header, session_info, user, write_session

from pi_compact.session.catalog import list_sessions, summarize
from pi_compact.ui.session_picker import QUESTION, pick_session, row


def make(
    directory: Path, name: str, first: str, mtime: int, *, title: str | None = None, compactions: int = 0
) -> Path:
    items: list[dict[str, object]] = [user(first), assistant("ok")]
    items += [compaction("summary", "test-id-0") for _ in range(compactions)]
    if title is not None:
        items.append(session_info(title))
    path = directory / name
    write_session(path, chain(*items), header())
    os.utime(path, (mtime, mtime))
    return path


def test_sessions_are_listed_newest_first_with_their_facts(tmp_path: Path) -> None:
    make(tmp_path, "a.jsonl", "fix the lexer", 1000)
    make(tmp_path, "b.jsonl", "add tests", 3000, title="Testing work", compactions=2)
    make(tmp_path, "c.jsonl", "write docs   now", 2000)
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    sessions = list_sessions(tmp_path)
    assert [s.path.name for s in sessions] == ["b.jsonl", "c.jsonl", "a.jsonl"]
    assert [(s.title, s.compactions) for s in sessions] == [("Testing work", 2), ("write docs now", 0),
                                                            ("fix the lexer", 0)]
    assert summarize(tmp_path / "notes.jsonl") is None


def test_a_row_says_when_what_size_and_compactions(tmp_path: Path) -> None:
    summary = summarize(make(tmp_path, "b.jsonl", "add tests", 3000, compactions=3))
    assert summary is not None
    assert row(2, summary, now_s=3000 + 7200) == "  2.     2 h ago  add tests  (1 KB · compacted 3×)"


def test_picking_a_number_opens_that_session_and_text_filters(tmp_path: Path) -> None:
    make(tmp_path, "a.jsonl", "fix the lexer", 1000)
    make(tmp_path, "b.jsonl", "add tests", 3000)
    make(tmp_path, "c.jsonl", "lexer docs", 2000)
    sessions = list_sessions(tmp_path)
    shown: list[str] = []
    answers = iter(["2"])
    assert pick_session(sessions, lambda q: next(answers), shown.append, now_s=4000) == tmp_path / "c.jsonl"
    answers = iter(["LEXER", "2"])
    shown.clear()
    assert pick_session(sessions, lambda q: next(answers), shown.append, now_s=4000) == tmp_path / "a.jsonl"
    more = "     … type text to filter the other 1"
    assert shown[-3:] == [row(1, sessions[1], 4000), row(2, sessions[2], 4000), more]


def test_an_empty_answer_cancels(tmp_path: Path) -> None:
    make(tmp_path, "a.jsonl", "x", 1000)
    questions: list[str] = []
    assert pick_session(list_sessions(tmp_path), lambda q: questions.append(q) or "", lambda _l: None) is None
    assert questions == [QUESTION]
