"""Listing and picking sessions for ``-r``/``/resume``."""

from __future__ import annotations

import os
from pathlib import Path

from builders import assistant, chain, compaction, header, session_info, user, write_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from pi_compact.session.catalog import SessionSummary, list_sessions, summarize
from pi_compact.ui.session_picker import QUESTION, Choice, pick_session, row


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


def three(directory: Path) -> list[SessionSummary]:
    make(directory, "a.jsonl", "fix the lexer", 1000)
    make(directory, "b.jsonl", "add tests", 3000)
    make(directory, "c.jsonl", "lexer docs", 2000)
    return list_sessions(directory)


def keyed(sessions: list[SessionSummary], keys: str, text: str = "") -> Path | None:
    """Run the picker with ``keys`` typed (as a terminal sends them)."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        return pick_session(sessions, 4000, text=text, input=pipe, output=DummyOutput())


def test_every_key_typed_filters_the_list_and_marks_its_first_row(tmp_path: Path) -> None:
    sessions = three(tmp_path)
    choice = Choice(sessions, now_s=4000)
    assert [s.path.name for s in choice.shown("")] == ["b.jsonl", "c.jsonl", "a.jsonl"]
    assert [s.path.name for s in choice.shown("LEX")] == ["c.jsonl", "a.jsonl"]
    choice.move("", 1)
    assert choice.chosen("") == tmp_path / "c.jsonl"
    assert choice.chosen("the lexer") == tmp_path / "a.jsonl"  # a new filter marks its first row again
    lines = choice.lines("LEX")
    assert "".join(text for _style, text in lines) == f"{row(1, sessions[1], 4000)}\n{row(2, sessions[2], 4000)}\n" \
        f"{QUESTION}"
    assert [style for style, text in lines if text.startswith("  1.")] == ["reverse"]


def test_a_number_marks_that_row_of_the_unfiltered_list(tmp_path: Path) -> None:
    choice = Choice(three(tmp_path), now_s=4000)
    assert choice.chosen("3") == tmp_path / "a.jsonl"
    assert choice.chosen("4") is None
    assert choice.chosen("nothing like it") is None


def test_enter_opens_the_marked_row_and_arrows_move_the_mark(tmp_path: Path) -> None:
    sessions = three(tmp_path)
    assert keyed(sessions, "\r") == tmp_path / "b.jsonl"
    assert keyed(sessions, "\x1b[B\r") == tmp_path / "c.jsonl"  # Down, Enter: the second newest
    assert keyed(sessions, "\x1b[B\x1b[B\x1b[B\x1b[A\r") == tmp_path / "c.jsonl"  # the mark stops at the last
    assert keyed(sessions, "lexer\x1b[B\r") == tmp_path / "a.jsonl"
    assert keyed(sessions, "2\r") == tmp_path / "c.jsonl"
    assert keyed(sessions, "\r", text="fix") == tmp_path / "a.jsonl"


def test_escape_or_ctrl_c_cancels_and_enter_without_a_match_waits(tmp_path: Path) -> None:
    sessions = three(tmp_path)
    assert keyed(sessions, "\x1b") is None
    assert keyed(sessions, "lex\x03") is None
    assert keyed(sessions, "zzz\r\x7f\x7f\x7f\r") == tmp_path / "b.jsonl"


def test_more_sessions_than_shown_say_how_many_a_filter_can_reach(tmp_path: Path) -> None:
    for number in range(23):
        make(tmp_path, f"s{number}.jsonl", f"task {number}", 1000 + number)
    choice = Choice(list_sessions(tmp_path), now_s=4000)
    text = "".join(text for _style, text in choice.lines(""))
    assert len(choice.shown("")) == 20 and "     … type text to filter the other 3\n" in text
    assert [s.first_message for s in choice.shown("task 1")][:2] == ["task 19", "task 18"]
