"""What a server says is kept clean and bounded (issue 42, item 6): ``shown_text.server_text``."""

from __future__ import annotations

from pi_compact.shown_text import clean, server_text


def test_escape_sequences_and_controls_go_and_tabs_and_newlines_stay() -> None:
    said = "\x1b]52;c;ZXZpbA==\x07\x1b[2Jrate\tlimit\r\nreached\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\u202e"
    assert clean(said) == server_text(said) == "rate\tlimit\nreachedlink"


def test_a_long_text_is_cut_and_says_how_long_it_was() -> None:
    said = "y" * 10_000
    assert server_text(said, limit=100) == "y" * 100 + " … (cut at 100 of 10,000 characters)"


def test_a_short_text_is_left_as_it_is() -> None:
    assert server_text("Error code: 400 - bad request") == "Error code: 400 - bad request"
