"""``@path`` in the REPL: Tab completes paths relative to the working directory; sending attaches files."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from pi_compact.agent.tools.truncate import MAX_BYTES, MAX_LINES
from pi_compact.ui.mentions import _READ_BYTES, MentionCompleter, attach_mentions


def _completions(cwd: Path, text: str) -> list[tuple[str, int]]:
    found = MentionCompleter(cwd).get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [(c.text, c.start_position) for c in found]


def test_tab_after_at_lists_the_entries_of_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text("x")
    (tmp_path / "README.md").write_text("x")
    (tmp_path / ".hidden").write_text("x")
    assert _completions(tmp_path, "look at @s") == [("setup.py", -1), ("src/", -1)]
    assert _completions(tmp_path, "@") == [("README.md", 0), ("setup.py", 0), ("src/", 0)]


def test_completion_descends_into_the_typed_directory_and_shows_dot_files_on_a_dot(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x")
    (tmp_path / "src" / ".env").write_text("x")
    assert _completions(tmp_path, "@src/m") == [("main.py", -1)]
    assert _completions(tmp_path, "@src/.") == [(".env", -1)]


def test_words_without_an_at_and_missing_directories_complete_nothing(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("x")
    assert _completions(tmp_path, "s") == []
    assert _completions(tmp_path, "mail me@s") == []
    assert _completions(tmp_path, "@nowhere/x") == []


def test_an_existing_file_is_attached_after_the_message(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    assert attach_mentions("explain @a.py.", tmp_path) == 'explain @a.py.\n\n<file path="a.py">\nprint(1)\n</file>'


def test_a_missing_file_a_directory_and_an_email_stay_plain_text(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    text = "see @missing.py and @src and me@a.py"
    (tmp_path / "a.py").write_text("x")
    assert attach_mentions(text, tmp_path) == text


def test_a_file_mentioned_twice_is_attached_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x")
    assert attach_mentions("@a.py vs @a.py", tmp_path).count('<file path="a.py">') == 1


def test_a_binary_file_is_not_attached(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert attach_mentions("@blob.bin", tmp_path) == "@blob.bin"


def test_a_long_file_is_cut_to_the_read_tool_budget_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {n}\n" for n in range(MAX_LINES + 500)))
    attached = attach_mentions("@big.txt", tmp_path)
    assert f"line {MAX_LINES - 1}\n" in attached
    assert f"line {MAX_LINES}\n" not in attached
    assert f"[Only the first {MAX_LINES} lines are attached; use the read tool for the rest.]" in attached
    assert _READ_BYTES >= MAX_BYTES
