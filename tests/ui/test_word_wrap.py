"""Issue 35.9: what the terminal prints before rich is loaded (the start-up notice) breaks at words."""

from __future__ import annotations

from pi_compact.ui.repl import word_wrapped


def test_a_long_line_breaks_at_spaces_within_the_width() -> None:
    text = "No model configured and no provider API key in the environment: using the embedded local model."
    lines = word_wrapped(text, 40).splitlines()
    assert len(lines) == 3 and all(len(line) < 40 for line in lines)
    assert " ".join(lines) == text


def test_a_word_longer_than_the_line_stays_whole_and_short_lines_are_unchanged() -> None:
    path = "/home/someone/projects/" + "a" * 60 + "/session.jsonl"
    assert path in word_wrapped(f"Session {path} opened", 40).splitlines()
    assert word_wrapped("short\nlines", 40) == "short\nlines"
