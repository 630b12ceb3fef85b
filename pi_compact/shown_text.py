"""Text from outside (a server, a model, a file) made safe to put on a terminal or keep in a session (pure).

``clean(text)`` removes what could drive the terminal: escape sequences (colours, cursor moves, clear-screen,
an OSC 52 clipboard write, a hyperlink), C0 and C1 control characters other than tab and newline (C1 ``\\x9b``
is a CSI on some terminals), and the bidirectional overrides and isolates that make a shown command or path
read differently from what it is. ``server_text(text)`` is how everything a provider says in words (an error
body, an ``error`` event, a failed response's reason) is kept: cleaned, and at most ``SERVER_TEXT_LIMIT``
characters, saying how many more there were.
"""

from __future__ import annotations

import re

from pi_compact.jstext import valid_text

SERVER_TEXT_LIMIT = 4000  # characters: a provider's error says what it means in far fewer
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
                      "|[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` without escape sequences, control characters (tab and newline kept) or bidirectional controls."""
    return valid_text(_CONTROL.sub("", text.replace("\r\n", "\n")))  # a lone surrogate cannot be printed


def server_text(text: str, limit: int = SERVER_TEXT_LIMIT) -> str:
    """What a server said, cleaned and cut at ``limit`` characters (saying how long it was)."""
    shown = clean(text[: 2 * limit])  # only what can be shown is cleaned: a 2 MB body is not worth a pass
    if len(shown) <= limit and len(text) <= 2 * limit:
        return shown
    return f"{shown[:limit].rstrip()} … (cut at {limit:,} of {len(text):,} characters)"


__all__ = ["SERVER_TEXT_LIMIT", "clean", "server_text"]
